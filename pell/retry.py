"""@retry: annotation arguments -> RetryPolicy, the sleep expression, and the never-retry table."""

from __future__ import annotations

from decimal import Decimal

from pell import ast
from pell.diagnostics import Diagnostic, Note, has_errors
from pell.naming import ATTEMPT_VARIABLE
from pell.oracle_errors import ERROR_CLASSES
from pell.records import record

_DEFAULT_ATTEMPTS = 3
# More attempts than this is a loop, not a retry; it also bounds `pellc explain`'s table.
MAX_ATTEMPTS = 100


@record
class RetryArgument:
    """One argument @retry takes: the README and docs/retry.md print this table (a test keeps
    them equal), the reader accepts its names and aliases, and unknown names list it."""

    name: str
    meaning: str
    default: str
    aliases: tuple[str, ...] = ()  # other spellings accepted (public pell 0.1's)


RETRY_ARGUMENTS: tuple[RetryArgument, ...] = (
    RetryArgument("n", "total attempts, the first included; a whole number from 1 to 100", "3"),
    RetryArgument(
        "backoff",
        "base sleep between attempts, in milliseconds",
        "0: no sleep at all",
        ("backoff_ms",),
    ),
    RetryArgument(
        "jitter",
        "extra random sleep, uniform in [0, jitter] ms, added after the exponential factor",
        "0",
    ),
    RetryArgument(
        "exponential",
        "`true`: multiply the base by 2^(k-1) after the k-th failed attempt",
        "`false`",
    ),
    RetryArgument(
        "cap",
        "ceiling on the whole sleep in ms, applied after jitter; not below `backoff`",
        "none",
        ("cap_ms",),
    ),
    RetryArgument(
        "on",
        "retry only these error classes (`deadlock`, `serialization`, `busy`, `lock_timeout`, "
        "`snapshot_too_old`) and Pell errors, this module's (`Busy`) or an imported one's "
        "(`stock::Busy`)",
        "every error but panics",
    ),
    RetryArgument(
        "scope",
        '`"savepoint"`, or `"transaction"` for top-level entry points (full ROLLBACK/COMMIT)',
        '`"savepoint"`',
    ),
    RetryArgument(
        "isolation",
        '`"serializable"` or `"read_committed"`, set first in every attempt (transaction scope '
        "only)",
        "none",
    ),
    RetryArgument(
        "within",
        "a deadline in ms for the whole call; past it, the call gives up (through `recover` "
        "if given)",
        "none",
    ),
    RetryArgument(
        "recover",
        "a fn with the same signature, called after the rollback when attempts or time run out",
        "none",
    ),
    RetryArgument(
        "observe",
        "`true`: V$SESSION.ACTION shows `retry <k>/<n> <fn>` while retrying",
        "`false`",
    ),
)

# Accepted names -> canonical names.
_ARGUMENT_NAMES = {
    spelling: argument.name
    for argument in RETRY_ARGUMENTS
    for spelling in (argument.name, *argument.aliases)
}


def argument_table() -> str:
    """The Markdown table of @retry's arguments, as the README and docs/retry.md show it."""
    rows = [f"| `{a.name}` | {a.meaning} | {a.default} |" for a in RETRY_ARGUMENTS]
    return "\n".join(["| argument | meaning | default |", "|---|---|---|", *rows])


SCOPES = ("savepoint", "transaction")
# Error classes a savepoint-scoped retry cannot cure, and why (retry.md section 1b); a
# transaction-scoped retry cures every class.
SAVEPOINT_CANNOT_CURE = {
    "deadlock": "sessions waiting on this transaction keep waiting until it ends, so the "
    "deadlock forms again",
    "serialization": "the transaction keeps the snapshot that failed to serialize",
}


def cures(policy: RetryPolicy) -> tuple[list[str], list[str]]:
    """(error classes the policy retries that its scope can cure, those it cannot); with no
    `on`, every class."""
    classes = (
        [name for name in policy.on if name in ERROR_CLASSES] if policy.on else list(ERROR_CLASSES)
    )
    if policy.scope == "transaction":
        return classes, []
    return (
        [c for c in classes if c not in SAVEPOINT_CANNOT_CURE],
        [c for c in classes if c in SAVEPOINT_CANNOT_CURE],
    )


