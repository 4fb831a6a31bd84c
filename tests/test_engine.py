"""pell.engine: the project in memory, recomputing only what an edit can change.

`recomputed` says which modules' compile ran in the last update; every test also checks the
engine against a fresh one of the same texts (an update must give what a cold start gives)."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pell.engine import Engine

# ledger (retried) -> payments -> accounts: retry facts flow through two calls.
ACCOUNTS = """module bank::accounts;

pub record Account { id: number, balance: number }
pub error NotFound { id: number }

pub fn deposit(id: number, amount: number) {
    sql! { update bank_accounts set balance = balance + :amount where id = :id };
}
"""

PAYMENTS = """module bank::payments;

import bank::accounts;

pub fn pay(id: number, amount: number) {
    accounts::deposit(id, amount);
}
"""

LEDGER = """module bank::ledger;

import bank::payments;

@retry(n = 3, on = [NotFound])
pub fn book(id: number, amount: number) {
    payments::pay(id, amount);
}

pub error NotFound { id: number }
"""

OTHER = """module bank::other;

pub fn noop(id: number) -> number {
    return id;
}
"""


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pell.toml").write_text("", "utf-8")
    src = tmp_path / "bank"
    src.mkdir()
    for name, text in (
        ("accounts", ACCOUNTS),
        ("payments", PAYMENTS),
        ("ledger", LEDGER),
        ("other", OTHER),
    ):
        (src / f"{name}.pell").write_text(text, "utf-8")
    return src


def _names(paths: list[Path]) -> list[str]:
    return [path.stem for path in paths]


def _rendered(engine: Engine) -> dict[str, list[str]]:
    """Every module's diagnostics as text, by file name: what must not depend on history."""
    return {
        path.stem: [f"{d.span.start}:{d.code}:{d.message}" for d in found]
        for path, found in engine.all_diagnostics().items()
    }


def _same_as_fresh(engine: Engine, root: Path) -> None:
    """The engine says what a new engine of the same texts says (overlays written to disk
    first by the caller), error codes included."""
    fresh = Engine(root)
    assert _rendered(engine) == _rendered(fresh)
    runtime, fresh_runtime = engine.runtime(), fresh.runtime()
    assert runtime is not None and fresh_runtime is not None
    assert runtime.errors == fresh_runtime.errors


