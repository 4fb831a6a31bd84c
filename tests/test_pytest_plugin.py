"""`pytest --pell` (pell/pytest_plugin.py) on a user's repository: tests/user_repo, a Python
project whose pyproject.toml turns the plugin on, with a pell.toml, three modules under db/ (a
@retry fn, an import) and committed snapshots. Each test runs pytest, with this interpreter, on
a copy of it: the repository itself is never written."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, TESTS, assert_oracle_accepts

USER_REPO = TESTS / "user_repo"
SNAPSHOTS = Path("__pell_snapshots__", "db")
MODULES = ["accounts", "reports", "transfers"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    shutil.copytree(USER_REPO, copy)
    return copy


def run_pytest(repo: Path, *args: str, lsp: bool = False) -> subprocess.CompletedProcess[str]:
    """pytest in `repo`, as its user runs it (its pyproject.toml says `--pell`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # hypothesis and pytest-lsp, installed for this suite, are no plugins of the user's:
    # hypothesis costs 2 s of imports a run; pytest-lsp is left in by `lsp`
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
    command += ["-p", "no:hypothesispytest", *([] if lsp else ["-p", "no:pytest-lsp"])]
    command += ["-rA", *args]
    return subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_the_plugin_is_the_pellc_entry_point_of_pytest11() -> None:
    from importlib.metadata import entry_points

    found = [e.value for e in entry_points(group="pytest11") if e.name == "pellc"]
    assert found == ["pell.pytest_plugin"], "reinstall: pip install -e '.[test]'"


def test_green_when_every_snapshot_matches(repo: Path) -> None:
    done = run_pytest(repo)
    assert done.returncode == 0, done.stdout + done.stderr
    # testpaths names tests/ only: the project is collected all the same, beside the Python test
    for name in [*(f"db/{m}.pell" for m in MODULES), "verify"]:
        assert f"PASSED pell.toml::{name}\n" in done.stdout
    assert "PASSED tests/test_schema.py::test_every_module_is_under_db" in done.stdout
    assert "5 passed" in done.stdout


def test_red_with_a_unified_diff_when_a_module_output_changes(repo: Path) -> None:
    edit(repo / "db" / "transfers.pell", "balance - :amount where", "balance - :amount - 1 where")
    done = run_pytest(repo)
    assert done.returncode == 1
    assert (
        "db/transfers.pell: its SQL is not its snapshot's; `pytest --snapshot-update` accepts it\n"
        "--- __pell_snapshots__/db/transfers.sql (snapshot)\n"
        "+++ db/transfers.pell (compiled now)\n"
        "@@ -1,5 +1,5 @@\n"
    ) in done.stdout
    assert (
        "         l_source := bank.accounts.find(p_from_id);\n"
        "-        update bank_accounts set balance = balance - p_amount where id = p_from_id;\n"
        "+        update bank_accounts set balance = balance - p_amount - 1 where id = p_from_id;\n"
        "         update bank_accounts set balance = balance + p_amount where id = p_to_id;\n"
    ) in done.stdout
    assert "1 failed, 4 passed" in done.stdout
    guide = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    shown = re.search(r"\n  ```text\n(  db/transfers\.pell: .*?)  ```\n", guide, re.S)
    assert shown, "docs/testing.md lost its failure sample"
    assert shown.group(1).replace("\n  ", "\n").removeprefix("  ") in done.stdout
    # only the module that changed: the others still match
    assert "FAILED pell.toml::db/transfers.pell" in done.stdout

    updated = run_pytest(repo, "--snapshot-update")
    assert updated.returncode == 0, updated.stdout
    snapshot = (repo / SNAPSHOTS / "transfers.sql").read_text(encoding="utf-8")
    assert "balance = balance - p_amount - 1 where" in snapshot
    assert run_pytest(repo).returncode == 0


def test_red_on_an_error_diagnostic_even_when_updating(repo: Path) -> None:
    with (repo / "db" / "reports.pell").open("a", encoding="utf-8") as module:
        module.write("\npub fn broken() -> number {\n    return nosuch;\n}\n")
    before = (repo / SNAPSHOTS / "reports.sql").read_text(encoding="utf-8")
    done = run_pytest(repo, "--snapshot-update")
    assert done.returncode == 1
    assert re.search(
        r"\n_+ db/reports\.pell _+\n"
        r"db/reports\.pell:10:12: error: unknown name `nosuch`  \[unknown-name\]\n=",
        done.stdout,
    ), done.stdout
    # as `pellc verify`, the verifier runs over the modules that compile
    assert "PASSED pell.toml::verify" in done.stdout
    assert (repo / SNAPSHOTS / "reports.sql").read_text(encoding="utf-8") == before


def test_red_on_a_verify_finding(repo: Path) -> None:
    """A user's ROLLBACK TO a savepoint name with a typo: it compiles, the verifier finds
    ORA-01086. Updating the snapshots does not hide it."""
    with (repo / "db" / "accounts.pell").open("a", encoding="utf-8") as module:
        module.write(
            "\n@retry(n = 3, on = [busy])\n"
            "pub fn deposit(id: number, amount: number) {\n"
            "    sql! { savepoint before_deposit };\n"
            "    sql! { update bank_accounts set balance = balance + :amount where id = :id };\n"
            "    if amount > 1000 {\n"
            "        sql! { rollback to before_deposti };\n"
            "    }\n"
            "}\n"
        )
    done = run_pytest(repo, "--snapshot-update")
    assert done.returncode == 1
    assert (
        "db/accounts.pell:20:9: error: ROLLBACK TO before_deposti raises ORA-01086: no savepoint "
        "of that name stands here  [verify-no-savepoint]\n"
        "  schedule:\n"
    ) in done.stdout
    assert "FAILED pell.toml::verify" in done.stdout
    assert "PASSED pell.toml::db/accounts.pell" in done.stdout  # its new SQL is the snapshot


def test_a_warning_is_in_pytests_warnings_summary(repo: Path) -> None:
    edit(repo / "db" / "transfers.pell", 'scope = "transaction", ', "")
    done = run_pytest(repo, "--snapshot-update")
    assert done.returncode == 0, done.stdout
    assert (
        "PellWarning: db/transfers.pell:7:42: warning: retrying `deadlock` (ORA-00060), which a "
        "rollback to a savepoint cannot cure"
    ) in done.stdout


def test_a_renamed_module_leaves_an_unused_snapshot_until_updated(repo: Path) -> None:
    (repo / "db" / "reports.pell").rename(repo / "db" / "totals.pell")
    done = run_pytest(repo)
    assert done.returncode == 1
    assert (
        "db/totals.pell: no snapshot __pell_snapshots__/db/totals.sql; "
        "`pytest --snapshot-update` writes it"
    ) in done.stdout
    assert (
        "__pell_snapshots__/db/reports.sql: no module of the project writes it; "
        "--snapshot-update removes it"
    ) in done.stdout
    assert run_pytest(repo, "--snapshot-update").returncode == 0
    assert sorted(p.name for p in (repo / SNAPSHOTS).iterdir()) == [
        "accounts.sql",
        "totals.sql",
        "transfers.sql",
    ]


def test_the_snapshots_are_what_pellc_build_writes(repo: Path, tmp_path: Path) -> None:
    """The plugin compiles as `pellc build` does (the project's target, the file's name in
    the header): the snapshots it writes are the build's outputs, which parseora accepts."""
    from pell.cli import main

    shutil.rmtree(repo / "__pell_snapshots__")
    assert run_pytest(repo, "--snapshot-update").returncode == 0
    out = tmp_path / "out"
    assert main(["build", str(repo / "db"), "-d", str(out)]) == 0
    for name in MODULES:
        built = (out / f"{name}.sql").read_text(encoding="utf-8")
        assert (repo / SNAPSHOTS / f"{name}.sql").read_text(encoding="utf-8") == built
        assert (USER_REPO / SNAPSHOTS / f"{name}.sql").read_text(encoding="utf-8") == built
        assert_oracle_accepts(built)


def test_without_pell_nothing_of_the_project_is_collected(repo: Path) -> None:
    shutil.rmtree(repo / "__pell_snapshots__")
    done = run_pytest(repo, "-o", "addopts=")
    assert done.returncode == 0, done.stdout
    assert "1 passed" in done.stdout and "pell.toml" not in done.stdout
    assert not (repo / "__pell_snapshots__").exists()


def test_pell_project_names_the_folder_of_the_project(repo: Path) -> None:
    """A repository whose Pell project is a folder of its own: its pell.toml in db/,
    `pell_project = "db"`; the snapshots are under db/."""
    (repo / "pell.toml").rename(repo / "db" / "pell.toml")
    (repo / "pell-error-codes.json").rename(repo / "db" / "pell-error-codes.json")
    done = run_pytest(repo, "-o", "pell_project=db", "--snapshot-update")
    assert done.returncode == 0, done.stdout
    assert "PASSED db/pell.toml::transfers.pell" in done.stdout
    for name in MODULES:
        moved = (repo / "db" / "__pell_snapshots__" / f"{name}.sql").read_bytes()
        assert moved == (USER_REPO / SNAPSHOTS / f"{name}.sql").read_bytes()


def test_pell_without_a_project_is_a_usage_error(repo: Path) -> None:
    (repo / "pell.toml").unlink()
    done = run_pytest(repo)
    assert done.returncode == 4
    assert "--pell: no pell.toml, and no pyproject.toml with [tool.pellc], at or above" in (
        done.stderr
    )


def test_this_suite_does_not_collect_the_user_repository() -> None:
    """tests/conftest.py's collect_ignore: the user's Python test is not this suite's."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider",
         f"--ignore-glob={TESTS}/test_*.py", str(TESTS)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert "user_repo" not in done.stdout, done.stdout
    assert done.returncode == 5, done.stdout + done.stderr  # no tests collected


def test_the_items_run_beside_pytest_lsp(repo: Path) -> None:
    """pytest-lsp (1.0) is installed with pellc[test], and editor-tooling users have it: its
    pytest_runtest_call wrapper returns without yielding for an item without `funcargs`,
    which failed every Pell item."""
    import pytest_lsp  # noqa: F401  (in the test extra: the test means nothing without it)

    done = run_pytest(repo, lsp=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 passed" in done.stdout


def test_syrupy_neither_counts_nor_deletes_the_pell_snapshots(repo: Path) -> None:
    """A test module at the project's root, beside the Pell snapshots, and one that uses
    syrupy: syrupy walks the `__snapshots__` folder beside each test module, and would call
    every Pell snapshot there unused (exit 1) and delete it with --snapshot-update."""
    from pell.pytest_plugin import SNAPSHOTS as PLUGIN_SNAPSHOTS

    (repo / "test_plain.py").write_text("def test_plain():\n    pass\n", "utf-8")
    (repo / "tests" / "test_s.py").write_text(
        "def test_s(snapshot):\n    assert snapshot == 1\n", "utf-8"
    )
    snapshots = sorted((repo / PLUGIN_SNAPSHOTS).rglob("*.sql"))
    assert len(snapshots) == len(MODULES)
    updated = run_pytest(repo, "--snapshot-update", ".")
    assert updated.returncode == 0, updated.stdout
    assert "Deleted" not in updated.stdout, updated.stdout
    assert sorted((repo / PLUGIN_SNAPSHOTS).rglob("*.sql")) == snapshots
    done = run_pytest(repo, ".")
    assert done.returncode == 0, done.stdout
    assert "unused" not in done.stdout and "7 passed" in done.stdout, done.stdout


def test_the_error_codes_fail_as_they_fail_a_build(repo: Path) -> None:
    """Two errors whose runtime names clash: `pellc build` fails (duplicate-name), so does
    the module's item; then an error-code file that is no JSON: an item of its own fails."""
    (repo / "db" / "x.pell").write_text("module a.b_c;\npub error D;\n", "utf-8")
    (repo / "db" / "y.pell").write_text("module a.b;\npub error C_d;\n", "utf-8")
    done = run_pytest(repo, "--snapshot-update")
    assert done.returncode == 1, done.stdout
    assert (
        "db/x.pell:2:1: error: error `D` of module `a.b_c` and error `C_d` of module `a.b` "
        "would both be `pell_runtime.a_b_c_d`  [duplicate-name]"
    ) in done.stdout
    assert "FAILED pell.toml::db/x.pell" in done.stdout
    (repo / "db" / "x.pell").unlink()
    (repo / "db" / "y.pell").unlink()

    (repo / "pell-error-codes.json").write_text("{bad", "utf-8")
    done = run_pytest(repo, "--snapshot-update")
    assert done.returncode == 1, done.stdout
    assert "FAILED pell.toml::pell-error-codes.json" in done.stdout
    assert f"{repo / 'pell-error-codes.json'}: not valid JSON" in done.stdout


def test_what_the_walk_leaves_out(repo: Path) -> None:
    """A nested project is named in the warnings summary, as `pellc build` notes it; a
    virtualenv (pellc's stubs in its site-packages) and hidden folders are not the project's."""
    stubs = repo / ".venv" / "lib" / "python3.11" / "site-packages" / "pell" / "stubs"
    stubs.mkdir(parents=True)
    (stubs / "dbms_output.pell").write_text("module dbms_output;\n", "utf-8")
    (repo / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n", "utf-8")
    (repo / "db" / "sub").mkdir()
    (repo / "db" / "sub" / "pell.toml").write_text("", "utf-8")
    (repo / "db" / "sub" / "b.pell").write_text("module b;\npub error Oops;\n", "utf-8")
    done = run_pytest(repo)
    assert done.returncode == 0, done.stdout
    assert "PellWarning: db/sub/pell.toml: its folder is another project, left out" in done.stdout
    assert ".venv" not in done.stdout and "5 passed" in done.stdout


def test_the_diff_marks_a_missing_final_newline(repo: Path) -> None:
    snapshot = repo / SNAPSHOTS / "reports.sql"
    snapshot.write_bytes(snapshot.read_bytes().removesuffix(b"\n"))
    done = run_pytest(repo)
    assert done.returncode == 1
    assert "\n-/\n\\ No newline at end of file\n+/\n" in done.stdout, done.stdout
