"""@retry on PostgreSQL: the body in a BEGIN ... EXCEPTION block inside a LOOP.

The block is a subtransaction: when its handler runs, what the attempt changed is already
rolled back, to the block's start only ("When an error is caught by an EXCEPTION clause, the
local variables of the PL/pgSQL function remain as they were when the error occurred, but all
changes to persistent database state within the block are rolled back": PostgreSQL 15 docs,
43.6.8 "Trapping Errors"). Each retried fn has its own anonymous subtransaction, so retried
fns that call each other cannot share a savepoint name. What is retried is decided by
SQLSTATE, from RETRIED_BY_DEFAULT and `on = [...]`; everything else propagates untouched
(its attempt rolled back all the same), panics included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pell import naming, plsql
from pell.codegen.expressions import quote_text
from pell.postgres.names import is_procedure
from pell.retry import ISOLATION_LEVELS, RetryPolicy, format_seconds, pell_errors_on
from pell.retry import sleep_expression as retry_sleep_expression

if TYPE_CHECKING:
    from pell.postgres.lower import PgFnLowerer

# `on = [...]` classes -> PL/pgSQL condition names (PostgreSQL 15 docs, Appendix A, "PostgreSQL
# Error Codes"): deadlock_detected 40P01, serialization_failure 40001, lock_not_available
# 55P03 (NOWAIT, and lock_timeout expiring), snapshot_too_old 72000.
CONDITIONS: dict[str, tuple[str, ...]] = {
    "deadlock": ("deadlock_detected",),
    "serialization": ("serialization_failure",),
    "busy": ("lock_not_available",),
    "lock_timeout": ("lock_not_available",),
    "snapshot_too_old": ("snapshot_too_old",),
}

SQLSTATES = {  # and what the verifier's model raises under each name
    "deadlock_detected": "40P01",
    "serialization_failure": "40001",
    "lock_not_available": "55P03",
    "snapshot_too_old": "72000",
}

# With no `on`: what a retry can cure. Any other SQLSTATE (constraint, syntax, permission,
# resource, cancel, internal, pellc's own errors and panics, and codes in no list) is not
# retried: an allow-list, because retrying what cannot succeed (08006 connection failure,
# say) only repeats the failure five times.
RETRIED_BY_DEFAULT = ("deadlock_detected", "serialization_failure", "lock_not_available")


def sleep_expression(policy: RetryPolicy) -> str | None:
    """Seconds to sleep after the attempt-th failure: the Oracle target's formula, written with
    PostgreSQL's functions (random() for DBMS_RANDOM.VALUE)."""
    return retry_sleep_expression(policy, naming.ATTEMPT_VARIABLE, "postgres")


RESULT_PARAMETER = "p_pell_result"  # the OUT parameter of a transaction-scoped fn's value
ATTEMPTS_LABEL = "pell_attempts"


APPLICATION = "l_pell_application"  # application_name before the call (observe)
RESULT_VARIABLE = naming.RESULT_VARIABLE


