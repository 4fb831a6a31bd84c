"""The PL/SQL statement tree lowering builds, and the one printer that turns it into lines.

Expressions stay text (lowered with their precedence by codegen); statements are nodes, so that
`pell.verify` can run a subprogram against a model of Oracle transactions and the printer can
indent relative to the enclosing node. Every statement carries `origin`, the source offset it
was lowered from (-1: none), which the printer marks on each line for the source map.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from pell.records import field, record
from pell.retry import RetryPolicy

INDENT = "  "
# Lines carry the source offset they came from as an invisible marker; codegen strips the
# markers from the rendered text and turns them into the source map.
MARKER_START, MARKER_END = "\ue000", "\ue001"  # private use: never in real output


def source_marker(offset: int) -> str:
    return f"{MARKER_START}{offset}{MARKER_END}" if offset >= 0 else ""


# ---- what statements call and raise ---------------------------------------------------------


@record
class ExceptionName:
    """A name in `WHEN ... THEN`: OTHERS, an exception bound to an Oracle code, or a Pell
    error's runtime exception."""

    text: str
    oracle_code: int | None = None  # e_pell_deadlock -> -60; NO_DATA_FOUND -> 100
    pell_error: tuple[tuple[str, ...], str] | None = None  # (module path, error name)
    sqlstate: str | None = None  # PostgreSQL: deadlock_detected -> 40P01

    @property
    def others(self) -> bool:
        return self.text == "OTHERS"


OTHERS = ExceptionName("OTHERS")
NO_DATA_FOUND = ExceptionName("NO_DATA_FOUND", oracle_code=100)


# ---- conditions -------------------------------------------------------------------------------


@record
class AttemptsExhausted:
    """`attempt >= n`, or with a deadline `... OR <deadline test>` (the verifier takes the
    deadline as never passed: it models no time)."""

    variable: str
    attempts: int
    deadline: str | None = None

    def text(self) -> str:
        test = f"{self.variable} >= {self.attempts}"
        return f"{test} OR {self.deadline}" if self.deadline else test


@record
class IsPanic:
    """`pell_is_panic(SQLCODE)`: the error in hand is a panic or a never-retry code."""

    def text(self) -> str:
        return "pell_is_panic(SQLCODE)"


@record
class TransactionOpen:
    """The session's transaction has begun to change data. PostgreSQL: it has a transaction
    ID, which a transaction is given when it first writes (PostgreSQL 15 docs, 74.1
    "Transactions and Identifiers"); pg_current_xact_id_if_assigned is NULL while it has none
    (9.26 "System Information Functions", transaction ID functions)."""

    postgres: bool = False

    def text(self) -> str:
        if self.postgres:
            return "pg_current_xact_id_if_assigned() IS NOT NULL"
        return "DBMS_TRANSACTION.LOCAL_TRANSACTION_ID IS NOT NULL"


@record
class FlagSet:
    """A BOOLEAN variable the lowering sets itself (the run-once flag of a cleanup, the
    committed flag of a transaction block), or with `negated` its NOT."""

    variable: str
    negated: bool = False

    def text(self) -> str:
        return f"NOT {self.variable}" if self.negated else self.variable


@record
class Opaque:
    """A condition computed from values: the verifier explores both outcomes."""

    sql: str
    calls: tuple[tuple[str, ...], ...] = ()

    def text(self) -> str:
        return self.sql


@record
class NotPellError:
    """PostgreSQL: `SQLSTATE <> ALL (ARRAY[...])`, the error in hand is none of these Pell
    errors (their SQLSTATEs are numbered by the build, so the runtime schema names them)."""

    errors: tuple[tuple[tuple[str, ...], str], ...]
    sql: str

    def text(self) -> str:
        return self.sql


Condition = AttemptsExhausted | IsPanic | TransactionOpen | FlagSet | NotPellError | Opaque


# ---- statements ---------------------------------------------------------------------------------