# `isolation = "..."` -> the level SET TRANSACTION names (transaction scope only).
ISOLATION_LEVELS = {"serializable": "SERIALIZABLE", "read_committed": "READ COMMITTED"}
# No single sleep between attempts may pass one hour (retry.md section 7).
MAX_SLEEP_MS = 3_600_000


@record
class RetryPolicy:
    """What one `@retry(...)` asks for, in the compiler's terms."""

    attempts: int = _DEFAULT_ATTEMPTS
    backoff_ms: int = 0
    jitter_ms: int = 0
    jitter_factor: bool = False  # `jitter = true`: multiply the backoff by 0.75 .. 1.25
    exponential: bool = False
    cap_ms: int | None = None
    on: tuple[str, ...] = ()  # error classes and Pell errors to retry; empty: all but panics
    scope: str = "savepoint"
    within_ms: int | None = None  # a deadline for the whole call
    recover: str | None = None  # fn called with the same arguments when attempts run out
    observe: bool = False  # DBMS_APPLICATION_INFO.SET_ACTION on each retry
    isolation: str | None = None  # a key of ISOLATION_LEVELS; transaction scope only

    def sleep_bounds(self, failed_attempt: int) -> tuple[Decimal, Decimal]:
        """(min, max) seconds slept after the `failed_attempt`-th failure (1-based)."""
        if self.backoff_ms <= 0:
            return Decimal(0), Decimal(0)
        base = Decimal(self.backoff_ms) / 1000
        if self.exponential:
            base *= 2 ** (failed_attempt - 1)
        low, high = base, base
        if self.jitter_factor:
            low, high = base * Decimal("0.75"), base * Decimal("1.25")
        elif self.jitter_ms > 0:
            high = base + Decimal(self.jitter_ms) / 1000
        if self.cap_ms is not None:
            cap = Decimal(self.cap_ms) / 1000
            low, high = min(low, cap), min(high, cap)
        return low, high


def pell_errors_on(
    policy: RetryPolicy, module_path: tuple[str, ...]
) -> list[tuple[tuple[str, ...], str]]:
    """The Pell errors `on` names, as (declaring module's path, error name): a bare name is the
    module's own; the checker rewrites another module's `alias::Error` as `a.b::Error`."""
    found = []
    for name in policy.on:
        if name in ERROR_CLASSES:
            continue
        module, _, error = name.rpartition("::")
        found.append((tuple(module.split(".")) if module else module_path, error))
    return found


@record
class ScheduledAttempt:
    """One attempt of a retried call: the sleep before it and the worst case so far."""

    attempt: int  # 1-based
    sleep_min: Decimal  # seconds slept just before this attempt (0 before the first)
    sleep_max: Decimal
    cumulative_max: Decimal  # worst-case sleep from the call's start to this attempt
    within_deadline: bool  # False: the deadline (`within`) is always past before it


def schedule(policy: RetryPolicy) -> list[ScheduledAttempt]:
    """The attempts a policy allows, with the sleep before each: what `pellc explain` prints."""
    rows = [ScheduledAttempt(1, Decimal(0), Decimal(0), Decimal(0), True)]
    cumulative_min = Decimal(0)
    cumulative_max = Decimal(0)
    deadline = Decimal(policy.within_ms) / 1000 if policy.within_ms is not None else None
    for attempt in range(2, policy.attempts + 1):
        low, high = policy.sleep_bounds(attempt - 1)
        cumulative_min += low
        cumulative_max += high
        reachable = deadline is None or cumulative_min <= deadline
        rows.append(ScheduledAttempt(attempt, low, high, cumulative_max, reachable))
    return rows


def first_sleep_past_limit(policy: RetryPolicy) -> tuple[int, Decimal] | None:
    """(failed attempt, its longest sleep) of the first sleep that could pass MAX_SLEEP_MS;
    None when none can. A `within` deadline of an hour or less bounds every sleep: the loop
    gives up rather than sleep past it."""
    if policy.backoff_ms <= 0 or (
        policy.within_ms is not None and policy.within_ms <= MAX_SLEEP_MS
    ):
        return None
    limit = Decimal(MAX_SLEEP_MS) / 1000
    # Sleeps grow with the attempt (or stay flat): walk until one passes the limit, stops
    # growing, or the last sleep (after attempt n - 1) is reached. An exponential schedule passes
    # an hour within about 22 doublings of 1 ms, so this loop stays short whatever `n` is.
    previous = None
    for failed in range(1, policy.attempts):
        high = policy.sleep_bounds(failed)[1]
        if high > limit:
            return failed, high
        if high == previous:
            return None
        previous = high
    return None


