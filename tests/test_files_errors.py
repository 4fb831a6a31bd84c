"""File system errors, in every command: `pellc: error: cannot read|write PATH: REASON`, exit 2,
never a traceback or an "internal compiler error"; a directory build reports the bad entry
and builds the rest. A closed standard output ends quietly (141). Exit 3 stays for bugs, in
every command. The faults work as root too: no chmod, only paths that cannot work and
monkeypatched OSErrors."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import pell.build
from pell.cli import main

EXAMPLES = Path(__file__).parent.parent / "examples"
GOOD = "module {name};\npub fn f(x: number) -> number {{\n    return x + 1;\n}}\n"
WITH_ERROR = "module {name};\npub error Nope {{ id: number }}\npub fn f() {{ }}\n"
PELLC = str(Path(sys.executable).parent / "pellc")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal compiler error" not in err, err
    return code, err


def _good(path: Path, name: str = "m") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(GOOD.format(name=name), "utf-8")
    return path


def _bad_entries(root: Path) -> dict[str, tuple[Path, str]]:
    """Inputs that are no readable file, and the reason each gives."""
    root.mkdir(parents=True, exist_ok=True)
    dangling = root / "dangling.pell"
    dangling.symlink_to(root / "nowhere.pell")
    looping = root / "looping.pell"
    looping.symlink_to(looping)
    directory = root / "folder.pell"
    directory.mkdir()
    return {
        "dangling": (dangling, "No such file or directory"),
        "looping": (looping, "Too many levels of symbolic links"),
        "directory": (directory, "Is a directory"),
        "missing": (root / "missing.pell", "No such file or directory"),
    }


@pytest.mark.parametrize("kind", ["dangling", "looping", "directory", "missing"])
@pytest.mark.parametrize("command", ["check", "explain", "build", "build -o", "deploy"])
def test_an_unreadable_input_is_a_read_error_in_every_command(
    kind: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, reason = _bad_entries(tmp_path / "in")[kind]
    argv = {
        "check": ["check", str(path)],
        "explain": ["explain", str(path)],
        "build": ["build", str(path)],
        "build -o": ["build", str(path), "-o", str(tmp_path / "out.sql")],
        "deploy": ["deploy", "--dry-run", str(path)],
    }[command]
    code, err = _run(argv, capsys)
    assert code == 2
    if kind != "directory" or command in ("check", "explain"):
        assert f"pellc: error: cannot read {path}: {reason}\n" in err
    # else a directory named on the command line is an input directory (which needs -d, or
    # holds no .pell file): a usage error too
    assert not (tmp_path / "out.sql").exists()


def test_a_directory_build_reports_each_bad_entry_and_builds_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = tmp_path / "db", tmp_path / "out"
    _good(src / "a.pell", "alpha")
    _good(src / "sub" / "z.pell", "zeta")
    bad = _bad_entries(src)
    code, err = _run(["build", str(src), "-d", str(out)], capsys)
    assert code == 2
    for kind in ("dangling", "looping", "directory"):
        path, reason = bad[kind]
        assert f"pellc: error: cannot read {path}: {reason}\n" in err
    assert err.endswith("built 2, unchanged 0, failed 3\n")
    assert (out / "a.sql").is_file() and (out / "sub" / "z.sql").is_file()
    # --check says the same, and exits 2 too
    code, err = _run(["build", "--check", str(src), "-d", str(out)], capsys)
    assert code == 2
    assert f"pellc: error: cannot read {bad['looping'][0]}: " in err
    assert err.endswith("checked 5: fresh 2, stale or missing 0, failed 3\n")


def test_runtime_reports_a_bad_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "db"
    (src / "e.pell").parent.mkdir(parents=True)
    (src / "e.pell").write_text(WITH_ERROR.format(name="e"), "utf-8")
    bad = _bad_entries(src)
    output = tmp_path / "pell_runtime.sql"
    code, err = _run(["runtime", str(src), "-o", str(output)], capsys)
    assert code == 2
    assert err == "".join(
        f"pellc: error: cannot read {path}: {reason}\n"
        for path, reason in sorted(bad[kind] for kind in ("dangling", "directory", "looping"))
    )
    assert not output.exists(), "a runtime missing a module's errors was written"


@pytest.mark.parametrize(
    "argv",
    [
        ["build", "{source}", "-o", "{blocker}/x.sql"],
        ["build", "{source}", "-d", "{blocker}/out"],
        ["build", "{source}", "-d", "{blocker}"],
        ["build", "{source}", "--map", "-d", "{blocker}/out"],
        ["runtime", "{sources}", "-o", "{blocker}/pell_runtime.sql"],
    ],
)
def test_an_output_through_a_regular_file_is_a_write_error(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "src" / "e.pell"
    source.parent.mkdir()
    source.write_text(WITH_ERROR.format(name="e"), "utf-8")
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory\n", "utf-8")
    names = {"source": str(source), "sources": str(source.parent), "blocker": str(blocker)}
    argv = [arg.format(**names) for arg in argv]
    code, err = _run(argv, capsys)
    assert code == 2
    assert err.endswith(f"pellc: error: cannot write {argv[-1]}: Not a directory\n"), err
    assert blocker.read_text("utf-8") == "a file, not a directory\n"


def test_an_output_that_is_a_directory_is_a_write_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _good(tmp_path / "a.pell")
    output = tmp_path / "a.sql"
    output.mkdir()
    code, err = _run(["build", str(source), "-o", str(output)], capsys)
    assert (code, err) == (2, f"pellc: error: cannot write {output}: Is a directory\n")
    assert list(tmp_path.iterdir()) == [source, output] or sorted(tmp_path.iterdir()) == sorted(
        [source, output]
    ), "no temporary file is left behind"
    # in a directory build, a directory where one module's output goes fails that module only
    src, out = tmp_path / "db", tmp_path / "out"
    _good(src / "a.pell", "alpha")
    _good(src / "b.pell", "beta")
    (out / "b.sql").mkdir(parents=True)
    code, err = _run(["build", str(src), "-d", str(out)], capsys)
    assert code == 2
    assert err == (
        f"pellc: error: cannot write {out / 'b.sql'}: Is a directory\n"
        "built 1, unchanged 0, failed 1\n"
    )
    assert (out / "a.sql").is_file()


def _failing(real: object, errno_: int, when: str) -> object:
    def fail(*args: object, **kwargs: object) -> object:
        if when in " ".join(map(str, (*args, *kwargs.values()))):
            raise OSError(errno_, os.strerror(errno_))
        return real(*args, **kwargs)  # type: ignore[operator]

    return fail


def test_a_full_disk_is_a_write_error_and_leaves_no_temporary_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _good(tmp_path / "a.pell")
    output = tmp_path / "out" / "a.sql"
    output.parent.mkdir()
    output.write_text("previous\n", "utf-8")
    monkeypatch.setattr(os, "replace", _failing(os.replace, errno.ENOSPC, ".tmp"))
    code, err = _run(["build", str(source), "-o", str(output)], capsys)
    assert (code, err) == (2, f"pellc: error: cannot write {output}: No space left on device\n")
    assert output.read_text("utf-8") == "previous\n"
    assert sorted(p.name for p in output.parent.iterdir()) == ["a.sql"]


def test_a_full_disk_in_a_directory_build_fails_that_module_and_builds_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = tmp_path / "db", tmp_path / "out"
    _good(src / "a.pell", "alpha")
    _good(src / "b.pell", "beta")
    _good(src / "c.pell", "gamma")
    monkeypatch.setattr(os, "replace", _failing(os.replace, errno.ENOSPC, "b.sql"))
    code, err = _run(["build", str(src), "-d", str(out)], capsys)
    assert code == 2
    assert err == (
        f"pellc: error: cannot write {out / 'b.sql'}: No space left on device\n"
        "built 2, unchanged 0, failed 1\n"
    )
    assert sorted(p.name for p in out.iterdir()) == [".pellc-manifest.json", "a.sql", "c.sql"]
    monkeypatch.undo()  # the disk has room again: the next build writes b alone
    code, err = _run(["build", str(src), "-d", str(out)], capsys)
    assert (code, err) == (0, "built 1, unchanged 2, failed 0\n")


def test_a_read_only_output_directory_is_a_write_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src, out = tmp_path / "db", tmp_path / "out"
    _good(src / "a.pell", "alpha")
    (src / "e.pell").write_text(WITH_ERROR.format(name="e"), "utf-8")
    out.mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", _failing(tempfile.mkstemp, errno.EROFS, str(out)))
    code, err = _run(["build", str(src), "-d", str(out)], capsys)
    assert code == 2
    reason = "Read-only file system"
    assert err == (
        f"pellc: error: cannot write {out / 'a.sql'}: {reason}\n"
        f"pellc: error: cannot write {out / 'e.sql'}: {reason}\n"
        # the runtime is the project's: e.pell declares an error, written or not
        f"pellc: error: cannot write {out / 'pell_runtime.sql'}: {reason}\n"
        f"pellc: error: cannot write {out / '.pellc-manifest.json'}: {reason}\n"
        "built 0, unchanged 0, failed 2, runtime failed\n"
    )
    code, err = _run(["runtime", str(src), "-o", str(out / "pell_runtime.sql")], capsys)
    assert (code, err) == (2, f"pellc: error: cannot write {out / 'pell_runtime.sql'}: {reason}\n")


def test_an_unreadable_source_is_a_read_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "db"
    _good(src / "a.pell", "alpha")
    locked = _good(src / "locked.pell", "locked")
    real = Path.read_bytes

    def read_bytes(path: Path) -> bytes:
        if path.name == "locked.pell":
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    expected = f"pellc: error: cannot read {locked}: Permission denied\n"
    for argv in (["check", str(locked)], ["explain", str(locked)], ["runtime", str(src)]):
        code, err = _run(argv, capsys)
        assert (code, err) == (2, expected)
    code, err = _run(["build", str(src), "-d", str(tmp_path / "out")], capsys)
    assert (code, err) == (2, expected + "built 1, unchanged 0, failed 1\n")


def test_the_library_records_file_errors_and_raises_only_when_nothing_can_be_built(
    tmp_path: Path,
) -> None:
    src = tmp_path / "db"
    _good(src / "a.pell", "alpha")
    (src / "x.pell").mkdir()
    result = pell.build.build_tree([src], tmp_path / "out")
    assert [str(e) for e in result.file_errors] == [f"cannot read {src / 'x.pell'}: Is a directory"]
    assert result.failed and (tmp_path / "out" / "a.sql").is_file()
    blocker = tmp_path / "blocker"
    blocker.write_text("", "utf-8")
    with pytest.raises(pell.build.FileError, match=r"cannot write .*blocker/out: Not a directory"):
        pell.build.build_tree([src], blocker / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(pell.build.InputError, match=r"no \.pell file found in .*empty"):
        pell.build.build_tree([tmp_path / "empty"], tmp_path / "out")


def test_a_closed_standard_output_ends_quietly_with_141(tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before pellc writes: `pellc build ... | head -1`
    try:
        for argv in (
            ["build", str(EXAMPLES / "orders.pell")],
            ["explain", str(EXAMPLES / "orders.pell")],
            ["deploy", "--dry-run", str(EXAMPLES / "orders.pell")],
        ):
            done = subprocess.run(
                [PELLC, *argv], stdout=write_end, stderr=subprocess.PIPE, text=True, cwd=tmp_path
            )
            assert done.returncode == 141, done.stderr
            assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    finally:
        os.close(write_end)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_full_standard_output_is_a_write_error(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [PELLC, "build", str(EXAMPLES / "orders.pell")],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 2
    assert done.stderr.endswith(
        "pellc: error: cannot write standard output: No space left on device\n"
    )


def _explode(*args: object, **kwargs: object) -> None:
    raise KeyError("boom")


@pytest.mark.parametrize(
    ("argv", "module", "function"),
    [
        (["explain", "{orders}"], "pell.explain", "explain"),
        (["explain", "{orders}"], "pell.explain", "render_text"),
        (["deploy", "--dry-run", "{orders}"], "pell.engine", "compile_source"),
        (["deploy", "--dry-run", "{orders}"], "pell.deploy", "split_script"),
        (["runtime", "{examples}"], "pell.runtime", "runtime_sql"),
        (["build", "{orders}", "-d", "{out}"], "pell.build", "project_findings"),
    ],
)
def test_a_bug_in_any_command_is_an_internal_error_exit_3(
    argv: list[str],
    module: str,
    function: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(f"{module}.{function}", _explode)
    names = {"orders": EXAMPLES / "orders.pell", "examples": EXAMPLES, "out": tmp_path / "out"}
    assert main([arg.format(**names) for arg in argv]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert ": internal compiler error: KeyError at pell/" in err
    assert "This is a bug in pellc; please report it" in err
