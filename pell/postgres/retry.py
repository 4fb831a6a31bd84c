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

from pell import naming
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

SQLSTATES = {
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
    if policy.observe:
        # every way out restores application_name: a `return` leaves the loop by its label
        # and returns after it
        _save_application(lowerer)
        lowerer.return_exit = ATTEMPTS_LABEL
        if lowerer.fn.is_function and not lowerer.returns_into:
            lowerer.declarations.append(
                f"{RESULT_VARIABLE} {lowerer.sql_type(lowerer.fn.returns)};"
            )
            lowerer.returns_into = RESULT_VARIABLE

    def on_retryable() -> None:
        lowerer.line(f"{attempt} := {attempt} + 1;")
        for name, copy in saved:
            lowerer.line(f"{name} := {copy};")
        sleep = _sleep_and_deadline(lowerer, policy, deadline)
        lowerer.line(f"IF {_exhausted(policy, deadline, sleep)} THEN")
        lowerer.indented(give_up)
        lowerer.line("END IF;")
        if policy.observe:
            _announce_retry(lowerer, policy)
        if sleep is not None:
            lowerer.line(f"PERFORM pg_sleep({sleep});")

    def give_up() -> None:
        if policy.recover is None:
            lowerer.line("RAISE;")  # the error's rollback restores application_name
            return
        if policy.observe:
            _restore_application(lowerer)
        for line in _recover_call(lowerer, policy):
            lowerer.line(line)
        lowerer.line("RETURN;" if not lowerer.fn.is_function or lowerer.returns_into == RESULT_PARAMETER else f"RETURN {RESULT_VARIABLE};")

    conditions, errors = _retried(lowerer, policy)
    if policy.observe:
        lowerer.line(f"<<{ATTEMPTS_LABEL}>>")
    lowerer.line("LOOP")

    def loop() -> None:
        lowerer.line("BEGIN")
        lowerer.indented(lambda: _reset_out_parameters(lowerer))
        lowerer.indented(lambda: lowerer.block(lowerer.fn.decl.body))
        if lowerer.analysis.falls_through:
            leave = f"EXIT {ATTEMPTS_LABEL};" if policy.observe else "EXIT;"
            lowerer.indented(lambda: lowerer.line(leave))
        _handlers(lowerer, conditions, errors, on_retryable)

    lowerer.indented(loop)
    lowerer.line("END LOOP;")
    if policy.observe:
        _restore_application(lowerer)
        if lowerer.fn.is_function and lowerer.returns_into == RESULT_VARIABLE:
            lowerer.line(f"RETURN {RESULT_VARIABLE};")


def _deadline(lowerer: PgFnLowerer, policy: RetryPolicy) -> str | None:
    if policy.within_ms is None:
        return None
    deadline = "l_pell_deadline"
    lowerer.declarations.append(f"{deadline} timestamptz;")
    lowerer.line(
        f"{deadline} := clock_timestamp() + "
        f"make_interval(secs => {format_seconds(policy.within_ms)});"
    )
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
    lowerer.line(f"l_pell_sleep := {sleep};")
    return "l_pell_sleep"


def _exhausted(policy: RetryPolicy, deadline: str | None, sleep: str | None) -> str:
    """Out of attempts, or (with `within`) the next sleep would pass the deadline."""
    exhausted = f"{naming.ATTEMPT_VARIABLE} >= {policy.attempts}"
    if deadline is not None and sleep is not None:
        exhausted += f" OR clock_timestamp() + make_interval(secs => {sleep}) > {deadline}"
    elif deadline is not None:
        exhausted += f" OR clock_timestamp() > {deadline}"
    return exhausted


def _recover_call(lowerer: PgFnLowerer, policy: RetryPolicy) -> list[str]:
    """`recover`, called with the fn's arguments; its value into the fn's result."""
    assert policy.recover is not None
    recover = lowerer.checked.fns[policy.recover]
    args = [naming.param_name(p.decl.name) for p in lowerer.fn.params]
    call = f"{lowerer.schema}.{naming.fn_name(policy.recover)}"
    result = lowerer.returns_into or RESULT_VARIABLE
    if lowerer.fn.is_function and result == RESULT_VARIABLE and not lowerer.returns_into:
        lowerer.declarations.append(f"{RESULT_VARIABLE} {lowerer.sql_type(lowerer.fn.returns)};")
    if is_procedure(recover):
        if recover.is_function:
            args.append(result)
        return [f"CALL {call}({', '.join(args)});"]
    if lowerer.fn.is_function:
        return [f"{result} := {call}({', '.join(args)});"]
    return [f"PERFORM {call}({', '.join(args)});"]


def _save_application(lowerer: PgFnLowerer) -> None:
    lowerer.declarations.append(f"{APPLICATION} text;")
    lowerer.line(f"{APPLICATION} := current_setting('application_name');")


def _restore_application(lowerer: PgFnLowerer) -> None:
    """On the ways out without an error. An error needs none: "The effects of SET or SET LOCAL
    are also canceled by rolling back to a savepoint that is earlier than the command", and by
    the rollback of the transaction (PostgreSQL 15 docs, SET), and set_config(..., false) is
    SET: whoever stops the error rolls back past this call's settings."""
    lowerer.line(f"PERFORM set_config('application_name', {APPLICATION}, false);")


def _announce_retry(lowerer: PgFnLowerer, policy: RetryPolicy) -> None:
    """application_name says which attempt runs, as V$SESSION's ACTION does on Oracle
    (pg_stat_activity shows it; NAMEDATALEN - 1 = 63 bytes are kept)."""
    label = f"/{policy.attempts} {lowerer.fn.decl.name}"
    lowerer.line(
        "PERFORM set_config('application_name', left(concat('retry ', "
        f"{naming.ATTEMPT_VARIABLE} + 1, {quote_text(label)}), 63), false);"
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
    deadline = _deadline(lowerer, policy)
    lowerer.returns_into = RESULT_PARAMETER if lowerer.fn.is_function else ""
    lowerer.return_exit = ATTEMPTS_LABEL
    saved = _saved_parameters(lowerer)
    if policy.observe:
        _save_application(lowerer)
    sleep = sleep_expression(policy)
    if deadline is not None and sleep is not None:
        lowerer.declarations.append("l_pell_sleep numeric;")

    def on_retryable() -> None:
        lowerer.line(f"{attempt} := {attempt} + 1;")
        for name, copy in saved:
            lowerer.line(f"{name} := {copy};")
        if deadline is not None and sleep is not None:
            lowerer.line(f"l_pell_sleep := {sleep};")
        waited = "l_pell_sleep" if deadline is not None and sleep is not None else sleep
        lowerer.line(f"IF {_exhausted(policy, deadline, waited)} THEN")
        if policy.recover is None:
            lowerer.indented(lambda: lowerer.line("RAISE;"))
        else:
            lowerer.indented(lambda: lowerer.line(f"{recovering} := TRUE;"))
            lowerer.indented(lambda: lowerer.line(f"EXIT {ATTEMPTS_LABEL};"))
        lowerer.line("END IF;")

    conditions, errors = _retried(lowerer, policy)
    lowerer.line(f"<<{ATTEMPTS_LABEL}>>")
    lowerer.line("LOOP")

    def loop() -> None:
        if policy.isolation is not None:
            lowerer.line("ROLLBACK;  -- SET TRANSACTION comes first in a transaction")
            lowerer.line(f"SET TRANSACTION ISOLATION LEVEL {ISOLATION_LEVELS[policy.isolation]};")
        lowerer.line("BEGIN")
        lowerer.indented(lambda: _reset_out_parameters(lowerer))
        lowerer.indented(lambda: lowerer.block(lowerer.fn.decl.body))
        if lowerer.analysis.falls_through:
            lowerer.indented(lambda: lowerer.line(f"EXIT {ATTEMPTS_LABEL};"))
        _handlers(lowerer, conditions, errors, on_retryable)
        lowerer.line("ROLLBACK;  -- the failed attempt's transaction: its locks and snapshot")
        if policy.observe:
            # after the ROLLBACK, which would undo a setting made before it; an error that
            # ends the call rolls back the transaction holding this, restoring the old name
            _announce_retry(lowerer, policy)
        if sleep is not None:
            waited = "l_pell_sleep" if deadline is not None else sleep
            lowerer.line(f"PERFORM pg_sleep({waited});")

    lowerer.indented(loop)
    lowerer.line("END LOOP;")
    if policy.recover is not None:
        lowerer.line(f"IF {recovering} THEN")

        def recover() -> None:
            lowerer.line("ROLLBACK;")
            for line in _recover_call(lowerer, policy):
                lowerer.line(line)

        lowerer.indented(recover)
        lowerer.line("END IF;")
    if policy.observe:
        _restore_application(lowerer)
    lowerer.line("COMMIT;")


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
            lowerer.line(f"{copy} := {name};")
            saved.append((name, copy))
    return saved


def _reset_out_parameters(lowerer: PgFnLowerer) -> None:
    """An attempt must not see what a failed one left in an `out` parameter."""
    for param in lowerer.fn.params:
        if param.decl.mode == "out":
            lowerer.line(f"{naming.param_name(param.decl.name)} := NULL;")


def _retried(lowerer: PgFnLowerer, policy: RetryPolicy) -> tuple[list[str], list[str]]:
    """The condition names a retry catches, and the Pell errors' SQLSTATE functions."""
    classes = [c for c in policy.on if c in CONDITIONS]
    conditions: list[str] = []
    for name in classes or ([] if policy.on else ["*"]):
        for condition in CONDITIONS.get(name, RETRIED_BY_DEFAULT):
            if condition not in conditions:
                conditions.append(condition)
    errors = [
        f"pell_runtime.{naming.exception_name(path, error)}()"
        for path, error in pell_errors_on(policy, lowerer.checked.module.path)
    ]
    return conditions, errors


def _handlers(
    lowerer: PgFnLowerer,
    conditions: list[str],
    errors: list[str],
    on_retryable: Callable[[], None],
) -> None:
    """EXCEPTION WHEN <conditions> THEN ..., WHEN OTHERS for Pell errors by SQLSTATE; END;"""
    lowerer.line("EXCEPTION")
    if conditions:
        lowerer.indented(lambda: lowerer.line(f"WHEN {' OR '.join(conditions)} THEN"))
        lowerer.indented(lambda: lowerer.indented(on_retryable))

    def not_retried() -> None:
        lowerer.line("RAISE;")

    if errors:

        def pell_errors() -> None:
            lowerer.line("WHEN OTHERS THEN")
            lowerer.indented(
                lambda: lowerer.line(f"IF SQLSTATE <> ALL (ARRAY[{', '.join(errors)}]) THEN")
            )
            lowerer.indented(lambda: lowerer.indented(not_retried))
            lowerer.indented(lambda: lowerer.line("END IF;"))
            lowerer.indented(on_retryable)

        lowerer.indented(pell_errors)
    lowerer.line("END;")
