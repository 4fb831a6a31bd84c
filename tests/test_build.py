"""Directory builds: mirrored paths, incremental, atomic, --check, source maps."""

from __future__ import annotations

import json
import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pell
import pell.build
import pell.resources
import pell.runtime
from pell import compile_path
from pell.build import build_tree
from pell.cli import ISSUES_URL, main
from pell.project import Project

GOOD = "module {name};\npub fn f(x: number) -> number {{\n    return x + 1;\n}}\n"
WITH_ERROR = "module {name};\npub error Nope {{ id: number }}\npub fn f() {{ }}\n"


def _tree(root: Path) -> Path:
    src = root / "db"
    (src / "billing").mkdir(parents=True)
    (src / "a.pell").write_text(GOOD.format(name="alpha"), "utf-8")
    (src / "billing" / "b.pell").write_text(WITH_ERROR.format(name="billing.beta"), "utf-8")
    (src / "c.pell").write_text(GOOD.format(name="gamma"), "utf-8")
    return src


def _outputs(out: Path) -> dict[str, int]:
    return {
        p.relative_to(out).as_posix(): p.stat().st_mtime_ns
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def test_build_mirrors_paths_and_writes_the_runtime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert sorted(_outputs(out)) == [
        ".pellc-manifest.json", "a.sql", "billing/b.sql", "c.sql", "pell_runtime.sql",
    ]  # fmt: skip
    assert capsys.readouterr().err == "built 3, unchanged 0, failed 0, runtime built\n"
    assert (out / "a.sql").read_text("utf-8") == compile_path(src / "a.pell").sql
    assert "c_billing_beta_nope CONSTANT" in (out / "pell_runtime.sql").read_text("utf-8")
    assert oct((out / "a.sql").stat().st_mode & 0o777) != oct(0o600)


def test_second_build_rewrites_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    before = _outputs(out)
    capsys.readouterr()
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 0, unchanged 3, failed 0, runtime unchanged\n"
    after = _outputs(out)
    del before[".pellc-manifest.json"], after[".pellc-manifest.json"]
    assert after == before


def test_a_changed_compiler_with_the_same_version_compiles_everything_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the manifest records pellc's own code, not only its version number: a checkout whose
    # compiler changed must not keep outputs the old code wrote
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    recorded = json.loads((out / ".pellc-manifest.json").read_text("utf-8"))["version"]
    assert recorded == pell.resources.compiler_fingerprint() != pell.__version__
    monkeypatch.setattr(pell.build, "compiler_fingerprint", lambda: recorded + "-edited")
    capsys.readouterr()
    assert main(["build", str(src), "-d", str(out)]) == 0
    # every module compiled again; the runtime made again, and its text is the same
    assert capsys.readouterr().err == "built 3, unchanged 0, failed 0, runtime unchanged\n"


def test_a_changed_module_is_rebuilt_alone_and_errors_rebuild_the_runtime(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    main(["build", str(src), "-d", str(out)])
    before = _outputs(out)
    (src / "c.pell").write_text(GOOD.format(name="gamma") + "\n// changed\n", "utf-8")
    capsys.readouterr()
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 1, unchanged 2, failed 0, runtime unchanged\n"
    after = _outputs(out)
    assert after["a.sql"] == before["a.sql"] and after["c.sql"] != before["c.sql"]

    (src / "billing" / "b.pell").write_text(
        WITH_ERROR.format(name="billing.beta").replace("Nope", "Gone"), "utf-8"
    )
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 1, unchanged 2, failed 0, runtime built\n"
    assert "c_billing_beta_gone" in (out / "pell_runtime.sql").read_text("utf-8")


def test_a_module_with_errors_loses_its_output_and_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed module's last `.sql` no longer matches its source: the build removes it, as
    make's .DELETE_ON_ERROR does, so that a step shipping the output directory cannot ship it;
    its manifest entry goes too, and the next build compiles it again."""
    src, out = _tree(tmp_path), tmp_path / "out"
    main(["build", str(src), "-d", str(out)])
    (src / "a.pell").write_text('module alpha;\npub fn f() -> number { return "x"; }\n', "utf-8")
    (src / "c.pell").write_text(GOOD.format(name="gamma") + "// new\n", "utf-8")
    capsys.readouterr()
    assert main(["build", str(src), "-d", str(out)]) == 1
    err = capsys.readouterr().err
    assert "a.pell:2:31: error: fn `f` returns `number`, not `text`  [return-type]" in err
    assert err.endswith("built 1, unchanged 1, failed 1, removed 1, runtime unchanged\n")
    assert sorted(_outputs(out)) == [
        ".pellc-manifest.json", "billing/b.sql", "c.sql", "pell_runtime.sql",
    ]  # fmt: skip
    manifest = json.loads((out / ".pellc-manifest.json").read_text("utf-8"))
    assert sorted(manifest["modules"]) == ["billing/b.sql", "c.sql"]
    # still failing: nothing more to remove
    assert main(["build", str(src), "-d", str(out)]) == 1
    assert capsys.readouterr().err.endswith("built 0, unchanged 2, failed 1, runtime unchanged\n")
    (src / "a.pell").write_text(GOOD.format(name="alpha"), "utf-8")
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 1, unchanged 2, failed 0, runtime unchanged\n"
    assert (out / "a.sql").read_text("utf-8") == compile_path(src / "a.pell").sql


# A project's stub of a package that alpha (below) calls; marked @commits by one failure.
JOBS_STUB = "@stub\nmodule acme_jobs;\n\npub fn purge(days: number);\n"
# How a module that built before fails now: each leaves no `.sql` and no source map.
FAILURES: dict[str, Callable[[Path], object]] = {
    "type error": lambda src: (src / "a.pell").write_text(
        'module alpha;\npub fn f() -> number { return "x"; }\n', "utf-8"
    ),
    "syntax error": lambda src: (src / "a.pell").write_text("module alpha;\npub fn f( {\n"),
    "not UTF-8": lambda src: (src / "a.pell").write_bytes(b"module alpha;\n// \xff\n"),
    "duplicate module": lambda src: (src / "z.pell").write_text(GOOD.format(name="alpha")),
    "unreadable": lambda src: ((src / "a.pell").unlink(), (src / "a.pell").symlink_to("nowhere")),
    # an unchanged module whose callee now commits: refused by the checks across modules
    "refused across modules": lambda src: (src / "c.pell").write_text(
        "module gamma;\npub fn f(x: number) -> number {\n    sql! { commit };\n"
        "    return x;\n}\n",
        "utf-8",
    ),
    # the same, its text and imports unchanged (its recorded facts are reused): the project's
    # stub of a package it calls is marked as committing
    "refused, unchanged": lambda src: (src / "jobs.pell").write_text(
        JOBS_STUB.replace("pub fn purge", '@commits("each batch")\npub fn purge'), "utf-8"
    ),
}


@pytest.mark.parametrize("failure", FAILURES)
def test_a_module_that_fails_leaves_no_output_behind(
    failure: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    # alpha: retried, calls gamma and a stubbed package (fine until either commits)
    (src / "a.pell").write_text(
        "module alpha;\nimport gamma;\n@retry(n=3, on=[busy])\n"
        "pub fn f(x: number) -> number {\n    acme_jobs::purge(30);\n    return gamma::f(x);\n}\n",
        "utf-8",
    )
    (src / "jobs.pell").write_text(JOBS_STUB, "utf-8")
    assert main(["build", "--map", str(src), "-d", str(out)]) == 0, capsys.readouterr().err
    assert (out / "a.sql").is_file() and (out / "a.sql.map.json").is_file()
    FAILURES[failure](src)
    before = _outputs(out)
    capsys.readouterr()
    code = 2 if failure == "unreadable" else 1  # a file error, or errors in the sources
    # --check reports the failure and writes or removes nothing
    assert main(["build", "--check", "--map", str(src), "-d", str(out)]) == code
    err = capsys.readouterr().err
    assert "a.pell:" in err and f"{out / 'a.sql'}" not in err
    assert _outputs(out) == before
    assert main(["build", "--map", str(src), "-d", str(out)]) == code
    err = capsys.readouterr().err
    assert "removed 2" in err.splitlines()[-1], err
    assert not (out / "a.sql").exists() and not (out / "a.sql.map.json").exists()
    manifest = json.loads((out / ".pellc-manifest.json").read_text("utf-8"))
    assert "a.sql" not in manifest["modules"]
    assert (out / "billing" / "b.sql").is_file()  # the others are kept


def test_a_failed_build_never_removes_a_file_pellc_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    out.mkdir()
    (out / "a.sql").write_text("-- written by hand\n", "utf-8")
    (out / "a.sql.map.json").write_text("{}\n", "utf-8")
    FAILURES["type error"](src)
    assert main(["build", "--map", str(src), "-d", str(out)]) == 1
    assert capsys.readouterr().err.endswith("built 2, unchanged 0, failed 1, runtime built\n")
    assert (out / "a.sql").read_text("utf-8") == "-- written by hand\n"
    assert (out / "a.sql.map.json").read_text("utf-8") == "{}\n"


def test_a_module_that_becomes_a_stub_loses_its_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stub declares a package Oracle already holds: an old `.sql` of that name, deployed,
    would replace it."""
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    (src / "a.pell").write_text("@stub\nmodule alpha;\n\npub fn f(x: number) -> number;\n")
    capsys.readouterr()
    assert main(["build", "--check", str(src), "-d", str(out)]) == 1
    assert f"{out / 'a.sql'}: stale" in capsys.readouterr().err.splitlines()
    assert (out / "a.sql").is_file()
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 0, unchanged 2, failed 0, removed 1, runtime unchanged\n"
    assert not (out / "a.sql").exists()
    assert main(["build", "--check", str(src), "-d", str(out)]) == 0


def test_check_lists_missing_and_stale_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    main(["build", str(src), "-d", str(out)])
    (out / "c.sql").unlink()
    (src / "a.pell").write_text(GOOD.format(name="alpha").replace("+ 1", "+ 2"), "utf-8")
    before = _outputs(out)
    capsys.readouterr()
    assert main(["build", "--check", str(src), "-d", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"{out / 'a.sql'}: stale",
        f"{out / 'c.sql'}: missing",
        "checked 3: fresh 1, stale or missing 2, failed 0",
        f"to bring them up to date, run: pellc build {src} -d {out}",
    ]
    assert _outputs(out) == before
    main(["build", str(src), "-d", str(out)])
    assert main(["build", "--check", str(src), "-d", str(out)]) == 0


def test_a_crash_midway_leaves_no_partial_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    real = pell.build.compile_source

    def crash_on_c(text: str, filename: str, target: str = "23ai") -> object:
        if filename == "c.pell":
            raise RuntimeError("simulated compiler crash")
        return real(text, filename, target)

    monkeypatch.setattr(pell.build, "compile_source", crash_on_c)
    assert main(["build", str(src), "-d", str(out)]) == 3
    assert "internal compiler error" in capsys.readouterr().err
    # Outputs are written after every module compiled (the cross-module retry checks come
    # first), so a crash while compiling writes nothing at all.
    assert not (out / "a.sql").exists()
    assert not (out / "c.sql").exists()
    assert not [p for p in out.rglob("*.tmp")], "a temporary file was left behind"


def test_an_interrupted_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "x.sql"
    target.write_text("old and complete\n", "utf-8")

    def interrupted(source: str, destination: str) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        pell.build.write_atomically(target, "new text\n" * 1000)
    assert target.read_text("utf-8") == "old and complete\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.sql"]


def test_source_map_points_sql_lines_at_pell_lines(tmp_path: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "orders.pell"
    out = tmp_path / "out"
    assert main(["build", "--map", str(example), "-d", str(out)]) == 0
    sql_lines = (out / "orders.sql").read_text("utf-8").splitlines()
    source_map = json.loads((out / "orders.sql.map.json").read_text("utf-8"))
    assert source_map["source"] == "orders.pell"
    pell_lines = example.read_text("utf-8").splitlines()

    def origin(fragment: str) -> str:
        number = next(i for i, line in enumerate(sql_lines, 1) if fragment in line)
        line, _column = source_map["lines"][str(number)]
        return pell_lines[line - 1].strip()

    assert origin("INTO l_o.id, l_o.status") == "let o: Order = sql! {"
    assert origin("IF l_o.status <> 'pending' THEN") == 'if o.status != "pending" {'
    assert origin("update orders set status = 'paid'") == (
        "sql! { update orders set status = 'paid' where id = :order_id };"
    )
    assert origin("FUNCTION promote_to_paid(p_order_id IN NUMBER) RETURN t_order IS").startswith(
        "pub fn promote_to_paid"
    )


def test_too_many_errors_for_the_runtime_fails_the_build_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "db"
    src.mkdir()
    errors = "".join(f"error E{i};\n" for i in range(101))
    (src / "many.pell").write_text(f"module many;\n{errors}", "utf-8")
    out = tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 1
    err = capsys.readouterr().err
    # at the 101st declaration (line 1 is the module line)
    assert (
        f"{src / 'many.pell'}:102:1: error: the project declares 101 propagate errors; "
        "their code range (-20100 .. -20199) holds 100  [too-many-errors]"
    ) in err
    assert err.endswith("runtime failed\n")
    assert not (out / "pell_runtime.sql").exists()


def _bank(tmp_path: Path, ledger_body: str) -> Path:
    src = tmp_path / "db"
    src.mkdir(exist_ok=True)
    (src / "ledger.pell").write_text(
        "module bank.ledger;\n\nimport bank::payments;\n\n"
        f"pub fn close_books(id: number) {{\n{ledger_body}}}\n",
        "utf-8",
    )
    (src / "payments.pell").write_text(
        "module bank.payments;\n\nimport bank::ledger;\n\n@retry(n=3, on=[busy])\n"
        "pub fn pay(id: number) {\n    sql! { update p set paid = 1 where id = :id };\n"
        "    ledger::close_books(id);\n}\n",
        "utf-8",
    )
    return src


def test_retry_safety_follows_calls_into_other_modules_of_the_build(tmp_path: Path) -> None:
    src, out = _bank(tmp_path, "    sql! { commit };\n"), tmp_path / "out"
    # Alone, payments cannot see into ledger, so it compiles; the build sees both.
    assert compile_path(src / "payments.pell").sql is not None
    result = build_tree([src], out)
    rendered = result.rendered_diagnostics()
    assert (
        f"{src / 'payments.pell'}:8:5: error: `bank.ledger::close_books` commits (COMMIT): it "
        "ends the transaction, and with it the retry's savepoint (ORA-01086)  [commit-in-retry]"
    ) in rendered
    assert {o.unit.path.name: o.status for o in result.outcomes} == {
        "ledger.pell": "built",
        "payments.pell": "failed",
    }
    assert not (out / "payments.sql").exists(), "a module that failed was written"
    # Next build, nothing changed: ledger's facts come from the manifest, and payments fails.
    again = build_tree([src], out)
    assert {o.unit.path.name: o.status for o in again.outcomes} == {
        "ledger.pell": "unchanged",
        "payments.pell": "failed",
    }
    assert "[commit-in-retry]" in again.rendered_diagnostics()
    # Fixing ledger (an unchanged payments.pell) builds payments.
    _bank(tmp_path, "    sql! { update books set closed = 1 where id = :id };\n")
    fixed = build_tree([src], out)
    assert not fixed.failed, fixed.rendered_diagnostics()
    assert (out / "payments.sql").exists()


def test_retry_recursion_across_modules_is_an_error(tmp_path: Path) -> None:
    src = _bank(tmp_path, "    payments::pay(id);\n")
    result = build_tree([src], tmp_path / "out")
    rendered = result.rendered_diagnostics()
    assert (
        "error: retried fn `pay` can call itself (`pay` -> `bank.ledger::close_books` -> `pay`)"
    ) in rendered
    assert result.failed


def test_retry_facts_in_an_older_layout_recompile_the_module(tmp_path: Path) -> None:
    """Facts written before fns recorded their `finally` (and calls the DML before them) are
    not read as today's: the module is compiled again, and its `finally` seen."""
    src, out = _bank(tmp_path, "    sql! { update l set n = 1 where id = :id };\n"), tmp_path / "out"
    ledger = (src / "ledger.pell").read_text("utf-8").rstrip("\n")
    (src / "ledger.pell").write_text(ledger + " finally {\n    sql! { commit };\n}\n", "utf-8")
    first = build_tree([src], out)
    assert {o.unit.path.name: o.status for o in first.outcomes} == {
        "ledger.pell": "built",
        "payments.pell": "failed",
    }
    manifest = json.loads((out / pell.build.MANIFEST).read_text("utf-8"))
    facts = manifest["modules"]["ledger.sql"]["retry_facts"]
    # the layout before: no finally span per fn, no `opened_by` per effect
    facts["fns"] = [
        [*fn[:6], [effect[:6] for effect in fn[6]], *fn[7:9]] for fn in facts["fns"]
    ]
    (out / pell.build.MANIFEST).write_text(json.dumps(manifest), "utf-8")
    again = build_tree([src], out)
    assert {o.unit.path.name: o.status for o in again.outcomes} == {
        "ledger.pell": "built",
        "payments.pell": "failed",
    }
    assert "`bank.ledger::close_books` commits (COMMIT)" in again.rendered_diagnostics()


def test_calls_into_other_modules_resolve_through_the_callers_imports(tmp_path: Path) -> None:
    """`util::f` is the `util` the caller imports: a three-part module name, and another
    module with the same last name that is not imported."""
    src = tmp_path / "db"
    src.mkdir()
    (src / "util.pell").write_text(
        "module corp.bank.util;\n\npub fn bump(id: number) {\n    sql! { commit };\n}\n", "utf-8"
    )
    (src / "other_util.pell").write_text(
        "module hr.util;\n\npub fn bump(id: number) {\n    sql! { update t set n = 1 };\n}\n",
        "utf-8",
    )
    (src / "ledger.pell").write_text(
        "module corp.bank.ledger;\n\nimport corp::bank::util;\n\n@retry(n=2, on=[busy])\n"
        "pub fn pay(id: number) {\n    util::bump(id);\n}\n",
        "utf-8",
    )
    result = build_tree([src], tmp_path / "out")
    assert "`corp.bank.util::bump` commits (COMMIT)" in result.rendered_diagnostics()
    # importing the other `util` (which does not commit) is safe
    ledger = (src / "ledger.pell").read_text("utf-8").replace("corp::bank::util", "hr::util")
    (src / "ledger.pell").write_text(ledger, "utf-8")
    again = build_tree([src], tmp_path / "out")
    assert not again.failed, again.rendered_diagnostics()


def test_damaged_retry_facts_in_the_manifest_recompile_the_module(tmp_path: Path) -> None:
    src, out = _bank(tmp_path, "    sql! { commit };\n"), tmp_path / "out"
    build_tree([src], out)
    manifest = json.loads((out / pell.build.MANIFEST).read_text("utf-8"))
    manifest["modules"]["ledger.sql"]["retry_facts"] = {}
    (out / pell.build.MANIFEST).write_text(json.dumps(manifest), "utf-8")
    result = build_tree([src], out)
    assert {o.unit.path.name: o.status for o in result.outcomes} == {
        "ledger.pell": "built",
        "payments.pell": "failed",
    }


def test_check_of_several_files_follows_calls_between_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _bank(tmp_path, "    sql! { commit };\n")
    assert main(["check", str(src / "payments.pell")]) == 0  # alone, it cannot see ledger
    capsys.readouterr()
    assert main(["check", str(src / "ledger.pell"), str(src / "payments.pell")]) == 1
    assert "[commit-in-retry]" in capsys.readouterr().err


def test_repeated_effects_are_warned_through_other_modules(tmp_path: Path) -> None:
    src = _bank(tmp_path, "    log_close(id);\n")
    ledger = (src / "ledger.pell").read_text("utf-8")
    ledger += (
        "\n@autonomous\nfn log_close(id: number) {\n"
        "    sql! { insert into close_log (id) values (:id) };\n}\n"
    )
    (src / "ledger.pell").write_text(ledger, "utf-8")
    result = build_tree([src], tmp_path / "out")
    assert not result.failed, result.rendered_diagnostics()
    assert (
        "warning: `bank.ledger::close_books` calls `bank.ledger::log_close`, which is @autonomous: "
        "it commits on its own, so every attempt repeats what it writes  [side-effect-in-retry]"
    ) in result.rendered_diagnostics()


def test_outputs_of_a_deleted_module_are_removed_and_check_reports_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", "--map", str(src), "-d", str(out)]) == 0
    (src / "billing" / "b.pell").unlink()
    (src / "c.pell").rename(src / "renamed.pell")
    capsys.readouterr()
    before = _outputs(out)
    # two .sql files would define the same package: --check says stale, and writes nothing
    assert main(["build", "--check", "--map", str(src), "-d", str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{out / 'renamed.sql'}: missing",
        f"{out / 'billing' / 'b.sql'}: stale",
        f"{out / 'billing' / 'b.sql.map.json'}: stale",
        f"{out / 'c.sql'}: stale",
        f"{out / 'c.sql.map.json'}: stale",
        f"{out / 'pell_runtime.sql'}: stale",  # no module left declares an error
        "checked 2: fresh 1, stale or missing 6, failed 0",
        f"to bring them up to date, run: pellc build {src} -d {out} --map",
    ]
    assert _outputs(out) == before
    assert main(["build", "--map", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 1, unchanged 1, failed 0, removed 5\n"
    assert sorted(_outputs(out)) == [
        ".pellc-manifest.json", "a.sql", "a.sql.map.json", "renamed.sql", "renamed.sql.map.json",
    ]  # fmt: skip
    assert not (out / "billing").exists(), "the directory the removed output left empty stays"
    assert main(["build", "--check", "--map", str(src), "-d", str(out)]) == 0


def test_a_module_moved_to_another_output_path_is_removed_from_the_old_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    # the same sources, now given from below: billing/b.pell maps to b.sql
    assert main(["build", str(src / "billing"), "-d", str(out)]) == 0
    assert "removed 1" in capsys.readouterr().err.splitlines()[-1]
    assert (out / "b.sql").is_file() and not (out / "billing" / "b.sql").exists()


def test_a_build_of_some_inputs_keeps_the_outputs_of_modules_it_did_not_build(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert main(["build", str(src / "a.pell"), "-d", str(out)]) == 0
    assert main(["build", "--check", str(src / "c.pell"), "-d", str(out)]) == 0
    assert "removed" not in capsys.readouterr().err
    assert (out / "billing" / "b.sql").is_file() and (out / "c.sql").is_file()
    # their manifest entries stay too: deleting c.pell later removes c.sql
    (src / "c.pell").unlink()
    assert main(["build", str(src / "a.pell"), "-d", str(out)]) == 0
    assert not (out / "c.sql").exists() and (out / "billing" / "b.sql").is_file()


def test_temporary_files_of_a_killed_write_are_removed_and_check_reports_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    # what write_atomically leaves when killed between mkstemp and rename
    left = [out / ".a.sql.k3_x9q2z.tmp", out / "billing" / ".b.sql.map.json.abcdefgh.tmp"]
    left.append(out / "..pellc-manifest.json.0a1b2c3d.tmp")
    kept = [out / ".notes.txt.abcdefgh.tmp", out / "mine.tmp"]  # not pellc's: left alone
    for path in left + kept:
        path.write_text("half a fi", "utf-8")
    capsys.readouterr()
    assert main(["build", "--check", str(src), "-d", str(out)]) == 1
    stale = [line for line in capsys.readouterr().err.splitlines() if line.endswith(": stale")]
    assert sorted(stale) == sorted(f"{path}: stale" for path in left)
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert (
        capsys.readouterr().err == "built 0, unchanged 3, failed 0, removed 3, runtime unchanged\n"
    )
    assert [path for path in left if path.exists()] == []
    assert all(path.exists() for path in kept)


def test_check_into_an_empty_or_missing_directory_counts_right(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "db"
    src.mkdir()
    (src / "e.pell").write_text(WITH_ERROR.format(name="e"), "utf-8")
    for out in (tmp_path / "missing", tmp_path / "empty"):
        (tmp_path / "empty").mkdir(exist_ok=True)
        assert main(["build", "--check", str(src), "-d", str(out)]) == 1
        assert capsys.readouterr().err.splitlines() == [
            f"{out / 'e.sql'}: missing",
            f"{out / 'pell_runtime.sql'}: missing",
            "checked 1: fresh 0, stale or missing 2, failed 0",  # never `fresh -1`
            f"to bring them up to date, run: pellc build {src} -d {out}",
        ]
    assert not (tmp_path / "missing").exists()


def test_inputs_without_a_pell_file_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty, out = tmp_path / "empty", tmp_path / "out"
    (empty / "notes").mkdir(parents=True)
    (empty / "notes" / "readme.txt").write_text("no modules here\n", "utf-8")
    for argv in (["build"], ["build", "--check"], ["deploy", "--dry-run"]):
        assert (
            main([*argv, str(empty), "-d", str(out)] if argv[0] == "build" else [*argv, str(empty)])
            == 2
        )
        assert capsys.readouterr().err == f"pellc: error: no .pell file found in {empty}\n"
    assert not out.exists()


def test_runtime_exceptions_of_two_modules_that_join_to_one_name_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "db"
    src.mkdir()
    (src / "one.pell").write_text("module a.b_c;\n\npub error D;\n", "utf-8")
    (src / "two.pell").write_text("module a.b;\n\npub error C_d;\n", "utf-8")
    message = (
        "error `D` of module `a.b_c` and error `C_d` of module `a.b` would both be "
        "`pell_runtime.a_b_c_d`"
    )
    assert main(["runtime", str(src), "-o", str(tmp_path / "rt.sql")]) == 1
    assert f"{src / 'one.pell'}:3:1: error: {message}  [duplicate-name]" in capsys.readouterr().err
    # twice: the second build knows both modules from its manifest, and still shows where
    for _ in range(2):
        result = build_tree([src], tmp_path / "out")
        assert result.runtime == "failed"
        shown = [(f.path.name, d.message, d.span.start) for f, d in result.runtime_diagnostics]
        assert shown == [("one.pell", message, len("module a.b_c;\n\n"))]


def _project(root: Path, modules: int = 30) -> Path:
    """A project of `modules` small modules with a code file: every fifth declares an error and
    returns it, every third imports the one before and calls it, every fourth has a retry
    that warns, every seventh is in a subdirectory; m13 does not parse (so m14, importing
    it, fails too) and m22 names an unknown name."""
    src = root / "db"
    (src / "sub").mkdir(parents=True)
    (root / "pell.toml").write_text("", "utf-8")
    for i in range(modules):
        parts = [f"module p.m{i};\n\n"]
        if i % 3 == 2:
            parts.append(f"import p::m{i - 1};\n\n")
        if i % 5 == 0:
            parts.append(
                f"pub error Gone{i} {{ id: number }}\n\n"
                f"pub fn find(id: number) -> Result<number, Gone{i}> {{\n"
                f"    if id > {i} {{\n        return Err(Gone{i} {{ id: id }});\n    }}\n"
                "    return Ok(id);\n}\n\n"
            )
        body = f"m{i - 1}::f(x)" if i % 3 == 2 else f"x + {i}"
        parts.append(f"pub fn f(x: number) -> number {{\n    return {body};\n}}\n")
        if i % 4 == 1:
            parts.append(
                "\n@retry(5, backoff_ms=100, cap_ms=2000, jitter=true)\n"
                "pub fn bump(id: number) {\n"
                f"    sql! {{ update t{i} set n = n + 1 where id = :id }};\n}}\n"
            )
        text = "".join(parts)
        if i == 13:
            text = text.replace("pub fn f(x: number)", "pub fn f(x: number")
        if i == 22:
            text = text.replace("return x", "return nosuch + x")
        (src / ("sub" if i % 7 == 6 else "") / f"m{i}.pell").write_text(text, "utf-8")
    return src


def _files(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}


def _workers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fail: Callable[[str, bool], None]
) -> Path:
    """Pools start for any amount of source; each compile is logged (`pid file`) to
    tmp_path/compiles, after `fail(file name, in a worker)` (which may raise)."""
    monkeypatch.setattr(pell.build, "PARALLEL_THRESHOLD", 0)
    real, parent, log = pell.build.compile_module, os.getpid(), tmp_path / "compiles"

    def logged(text: str, filename: str, *args: Any) -> pell.build.Compiled:
        with log.open("a", encoding="utf-8") as handle:  # a line is one write: not torn
            handle.write(f"{os.getpid()} {filename}\n")
        fail(filename, os.getpid() != parent)
        return real(text, filename, *args)

    monkeypatch.setattr(pell.build, "compile_module", logged)
    return log


def _in_workers(log: Path) -> set[str]:
    """The files compiled in a process other than this one."""
    lines = [line.split() for line in log.read_text("utf-8").splitlines()]
    return {name for pid, name in lines if int(pid) != os.getpid()}


def _serial_and_parallel(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], *options: str
) -> tuple[tuple[int, str], tuple[int, str]]:
    """A project built with -j 1 into out1, then (its code file removed) with -j 2 into out2:
    each build's exit code and standard error."""
    src = _project(tmp_path / "project")
    runs = []
    for jobs, out in (("1", "out1"), ("2", "out2")):
        (tmp_path / "project" / "pell-error-codes.json").unlink(missing_ok=True)
        capsys.readouterr()
        code = main(["build", str(src), "-d", str(tmp_path / out), "-j", jobs, *options])
        runs.append((code, capsys.readouterr().err))
    return runs[0], runs[1]


def test_a_parallel_build_writes_and_says_what_a_serial_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _workers(monkeypatch, tmp_path, lambda name, in_worker: None)
    serial, parallel = _serial_and_parallel(tmp_path, capsys, "--map")
    assert serial == parallel
    assert serial[0] == 1 and serial[1].endswith(
        "built 27, unchanged 0, failed 3, runtime built, pell-error-codes.json updated\n"
    )
    assert "m13.pell:3:20: error: unexpected `->`" in serial[1]
    assert "m22.pell:4:12: error: unknown name `nosuch`" in serial[1]
    assert "[retry-deadlock-scope]" in serial[1]
    out1, out2 = _files(tmp_path / "out1"), _files(tmp_path / "out2")
    assert out1 == out2
    assert {".pellc-manifest.json", "pell_runtime.sql", "sub/m6.sql", "m0.sql.map.json"} < set(out1)
    # the second build compiled all but the first module it compiled in worker processes
    assert len(_in_workers(log)) == 29
    # nothing changed: a second parallel build rewrites nothing, and says so
    before = _outputs(tmp_path / "out2")
    capsys.readouterr()
    args = ["build", str(tmp_path / "project" / "db"), "-d", str(tmp_path / "out2"), "--map"]
    assert main([*args, "-j", "2"]) == 1
    assert capsys.readouterr().err.endswith("built 0, unchanged 27, failed 3, runtime unchanged\n")
    after = _outputs(tmp_path / "out2")
    del before[".pellc-manifest.json"], after[".pellc-manifest.json"]
    assert after == before
    # --check compiles everything again: in parallel it reports what it does serially
    checks = []
    for jobs in ("1", "2"):
        assert main(["build", "--check", *args[1:], "-j", jobs]) == 1
        checks.append(capsys.readouterr().err)
    assert checks[0] == checks[1]
    assert checks[0].endswith("checked 30: fresh 27, stale or missing 0, failed 3\n")


def test_a_compiler_bug_in_a_worker_is_reported_as_in_a_serial_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def bug(name: str, in_worker: bool) -> None:
        if name in ("m17.pell", "m24.pell"):
            raise RuntimeError("simulated compiler bug")

    log = _workers(monkeypatch, tmp_path, bug)
    serial, parallel = _serial_and_parallel(tmp_path, capsys)
    assert serial == parallel
    assert serial == (
        3,
        f"{tmp_path / 'project' / 'db' / 'm17.pell'}: internal compiler error: RuntimeError at "
        f"pell/build.py:{serial[1].split('pell/build.py:')[1].split(':')[0]}: simulated "
        f"compiler bug\nThis is a bug in pellc; please report it with the file at {ISSUES_URL}\n",
    )
    assert "m17.pell" in _in_workers(log), "the worker did not meet the bug first"
    # as serially, a crash while compiling writes nothing
    assert not [p for p in (tmp_path / "out2").rglob("*") if p.is_file()]
    assert not multiprocessing.active_children()


def test_a_module_a_worker_fails_on_is_compiled_again_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def in_workers_only(name: str, in_worker: bool) -> None:
        if in_worker and name == "m9.pell":
            raise MemoryError
        if in_worker and name == "m20.pell":
            os._exit(1)  # a worker that dies: the pool is broken, the rest is compiled here

    log = _workers(monkeypatch, tmp_path, in_workers_only)
    serial, parallel = _serial_and_parallel(tmp_path, capsys)
    assert serial == parallel and serial[0] == 1
    assert _files(tmp_path / "out1") == _files(tmp_path / "out2")
    compiled_here = [
        name
        for pid, name in (line.split() for line in log.read_text("utf-8").splitlines()[30:])
        if int(pid) == os.getpid()
    ]
    assert "m9.pell" in compiled_here and "m20.pell" in compiled_here


def test_a_pool_that_cannot_start_leaves_the_build_serial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _workers(monkeypatch, tmp_path, lambda name, in_worker: None)

    def no_pool(*args: object) -> object:
        raise OSError(38, "Function not implemented")  # as without /dev/shm

    monkeypatch.setattr(pell.build, "_pool", no_pool)
    serial, parallel = _serial_and_parallel(tmp_path, capsys)
    assert serial == parallel
    assert _files(tmp_path / "out1") == _files(tmp_path / "out2")
    assert not _in_workers(log)


def test_ctrl_c_during_a_parallel_build_writes_nothing_and_stops_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _workers(monkeypatch, tmp_path, lambda name, in_worker: None)
    src, out = _project(tmp_path / "project"), tmp_path / "out"

    def interrupt(number: int, total: int, unit: pell.build.SourceUnit) -> None:
        if number == 10:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_tree([src], out, progress=interrupt, jobs=2)
    assert not [p for p in out.rglob("*") if p.is_file()]
    assert not multiprocessing.active_children()


def test_small_builds_start_no_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _project(tmp_path / "project")

    def no_pool(*args: object) -> object:
        raise AssertionError("a pool was started")

    monkeypatch.setattr(pell.build, "_pool", no_pool)
    # 30 small modules hold fewer characters than the threshold
    assert sum(len(p.read_text("utf-8")) for p in src.rglob("*.pell")) < 30_000
    build_tree([src], tmp_path / "out", jobs=8)
    # -j 1 is one process whatever the size
    monkeypatch.setattr(pell.build, "PARALLEL_THRESHOLD", 0)
    build_tree([src], tmp_path / "out2", jobs=1)
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        build_tree([src], tmp_path / "out3", jobs=0)
    assert not (tmp_path / "out3").exists()


def test_workers_started_afresh_build_what_forked_ones_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where workers cannot be forked (macOS, Windows, a process with threads) they are
    spawned, and make the project again from its texts."""
    src = _project(tmp_path / "project", modules=12)
    build_tree([src], tmp_path / "out1", jobs=1)
    monkeypatch.setattr(pell.build, "_can_fork", lambda: False)
    monkeypatch.setattr(pell.build, "SPAWNED_THRESHOLD", 0)
    started = []
    real_pool = pell.build._pool

    def pool(workers: int, project: Project, forking: bool) -> object:
        started.append(forking)
        return real_pool(workers, project, forking)

    monkeypatch.setattr(pell.build, "_pool", pool)
    (tmp_path / "project" / "pell-error-codes.json").unlink()
    build_tree([src], tmp_path / "out2", jobs=2)
    assert started == [False]
    assert _files(tmp_path / "out1") == _files(tmp_path / "out2")


@pytest.mark.parametrize("jobs", ["0", "-1", "two"])
def test_jobs_must_be_a_whole_number_of_one_or_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: str
) -> None:
    src = _tree(tmp_path)
    assert main(["build", str(src), "-d", str(tmp_path / "out"), f"--jobs={jobs}"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"pellc build: error: argument -j/--jobs: must be a whole number of 1 or more, not {jobs!r}"
    )
    assert not (tmp_path / "out").exists()


def test_a_current_runtime_is_not_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The manifest records what the runtime was made from; a build that finds the same, with
    # the file intact, keeps it without rendering it. An edited file, or another error, and
    # it is made again.
    src, out = _tree(tmp_path), tmp_path / "out"
    assert build_tree([src], out).runtime == "built"
    written = (out / "pell_runtime.sql").read_text("utf-8")

    def not_again(*args: object) -> str:
        raise AssertionError("the runtime was made again")

    with monkeypatch.context() as patched:
        patched.setattr(pell.runtime.ProjectRuntime, "sql", not_again)
        (src / "a.pell").write_text(GOOD.format(name="alpha") + "// edited\n", "utf-8")
        assert build_tree([src], out).runtime == "unchanged"
        assert build_tree([src], out, check_only=True).runtime == "fresh"
    (out / "pell_runtime.sql").write_text(written + "-- edited by hand\n", "utf-8")
    assert build_tree([src], out, check_only=True).runtime == "stale"
    assert build_tree([src], out).runtime == "built"
    assert (out / "pell_runtime.sql").read_text("utf-8") == written
    (src / "c.pell").write_text(WITH_ERROR.format(name="gamma"), "utf-8")
    assert build_tree([src], out).runtime == "built"
    assert "gamma_nope" in (out / "pell_runtime.sql").read_text("utf-8").lower()


# A module of realistic size (about 3 KB): each source in the tests above is under 100
# characters, so a build that looked at only the start of a source went unnoticed.
WAREHOUSE = """// Stock levels and reservations for the warehouse: each reservation locks the stock row,
// refuses to go below zero with a typed error, and writes a movement for the audit trail.
module warehouse.stock;

pub record Item { sku: text, on_hand: number, reserved: number, reorder_level: number }
pub record Movement { sku: text, quantity: number, reason: text, made_at: timestamp }

pub error UnknownSku { sku: text }
pub error NotEnoughStock { sku: text, on_hand: number, requested: number }
pub error BadQuantity { quantity: number }

// The stock row of one item, locked until the caller's transaction ends.
fn locked_item(sku: text) -> Result<Item, UnknownSku> {
    let found: Item = sql! {
        select sku, on_hand, reserved, reorder_level from stock_levels where sku = :sku for update
    }.one()?;
    return Ok(found);
}

// Reserve `quantity` of an item for an order; the movement records why.
@retry(n = 4, backoff = 50, jitter = 25, on = [busy, lock_timeout])
pub fn reserve(sku: text, quantity: number, order_id: number) -> Result<number, UnknownSku | NotEnoughStock | BadQuantity> {
    if quantity <= 0 {
        return Err(BadQuantity { quantity: quantity });
    }
    let item = locked_item(sku)?;
    let available = item.on_hand - item.reserved;
    if available < quantity {
        return Err(NotEnoughStock { sku: sku, on_hand: item.on_hand, requested: quantity });
    }
    sql! { update stock_levels set reserved = reserved + :quantity where sku = :sku };
    sql! {
        insert into stock_movements (sku, quantity, reason, order_id)
        values (:sku, :quantity, 'reserve', :order_id)
    };
    return Ok(available - quantity);
}

// Give a reservation back when an order is cancelled.
pub fn release(sku: text, quantity: number, order_id: number) -> Result<number, UnknownSku | BadQuantity> {
    if quantity <= 0 {
        return Err(BadQuantity { quantity: quantity });
    }
    let item = locked_item(sku)?;
    sql! { update stock_levels set reserved = reserved - :quantity where sku = :sku };
    sql! {
        insert into stock_movements (sku, quantity, reason, order_id)
        values (:sku, 0 - :quantity, 'release', :order_id)
    };
    return Ok(item.reserved - quantity);
}

// Goods received: on hand grows, and the receipt is a movement too.
pub fn receive(sku: text, quantity: number) -> Result<number, UnknownSku | BadQuantity> {
    if quantity <= 0 {
        return Err(BadQuantity { quantity: quantity });
    }
    let item = locked_item(sku)?;
    sql! { update stock_levels set on_hand = on_hand + :quantity where sku = :sku };
    sql! {
        insert into stock_movements (sku, quantity, reason)
        values (:sku, :quantity, 'receive')
    };
    return Ok(item.on_hand + quantity);
}

// Whether an item has fallen to its reorder level (reservations count as gone).
pub fn needs_reorder(sku: text) -> Result<bool, UnknownSku> {
    let item = locked_item(sku)?;
    return Ok(item.on_hand - item.reserved <= item.reorder_level);
}
"""


def test_an_edit_near_the_end_of_a_large_module_rebuilds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The incremental build decides on the whole source: an edit in its last lines, 2 KB and
    more from the start, is rebuilt and reaches the output."""
    assert len(WAREHOUSE.encode("utf-8")) > 2048
    src, out = tmp_path / "db", tmp_path / "out"
    src.mkdir()
    module = src / "stock.pell"
    module.write_text(WAREHOUSE, "utf-8")
    assert main(["build", str(src), "-d", str(out)]) == 0
    first = (out / "stock.sql").read_text("utf-8")
    assert "values (p_sku, p_quantity, 'receive');" in first
    edited = WAREHOUSE.replace("'receive')", "'goods in')").replace(
        "<= item.reorder_level", "< item.reorder_level"
    )
    assert edited[:2048] == WAREHOUSE[:2048] and edited != WAREHOUSE
    module.write_text(edited, "utf-8")
    capsys.readouterr()
    assert main(["build", "--check", str(src), "-d", str(out)]) == 1
    assert capsys.readouterr().err.startswith(f"{out / 'stock.sql'}: stale\n")
    assert main(["build", str(src), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 1, unchanged 0, failed 0, runtime unchanged\n"
    second = (out / "stock.sql").read_text("utf-8")
    assert second == compile_path(module).sql
    assert "values (p_sku, p_quantity, 'goods in');" in second
    assert "RETURN l_item.on_hand - l_item.reserved < l_item.reorder_level;" in second


def test_a_failed_module_does_not_remove_what_another_module_wrote_to_its_output_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two inputs holding `a.pell` both map to `a.sql`: the one that fails does not remove the
    file the other has just written."""
    first, second, out = tmp_path / "one", tmp_path / "two", tmp_path / "out"
    first.mkdir(), second.mkdir()
    (first / "a.pell").write_text(GOOD.format(name="one"), "utf-8")
    (second / "a.pell").write_text(GOOD.format(name="two"), "utf-8")
    assert main(["build", str(first), str(second), "-d", str(out)]) == 0
    FAILURES["type error"](second)
    assert main(["build", str(first), str(second), "-d", str(out)]) == 1
    assert (out / "a.sql").read_text("utf-8") == compile_path(first / "a.pell").sql


def test_a_failed_modules_output_that_cannot_be_removed_is_removed_by_the_next_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    src, out = _tree(tmp_path), tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    FAILURES["type error"](src)
    real_unlink = Path.unlink

    def refuse(path: Path, missing_ok: bool = False) -> None:
        if path.name == "a.sql":
            raise PermissionError(13, "Permission denied")
        real_unlink(path, missing_ok)

    monkeypatch.setattr(Path, "unlink", refuse)
    capsys.readouterr()
    assert main(["build", str(src), "-d", str(out)]) == 2
    assert f"pellc: error: cannot remove {out / 'a.sql'}: Permission denied" in capsys.readouterr().err
    manifest = json.loads((out / ".pellc-manifest.json").read_text("utf-8"))
    assert "a.sql" in manifest["modules"]  # still pellc's: tried again next time
    monkeypatch.setattr(Path, "unlink", real_unlink)
    assert main(["build", str(src), "-d", str(out)]) == 1
    assert capsys.readouterr().err.endswith("failed 1, removed 1, runtime unchanged\n")
    assert not (out / "a.sql").exists()


def test_a_directory_build_compiles_scripts_that_import_its_modules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two scripts (no `module` line): neither is a module, so neither clashes with the other
    # (both would be `script`), and `import greet;` finds the module of the project. A script
    # is never imported: the project indexes modules by their `module` line, which it has not
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    (src / "greet.pell").write_text(
        'module greet;\n\npub fn hello(name: text) -> text {\n    return "hello, {name}";\n}\n'
    )
    (src / "one.pell").write_text('import greet;\n\ndbms_output::put_line(greet::hello("a"));\n')
    (src / "two.pell").write_text('let n = 2;\ndbms_output::put_line("{n}");\n')
    assert main(["build", str(src), "-d", str(out)]) == 0, capsys.readouterr().err
    assert sorted(_outputs(out)) == [".pellc-manifest.json", "greet.sql", "one.sql", "two.sql"]
    one = (out / "one.sql").read_text("utf-8")
    assert one.endswith("BEGIN\n  dbms_output.put_line(greet.hello('a'));\nEND;\n/\n")
    assert "PACKAGE" not in one and "PACKAGE" not in (out / "two.sql").read_text("utf-8")


def test_directory_walks_leave_hidden_folders_and_virtualenvs_out(tmp_path: Path) -> None:
    """find_sources, the one walk of build, check, verify, runtime and the pytest plugin: a
    `.venv` (or any hidden folder) and a virtualenv of any name hold other packages' `.pell`
    files (pellc's own stubs in site-packages), no module of the project. Named as the input,
    such a folder is walked."""
    from pell.build import find_sources

    module = "module m;\npub fn f() -> number { return 1; }\n"
    for folder in ["db", ".venv/lib/python3.11/site-packages/pell/stubs", ".git/x", "env/lib"]:
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "m.pell").write_text(module, "utf-8")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n", "utf-8")
    units, unlisted = find_sources([tmp_path])
    assert [unit.output.as_posix() for unit in units] == ["db/m.sql"] and not unlisted
    units, _ = find_sources([tmp_path / ".git"])
    assert [unit.output.as_posix() for unit in units] == ["x/m.sql"]
