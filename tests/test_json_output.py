"""`--format json` (docs/json.md): every command that reports writes nothing but JSON lines,
each with the schema version and a kind, on standard output and standard error alike."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pell.cli import main
from pell.report import KINDS, SCHEMA

# A retried fn whose sleeps are known (docs/retry.md: attempt k+1 sleeps
# LEAST(backoff/1000 * POWER(2, k - 1) + DBMS_RANDOM.VALUE(0, jitter/1000), cap/1000) seconds),
# a ROLLBACK TO a savepoint that is not there (a verify finding), two warnings
# (retry-deadlock-scope, package-clash).
N, BACKOFF, JITTER, CAP = 4, 100, 50, 300
STOCK = f"""module shop.stock;

@retry(n = {N}, backoff = {BACKOFF}, jitter = {JITTER}, exponential = true, cap = {CAP}, on = [deadlock])
fn restock(id: number, qty: number) {{
    sql! {{ savepoint before_restock }};
    sql! {{ update stock set qty = qty + :qty where id = :id }};
    if qty > 100 {{
        sql! {{ rollback to before_restok }};
    }}
}}
"""
# two errors
BAD = 'module shop.bad;\npub fn f() -> number { return "x"; }\npub fn g() { y = 1; }\n'


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "stock.pell").write_text(STOCK, "utf-8")
    (root / "bad.pell").write_text(BAD, "utf-8")
    (tmp_path / "empty").mkdir()
    return root


def _lines(text: str) -> list[dict[str, Any]]:
    """Every line as a JSON object with the schema version and a known kind."""
    objects = []
    for line in text.splitlines():
        shown = json.loads(line)  # fails on any line that is not JSON
        assert isinstance(shown, dict), line
        assert shown["schema"] == SCHEMA and shown["kind"] in KINDS, line
        objects.append(shown)
    return objects


def _run(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[dict[str, Any]], list[dict[str, Any]]]:
    """Run pellc: its exit code and its lines on stdout and stderr, each checked to have the
    fields docs/json.md lists for its kind, and no others."""
    code = main(argv)
    out, err = capsys.readouterr()
    shown = _lines(out), _lines(err)
    _assert_documented(shown[0] + shown[1])
    return code, *shown


def _kinds(objects: list[dict[str, Any]]) -> set[str]:
    return {o["kind"] for o in objects}


# Each command that reports, on the project and on each of its files, with `--format json`
# where today's flags go: (arguments; exit code; the kinds that must be on stdout, and no
# other; the kinds that must be on stderr). `{p}` is the project, `{t}` its parent.
DIAGNOSTIC, ERROR, NOTE = {"diagnostic"}, {"error"}, {"note"}
RUNS = {
    "build a tree": ("build --format json {p} -d {t}/out", 1, set(), DIAGNOSTIC | {"summary"}),
    "build --check": (
        "build --format json --check {p} -d {t}/out",
        1,
        set(),
        {"output-status", "summary"},
    ),
    "build a file to stdout": ("build --format json {p}/stock.pell", 0, {"sql"}, DIAGNOSTIC),
    "build a file with errors": ("build {p}/bad.pell -o {t}/b.sql --format json", 1, set(), DIAGNOSTIC),
    "check with errors": ("check {p} --format json", 1, set(), DIAGNOSTIC),
    "check runs the verifier": (
        "check --format json {p}/stock.pell",
        1,
        set(),
        DIAGNOSTIC | {"verify-finding"},
    ),
    "verify": ("verify --format json {p}", 1, {"verify-fn", "verify-finding"}, DIAGNOSTIC),
    "verify, nothing to verify": ("verify --format json {p}/bad.pell", 1, set(), DIAGNOSTIC),
    "explain": ("explain --format json {p}/stock.pell", 0, {"schedule"}, set()),
    "explain with --json too": ("explain --format json {p}/stock.pell --json", 0, {"schedule"}, set()),
    "explain with errors": ("explain --format json {p}/bad.pell", 1, set(), DIAGNOSTIC),
    "runtime": ("runtime --format json {p}", 0, {"sql"}, set()),
    "deploy with errors": ("deploy --format json --dry-run {p}", 1, set(), DIAGNOSTIC | NOTE),
    "deploy a plan": (
        "deploy --format json --dry-run {p}/stock.pell",
        0,
        NOTE | {"deploy-step"},
        DIAGNOSTIC,
    ),
    "a file that cannot be read": ("check --format json {p}/missing.pell", 2, set(), ERROR),
    "a usage error": ("build --format json {p}", 2, set(), ERROR),
    "no .pell file": ("verify --format json {t}/empty", 2, set(), ERROR),
    "runtime of a missing directory": ("runtime --format json {t}/nowhere", 2, set(), ERROR),
    "an unknown fn to explain": ("explain --format json {p}/stock.pell nope", 2, set(), ERROR),
    "argparse's usage error": ("build --format json -j 0 {p}/stock.pell", 2, set(), ERROR),
    "argparse, --format=json": ("check --format=json --target 8i {p}", 2, set(), ERROR),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_every_line_is_json(name: str, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    arguments, exit_code, on_stdout, on_stderr = RUNS[name]
    argv = arguments.format(p=project, t=project.parent).split()
    code, out, err = _run(argv, capsys)
    assert code == exit_code
    # the kinds expected, and no other kind on stdout than those (progress goes to stderr)
    assert _kinds(out) == on_stdout
    assert on_stderr <= _kinds(err), _kinds(err)


def test_a_diagnostic_line_is_where_the_error_is(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(["check", "--format", "json", str(project / "bad.pell")], capsys)
    assert code == 1 and out == []
    lines = BAD.splitlines()
    literal = lines[1].index('"x"')  # 0-based: columns are 1-based
    name = lines[2].index("y = 1")
    assert [(d["code"], d["line"], d["column"], d["end"]) for d in err] == [
        ("return-type", 2, literal + 1, {"line": 2, "column": literal + 4}),
        ("unknown-name", 3, name + 1, {"line": 3, "column": name + 2}),
    ]
    assert {d["path"] for d in err} == {str(project / "bad.pell")}
    assert {d["severity"] for d in err} == {"error"}


def _documented_sleeps() -> list[tuple[Decimal, Decimal]]:
    """(min, max) seconds before attempts 2..N, by docs/retry.md's formula."""
    sleeps = []
    for k in range(1, N):
        base = Decimal(BACKOFF) * 2 ** (k - 1)
        sleeps.append(
            (min(base, Decimal(CAP)) / 1000, min(base + JITTER, Decimal(CAP)) / 1000)
        )
    return sleeps