def lower_retry(lowerer: PgFnLowerer) -> None:
    policy = lowerer.fn.retry
    assert policy is not None
    if policy.scope == "transaction":
        lower_transaction_retry(lowerer, policy)
        return
    attempt = naming.ATTEMPT_VARIABLE
    lowerer.declarations.append(f"{attempt} integer := 0;")
    deadline = _deadline(lowerer, policy)
    saved = _saved_parameters(lowerer)
    label = ""
    if policy.observe:
        # every way out restores application_name: a `return` leaves the loop by its label
        # and returns after it
        _save_application(lowerer)
        label = lowerer.return_exit = ATTEMPTS_LABEL
        if lowerer.fn.is_function and not lowerer.returns_into:
            lowerer.declarations.append(
                f"{RESULT_VARIABLE} {lowerer.sql_type(lowerer.fn.returns)};"
            )
            lowerer.returns_into = RESULT_VARIABLE

    def on_retryable() -> None:
        lowerer.emit(plsql.CountAttempt(attempt))
        for name, copy in saved:
            lowerer.emit(plsql.Assign(name, copy))
        sleep = _sleep_and_deadline(lowerer, policy, deadline)
        exhausted = _exhausted(policy, deadline, sleep)
        lowerer.emit(plsql.If([plsql.Branch(exhausted, lowerer.collect(give_up))]))
        if policy.observe:
            _announce_retry(lowerer, policy)
        if sleep is not None:
            lowerer.emit(plsql.Sleep("PERFORM pg_sleep", sleep))

    def give_up() -> None:
        if policy.recover is None:
            lowerer.emit(plsql.Raise())  # the error's rollback restores application_name
            return
        if policy.observe:
            _restore_application(lowerer)
        _recover_call(lowerer, policy)
        value = None
        if lowerer.fn.is_function and lowerer.returns_into != RESULT_PARAMETER:
            value = RESULT_VARIABLE
        lowerer.emit(plsql.Return(value))

    def attempt_block() -> None:
        statements = lowerer.collect(lambda: _reset_out_parameters(lowerer))
        statements += lowerer.nested(lowerer.fn.decl.body)
        if lowerer.analysis.falls_through:
            statements.append(lowerer.at(plsql.Exit(label)))
        lowerer.emit(plsql.Block(statements, _handlers(lowerer, policy, on_retryable)))

    lowerer.emit(plsql.RetryLoop(lowerer.collect(attempt_block), label=label))
    if policy.observe:
        _restore_application(lowerer)
        if lowerer.fn.is_function and lowerer.returns_into == RESULT_VARIABLE:
            lowerer.emit(plsql.Return(RESULT_VARIABLE))


def _deadline(lowerer: PgFnLowerer, policy: RetryPolicy) -> str | None:
    if policy.within_ms is None:
        return None
    deadline = "l_pell_deadline"
    lowerer.declarations.append(f"{deadline} timestamptz;")
    interval = f"make_interval(secs => {format_seconds(policy.within_ms)})"
    lowerer.emit(plsql.Assign(deadline, f"clock_timestamp() + {interval}"))
    return deadline


def _sleep_and_deadline(
    lowerer: PgFnLowerer, policy: RetryPolicy, deadline: str | None
) -> str | None:
    """The sleep after this failure, computed once into a variable when a deadline must
    compare with it."""
    sleep = sleep_expression(policy)
    if deadline is None or sleep is None:
        return sleep
    if "l_pell_sleep numeric;" not in lowerer.declarations:
        lowerer.declarations.append("l_pell_sleep numeric;")
    lowerer.emit(plsql.Assign("l_pell_sleep", sleep))
    return "l_pell_sleep"


def _exhausted(
    policy: RetryPolicy, deadline: str | None, sleep: str | None
) -> plsql.AttemptsExhausted:
    """Out of attempts, or (with `within`) the next sleep would pass the deadline."""
    passed = None
    if deadline is not None and sleep is not None:
        passed = f"clock_timestamp() + make_interval(secs => {sleep}) > {deadline}"
    elif deadline is not None:
        passed = f"clock_timestamp() > {deadline}"
    return plsql.AttemptsExhausted(naming.ATTEMPT_VARIABLE, policy.attempts, passed)


def _recover_call(lowerer: PgFnLowerer, policy: RetryPolicy) -> None:
    """`recover`, called with the fn's arguments; its value into the fn's result."""
    assert policy.recover is not None
    recover = lowerer.checked.fns[policy.recover]
    args = [naming.param_name(p.decl.name) for p in lowerer.fn.params]
    call = f"{lowerer.schema}.{naming.fn_name(policy.recover)}"
    result = lowerer.returns_into or RESULT_VARIABLE
    if lowerer.fn.is_function and result == RESULT_VARIABLE and not lowerer.returns_into:
        lowerer.declarations.append(f"{RESULT_VARIABLE} {lowerer.sql_type(lowerer.fn.returns)};")
    lowerer.calls.append((policy.recover,))
    if is_procedure(recover):
        if recover.is_function:
            args.append(result)
        lowerer.emit(plsql.Exec(f"CALL {call}({', '.join(args)})"))
    elif lowerer.fn.is_function:
        lowerer.emit(plsql.Assign(result, f"{call}({', '.join(args)})"))
    else:
        lowerer.emit(plsql.Exec(f"PERFORM {call}({', '.join(args)})"))


def _save_application(lowerer: PgFnLowerer) -> None:
    lowerer.declarations.append(f"{APPLICATION} text;")
    lowerer.emit(plsql.Assign(APPLICATION, "current_setting('application_name')"))


