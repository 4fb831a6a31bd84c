"""@retry: annotation arguments -> RetryPolicy, the sleep expression, and the never-retry table."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from decimal import Decimal

from pell import ast
from pell.diagnostics import Diagnostic, Note

ATTEMPT_VARIABLE = "l_pell_attempt"

# Oracle error codes that retrying cannot cure: pell_is_panic() returns TRUE for them
# (and for the whole panic range), so the retry loop re-raises them at once.
NEVER_RETRY: tuple[tuple[int, str, str], ...] = (
    (-1476, "ZERO_DIVIDE", "programming error: division by zero"),
    (-6502, "VALUE_ERROR", "programming error: numeric or value error"),
    (-6592, "CASE_NOT_FOUND", "programming error: no CASE branch matched"),
    (-6500, "STORAGE_ERROR", "programming error: PL/SQL ran out of memory or memory is corrupt"),
    (-6501, "PROGRAM_ERROR", "programming error: PL/SQL internal error"),
    (-6504, "ROWTYPE_MISMATCH", "programming error: cursor variable row types differ"),
    (-1410, "invalid ROWID", "programming error: a ROWID that names no row"),
    (-1483, "invalid length for DATE or NUMBER bind", "programming error: a bad bind value"),
    (
        -4068,
        "package state discarded",
        "broken state: the package was recompiled under the session",
    ),
    (-4061, "package state invalidated", "broken state: the existing package state is invalid"),
    (-4065, "not executed, altered or dropped", "broken state: a stored procedure changed"),
    (-6508, "program unit not found", "broken state: a called program unit is missing"),
    (-600, "internal error", "crash: Oracle internal error"),
    (-7445, "exception encountered: core dump", "crash: Oracle process failure"),
    (-1, "DUP_VAL_ON_INDEX", "constraint: unique constraint violated"),
    (-1400, "cannot insert NULL", "constraint: NOT NULL violated on insert"),
    (-1407, "cannot update to NULL", "constraint: NOT NULL violated on update"),
    (-2290, "check constraint violated", "constraint: check constraint"),
    (-2291, "parent key not found", "constraint: foreign key, no parent"),
    (-2292, "child record found", "constraint: foreign key, children exist"),
    (-12899, "value too large for column", "data: the value does not fit the column"),
    (-1722, "INVALID_NUMBER", "data: text that is not a number"),
    (-1422, "TOO_MANY_ROWS", "data: a single-row fetch found several rows"),
    (-942, "table or view does not exist", "schema: a missing table or view"),
    (-904, "invalid identifier", "schema: a missing column"),
    (-1031, "insufficient privileges", "permission: a missing grant"),
    (-4030, "out of process memory", "resources: PGA memory exhausted"),
    (-4031, "unable to allocate shared memory", "resources: SGA memory exhausted"),
    (-1013, "user requested cancel", "cancellation: the user or a timeout cancelled the call"),
    (-28, "session killed", "cancellation: the session was killed"),
    (-40, "active time limit exceeded", "cancellation: Resource Manager call limit"),
    (-56735, "elapsed time limit exceeded", "cancellation: Resource Manager time limit"),
)

# Every @panic error gets a code in this range (language.md section 6).
PANIC_RANGE = (-20399, -20300)

_DEFAULT_ATTEMPTS = 3

# Accepted names -> canonical names (backoff_ms and cap_ms are public pell 0.1 spellings).
_ARGUMENT_NAMES = {
    "n": "n",
    "backoff": "backoff",
    "backoff_ms": "backoff",
    "jitter": "jitter",
    "exponential": "exponential",
    "cap": "cap",
    "cap_ms": "cap",
}
# Arguments of retry.md section 5, recognised but not lowered yet.
_LATER_ARGUMENTS = ("on", "scope", "within", "recover")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """What one `@retry(...)` asks for, in the compiler's terms."""

    attempts: int = _DEFAULT_ATTEMPTS
    backoff_ms: int = 0
    jitter_ms: int = 0
    jitter_factor: bool = False  # `jitter = true`: multiply the backoff by 0.75 .. 1.25
    exponential: bool = False
    cap_ms: int | None = None


def format_seconds(milliseconds: int) -> str:
    """Milliseconds as decimal seconds with at least one fractional digit: 100 -> 0.1, 2000 -> 2.0."""
    seconds = format((Decimal(milliseconds) / 1000).normalize(), "f")
    return seconds if "." in seconds else seconds + ".0"


def sleep_expression(policy: RetryPolicy, attempt: str = ATTEMPT_VARIABLE) -> str | None:
    """The SQL expression for the seconds to sleep after failed attempt `attempt`; None: no sleep."""
    if policy.backoff_ms <= 0:
        return None
    expression = format_seconds(policy.backoff_ms)
    if policy.exponential:
        expression += f" * POWER(2, {attempt} - 1)"
    if policy.jitter_factor:
        expression += " * (0.75 + DBMS_RANDOM.VALUE * 0.5)"
    elif policy.jitter_ms > 0:
        expression += f" + DBMS_RANDOM.VALUE(0, {format_seconds(policy.jitter_ms)})"
    if policy.cap_ms is not None:
        expression = f"LEAST({expression}, {format_seconds(policy.cap_ms)})"
    return expression


