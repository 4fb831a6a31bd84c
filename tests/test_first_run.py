"""What a newcomer meets on a first run (issue 27, item 7): a wrong input said in one line, the
runtime a one-file build needs, a closed pipe, a nested project left out, a missing `;`, progress
on a long run, one location per fn, a misspelt `allow`, and install lines that work."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import EXAMPLES, ROOT

import pell.cli
from pell.cli import main

GOOD = "module {name};\npub fn f(x: number) -> number {{\n    return x + 1;\n}}\n"
RAISES = (
    "module {name};\npub error Negative {{ x: number }}\n"
    "pub fn f(x: number) -> Result<number, Negative> {{\n"
    "    if x < 0 {{\n        return Err(Negative {{ x: x }});\n    }}\n    return Ok(x);\n}}\n"
)
PELLC = str(Path(sys.executable).parent / "pellc")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def _everything_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*"))


# ---- 1. an input that is not a .pell file -----------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["build", "build -o", "build -d", "build --check", "check", "verify", "explain", "deploy"],
)
def test_a_sql_input_is_one_line_exit_2_and_nothing_is_written(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _write(tmp_path / "in" / "setup.sql", "select 1 from dual;\n")
    out = tmp_path / "out"
    argv = {
        "build": ["build", str(script)],
        "build -o": ["build", str(script), "-o", str(out / "setup.sql")],
        "build -d": ["build", str(script), "-d", str(out)],
        "build --check": ["build", "--check", str(script), "-d", str(out)],
        "check": ["check", str(script)],
        "verify": ["verify", str(script)],
        "explain": ["explain", str(script)],
        "deploy": ["deploy", "--dry-run", str(script)],
    }[command]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"pellc: error: {script} is not a .pell file: inputs are .pell files and directories "
        "of them\n"
    )
    assert captured.out == ""
    assert not out.exists()  # no .sql, no manifest
    assert _everything_under(tmp_path / "in") == ["setup.sql"]


def test_a_directory_build_still_ignores_files_that_are_not_pell(tmp_path: Path) -> None:
    src, out = tmp_path / "db", tmp_path / "out"
    _write(src / "m.pell", GOOD.format(name="m"))
    _write(src / "setup.sql", "select 1 from dual;\n")
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert _everything_under(out) == [".pellc-manifest.json", "m.sql"]


# ---- 2. runtime on a folder without .pell files -----------------------------------------------


def test_runtime_refuses_a_folder_without_pell_files_as_build_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    _write(empty / "notes.txt", "no modules here\n")
    said = []
    for argv in (
        ["runtime", str(empty)],
        ["runtime", str(empty), "-o", str(tmp_path / "rt.sql")],
        ["build", str(empty), "-d", str(tmp_path / "out")],
        ["check", str(empty)],
        ["verify", str(empty)],
    ):
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert captured.out == ""  # no runtime package printed
        said.append(captured.err)
    assert said == [f"pellc: error: no .pell file found in {empty}\n"] * len(said)
    assert not (tmp_path / "rt.sql").exists()


# ---- 3. build -o of a module that raises through pell_runtime --------------------------------


def test_build_o_of_a_module_that_uses_the_runtime_gives_the_command_that_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _write(tmp_path / "db" / "checks.pell", RAISES.format(name="checks"))
    output = tmp_path / "sql dir" / "checks.sql"
    assert main(["build", str(source), "-o", str(output)]) == 0
    assert "pell_runtime." in output.read_text("utf-8")
    err = capsys.readouterr().err
    match = re.fullmatch(
        re.escape(f"{output}: uses the pell_runtime package: write it with `")
        + r"(pellc runtime [^`]+)` and load it first\n",
        err,
    )
    assert match, err
    # the command, run as given, writes the runtime beside the output, with the error's code
    words = shlex.split(match.group(1))
    assert words[0] == "pellc"
    assert main(words[1:]) == 0
    runtime = (output.parent / "pell_runtime.sql").read_text("utf-8")
    assert "c_checks_negative" in runtime


def test_build_o_of_a_module_without_runtime_use_says_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(tmp_path / "m.pell", GOOD.format(name="m"))
    assert main(["build", str(source), "-o", str(tmp_path / "m.sql")]) == 0
    assert capsys.readouterr().err == ""


# ---- 4. a closed pipe ------------------------------------------------------------------------


@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["PYTHONUNBUFFERED", "buffered"])
def test_standard_output_closed_by_its_reader_exits_141(unbuffered: str, tmp_path: Path) -> None:
    """`pellc build big.pell | head -1`, with a real pipe: the SQL (about 110 kB) is more than
    the pipe holds, so the reader's going away cuts pellc's write short. Under
    PYTHONUNBUFFERED, Python's text layer dropped the rest of a short write without an error:
    pellc exited 0 with its output cut."""
    fns = "".join(f"pub fn f{i}(x: number) -> number {{ return x + {i}; }}\n" for i in range(800))
    big = _write(tmp_path / "big.pell", "module big;\n" + fns)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = unbuffered
    with subprocess.Popen(
        [PELLC, "build", str(big)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # what `head -1` does once it has its line
        err = process.stderr.read()
        code = process.wait(timeout=120)
    assert first.startswith(b"-- Generated by pellc")
    assert code == 141, err
    assert err == b""  # quietly, as a tool stopped by SIGPIPE


# ---- 5. a nested project ---------------------------------------------------------------------


def test_a_nested_project_left_out_of_a_directory_build_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = tmp_path / "db", tmp_path / "out"
    _write(src / "a.pell", GOOD.format(name="a"))
    _write(src / "legacy" / "old.pell", GOOD.format(name="old"))
    settings = _write(src / "legacy" / "pell.toml", 'target = "19c"\n')
    note = f"{settings}: its folder is another project, left out (give it to pellc on its own)"
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err.splitlines() == [note, "built 1, unchanged 0, failed 0"]
    assert not (out / "legacy").exists()
    for command in ("check", "verify"):
        main([command, str(src)])
        assert note in capsys.readouterr().err.splitlines(), command


# ---- 6. a missing `;` --------------------------------------------------------------------------


def test_a_missing_semicolon_is_reported_at_the_end_of_the_line_that_lacks_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _write(
        tmp_path / "m.pell",
        "module m;\npub fn f(x: number) -> number {\n    let y: number = x + 1  // one more\n"
        "\n    return y;\n}\n",
    )
    assert main(["check", str(source)]) == 1
    assert capsys.readouterr().err == (
        f"{source}:3:26: error: missing `;` at the end of this line (the next token is "
        "`return`, on line 5)  [syntax]\n"
    )


# ---- 7. progress on a long check or verify ---------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _run_on_terminal(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> str:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    main(argv)
    monkeypatch.undo()
    return terminal.getvalue()


def test_check_and_verify_show_progress_on_a_terminal_once_past_the_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = [str(EXAMPLES / "orders.pell"), str(EXAMPLES / "transfer.pell")]
    monkeypatch.setattr(pell.cli, "PROGRESS_AFTER", 0.0)  # every run is a long one
    err = _run_on_terminal(["check", *files], monkeypatch)
    monkeypatch.setattr(pell.cli, "PROGRESS_AFTER", 0.0)
    assert "\x1b[Kchecked 1/2 modules\r\x1b[Kchecked 2/2 modules\r\x1b[K" in err
    assert "\x1b[Kverified 1/" in err
    monkeypatch.setattr(pell.cli, "PROGRESS_AFTER", 0.0)
    err = _run_on_terminal(["verify", *files], monkeypatch)
    assert "\x1b[Kcompiled 2/2 modules\r\x1b[K" in err and "\x1b[Kverified 1/" in err


@pytest.mark.parametrize("why", ["quick", "json", "not a terminal"])
def test_no_progress_on_a_quick_run_under_json_or_off_a_terminal(
    why: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(EXAMPLES / "orders.pell"), str(EXAMPLES / "transfer.pell")]
    # quick: shorter than the delay, whatever the load on the machine running the test
    monkeypatch.setattr(pell.cli, "PROGRESS_AFTER", 3600.0 if why == "quick" else 0.0)
    if why == "not a terminal":
        main(["check", *files])
        err = capsys.readouterr().err
    else:
        options = ["--format", "json"] if why == "json" else []
        err = _run_on_terminal(["check", *options, *files], monkeypatch)
    assert "checked 1/2" not in err and "\x1b[K" not in err


def test_progress_starts_after_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    now = [100.0]
    monkeypatch.setattr(pell.cli.time, "monotonic", lambda: now[0])
    progress = pell.cli._Progress()
    for elapsed, done in ((0.4, 1), (1.0, 2), (1.2, 3)):
        now[0] = 100.0 + elapsed
        progress.step("checked", done, 401, "modules")
    progress.clear()
    monkeypatch.undo()
    assert terminal.getvalue() == "\x1b[Kchecked 3/401 modules\r\x1b[K"


# ---- 8. one location per fn ------------------------------------------------------------------


def test_explain_and_verify_cite_the_same_location_for_a_fn(
    capsys: pytest.CaptureFixture[str],
) -> None:
    source = EXAMPLES / "transfer.pell"
    assert main(["explain", str(source), "transfer"]) == 0
    explained = re.match(r"transfer  \((.+)\)\n", capsys.readouterr().out)
    main(["verify", str(source)])
    verified = [
        line.split(": ")[0]
        for line in capsys.readouterr().out.splitlines()
        if "::transfer: " in line
    ]
    assert explained is not None and verified == [explained.group(1)]
    assert explained.group(1) == f"{source}:15:8"  # the fn's name, under its annotations
    assert main(["explain", str(source), "transfer", "--json"]) == 0
    (fn,) = json.loads(capsys.readouterr().out)["fns"]
    assert (fn["line"], fn["column"]) == (15, 8)


# ---- 9. a misspelt code in `allow` -----------------------------------------------------------


def test_an_unknown_code_in_allow_gets_a_did_you_mean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = _write(tmp_path / "pell.toml", 'allow = ["side-efect-in-retry"]\n')
    source = _write(tmp_path / "m.pell", GOOD.format(name="m"))
    assert main(["check", str(source)]) == 2
    assert capsys.readouterr().err == (
        f"pellc: error: {settings}: `allow` names `side-efect-in-retry`, which is no pellc "
        "code; did you mean `side-effect-in-retry`?\n"
    )


def test_allow_suggests_only_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `syntaxx` is closest to `syntax`, an error, which `allow` refuses: no suggestion
    _write(tmp_path / "pell.toml", 'allow = ["syntaxx"]\n')
    source = _write(tmp_path / "m.pell", GOOD.format(name="m"))
    assert main(["check", str(source)]) == 2
    assert capsys.readouterr().err.endswith("which is no pellc code\n")


# ---- 12. install lines that work from a clone ------------------------------------------------

_PIP_INSTALL = re.compile(r"([\w./]*pip|-m pip) install ((?:-e )?'?[^`'\s]+'?)")


def _install_lines() -> list[tuple[str, str, str]]:
    """Each `pip install` the README, the docs and pellc's messages give: (where, pip, what)."""
    found = []
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    texts += sorted((ROOT / "pell").rglob("*.py"))
    for path in texts:
        for match in _PIP_INSTALL.finditer(path.read_text("utf-8")):
            found.append((path.relative_to(ROOT).as_posix(), match.group(1), match.group(2)))
    return found