def _restore_application(lowerer: PgFnLowerer) -> None:
    """On the ways out without an error. An error needs none: "The effects of SET or SET LOCAL
    are also canceled by rolling back to a savepoint that is earlier than the command", and by
    the rollback of the transaction (PostgreSQL 15 docs, SET), and set_config(..., false) is
    SET: whoever stops the error rolls back past this call's settings."""
    lowerer.emit(plsql.Exec(f"PERFORM set_config('application_name', {APPLICATION}, false)"))


def _announce_retry(lowerer: PgFnLowerer, policy: RetryPolicy) -> None:
    """application_name says which attempt runs, as V$SESSION's ACTION does on Oracle
    (pg_stat_activity shows it; NAMEDATALEN - 1 = 63 bytes are kept)."""
    label = f"/{policy.attempts} {lowerer.fn.decl.name}"
    lowerer.emit(
        plsql.Exec(
            "PERFORM set_config('application_name', left(concat('retry ', "
            f"{naming.ATTEMPT_VARIABLE} + 1, {quote_text(label)}), 63), false)"
        )
    )


def lower_transaction_retry(lowerer: PgFnLowerer, policy: RetryPolicy) -> None:
    """`scope = "transaction"`: a PROCEDURE whose attempts are transactions of their own.

    Each attempt runs in a BEGIN ... EXCEPTION block; a retryable error ends it, then ROLLBACK
    ends the whole transaction (its snapshot, its locks, the waits of others) before the
    sleep. The successful attempt leaves the loop and COMMITs after it: "A transaction cannot
    be ended inside a block with exception handlers" (PostgreSQL 15 docs, 43.8 "Transaction
    Management"), so a serialization failure raised by that COMMIT itself is not retried.
    SET TRANSACTION must come first in its transaction: after a ROLLBACK. Called inside a
    client's transaction block, the procedure's COMMIT fails (invalid_transaction_termination):
    it refuses to run inside a caller's transaction, as on Oracle.
    """
    attempt = naming.ATTEMPT_VARIABLE
    lowerer.declarations.append(f"{attempt} integer := 0;")
    recovering = "l_pell_recover"
    if policy.recover is not None:
        lowerer.declarations.append(f"{recovering} boolean := FALSE;")
    _refuse_open_transaction(lowerer)
    deadline = _deadline(lowerer, policy)
    lowerer.returns_into = RESULT_PARAMETER if lowerer.fn.is_function else ""
    lowerer.return_exit = ATTEMPTS_LABEL
    saved = _saved_parameters(lowerer)
    if policy.observe:
        _save_application(lowerer)
    sleep = sleep_expression(policy)
    if deadline is not None and sleep is not None:
        lowerer.declarations.append("l_pell_sleep numeric;")
    waited = "l_pell_sleep" if deadline is not None and sleep is not None else sleep

    def on_retryable() -> None:
        lowerer.emit(plsql.CountAttempt(attempt))
        for name, copy in saved:
            lowerer.emit(plsql.Assign(name, copy))
        if deadline is not None and sleep is not None:
            lowerer.emit(plsql.Assign("l_pell_sleep", sleep))
        if policy.recover is None:
            give_up: list[plsql.Stmt] = [lowerer.at(plsql.Raise())]
        else:
            give_up = [lowerer.at(plsql.SetFlag(recovering)), lowerer.at(plsql.Exit(ATTEMPTS_LABEL))]
        exhausted = _exhausted(policy, deadline, waited)
        lowerer.emit(plsql.If([plsql.Branch(exhausted, give_up)]))

    def one_attempt() -> None:
        if policy.isolation is not None:
            lowerer.emit(plsql.Comment("SET TRANSACTION comes first in a transaction"))
            lowerer.emit(plsql.Rollback())
            lowerer.emit(plsql.SetTransaction(ISOLATION_LEVELS[policy.isolation]))
        statements = lowerer.collect(lambda: _reset_out_parameters(lowerer))
        statements += lowerer.nested(lowerer.fn.decl.body)
        if lowerer.analysis.falls_through:
            statements.append(lowerer.at(plsql.Exit(ATTEMPTS_LABEL)))
        lowerer.emit(plsql.Block(statements, _handlers(lowerer, policy, on_retryable)))
        lowerer.emit(plsql.Comment("the failed attempt's transaction: its locks and snapshot"))
        lowerer.emit(plsql.Rollback())
        if policy.observe:
            # after the ROLLBACK, which would undo a setting made before it; an error that
            # ends the call rolls back the transaction holding this, restoring the old name
            _announce_retry(lowerer, policy)
        if waited is not None:
            lowerer.emit(plsql.Sleep("PERFORM pg_sleep", waited))

    lowerer.emit(plsql.RetryLoop(lowerer.collect(one_attempt), label=ATTEMPTS_LABEL))
    if policy.recover is not None:

        def recover() -> None:
            lowerer.emit(plsql.Rollback())
            _recover_call(lowerer, policy)

        lowerer.emit(plsql.If([plsql.Branch(plsql.FlagSet(recovering), lowerer.collect(recover))]))
    if policy.observe:
        _restore_application(lowerer)
    lowerer.emit(plsql.Commit())


