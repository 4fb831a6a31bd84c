"""pellc's own `std::logger` (issue 26, point 10): `logger::info(x)` ... `trace(x)`, through
`import std::logger;`, `import std::log;` or no import, prints the level's prefix and the value
as interpolation writes it, in place (no LOG or LOGGER package); the project's own logger
module wins, and gets any value for a `text` parameter as text."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.cli import main
from pell.diagnostics import render_all

LEVELS = """
pub fn run(n: number) {
    ALIAS::info(n);
    ALIAS::warn(n);
    ALIAS::err(n);
    ALIAS::debug(n);
    ALIAS::trace(n);
}
"""


def _oracle(source: str) -> str:
    result = compile_source(source, "m.pell", "23ai")
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    assert_oracle_accepts(result.sql)
    return result.sql


@pytest.mark.parametrize(
    ("imported", "alias"),
    [
        ("import std::logger;\n", "logger"),
        ("import std::log;\n", "log"),
        ("", "log"),
        ("", "logger"),
    ],
)
def test_every_form_prints_each_level_in_place(imported: str, alias: str) -> None:
    sql = _oracle(f"module app;\n{imported}" + LEVELS.replace("ALIAS", alias))
    for prefix in ("INFO:  ", "WARN:  ", "ERROR: ", "DEBUG: ", "TRACE: "):
        assert f"dbms_output.put_line('{prefix}' || pell_number_text(p_n));" in sql
    # no package of that name is called (or needed): `log.`/`logger.` nowhere in the code
    body = sql.split("CREATE OR REPLACE PACKAGE BODY", 1)[1].lower()
    assert "log." not in body and "logger." not in body


VALUES = """module app;

import std::logger;

pub fn report(name: text, total: number, at: date, done: bool, ids: list<int>) {
    logger::info("greeting {name}");
    logger::info(name);
    logger::warn(at);
    logger::err(done);
    logger::debug(ids);
    logger::trace("plain");
}
"""


def test_a_value_is_written_as_interpolation_writes_it() -> None:
    sql = _oracle(VALUES)
    for line in (
        "dbms_output.put_line('INFO:  greeting ' || p_name);",
        "dbms_output.put_line('INFO:  ' || p_name);",
        "dbms_output.put_line('WARN:  ' || TO_CHAR(p_at, 'YYYY-MM-DD HH24:MI:SS'));",
        "dbms_output.put_line('ERROR: ' || CASE WHEN p_done THEN 'true' WHEN NOT p_done "
        "THEN 'false' END);",
        "dbms_output.put_line('DEBUG: ' || pell_list_text_int(p_ids));",
        "dbms_output.put_line('TRACE: plain');",
    ):
        assert line in sql, line


def test_postgres_raises_a_notice_of_the_same_text(postgres_database: str) -> None:
    import psycopg

    result = compile_source(VALUES, "m.pell", "postgres")
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    notices: list[str] = []
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(result.sql)
        connection.add_notice_handler(lambda notice: notices.append(notice.message_primary))
        connection.execute(
            "select app.report('ada', 2.5, timestamp '2024-05-01 13:45:00', true, "
            "array[1, null, 3])"
        )
    assert notices == [
        "INFO:  greeting ada",
        "INFO:  ada",
        "WARN:  2024-05-01 13:45:00",
        "ERROR: true",
        "DEBUG: [1, NULL, 3]",
        "TRACE: plain",
    ]


MISUSE = """module app;

import std::logger;

record Pair { a: number, b: number }

pub fn run(n: number, p: Pair) {
    logger::warning(n);
    logger::info(n, 2);
    log::err(p);
    log::debug(msg = "x");
}
"""


def test_misuse_is_a_located_error_not_a_call_of_a_package() -> None:
    result = compile_source(MISUSE, "m.pell", "23ai")
    assert result.sql is None
    found = [(d.code, result.source.line_col(d.span.start)) for d in result.diagnostics]
    assert found == [
        ("unknown-fn", (8, 5)),
        ("arity", (9, 5)),
        ("type-mismatch", (10, 14)),
        ("keyword-argument", (11, 16)),
    ]
    assert "did you mean `warn`" in result.diagnostics[0].message


RETRIED = """module app;

import std::log;

@retry(scope = "transaction")
pub fn settle() {
    sql! { update accounts set settled = 1 };
}

pub fn close_day() {
    sql! { update days set closed = 1 };
    log::info("settling");
    settle();
}
"""


def test_a_log_call_neither_commits_nor_hides_an_open_transaction() -> None:
    # A call pellc cannot see into may end the transaction, so it would hide the DML before it
    # from the transaction-scoped call after it; a log call is a print, which commits nothing.
    result = compile_source(RETRIED, "m.pell", "23ai")
    codes = [d.code for d in result.diagnostics]
    assert codes == ["transaction-already-open"], codes


# The public runtime's shape of logger: one `text` parameter a level
PROJECT_LOGGER = """module logger;

pub fn info(msg: text) {
    dbms_output::put_line("I {msg}");
}

