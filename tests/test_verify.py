"""`pell.verify` finds each retry defect planted in a statement tree, on the right statement,
and nothing in the trees pellc lowers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from verify_checks import assert_found, findings, retry_parts, tree

from pell import compile_source, plsql
from pell.compiler import CompileResult
from pell.verify import verify

SHOP = Path(__file__).parent / "verify" / "shop.pell"


def compiled() -> CompileResult:
    result = compile_source(SHOP.read_text(encoding="utf-8"), filename="shop.pell")
    assert result.lowered is not None
    return result








AUTONOMOUS_AUDIT = ("verify-repeated-effect", "9:5")  # (f): logged() retries audit()


def test_the_lowered_trees_have_no_violation() -> None:
    report = verify([compiled()])
    assert findings(report) == [AUTONOMOUS_AUDIT]
    assert not report.has_errors
    assert all(verdict.schedules > 1 for verdict in report.verdicts)


def _share_savepoint(result: CompileResult) -> None:
    """(a) add_line marks and rolls back to place's savepoint, not its own."""
    shared = next(
        s for s in retry_parts(tree(result, "place"))[0].body if isinstance(s, plsql.Savepoint)
    )
    for stmt in plsql.walk(tree(result, "add_line").body):
        if isinstance(stmt, plsql.Savepoint | plsql.RollbackTo):
            stmt.name = shared.name


def _no_rollback_before_raise(result: CompileResult) -> None:
    """(b) the panic check re-raises without rolling back."""
    _, attempt = retry_parts(tree(result, "place"))
    panic = next(s for s in attempt.handlers[0].body if isinstance(s, plsql.If))
    panic.branches[0].body = [
        s for s in panic.branches[0].body if not isinstance(s, plsql.RollbackTo)
    ]


def _commit_in_body(result: CompileResult) -> None:
    """(c) a COMMIT after the first statement of the attempt."""
    _, attempt = retry_parts(tree(result, "place"))
    attempt.body.insert(1, plsql.Commit(origin=attempt.body[0].origin))


def _full_rollback(result: CompileResult) -> None:
    """(a) the retry undoes the whole transaction, its caller's work with it."""
    _, attempt = retry_parts(tree(result, "place"))
    handler = attempt.handlers[0].body
    handler[:] = [plsql.Rollback() if isinstance(s, plsql.RollbackTo) else s for s in handler]


def _recover_before_rollback(result: CompileResult) -> None:
    """(a) reserve() gives up to recover before rolling back the last attempt."""
    _, attempt = retry_parts(tree(result, "reserve"))
    handler = attempt.handlers[0].body
    rollback = next(s for s in handler if isinstance(s, plsql.RollbackTo))
    handler.remove(rollback)
    handler.append(rollback)


def _one_attempt_too_many(result: CompileResult) -> None:
    """(d) the loop gives up after n + 1 attempts."""
    _, attempt = retry_parts(tree(result, "place"))
    for stmt in plsql.walk(attempt.handlers[0].body):
        if isinstance(stmt, plsql.If):
            for branch in stmt.branches:
                if isinstance(branch.condition, plsql.AttemptsExhausted):
                    condition = branch.condition
                    branch.condition = plsql.AttemptsExhausted(
                        condition.variable, condition.attempts + 1, condition.deadline
                    )


def _retry_never_retry_codes(result: CompileResult) -> None:
    """(e) no panic check: ORA-00001 and panics are retried like deadlocks."""
    _, attempt = retry_parts(tree(result, "place"))
    body = attempt.handlers[0].body
    body[:] = [
        s
        for s in body
        if not (isinstance(s, plsql.If) and isinstance(s.branches[0].condition, plsql.IsPanic))
    ]


def _drop_a_retried_class(result: CompileResult) -> None:
    """(e) settle() retries ORA-00060 but no longer ORA-08177, which its `on` names."""
    _, attempt = retry_parts(tree(result, "settle"))
    attempt.handlers[0].exceptions = attempt.handlers[0].exceptions[:1]


def _give_up_quietly(result: CompileResult) -> None:
    """(a) when the attempts run out, place() returns as if it had worked."""
    _, attempt = retry_parts(tree(result, "place"))
    for stmt in plsql.walk(attempt.handlers[0].body):
        if isinstance(stmt, plsql.If) and isinstance(
            stmt.branches[0].condition, plsql.AttemptsExhausted
        ):
            stmt.branches[0].body = [plsql.Exit(origin=stmt.origin)]


def _sleep_too_long(result: CompileResult) -> None:
    """(d) place() sleeps 10 s where its policy says 0.1 s."""
    for stmt in plsql.walk(tree(result, "place").body):
        if isinstance(stmt, plsql.Sleep):
            stmt.seconds = "10"


