"""`[tool.pellc]` settings applied by every command (target, allowed warnings, warnings as
errors), and `--format json` diagnostics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pell.cli import main

# `retry-deadlock-scope`: a savepoint-scoped retry of deadlocks, a warning
WARNS = """module jobs;

@retry(n=3, backoff=10, on=[deadlock])
pub fn run(id: number) {
    sql! { update job set done = 1 where id = :id };
}
"""


def _project(tmp_path: Path, settings: str, text: str = WARNS) -> Path:
    (tmp_path / "pell.toml").write_text(settings, "utf-8")
    (tmp_path / "db").mkdir()
    source = tmp_path / "db" / "jobs.pell"
    source.write_text(text, "utf-8")
    return source


def test_the_project_target_is_the_default_and_the_flag_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _project(tmp_path, 'target = "12.2"\n')
    assert main(["build", str(source)]) == 0
    out = capsys.readouterr().out
    assert "-- Target: Oracle 12.2" in out and "DBMS_LOCK.SLEEP(" in out
    assert main(["build", "--target", "23ai", str(source)]) == 0
    out = capsys.readouterr().out
    assert "-- Target: Oracle 23ai" in out and "DBMS_SESSION.SLEEP(" in out
    assert main(["build", str(tmp_path / "db"), "-d", str(tmp_path / "out")]) == 0
    assert "-- Target: Oracle 12.2" in (tmp_path / "out" / "jobs.sql").read_text("utf-8")


def test_allowed_warnings_are_not_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _project(tmp_path, "")
    assert main(["check", "--no-verify", str(source)]) == 0
    assert "[retry-deadlock-scope]" in capsys.readouterr().err
    (tmp_path / "pell.toml").write_text('allow = ["retry-deadlock-scope"]\n', "utf-8")
    assert main(["check", "--no-verify", str(source)]) == 0
    assert capsys.readouterr().err == ""


def test_warnings_as_errors_fail_the_build_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _project(tmp_path, "warnings-as-errors = true\n")
    out = tmp_path / "out"
    assert main(["build", str(tmp_path / "db"), "-d", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"{source}:3:25: error: retrying `deadlock`" in err and "[retry-deadlock-scope]" in err
    assert not (out / "jobs.sql").exists()
    assert main(["check", "--no-verify", str(source)]) == 1
    # an allowed warning stays allowed
    (tmp_path / "pell.toml").write_text(
        'warnings-as-errors = true\nallow = ["retry-deadlock-scope"]\n', "utf-8"
    )
    capsys.readouterr()
    assert main(["build", str(tmp_path / "db"), "-d", str(out)]) == 0
    assert (out / "jobs.sql").is_file()


def test_json_diagnostics_one_object_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "bad.pell"
    source.write_text("module bad;\n\npub fn f() -> number {\n    return nosuch;\n}\n", "utf-8")
    assert main(["check", "--no-verify", "--format", "json", str(source)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    shown = json.loads(lines[0])
    assert shown == {
        "schema": 1,
        "kind": "diagnostic",
        "code": "unknown-name",
        "severity": "error",
        "path": str(source),
        "line": 4,
        "column": 12,
        "end": {"line": 4, "column": 18},  # exclusive: `nosuch` is columns 12 to 17
        "message": shown["message"],
        "hints": shown["hints"],
        "notes": [],
    }
    assert "nosuch" in shown["message"]
    # a file that cannot be read is a JSON line too
    missing = tmp_path / "missing.pell"
    assert main(["check", "--format", "json", str(missing)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert json.loads(line) == {
        "schema": 1,
        "kind": "error",
        "category": "file",
        "message": f"cannot read {missing}: No such file or directory",
        "path": str(missing),
    }
    # and text again by default, in the same process
    assert main(["check", "--no-verify", str(source)]) == 1
    assert capsys.readouterr().err.startswith(f"{source}:4:12: error: ")