pub fn pair(a: text, b: text) {
    dbms_output::put_line(a + b);
}

pub fn count(n: number) {
    dbms_output::put_line(n);
}
"""

USES_LOGGER = """module app;

import std::logger;

pub fn run(n: number, s: text, at: date) {
    logger::info(n);
    logger::info(s);
    logger::info(at);
    log::info(n);
}
"""


def _build(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["build", *args])
    return code, capsys.readouterr().err


def test_the_projects_own_logger_wins_and_takes_any_value_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "logger.pell").write_text(PROJECT_LOGGER)
    (tmp_path / "app.pell").write_text(USES_LOGGER)
    code, err = _build([str(tmp_path), "-d", str(tmp_path / "out")], capsys)
    assert code == 0, err
    sql = (tmp_path / "out" / "app.sql").read_text("utf-8")
    assert_oracle_accepts(sql)
    assert "logger.info(pell_number_text(p_n));" in sql
    assert "logger.info(p_s);" in sql
    assert "logger.info(TO_CHAR(p_at, 'YYYY-MM-DD HH24:MI:SS'));" in sql
    # `log::` names no module of the project: pellc's own
    assert "dbms_output.put_line('INFO:  ' || pell_number_text(p_n));" in sql


def test_the_build_inputs_own_logger_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logger.pell").write_text(PROJECT_LOGGER)
    (tmp_path / "app.pell").write_text(USES_LOGGER)
    inputs = [str(tmp_path / "app.pell"), str(tmp_path / "logger.pell")]
    code, err = _build([*inputs, "-d", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert "logger.info(pell_number_text(p_n));" in (tmp_path / "out" / "app.sql").read_text()


AUDIT = """module audit;

pub fn note(msg: text) {
    dbms_output::put_line(msg);
}
"""


def test_only_a_loggers_single_text_parameter_is_converted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "logger.pell").write_text(PROJECT_LOGGER)
    (tmp_path / "audit.pell").write_text(AUDIT)
    (tmp_path / "app.pell").write_text(
        "module app;\n\nrecord Pair { a: number, b: number }\n\n"
        "pub fn run(n: number, p: Pair) {\n"
        "    logger::count(n);\n"
        "    logger::pair(n, n);\n"
        "    logger::info(p);\n"
        "    audit::note(n);\n"
        "}\n"
    )
    code, err = _build([str(tmp_path), "-d", str(tmp_path / "out")], capsys)
    assert code == 1
    # a number parameter takes the number; two parameters, a record (no text form), and a
    # module that is no logger are type errors
    lines = sorted(line.split(": error:")[0] for line in err.splitlines() if ": error:" in line)
    assert lines == [
        f"{tmp_path / 'app.pell'}:7:18",
        f"{tmp_path / 'app.pell'}:7:21",
        f"{tmp_path / 'app.pell'}:8:18",
        f"{tmp_path / 'app.pell'}:9:17",
    ], err
    assert err.count("[type-mismatch]") == 4, err


def test_a_loggers_out_text_parameter_takes_the_variable_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 9: the argument was made text ("{s}") for an `out` parameter too, and the
    # variable given became a value that cannot be assigned
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "logger.pell").write_text(
        'module logger;\npub fn info(out msg: text) {\n    msg = "logged";\n}\n'
    )
    (tmp_path / "app.pell").write_text(
        'module app;\npub fn run() -> text {\n    var s: text = "a";\n'
        "    logger::info(s);\n    return s;\n}\n"
    )
    code, err = _build([str(tmp_path), "-d", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert "logger.info(l_s);" in (tmp_path / "out" / "app.sql").read_text("utf-8")


def test_adding_or_removing_the_projects_logger_rebuilds_its_callers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    # no import: the build finds the dependency by the `logger::` it names
    (tmp_path / "app.pell").write_text(
        "module app;\n\npub fn run(n: number) {\n    logger::info(n);\n}\n"
    )
    out = tmp_path / "out" / "app.sql"
    assert _build([str(tmp_path), "-d", str(tmp_path / "out")], capsys)[0] == 0
    assert "logger.info" not in out.read_text()
    (tmp_path / "logger.pell").write_text(PROJECT_LOGGER)
    assert _build([str(tmp_path), "-d", str(tmp_path / "out")], capsys)[0] == 0
    assert "logger.info(pell_number_text(p_n));" in out.read_text()
    (tmp_path / "logger.pell").unlink()
    assert _build([str(tmp_path), "-d", str(tmp_path / "out")], capsys)[0] == 0
    assert "logger.info" not in out.read_text()


def test_a_script_logs_and_a_plain_import_is_an_oracle_package() -> None:
    script = compile_source('let n = 2;\nlog::info("n = {n}");\n', "s.pell", "23ai")
    assert script.sql is not None
    assert "dbms_output.put_line('INFO:  n = ' || TO_CHAR(l_n));" in script.sql
    # `import logger;` names a package, as any import of a name that is no module does
    plain = _oracle('module app;\nimport logger;\npub fn f() {\n    logger::info("x");\n}\n')
    assert "logger.info('x');" in plain
