"""PostgreSQL names and types of Pell's: the schema a module is, its types, its functions."""

from __future__ import annotations

from pell import naming
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


def is_procedure(fn: FnInfo) -> bool:
    """A fn PostgreSQL makes a PROCEDURE: one that commits (transaction-scoped retry), or one
    with `out`/`inout` parameters, which a procedure's CALL assigns back to the caller's
    variables (a function would return them as a row instead)."""
    if fn.retry is not None and fn.retry.scope == "transaction":
        return True
    return any(p.decl.mode != "in" for p in fn.params)