def format_seconds(milliseconds: int) -> str:
    """Milliseconds as decimal seconds with at least one fractional digit: 100 -> 0.1, 2000 -> 2.0."""
    seconds = format((Decimal(milliseconds) / 1000).normalize(), "f")
    return seconds if "." in seconds else seconds + ".0"


# How each target writes the schedule's pieces: a power, a least, a random value in [0, 1),
# and one in [0, j) (Oracle: DBMS_RANDOM.VALUE(low, high); PostgreSQL: random()).
SLEEP_FUNCTIONS = {
    "oracle": ("POWER", "LEAST", "DBMS_RANDOM.VALUE", "DBMS_RANDOM.VALUE(0, {})"),
    "postgres": ("power", "least", "random()", "random() * {}"),
}


def sleep_expression(
    policy: RetryPolicy, attempt: str = ATTEMPT_VARIABLE, dialect: str = "oracle"
) -> str | None:
    """The SQL expression for the seconds to sleep after failed attempt `attempt`; None: no sleep."""
    if policy.backoff_ms <= 0:
        return None
    power, least, unit, up_to = SLEEP_FUNCTIONS[dialect]
    expression = format_seconds(policy.backoff_ms)
    if policy.exponential:
        expression += f" * {power}(2, {attempt} - 1)"
    if policy.jitter_factor:
        expression += f" * (0.75 + {unit} * 0.5)"
    elif policy.jitter_ms > 0:
        expression += " + " + up_to.format(format_seconds(policy.jitter_ms))
    if policy.cap_ms is not None:
        expression = f"{least}({expression}, {format_seconds(policy.cap_ms)})"
    return expression


# ---- reading the annotation --------------------------------------------------


