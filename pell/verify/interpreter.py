"""One run of a fn's PL/SQL statement tree against the session model, failing where a plan
says, and checking each retried call as it ends.

Values are not modelled: a condition computed from values is a choice the run is given
(`choices`, replayed on every attempt), a loop over values runs its body once or not at all.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pell import plsql
from pell.checker.retry_facts import committing_call
from pell.records import field, record, replace
from pell.retry import RetryPolicy, schedule
from pell.verify.model import Effect, Failure, Location, ModelError, Session
from pell.verify.properties import check_call, check_retry
from pell.verify.sleep import longest_sleep

# Packages whose work is outside the transaction: no rollback takes it back (docs/verify.md
# rule 7).
OUTSIDE_TRANSACTION = frozenset(
    {"dbms_output", "utl_http", "utl_file", "utl_smtp", "utl_tcp", "utl_mail", "dbms_pipe"}
)
# Packages that change only the session's own state, never data.
SESSION_ONLY = frozenset(
    {
        "dbms_application_info",
        "dbms_random",
        "dbms_utility",
        "dbms_session",
        "dbms_lock",
        "dbms_transaction",
        "utl_raw",
        "utl_url",
        "dbms_lob",
    }
)
DML_VERBS = frozenset({"insert", "update", "delete", "merge"})
MAX_CALL_DEPTH = 12  # deeper calls (recursion) are taken as doing nothing


@record
class Violation:
    code: str
    at: Location
    message: str
    log: tuple[tuple[str, Location | None], ...]


@record(frozen=False)
class ProgramModule:
    path: tuple[str, ...]
    imports: tuple[tuple[str, ...], ...]
    subprograms: dict[str, plsql.Subprogram]  # Pell fn name -> tree
    errors: tuple[str, ...]  # its Pell errors
    panics: frozenset[str]  # those that are @panic


class Program:
    """Every module compiled together, with calls resolved as the checker resolves them; for
    the postgres target, run under PostgreSQL's rules."""

    def __init__(self, modules: list[ProgramModule], postgres: bool = False) -> None:
        self.modules = {".".join(m.path): m for m in modules}
        self.postgres = postgres

    def resolve(
        self, module: ProgramModule, path: tuple[str, ...]
    ) -> tuple[ProgramModule, plsql.Subprogram] | None:
        if len(path) == 1:
            found = module.subprograms.get(path[0])
            return (module, found) if found is not None else None
        prefix = path[:-1]
        if len(prefix) == 1:
            imported = [i for i in module.imports if i[-1] == prefix[0]]
            prefix = imported[0] if len(imported) == 1 else prefix
        target = self.modules.get(".".join(prefix))
        if target is None or path[-1] not in target.subprograms:
            return None
        return target, target.subprograms[path[-1]]


class PlsqlError(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.label)
        self.failure = failure


class ReturnSignal(Exception):
    pass


class ExitSignal(Exception):
    def __init__(self, label: str = "") -> None:
        super().__init__(label)
        self.label = label  # PostgreSQL: the loop or block `EXIT label` leaves


class ContinueSignal(Exception):
    pass


class Abort(Exception):
    """The run cannot go on (a loop past its bound): its violation is already recorded."""


@record(frozen=False)
class Frame:
    module: ProgramModule
    subprogram: plsql.Subprogram
    call_id: int
    phase: int = 0  # a new phase per attempt and per retry handler entered
    passes: int = 0  # attempts started
    counter: int = 0  # what the loop's attempt variable holds
    flags: set[str] = field(default_factory=set)
    handling: list[Failure] = field(default_factory=list)
    caught: Failure | None = None  # what the attempt's handler caught, until the next attempt
    recovered: bool = False  # it called its `recover` fn
    assigned: dict[str, str] = field(default_factory=dict)  # variable -> text last assigned
    attempt_block: plsql.Block | None = None
    slept: Decimal = Decimal(0)
    opened_before: bool = False  # a transaction was open when it was called
    live_before: frozenset[int] = frozenset()  # serials of the caller's work standing then

    @property
    def policy(self) -> RetryPolicy | None:
        return self.subprogram.retry


