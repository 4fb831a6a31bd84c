"""The pre-commit hook's entry, run as pre-commit would, on a repository with a stale and a
fresh module."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
GOOD = "module {name};\npub fn f(x: number) -> number {{\n    return x;\n}}\n"


def _hook_entry() -> list[str]:
    text = (ROOT / ".pre-commit-hooks.yaml").read_text("utf-8")
    assert re.search(r"^- id: pellc-check$", text, re.MULTILINE)
    assert re.search(r"^  pass_filenames: false$", text, re.MULTILINE)
    entry = re.search(r"^  entry: (.+)$", text, re.MULTILINE)
    assert entry is not None
    return entry.group(1).split()


def _hook_command(user_args: list[str] | None) -> list[str]:
    """What pre-commit runs: the entry, then the user's `args`, or the hook's when the user
    configured none (no file names: pass_filenames is false)."""
    text = (ROOT / ".pre-commit-hooks.yaml").read_text("utf-8")
    default = re.search(r"^  args: \[(.*)\]$", text, re.MULTILINE)
    default_args = [a.strip() for a in default.group(1).split(",")] if default else []
    entry = _hook_entry()
    pellc = str(Path(sys.executable).parent / "pellc")
    return [pellc, *entry[1:], *(default_args if user_args is None else user_args)]


def test_hook_fails_on_a_stale_module_and_passes_when_fresh(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "db").mkdir(parents=True)
    (repo / "db" / "fresh.pell").write_text(GOOD.format(name="fresh"), "utf-8")
    (repo / "db" / "stale.pell").write_text(GOOD.format(name="stale"), "utf-8")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    entry = _hook_entry()
    assert entry[0] == "pellc"
    pellc = str(Path(sys.executable).parent / "pellc")
    command = _hook_command(["db", "-d", "sql"])  # the user's args from the hook docs

    built = subprocess.run(
        [pellc, "build", "db", "-d", "sql"], cwd=repo, capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr
    assert subprocess.run(command, cwd=repo, capture_output=True, text=True).returncode == 0

    (repo / "db" / "stale.pell").write_text(
        GOOD.format(name="stale").replace("x;", "x + 1;"), "utf-8"
    )
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == f"{Path('sql') / 'stale.sql'}: stale"
    assert "fresh.sql" not in done.stderr.splitlines()[0]
    # the failure says what brings the SQL up to date; run as said, the hook passes again
    fix = done.stderr.splitlines()[-1]
    assert fix == "to bring them up to date, run: pellc build db -d sql"
    words = shlex.split(fix.split(": ", 1)[1])
    subprocess.run([pellc, *words[1:]], cwd=repo, check=True, capture_output=True)
    assert subprocess.run(command, cwd=repo, capture_output=True, text=True).returncode == 0


def test_hook_works_without_args(tmp_path: Path) -> None:
    """A user who configures no `args` gets the layout of the README: db/ checked against sql/."""
    repo = tmp_path / "repo"
    (repo / "db").mkdir(parents=True)
    (repo / "db" / "m.pell").write_text(GOOD.format(name="m"), "utf-8")
    command = _hook_command(None)
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr  # not built yet: missing, not a usage error
    assert done.stderr.splitlines()[0] == f"{Path('sql') / 'm.sql'}: missing"
    pellc = str(Path(sys.executable).parent / "pellc")
    subprocess.run([pellc, "build", "db", "-d", "sql"], cwd=repo, check=True, capture_output=True)
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # a module deleted after the build leaves its .sql behind: the hook catches it
    (repo / "db" / "gone.pell").write_text(GOOD.format(name="gone"), "utf-8")
    subprocess.run([pellc, "build", "db", "-d", "sql"], cwd=repo, check=True, capture_output=True)
    (repo / "db" / "gone.pell").unlink()
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines()[0] == f"{Path('sql') / 'gone.sql'}: stale"