PLANTED: list[tuple[Callable[[CompileResult], None], tuple[str, str], str]] = [
    (_share_savepoint, ("verify-repeated-work", "19:5"), "work of a failed attempt still stands"),
    (_no_rollback_before_raise, ("verify-leaked-work", "19:5"), "its work still stands"),
    (_full_rollback, ("verify-lost-work", "18:4"), "undoes its caller's earlier work"),
    (_commit_in_body, ("verify-no-savepoint", "18:4"), "raises ORA-01086"),
    (
        _recover_before_rollback,
        ("verify-repeated-work", "26:5"),
        "work of a failed attempt still stands",
    ),
    # the extra attempt's sleep is the first thing past the policy
    (_one_attempt_too_many, ("verify-attempts", "18:4"), "after attempt 3"),
    (_drop_a_retried_class, ("verify-retried-error", "42:5"), "its policy retries it"),
    (_give_up_quietly, ("verify-lost-work", "19:5"), "neither retried nor raised"),
    (_sleep_too_long, ("verify-attempts", "18:4"), "sleeps up to 10 s after attempt 1"),
    (_retry_never_retry_codes, ("verify-retried-error", "19:5"), "which its policy does not retry"),
]


@pytest.mark.parametrize(
    ("plant", "expected", "message"), PLANTED, ids=[p[0].__name__[1:] for p in PLANTED]
)
def test_a_planted_defect_is_found_where_it_is(
    plant: Callable[[CompileResult], None], expected: tuple[str, str], message: str
) -> None:
    result = compiled()
    plant(result)
    assert_found(verify([result]), expected, message)


def _compile_file(path: Path) -> CompileResult:
    text = path.read_text(encoding="utf-8")
    first = text.split("\n", 1)[0]
    target = first.split()[-1] if first.startswith("// pellc: --target") else "23ai"
    from pell.build import project_of

    # a module of examples/shop imports its siblings: compiled in its project
    return compile_source(text, path.name, target, project_of([path]).index)


ROOT = Path(__file__).parent.parent
EVERY_MODULE = sorted((ROOT / "examples").rglob("*.pell")) + sorted(
    (ROOT / "tests" / "cases").glob("*.pell")
)


@pytest.mark.parametrize("path", EVERY_MODULE, ids=[p.stem for p in EVERY_MODULE])
def test_no_violation_in_any_example_or_case(path: Path) -> None:
    result = _compile_file(path)
    if not result.ok:
        pytest.skip("a negative case: it does not compile")
    report = verify([result])
    assert [f.render() for f in report.findings if f.severity.value == "error"] == []


def test_the_examples_verify_together() -> None:
    results = [_compile_file(path) for path in sorted((ROOT / "examples").rglob("*.pell"))]
    report = verify([r for r in results if r.ok])
    assert report.verdicts and not report.has_errors


def test_a_user_rollback_to_a_missing_savepoint_is_an_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pell.cli import main

    path = Path(__file__).parent / "verify" / "undo.pell"
    assert main(["verify", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:4:4: shop.stock::restock: " in out
    assert (
        f"{path}:8:9: error: ROLLBACK TO before_restok raises ORA-01086: no savepoint of that "
        "name stands here  [verify-no-savepoint]"
    ) in out
    assert "    SAVEPOINT before_restock" in out  # the schedule, step by step
    # `check` runs the verifier too, and fails on its errors
    assert main(["check", str(path)]) == 1
    assert "[verify-no-savepoint]" in capsys.readouterr().err
    assert main(["check", "--no-verify", str(path)]) == 0


def test_verify_prints_schedules_per_fn_and_warnings_do_not_fail(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pell.cli import main

    assert main(["verify", str(SHOP)]) == 0
    out = capsys.readouterr().out
    summaries = [line for line in out.splitlines() if "schedules" in line]
    assert [line.split(": ")[1] for line in summaries] == [
        "shop.orders::audit",  # @autonomous: it commits
        "shop.orders::add_line",
        "shop.orders::place",
        "shop.orders::reserve",
        "shop.orders::logged",
        "shop.orders::settle",
    ]
    assert "[verify-repeated-effect]" in out
    assert main(["check", str(SHOP)]) == 0  # check shows the verifier's errors only
    assert "verify-" not in capsys.readouterr().err


def test_nothing_to_verify_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    from pell.cli import main

    plain = ROOT / "tests" / "cases" / "records.pell"
    assert main(["verify", str(plain)]) == 0
    assert "no @retry fn" in capsys.readouterr().out


@pytest.mark.parametrize("document", ["README.md", "docs/verify.md"])
def test_the_documented_finding_is_what_verify_prints(document: str) -> None:
    import re
    import subprocess
    import sys

    text = (ROOT / document).read_text(encoding="utf-8")
    match = re.search(r"```(?:text)?\n\$ pellc verify (\S+)\n(.*?)```", text, re.S)
    assert match, f"{document} lost its verify sample"
    done = subprocess.run(
        [sys.executable, "-m", "pell", "verify", match.group(1)],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stdout == match.group(2)


def test_an_early_return_from_a_transaction_block_keeps_the_cleanup_error() -> None:
    """Found by the verifier: after the block's COMMIT, a failing cleanup met ROLLBACK TO a
    savepoint the COMMIT had erased. The handler now rolls back only what is uncommitted."""
    path = Path(__file__).parent / "verify" / "early_return.pell"
    result = compile_source(path.read_text(encoding="utf-8"), filename=path.name)
    assert findings(verify([result])) == []
    # the handler as it was: ROLLBACK TO whatever happened
    block = next(s for s in tree(result, "place").body if isinstance(s, plsql.Block))
    handler = block.handlers[0].body
    handler[0] = plsql.RollbackTo("pell_transaction", origin=handler[0].origin)
    assert findings(verify([result])) == [("verify-no-savepoint", "12:5")]
