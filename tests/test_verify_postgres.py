"""`pellc verify` for the postgres target: PostgreSQL's rules (docs/verify.md, "PostgreSQL")
find each retry defect planted in a lowered tree, on the right statement, and nothing in the
trees pellc lowers."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from verify_checks import assert_found, findings, retry_parts, tree

from pell import compile_source, plsql
from pell.compiler import CompileResult
from pell.postgres import PgModule
from pell.verify import program_module, verify
from pell.verify.interpreter import Program, Run
from pell.verify.model import Failure

ROOT = Path(__file__).parent.parent
SHOP = ROOT / "tests" / "verify" / "shop_postgres.pell"


def compiled() -> CompileResult:
    result = compile_source(SHOP.read_text(encoding="utf-8"), "shop_postgres.pell", "postgres")
    assert isinstance(result.lowered, PgModule)
    return result








NOTICE_REPEATED = ("verify-repeated-effect", "29:5")  # take()'s print, then a retried deadlock


def test_the_lowered_trees_have_no_violation() -> None:
    report = verify([compiled()])
    assert findings(report) == [NOTICE_REPEATED]
    assert not report.has_errors
    assert {v.fn for v in report.verdicts} == {"add_line", "place", "reserve", "take", "settle"}


def test_the_printed_function_is_the_tree() -> None:
    """What PostgreSQL runs is what the verifier ran: the printer's lines are in the script."""
    result = compiled()
    assert result.sql is not None
    printer = plsql.Printer("postgres", marks=False)
    printer.statements(tree(result, "settle").body, 1)
    assert "\n".join(printer.lines) in result.sql
    # each attempt's transaction starts with it, right after the ROLLBACK that ends the last
    at = next(i for i, line in enumerate(printer.lines) if line.strip().startswith("SET "))
    assert printer.lines[at].strip() == "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE;"
    assert printer.lines[at - 1].strip() == "ROLLBACK;"


def _catch_everything(result: CompileResult) -> None:
    """place() retries whatever fails: unique violations and panics too."""
    _, attempt = retry_parts(tree(result, "place"))
    attempt.handlers[0].exceptions = [plsql.OTHERS]


def _skip_the_pell_error_test(result: CompileResult) -> None:
    """take()'s WHEN OTHERS retries every error, not only OutOfStock."""
    _, attempt = retry_parts(tree(result, "take"))
    others = attempt.handlers[1].body
    others[:] = [s for s in others if not isinstance(s, plsql.If)]


def _drop_a_retried_class(result: CompileResult) -> None:
    """settle() retries 40P01 but no longer 40001, which its `on` names."""
    _, attempt = retry_parts(tree(result, "settle"))
    attempt.handlers[0].exceptions = attempt.handlers[0].exceptions[:1]


def _commit_in_the_attempt(result: CompileResult) -> None:
    """settle() commits inside its attempt block, a subtransaction."""
    _, attempt = retry_parts(tree(result, "settle"))
    attempt.body.insert(1, plsql.Commit(origin=attempt.body[0].origin))


def _set_transaction_without_rollback(result: CompileResult) -> None:
    """settle() sets the isolation level after its CALL has already run a statement."""
    loop, _ = retry_parts(tree(result, "settle"))
    loop.body[:] = [s for s in loop.body[:3] if not isinstance(s, plsql.Rollback)] + loop.body[3:]


def _rollback_in_a_function(result: CompileResult) -> None:
    """place(), a FUNCTION, rolls back the whole transaction before it retries."""
    _, attempt = retry_parts(tree(result, "place"))
    attempt.handlers[0].body.insert(0, plsql.Rollback(origin=attempt.origin))


def _no_commit(result: CompileResult) -> None:
    """settle() leaves its last attempt uncommitted."""
    settle = tree(result, "settle")
    settle.body[:] = [s for s in settle.body if not isinstance(s, plsql.Commit)]