@record(frozen=False)
class Null:
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Comment:
    text: str
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Assign:
    target: str
    value: str
    calls: tuple[tuple[str, ...], ...] = ()
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class SetFlag:
    variable: str
    value: bool = True
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class CountAttempt:
    """`attempt := attempt + 1`: the retry loop counts a failed attempt."""

    variable: str
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Exec:
    """A procedure call or other statement made of one expression (`x.DELETE`)."""

    text: str
    calls: tuple[tuple[str, ...], ...] = ()
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class CallLocal:
    """A call of a procedure declared in the subprogram (the run-once cleanup)."""

    name: str
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Sql:
    """Embedded SQL as it is printed (binds resolved, INTO added), with what the verifier reads:
    its first keyword and the tokens' words."""

    text: str  # without the `;`, continuation lines indented relative to the first
    verb: str  # first keyword, lower case: select, insert, update, commit, ...
    into: tuple[str, ...] = ()
    binds: tuple[str, ...] = ()
    summary: str = ""  # its first words, as a finding names it: `insert into audit_log`
    words: tuple[str, ...] = ()  # its tokens, lower case
    ends_transaction: str | None = None  # how it commits or rolls back, if it does
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Savepoint:
    name: str
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class RollbackTo:
    name: str
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Rollback:
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Commit:
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class SetTransaction:
    level: str
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Sleep:
    """The pause between attempts: `seconds` is an expression of the attempt variable (or the
    variable that holds it), which the verifier reads for the longest pause it can give."""

    procedure: str
    seconds: str
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Raise:
    """`RAISE;`: the exception in hand, again; with `exception`, `RAISE name;` (a predefined
    exception, NO_DATA_FOUND)."""

    exception: ExceptionName | None = None
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class RaiseError:
    """RAISE_APPLICATION_ERROR with a runtime code constant: a Pell error, or pellc's own."""

    code: str
    message: str
    error: tuple[tuple[str, ...], str] | None = None  # (module path, Pell error); None: pellc's
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Return:
    value: str | None = None
    calls: tuple[tuple[str, ...], ...] = ()
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Exit:
    label: str = ""  # `EXIT label;` leaves the loop (or, PostgreSQL, the block) of that label
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class ExitWhen:
    """`EXIT WHEN NOT (condition)`: a WHILE's test; `EXIT WHEN condition` when `holds`."""

    condition: Condition
    holds: bool = False
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Continue:
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class PipeRow:
    value: str
    calls: tuple[tuple[str, ...], ...] = ()
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Branch:
    condition: Condition
    body: list[Stmt]


@record(frozen=False)
class If:
    """IF / ELSIF / ELSE; `one_line` prints `IF c THEN s1 s2 END IF;` (one branch)."""

    branches: list[Branch]
    otherwise: list[Stmt] | None = None
    one_line: bool = False
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Loop:
    """`[head] LOOP ... END LOOP;` over values (a FOR range, WHILE, or a bare LOOP with its own
    EXIT WHEN): the verifier runs the body at most once."""

    head: str  # `FOR i IN 1 .. 10`, `WHILE c`, or "" for a bare LOOP
    body: list[Stmt]
    calls: tuple[tuple[str, ...], ...] = ()
    label: str = ""  # `<<label>>` before it, for an `EXIT label;` from a loop inside it
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class CursorLoop:
    """`FOR r IN (query) LOOP`; a query of several lines gets lines of its own."""

    variable: str
    query: Sql
    body: list[Stmt]
    multiline: bool = False  # the query was written on several lines
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class RetryLoop:
    """The LOOP of a retried fn: each pass is one attempt."""

    body: list[Stmt]
    label: str = ""  # PostgreSQL: `<<label>>` before it, for `EXIT label`
    origin: int = field(default=-1, kw_only=True)


@record(frozen=False)
class Handler:
    exceptions: list[ExceptionName]
    body: list[Stmt]


@record(frozen=False)
class Block:
    """[DECLARE ...] BEGIN ... [EXCEPTION WHEN ... THEN ...] END;"""

    body: list[Stmt]
    handlers: list[Handler] = field(default_factory=list)
    label: str = ""  # PostgreSQL: `<<label>>` before it, for `EXIT label`
    declarations: list[str] = field(default_factory=list)  # each printed as written
    origin: int = field(default=-1, kw_only=True)


Stmt = (
    Null
    | Comment
    | Assign
    | SetFlag
    | CountAttempt
    | Exec
    | CallLocal
    | Sql
    | Savepoint
    | RollbackTo
    | Rollback
    | Commit
    | SetTransaction
    | Sleep
    | Raise
    | RaiseError
    | Return
    | Exit
    | ExitWhen
    | Continue
    | PipeRow
    | If
    | Loop
    | CursorLoop
    | RetryLoop
    | Block
)


# ---- declarations and subprograms ------------------------------------------------------------


@record(frozen=False)
class Variable:
    """A declaration printed as written: a variable, a type, an exception, a PRAGMA."""

    text: str


