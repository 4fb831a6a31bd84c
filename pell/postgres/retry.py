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

from typing import TYPE_CHECKING

from pell import naming
from pell.retry import RetryPolicy, format_seconds, pell_errors_on

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


def lower_retry(lowerer: PgFnLowerer) -> None:
    policy = lowerer.fn.retry
    assert policy is not None
    if policy.scope == "transaction":
        raise lowerer.unsupported('@retry(scope = "transaction")', lowerer.fn.decl.name_span)
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

    def on_retryable() -> None:
        lowerer.line(f"{attempt} := {attempt} + 1;")
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

    lowerer.line("LOOP")

    def loop() -> None:
        lowerer.line("BEGIN")
        lowerer.indented(lambda: lowerer.block(lowerer.fn.decl.body))
        if lowerer.analysis.falls_through:
            lowerer.indented(lambda: lowerer.line("EXIT;"))
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

    lowerer.indented(loop)
    lowerer.line("END LOOP;")