def test_a_schedule_line_has_the_sleeps_explain_prints(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stock = str(project / "stock.pell")
    code, out, err = _run(["explain", "--format", "json", stock], capsys)
    assert code == 0 and err == []
    (schedule,) = out
    assert (schedule["fn"], schedule["module"], schedule["path"]) == ("restock", "shop.stock", stock)
    # the fn's name, where verify places the fn too
    fn_line = next(i for i, line in enumerate(STOCK.splitlines(), 1) if "fn restock" in line)
    assert (schedule["line"], schedule["column"]) == (fn_line, STOCK.splitlines()[fn_line - 1].index("restock") + 1)
    assert schedule["attempts"] == N and schedule["retries_on"] == ["deadlock"]
    sleeps = _documented_sleeps()
    rows = schedule["schedule"]
    assert [row["attempt"] for row in rows] == list(range(1, N + 1))
    assert [(row["sleep_min_s"], row["sleep_max_s"]) for row in rows[1:]] == [
        (float(low), float(high)) for low, high in sleeps
    ]
    worst = sum(high for _, high in sleeps)
    assert schedule["worst_case_sleep_s"] == float(worst)
    # and the text form prints the same sleeps
    assert main(["explain", stock]) == 0
    text = capsys.readouterr().out
    for attempt, (low, high) in enumerate(sleeps, start=2):
        assert f"  {attempt:<7}  {low:.3f} - {high:.3f}" in text
    assert f"worst-case sleep: {worst:.3f} s over {N} attempts" in text


def test_verify_lines_name_the_fn_and_the_finding_with_its_schedule(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stock = str(project / "stock.pell")
    code, out, err = _run(["verify", "--format", "json", stock], capsys)
    assert code == 1 and err == []
    fn, finding = out
    assert fn["kind"] == "verify-fn" and (fn["module"], fn["fn"]) == ("shop.stock", "restock")
    assert fn["schedules"] > 1 and fn["findings"] == 1
    lines = STOCK.splitlines()
    rollback = next(i for i, line in enumerate(lines) if "rollback to" in line)
    assert finding["kind"] == "verify-finding"
    assert (finding["code"], finding["severity"]) == ("verify-no-savepoint", "error")
    assert (finding["path"], finding["line"]) == (stock, rollback + 1)
    assert finding["column"] == lines[rollback].index("sql!") + 1
    steps = finding["schedule"]
    assert {"step": "SAVEPOINT before_restock", "path": stock, "line": 5, "column": 5} in steps
    assert all(isinstance(step["step"], str) for step in steps)


def test_build_summary_counts(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out_dir = project.parent / "out"
    code, _, err = _run(["build", "--format", "json", str(project), "-d", str(out_dir)], capsys)
    assert code == 1
    (summary,) = [line for line in err if line["kind"] == "summary"]
    assert summary == {
        "schema": SCHEMA,
        "kind": "summary",
        "command": "build",
        "built": 1,
        "unchanged": 0,
        "failed": 1,
        "removed": 0,
        "runtime": None,
        "code_file": None,
    }
    # an edited module's output is stale
    (project / "stock.pell").write_text(STOCK + "// edited\n", "utf-8")
    argv = ["build", "--check", "--format", "json", str(project), "-d", str(out_dir)]
    code, _, err = _run(argv, capsys)
    assert code == 1
    statuses = [(line["path"], line["status"]) for line in err if line["kind"] == "output-status"]
    assert statuses == [(str(out_dir / "stock.sql"), "stale")]
    (summary,) = [line for line in err if line["kind"] == "summary"]
    assert summary == {
        "schema": SCHEMA,
        "kind": "summary",
        "command": "build --check",
        "checked": 2,
        "fresh": 0,
        "stale_or_missing": 1,
        "failed": 1,
    }


def test_a_big_build_shows_progress_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for number in range(21):
        (tmp_path / f"m{number:02}.pell").write_text(
            f"module m{number:02};\npub fn f() -> number {{ return 1; }}\n", "utf-8"
        )
    code, out, err = _run(
        ["build", "--format", "json", str(tmp_path), "-d", str(tmp_path / "out"), "-j", "1"],
        capsys,
    )
    assert code == 0 and out == []
    progress = [line for line in err if line["kind"] == "progress"]
    assert [(p["done"], p["total"]) for p in progress] == [(n, 21) for n in range(1, 22)]
    assert progress[0]["path"] == str(tmp_path / "m00.pell")


def test_an_internal_error_is_a_json_line(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import pell.verify

    def broken(*_: object) -> None:
        raise KeyError("planted")

    monkeypatch.setattr(pell.verify, "verify", broken)
    code, out, err = _run(["verify", "--format", "json", str(project / "stock.pell")], capsys)
    assert code == 3 and out == []
    (error,) = err
    assert (error["kind"], error["category"]) == ("error", "internal")
    assert "internal compiler error: KeyError" in error["message"]


class _Refused(Exception):
    pass


def _fake_oracledb(errors: list[tuple[int, int, str, str]], connects: bool) -> ModuleType:
    """A stand-in for python-oracledb whose database reports `errors` (USER_ERRORS rows) for
    every PACKAGE BODY: only the shape of pellc's lines is tested here, no Oracle behaviour."""

    class Cursor:
        def __init__(self) -> None:
            self.last: dict[str, Any] = {}

        def __enter__(self) -> Cursor:
            return self

        def __exit__(self, *_: object) -> None:
            pass

        def execute(self, statement: str, parameters: Any = None) -> None:
            self.last = parameters or {}

        def fetchall(self) -> list[Any]:
            return list(errors) if self.last.get("type") == "PACKAGE BODY" else []

    class Connection:
        def __enter__(self) -> Connection:
            return self

        def __exit__(self, *_: object) -> None:
            pass

        def cursor(self) -> Cursor:
            return Cursor()

    def connect(**_: str) -> Connection:
        if not connects:
            raise _Refused("ORA-12541: no listener\nmore")
        return Connection()

    module = ModuleType("oracledb")
    module.Error = _Refused  # type: ignore[attr-defined]
    module.connect = connect  # type: ignore[attr-defined]
    return module


def test_a_deploy_reports_oracle_errors_as_json_lines(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    row = (1, 1, "PLS-00201: identifier 'NOPE' must be declared", "ERROR")
    monkeypatch.setitem(sys.modules, "oracledb", _fake_oracledb([row], connects=True))
    dsn = "scott/tiger@db:1521/FREEPDB1"
    argv = ["deploy", "--format", "json", "--dsn", dsn, str(project / "stock.pell")]
    code, out, err = _run(argv, capsys)
    assert code == 1
    assert [(s["kind"], s["object_type"], s["status"]) for s in out] == [
        ("deploy-step", "PACKAGE", "ok"),
        ("deploy-step", "PACKAGE BODY", "failed"),
    ]
    oracle = [line for line in err if line.get("code") == "oracle"]
    assert [(d["kind"], d["severity"], d["message"]) for d in oracle] == [
        ("diagnostic", "error", "PLS-00201: identifier 'NOPE' must be declared")
    ]
    assert "tiger" not in json.dumps(out + err)
    # a database that cannot be reached
    monkeypatch.setitem(sys.modules, "oracledb", _fake_oracledb([], connects=False))
    code, out, err = _run(argv, capsys)
    assert code == 1 and out == []
    (error,) = [line for line in err if line["kind"] == "error"]
    assert error["category"] == "database"
    assert error["message"] == "cannot connect to scott@db:1521/FREEPDB1: ORA-12541: no listener"


def test_the_command_line_process_writes_only_json(project: Path) -> None:
    """The real process, its interpreter's start-up and exit included."""
    for argv in (["check", str(project)], ["verify", str(project)], ["build", "-j", "x", "y"]):
        ran = subprocess.run(
            [sys.executable, "-m", "pell", *argv[:1], "--format", "json", *argv[1:]],
            capture_output=True,
            text=True,
            check=False,
        )
        assert ran.returncode in (1, 2)
        assert _lines(ran.stdout) + _lines(ran.stderr), argv


def test_an_unknown_format_leaves_argparse_errors_as_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check", "--format", "yaml", "x.pell"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'yaml'" in err and err.startswith("usage: ")


DOCUMENT = (Path(__file__).parent.parent / "docs" / "json.md").read_text(encoding="utf-8")


def _documented_fields(kind: str) -> tuple[set[str], set[str]]:
    """The fields docs/json.md's table lists for `kind`: (always there, optional)."""
    section = DOCUMENT[DOCUMENT.index(f"### `{kind}`") :]
    table = section[: section.index("```json")]
    always, optional = {"schema", "kind"}, set()
    rows = r"^\| ((?:`\w+`(?:, )?)+) \| ([^|]+) \| (.*) \|$"
    for names, type_, said in re.findall(rows, table, re.MULTILINE):
        fields = set(re.findall(r"`(\w+)`", names))
        # the summary's counts are per command
        if "*optional*" in type_ or said.startswith("`build"):
            optional |= fields
        else:
            always |= fields
    return always, optional


def _assert_documented(objects: list[dict[str, Any]]) -> None:
    for shown in objects:
        always, optional = _documented_fields(shown["kind"])
        assert always <= set(shown) <= always | optional, (shown, always, optional)


def test_the_document_describes_every_kind_with_an_example_line() -> None:
    sections = re.findall(r"^### `([a-z-]+)`$", DOCUMENT, re.MULTILINE)
    assert sections == list(KINDS)
    examples = re.findall(r"^```json\n(.*?)\n```$", DOCUMENT, re.MULTILINE | re.DOTALL)
    shown = [json.loads(example) for example in examples]
    assert [line["kind"] for line in shown] == list(KINDS)
    assert all(line["schema"] == SCHEMA for line in shown)
    _assert_documented(shown)
    assert _documented_fields("diagnostic") == (
        {"schema", "kind", "code", "severity", "path", "line", "column", "message", "hints"}
        | {"notes"},
        {"end"},
    )


def test_a_bad_settings_file_is_the_path_of_its_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text('target = "nope"\n', "utf-8")
    (tmp_path / "m.pell").write_text("module m;\n", "utf-8")
    assert main(["build", "--format", "json", str(tmp_path / "m.pell")]) == 2
    (line,) = _lines(capsys.readouterr().err)
    assert line["category"] == "usage" and line["path"] == str(tmp_path / "pell.toml")
    assert line["message"].startswith(f"{tmp_path / 'pell.toml'}: target `nope` is not one of")