@record(frozen=False)
class LocalProcedure:
    name: str
    body: list[Stmt]
    origin: int = field(default=-1, kw_only=True)


Declaration = Variable | LocalProcedure


@record(frozen=False)
class Subprogram:
    """One fn as a PL/SQL subprogram, with what the verifier needs to know of it."""

    module_path: tuple[str, ...]
    fn: str  # the Pell name
    name: str  # the PL/SQL name
    signature: str
    declarations: list[Declaration]
    body: list[Stmt]
    handlers: list[Handler] = field(default_factory=list)
    autonomous: bool = False
    retry: RetryPolicy | None = None
    # PostgreSQL: a PROCEDURE may COMMIT and ROLLBACK, a FUNCTION may not
    transaction_control: bool = True
    origin: int = field(default=-1, kw_only=True)


# ---- the printer ---------------------------------------------------------------------------


class Printer:
    """Statements -> lines, each indented relative to its parent and marked with its origin."""

    def __init__(self, target: str = "oracle", marks: bool = True) -> None:
        self.lines: list[str] = []
        self.target = target
        self.marks = marks  # False: no source markers (a text nothing maps back: aggregates)
        self.table = POSTGRES_PRINTERS if target == "postgres" else PRINTERS

    def line(self, depth: int, origin: int, text: str) -> None:
        """`text` at `depth`; its continuation lines (multi-line SQL) are already indented
        relative to the first, and get the same depth on top."""
        marker = source_marker(origin) if self.marks else ""
        indent = INDENT * depth
        if "\n" not in text:  # most lines: no split
            self.lines.append(indent + marker + text)
            return
        first, *rest = text.split("\n")
        self.lines.append(indent + marker + first)
        for continuation in rest:
            self.lines.append(marker + (indent + continuation if continuation else ""))

    def statements(self, stmts: list[Stmt], depth: int) -> None:
        for stmt in stmts:
            self.table[type(stmt)](self, stmt, depth)

    def handlers(self, handlers: list[Handler], depth: int, origin: int) -> None:
        if not handlers:
            return
        self.line(depth, origin, "EXCEPTION")
        for handler in handlers:
            names = " OR ".join(name.text for name in handler.exceptions)
            self.line(depth + 1, origin, f"WHEN {names} THEN")
            self.statements(handler.body, depth + 2)

    # -- one method per statement class

    def null(self, stmt: Null, depth: int) -> None:
        self.line(depth, stmt.origin, "NULL;")

    def comment(self, stmt: Comment, depth: int) -> None:
        self.line(depth, stmt.origin, f"-- {stmt.text}")

    def assign(self, stmt: Assign, depth: int) -> None:
        self.line(depth, stmt.origin, f"{stmt.target} := {stmt.value};")

    def set_flag(self, stmt: SetFlag, depth: int) -> None:
        self.line(depth, stmt.origin, f"{stmt.variable} := {'TRUE' if stmt.value else 'FALSE'};")

    def count_attempt(self, stmt: CountAttempt, depth: int) -> None:
        self.line(depth, stmt.origin, f"{stmt.variable} := {stmt.variable} + 1;")

    def exec(self, stmt: Exec, depth: int) -> None:
        self.line(depth, stmt.origin, f"{stmt.text};")

    def call_local(self, stmt: CallLocal, depth: int) -> None:
        self.line(depth, stmt.origin, f"{stmt.name};")

    def sql(self, stmt: Sql, depth: int) -> None:
        self.line(depth, stmt.origin, f"{stmt.text};")

    def savepoint(self, stmt: Savepoint, depth: int) -> None:
        self.line(depth, stmt.origin, f"SAVEPOINT {stmt.name};")

    def rollback_to(self, stmt: RollbackTo, depth: int) -> None:
        self.line(depth, stmt.origin, f"ROLLBACK TO {stmt.name};")

    def rollback(self, stmt: Rollback, depth: int) -> None:
        self.line(depth, stmt.origin, "ROLLBACK;")

    def commit(self, stmt: Commit, depth: int) -> None:
        self.line(depth, stmt.origin, "COMMIT;")

    def set_transaction(self, stmt: SetTransaction, depth: int) -> None:
        self.line(depth, stmt.origin, f"SET TRANSACTION ISOLATION LEVEL {stmt.level};")

    def sleep(self, stmt: Sleep, depth: int) -> None:
        self.line(depth, stmt.origin, f"{stmt.procedure}({stmt.seconds});")

    def raise_(self, stmt: Raise, depth: int) -> None:
        named = f" {stmt.exception.text}" if stmt.exception is not None else ""
        self.line(depth, stmt.origin, f"RAISE{named};")

    def raise_error(self, stmt: RaiseError, depth: int) -> None:
        self.line(depth, stmt.origin, f"RAISE_APPLICATION_ERROR({stmt.code}, {stmt.message});")

    def return_(self, stmt: Return, depth: int) -> None:
        value = f" {stmt.value}" if stmt.value is not None else ""
        self.line(depth, stmt.origin, f"RETURN{value};")

    def exit(self, stmt: Exit, depth: int) -> None:
        self.line(depth, stmt.origin, f"EXIT {stmt.label};" if stmt.label else "EXIT;")

    def exit_when(self, stmt: ExitWhen, depth: int) -> None:
        test = stmt.condition.text() if stmt.holds else f"NOT ({stmt.condition.text()})"
        self.line(depth, stmt.origin, f"EXIT WHEN {test};")

    def continue_(self, stmt: Continue, depth: int) -> None:
        self.line(depth, stmt.origin, "CONTINUE;")

    def pipe_row(self, stmt: PipeRow, depth: int) -> None:
        self.line(depth, stmt.origin, f"PIPE ROW({stmt.value});")

    def if_(self, stmt: If, depth: int) -> None:
        if stmt.one_line:
            branch = stmt.branches[0]
            inner = " ".join(self.one_line_text(s) for s in branch.body)
            self.line(depth, stmt.origin, f"IF {branch.condition.text()} THEN {inner} END IF;")
            return
        for index, branch in enumerate(stmt.branches):
            keyword = "ELSIF" if index else "IF"
            self.line(depth, stmt.origin, f"{keyword} {branch.condition.text()} THEN")
            self.statements(branch.body, depth + 1)
        if stmt.otherwise is not None:
            self.line(depth, stmt.origin, "ELSE")
            self.statements(stmt.otherwise, depth + 1)
        self.line(depth, stmt.origin, "END IF;")

    def loop(self, stmt: Loop, depth: int) -> None:
        if stmt.label:
            self.line(depth, stmt.origin, f"<<{stmt.label}>>")
        self.line(depth, stmt.origin, f"{stmt.head} LOOP" if stmt.head else "LOOP")
        self.statements(stmt.body, depth + 1)
        self.line(depth, stmt.origin, "END LOOP;")

    def cursor_loop(self, stmt: CursorLoop, depth: int) -> None:
        query = stmt.query
        if stmt.multiline:
            self.line(depth, stmt.origin, f"FOR {stmt.variable} IN (")
            self.line(depth + 1, query.origin, query.text)
            self.line(depth, stmt.origin, ") LOOP")
        else:
            self.line(depth, stmt.origin, f"FOR {stmt.variable} IN ({query.text}) LOOP")
        self.statements(stmt.body, depth + 1)
        self.line(depth, stmt.origin, "END LOOP;")

    def retry_loop(self, stmt: RetryLoop, depth: int) -> None:
        if stmt.label:
            self.line(depth, stmt.origin, f"<<{stmt.label}>>")
        self.line(depth, stmt.origin, "LOOP")
        self.statements(stmt.body, depth + 1)
        self.line(depth, stmt.origin, "END LOOP;")

    def block(self, stmt: Block, depth: int) -> None:
        if stmt.label:
            self.line(depth, stmt.origin, f"<<{stmt.label}>>")
        if stmt.declarations:
            self.line(depth, stmt.origin, "DECLARE")
            for declaration in stmt.declarations:
                self.line(depth + 1, stmt.origin, declaration)
        self.line(depth, stmt.origin, "BEGIN")
        self.statements(stmt.body, depth + 1)
        self.handlers(stmt.handlers, depth, stmt.origin)
        self.line(depth, stmt.origin, "END;")

    def one_line_text(self, stmt: Stmt) -> str:
        """A simple statement's text, for `IF c THEN ... END IF;` on one line."""
        printer = Printer(self.target, self.marks)
        printer.table[type(stmt)](printer, stmt, 0)
        assert len(printer.lines) == 1, "only simple statements fit on one line"
        return printer.lines[0]

    # -- PL/pgSQL's forms, where they differ (PostgreSQL 15 docs, chapter 43)

    def raise_error_postgres(self, stmt: RaiseError, depth: int) -> None:
        self.line(
            depth,
            stmt.origin,
            f"RAISE EXCEPTION USING ERRCODE = {stmt.code}, MESSAGE = {stmt.message};",
        )

    def pipe_row_postgres(self, stmt: PipeRow, depth: int) -> None:
        self.line(depth, stmt.origin, f"RETURN NEXT {stmt.value};")

    def cursor_loop_postgres(self, stmt: CursorLoop, depth: int) -> None:
        """`FOR r IN query LOOP`: a query of several lines goes on, one level in."""
        query = re.sub(r"\n(?=.)", "\n" + INDENT, stmt.query.text)
        self.line(depth, stmt.origin, f"FOR {stmt.variable} IN {query} LOOP")
        self.statements(stmt.body, depth + 1)
        self.line(depth, stmt.origin, "END LOOP;")

    # -- declarations

    def declarations(self, declarations: list[Declaration]) -> None:
        """Declarations at depth 0 (the subprogram template indents them)."""
        for declaration in declarations:
            if isinstance(declaration, Variable):
                self.lines.append(declaration.text)
                continue
            self.lines.append(f"PROCEDURE {declaration.name} IS")
            self.lines.append("BEGIN")
            self.statements(declaration.body, 1)
            self.lines.append(f"END {declaration.name};")




