"""The wheel carries the grammar and templates: build it, install it into a fresh venv, and
compile an example from an unrelated directory. Slow (a venv and an install), so it runs once."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from conftest import EXAMPLES, ROOT

from pell import compile_path


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = subprocess.run(
        [str(c) for c in command], cwd=cwd, capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


def test_wheel_installs_and_compiles_from_elsewhere(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-w", dist, ROOT, cwd=tmp_path)  # fmt: skip
    (wheel,) = dist.glob("pellc-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "pell/grammar/pell.lark" in names
    assert "pell/templates/package.sql.j2" in names

    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    bin_dir = environment / ("Scripts" if os.name == "nt" else "bin")
    _run(bin_dir / "python", "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    example = EXAMPLES / "orders.pell"
    out = elsewhere / "orders.sql"
    _run(bin_dir / "pellc", "build", example, "-o", out, cwd=elsewhere)
    installed = out.read_text(encoding="utf-8")
    in_tree = compile_path(example).sql
    assert installed == in_tree, "the installed compiler gives other output than the checkout"
    # and the installed package really is the one in the venv, not this checkout
    where = _run(bin_dir / "python", "-c", "import pell; print(pell.__file__)", cwd=elsewhere)
    assert str(environment) in where.stdout
