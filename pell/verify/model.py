"""One Oracle session's transactions, as far as a retry loop can see them; with `postgres`,
one PostgreSQL session's.

Each rule cites its source by number in docs/verify.md ("Sources"), where the Oracle text is
quoted (PostgreSQL's rules: "P" numbers there). Effects are abstract: what did them (fn, statement) and in which attempt of which
call, never the rows.
"""

from __future__ import annotations

from pell.records import field, record

Location = tuple[tuple[str, ...], int]  # (module path, source offset)


@record
class Failure:
    """An error raised in the model: an Oracle code (a SQLSTATE on PostgreSQL), a Pell error,
    or pellc's own."""

    label: str  # `ORA-00060 deadlock`, `orders.OutOfStock`
    code: int | None = None  # SQLCODE; None for a Pell error (numbered at build time)
    sqlstate: str | None = None  # PostgreSQL's code, on that target
    pell_error: tuple[tuple[str, ...], str] | None = None
    panic: bool = False  # a @panic error, or a code of the panic range
    never_retry: bool = False  # a code of oracle_errors.NEVER_RETRY
    at: Location | None = None  # where it was raised or injected


@record
class Effect:
    """Something a statement did: a DML row change, a call's work, a message sent."""

    what: str
    at: Location
    frames: tuple[
        tuple[int, int], ...
    ]  # (call id, attempt) of every call under way, outermost first
    undoable: bool  # False: outside the transaction, no rollback takes it back
    serial: int


class ModelError(Exception):
    """An error the model raises itself (ORA-01086, ORA-06519, ORA-01453; 2D000, 25001)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.label)
        self.failure = failure


@record(frozen=False)
class Transaction:
    work: list[Effect] = field(default_factory=list)
    savepoints: list[tuple[str, int]] = field(default_factory=list)  # (name, len(work) then)
    open: bool = False
    snapshot: bool = False  # PostgreSQL: a statement has run in it (SET TRANSACTION is late)


class Session:
    """The session's transaction, the autonomous transactions stacked on it, and what no
    rollback can take back."""

    def __init__(self, postgres: bool = False) -> None:
        self.postgres = postgres
        self.client_block = False  # PostgreSQL: the client's BEGIN holds the CALL [P5]
        self.subtransactions: list[int] = []  # PostgreSQL: len(work) at each one's start [P1]
        self.stack = [Transaction()]
        self.committed: list[Effect] = []  # committed by the main transaction
        self.permanent: list[Effect] = []  # outside any transaction, or committed autonomously
        self.log: list[str] = []  # what happened, for the schedule a finding prints

    @property
    def current(self) -> Transaction:
        return self.stack[-1]

    def record(self, effect: Effect) -> None:
        if effect.undoable:
            # A DML statement starts a transaction if none is open [5].
            self.current.work.append(effect)
            self.current.open = True
        else:
            # Sequence values, pipes, mail, HTTP, files and output are never rolled back [10],
            # [11], [12].
            self.permanent.append(effect)

    def savepoint(self, name: str) -> None:
        # A second savepoint of the same name erases the earlier one [3].
        tx = self.current
        tx.savepoints = [s for s in tx.savepoints if s[0] != name]
        tx.savepoints.append((name, len(tx.work)))

    def rollback_to(self, name: str) -> list[Effect]:
        """Undo the work after savepoint `name`, keeping it and erasing later savepoints [4],
        [5]; ORA-01086 when there is no such savepoint [6]."""
        tx = self.current
        for index, (marked, position) in enumerate(tx.savepoints):
            if marked == name:
                undone = tx.work[position:]
                del tx.work[position:]
                del tx.savepoints[index + 1 :]
                return undone
        raise ModelError(
            Failure(f"ORA-01086 savepoint '{name.upper()}' never established", code=-1086)
        )

    def commit(self) -> list[Effect]:
        """End the transaction, keeping its work, erasing its savepoints [5], [7]; in an
        autonomous transaction the work is kept whatever the caller does later [8]."""
        tx = self.current
        done = tx.work
        (self.committed if len(self.stack) == 1 else self.permanent).extend(done)
        self.stack[-1] = Transaction()
        return done

    def rollback(self) -> list[Effect]:
        """End the transaction, undoing its work and erasing its savepoints [5]."""
        undone = self.current.work
        self.stack[-1] = Transaction()
        return undone

    def set_transaction(self) -> None:
        if self.postgres:
            # before any query of the transaction [P4]: 25001 otherwise
            if self.current.open or self.current.snapshot:
                raise ModelError(
                    Failure(
                        "25001 SET TRANSACTION ISOLATION LEVEL must be called before any query",
                        sqlstate="25001",
                    )
                )
            self.current.open = True
            return
        # SET TRANSACTION must be the transaction's first statement [22]: ORA-01453 otherwise.
        if self.current.open:
            raise ModelError(
                Failure("ORA-01453 SET TRANSACTION must be first statement", code=-1453)
            )
        self.current.open = True

    def begin_subtransaction(self) -> None:
        """PostgreSQL: a block with an EXCEPTION clause runs in a subtransaction [P1]."""
        self.subtransactions.append(len(self.current.work))

    def end_subtransaction(self, failed: bool) -> list[Effect]:
        """Leave the innermost subtransaction: kept when its block ends normally, rolled back
        (its work undone, nothing else) when an error leaves its body [P1], [P2]."""
        position = self.subtransactions.pop()
        if not failed:
            return []
        undone = self.current.work[position:]
        del self.current.work[position:]
        return undone

    def abort(self) -> list[Effect]:
        """PostgreSQL: an error that leaves the top-level statement aborts the whole
        transaction [P6]; the client can only roll it back."""
        self.subtransactions.clear()
        return self.rollback()

    def begin_autonomous(self) -> None:
        # An autonomous routine runs in a transaction of its own [8].
        self.stack.append(Transaction())

    def end_autonomous(self, failed: bool = False) -> list[Effect]:
        """Leave an autonomous routine: work neither committed nor rolled back is ORA-06519
        [9], and is rolled back. PostgreSQL: the routine is a statement dblink runs in a
        session of its own, a transaction of its own there [P7]: its work is committed when it
        ends, rolled back when it fails; no rollback of the caller's takes it back."""
        tx = self.stack.pop()
        if self.postgres:
            if not failed:
                self.permanent.extend(tx.work)
            return tx.work
        if tx.work:
            raise ModelError(
                Failure("ORA-06519 active autonomous transaction detected and rolled back", -6519)
            )
        return []

    def live(self) -> list[Effect]:
        """Every effect that stands now: uncommitted work of each transaction, and commits."""
        found = list(self.committed)
        for tx in self.stack:
            found += tx.work
        return found

    def undo_call(self, first_serial: int) -> list[Effect]:
        """An exception that leaves the top-level call undoes the call's uncommitted work
        [14] (work from `first_serial` on); committed work stays."""
        del self.stack[1:]
        tx = self.current
        undone = [e for e in tx.work if e.serial >= first_serial]
        tx.work = [e for e in tx.work if e.serial < first_serial]
        tx.savepoints = [s for s in tx.savepoints if s[1] <= len(tx.work)]
        return undone