def _give_up_quietly(result: CompileResult) -> None:
    """When the attempts run out, place() returns as if it had worked."""
    _, attempt = retry_parts(tree(result, "place"))
    for stmt in plsql.walk(attempt.handlers[0].body):
        if isinstance(stmt, plsql.If) and isinstance(
            stmt.branches[0].condition, plsql.AttemptsExhausted
        ):
            stmt.branches[0].body = [plsql.Exit(origin=stmt.origin)]


def _no_backoff_cap(result: CompileResult) -> None:
    """place() sleeps 10 s where its policy says 0.1 s."""
    for stmt in plsql.walk(tree(result, "place").body):
        if isinstance(stmt, plsql.Sleep):
            stmt.seconds = "10 + random()"


def _one_attempt_too_many(result: CompileResult) -> None:
    """settle() gives up after n + 1 attempts."""
    _, attempt = retry_parts(tree(result, "settle"))
    for stmt in plsql.walk(attempt.handlers[0].body):
        if isinstance(stmt, plsql.If) and isinstance(
            (condition := stmt.branches[0].condition), plsql.AttemptsExhausted
        ):
            stmt.branches[0].condition = plsql.AttemptsExhausted(
                condition.variable, condition.attempts + 1, condition.deadline
            )


def _handler_around_the_loop(result: CompileResult) -> None:
    """place()'s handler sits around its loop: a failure ends the loop, and the call returns."""
    place = tree(result, "place")
    loop, attempt = retry_parts(place)
    handlers, attempt.handlers = attempt.handlers, []
    place.body[:] = [plsql.Block([loop], handlers, origin=loop.origin)]


