"""The hatch build hook: a sample project's wheel carries its compiled SQL (no network)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from pell import compile_path

EXAMPLES = Path(__file__).parent.parent / "examples"


def _sample(root: Path, module: str) -> Path:
    project = root / "sample"
    (project / "sample_db").mkdir(parents=True)
    (project / "sample_db" / "__init__.py").write_text("", "utf-8")
    (project / "db" / "billing").mkdir(parents=True)
    (project / "db" / "billing" / "orders.pell").write_text(module, "utf-8")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n'
        '[project]\nname = "sample-db"\nversion = "1.0"\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["sample_db"]\n\n'
        '[tool.hatch.build.hooks.pell]\nsources = ["db"]\n',
        "utf-8",
    )
    return project


def _build_wheel(project: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "--no-index", "-w", str(project / "dist"), str(project)],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip


def test_wheel_contains_the_compiled_sql(tmp_path: Path) -> None:
    source = (EXAMPLES / "orders.pell").read_text("utf-8")
    project = _sample(tmp_path, source)
    done = _build_wheel(project)
    assert done.returncode == 0, done.stderr
    (wheel,) = (project / "dist").glob("sample_db-1.0-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        assert "sample_db/sql/billing/orders.sql" in archive.namelist()
        sql = archive.read("sample_db/sql/billing/orders.sql").decode("utf-8")
    assert sql == compile_path(EXAMPLES / "orders.pell").sql


def test_a_module_with_errors_fails_the_build(tmp_path: Path) -> None:
    project = _sample(tmp_path, 'module broken;\npub fn f() -> number { return "x"; }\n')
    done = _build_wheel(project)
    assert done.returncode != 0
    assert (
        "orders.pell:2:31: error: fn `f` returns `number`, not `text`" in done.stdout + done.stderr
    )
    # the user's errors, said as pellc says them: no traceback of the hook around them
    assert "Traceback" not in done.stdout + done.stderr
    assert "pell build hook: modules have errors" in done.stdout + done.stderr


def test_an_unreadable_module_fails_the_build_and_names_it(tmp_path: Path) -> None:
    project = _sample(tmp_path, (EXAMPLES / "orders.pell").read_text("utf-8"))
    (project / "db" / "gone.pell").symlink_to(project / "db" / "nowhere.pell")
    done = _build_wheel(project)
    assert done.returncode != 0
    assert f"cannot read {project / 'db' / 'gone.pell'}: No such file or directory" in (
        done.stdout + done.stderr
    )
    assert "Traceback" not in done.stdout + done.stderr


def test_the_wheel_has_the_projects_target(tmp_path: Path) -> None:
    """`[tool.pellc] target = "postgres"` without a `target` in the hook: the wheel ships what
    `pellc build` of the project writes, PostgreSQL's SQL, as every pellc command does."""
    project = _sample(tmp_path, (EXAMPLES / "orders.pell").read_text("utf-8"))
    with (project / "pyproject.toml").open("a", encoding="utf-8") as settings:
        settings.write('\n[tool.pellc]\ntarget = "postgres"\n')
    done = _build_wheel(project)
    assert done.returncode == 0, done.stderr
    (wheel,) = (project / "dist").glob("sample_db-1.0-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        sql = archive.read("sample_db/sql/billing/orders.sql").decode("utf-8")
    assert sql == compile_path(EXAMPLES / "orders.pell", target="postgres").sql
    assert "-- Target: PostgreSQL" in sql