def _integer(value: ast.Expr) -> int | None:
    """The value of an integer literal, negative ones included; None for anything else. A
    literal of more than 18 digits is read as 10**18, past every limit, so it gets the
    argument's own "too large" error (Python's int() refuses 4,301 digits and more)."""
    if isinstance(value, ast.NumberLit) and "." not in value.text:
        digits = value.text.lstrip("0")
        return int(digits or "0") if len(digits) <= 18 else 10**18
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
        elif arg.name not in _ARGUMENT_NAMES:
            import difflib  # only for an unknown argument

            close = difflib.get_close_matches(arg.name, list(_ARGUMENT_NAMES), n=1)
            suggestion = f"; did you mean `{close[0]}`?" if close else ""
            error(
                f"unknown @retry argument `{arg.name}`{suggestion}",
                arg,
                "@retry takes "
                + ", ".join(a.name for a in RETRY_ARGUMENTS[:-1])
                + f" and {RETRY_ARGUMENTS[-1].name}",
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
        elif number > MAX_ATTEMPTS:
            shown = number if number < 10**18 else "more than 18 digits"
            error(
                f"@retry `n` is at most {MAX_ATTEMPTS} attempts, not {shown}",
                arg,
                "a failure that needs more attempts needs a cure, not a retry: "
                "see docs/retry.md, Which errors",
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

    on: list[str] = []
    if "on" in values:
        arg = values["on"]
        items = arg.value.items if isinstance(arg.value, ast.ListLit) else None
        if not items or not all(isinstance(i, ast.Name) and len(i.path) <= 2 for i in items):
            error(
                "@retry `on` takes a list of error classes and Pell errors: "
                "`on = [deadlock, serialization]`",
                arg,
                f"the classes are {', '.join(ERROR_CLASSES)}",
            )
        else:
            for item in items:
                assert isinstance(item, ast.Name)
                written = "::".join(item.path)  # `Busy`, or another module's `stock::Busy`
                if written in on:
                    diagnostics.append(
                        Diagnostic.of(
                            "retry-argument", f"`{written}` is listed twice in `on`", item.span
                        )
                    )
                on.append(written)

    scope = "savepoint"
    if "scope" in values:
        arg = values["scope"]
        value = arg.value
        parts = value.parts if isinstance(value, ast.StringLit) else ()
        if len(parts) == 1 and isinstance(parts[0], str) and parts[0] in SCOPES:
            scope = parts[0]
        else:
            error('@retry `scope` is "savepoint" (the default) or "transaction"', arg)

    within = None
    if "within" in values:
        within = milliseconds("within")
        if within == 0:
            error("@retry `within` takes a deadline in milliseconds, more than 0", values["within"])
            within = None

    recover = None
    if "recover" in values:
        arg = values["recover"]
        if isinstance(arg.value, ast.Name) and len(arg.value.path) == 1:
            recover = arg.value.path[0]
        else:
            error("@retry `recover` names a fn of this module: `recover = fallback`", arg)

    observe = False
    if "observe" in values:
        arg = values["observe"]
        flag = _boolean(arg.value)
        if flag is None:
            error("@retry `observe` takes `true` or `false`", arg)
        else:
            observe = flag

    isolation = None
    if "isolation" in values:
        arg = values["isolation"]
        value = arg.value
        parts = value.parts if isinstance(value, ast.StringLit) else ()
        if len(parts) == 1 and isinstance(parts[0], str) and parts[0] in ISOLATION_LEVELS:
            isolation = parts[0]
        else:
            error('@retry `isolation` is "serializable" or "read_committed"', arg)
        if scope != "transaction":
            error(
                '@retry `isolation` needs `scope = "transaction"`: SET TRANSACTION must be the '
                "first statement of a transaction, and a savepoint-scoped attempt runs inside "
                "the caller's",
                arg,
                'add `scope = "transaction"`, or remove `isolation`',
            )

    if scope == "savepoint" and "serialization" in on:
        diagnostics.append(
            Diagnostic.of(
                "retry-serialization-scope",
                "retrying `serialization` (ORA-08177) inside a savepoint cannot succeed: "
                "ROLLBACK TO SAVEPOINT keeps the transaction's snapshot",
                values["on"].span,
                hints=('add `scope = "transaction"` so each attempt starts a new transaction',),
            )
        )

    policy = RetryPolicy(
        attempts=attempts,
        backoff_ms=backoff,
        jitter_ms=jitter_ms,
        jitter_factor=jitter_factor,
        exponential=exponential,
        cap_ms=cap,
        on=tuple(on),
        scope=scope,
        within_ms=within,
        recover=recover,
        observe=observe,
        isolation=isolation,
    )
    # Oracle (2 Day Developer's Guide, "Rolling Back Transactions"): after ROLLBACK TO SAVEPOINT,
    # "Other transactions that have requested access to rows locked after the specified savepoint
    # must continue to wait until the transaction is either committed or rolled back." After
    # ORA-00060 the other session is still queued on us: a savepoint retry deadlocks again.
    if scope == "savepoint" and (not on or "deadlock" in on) and not has_errors(diagnostics):
        named = "deadlock" in on
        diagnostics.append(
            Diagnostic.of(
                "retry-deadlock-scope",
                (
                    "retrying `deadlock` (ORA-00060)"
                    if named
                    else "with no `on`, this retry also retries deadlocks (ORA-00060) and "
                    "serialization failures (ORA-08177)"
                )
                + ", which a rollback to a savepoint cannot cure: sessions waiting on this "
                "transaction keep waiting until it ends, so the deadlock forms again"
                + ("" if named else ", and the snapshot that failed stays"),
                values["on"].span if named else annotation.span,
                hints=(
                    'on an entry point, use `scope = "transaction"`: a full ROLLBACK ends the '
                    "waits; inside a caller's transaction, retry what a savepoint can cure: "
                    "`on = [busy, lock_timeout]`",
                ),
            )
        )
    too_long = first_sleep_past_limit(policy)
    if too_long is not None:
        failed, seconds = too_long
        diagnostics.append(
            Diagnostic.of(
                "retry-argument",
                f"@retry would sleep up to {format(seconds.normalize(), 'f')} s after attempt "
                f"{failed}; a single sleep may not pass {MAX_SLEEP_MS // 1000} s (one hour)",
                annotation.span,
                hints=(f"add `cap = {MAX_SLEEP_MS}` (or less), or allow fewer attempts",),
            )
        )
    return policy, diagnostics