# One entry per class of Stmt (a test checks that it covers the union).
PRINTERS: dict[type, Callable[[Printer, Any, int], None]] = {
    Null: Printer.null,
    Comment: Printer.comment,
    Assign: Printer.assign,
    SetFlag: Printer.set_flag,
    CountAttempt: Printer.count_attempt,
    Exec: Printer.exec,
    CallLocal: Printer.call_local,
    Sql: Printer.sql,
    Savepoint: Printer.savepoint,
    RollbackTo: Printer.rollback_to,
    Rollback: Printer.rollback,
    Commit: Printer.commit,
    SetTransaction: Printer.set_transaction,
    Sleep: Printer.sleep,
    Raise: Printer.raise_,
    RaiseError: Printer.raise_error,
    Return: Printer.return_,
    Exit: Printer.exit,
    ExitWhen: Printer.exit_when,
    Continue: Printer.continue_,
    PipeRow: Printer.pipe_row,
    If: Printer.if_,
    Loop: Printer.loop,
    CursorLoop: Printer.cursor_loop,
    RetryLoop: Printer.retry_loop,
    Block: Printer.block,
}
POSTGRES_PRINTERS: dict[type, Callable[[Printer, Any, int], None]] = {
    **PRINTERS,
    RaiseError: Printer.raise_error_postgres,
    PipeRow: Printer.pipe_row_postgres,
    CursorLoop: Printer.cursor_loop_postgres,
}