def test_every_module_is_compiled_once_and_kept(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    assert _names(engine.paths()) == ["accounts", "ledger", "other", "payments"]
    assert all(d == [] for d in engine.all_diagnostics().values())
    assert sorted(_names(engine.recomputed)) == ["accounts", "ledger", "other", "payments"]
    engine.all_diagnostics()
    assert sorted(_names(engine.recomputed)) == ["accounts", "ledger", "other", "payments"]
    assert engine.set_overlay(src / "other.pell", OTHER) == [src / "other.pell"]
    assert engine.recomputed == []  # the same text: nothing to do


def test_a_comment_edit_recompiles_only_that_module(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    before = _rendered(engine)
    edited = "// who may deposit: see the runbook\n\n" + ACCOUNTS.replace("    sql!", "  sql!")
    affected = engine.set_overlay(src / "accounts.pell", edited)
    assert _names(engine.recomputed) == ["accounts"]
    assert _names(affected) == ["accounts"]
    assert _rendered(engine) == before
    (src / "accounts.pell").write_text(edited, "utf-8")
    _same_as_fresh(engine, src)


def test_a_callee_signature_edit_rechecks_its_importers(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    engine.all_diagnostics()
    edited = ACCOUNTS.replace("amount: number)", "amount: number, why: text)")
    affected = engine.set_overlay(src / "accounts.pell", edited)
    # payments imports accounts; ledger imports payments (whose declarations read accounts)
    assert sorted(_names(engine.recomputed)) == ["accounts", "ledger", "payments"]
    assert _names(affected) == ["accounts", "payments"]
    assert [d.code for d in engine.diagnostics(src / "payments.pell")] == ["arity"]
    (src / "accounts.pell").write_text(edited, "utf-8")
    _same_as_fresh(engine, src)


def test_on_postgres_a_callee_body_that_starts_committing_recompiles_its_importer(
    tmp_path: Path,
) -> None:
    """On PostgreSQL a fn that commits is a PROCEDURE, which its caller CALLs: a body edit that
    adds a `transaction { }` changes the importer's SQL (review 15: it kept PERFORM)."""
    (tmp_path / "pell.toml").write_text('target = "postgres"\n', "utf-8")
    (tmp_path / "a.pell").write_text(
        "module a;\n\npub fn work(id: number) {\n"
        "    sql! { update t set n = n + 1 where id = :id };\n}\n",
        "utf-8",
    )
    (tmp_path / "b.pell").write_text(
        "module b;\n\nimport a;\n\npub fn run(id: number) {\n    a::work(id);\n}\n", "utf-8"
    )
    engine = Engine(tmp_path)
    assert "CALL a.work" not in (engine.compiled(tmp_path / "b.pell").sql or "")
    committing = (tmp_path / "a.pell").read_text("utf-8").replace(
        "    sql! { update t set n = n + 1 where id = :id };\n",
        "    transaction {\n        sql! { update t set n = n + 1 where id = :id };\n    }\n",
    )
    engine.set_overlay(tmp_path / "a.pell", committing)
    assert "b" in _names(engine.recomputed)
    assert "CALL a.work(p_id)" in (engine.compiled(tmp_path / "b.pell").sql or "")
    (tmp_path / "a.pell").write_text(committing, "utf-8")
    fresh = Engine(tmp_path)
    assert engine.compiled(tmp_path / "b.pell").sql == fresh.compiled(tmp_path / "b.pell").sql


def test_a_settings_edit_changes_the_target(tmp_path: Path) -> None:
    """`build --watch` gives the engine no target of its own: the project's `target` follows
    pell.toml (review 15)."""
    src = _project(tmp_path)
    engine = Engine(src)
    assert engine.target == "23ai"
    (tmp_path / "pell.toml").write_text('target = "19c"\n', "utf-8")
    engine.files_changed([tmp_path / "pell.toml"])
    assert engine.target == "19c"
    assert "Target: Oracle 19c" in (engine.compiled(src / "other.pell").sql or "")


def test_a_commit_in_a_callee_reaches_its_callers_retry_facts(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    engine.all_diagnostics()
    committing = ACCOUNTS.replace(
        "where id = :id };\n", "where id = :id };\n    sql! { commit };\n"
    )
    affected = engine.set_overlay(src / "accounts.pell", committing)
    # a body edit: no importer reads it, but ledger's retried fn reaches the commit through
    # payments: its finding is project-wide
    assert _names(engine.recomputed) == ["accounts"]
    assert _names(affected) == ["accounts", "ledger"]
    found = engine.diagnostics(src / "ledger.pell")
    assert [d.code for d in found] == ["commit-in-retry"]
    assert "`bank.payments::pay` commits (COMMIT, in `bank.accounts::deposit`)" in found[0].message
    assert engine.compiled(src / "ledger.pell").sql is None  # an error: nothing to write
    # and back: the finding goes
    affected = engine.set_overlay(src / "accounts.pell", None)
    assert "ledger" in _names(affected)
    assert engine.diagnostics(src / "ledger.pell") == []
    assert engine.compiled(src / "ledger.pell").sql is not None


def test_modules_never_shown_are_affected_when_their_diagnostics_change(tmp_path: Path) -> None:
    """An editor shows one document: the engine has computed its importers and callers (the
    project's findings need them) but returned nobody their diagnostics. An edit that changes
    theirs names them, so a language server publishes them too."""
    src = _project(tmp_path)
    engine = Engine(src)
    assert engine.diagnostics(src / "accounts.pell") == []  # the only document shown
    edited = ACCOUNTS.replace("amount: number)", "amount: number, why: text)")
    assert "payments" in _names(engine.set_overlay(src / "accounts.pell", edited))
    engine.set_overlay(src / "accounts.pell", None)
    engine = Engine(src)
    assert engine.diagnostics(src / "accounts.pell") == []
    committing = ACCOUNTS.replace(
        "where id = :id };\n", "where id = :id };\n    sql! { commit };\n"
    )
    # ledger is not compiled again, but its retried fn now reaches a commit
    assert "ledger" in _names(engine.set_overlay(src / "accounts.pell", committing))


def test_a_module_never_shown_is_affected_when_its_error_code_problems_change(
    tmp_path: Path,
) -> None:
    """An error-code problem (two exceptions of one name) is shown at the later module's
    declaration, whose compile does not change: it is affected all the same."""
    (tmp_path / "pell.toml").write_text("", "utf-8")
    edited, clashing = tmp_path / "a.pell", tmp_path / "b.pell"
    edited.write_text("module bank;\n\npub fn f() -> number {\n    return 1;\n}\n", "utf-8")
    clashing.write_text("module bank_x;\n\npub error Y { id: number }\n", "utf-8")
    engine = Engine(tmp_path)
    assert engine.diagnostics(edited) == []  # the only document shown
    affected = engine.set_overlay(edited, "module bank;\n\npub error X_y { id: number }\n")
    assert affected == [edited, clashing]
    assert [d.code for d in engine.diagnostics(clashing)] == ["duplicate-name"]  # bank_x_y
    assert engine.set_overlay(edited, None) == [edited, clashing]  # and back
    assert engine.diagnostics(clashing) == []


def test_an_overlay_is_read_instead_of_the_disk_until_dropped(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    engine.all_diagnostics()
    broken = OTHER.replace("return id;", "return nosuch;")
    assert _names(engine.set_overlay(src / "other.pell", broken)) == ["other"]
    assert [d.code for d in engine.diagnostics(src / "other.pell")] == ["unknown-name"]
    assert (src / "other.pell").read_text("utf-8") == OTHER  # the disk is not written
    # a save of other text under the open buffer: the buffer still wins
    (src / "other.pell").write_text(OTHER.replace("id;", "id + 1;"), "utf-8")
    engine.files_changed([src / "other.pell"])
    assert [d.code for d in engine.diagnostics(src / "other.pell")] == ["unknown-name"]
    assert engine.recomputed == []
    # the buffer closed: the disk's text
    assert _names(engine.set_overlay(src / "other.pell", None)) == ["other"]
    assert engine.diagnostics(src / "other.pell") == []
    assert "id + 1" in (engine.compiled(src / "other.pell").sql or "")
    _same_as_fresh(engine, src)


def test_a_deleted_module_fails_its_importers(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    engine.all_diagnostics()
    (src / "accounts.pell").unlink()
    affected = engine.files_changed([src / "accounts.pell"])
    assert _names(affected) == ["accounts", "payments"]
    assert "accounts" not in _names(engine.paths())
    assert "unknown-module" in [d.code for d in engine.diagnostics(src / "payments.pell")]
    assert engine.diagnostics(src / "accounts.pell") == []  # an editor's squiggles go
    with pytest.raises(KeyError):
        engine.compiled(src / "accounts.pell")
    _same_as_fresh(engine, src)


def test_a_new_module_is_found_and_its_importers_rechecked(tmp_path: Path) -> None:
    src = _project(tmp_path)
    (src / "accounts.pell").rename(tmp_path / "accounts.pell.saved")
    engine = Engine(src)
    assert "unknown-module" in [d.code for d in engine.diagnostics(src / "payments.pell")]
    engine.all_diagnostics()
    (src / "sub").mkdir()
    (src / "sub" / "accounts.pell").write_text(ACCOUNTS, "utf-8")
    affected = engine.files_changed([src / "sub" / "accounts.pell"])
    assert sorted(_names(affected)) == ["accounts", "payments"]
    assert engine.diagnostics(src / "payments.pell") == []
    assert engine.module_path_of(("bank", "accounts")) == src / "sub" / "accounts.pell"
    _same_as_fresh(engine, src)


def test_a_new_buffer_is_a_module_until_closed(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    engine.all_diagnostics()
    new = src / "audit.pell"
    text = "module bank::audit;\n\nimport bank::accounts;\n\npub fn f() {\n    accounts::deposit(1, 2);\n}\n"
    assert _names(engine.set_overlay(new, text)) == ["audit"]
    assert new in engine.paths() and engine.diagnostics(new) == []
    assert engine.importers(src / "accounts.pell") == [new, src / "payments.pell"]
    assert _names(engine.set_overlay(new, None)) == ["audit"]
    assert new not in engine.paths()


def test_error_codes_stay_stable_across_edits(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    engine.all_diagnostics()
    runtime = engine.runtime()
    assert runtime is not None
    codes = {(e.module, e.name): e.code for e in runtime.errors}
    # an edit that declares nothing new keeps every code; so does a comment anywhere
    engine.set_overlay(src / "other.pell", "// nothing declared\n" + OTHER)
    engine.set_overlay(src / "accounts.pell", ACCOUNTS + "\n// end\n")
    again = engine.runtime()
    assert again is not None
    assert {(e.module, e.name): e.code for e in again.errors} == codes
    # a diagnostic's code is the same whatever the history: an edit and back
    engine.set_overlay(src / "ledger.pell", LEDGER.replace("on = [NotFound]", "on = [Nope]"))
    changed = [d.code for d in engine.diagnostics(src / "ledger.pell")]
    engine.set_overlay(src / "ledger.pell", None)
    engine.set_overlay(src / "ledger.pell", LEDGER.replace("on = [NotFound]", "on = [Nope]"))
    assert [d.code for d in engine.diagnostics(src / "ledger.pell")] == changed != []


def test_queries_for_an_editor(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    assert engine.importers(src / "accounts.pell") == [src / "payments.pell"]
    assert engine.importers(src / "ledger.pell") == []
    assert engine.module_path_of(("bank", "payments")) == src / "payments.pell"
    assert engine.module_path_of(("Bank", "Payments")) == src / "payments.pell"
    assert engine.module_path_of(("bank", "nowhere")) is None
    stub = engine.module_path_of(("dbms_output",))
    assert stub is not None and stub.name == "dbms_output.pell"
    stub_module = engine.module(stub)
    assert stub_module is not None and stub_module.is_stub
    module = engine.module(src / "ledger.pell")
    assert module is not None and module.path == ("bank", "ledger")
    checked = engine.checked(src / "ledger.pell")
    assert checked is not None and "book" in checked.fns
    # another spelling of the same file is the same module
    relative = Path(os.path.relpath(src / "ledger.pell"))
    assert engine.diagnostics(relative) == engine.diagnostics(src / "ledger.pell")


def test_a_single_file_is_its_own_project(tmp_path: Path) -> None:
    path = tmp_path / "one.pell"
    path.write_text(OTHER, "utf-8")
    engine = Engine(path, target="postgres")
    assert engine.paths() == [path]
    assert engine.target == "postgres"
    assert "CREATE" in (engine.compiled(path).sql or "").upper()


def test_a_file_that_is_not_utf8_has_an_encoding_diagnostic(tmp_path: Path) -> None:
    src = _project(tmp_path)
    (src / "bad.pell").write_bytes(b"module bank::bad;\n// \xff\n")
    engine = Engine(src)
    assert [d.code for d in engine.diagnostics(src / "bad.pell")] == ["encoding"]
    (src / "bad.pell").write_text("module bank::bad;\n", "utf-8")
    assert _names(engine.files_changed([src / "bad.pell"])) == ["bad"]
    assert engine.diagnostics(src / "bad.pell") == []


def test_a_settings_change_reads_everything_again(tmp_path: Path) -> None:
    src = _project(tmp_path)
    engine = Engine(src)
    ledger = src / "ledger.pell"
    (tmp_path / "pell.toml").write_text('target = "postgres"\n', "utf-8")
    affected = engine.files_changed([tmp_path / "pell.toml"])
    assert len(affected) == 4 and engine.target == "postgres"
    assert "LANGUAGE plpgsql" in (engine.compiled(ledger).sql or "")


def test_build_watch_rebuilds_on_save(tmp_path: Path) -> None:
    """A real `pellc build --watch`: one line per rebuild, the output written, Ctrl-C exits 0.
    Run from above the project, given it relative: each source is named as its diagnostics
    name it (review 16, finding 8: they were named from the project's root)."""
    pytest.importorskip("watchfiles")
    src = _project(tmp_path)
    given = Path(tmp_path.name) / "bank"  # from tmp_path.parent
    out = tmp_path / "out"
    pellc = Path(sys.executable).parent / "pellc"
    process = subprocess.Popen(
        [str(pellc), "build", "--watch", str(given), "-d", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path.parent,
    )
    lines = _Lines(process)
    try:
        assert lines.next(60).startswith("built 4, unchanged 0, failed 0")
        assert lines.next(10).startswith("watching ")
        edited = OTHER.replace("return id;", "return id + 41;")
        rebuilt = ""
        for _ in range(20):  # the watcher may start a moment after its line: save again
            (src / "other.pell").write_text(edited, "utf-8")
            rebuilt = lines.next(1.5)
            if rebuilt:
                break
        # sources as given, outputs from the output directory
        other = given / "other.pell"
        changed = f"{other} changed: recompiled 1 ({other}), wrote 1 (other.sql), "
        assert rebuilt.startswith(changed), rebuilt
        assert rebuilt.endswith(" ms\n")
        assert "id + 41" in (out / "other.sql").read_text("utf-8")
        # an error: the usual diagnostic, then the line; the output goes, as a build removes it
        (src / "other.pell").write_text(OTHER.replace("return id;", "return nosuch;"), "utf-8")
        error = lines.next(20)
        assert error.startswith(f"{other}:4:12: error: ")
        line = lines.next(20)
        assert line.startswith(f"{other} changed: recompiled 1 ({other}), wrote 0, ")
        assert "failed 1" in line, line
        assert not (out / "other.sql").exists()
        # broken settings are said, and the watch goes on; mended, everything is read again
        (tmp_path / "pell.toml").write_text("target = 12\n", "utf-8")
        assert lines.next(20).startswith("pellc: error: ")
        (tmp_path / "pell.toml").write_text("", "utf-8")
        assert lines.next(20).startswith(f"{other}:4:12: error: ")  # still
        settings = Path(tmp_path.name) / "pell.toml"
        assert lines.next(20).startswith(f"{settings} changed: recompiled 4 (")
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
    assert code == 0
    assert lines.next(5) == ""  # no traceback: stderr ends


def test_build_watch_under_format_json_writes_only_json_lines(tmp_path: Path) -> None:
    """`build --watch --format json`: the first build's summary, the note, then one rebuild line
    a save (docs/json.md), nothing but JSON; `changed` names a source as `recompiled` and the
    diagnostics do, as given (review 16, finding 8: it was absolute)."""
    pytest.importorskip("watchfiles")
    src = _project(tmp_path)
    out = tmp_path / "out"
    pellc = Path(sys.executable).parent / "pellc"
    process = subprocess.Popen(
        [str(pellc), "build", "--watch", "--format", "json", "bank", "-d", str(out)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    lines = _Lines(process)
    try:
        summary = json.loads(lines.next(60))
        assert (summary["kind"], summary["built"], summary["failed"]) == ("summary", 4, 0)
        assert json.loads(lines.next(10))["kind"] == "note"
        edited = OTHER.replace("return id;", "return id + 41;")
        rebuilt = ""
        for _ in range(20):  # the watcher may start a moment after its line: save again
            (src / "other.pell").write_text(edited, "utf-8")
            rebuilt = lines.next(1.5)
            if rebuilt:
                break
        line = json.loads(rebuilt)
        assert line["schema"] == 1 and line["kind"] == "rebuild", line
        assert (line["changed"], line["recompiled"]) == (["bank/other.pell"],) * 2
        assert (line["written"], line["failed"], line["removed"]) == (["other.sql"], 0, 0)
        assert isinstance(line["ms"], int)
        (src / "other.pell").write_text(OTHER.replace("return id;", "return nosuch;"), "utf-8")
        error = json.loads(lines.next(20))
        line = json.loads(lines.next(20))
        assert error["kind"] == "diagnostic" and error["path"] == "bank/other.pell", error
        assert (line["changed"], line["recompiled"]) == (["bank/other.pell"],) * 2
        # the failed module's output goes: counted in `removed` (docs/json.md)
        assert (line["failed"], line["removed"]) == (1, 1)
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=30)
    assert code == 0
    assert lines.next(5) == ""


class _Lines:
    """The lines of a process's stderr, read by a thread, each waited for with a timeout."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: queue.Queue[str] = queue.Queue()
        stream = process.stderr
        assert stream is not None

        def read() -> None:
            for line in stream:
                self.lines.put(line)

        threading.Thread(target=read, daemon=True).start()

    def next(self, seconds: float) -> str:
        """The next line, or "" when none comes in time."""
        try:
            return self.lines.get(timeout=seconds)
        except queue.Empty:
            return ""


REPOSITORY = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "tree", ["examples", "tests/projects/bank", "tests/projects/bank_errors", "tests/projects/duplicate"]
)
def test_layout_edits_recompile_one_module_and_change_nothing_else(
    tree: str, tmp_path: Path
) -> None:
    """In real projects: a comment above a module and its SQL indented further (every offset
    moved, the SQL's first column too) compile that module again, no other; and the engine
    then says what a fresh one says, outputs included."""
    import shutil

    root = tmp_path / "tree"
    shutil.copytree(REPOSITORY / tree, root)
    engine = Engine(root)
    engine.all_diagnostics()
    for path in engine.paths():
        text = path.read_text("utf-8")
        edited = "// edited\n\n" + text.replace("\n    sql!", "\n      sql!")
        engine.set_overlay(path, edited)
        assert engine.recomputed == [path]
        path.write_text(edited, "utf-8")
        engine.files_changed([path])
        engine.set_overlay(path, None)
        fresh = Engine(root)
        assert _rendered(engine) == _rendered(fresh)
        for each in engine.paths():
            assert engine.compiled(each).sql == fresh.compiled(each).sql, each


def _generated_project(tmp_path: Path, modules: int) -> Path:
    """bench/engine_project.py's project: app::mI imports app::m(I // 2) and calls it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "engine_project", REPOSITORY / "bench" / "engine_project.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    generator.write_project(tmp_path, modules)
    return tmp_path / "app"


def test_edits_in_a_tree_of_imports(tmp_path: Path) -> None:
    """m1 is imported by m2 and m3, they by m4..m7 and so on: a body edit compiles m1 only,
    a record edit every module below it (each reads m1's declarations through its parent's);
    every time the engine says what a fresh one says."""
    app = _generated_project(tmp_path, 16)
    engine = Engine(tmp_path)
    engine.all_diagnostics()
    m1 = app / "m1.pell"
    text = m1.read_text("utf-8")
    for edited, recompiled in (
        (text.replace("amount + 1", "amount + 7"), ["m1"]),
        (text.replace("amount: number }", "amount: number, note: text }"), None),
        ("// the first\n" + text, None),
    ):
        engine.set_overlay(m1, edited)
        below = [f"m{i}" for i in range(1, 16)]  # every module but m0 descends from m1
        assert sorted(_names(engine.recomputed)) == sorted(recompiled or below)
        m1.write_text(edited, "utf-8")
        _same_as_fresh(engine, app)


def test_a_build_through_the_engine_is_the_build(tmp_path: Path) -> None:
    """build_tree given the engine (what --watch runs) writes and says what a build does, the
    checks across modules included, after an edit too."""
    from pell.build import build_tree

    src = _project(tmp_path)
    committing = ACCOUNTS.replace("where id = :id };\n", "where id = :id };\n    sql! { commit };\n")
    engine = Engine(src)
    for step in ("first", "edited"):
        plain = build_tree([src], tmp_path / f"plain-{step}")
        held = build_tree([src], tmp_path / f"engine-{step}", engine=engine)
        # (the first build writes the project's code file; the second finds it written)
        assert held.summary() == plain.summary().replace(", pell-error-codes.json updated", "")
        assert held.rendered_diagnostics() == plain.rendered_diagnostics()
        written = sorted(p.name for p in (tmp_path / f"plain-{step}").rglob("*.sql"))
        assert sorted(p.name for p in (tmp_path / f"engine-{step}").rglob("*.sql")) == written
        for name in written:
            assert (tmp_path / f"engine-{step}" / name).read_text("utf-8") == (
                tmp_path / f"plain-{step}" / name
            ).read_text("utf-8")
        (src / "accounts.pell").write_text(committing, "utf-8")
        engine.files_changed([src / "accounts.pell"])
    assert "commit-in-retry" in held.rendered_diagnostics()


def test_a_build_through_the_engine_rewrites_only_changed_outputs(tmp_path: Path) -> None:
    """A callee's body edit: its importers' SQL is the same, so watch keeps their files (a
    build without the engine writes them again: it knows only that their imports changed)."""
    from pell.build import build_tree

    src = _project(tmp_path)
    out = tmp_path / "out"
    engine = Engine(src)
    assert build_tree([src], out, engine=engine).summary().startswith("built 4, unchanged 0")
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("*.sql")}
    doubled = ACCOUNTS.replace("balance + :amount", "balance + 2 * :amount")
    (src / "accounts.pell").write_text(doubled, "utf-8")
    engine.files_changed([src / "accounts.pell"])
    result = build_tree([src], out, engine=engine)
    assert result.summary() == "built 1, unchanged 3, failed 0, runtime unchanged"
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("*.sql")}
    assert [name for name in before if before[name] != after[name]] == ["accounts.sql"]
    assert "balance = balance + 2 * p_amount" in (out / "accounts.sql").read_text("utf-8")


def test_a_directory_build_and_runtime_take_their_project_from_an_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`build -d` and `runtime` make the project through Engine.of_inputs (one place for the
    project flow), from the listing the command made: the tree is walked once."""
    import pell.build
    from pell.cli import main

    src = _project(tmp_path)
    made: list[list[Path]] = []
    of_inputs = Engine.of_inputs.__func__  # type: ignore[attr-defined]

    def spied(cls: type[Engine], /, inputs: list[Path], **options: object) -> Engine:
        made.append(list(inputs))
        engine: Engine = of_inputs(cls, inputs, **options)
        return engine

    walks: list[list[Path]] = []
    find_sources = pell.build.find_sources

    def walked(inputs: list[Path], *more: object) -> object:
        walks.append(list(inputs))
        return find_sources(inputs, *more)  # type: ignore[arg-type]

    monkeypatch.setattr(Engine, "of_inputs", classmethod(spied))
    monkeypatch.setattr(pell.build, "find_sources", walked)
    assert main(["build", str(src), "-d", str(tmp_path / "out"), "-j", "1"]) == 0
    assert made == [[src]]
    # the build's walk of its inputs, and the walk of the project root the engine adds
    assert walks == [[src], [tmp_path]]
    made.clear()
    assert main(["runtime", str(src), "-o", str(tmp_path / "runtime.sql")]) == 0
    assert made == [[src]]
    assert "bank_ledger" in (tmp_path / "runtime.sql").read_text("utf-8").lower()


def test_an_unchanged_directory_build_compiles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-shot build through the engine keeps the manifest's facts of unchanged modules:
    neither the build nor the engine compiles them again for the findings across modules."""
    import pell.build
    import pell.engine
    from pell.build import build_tree

    src = _project(tmp_path)
    out = tmp_path / "out"
    first = build_tree([src], out)
    assert first.summary().startswith("built 4, unchanged 0, failed 0")

    def refused(*_: object, **__: object) -> object:
        raise AssertionError("an unchanged module was compiled again")

    for module in (pell.build, pell.engine):
        monkeypatch.setattr(module, "compile_source", refused)
    monkeypatch.setattr(Engine, "project_findings", refused)
    assert build_tree([src], out, jobs=2).summary() == (
        "built 0, unchanged 4, failed 0, runtime unchanged"
    )


def test_the_engine_gives_a_build_each_text_as_read(tmp_path: Path) -> None:
    """Engine.source: a file's text, its `encoding` diagnostic, or why it cannot be read;
    an editor's buffer over the disk."""
    from pell.build import FileError

    src = _project(tmp_path)
    (src / "latin1.pell").write_bytes(b"module bank::latin1;\n// caf\xe9\n")
    (src / "gone.pell").symlink_to(src / "nowhere.pell")
    engine = Engine(src)
    assert engine.source(src / "other.pell") == (OTHER, None)
    text, failure = engine.source(src / "latin1.pell")
    assert text is None and failure is not None
    assert [d.code for d in failure.diagnostics] == ["encoding"]
    with pytest.raises(FileError, match=r"cannot read .*gone\.pell"):
        engine.source(src / "gone.pell")
    engine.set_overlay(src / "other.pell", "module bank::other;\n")
    assert engine.source(src / "other.pell") == ("module bank::other;\n", None)
    (src / "later.pell").write_text("module bank::later;\n", "utf-8")  # listed after it started
    assert engine.source(src / "later.pell") == ("module bank::later;\n", None)


def test_a_missing_input_leaves_the_project_incomplete(tmp_path: Path) -> None:
    """An input file named but not there cannot be read: the project is incomplete (as
    pell.build.project_of made it before it asked an engine), not complete without it."""
    src = _project(tmp_path)
    engine = Engine.of_inputs([src / "missing.pell", src / "other.pell"])
    assert not engine.project.complete
    assert Engine.of_inputs([src / "other.pell"]).project.complete
