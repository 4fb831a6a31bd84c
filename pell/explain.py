"""`pellc explain`: what each retried fn will do, as a table a person reads or JSON a tool reads."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from pell import naming
from pell.checker.model import CheckedModule, FnInfo
from pell.diagnostics import SourceFile
from pell.oracle_errors import ERROR_CLASSES, NEVER_RETRY, PANIC_RANGE
from pell.records import record
from pell.retry import (
    ISOLATION_LEVELS,
    SAVEPOINT_CANNOT_CURE,
    RetryPolicy,
    ScheduledAttempt,
    cures,
    schedule,
)


@record
class RetryExplanation:
    fn: str
    line: int  # where the fn's name is, as `pellc verify` cites the fn
    column: int
    policy: RetryPolicy
    schedule: list[ScheduledAttempt]
    savepoint: str  # its own savepoint's name (savepoint scope)
    target: str = "23ai"

    @property
    def postgres(self) -> bool:
        return self.target == "postgres"

    @property
    def worst_case_sleep(self) -> Decimal:
        reachable = [row for row in self.schedule if row.within_deadline]
        return reachable[-1].cumulative_max

    def retries_on(self, module: str) -> list[str]:
        if self.postgres:
            return self._postgres_retries_on(module)
        if not self.policy.on:
            return [
                "every error except the never-retry set: @panic errors "
                f"({PANIC_RANGE[0]} .. {PANIC_RANGE[1]}) and {len(NEVER_RETRY)} Oracle codes "
                "(pell_is_panic)"
            ]
        described = []
        for name in self.policy.on:
            if name in ERROR_CLASSES:
                described.append(f"{name}: {ERROR_CLASSES[name][1]}")
            elif "::" in name:  # another module's, by its full path
                owner, _, error = name.rpartition("::")
                described.append(f"{error}: the Pell error {owner}.{error}")
            else:
                described.append(f"{name}: the Pell error {module}.{name}")
        return described

    def _postgres_retries_on(self, module: str) -> list[str]:
        from pell.postgres.retry import CONDITIONS, RETRIED_BY_DEFAULT, SQLSTATES

        if not self.policy.on:
            conditions = [f"{c} ({SQLSTATES[c]})" for c in RETRIED_BY_DEFAULT]
            return [", ".join(conditions) + "; no other SQLSTATE (docs/postgres.md)"]
        described = []
        for name in self.policy.on:
            if name in CONDITIONS:
                conditions = [f"{c} ({SQLSTATES[c]})" for c in CONDITIONS[name]]
                described.append(f"{name}: {', '.join(conditions)}")
            else:
                owner, _, error = name.rpartition("::")
                described.append(f"{error}: the Pell error {owner or module}.{error}")
        return described

    @property
    def scope_text(self) -> str:
        if self.postgres and self.policy.scope == "transaction":
            return (
                "transaction: a PROCEDURE; each attempt is a whole transaction (ROLLBACK on "
                "failure, COMMIT after the last), CALLed outside a transaction block"
            )
        if self.postgres:
            return (
                "savepoint: each attempt runs in a BEGIN ... EXCEPTION block, a subtransaction "
                "rolled back when the attempt fails"
            )
        if self.policy.scope == "transaction":
            return (
                "transaction: each attempt is a whole transaction (full ROLLBACK on failure, "
                "COMMIT on success); calling it inside an open transaction is an error"
            )
        return f"savepoint: each failed attempt rolls back to SAVEPOINT {self.savepoint}"

    @property
    def isolation_text(self) -> str | None:
        if self.policy.isolation is None:
            return None
        level = ISOLATION_LEVELS[self.policy.isolation]
        return f"each attempt starts with SET TRANSACTION ISOLATION LEVEL {level}"

    def cure_lines(self) -> tuple[list[str], list[str]]:
        """What its scope can cure, and what it retries but cannot cure, with why."""
        if self.postgres:
            return _postgres_cures(self.policy)
        curable, incurable = cures(self.policy)
        can = [f"{name} ({_ora(name)})" for name in curable]
        if not self.policy.on:
            can.append("other transient errors")
        cannot = [f"{name} ({_ora(name)}): {SAVEPOINT_CANNOT_CURE[name]}" for name in incurable]
        return can, cannot


def _postgres_cures(policy: RetryPolicy) -> tuple[list[str], list[str]]:
    """On PostgreSQL a subtransaction's rollback releases its waiters (docs/postgres.md), so a
    savepoint-scoped retry cures deadlocks and lock waits; not a serialization failure, whose
    snapshot stays until the transaction ends."""
    retried = [n for n in policy.on if n in ERROR_CLASSES] or ["deadlock", "serialization", "busy"]
    if policy.scope == "transaction":
        return retried, []
    cannot = {"serialization": "the transaction keeps the snapshot that failed to serialize"}
    return (
        [n for n in retried if n not in cannot],
        [f"{n}: {cannot[n]}" for n in retried if n in cannot],
    )


def _cure_names(item: RetryExplanation) -> tuple[list[str], list[str]]:
    if item.postgres:
        can, cannot = _postgres_cures(item.policy)
        return can, [reason.split(":")[0] for reason in cannot]
    return cures(item.policy)


def _ora(error_class: str) -> str:
    return f"ORA-{-ERROR_CLASSES[error_class][0]:05d}"


def explain(
    checked: CheckedModule, source: SourceFile, target: str = "23ai"
) -> list[RetryExplanation]:
    """One explanation per retried fn, in source order."""
    result = []
    limit = naming.MAX_IDENTIFIER_BYTES[target]
    for fn in checked.fns.values():
        if fn.retry is None:
            continue
        # the fn's name, where the verifier's summary places it too (the lowered
        # subprogram's origin): one fn, one location, in both commands
        line, column = source.line_col(fn.decl.name_span.start)
        savepoint = naming.savepoint_name(checked.module.path, fn.decl.name, limit)
        result.append(
            RetryExplanation(
                fn.decl.name, line, column, fn.retry, schedule(fn.retry), savepoint, target
            )
        )
    return result


def _seconds(value: Decimal) -> str:
    return f"{value:.3f}"


def render_text(explanations: list[RetryExplanation], checked: CheckedModule, path: str) -> str:
    module = checked.module.dotted_name
    blocks = []
    for item in explanations:
        policy = item.policy
        lines = [f"{item.fn}  ({path}:{item.line}:{item.column})"]
        annotation = _annotation(checked.fns[item.fn])
        lines.append(f"  {annotation}")
        lines.append(f"  scope     {item.scope_text}")
        if item.isolation_text is not None:
            lines.append(f"  isolation {item.isolation_text}")
        retries = item.retries_on(module)
        lines.append(f"  retries   {retries[0]}")
        lines += [f"            {more}" for more in retries[1:]]
        can, cannot = item.cure_lines()
        if can:
            lines.append(f"  cures     {', '.join(can)}")
        for index, reason in enumerate(cannot):
            lines.append(f"  {'cannot' if index == 0 else '':<8}  {reason}")
        if policy.within_ms is not None:
            lines.append(
                f"  deadline  {_seconds(Decimal(policy.within_ms) / 1000)} s for the whole call; "
                "no sleep may pass it"
            )
        if policy.recover is not None:
            lines.append(f"  recover   {policy.recover}(...) when the attempts run out")
        lines.append("")
        lines.append("  attempt  sleep before it (s)  worst case so far (s)")
        for row in item.schedule:
            sleep = (
                "-"
                if row.attempt == 1
                else f"{_seconds(row.sleep_min)} - {_seconds(row.sleep_max)}"
            )
            note = ""
            if not row.within_deadline:
                note = "  never reached: the deadline is past"
            elif policy.within_ms is not None and row.cumulative_max * 1000 > policy.within_ms:
                note = "  may be cut by the deadline"
            lines.append(f"  {row.attempt:<7}  {sleep:<19}  {_seconds(row.cumulative_max)}{note}")
        reachable = sum(1 for row in item.schedule if row.within_deadline)
        lines.append(
            f"  worst-case sleep: {_seconds(item.worst_case_sleep)} s over {reachable} attempts"
        )
        blocks.append("\n".join(lines))
    if not blocks:
        return f"{path}: no fn has @retry\n"
    return "\n\n".join(blocks) + "\n"


def _annotation(fn: FnInfo) -> str:
    """The @retry annotation as written (normalised spacing)."""
    annotation = fn.retry_annotation
    assert annotation is not None
    if not annotation.args:
        return "@retry"
    args = ", ".join(
        (f"{a.name}=" if a.name else "") + _source_text(a.value) for a in annotation.args
    )
    return f"@retry({args})"


def _source_text(value: Any) -> str:
    from pell import ast

    if isinstance(value, ast.NumberLit):
        return value.text
    if isinstance(value, ast.BoolLit):
        return "true" if value.value else "false"
    if isinstance(value, ast.Name):
        return value.text
    if isinstance(value, ast.StringLit):
        return '"' + "".join(p for p in value.parts if isinstance(p, str)) + '"'
    if isinstance(value, ast.ListLit):
        return "[" + ", ".join(_source_text(i) for i in value.items) + "]"
    if isinstance(value, ast.Unary):
        return value.op + _source_text(value.operand)
    return "..."


def render_json(explanations: list[RetryExplanation], checked: CheckedModule) -> dict[str, Any]:
    """`explain --json`: the module and one entry (fn_json) per retried fn."""
    return {"module": checked.module.dotted_name, "fns": [fn_json(e) for e in explanations]}


def fn_json(item: RetryExplanation) -> dict[str, Any]:
    """A retried fn as JSON: `explain --json`'s entry, and the fields of a `--format json`
    schedule line (docs/json.md)."""
    return {
        "name": item.fn,
        "line": item.line,
        "column": item.column,
        "attempts": item.policy.attempts,
        "scope": item.policy.scope,
        "savepoint": item.savepoint if item.policy.scope == "savepoint" else None,
        "isolation": item.policy.isolation,
        "target": item.target,
        "cures": _cure_names(item)[0],
        "cannot_cure": _cure_names(item)[1],
        "retries_on": list(item.policy.on)
        or (["40P01", "40001", "55P03"] if item.postgres else ["all-but-panics"]),
        "deadline_ms": item.policy.within_ms,
        "recover": item.policy.recover,
        "schedule": [
            {
                "attempt": row.attempt,
                "sleep_min_s": float(row.sleep_min),
                "sleep_max_s": float(row.sleep_max),
                "cumulative_max_s": float(row.cumulative_max),
                "within_deadline": row.within_deadline,
            }
            for row in item.schedule
        ],
        "worst_case_sleep_s": float(item.worst_case_sleep),
    }
