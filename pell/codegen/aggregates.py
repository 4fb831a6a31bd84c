"""An aggregate (pell.checker.aggregates) -> its implementation object type, the type's body
and the aggregate function, three schema-level statements.

Oracle Database Data Cartridge Developer's Guide, "User-Defined Aggregate Functions
Interface": the type implements
  STATIC FUNCTION ODCIAggregateInitialize(actx IN OUT <impltype>) RETURN NUMBER
  MEMBER FUNCTION ODCIAggregateIterate(self IN OUT <impltype>, val <inputdatatype>) RETURN NUMBER
  MEMBER FUNCTION ODCIAggregateMerge(self IN OUT <impltype>, ctx2 IN <impltype>) RETURN NUMBER
  MEMBER FUNCTION ODCIAggregateTerminate(self IN <impltype>, ReturnValue OUT <return_type>,
    flags IN number) RETURN NUMBER
each returning ODCIConst.Success (ODCIConst.Error on error); "these routines must be
implemented", Merge "during either serial or parallel evaluation". PL/SQL Language Reference,
"AGGREGATE Clause" and "PARALLEL_ENABLE Clause": `CREATE FUNCTION f(x IN T) RETURN R
[PARALLEL_ENABLE] AGGREGATE USING <impltype>`.
"""

from __future__ import annotations

import re

from pell import ast, naming, plsql
from pell.checker import types as t
from pell.checker.aggregates import INITIALIZE, STATE_PLSQL, AggregateInfo
from pell.codegen.subprograms import FnLowerer, SubprogramView
from pell.codegen.types import plsql_type
from pell.plsql import source_marker
from pell.resources import template_environment

SUCCESS = "ODCIConst.Success"
RESULT = "returnValue"  # Terminate's OUT parameter, as the interface names it
ERROR = "ODCIConst.Error"
# Iterate's argument when the aggregate takes several: an object of their type (`p_` is every
# Pell parameter's prefix, so no parameter has this name)
ARGS = "pell_args"


# A type of the package, as the lowering names one: `t_order`, `t_number_list`
_PACKAGE_TYPE = re.compile(r"\bt_\w+")


class PartLowerer(FnLowerer):
    """A part's body as a method of the type: the state's lists are nested tables of the
    schema (PL/SQL Language Reference, "Collection Types"), which grow by EXTEND and are made
    by their constructor, not the package's INDEX BY tables."""

    def __init__(self, info: AggregateInfo, part: str, target: str) -> None:
        fn, analysis = info.parts[part]
        super().__init__(info.view, fn, analysis, target)
        self.info = info
        # the PL/SQL text of each state list (`SELF.vals`, `sctx.vals`) -> its type
        self.collections = {
            f"{state}.{naming.field_name(field)}": collection
            for field, collection in info.collections.items()
            for state in (STATE_PLSQL[part], *(naming.param_name(p.decl.name) for p in fn.params))
        }

    def state_list(self, expr: ast.Expr) -> str | None:
        """`expr` lowered, when it is a list of a state (`self.vals`, `o.vals`)."""
        if not isinstance(expr, ast.FieldAccess):
            return None
        lowered = self.lower(expr)
        return lowered if lowered in self.collections else None

    def block(self, block: ast.Block) -> None:
        # `self.vals.append(v)`: the nested table grows first (the package's statement table
        # dispatches every other statement)
        for stmt in block.stmts:
            expr = stmt.expr if isinstance(stmt, ast.ExprStmt) else None
            target = None
            if isinstance(expr, ast.MethodCall) and expr.name == "append":
                target = self.state_list(expr.target)
            if expr is None or target is None:
                super().block(ast.Block((stmt,), span=block.span))
                continue
            assert isinstance(expr, ast.MethodCall)
            self.temps_in_use.clear()
            outer, self.source_offset = self.source_offset, stmt.span.start
            self.emit(plsql.Exec(f"{target}.EXTEND"))
            self.store(f"{target}({target}.LAST)", expr.args[0], self.type_of(expr.args[0]))
            self.source_offset = outer

    def store_list(
        self, target: str, value: ast.ListLit, type_: t.Type, fresh: bool = False
    ) -> None:
        collection = self.collections.get(target)
        if collection is None:
            super().store_list(target, value, type_, fresh)
            return
        items = ", ".join(self.lower(item) for item in value.items)
        self.emit(plsql.Assign(target, f"{collection}({items})"))

    def loop_list(self, source: ast.Expr, body: ast.Block) -> str:
        # a state's list as it is: the package's list type is no local of a type's method
        return self.state_list(source) or super().loop_list(source, body)


