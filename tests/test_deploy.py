"""Deploy without a database: script splitting, ordering, error mapping, DSN handling."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pell import compile_path
from pell.cli import main
from pell.deploy import (
    CompileError,
    Script,
    ScriptError,
    credentials,
    deployment_order,
    map_error,
    redact,
    split_script,
)

EXAMPLES = Path(__file__).parent.parent / "examples"


def test_split_script_at_slash_lines() -> None:
    sql = compile_path(EXAMPLES / "orders.pell").sql
    assert sql is not None
    statements = split_script(sql)
    assert [(s.object_type, s.object_name) for s in statements] == [
        ("PACKAGE", "ORDERS"),
        ("PACKAGE BODY", "ORDERS"),
    ]
    lines = sql.splitlines()
    for statement in statements:
        assert lines[statement.line - 1].startswith("CREATE OR REPLACE PACKAGE")
        assert "/" not in statement.text.splitlines()  # the terminator is not sent
        assert statement.text.rstrip().endswith("END orders;")


def test_split_script_keeps_schema_types_first_and_schemas() -> None:
    script = (
        "-- header\n\nCREATE OR REPLACE TYPE hr.x_row FORCE AS OBJECT (a NUMBER);\n/\n"
        "CREATE OR REPLACE PACKAGE hr.x AS\nEND x;\n/\n"
    )
    statements = split_script(script)
    assert [(s.object_type, s.schema, s.object_name, s.line) for s in statements] == [
        ("TYPE", "hr", "X_ROW", 3),
        ("PACKAGE", "hr", "X", 5),
    ]


def test_split_script_refuses_anything_but_create() -> None:
    with pytest.raises(ValueError, match="line 1: not a CREATE OR REPLACE statement"):
        split_script("drop table t\n/\n")


def test_runtime_is_deployed_first(tmp_path: Path) -> None:
    for name in ("b.sql", "pell_runtime.sql", "a/z.sql"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x", "utf-8")
    assert [p.relative_to(tmp_path).as_posix() for p in deployment_order(tmp_path)] == [
        "pell_runtime.sql", "a/z.sql", "b.sql",
    ]  # fmt: skip


def test_user_errors_map_to_pell_lines(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["build", "--map", str(EXAMPLES / "orders.pell"), "-d", str(out)]) == 0
    sql_path = out / "orders.sql"
    import json

    script = Script(
        sql_path,
        json.loads((out / "orders.sql.map.json").read_text("utf-8")),
        EXAMPLES / "orders.pell",
    )
    body = split_script(sql_path.read_text("utf-8"))[1]
    body_lines = body.text.splitlines()
    # a USER_ERRORS row as Oracle reports one: LINE counts from the CREATE line
    update_line = next(i for i, text in enumerate(body_lines, 1) if "update orders" in text)
    row = CompileError(update_line, 9, "PL/SQL: ORA-00942: table or view does not exist", "ERROR")
    assert map_error(row, body, script).render() == (
        f"{EXAMPLES / 'orders.pell'}:16:5: error: "
        "PL/SQL: ORA-00942: table or view does not exist  [oracle]"
    )
    # a line with no Pell origin (the END of the package) is reported on the SQL line
    end_line = len(body_lines)
    row = CompileError(end_line, 1, "PLS-00103: Encountered the symbol", "WARNING")
    assert map_error(row, body, script).render() == (
        f"{sql_path}:{body.line + end_line - 1}:1: warning: PLS-00103: Encountered the symbol  [oracle]"
    )


def test_dsn_password_is_never_shown(capsys: pytest.CaptureFixture[str]) -> None:
    assert redact("scott/tiger@db:1521/FREEPDB1") == "scott@db:1521/FREEPDB1"
    assert credentials("scott/ti/ger@db/svc") == {
        "user": "scott",
        "password": "ti/ger",
        "dsn": "db/svc",
    }
    with pytest.raises(ValueError):
        credentials("scott@db/svc")
    assert (
        main(
            [
                "deploy",
                "--dsn",
                "scott/tiger@db:1521/FREEPDB1",
                "--dry-run",
                str(EXAMPLES / "orders.pell"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "tiger" not in out
    assert out.splitlines() == [
        "deploy to scott@db:1521/FREEPDB1 (dry run: nothing is sent)",
        "  1. orders.sql: PACKAGE ORDERS",
        "  2. orders.sql: PACKAGE BODY ORDERS",
    ]


def test_deploy_without_a_dsn_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PELL_DSN", raising=False)
    monkeypatch.delenv("PELL_DB_URL", raising=False)
    assert main(["deploy", str(EXAMPLES / "orders.pell")]) == 2
    assert "give --dsn or set PELL_DSN" in capsys.readouterr().err


def test_deploy_refuses_modules_with_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.pell"
    bad.write_text('module bad;\npub fn f() -> number { return "x"; }\n', "utf-8")
    assert main(["deploy", "--dry-run", str(bad)]) == 1
    assert "nothing deployed" in capsys.readouterr().err


SLASHED = """CREATE OR REPLACE PACKAGE s AS
  PROCEDURE f;