def print_subprogram(subprogram: Subprogram) -> tuple[list[str], list[str]]:
    """(declaration lines, body lines) for the subprogram template: declarations unindented
    (the template indents them), the body under BEGIN at depth 1, the handlers at depth 0."""
    declarations = Printer()
    declarations.declarations(subprogram.declarations)
    body = Printer()
    body.statements(subprogram.body, 1)
    body.handlers(subprogram.handlers, 0, subprogram.origin)
    return declarations.lines, body.lines


def walk(stmts: list[Stmt]) -> list[Stmt]:
    """Every statement in `stmts` and below, parents before children."""
    found: list[Stmt] = []
    pending = list(reversed(stmts))
    while pending:
        stmt = pending.pop()
        found.append(stmt)
        pending.extend(reversed(children(stmt)))
    return found


def children(stmt: Stmt) -> list[Stmt]:
    if isinstance(stmt, If):
        nested = [s for branch in stmt.branches for s in branch.body]
        return nested + (stmt.otherwise or [])
    if isinstance(stmt, Loop | CursorLoop | RetryLoop):
        return list(stmt.body)
    if isinstance(stmt, Block):
        return stmt.body + [s for handler in stmt.handlers for s in handler.body]
    return []


def calls_in(stmt: Stmt) -> tuple[tuple[str, ...], ...]:
    """The calls `stmt` itself makes (not its children's): in its expressions, its head or its
    conditions."""
    if isinstance(stmt, Assign | Exec | Return | PipeRow | Loop):
        return stmt.calls
    if isinstance(stmt, If):
        found: tuple[tuple[str, ...], ...] = ()
        for branch in stmt.branches:
            if isinstance(branch.condition, Opaque):
                found += branch.condition.calls
        return found
    if isinstance(stmt, ExitWhen) and isinstance(stmt.condition, Opaque):
        return stmt.condition.calls
    return ()