def package_dependencies(info: AggregateInfo, target: str) -> list[str]:
    """What of the package the parts' lowering would use, which a type's body cannot: its
    private functions (`pell_number_text`) and its types (`t_order`, `t_number_list`)."""
    needed: set[str] = set()
    for part in info.parts:
        lowerer = PartLowerer(info, part, target)
        subprogram = lowerer.lower_fn()
        needed |= lowerer.helpers
        needed.update(lowerer.list_copies)  # another package's list, copied (list_copies.py)
        for declaration in subprogram.declarations:
            if isinstance(declaration, plsql.Variable):
                needed.update(_PACKAGE_TYPE.findall(declaration.text))
    return sorted(needed)


def aggregate_statements(info: AggregateInfo, target: str) -> list[str]:
    """CREATE TYPE, CREATE TYPE BODY and CREATE FUNCTION, each ending in `/`."""
    impl = info.impl_type
    # several arguments are one object of their type (pell.checker.aggregates)
    input_type = info.args_type or _sql_param_type(info.input)
    result_type = _sql_param_type(info.returns)
    step = info.parts.get("step")
    step_param = step[0].params[1].decl.name if step and len(step[0].params) > 1 else "value"
    value = ARGS if info.args_type else naming.param_name(step_param)
    signatures = {
        INITIALIZE: f"STATIC FUNCTION ODCIAggregateInitialize(sctx IN OUT {impl}) RETURN NUMBER",
        "step": f"MEMBER FUNCTION ODCIAggregateIterate(self IN OUT {impl}, "
        f"{value} IN {input_type}) RETURN NUMBER",
        "merge": f"MEMBER FUNCTION ODCIAggregateMerge(self IN OUT {impl}, "
        f"{_merge_param(info)} IN {impl}) RETURN NUMBER",
        "finish": f"MEMBER FUNCTION ODCIAggregateTerminate(self IN {impl}, "
        f"{RESULT} OUT {result_type}, flags IN NUMBER) RETURN NUMBER",
    }
    order = (INITIALIZE, "step", "merge", "finish")
    attributes = [
        f"  {naming.field_name(name)} {info.collections.get(name) or plsql_type(type_, 'field')}"
        for name, type_ in info.state.items()
    ]
    type_sql = (
        f"CREATE OR REPLACE TYPE {impl} FORCE AS OBJECT (\n"
        + ",\n".join([*attributes, *(f"  {signatures[part]}" for part in order)])
        + "\n);\n/"
    )
    template = template_environment().get_template("subprogram.sql.j2")
    bodies = []
    for part in order:
        view = _part_view(info, part, signatures[part], target)
        bodies.append(template.render(subprogram=view).rstrip("\n"))
    indented = "\n\n".join(
        "\n".join("  " + line if line else line for line in body.split("\n")) for body in bodies
    )
    body_sql = f"CREATE OR REPLACE TYPE BODY {impl} AS\n{indented}\nEND;\n/"
    clause = " PARALLEL_ENABLE" if info.parallel else ""
    param = naming.param_name(info.decl.params[0].name) if info.decl.params else "p_value"
    function_sql = (
        source_marker(info.decl.name_span.start)
        + f"CREATE OR REPLACE FUNCTION {info.function}({ARGS if info.args_type else param} "
        f"IN {input_type}) "
        f"RETURN {result_type}{clause}\nAGGREGATE USING {impl};\n/"
    )
    collections = [
        f"CREATE OR REPLACE TYPE {collection} FORCE AS TABLE OF "
        f"{plsql_type(_element(info.state[field]), 'field')};\n/"
        for field, collection in info.collections.items()
    ]
    if info.args_type and step is not None:
        # one attribute per argument, named as `step` names them
        attributes = [
            f"  {naming.field_name(p.decl.name)} {plsql_type(p.type, 'field')}"
            for p in step[0].params[1:]
        ]
        arguments = (
            f"CREATE OR REPLACE TYPE {info.args_type} FORCE AS OBJECT (\n"
            + ",\n".join(attributes)
            + "\n);\n/"
        )
        collections.append(arguments)
    statements = [*collections, type_sql, body_sql, function_sql]
    statements[0] = source_marker(info.decl.name_span.start) + statements[0]
    return statements


def _sql_param_type(type_: t.Type) -> str:
    """A SQL function's or a SQL type method's parameter type: `int` is INTEGER (NUMBER(38)),
    PLS_INTEGER being PL/SQL's own (PL/SQL Language Reference, "PLS_INTEGER and BINARY_INTEGER
    Data Types"; SQL knows INTEGER, "ANSI, DB2, and SQL/DS Data Types")."""
    return "INTEGER" if type_ == t.INT else plsql_type(type_, "param")