PLANTED: list[tuple[Callable[[CompileResult], None], tuple[str, str], str]] = [
    (_catch_everything, ("verify-retried-error", "12:5"), "which its policy does not retry"),
    (
        _skip_the_pell_error_test,
        ("verify-retried-error", "30:5"),
        "which its policy does not retry",
    ),
    (_drop_a_retried_class, ("verify-retried-error", "36:5"), "its policy retries it"),
    (_commit_in_the_attempt, ("verify-transaction-control", "36:5"), "inside a block with"),
    (_set_transaction_without_rollback, ("verify-transaction-control", "35:4"), "25001"),
    (_rollback_in_a_function, ("verify-transaction-control", "11:4"), "in a FUNCTION"),
    (_no_commit, ("verify-leaked-work", "35:4"), "returned with its work uncommitted"),
    (_give_up_quietly, ("verify-lost-work", "12:5"), "neither retried nor raised"),
    (_no_backoff_cap, ("verify-attempts", "11:4"), "sleeps up to 11 s after attempt 1"),
    (_one_attempt_too_many, ("verify-attempts", "35:4"), "the policy allows 3"),
    (_handler_around_the_loop, ("verify-lost-work", "12:5"), "work of its last attempt is gone"),
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


def test_a_subtransaction_undoes_only_its_block() -> None:
    """place() fails in add_line's second statement... here: add_line's insert fails with a
    deadlock; add_line's block rolls back nothing of place's own insert, and place returns
    with both inserts of the clean attempts standing (PostgreSQL 15 docs, 43.6.8)."""
    result = compiled()
    module = program_module(result)
    program = Program([module], postgres=True)
    failure = next(
        kind for kind in _kinds(program) if kind.sqlstate == "40P01"
    )  # site 1: the call of add_line, site 2: its insert
    run = Run(program, {1: (2, failure)}, [])
    run.call_top(module, module.subprograms["place"], opened=True)
    log = [text.strip() for text, _ in run.log]
    assert "insert statement fails: 40P01 deadlock_detected" in log
    rolled_back = [line for line in log if line.startswith("the block's subtransaction")]
    assert rolled_back == ["the block's subtransaction is rolled back: nothing"]
    assert run.violations == []
    standing = [e.what for e in run.session.live()]
    assert standing.count("insert into orders") == 1
    assert standing.count("insert into lines") == 1


def test_a_transaction_scoped_call_in_a_client_transaction_is_refused() -> None:
    result = compiled()
    module = program_module(result)
    run = Run(Program([module], postgres=True), {}, [])
    run.call_top(module, module.subprograms["settle"], opened=True)
    log = [text.strip() for text, _ in run.log]
    # its guard refuses it before its ROLLBACK would (2D000): the caller's work is not ended
    assert "raises pell_transaction_open" in log
    assert "2D000 invalid_transaction_termination" not in log
    assert log[-1].startswith("the transaction is aborted: the caller's earlier work")
    assert run.violations == []  # the refusal it owes its caller, not a defect


def _kinds(program: Program) -> list[object]:
    from pell.verify.schedules import failure_kinds

    module = next(iter(program.modules.values()))
    return failure_kinds(module.subprograms["place"].retry, module, postgres=True)  # type: ignore[return-value]


EVERY_MODULE = sorted((ROOT / "examples").rglob("*.pell")) + sorted(
    (ROOT / "tests" / "cases").glob("*.pell")
)


@pytest.mark.parametrize("path", EVERY_MODULE, ids=[p.stem for p in EVERY_MODULE])
def test_no_error_in_any_example_or_case(path: Path) -> None:
    from pell.build import project_of

    text = path.read_text(encoding="utf-8")
    result = compile_source(text, path.name, "postgres", project_of([path]).index)
    if not result.ok:
        pytest.skip("not lowered for postgres (a negative case, or unsupported there)")
    report = verify([result])
    assert not report.has_errors, [f.render() for f in report.findings]


def pellc(command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pell", command, "--target", "postgres", str(SHOP)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_command_verifies_for_postgres() -> None:
    done = pellc("verify")
    assert done.returncode == 0, done.stderr
    assert "shop.orders::settle: 22 schedules, no findings" in done.stdout
    assert "[verify-repeated-effect]" in done.stdout


def test_check_runs_the_postgres_model_and_keeps_its_warnings_to_verify() -> None:
    done = pellc("check")
    assert done.returncode == 0, done.stderr
    assert "[nested-retry]" in done.stderr  # the checker's
    assert "[verify-" not in done.stderr  # the verifier's warning is verify's to print


# PostgreSQL 15 documentation, Appendix A "PostgreSQL Error Codes", Table A.1 (Class 40
# "Transaction Rollback": 40001 serialization_failure, 40P01 deadlock_detected; Class 55
# "Object Not In Prerequisite State": 55P03 lock_not_available; Class 72 "Snapshot Failure":
# 72000 snapshot_too_old). Written here from the appendix and docs/postgres.md ("Retries"), not
# read from pell/postgres/retry.py, which the lowering and the verifier's model both read: a
# code dropped from (or mistyped in) that table changes both alike, and only this list sees it.
APPENDIX_A = {
    "40001": "serialization_failure",
    "40P01": "deadlock_detected",
    "55P03": "lock_not_available",
    "72000": "snapshot_too_old",
}
RETRIED_SQLSTATES = {
    "": {"40P01", "40001", "55P03"},  # no `on`: the allow-list
    "deadlock": {"40P01"},
    "serialization": {"40001"},
    "busy": {"55P03"},
    "lock_timeout": {"55P03"},
    "snapshot_too_old": {"72000"},
}


@pytest.mark.parametrize("on", RETRIED_SQLSTATES, ids=lambda on: on or "no-on")
def test_the_retried_sqlstates_are_appendix_as(on: str) -> None:
    """Planted defects: `lock_not_available` dropped from RETRIED_BY_DEFAULT, or
    `CONDITIONS["lock_timeout"]` emptied, or `SQLSTATES["lock_not_available"]` mistyped: each
    fails here, and the verifier's own tests (reading the same table) stay green."""
    from pell.verify.properties import postgres_retried

    clause = f", on = [{on}]" if on else ""
    source = (
        f"module jobs;\n\n@retry(n = 3{clause})\nfn run(id: number) {{\n"
        "    sql! { update jobs set n = n + 1 where id = :id };\n}\n"
    )
    result = compile_source(source, "jobs.pell", "postgres")
    assert result.ok, [d.message for d in result.diagnostics]
    expected = RETRIED_SQLSTATES[on]
    subprogram = tree(result, "run")
    _, attempt = retry_parts(subprogram)
    caught = [name for handler in attempt.handlers for name in handler.exceptions]
    # the lowering: the condition names its handler prints, each with the SQLSTATE it stands for
    assert {name.text for name in caught} == {APPENDIX_A[code] for code in expected}
    assert all(name.sqlstate is not None for name in caught)
    assert {APPENDIX_A[name.sqlstate or ""] for name in caught} == {name.text for name in caught}
    assert result.sql is not None
    for code in expected:
        assert APPENDIX_A[code] in result.sql
    # the verifier: what its model takes the policy to retry
    assert subprogram.retry is not None
    assert postgres_retried(subprogram.retry) == expected


# ---- `transaction { }` and `@autonomous` (issue 28): the model runs the forms the target
# prints, and finds them broken where PostgreSQL would

PARITY = """module parity;

@autonomous
pub fn note(msg: text) {
    sql! { insert into notes (msg) values (:msg) };
}

pub fn book(id: number) {
    sql! { insert into lines (id) values (:id) };
    transaction {
        sql! { insert into lines (id) values (:id + 1) };
    }
    transaction {
        sql! { insert into lines (id) values (:id + 2) };
    }
}

@retry(n = 3, backoff = 1)
pub fn retried(id: number) {
    note("try");
    sql! { update lines set id = :id where id = 0 };
}
"""


def parity() -> CompileResult:
    result = compile_source(PARITY, "parity.pell", "postgres")
    assert isinstance(result.lowered, PgModule), [d.message for d in result.diagnostics]
    return result


def test_a_transaction_block_commits_in_its_procedure_and_an_autonomous_commit_stays() -> None:
    report = verify([parity()])
    # book()'s COMMIT is where PostgreSQL allows one: no finding; what note() committed on
    # its own is not undone when retried()'s attempt fails, and the next attempt does it again
    assert findings(report) == [("verify-repeated-effect", "5:5")]
    assert "committed on its own" in report.findings[0].message
    assert {v.fn for v in report.verdicts} == {"book", "retried"}


def test_the_autonomous_session_commits_its_work_whatever_the_caller_does() -> None:
    result = parity()
    module = program_module(result)
    program = Program([module], postgres=True)
    failure = Failure("23505 unique_violation", sqlstate="23505", never_retry=True)
    # retried(): site 0 the call of note, site 1 its insert, site 2 retried's update
    run = Run(program, {1: (2, failure)}, [])
    run.call_top(module, module.subprograms["retried"], opened=True)
    log = [text.strip() for text, _ in run.log]
    assert "the autonomous session commits insert into notes (#1)" in log
    assert [e.what for e in run.session.permanent] == ["insert into notes"]
    assert [e.what for e in run.session.live()] == []  # the caller's work is all undone


def _commit_under_a_handler(result: CompileResult) -> None:
    """book()'s second transaction block lowered as Oracle's, in a block with a handler (seen
    only when book() runs as the client must call it, in a transaction of its own: in the
    client's, its first COMMIT is refused, and the call ends there)."""
    book = tree(result, "book")
    block = [s for s in book.body if isinstance(s, plsql.Block)][-1]
    block.handlers = [plsql.Handler([plsql.OTHERS], [plsql.Raise(origin=block.origin)])]


def _book_as_a_function(result: CompileResult) -> None:
    """book() lowered as a FUNCTION, which cannot COMMIT."""
    tree(result, "book").transaction_control = False


def _autonomous_in_the_callers_session(result: CompileResult) -> None:
    """note() run in its caller's transaction: its insert is undone with each attempt."""
    tree(result, "note").autonomous = False


def test_planted_transaction_defects_are_found() -> None:
    result = parity()
    _commit_under_a_handler(result)
    assert_found(verify([result]), ("verify-transaction-control", "13:5"), "inside a block")
    result = parity()
    _book_as_a_function(result)
    assert_found(verify([result]), ("verify-transaction-control", "10:5"), "in a FUNCTION")


def test_an_autonomous_fn_run_in_the_callers_session_repeats_nothing() -> None:
    result = parity()
    _autonomous_in_the_callers_session(result)
    assert findings(verify([result])) == []