END s;
/

CREATE OR REPLACE PACKAGE BODY s AS
  PROCEDURE f IS
  BEGIN
    update t set n = 1
/
    where id = 1;
  END f;
END s;
/
"""


def test_split_script_locates_a_slash_line_inside_a_body() -> None:
    with pytest.raises(ScriptError) as raised:
        split_script(SLASHED)
    assert raised.value.line == 10  # the `/` line, not the line after it
    assert str(raised.value) == (
        "line 10: a line holding only `/` ends the statement of line 6 early; line 11 that "
        "follows is not a CREATE OR REPLACE statement: where id = 1;"
    )


@pytest.mark.parametrize(
    "script",
    ["", "/\n/\n", "   \n-- only a comment\n", "CREATE OR REPLACE", "\r\n/\r\n", "x\n/", "/\nx"],
)
def test_split_script_answers_any_input_with_statements_or_a_located_error(script: str) -> None:
    try:
        statements = split_script(script)
    except ScriptError as error:
        assert error.line >= 1
    else:
        assert all(s.text.lstrip().upper().startswith("CREATE") for s in statements)


def test_deploy_dry_run_reports_a_slash_line_at_its_pell_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the compiler lets through, the splitter answers with a located error: here a
    `/` line is put into the body of a compiled script before deploy splits it."""
    import pell.build

    source = tmp_path / "slash.pell"
    source.write_text(
        "module slash;\n\npub fn f(id: number) {\n    sql! {\n        update t set n = 1\n"
        "        where id = :id\n    };\n}\n",
        "utf-8",
    )
    real = pell.build.build_tree
    deployed: list[str] = []

    def slashed(*args: Any, **kwargs: Any) -> pell.build.BuildResult:
        result = real(*args, **kwargs)
        script = Path(args[1]) / "slash.sql"
        sql = script.read_text("utf-8").replace("    where id", "/\n    where id")
        script.write_text(sql, "utf-8")
        deployed.append(sql)
        return result

    monkeypatch.setattr(pell.build, "build_tree", slashed)
    assert main(["deploy", "--dry-run", str(source)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = deployed[0].splitlines()
    slash = lines.index("/", lines.index("  BEGIN")) + 1
    body = next(
        i for i, line in enumerate(lines, 1) if line.startswith("CREATE OR REPLACE PACKAGE BODY")
    )
    first, second = err.splitlines()
    # at the sql! block's line in the .pell file, through the source map
    assert re.fullmatch(rf"{re.escape(str(source))}:[4-6]:\d+: error: .*  \[deploy\]", first)
    assert first.endswith(
        f": error: slash.sql line {slash}: a line holding only `/` ends the statement of line "
        f"{body} early; line {slash + 1} that follows is not a CREATE OR REPLACE statement: "
        f"{lines[slash].strip()}  [deploy]"
    )
    assert second == "nothing deployed: a script does not split into statements"


def test_deploy_dry_run_of_a_slash_line_in_sql_never_crashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "slash.pell"
    source.write_text(
        "module slash;\n\npub fn f(id: number) {\n    sql! {\n        update t set n = 1\n/\n"
        "        where id = :id\n    };\n}\n",
        "utf-8",
    )
    assert main(["deploy", "--dry-run", str(source)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal compiler error" not in err
    assert err.startswith(f"{source}:") and ": error: " in err.splitlines()[0]


def test_deploy_never_runs_a_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A script (no `module` line) is an anonymous block to run, not objects to create:
    deploy leaves it out, says so, and deploys the modules beside it."""
    (tmp_path / "m.pell").write_text("module m;\npub fn f() -> number { return 1; }\n", "utf-8")
    (tmp_path / "run.pell").write_text('import m;\nlet x = m::f();\nprint("{x}");\n', "utf-8")
    assert main(["deploy", "--dry-run", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[1:] == ["  1. m.sql: PACKAGE M", "  2. m.sql: PACKAGE BODY M"]
    assert captured.err == f"{tmp_path / 'run.pell'}: a script: not deployed (run its .sql yourself)\n"


def test_the_script_note_is_a_json_line_under_format_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "m.pell").write_text("module m;\npub fn f() -> number { return 1; }\n", "utf-8")
    (tmp_path / "run.pell").write_text("let x = 1;\n", "utf-8")
    assert main(["deploy", "--dry-run", "--format", "json", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line) for line in err.splitlines()] == [
        {
            "schema": 1,
            "kind": "note",
            "message": "a script: not deployed (run its .sql yourself)",
            "path": str(tmp_path / "run.pell"),
        }
    ]
    # the plan is JSON lines too: the dry run's note, then each statement
    steps = [json.loads(line) for line in out.splitlines()][1:]
    assert [(s["kind"], s["script"], s["object_type"], s["status"]) for s in steps] == [
        ("deploy-step", "m.sql", "PACKAGE", "planned"),
        ("deploy-step", "m.sql", "PACKAGE BODY", "planned"),
    ]


def test_a_type_oracle_refuses_to_replace_stops_the_deploy_at_its_pell_line(
    tmp_path: Path,
) -> None:
    """CREATE OR REPLACE TYPE ... FORCE still fails when a table depends on the type (ORA-02303):
    the deploy reports it at the type's `.pell` line and runs nothing after it (the package
    would compile against the old type)."""
    from pell.deploy import deployment_steps, run_scripts

    source = tmp_path / "money.pell"
    source.write_text(
        "module money;\n\npub type Money {\n    amount: number;\n}\n\n"
        "pub fn zero() -> Money { return Money { amount: 0 }; }\n",
        "utf-8",
    )
    out = tmp_path / "out"
    assert main(["build", "--map", str(source), "-d", str(out)]) == 0
    sql_path = out / "money.sql"
    script = Script(
        sql_path, json.loads((out / "money.sql.map.json").read_text("utf-8")), source
    )
    statements = split_script(sql_path.read_text("utf-8"))
    assert [s.object_type for s in statements] == ["TYPE", "PACKAGE", "PACKAGE BODY"]

    class Refused(Exception):
        pass

    class Cursor:
        def __init__(self) -> None:
            self.ran: list[str] = []

        def execute(self, statement: str, parameters: Any = None) -> None:
            if statement.startswith("CREATE OR REPLACE TYPE money_money FORCE"):
                raise Refused("ORA-02303: cannot drop or replace a type with type or table dependents")
            self.ran.append(statement.split("\n")[0])

        def fetchall(self) -> list[Any]:
            return []

    cursor = Cursor()
    steps = deployment_steps([(script, statements)])
    reported = list(run_scripts(cursor, steps, (Refused,)))
    assert [(s.object_type, [e.render() for e in errors]) for _, s, errors in reported] == [
        (
            "TYPE",
            [
                f"{source}:3:1: error: ORA-02303: cannot drop or replace a type with type or "
                "table dependents  [oracle]"
            ],
        )
    ]
    assert cursor.ran == []  # neither the package spec nor its body