def _element(type_: t.Type) -> t.Type:
    assert isinstance(type_, t.ListType)
    return type_.element


def _merge_param(info: AggregateInfo) -> str:
    merge = info.parts.get("merge")
    if merge is None or len(merge[0].params) < 2:
        return "ctx2"
    return naming.param_name(merge[0].params[1].decl.name)


def _part_view(info: AggregateInfo, part: str, signature: str, target: str) -> SubprogramView:
    """One routine: the part's lowered body, each `return` made the interface's."""
    found = info.parts.get(part)
    if found is None:
        # No `merge`: the routine must exist, and Oracle may call it (serially too); it fails
        # the interface's way, "ODCIConst.Error on error"
        lines = (
            f"  -- aggregate {info.decl.name} has no merge: two partial states cannot be combined",
            f"  RETURN {ERROR};",
        )
        return SubprogramView(signature, _routine_name(signature), (), lines)
    fn, analysis = found
    subprogram = PartLowerer(info, part, target).lower_fn()
    body = _returning_success(subprogram.body, part == "finish")
    if analysis.falls_through and part != "finish":
        body.append(plsql.Return(SUCCESS))
    if part == INITIALIZE:
        body = _constructed(info, body)
    body = [stmt for stmt in body if not isinstance(stmt, plsql.Null)]
    subprogram.body = body
    if part == "step" and info.args_type:
        # `step`'s parameters, each from its attribute of the arguments' object
        subprogram.declarations[:0] = [
            plsql.Variable(
                f"{naming.param_name(p.decl.name)} {plsql_type(p.type, 'local')} := "
                f"{ARGS}.{naming.field_name(p.decl.name)};"
            )
            for p in fn.params[1:]
        ]
    declared, body_lines = plsql.print_subprogram(subprogram)
    marked = source_marker(fn.decl.name_span.start) + signature
    return SubprogramView(marked, _routine_name(signature), tuple(declared), tuple(body_lines))


def _constructed(info: AggregateInfo, body: list[plsql.Stmt]) -> list[plsql.Stmt]:
    """Initialize's body: actx "will be null for regular aggregation" (the guide), so a new
    state is made, its defaults given to the constructor where each is a plain value (else
    NULL, and the statements that compute the defaults follow)."""
    attributes = [naming.field_name(name) for name in info.state]
    values = dict.fromkeys(attributes, "NULL")
    empty = {  # a list starts empty, never NULL (EXTEND on a NULL collection raises)
        naming.field_name(field): f"{collection}()"
        for field, collection in info.collections.items()
    }
    rest: list[plsql.Stmt] = []
    for stmt in body:
        if isinstance(stmt, plsql.Return):
            continue
        plain = isinstance(stmt, plsql.Assign) and not stmt.calls
        attribute = stmt.target.removeprefix("sctx.") if isinstance(stmt, plsql.Assign) else ""
        if plain and not rest and values.get(attribute) == "NULL":
            assert isinstance(stmt, plsql.Assign)
            values[attribute] = stmt.value
        else:
            rest.append(stmt)
    values = {
        name: empty.get(name, value) if value == "NULL" else value for name, value in values.items()
    }
    new = plsql.Assign("sctx", f"{info.impl_type}({', '.join(values.values())})")
    return [new, *rest, plsql.Return(SUCCESS)]


def _routine_name(signature: str) -> str:
    return signature.split("FUNCTION ", 1)[1].split("(", 1)[0]


def _returning_success(stmts: list[plsql.Stmt], finish: bool) -> list[plsql.Stmt]:
    """`stmts` with each RETURN the interface's: `finish`'s value goes to returnValue first."""
    out: list[plsql.Stmt] = []
    for stmt in stmts:
        if isinstance(stmt, plsql.Return):
            if finish and stmt.value is not None:
                out.append(plsql.Assign(RESULT, stmt.value, stmt.calls, origin=stmt.origin))
            out.append(plsql.Return(SUCCESS, origin=stmt.origin))
            continue
        if isinstance(stmt, plsql.If):
            for branch in stmt.branches:
                branch.body = _returning_success(branch.body, finish)
            if stmt.otherwise is not None:
                stmt.otherwise = _returning_success(stmt.otherwise, finish)
        elif isinstance(stmt, plsql.Loop | plsql.CursorLoop | plsql.RetryLoop | plsql.Block):
            stmt.body = _returning_success(stmt.body, finish)
        out.append(stmt)
    return out