def test_every_install_line_works_from_a_clone_as_written() -> None:
    """From a clone, after the README's `python3 -m venv .venv`: pip is the venv's, and what it
    installs is the clone (`.`, with extras the project declares) or a package by its own name.
    `pip install 'pellc[oracle]'` asked the index for a pellc other than the clone's, with a pip
    that may not be the venv's."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"][
        "optional-dependencies"
    ]
    lines = _install_lines()
    assert len(lines) >= 4, lines  # the README's install, test, oracle and bench lines
    for where, pip, what in lines:
        assert pip in (".venv/bin/pip", "-m pip"), (where, pip, what)
        spec = what.removeprefix("-e ").strip("'")
        local = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", spec)
        if local is None:
            assert not spec.startswith("pellc"), (where, what)  # the clone, not the index's
            continue
        for extra in (local.group(1) or "").split(","):
            assert not extra or extra in extras, (where, what)


def test_deploy_without_oracledb_gives_an_install_command_that_works(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "oracledb", None)  # `import oracledb` fails
    code = main(["deploy", "--dsn", "u/p@localhost:1521/x", str(EXAMPLES / "audit.pell")])
    assert code == 2
    err = capsys.readouterr().err.splitlines()[-1]
    command = f"{shlex.quote(sys.executable)} -m pip install 'oracledb>=2'"
    assert err == f"pellc: error: deploy needs python-oracledb: {command}"
