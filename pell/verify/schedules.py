"""Which fault schedules to run for one fn, and the findings they give.

A schedule is a fault plan (which statement or call of which attempt fails, with which error)
and a path (how each condition computed from values turns out). Per fn: the paths through its
conditions (bounded), and on each path the clean run; one failure of each kind at each site
of the first attempt; a retried failure, then each outcome of the second attempt; retried
failures up to the last attempt, then each outcome of the last.
"""

from __future__ import annotations

from pell import plsql
from pell.checker.retry_facts import committing_call
from pell.oracle_errors import ERROR_CLASSES, NEVER_RETRY, PANIC_RANGE
from pell.records import record
from pell.retry import RetryPolicy, pell_errors_on
from pell.verify.interpreter import Program, ProgramModule, Run, Violation
from pell.verify.model import Failure

MAX_PATHS = 16  # paths through a fn's conditions explored
MAX_RUNS = 1_500  # schedules per fn


@record
class FnVerdict:
    module: tuple[str, ...]
    fn: str
    origin: int
    schedules: int
    violations: tuple[Violation, ...]  # one per (code, location), the first schedule found


def failure_kinds(
    policy: RetryPolicy | None, module: ProgramModule, postgres: bool = False
) -> list[Failure]:
    """One error of each kind the policy tells apart, each one it names; the first is one it
    retries: each class and Pell error `on` names (a deadlock when none is), a class it leaves
    out, a never-retry code, the module's own error, a panic."""
    on = policy.on if policy is not None else ()
    # Every error the policy names is one it retries: each is injected, so a handler that
    # leaves one of them out is seen. Without `on`, a deadlock stands for all it retries.
    named, deadlock, outside, never, panic = (
        _postgres_kinds(on) if postgres else _oracle_kinds(on)
    )
    kinds = list(named)
    if policy is not None:
        kinds += [
            Failure(f"{'.'.join(path)}.{name}", pell_error=(path, name))
            for path, name in pell_errors_on(policy, module.path)
        ]
    if not kinds:
        kinds.append(deadlock)
    if outside is not None:
        kinds.append(outside)
    kinds.append(never)
    own = module_error(module, on)
    if own is not None:
        kinds.append(own)
    kinds.append(panic)
    return kinds


Kinds = tuple[list[Failure], Failure, Failure | None, Failure, Failure]


def _oracle_kinds(on: tuple[str, ...]) -> Kinds:
    def oracle(name: str) -> Failure:
        code, text = ERROR_CLASSES[name]
        return Failure(text, code=code)

    outside = [name for name in ERROR_CLASSES if name not in on] if on else []
    code, name, _ = NEVER_RETRY[0]
    return (
        [oracle(name) for name in on if name in ERROR_CLASSES],
        oracle("deadlock"),
        oracle(outside[0]) if outside else None,
        Failure(f"ORA-{-code:05d} {name}", code=code, never_retry=True),
        Failure("a panic", code=PANIC_RANGE[1], panic=True),
    )


def _postgres_kinds(on: tuple[str, ...]) -> Kinds:
    """By SQLSTATE (docs/postgres.md); with no `on`, 08006 is the class left out: a code in
    neither list of the allow-list."""
    from pell.postgres import sqlstate
    from pell.postgres.retry import CONDITIONS, SQLSTATES

    def state(condition: str) -> Failure:
        return Failure(f"{SQLSTATES[condition]} {condition}", sqlstate=SQLSTATES[condition])

    named = [c for name in on for c in CONDITIONS.get(name, ())]
    outside = [c for c in SQLSTATES if c not in named]
    left_out = state(outside[0]) if on and outside else None
    if not on:
        left_out = Failure("08006 connection_failure", sqlstate="08006")
    panic = sqlstate(PANIC_RANGE[1])
    return (
        [state(c) for c in dict.fromkeys(named)],
        state("deadlock_detected"),
        left_out,
        Failure("23505 unique_violation", sqlstate="23505", never_retry=True),
        Failure(f"a panic ({panic})", sqlstate=panic, panic=True),
    )


def module_error(module: ProgramModule, on: tuple[str, ...]) -> Failure | None:
    """One of the module's own Pell errors (not a panic, not one `on` names, if it can)."""
    names = [name for name in module.errors if name not in module.panics]
    if not names:
        return None
    preferred = [name for name in names if name not in on] or names
    name = preferred[0]
    return Failure(f"{'.'.join(module.path)}.{name}", pell_error=(module.path, name))


