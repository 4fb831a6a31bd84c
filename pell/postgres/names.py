"""PostgreSQL names and types of Pell's: the schema a module is, its types, its functions."""

from __future__ import annotations

from pell import ast, naming
from pell.checker import types as t
from pell.checker.model import CheckedModule, FnInfo

# Oracle's DATE holds a time to the second: timestamp(0) keeps that; `text` is VARCHAR2(4000)
# on Oracle, unbounded here; `int` is PLS_INTEGER there, integer here (both 32 bits).
SCALARS = {
    "number": "numeric",
    "int": "integer",
    "text": "text",
    "bigtext": "text",
    "bool": "boolean",
    "date": "timestamp(0)",
    "timestamp": "timestamp",
    "interval": "interval",
    "bytes": "bytea",  # binary strings (PostgreSQL docs, "Binary Data Types")
    "json": "jsonb",  # (PostgreSQL docs, "JSON Types")
}

MAX_IDENTIFIER_BYTES = 63  # NAMEDATALEN - 1 (PostgreSQL docs, "Identifiers and Key Words")


def schema_of(path: tuple[str, ...], chosen_package: str | None = None) -> str:
    """`shop.orders` -> the schema `shop_orders` (PostgreSQL has schemas, not packages)."""
    schema, package = naming.package_name(path, chosen_package)
    return f"{schema}_{package}" if schema else package


def fn_name(name: str) -> str:
    return naming.fn_name(name)


def record_type(type_: t.RecordType, checked: CheckedModule) -> str:
    if type_.module:
        foreign = checked.imports.find(type_.module)
        assert foreign is not None, f"record of unknown module {type_.module}"
        schema = schema_of(foreign.module.path, foreign.module.chosen_package)
    else:
        schema = schema_of(checked.module.path, checked.module.chosen_package)
        if type_.plsql:  # an aggregate's state (pell.postgres.aggregates): its own name
            return f"{schema}.{type_.plsql.split('.')[-1]}"
    return f"{schema}.{naming.record_type_name(type_.name)}"


def sql_type(type_: t.Type, checked: CheckedModule) -> str:
    if isinstance(type_, t.Scalar):
        return SCALARS[type_.name]
    if isinstance(type_, t.RecordType):
        return record_type(type_, checked)
    if isinstance(type_, t.ListType):
        return f"{sql_type(type_.element, checked)}[]"
    if isinstance(type_, t.SqlValue) and type_.column:
        return f"{type_.column}%TYPE"
    if isinstance(type_, t.SqlRow):
        return "record"
    if isinstance(type_, t.CursorType):
        return "refcursor"
    if isinstance(type_, t.TableRow):
        # "Whenever you create a table, a composite type is also automatically created, with
        # the same name as the table" (PostgreSQL 15 docs, 8.16 Composite Types): in a
        # signature and a declaration alike
        return type_.table
    raise ValueError(f"no PostgreSQL type for `{type_}`")


def is_procedure(fn: FnInfo, commits: bool = False) -> bool:
    """A fn PostgreSQL makes a PROCEDURE: one that commits (transaction-scoped retry, or
    `commits`: a `transaction { }` block or a transaction-scoped retry, itself or in a fn it
    calls: `Commits`), or one with
    `out`/`inout` parameters, which a procedure's CALL assigns back to the caller's
    variables (a function would return them as a row instead)."""
    if commits or (fn.retry is not None and fn.retry.scope == "transaction"):
        return True
    return any(p.decl.mode != "in" for p in fn.params)


TRANSACTION_BLOCK = "a `transaction { }` block"
TRANSACTION_RETRY = "a transaction-scoped `@retry`"


def transaction_scoped(fn: FnInfo) -> bool:
    """A transaction-scoped retried fn: a PROCEDURE whose attempts COMMIT and ROLLBACK
    (pell.postgres.retry.lower_transaction_retry). An `@autonomous` one runs in a session of
    its own: its caller's transaction goes on."""
    autonomous = any(a.name == "autonomous" for a in fn.decl.annotations)
    return fn.retry is not None and fn.retry.scope == "transaction" and not autonomous


class Commits:
    """Which fns end their transaction on PostgreSQL, and through what: a `transaction { }`
    block in their own body (or `finally`), a transaction-scoped `@retry` of their own, or
    either in a fn of the project they call, at any depth. Only a PROCEDURE may COMMIT, and
    only under CALLs from the top: "if the call stack is CALL proc1() -> SELECT func2() ->
    CALL proc3(), then the last procedure cannot do transaction control" (PostgreSQL 15
    docs, 43.8 "Transaction Management"), so each of those callers is a PROCEDURE too. An
    `@autonomous` fn commits in a session of its own, not its caller's."""

    def __init__(self) -> None:
        # what makes each fn commit (TRANSACTION_BLOCK or TRANSACTION_RETRY); "": nothing
        self.known: dict[tuple[tuple[str, ...], str], str] = {}
        self.visiting: set[tuple[tuple[str, ...], str]] = set()

    def __call__(self, fn: FnInfo, checked: CheckedModule) -> bool:
        return bool(self.reason(fn, checked))

    def reason(self, fn: FnInfo, checked: CheckedModule) -> str:
        """What makes `fn` end its transaction: TRANSACTION_RETRY, TRANSACTION_BLOCK, or ""."""
        key = (checked.module.path, fn.decl.name)
        if key in self.known:
            return self.known[key]
        if key in self.visiting:
            return ""  # a recursive call: what the fn commits, its first visit finds
        self.visiting.add(key)
        try:
            found = self.find(fn, checked)
        finally:
            self.visiting.discard(key)
        # a "no" found while a caller was being visited may have missed what that caller
        # commits further on: only the outermost question's "no" is final
        if found or not self.visiting:
            self.known[key] = found
        return found

    def find(self, fn: FnInfo, checked: CheckedModule) -> str:
        if any(a.name == "autonomous" for a in fn.decl.annotations):
            return ""
        if transaction_scoped(fn):
            return TRANSACTION_RETRY
        bodies = [fn.decl.body] if fn.decl.finally_body is None else [
            fn.decl.body,
            fn.decl.finally_body,
        ]
        nodes = [node for body in bodies for node in ast.walk(body)]
        if any(isinstance(node, ast.Transaction) for node in nodes):
            return TRANSACTION_BLOCK
        for node in nodes:
            if isinstance(node, ast.Call):
                called = callee_of(node.callee.path, checked)
                found = self.reason(*called) if called is not None else ""
                if found:
                    return found
        return ""


def callee_of(
    path: tuple[str, ...], checked: CheckedModule
) -> tuple[FnInfo, CheckedModule] | None:
    """The Pell fn a call names, with the module it is declared in; None for a built-in or an
    Oracle package's (a stub's)."""
    if len(path) == 1:
        fn = checked.fns.get(path[0])
        return (fn, checked) if fn is not None else None
    foreign = checked.imports.find(path[0]) if len(path) == 2 else None
    if foreign is None or foreign.is_stub:
        return None
    owner = foreign.declared()
    fn = owner.fns.get(path[1])
    return (fn, owner) if fn is not None else None