# ---- reading the annotation --------------------------------------------------


def _integer(value: ast.Expr) -> int | None:
    """The value of an integer literal, negative ones included; None for anything else."""
    if isinstance(value, ast.NumberLit) and "." not in value.text:
        return int(value.text)
    if isinstance(value, ast.Unary) and value.op == "-":
        inner = _integer(value.operand)
        return -inner if inner is not None else None
    return None


def _boolean(value: ast.Expr) -> bool | None:
    return value.value if isinstance(value, ast.BoolLit) else None


def policy_from_annotation(annotation: ast.Annotation) -> tuple[RetryPolicy, list[Diagnostic]]:
    """Read `@retry(...)`; bad arguments become diagnostics naming the argument and what it takes."""
    diagnostics: list[Diagnostic] = []
    seen: dict[str, ast.AnnotationArg] = {}
    values: dict[str, ast.AnnotationArg] = {}

    def error(message: str, arg: ast.AnnotationArg, *hints: str) -> None:
        diagnostics.append(Diagnostic.of("retry-argument", message, arg.span, hints=hints))

    for index, arg in enumerate(annotation.args):
        if arg.name is None:
            if index != 0:
                error(
                    "only the first @retry argument may be positional (it is `n`, the attempts)",
                    arg,
                    "name it: `backoff = 100`",
                )
                continue
            canonical = "n"
        elif arg.name in _LATER_ARGUMENTS:
            diagnostics.append(
                Diagnostic.of(
                    "unsupported", f"@retry argument `{arg.name}` is not supported yet", arg.span
                )
            )
            continue
        elif arg.name not in _ARGUMENT_NAMES:
            close = difflib.get_close_matches(arg.name, list(_ARGUMENT_NAMES), n=1)
            suggestion = f"; did you mean `{close[0]}`?" if close else ""
            error(
                f"unknown @retry argument `{arg.name}`{suggestion}",
                arg,
                "@retry takes n, backoff, jitter, exponential and cap",
            )
            continue
        else:
            canonical = _ARGUMENT_NAMES[arg.name]
        if canonical in seen:
            first = seen[canonical]
            diagnostics.append(
                Diagnostic.of(
                    "retry-argument",
                    f"@retry argument `{canonical}` is given twice",
                    arg.span,
                    notes=(Note("first given here", first.span),),
                )
            )
            continue
        seen[canonical] = arg
        values[canonical] = arg

    attempts = _DEFAULT_ATTEMPTS
    if "n" in values:
        arg = values["n"]
        number = _integer(arg.value)
        if number is None:
            error("@retry `n` must be a whole number of attempts (1 or more)", arg)
        elif number < 1:
            error(
                f"@retry `n` must be at least 1, not {number}: it counts every attempt, "
                "the first included",
                arg,
            )
        else:
            attempts = number

    def milliseconds(name: str) -> int | None:
        if name not in values:
            return None
        arg = values[name]
        number = _integer(arg.value)
        if number is None:
            error(f"@retry `{name}` takes whole milliseconds (0 or more)", arg)
            return None
        if number < 0:
            error(f"@retry `{name}` takes whole milliseconds (0 or more), not {number}", arg)
            return None
        return number

    backoff_given = milliseconds("backoff")
    backoff = backoff_given or 0
    cap = milliseconds("cap")

    jitter_ms = 0
    jitter_factor = False
    if "jitter" in values:
        arg = values["jitter"]
        flag = _boolean(arg.value)
        if flag is not None:
            jitter_factor = flag
        else:
            jitter_ms = milliseconds("jitter") or 0

    exponential = False
    if "exponential" in values:
        arg = values["exponential"]
        flag = _boolean(arg.value)
        if flag is None:
            error("@retry `exponential` takes `true` or `false`", arg)
        else:
            exponential = flag

    if cap is not None and "backoff" in values and cap < backoff:
        diagnostics.append(
            Diagnostic.of(
                "retry-argument",
                f"@retry `cap` ({cap} ms) is smaller than `backoff` ({backoff} ms): "
                "every sleep would be cut to the cap",
                values["cap"].span,
                notes=(Note("`backoff` is given here", values["backoff"].span),),
            )
        )

    # Only when backoff is validly absent or zero: a bad backoff has its own error already.
    if backoff == 0 and ("backoff" not in values or backoff_given is not None):
        for name in ("exponential", "jitter", "cap"):
            if name in values:
                diagnostics.append(
                    Diagnostic.of(
                        "retry-no-effect",
                        f"@retry `{name}` has no effect without a `backoff`: "
                        "the retries do not sleep",
                        values[name].span,
                        hints=("add `backoff = <ms>`, or remove this argument",),
                    )
                )

    policy = RetryPolicy(
        attempts=attempts,
        backoff_ms=backoff,
        jitter_ms=jitter_ms,
        jitter_factor=jitter_factor,
        exponential=exponential,
        cap_ms=cap,
    )
    return policy, diagnostics