def verify_fn(program: Program, module: ProgramModule, subprogram: plsql.Subprogram) -> FnVerdict:
    policy = subprogram.retry
    kinds = failure_kinds(policy, module, program.postgres)
    retried = kinds[0]
    attempts = policy.attempts if policy is not None else 1
    # a transaction of its own: a transaction-scoped retry; on PostgreSQL also a PROCEDURE
    # with no retry, which is one because it commits (its `transaction { }` blocks, its
    # callees'): the client must CALL it in a transaction of its own [P5]
    transaction = policy is not None and policy.scope == "transaction"
    transaction = transaction or (
        program.postgres and policy is None and subprogram.transaction_control
    )
    found: dict[tuple[str, tuple[tuple[str, ...], int]], Violation] = {}
    runs = 0

    def run(plan: dict[int, tuple[int, Failure]], choices: list[int], opened: bool) -> Run:
        nonlocal runs
        runs += 1
        result = Run(program, plan, choices)
        result.call_top(module, subprogram, opened)
        for violation in result.violations:
            found.setdefault((violation.code, violation.at), violation)
        return result

    opened = not transaction  # a savepoint-scoped or plain fn is called inside work of its caller
    if transaction:
        run({}, [], True)  # called with a transaction open: it must refuse at once
    pending: list[list[int]] = [[]]
    paths = 0
    while pending and paths < MAX_PATHS and runs < MAX_RUNS:
        choices = pending.pop()
        paths += 1
        clean = run({}, choices, opened)
        # Paths not taken yet: each later choice point switched to its next option.
        for index in range(len(choices), len(clean.options)):
            taken = choices + [0] * (index - len(choices))
            for option in range(1, clean.options[index]):
                pending.append([*taken, option])
        sites = clean.sites.get(1, 0)
        plans: list[dict[int, tuple[int, Failure]]] = []
        for site in range(sites):
            for kind in kinds:
                plans.append({1: (site, kind)})
        if policy is not None and attempts >= 2 and sites:
            leading = {attempt: (0, retried) for attempt in range(1, attempts)}
            plans.append(leading)  # every attempt but the last fails: the last succeeds
            plans.append({**leading, attempts: (0, retried)})  # every attempt fails
            for site in range(sites):
                for kind in kinds:
                    plans.append({1: (0, retried), 2: (site, kind)})
                    if attempts > 2:
                        plans.append({**leading, attempts: (site, kind)})
        for plan in plans:
            if runs >= MAX_RUNS:
                break
            run(plan, choices, opened)
    return FnVerdict(module.path, subprogram.fn, subprogram.origin, runs, tuple(found.values()))


def needs_verifying(program: Program) -> list[tuple[ProgramModule, plsql.Subprogram]]:
    """Every retried fn, every fn with transaction control of its own (a `transaction { }`
    block, a COMMIT, ROLLBACK or SAVEPOINT, DDL, a procedure that commits), and every fn that
    calls one, through any depth, in any module."""
    targets: set[tuple[str, str]] = set()
    callers: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for module in program.modules.values():
        dotted = ".".join(module.path)
        for subprogram in module.subprograms.values():
            key = (dotted, subprogram.fn)
            if subprogram.retry is not None or controls_transaction(subprogram):
                targets.add(key)
            for path in calls_of(subprogram):
                resolved = program.resolve(module, path)
                if resolved is not None:
                    callee = (".".join(resolved[0].path), resolved[1].fn)
                    callers.setdefault(callee, set()).add(key)
                elif committing_call(tuple(part.lower() for part in path)) is not None:
                    targets.add(key)  # an Oracle procedure that commits (the model's `call`)
    queue = list(targets)
    while queue:
        for caller in callers.get(queue.pop(), ()):
            if caller not in targets:
                targets.add(caller)
                queue.append(caller)
    ordered = []
    for module in program.modules.values():
        dotted = ".".join(module.path)
        for subprogram in module.subprograms.values():
            if (dotted, subprogram.fn) in targets:
                ordered.append((module, subprogram))
    return ordered


_TRANSACTION_NODES = (plsql.Commit, plsql.Rollback, plsql.Savepoint, plsql.RollbackTo)
_TRANSACTION_VERBS = frozenset({"commit", "rollback", "savepoint"})


def controls_transaction(subprogram: plsql.Subprogram) -> bool:
    """Does the tree itself end the transaction or mark a savepoint: what the model's
    `transaction_sql`, `commit`, `rollback` and DDL rules act on?"""
    for stmt in _statements(subprogram):
        if isinstance(stmt, _TRANSACTION_NODES):
            return True
        if isinstance(stmt, plsql.Sql) and (
            stmt.verb in _TRANSACTION_VERBS or stmt.ends_transaction is not None
        ):
            return True
    return False


def _statements(subprogram: plsql.Subprogram) -> list[plsql.Stmt]:
    """The body's statements, its handlers' and its local procedures' (the `finally`
    cleanup)."""
    handlers = [stmt for handler in subprogram.handlers for stmt in handler.body]
    statements = plsql.walk(subprogram.body + handlers)
    for declaration in subprogram.declarations:
        if isinstance(declaration, plsql.LocalProcedure):
            statements += plsql.walk(declaration.body)
    return statements


def calls_of(subprogram: plsql.Subprogram) -> list[tuple[str, ...]]:
    found = [call for stmt in _statements(subprogram) for call in plsql.calls_in(stmt)]
    if subprogram.retry is not None and subprogram.retry.recover is not None:
        found.append((subprogram.retry.recover,))
    return found