class Run:
    """One call of one fn, under one fault plan: `plan[attempt] = (site, failure)` fails the
    site-th statement or call (counted from 0) of that attempt of the top call."""

    def __init__(
        self,
        program: Program,
        plan: dict[int, tuple[int, Failure]],
        choices: list[int],
    ) -> None:
        self.program = program
        self.plan = plan
        self.choices = choices
        self.options: list[int] = []  # how many options each choice point of attempt 1 had
        self.session = Session(program.postgres)
        self.log: list[tuple[str, Location | None]] = []
        self.violations: list[Violation] = []
        self.performed: list[Effect] = []
        self.frames: list[Frame] = []
        self.final: dict[int, tuple[int, bool]] = {}  # call id -> (last phase, returned)
        self.autonomous_calls: set[int] = set()
        self.top_attempt = 1
        self.sites: dict[int, int] = {}  # top attempt -> sites met
        self.choice_index = 0
        self.next_call = 0
        self.serial = 0
        self.repeated_effects: set[int] = set()  # reported already
        self.undone_by_sql: set[int] = set()  # rolled back by the fn's own SQL, on purpose

    # -- the top-level call

    def call_top(self, module: ProgramModule, subprogram: plsql.Subprogram, opened: bool) -> None:
        """Call `subprogram` as the client would; with `opened`, after work of the caller's own
        in an open transaction."""
        if opened:
            self.effect("the caller's earlier work", (module.path, subprogram.origin), True)
        if self.session.postgres:
            # the CALL or SELECT runs in a transaction: the client's block when it opened one
            self.session.current.snapshot = True
            self.session.client_block = opened
        first = self.serial
        try:
            self.invoke(module, subprogram, (module.path, subprogram.origin))
            self.note("the call returned")
        except PlsqlError as error:
            self.note(f"the call raised {error.failure.label}")
            if self.session.postgres:
                undone = self.session.abort()
                self.note(f"the transaction is aborted: {self.effects(undone)} undone")
                return
            undone = self.session.undo_call(first)
            if undone:
                self.note(f"the top-level call's work is undone: {self.effects(undone)}")
        except Abort:
            return

    # -- helpers

    def note(self, text: str, at: Location | None = None) -> None:
        depth = max(len(self.frames) - 1, 0)
        self.log.append(("  " * depth + text, at))

    def violation(self, code: str, at: Location, message: str) -> None:
        self.violations.append(Violation(code, at, message, tuple(self.log)))

    def effects(self, effects: list[Effect]) -> str:
        return ", ".join(f"{e.what} (#{e.serial})" for e in effects) or "nothing"

    def effect(self, what: str, at: Location, undoable: bool) -> None:
        frames = tuple((f.call_id, f.phase) for f in self.frames)
        effect = Effect(what, at, frames, undoable, self.serial)
        self.serial += 1
        self.performed.append(effect)
        self.session.record(effect)
        kept = "" if undoable else ", outside the transaction"
        if undoable and len(self.session.stack) > 1:
            kept = ", in an autonomous transaction"
        self.note(f"{what} (#{effect.serial}{kept})", at)

    def site(self, at: Location, what: str) -> None:
        """A statement or call that may fail: fail it if the plan says so."""
        index = self.sites.get(self.top_attempt, 0)
        self.sites[self.top_attempt] = index + 1
        fault = self.plan.get(self.top_attempt)
        if fault is not None and fault[0] == index:
            failure = replace(fault[1], at=at)
            self.note(f"{what} fails: {failure.label}", at)
            raise PlsqlError(failure)

    def choose(self, options: int) -> int:
        index = self.choice_index
        self.choice_index += 1
        if self.top_attempt == 1 and index == len(self.options):
            self.options.append(options)
        return self.choices[index] if index < len(self.choices) else 0

    def model(self, operation: Callable[[], Any], at: Location) -> Any:
        try:
            return operation()
        except ModelError as error:
            failure = replace(error.failure, at=at)
            self.note(failure.label, at)
            raise PlsqlError(failure) from None

    # -- calls

    def run_calls(self, calls: tuple[tuple[str, ...], ...], frame: Frame, at: Location) -> None:
        for path in calls:
            self.call(path, frame, at)

    def call(self, path: tuple[str, ...], frame: Frame, at: Location) -> None:
        target = self.program.resolve(frame.module, path)
        name = "::".join(path)
        if target is not None:
            self.site(at, f"call {name}")
            policy = frame.policy
            if policy is not None and target[0] is frame.module and target[1].fn == policy.recover:
                frame.recovered = True
            self.invoke(target[0], target[1], at)
            return
        if len(path) < 2:
            return  # a built-in function: no effect
        package = path[0].lower()
        self.site(at, f"call {name}")
        if (commits := committing_call(tuple(p.lower() for p in path))) is not None:
            self.effect(f"call {name}", at, True)
            if "ROLLBACK" in commits:  # DBMS_TRANSACTION.ROLLBACK ends it by undoing
                undone = self.session.rollback()
                self.undone_by_sql.update(e.serial for e in undone)
                self.note(
                    f"{name} ends the transaction ({commits}): undoes {self.effects(undone)}", at
                )
            else:
                done = self.session.commit()
                self.note(f"{name} commits ({commits}): {self.effects(done)}", at)
        elif package in OUTSIDE_TRANSACTION:
            self.effect(f"call {name}", at, False)
        elif package not in SESSION_ONLY:
            self.effect(f"call {name}", at, True)

    def invoke(self, module: ProgramModule, subprogram: plsql.Subprogram, at: Location) -> None:
        if len(self.frames) >= MAX_CALL_DEPTH:
            return
        frame = Frame(module, subprogram, self.next_call)
        self.next_call += 1
        frame.opened_before = self.session.current.open
        frame.live_before = frozenset(e.serial for e in self.session.live())
        self.frames.append(frame)
        self.note(f"call {'.'.join(module.path)}::{subprogram.fn}", at)
        if subprogram.autonomous:
            self.autonomous_calls.add(frame.call_id)
            self.session.begin_autonomous()
        raised: Failure | None = None
        failed = False
        try:
            try:
                self.block(plsql.Block(subprogram.body, subprogram.handlers), frame)
            except ReturnSignal:
                pass
            except PlsqlError:
                failed = True
                raise
            finally:
                if subprogram.autonomous:
                    self.end_autonomous(module, subprogram, failed)
        except PlsqlError as error:
            raised = error.failure
            raise
        finally:
            self.frames.pop()
            self.final[frame.call_id] = (frame.phase, raised is None)
            if frame.policy is not None:
                check_call(self, frame, raised)

    def end_autonomous(
        self, module: ProgramModule, subprogram: plsql.Subprogram, failed: bool
    ) -> None:
        at = (module.path, subprogram.origin)
        ended = self.model(lambda: self.session.end_autonomous(failed), at)
        if self.session.postgres:
            how = "rolls back" if failed else "commits"
            self.note(f"the autonomous session {how} {self.effects(ended)}", at)

    # -- statements

    def statements(self, stmts: list[plsql.Stmt], frame: Frame) -> None:
        for stmt in stmts:
            EXECUTORS[type(stmt)](self, stmt, frame)

    def at(self, frame: Frame, stmt: Any) -> Location:
        return frame.module.path, stmt.origin

    def nothing(self, stmt: plsql.Stmt, frame: Frame) -> None:
        pass

    def with_calls(self, stmt: plsql.Exec | plsql.PipeRow, frame: Frame) -> None:
        self.run_calls(stmt.calls, frame, self.at(frame, stmt))

    def assign(self, stmt: plsql.Assign, frame: Frame) -> None:
        self.run_calls(stmt.calls, frame, self.at(frame, stmt))
        frame.assigned[stmt.target] = stmt.value  # the text, for a sleep that names it

    def set_flag(self, stmt: plsql.SetFlag, frame: Frame) -> None:
        if stmt.value:
            frame.flags.add(stmt.variable)
        else:
            frame.flags.discard(stmt.variable)

    def count_attempt(self, stmt: plsql.CountAttempt, frame: Frame) -> None:
        frame.counter += 1

    def call_local(self, stmt: plsql.CallLocal, frame: Frame) -> None:
        for declaration in frame.subprogram.declarations:
            if isinstance(declaration, plsql.LocalProcedure) and declaration.name == stmt.name:
                with contextlib.suppress(ReturnSignal):
                    self.statements(declaration.body, frame)

    def sql(self, stmt: plsql.Sql, frame: Frame) -> None:
        at = self.at(frame, stmt)
        words = list(stmt.words)
        if stmt.verb in ("commit", "rollback", "savepoint"):
            self.transaction_sql(stmt.verb, words, at)
            return
        self.site(at, f"{stmt.verb} statement")
        self.session.current.snapshot = True
        if "nextval" in words:
            self.effect("a sequence value", at, False)
        if stmt.verb in DML_VERBS or stmt.verb in ("begin", "declare", "call"):
            self.effect(stmt.summary or stmt.verb, at, True)
        if stmt.ends_transaction is not None:
            # DDL commits before and after [7]; so does a COMMIT in a PL/SQL block.
            ended = stmt.ends_transaction
            if "ROLLBACK" in ended:
                undone = self.session.rollback()
                self.undone_by_sql.update(e.serial for e in undone)
                self.note(f"{ended} undoes {self.effects(undone)}", at)
            else:
                self.note(f"{ended} commits {self.effects(self.session.commit())}", at)

    def transaction_sql(self, verb: str, words: list[str], at: Location) -> None:
        if verb == "commit":
            done = self.session.commit()
            self.note(f"COMMIT: {self.effects(done)}", at)
        elif verb == "savepoint" and len(words) > 1:
            self.session.savepoint(words[1])
            self.note(f"SAVEPOINT {words[1]}", at)
        elif "to" in words:
            undone = self.rollback_to_savepoint(words[-1], at)
            self.undone_by_sql.update(e.serial for e in undone)
        else:
            undone = self.session.rollback()
            self.undone_by_sql.update(e.serial for e in undone)
            self.note(f"ROLLBACK undoes {self.effects(undone)}", at)

    def savepoint(self, stmt: plsql.Savepoint, frame: Frame) -> None:
        self.session.savepoint(stmt.name)
        self.note(f"SAVEPOINT {stmt.name}", self.at(frame, stmt))

    def rollback_to(self, stmt: plsql.RollbackTo, frame: Frame) -> None:
        self.rollback_to_savepoint(stmt.name, self.at(frame, stmt))

    def rollback_to_savepoint(self, name: str, at: Location) -> list[Effect]:
        try:
            undone = self.session.rollback_to(name)
        except ModelError as error:
            failure = replace(error.failure, at=at)
            self.note(failure.label, at)
            self.violation(
                "verify-no-savepoint",
                at,
                f"ROLLBACK TO {name} raises ORA-01086: no savepoint of that name stands here",
            )
            raise PlsqlError(failure) from None
        self.note(f"ROLLBACK TO {name} undoes {self.effects(undone)}", at)
        return undone

    def rollback(self, stmt: plsql.Rollback, frame: Frame) -> None:
        self.transaction_control("ROLLBACK", self.at(frame, stmt))
        undone = self.session.rollback()
        self.note(f"ROLLBACK undoes {self.effects(undone)}", self.at(frame, stmt))

    def commit(self, stmt: plsql.Commit, frame: Frame) -> None:
        self.transaction_control("COMMIT", self.at(frame, stmt))
        done = self.session.commit()
        self.note(f"COMMIT keeps {self.effects(done)}", self.at(frame, stmt))

    def set_transaction(self, stmt: plsql.SetTransaction, frame: Frame) -> None:
        at = self.at(frame, stmt)
        try:
            self.model(self.session.set_transaction, at)
        except PlsqlError:
            if self.session.postgres and not self.session.client_block:
                self.violation(
                    "verify-transaction-control",
                    at,
                    "SET TRANSACTION raises 25001 here: a statement already ran in this "
                    "transaction (it must follow a COMMIT or ROLLBACK)",
                )
            raise

    def transaction_control(self, verb: str, at: Location) -> None:
        """PostgreSQL: a procedure CALLed by the client may end its transaction, but not
        inside a block with an EXCEPTION clause [P3], not under a function [P4] (2D000, a
        lowering defect), and not in the client's own transaction block [P5] (2D000, the
        refusal a transaction-scoped fn owes its caller). Oracle has none of these rules."""
        if not self.session.postgres:
            return
        reason = ""
        if self.session.subtransactions:
            reason = "inside a block with an EXCEPTION clause (a subtransaction)"
        elif not all(f.subprogram.transaction_control for f in self.frames):
            reason = "in a FUNCTION, or in a procedure a function called"
        if reason:
            self.violation(
                "verify-transaction-control",
                at,
                f"{verb} raises 2D000 here: PostgreSQL ends no transaction {reason}",
            )
        elif not self.session.client_block:
            return
        failure = Failure("2D000 invalid_transaction_termination", sqlstate="2D000", at=at)
        self.note(failure.label, at)
        raise PlsqlError(failure)

    def sleep(self, stmt: plsql.Sleep, frame: Frame) -> None:
        """The longest pause the printed expression gives after failed attempt `counter`,
        against the longest `pellc explain` promises for it."""
        at = self.at(frame, stmt)
        expression = frame.assigned.get(stmt.seconds, stmt.seconds)  # via l_pell_sleep
        seconds = longest_sleep(expression, frame.counter)
        frame.slept += seconds
        self.note(f"sleeps up to {seconds} s", at)
        policy = frame.policy
        if policy is None:
            return
        rows = schedule(policy)
        promised = rows[frame.counter].sleep_max if frame.counter < len(rows) else Decimal(0)
        if seconds > promised:
            self.violation(
                "verify-attempts",
                at,
                f"{frame.subprogram.fn} sleeps up to {seconds} s after attempt {frame.counter}; "
                f"`pellc explain` promises at most {promised} s",
            )

    def raise_(self, stmt: plsql.Raise, frame: Frame) -> None:
        if stmt.exception is not None:  # `RAISE NO_DATA_FOUND;`
            at = self.at(frame, stmt)
            name = stmt.exception
            failure = Failure(name.text, code=name.oracle_code, sqlstate=name.sqlstate, at=at)
            self.note(f"raises {failure.label}", at)
            raise PlsqlError(failure)
        assert frame.handling, "RAISE; outside a handler"
        raise PlsqlError(frame.handling[-1])

    def raise_error(self, stmt: plsql.RaiseError, frame: Frame) -> None:
        at = self.at(frame, stmt)
        if stmt.error is None:  # pellc's own: a transaction already open
            failure = Failure("pell_transaction_open", code=-20399, panic=True, at=at)
        else:
            module, name = stmt.error
            panics = self.program.modules.get(".".join(module))
            panic = panics is not None and name in panics.panics
            failure = Failure(
                f"{'.'.join(module)}.{name}", pell_error=stmt.error, panic=panic, at=at
            )
        self.note(f"raises {failure.label}", at)
        raise PlsqlError(failure)

    def return_(self, stmt: plsql.Return, frame: Frame) -> None:
        self.run_calls(stmt.calls, frame, self.at(frame, stmt))
        raise ReturnSignal

    def exit(self, stmt: plsql.Exit, frame: Frame) -> None:
        raise ExitSignal(stmt.label)

    def exit_when(self, stmt: plsql.ExitWhen, frame: Frame) -> None:
        if self.test(stmt.condition, frame, self.at(frame, stmt)) == stmt.holds:
            raise ExitSignal

    def continue_(self, stmt: plsql.Continue, frame: Frame) -> None:
        raise ContinueSignal

    def test(self, condition: plsql.Condition, frame: Frame, at: Location) -> bool:
        if isinstance(condition, plsql.AttemptsExhausted):
            return frame.counter >= condition.attempts  # the model has no clock: no deadline
        if isinstance(condition, plsql.IsPanic):
            failure = frame.handling[-1]
            return failure.panic or failure.never_retry
        if isinstance(condition, plsql.TransactionOpen):
            return self.session.current.open
        if isinstance(condition, plsql.FlagSet):
            return (condition.variable in frame.flags) != condition.negated
        if isinstance(condition, plsql.NotPellError):
            return frame.handling[-1].pell_error not in condition.errors
        self.run_calls(condition.calls, frame, at)
        return self.choose(2) == 0

    def if_(self, stmt: plsql.If, frame: Frame) -> None:
        at = self.at(frame, stmt)
        for branch in stmt.branches:
            if self.test(branch.condition, frame, at):
                self.statements(branch.body, frame)
                return
        if stmt.otherwise is not None:
            self.statements(stmt.otherwise, frame)

    def once(self, body: list[plsql.Stmt], frame: Frame) -> None:
        """A loop over values: its body once (EXIT and CONTINUE both end it; an EXIT with a
        label leaves the loop or block of that label)."""
        try:
            self.statements(body, frame)
        except ContinueSignal:
            pass
        except ExitSignal as signal:
            if signal.label:
                raise

    def loop(self, stmt: plsql.Loop, frame: Frame) -> None:
        self.run_calls(stmt.calls, frame, self.at(frame, stmt))
        if not stmt.head or self.choose(2) == 0:
            try:
                self.once(stmt.body, frame)
            except ExitSignal as signal:
                # `EXIT label;` from a loop inside ends at the loop of that label
                if not stmt.label or signal.label != stmt.label:
                    raise

    def cursor_loop(self, stmt: plsql.CursorLoop, frame: Frame) -> None:
        self.site(self.at(frame, stmt.query), "the cursor's query")
        if self.choose(2) == 0:
            self.once(stmt.body, frame)

    def retry_loop(self, stmt: plsql.RetryLoop, frame: Frame) -> None:
        policy = frame.policy
        at = self.at(frame, stmt)
        assert policy is not None, "a retry loop in a fn without @retry"
        blocks = [s for s in stmt.body if isinstance(s, plsql.Block)]
        frame.attempt_block = blocks[0] if blocks else None
        while True:
            frame.passes += 1
            frame.phase += 1
            if len(self.frames) == 1:
                self.top_attempt = frame.passes
                self.choice_index = 0
            self.note(f"attempt {frame.passes} of {frame.subprogram.fn}", at)
            if frame.passes > 1:
                check_retry(self, frame)
            if frame.passes > policy.attempts:
                self.violation(
                    "verify-attempts",
                    at,
                    f"the retry loop starts attempt {frame.passes}; the policy allows "
                    f"{policy.attempts}",
                )
                raise Abort
            try:
                self.statements(stmt.body, frame)
            except ExitSignal as signal:
                if signal.label not in ("", stmt.label):
                    raise
                return

    def block(self, stmt: plsql.Block, frame: Frame) -> None:
        subtransaction = self.session.postgres and bool(stmt.handlers)
        if subtransaction:
            self.session.begin_subtransaction()
        try:
            self.statements(stmt.body, frame)
        except ExitSignal as signal:
            if subtransaction:
                self.session.end_subtransaction(failed=False)
            if not stmt.label or signal.label != stmt.label:
                raise
        except (ReturnSignal, ContinueSignal):
            if subtransaction:
                self.session.end_subtransaction(failed=False)
            raise
        except PlsqlError as error:
            failure = error.failure
            if subtransaction:
                undone = self.session.end_subtransaction(failed=True)
                at = self.at(frame, stmt)
                self.note(f"the block's subtransaction is rolled back: {self.effects(undone)}", at)
            for handler in stmt.handlers:
                if any(matches(name, failure) for name in handler.exceptions):
                    break
            else:
                raise
            if stmt is frame.attempt_block:
                frame.caught = failure
                frame.phase += 1
            frame.handling.append(failure)
            try:
                self.statements(handler.body, frame)
            finally:
                frame.handling.pop()
        else:
            if subtransaction:
                self.session.end_subtransaction(failed=False)


