"""An aggregate (pell.checker.aggregates) on PostgreSQL: CREATE AGGREGATE over a composite
state type and PL/pgSQL functions for its parts (PostgreSQL 15, "CREATE AGGREGATE" and
"User-Defined Aggregates").

  CREATE TYPE s.<name>_impl AS (...);                        the state
  s.<name>_init() RETURNS state                              the state defaults
  s.<name>_step(self state, p_v T) RETURNS state             SFUNC
  s.<name>_merge(self state, p_o state) RETURNS state        COMBINEFUNC, with `merge`
  s.<name>_finish(self state) RETURNS R                      FINALFUNC
  CREATE OR REPLACE AGGREGATE s.<name>(T) (SFUNC, STYPE, [COMBINEFUNC,] FINALFUNC
    [, PARALLEL = SAFE])

No INITCOND: the state starts NULL, and each function makes it from `_init()` first, as
Oracle's ODCIAggregateInitialize makes every context before it is used (a state of NULL
fields is no NULL state: `IS NOT DISTINCT FROM NULL` tells them apart). SFUNC is not strict,
so PostgreSQL passes NULL inputs too: `step` skips them, as Oracle does ("ODCIAggregateIterate
is not invoked for null values", Data Cartridge Developer's Guide). Several arguments are
PostgreSQL's own (`CREATE AGGREGATE f(text, numeric)`; Oracle passes one object holding them,
never NULL, so none is skipped). PARALLEL = SAFE with
`@parallel` only: "An aggregate will not be considered for parallelization if it is marked
PARALLEL UNSAFE ... or if it has no combine function" (CREATE AGGREGATE).
"""

from __future__ import annotations

from pell import naming, plsql
from pell.checker import types as t
from pell.checker.aggregates import INITIALIZE, STATE_PLSQL, AggregateInfo
from pell.postgres.composite import composite_type_ddl
from pell.postgres.lower import PgFnLowerer
from pell.postgres.names import sql_type

INDENT = "  "


def state_type(schema: str, info: AggregateInfo) -> str:
    return f"{schema}.{info.impl_type.split('.')[-1]}"


def aggregate_ddl(
    info: AggregateInfo, schema: str, quote: str, helpers: set[str] | None = None
) -> list[str]:
    """The state type, the parts' functions and the aggregate, one statement each; the
    schema's helper functions the parts call are added to `helpers`."""
    state = state_type(schema, info)
    name = f"{schema}.{info.decl.name.lower()}"
    fields = [
        f"{naming.field_name(field)} {sql_type(type_, info.view)}"
        for field, type_ in info.state.items()
    ]
    # made where it is missing or changed, as a record's type is: never dropped CASCADE (a
    # view of the aggregate would go with it)
    statements = list(composite_type_ddl(schema, state, fields)[:2])
    make = f"IF self IS NOT DISTINCT FROM NULL THEN self := {name}_init(); END IF;"
    # PostgreSQL's aggregates take several arguments (on Oracle: one object holding them)
    step = info.parts["step"][0]
    values = [
        (naming.param_name(p.decl.name), sql_type(p.type, info.view)) for p in step.params[1:]
    ]
    input_types = ", ".join(sql_type(x, info.view) for x in info.inputs)
    # Oracle skips a NULL value; with several, the object that holds them is never NULL
    skip = [f"IF {values[0][0]} IS NULL THEN RETURN self; END IF;"] if len(values) == 1 else []
    functions = [
        (f"{name}_init() RETURNS {state}", INITIALIZE, [], f"{STATE_PLSQL[INITIALIZE]} {state};"),
        (
            f"{name}_step(self {state}, {', '.join(f'{v} {x}' for v, x in values)}) "
            f"RETURNS {state}",
            "step",
            [*skip, make],
            "",
        ),
    ]
    merge = info.parts.get("merge")
    if merge is not None:
        other = naming.param_name(merge[0].params[1].decl.name)
        functions.append(
            (
                f"{name}_merge(self {state}, {other} {state}) RETURNS {state}",
                "merge",
                [
                    make,
                    f"IF {other} IS NOT DISTINCT FROM NULL THEN {other} := {name}_init(); END IF;",
                ],
                "",
            )
        )
    functions.append(
        (
            f"{name}_finish(self {state}) RETURNS {sql_type(info.returns, info.view)}",
            "finish",
            [make],
            "",
        )
    )
    for signature, part, prologue, declared in functions:
        body = _part_body(info, part, schema, prologue, declared, helpers)
        statements.append(
            f"CREATE OR REPLACE FUNCTION {signature}\nLANGUAGE plpgsql AS {quote}\n{body}\n{quote};"
        )
    options = [f"SFUNC = {name}_step", f"STYPE = {state}"]
    if merge is not None:
        options.append(f"COMBINEFUNC = {name}_merge")
    options.append(f"FINALFUNC = {name}_finish")
    if info.parallel:
        options.append("PARALLEL = SAFE")
    statements.append(
        f"CREATE OR REPLACE AGGREGATE {name}({input_types}) (\n"
        + ",\n".join(INDENT + option for option in options)
        + "\n);"
    )
    return statements


def _part_body(
    info: AggregateInfo,
    part: str,
    schema: str,
    prologue: list[str],
    declared: str,
    helpers: set[str] | None = None,
) -> str:
    """A part's PL/pgSQL between the dollar quotes: the prologue, the body, each `return` of
    `step`, `merge` and the defaults returning the state."""
    fn, analysis = info.parts[part]
    lowerer = PgFnLowerer(info.view, fn, analysis, schema)
    _, subprogram = lowerer.lower_fn()
    if helpers is not None:
        helpers |= lowerer.helpers
    state = STATE_PLSQL[part]
    body = _returning_state(subprogram.body, state if part != "finish" else None)
    if part == INITIALIZE:
        # a list starts empty, never NULL (as the Oracle state's nested table does)
        body[:0] = [
            plsql.Assign(f"{state}.{naming.field_name(field)}", "'{}'")
            for field, type_ in info.state.items()
            if isinstance(type_, t.ListType)
        ]
    if part != "finish" and analysis.falls_through:
        body.append(plsql.Return(state))
    body = [stmt for stmt in body if not isinstance(stmt, plsql.Null)]
    printer = plsql.Printer("postgres", marks=False)
    printer.statements(body, 1)
    declarations = [
        *([declared] if declared else []),
        *(d.text for d in subprogram.declarations if isinstance(d, plsql.Variable)),
    ]
    declare = ["DECLARE", *(INDENT + d for d in declarations)] if declarations else []
    return "\n".join([*declare, "BEGIN", *(INDENT + line for line in prologue), *printer.lines, "END;"])


def _returning_state(stmts: list[plsql.Stmt], state: str | None) -> list[plsql.Stmt]:
    """`stmts` with each bare RETURN returning `state` (None: as they are)."""
    if state is None:
        return stmts
    out: list[plsql.Stmt] = []
    for stmt in stmts:
        if isinstance(stmt, plsql.Return) and stmt.value is None:
            out.append(plsql.Return(state, origin=stmt.origin))
            continue
        if isinstance(stmt, plsql.If):
            for branch in stmt.branches:
                branch.body = _returning_state(branch.body, state)
            if stmt.otherwise is not None:
                stmt.otherwise = _returning_state(stmt.otherwise, state)
        elif isinstance(stmt, plsql.Loop | plsql.CursorLoop | plsql.RetryLoop | plsql.Block):
            stmt.body = _returning_state(stmt.body, state)
        out.append(stmt)
    return out
