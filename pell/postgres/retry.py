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
from pell.retry import ISOLATION_LEVELS, RetryPolicy, format_seconds, pell_errors_on

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
    """Seconds to sleep after the attempt-th failure: the Oracle target's formula
    (pell.retry.sleep_expression), with random() for DBMS_RANDOM.VALUE."""
    if policy.backoff_ms <= 0:
        return None
    expression = format_seconds(policy.backoff_ms)
    if policy.exponential:
        expression += f" * power(2, {naming.ATTEMPT_VARIABLE} - 1)"
    if policy.jitter_factor:
        expression += " * (0.75 + random() * 0.5)"
    elif policy.jitter_ms > 0:
        expression += f" + random() * {format_seconds(policy.jitter_ms)}"
    if policy.cap_ms is not None:
        expression = f"least({expression}, {format_seconds(policy.cap_ms)})"
    return expression


RESULT_PARAMETER = "p_pell_result"  # the OUT parameter of a transaction-scoped fn's value
ATTEMPTS_LABEL = "pell_attempts"


def lower_retry(lowerer: PgFnLowerer) -> None:
    policy = lowerer.fn.retry
    assert policy is not None
    if policy.scope == "transaction":
        lower_transaction_retry(lowerer, policy)
        return
    if policy.observe:
        raise lowerer.unsupported("@retry(observe = true)", lowerer.fn.decl.name_span)
    attempt = naming.ATTEMPT_VARIABLE
    lowerer.declarations.append(f"{attempt} integer := 0;")
    deadline = "l_pell_deadline"
    if policy.within_ms is not None:
        lowerer.declarations.append(f"{deadline} timestamptz;")
        lowerer.line(
            f"{deadline} := clock_timestamp() + "
            f"make_interval(secs => {format_seconds(policy.within_ms)});"
        )

    saved = _saved_parameters(lowerer)

    def on_retryable() -> None:
        lowerer.line(f"{attempt} := {attempt} + 1;")
        for name, copy in saved:
            lowerer.line(f"{name} := {copy};")
        sleep = sleep_expression(policy)
        exhausted = f"{attempt} >= {policy.attempts}"
        if policy.within_ms is not None:
            if sleep is not None:
                if "l_pell_sleep numeric;" not in lowerer.declarations:
                    lowerer.declarations.append("l_pell_sleep numeric;")
                lowerer.line(f"l_pell_sleep := {sleep};")
                sleep = "l_pell_sleep"
                exhausted += (
                    f" OR clock_timestamp() + make_interval(secs => {sleep}) > {deadline}"
                )
            else:
                exhausted += f" OR clock_timestamp() > {deadline}"
        lowerer.line(f"IF {exhausted} THEN")
        lowerer.indented(give_up)
        lowerer.line("END IF;")
        if sleep is not None:
            lowerer.line(f"PERFORM pg_sleep({sleep});")

    def give_up() -> None:
        if policy.recover is None:
            lowerer.line("RAISE;")
            return
        args = ", ".join(naming.param_name(p.decl.name) for p in lowerer.fn.params)
        call = f"{lowerer.schema}.{naming.fn_name(policy.recover)}({args})"
        if lowerer.fn.is_function:
            lowerer.line(f"RETURN {call};")
        else:
            lowerer.line(f"PERFORM {call};")
            lowerer.line("RETURN;")

    conditions, errors = _retried(lowerer, policy)

    lowerer.line("LOOP")

    def loop() -> None:
        lowerer.line("BEGIN")
        lowerer.indented(lambda: _reset_out_parameters(lowerer))
        lowerer.indented(lambda: lowerer.block(lowerer.fn.decl.body))
        if lowerer.analysis.falls_through:
            lowerer.indented(lambda: lowerer.line("EXIT;"))
        _handlers(lowerer, conditions, errors, on_retryable)

    lowerer.indented(loop)
    lowerer.line("END LOOP;")


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
    if policy.observe:
        raise lowerer.unsupported("@retry(observe = true)", lowerer.fn.decl.name_span)
    attempt = naming.ATTEMPT_VARIABLE
    lowerer.declarations.append(f"{attempt} integer := 0;")
    recovering = "l_pell_recover"
    if policy.recover is not None:
        lowerer.declarations.append(f"{recovering} boolean := FALSE;")
    deadline = "l_pell_deadline"
    if policy.within_ms is not None:
        lowerer.declarations.append(f"{deadline} timestamptz;")
        lowerer.line(
            f"{deadline} := clock_timestamp() + "
            f"make_interval(secs => {format_seconds(policy.within_ms)});"
        )
    lowerer.returns_into = RESULT_PARAMETER if lowerer.fn.is_function else ""
    lowerer.return_exit = ATTEMPTS_LABEL

    sleep = sleep_expression(policy)
    exhausted = f"{attempt} >= {policy.attempts}"
    if policy.within_ms is not None:
        if sleep is not None:
            lowerer.declarations.append("l_pell_sleep numeric;")
            exhausted += f" OR clock_timestamp() + make_interval(secs => l_pell_sleep) > {deadline}"
        else:
            exhausted += f" OR clock_timestamp() > {deadline}"

    saved = _saved_parameters(lowerer)

    def on_retryable() -> None:
        lowerer.line(f"{attempt} := {attempt} + 1;")
        for name, copy in saved:
            lowerer.line(f"{name} := {copy};")
        if policy.within_ms is not None and sleep is not None:
            lowerer.line(f"l_pell_sleep := {sleep};")
        lowerer.line(f"IF {exhausted} THEN")
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
        if sleep is not None:
            lowerer.line(f"PERFORM pg_sleep({'l_pell_sleep' if policy.within_ms is not None else sleep});")

    lowerer.indented(loop)
    lowerer.line("END LOOP;")
    if policy.recover is not None:
        args = ", ".join(naming.param_name(p.decl.name) for p in lowerer.fn.params)
        call = f"{lowerer.schema}.{naming.fn_name(policy.recover)}({args})"
        lowerer.line(f"IF {recovering} THEN")

        def recover() -> None:
            lowerer.line("ROLLBACK;")
            if lowerer.fn.is_function:
                lowerer.line(f"{RESULT_PARAMETER} := {call};")
            else:
                lowerer.line(f"PERFORM {call};")

        lowerer.indented(recover)
        lowerer.line("END IF;")
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
    if errors:

        def pell_errors() -> None:
            lowerer.line("WHEN OTHERS THEN")
            lowerer.indented(
                lambda: lowerer.line(f"IF SQLSTATE <> ALL (ARRAY[{', '.join(errors)}]) THEN")
            )
            lowerer.indented(lambda: lowerer.indented(lambda: lowerer.line("RAISE;")))
            lowerer.indented(lambda: lowerer.line("END IF;"))
            lowerer.indented(on_retryable)

        lowerer.indented(pell_errors)
    lowerer.line("END;")