def matches(name: plsql.ExceptionName, failure: Failure) -> bool:
    if name.others:
        return True
    if name.sqlstate is not None:
        return failure.sqlstate == name.sqlstate
    if name.oracle_code is not None:
        return failure.code == name.oracle_code
    return name.pell_error is not None and failure.pell_error == name.pell_error


# One entry per class of plsql.Stmt (a test checks that it covers the union).
EXECUTORS: dict[type, Callable[[Run, Any, Frame], None]] = {
    plsql.Null: Run.nothing,
    plsql.Comment: Run.nothing,
    plsql.Assign: Run.assign,
    plsql.SetFlag: Run.set_flag,
    plsql.CountAttempt: Run.count_attempt,
    plsql.Exec: Run.with_calls,
    plsql.CallLocal: Run.call_local,
    plsql.Sql: Run.sql,
    plsql.Savepoint: Run.savepoint,
    plsql.RollbackTo: Run.rollback_to,
    plsql.Rollback: Run.rollback,
    plsql.Commit: Run.commit,
    plsql.SetTransaction: Run.set_transaction,
    plsql.Sleep: Run.sleep,
    plsql.Raise: Run.raise_,
    plsql.RaiseError: Run.raise_error,
    plsql.Return: Run.return_,
    plsql.Exit: Run.exit,
    plsql.ExitWhen: Run.exit_when,
    plsql.Continue: Run.continue_,
    plsql.PipeRow: Run.with_calls,
    plsql.If: Run.if_,
    plsql.Loop: Run.loop,
    plsql.CursorLoop: Run.cursor_loop,
    plsql.RetryLoop: Run.retry_loop,
    plsql.Block: Run.block,
}
