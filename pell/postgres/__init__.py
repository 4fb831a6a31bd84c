"""`--target postgres`: a checked module -> PL/pgSQL (docs/postgres.md).

A module is a schema; a record a composite type of it; a fn a FUNCTION (RETURNS void for a
procedure); a list an array; a Pell error an exception with a SQLSTATE of pellc's own class
`PE` that the `pell_runtime` schema names. What has no faithful PostgreSQL form is a located
`unsupported` error, never approximate code.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from pell import ast, naming, plsql
from pell.checker import types as t
from pell.checker.model import CheckedModule, FnInfo
from pell.checker.ut import suite_annotation
from pell.diagnostics import Diagnostic
from pell.postgres.aggregates import aggregate_ddl
from pell.postgres.json_lowering import json_helper
from pell.postgres.lower import PgFnLowerer, Unsupported
from pell.postgres.names import fn_name, is_procedure, schema_of, sql_type
from pell.postgres.retry import RESULT_PARAMETER
from pell.records import record

__all__ = ["PgModule", "lower_module", "lower_script", "runtime_sql"]


@record
class PgModule:
    """A module lowered to PL/pgSQL: its script, and its fns as statement trees (what
    `pell.verify` runs under PostgreSQL's rules)."""

    sql: str
    subprograms: tuple[plsql.Subprogram, ...]


def _record_ddl(checked: CheckedModule, schema: str, name: str) -> list[str]:
    info = checked.records[name]
    fields = ",\n".join(
        f"  {naming.field_name(field)} {sql_type(type_, checked)}"
        for field, type_ in info.fields.items()
    )
    qualified = f"{schema}.{naming.record_type_name(name)}"
    # CREATE TYPE has no OR REPLACE: the module's script drops its own types (and, CASCADE,
    # what uses them; the build lists importers after the modules they import) and makes them
    # again.
    return [
        f"DROP TYPE IF EXISTS {qualified} CASCADE;",
        f"CREATE TYPE {qualified} AS (\n{fields}\n);",
    ]


def _record_order(checked: CheckedModule) -> list[str]:
    """Records after the records their fields use (the checker rejects cycles)."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name in ordered:
            return
        for type_ in checked.records[name].fields.values():
            element = type_.element if isinstance(type_, t.ListType) else type_
            if isinstance(element, t.RecordType) and not element.module:
                visit(element.name)
        ordered.append(name)

    for name in checked.records:
        visit(name)
    return ordered


_MODES = {"in": "", "out": "OUT ", "inout": "INOUT "}


def _signature(fn: FnInfo, checked: CheckedModule, schema: str) -> str:
    params = ", ".join(
        f"{_MODES[p.decl.mode]}{naming.param_name(p.decl.name)} {sql_type(p.type, checked)}"
        for p in fn.params
    )
    if is_procedure(fn):
        # a PROCEDURE: only a procedure may COMMIT, and its CALL assigns OUT and INOUT
        # parameters back; a value is one more OUT parameter
        if fn.is_function:
            result = f"OUT {RESULT_PARAMETER} {sql_type(fn.returns, checked)}"
            params = f"{params}, {result}" if params else result
        return f"PROCEDURE {schema}.{fn_name(fn.decl.name)}({params})"
    if fn.pipelined:
        assert isinstance(fn.returns, t.ListType)
        returns = f"SETOF {sql_type(fn.returns.element, checked)}"
    elif fn.is_function:
        returns = sql_type(fn.returns, checked)
    else:
        returns = "void"
    return f"FUNCTION {schema}.{fn_name(fn.decl.name)}({params}) RETURNS {returns}"


def lower_module(checked: CheckedModule, header: str) -> tuple[PgModule | None, list[Diagnostic]]:
    """The module's PL/pgSQL script and trees, or the located `unsupported` errors that
    prevent them."""
    diagnostics: list[Diagnostic] = []
    module = checked.module
    schema = schema_of(module.path, module.chosen_package)
    for item in module.items:
        if isinstance(item, ast.TypeDecl):
            # a composite type has no methods, and no subtypes to match by case
            what = "a sealed type" if item.sealed else "an object type (`type Name { }`)"
            diagnostics.append(_unsupported(what, item.name_span))
    suite = suite_annotation(module)
    if suite is not None:  # utPLSQL is Oracle's: no PostgreSQL framework reads its annotations
        diagnostics.append(_unsupported("a utPLSQL suite (`@suite`)", suite.span))
    if checked.objects:
        # every use of an object type (a signature, a record field, a list) has no type to
        # lower to: the declarations are what is reported
        return None, diagnostics
    functions: list[str] = []
    subprograms: list[plsql.Subprogram] = []
    helpers: set[str] = set()
    for name, fn in checked.fns.items():
        try:
            lowerer = PgFnLowerer(checked, fn, checked.analyses[name], schema)
            body, tree = lowerer.lower_fn()
            helpers |= lowerer.helpers
        except Unsupported as problem:
            diagnostics.append(_unsupported(problem.what, problem.span))
            continue
        deterministic = any(a.name == "deterministic" for a in fn.decl.annotations)
        # a procedure takes no volatility
        volatility = " IMMUTABLE" if deterministic and not is_procedure(fn) else ""
        # @parallel(...) with a partition is refused by the checker (pell.checker.parallel)
        if fn.parallel_clause and not is_procedure(fn):
            # "PARALLEL SAFE indicates that the function is safe to run in parallel mode
            # without restriction" (PostgreSQL, CREATE FUNCTION): Oracle's PARALLEL_ENABLE
            volatility += " PARALLEL SAFE"
        # the body's dollar quote must not occur in it (a string or SQL of the user's)
        quote = next(q for q in _dollar_quotes() if q not in body)
        subprograms.append(tree)
        functions.append(
            f"CREATE OR REPLACE {_signature(fn, checked, schema)}\n"
            f"LANGUAGE plpgsql{volatility} AS {quote}\n{body}\n{quote};"
        )
    aggregates: list[str] = []
    for info in checked.aggregates.values():
        try:
            ddl = "\n\n".join(aggregate_ddl(info, schema, _QUOTE))
        except Unsupported as problem:
            diagnostics.append(_unsupported(problem.what, problem.span))
            continue
        quote = next(q for q in _dollar_quotes() if q not in ddl)
        aggregates.append(ddl.replace(_QUOTE, quote))
    if diagnostics:
        return None, diagnostics
    parts = [header, f"CREATE SCHEMA IF NOT EXISTS {schema};"]
    for name in _record_order(checked):
        parts += _record_ddl(checked, schema, name)
    parts += [json_helper(schema, helper) for helper in sorted(helpers)]
    parts += functions
    parts += aggregates
    return PgModule("\n\n".join(parts) + "\n", tuple(subprograms)), []


def lower_script(checked: CheckedModule, header: str) -> tuple[PgModule | None, list[Diagnostic]]:
    """A script (a file with no `module` line) as a DO block: its implicit procedure's
    declarations and statements are the block's (PostgreSQL 15 docs, "DO": "the code block
    is treated as though it were the body of a function with no parameters, returning
    void"). It creates nothing, so it needs no schema."""
    # a DO block declares no functions or types of its own
    declared = [r.decl.span for r in checked.records.values()]
    declared += [f.decl.name_span for name, f in checked.fns.items() if name != ast.SCRIPT_FN]
    if declared:
        return None, [_unsupported("a fn or record in a script", min(declared, key=lambda s: s.start))]
    fn = checked.fns[ast.SCRIPT_FN]
    try:
        body, tree = PgFnLowerer(checked, fn, checked.analyses[fn.decl.name], "pg_temp").lower_fn()
    except Unsupported as problem:
        return None, [_unsupported(problem.what, problem.span)]
    quote = next(q for q in _dollar_quotes() if q not in body)
    return PgModule(f"{header}\n\nDO {quote}\n{body}\n{quote};\n", (tree,)), []


# Where an aggregate's functions' dollar quote goes, until one is chosen that its text lacks
_QUOTE = "\x00quote\x00"


def _dollar_quotes() -> Iterator[str]:
    yield "$pell$"
    for number in itertools.count(2):
        yield f"$pell{number}$"


def _unsupported(what: str, span: ast.Span) -> Diagnostic:
    return Diagnostic.of(
        "unsupported",
        f"{what} is not supported on postgres yet",
        span,
        hints=("docs/postgres.md lists what the postgres target lowers",),
    )


def sqlstate(code: int) -> str:
    """A Pell error's SQLSTATE: class `PE` and the last three digits of its Oracle code
    (-20100 -> PE100): the same numbering, the same categories (PE3xx: panics)."""
    return f"PE{-code - 20000:03d}"


def runtime_sql(errors: list[tuple[str, int]], header: str) -> str:
    """The `pell_runtime` schema: one function per Pell error returning its SQLSTATE, so module
    code names errors, never numbers (as the Oracle runtime's constants do)."""
    parts = [header, "CREATE SCHEMA IF NOT EXISTS pell_runtime;"]
    for exception, code in errors:
        parts.append(
            f"CREATE OR REPLACE FUNCTION pell_runtime.{exception}() RETURNS text\n"
            f"LANGUAGE sql IMMUTABLE AS $pell$ SELECT '{sqlstate(code)}' $pell$;"
        )
    return "\n\n".join(parts) + "\n"