def _refuse_open_transaction(lowerer: PgFnLowerer) -> None:
    """As on Oracle (pell.codegen.retry_loop): pellc's own error when the caller's transaction
    has already written. A DO block or a procedure that CALLs this one may do DML first, and
    the first attempt's COMMIT would commit that work, a retry's ROLLBACK undo it."""
    message = (
        f"{lowerer.checked.module.dotted_name}.{lowerer.fn.decl.name}: "
        '@retry(scope = "transaction") starts its own transaction, but one is already '
        "open; commit or roll back before calling it"
    )
    state = f"pell_runtime.{naming.TRANSACTION_OPEN}()"
    refuse = lowerer.at(plsql.RaiseError(state, quote_text(message)))
    lowerer.emit(plsql.If([plsql.Branch(plsql.TransactionOpen(postgres=True), [refuse])]))


def _saved_parameters(lowerer: PgFnLowerer) -> list[tuple[str, str]]:
    """(parameter, its copy) for each `inout` parameter, saved before the first attempt: a
    subtransaction's rollback does not restore variables ("the local variables of the PL/pgSQL
    function remain as they were when the error occurred"), so each retry restores them."""
    saved = []
    for param in lowerer.fn.params:
        if param.decl.mode == "inout":
            name = naming.param_name(param.decl.name)
            copy = naming.saved_param_name(name)
            lowerer.declarations.append(f"{copy} {lowerer.sql_type(param.type)};")
            lowerer.emit(plsql.Assign(copy, name))
            saved.append((name, copy))
    return saved


def _reset_out_parameters(lowerer: PgFnLowerer) -> None:
    """An attempt must not see what a failed one left in an `out` parameter."""
    for param in lowerer.fn.params:
        if param.decl.mode == "out":
            lowerer.emit(plsql.Assign(naming.param_name(param.decl.name), "NULL"))


def _handlers(
    lowerer: PgFnLowerer, policy: RetryPolicy, on_retryable: Callable[[], None]
) -> list[plsql.Handler]:
    """WHEN <conditions> THEN retry; WHEN OTHERS for the Pell errors `on` names, by SQLSTATE
    (numbered by the build: the runtime schema names them); anything else propagates."""
    classes = [c for c in policy.on if c in CONDITIONS]
    conditions: list[str] = []
    for name in classes or ([] if policy.on else ["*"]):
        for condition in CONDITIONS.get(name, RETRIED_BY_DEFAULT):
            if condition not in conditions:
                conditions.append(condition)
    handlers = []
    if conditions:
        names = [plsql.ExceptionName(c, sqlstate=SQLSTATES[c]) for c in conditions]
        handlers.append(plsql.Handler(names, lowerer.collect(on_retryable)))
    errors = pell_errors_on(policy, lowerer.checked.module.path)
    if errors:
        states = [f"pell_runtime.{naming.exception_name(path, error)}()" for path, error in errors]
        others = plsql.NotPellError(
            tuple(errors), f"SQLSTATE <> ALL (ARRAY[{', '.join(states)}])"
        )
        not_retried = plsql.If([plsql.Branch(others, [lowerer.at(plsql.Raise())])])
        handlers.append(
            plsql.Handler([plsql.OTHERS], [lowerer.at(not_retried), *lowerer.collect(on_retryable)])
        )
    return handlers
