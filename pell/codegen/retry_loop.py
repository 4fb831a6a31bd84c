"""A retried fn's body as the retry unit (retry.md section 1): the loop of attempts, each
rolled back on a retryable error, panics bypassed, a bounded, jittered sleep between them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pell import naming, plsql
from pell.codegen.expressions import quote_text
from pell.codegen.types import plsql_type
from pell.oracle_errors import ERROR_CLASSES
from pell.retry import (
    ISOLATION_LEVELS,
    RetryPolicy,
    format_seconds,
    pell_errors_on,
    sleep_expression,
)

if TYPE_CHECKING:
    from pell.codegen.subprograms import FnLowerer

SLEEP_PROCEDURES = {
    "23ai": "DBMS_SESSION.SLEEP",
    "19c": "DBMS_SESSION.SLEEP",
    "12.2": "DBMS_LOCK.SLEEP",
}


def lower_retry_loop(lowerer: FnLowerer) -> None:
    """The body as the retry unit (retry.md section 1): each attempt rolled back on a
    retryable error (to this fn's own savepoint, or the whole transaction), panics bypassed,
    a bounded, jittered sleep. Every path out of the handler rolls back first."""
    policy = lowerer.fn.retry
    assert policy is not None
    declare = lowerer.retry_declarations
    params = [(naming.param_name(p.decl.name), p) for p in lowerer.fn.params]
    inout = [(name, p) for name, p in params if p.decl.mode == "inout"]
    out = [(name, p) for name, p in params if p.decl.mode == "out"]
    transaction = policy.scope == "transaction"
    savepoint = naming.savepoint_name(
        lowerer.fn.module_path, lowerer.fn.decl.name, naming.MAX_IDENTIFIER_BYTES[lowerer.target]
    )

    def restore_action() -> list[plsql.Stmt]:
        if not policy.observe:
            return []
        return [
            lowerer.at(plsql.Exec(f"DBMS_APPLICATION_INFO.SET_ACTION({naming.ACTION_VARIABLE})"))
        ]

    def rollback() -> plsql.Stmt:
        # Savepoint scope: ROLLBACK TO undoes this attempt only; the savepoint stays, so
        # every later attempt rolls back to it again. Transaction scope: a full ROLLBACK,
        # which also ends the waits of sessions queued on this transaction and drops its
        # snapshot.
        return lowerer.at(plsql.Rollback() if transaction else plsql.RollbackTo(savepoint))

    if transaction:
        message = (
            f"{lowerer.checked.module.dotted_name}.{lowerer.fn.decl.name}: "
            '@retry(scope = "transaction") starts its own transaction, but one is already '
            "open; commit or roll back before calling it"
        )
        refuse = lowerer.at(
            plsql.RaiseError(naming.runtime_code(naming.TRANSACTION_OPEN), quote_text(message))
        )
        lowerer.emit(plsql.If([plsql.Branch(plsql.TransactionOpen(), [refuse])]))
    for name, param in inout:
        saved = naming.saved_param_name(name)
        declare.append(f"{saved} {plsql_type(param.type, 'local')};")
        lowerer.emit(plsql.Assign(saved, name))
    if policy.within_ms is not None:
        declare.append(f"{naming.DEADLINE_VARIABLE} TIMESTAMP WITH TIME ZONE;")
        lowerer.emit(
            plsql.Assign(
                naming.DEADLINE_VARIABLE,
                f"SYSTIMESTAMP + NUMTODSINTERVAL({format_seconds(policy.within_ms)}, 'SECOND')",
            )
        )
    if policy.observe:
        # V$SESSION's MODULE and ACTION columns are 64 bytes: what READ_MODULE may return.
        declare += [
            f"{naming.MODULE_VARIABLE} VARCHAR2(64);",
            f"{naming.ACTION_VARIABLE} VARCHAR2(64);",
        ]
        lowerer.emit(
            plsql.Exec(
                f"DBMS_APPLICATION_INFO.READ_MODULE({naming.MODULE_VARIABLE}, {naming.ACTION_VARIABLE})"
            )
        )

    def attempt() -> None:
        if policy.isolation is not None:
            # SET TRANSACTION must be the transaction's first statement; it lasts one
            # transaction.
            lowerer.emit(plsql.SetTransaction(ISOLATION_LEVELS[policy.isolation]))
        for name, param in out:
            # An attempt must not see what a failed one left in an OUT parameter.
            lowerer.emit(lowerer.reset(name, param.type))
        # Exit hooks run last-added first: COMMIT is added first so that it is the
        # attempt's last statement, with nothing after it that could fail and repeat
        # committed work.
        hooks: list[tuple[tuple[plsql.Stmt, ...], int]] = []
        if transaction:
            hooks.append(((plsql.Commit(),), 0))
        if policy.observe:
            hooks.append((tuple(restore_action()), 0))
        lowerer.exit_hooks += hooks
        lowerer.block(lowerer.fn.decl.body)
        if lowerer.analysis.falls_through:
            lowerer.run_exit_hooks(hooks)
            lowerer.emit(plsql.Exit())
        del lowerer.exit_hooks[len(lowerer.exit_hooks) - len(hooks) :]

    def retry() -> None:
        if not policy.on:
            # SQLCODE is read first, before any statement of the handler runs.
            panic = plsql.Branch(plsql.IsPanic(), [rollback(), *restore_action(), plsql.Raise()])
            lowerer.emit(plsql.If([panic], one_line=True))
        lowerer.emit(plsql.CountAttempt(naming.ATTEMPT_VARIABLE))
        lowerer.emit(rollback())
        for name, _ in inout:
            lowerer.emit(plsql.Assign(name, naming.saved_param_name(name)))
        giving_up = [*restore_action(), *give_up(lowerer, policy, rollback)]
        sleep = sleep_expression(policy)
        procedure = SLEEP_PROCEDURES[lowerer.target]
        deadline = None
        if policy.within_ms is not None and sleep is None:
            deadline = f"SYSTIMESTAMP > {naming.DEADLINE_VARIABLE}"
        elif policy.within_ms is not None and sleep is not None:
            # Give up rather than sleep past the deadline.
            declare.append(f"{naming.SLEEP_VARIABLE} NUMBER;")
            lowerer.emit(plsql.Assign(naming.SLEEP_VARIABLE, sleep))
            deadline = (
                f"SYSTIMESTAMP + NUMTODSINTERVAL({naming.SLEEP_VARIABLE}, 'SECOND') "
                f"> {naming.DEADLINE_VARIABLE}"
            )
            sleep = naming.SLEEP_VARIABLE
        exhausted = plsql.AttemptsExhausted(naming.ATTEMPT_VARIABLE, policy.attempts, deadline)
        lowerer.emit(plsql.If([plsql.Branch(exhausted, giving_up)], one_line=len(giving_up) == 1))
        if sleep is not None:
            if procedure == "DBMS_LOCK.SLEEP":
                lowerer.emit(
                    plsql.Comment(
                        "Oracle 12.2 has no DBMS_SESSION.SLEEP: the package owner needs "
                        "EXECUTE on DBMS_LOCK."
                    )
                )
            lowerer.emit(plsql.Sleep(procedure, sleep))
        if policy.observe:
            # DBMS_APPLICATION_INFO keeps 32 bytes of an action.
            label = f"/{policy.attempts} {lowerer.fn.decl.name}"
            lowerer.emit(
                plsql.Exec(
                    "DBMS_APPLICATION_INFO.SET_ACTION(SUBSTRB("
                    f"'retry ' || TO_CHAR({naming.ATTEMPT_VARIABLE} + 1) || {quote_text(label)}, 1, 32))"
                )
            )

    handlers = [plsql.Handler(retried_errors(lowerer, policy), lowerer.collect(retry))]
    if policy.on:
        # Errors outside `on` are not retried, but the attempt is still undone.
        undo = [rollback(), *restore_action(), lowerer.at(plsql.Raise())]
        handlers.append(plsql.Handler([plsql.OTHERS], undo))
    attempt_block = lowerer.at(plsql.Block(lowerer.collect(attempt), handlers))
    savepoint_mark = [] if transaction else [lowerer.at(plsql.Savepoint(savepoint))]
    lowerer.emit(plsql.RetryLoop([*savepoint_mark, attempt_block]))


def give_up(
    lowerer: FnLowerer, policy: RetryPolicy, rollback: Callable[[], plsql.Stmt]
) -> list[plsql.Stmt]:
    """When attempts or time run out, after the rollback: re-raise, or return what `recover`
    gives, its work committed in transaction scope and rolled back if it fails."""
    if policy.recover is None:
        return [lowerer.at(plsql.Raise())]
    args = ", ".join(naming.param_name(p.decl.name) for p in lowerer.fn.params)
    call = f"{naming.fn_name(policy.recover)}({args})" if args else naming.fn_name(policy.recover)
    calls = ((policy.recover,),)
    recover: list[plsql.Stmt] = []
    if lowerer.fn.is_function:
        lowerer.needs_result = True
        recover.append(lowerer.at(plsql.Assign(naming.RESULT_VARIABLE, call, calls)))
    else:
        recover.append(lowerer.at(plsql.Exec(call, calls)))
    if policy.scope == "transaction":
        recover.append(lowerer.at(plsql.Commit()))
    undo = plsql.Handler([plsql.OTHERS], [rollback(), lowerer.at(plsql.Raise())])
    finish = plsql.Return(naming.RESULT_VARIABLE if lowerer.fn.is_function else None)
    return [lowerer.at(plsql.Block(recover, [undo])), lowerer.at(finish)]


def retried_errors(lowerer: FnLowerer, policy: RetryPolicy) -> list[plsql.ExceptionName]:
    """OTHERS, or the named exceptions of `on = [...]`, declared as needed."""
    if not policy.on:
        return [plsql.OTHERS]
    names = []
    for name in policy.on:
        if name in ERROR_CLASSES:
            exception = naming.error_class_exception(name)
            code = ERROR_CLASSES[name][0]
            lowerer.retry_declarations += [
                f"{exception} EXCEPTION;",
                f"PRAGMA EXCEPTION_INIT({exception}, {code});",
            ]
            names.append(plsql.ExceptionName(exception, oracle_code=code))
    for module_path, error in pell_errors_on(policy, lowerer.checked.module.path):
        exception = naming.exception_name(module_path, error)
        names.append(
            plsql.ExceptionName(
                f"{naming.RUNTIME_PACKAGE}.{exception}", pell_error=(module_path, error)
            )
        )
    return names
