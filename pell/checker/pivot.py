"""`pivot::sum_dyn(...)`, as public Pell writes it: a PIVOT over the column values a query
holds when it runs, opened as a cursor (`cursor<dyn>`) in an `unsafe fn`. (`pivot::sum(...,
over = E)`, over an enum's values, is a static query: pell.ast_builder.typed_pivot.)

    pivot::sum_dyn(source = sql! { select product, region, sales from orders },
                   rows = product, col = region, value = sales)

Oracle's PIVOT lists the values it makes columns of in its pivot_in_clause, as constants
(SQL Language Reference, SELECT, pivot_clause); values known only at run time need dynamic
SQL. pellc reads the distinct non-null values of `col` with static SQL, and writes each into
the PIVOT's text as a quoted literal that DBMS_ASSERT.ENQUOTE_LITERAL checks, with the value
as its column's alias through DBMS_ASSERT.ENQUOTE_NAME (PL/SQL Packages and Types Reference,
DBMS_ASSERT): no value can end its literal or its name. `rows`, `col` and `value` are
columns of the source, written by the programmer: pellc checks that each is a plain name and
writes it as it is. The source's binds are the cursor's USING binds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming, sqltext
from pell.checker import types as t
from pell.records import record
from pell.sqltokens import TokenType

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

DYNAMIC = "sum_dyn"
TYPED = "sum"  # pell.ast_builder.TYPED_PIVOT
_ROLES = ("source", "rows", "col", "value")


@record
class DynamicPivot:
    """A checked `pivot::sum_dyn`: its source query and the three columns (as written)."""

    source: ast.SqlBlock
    rows: str
    col: str
    value: str


def check_call(checker: ExpressionChecker, expr: ast.Call, expected: t.Type | None) -> t.Type:
    """Check `pivot::name(...)`; its type is `expected` when that is a cursor (the caller says
    which rows it reads), `cursor<dyn>` otherwise."""
    name = "::".join(expr.callee.path[1:])
    given = {keyword.name: keyword.value for keyword in expr.keywords}
    if name == TYPED:
        # pell.ast_builder.typed_pivot made a query of each one written as it should be
        for value in expr.args:
            checker.expr(value, None)
        checker.error(
            "type-mismatch",
            f"`pivot::{TYPED}` takes, by name, `source = sql! {{ select ... }}`, the columns "
            "`rows`, `col` and `value` (plain names), and `over = E`, an enum declared above "
            "it in this module, whose values are the PIVOT's columns",
            expr.callee.span,
            "for columns known only at run time, `pivot::sum_dyn` in an `unsafe fn`",
        )
        return t.UNKNOWN
    if name != DYNAMIC:
        for value in (*expr.args, *given.values()):
            checker.expr(value, None)
        checker.error(
            "unsupported",
            f"`pivot::{name}` is not supported yet; `pivot::{TYPED}` and "
            f"`pivot::{DYNAMIC}` are",
            expr.callee.span,
        )
        return t.UNKNOWN
    ok = True
    if not checker.fn.decl.unsafe:
        checker.error(
            "dynamic-sql",
            f"`pivot::{DYNAMIC}` runs dynamic SQL, which only an `unsafe fn` may do; "
            f"`{checker.fn.decl.name}` is not one",
            expr.callee.span,
            f"declare it `unsafe fn {checker.fn.decl.name}(...)`",
        )
        ok = False
    for arg in expr.args:
        if not isinstance(arg, ast.SqlBlock):  # a query alone needs no terminator here
            checker.expr(arg, None)
        checker.error(
            "keyword-argument",
            f"`pivot::{DYNAMIC}` takes its arguments by name: {', '.join(_ROLES)}",
            arg.span,
        )
        ok = False
    for keyword in expr.keywords:
        if keyword.name not in _ROLES:
            checker.expr(keyword.value, None)
            checker.error(
                "keyword-argument",
                f"`pivot::{DYNAMIC}` has no argument `{keyword.name}`; it takes "
                f"{', '.join(_ROLES)}",
                keyword.name_span,
            )
            ok = False
    missing = [role for role in _ROLES if role not in given]
    if missing:
        checker.error(
            "arity",
            f"`pivot::{DYNAMIC}` is missing {', '.join(f'`{m}`' for m in missing)}",
            expr.span,
        )
        ok = False
    source = given.get("source")
    if source is not None and not (
        isinstance(source, ast.SqlBlock) and _is_query(checker, source)
    ):
        if not isinstance(source, ast.SqlBlock):
            checker.expr(source, None)
        checker.error(
            "type-mismatch",
            f"`source` of `pivot::{DYNAMIC}` is a query: `sql! {{ select ... }}`, with no "
            "terminator",
            source.span,
        )
        ok = False
    columns: dict[str, str] = {}
    for role in _ROLES[1:]:
        column = given.get(role)
        if column is None:
            continue
        if isinstance(column, ast.Name) and len(column.path) == 1 and _plain(column.path[0]):
            columns[role] = column.path[0]
            continue
        checker.error(
            "type-mismatch",
            f"`{role}` of `pivot::{DYNAMIC}` names a column of the source: a plain name, "
            "as the query's select list has it",
            column.span,
        )
        ok = False
    if ok and isinstance(source, ast.SqlBlock):
        checker.analysis.pivots[id(expr)] = DynamicPivot(
            source, columns["rows"], columns["col"], columns["value"]
        )
    if isinstance(expected, t.CursorType):
        return expected
    return t.CursorType(t.DYN_ROW)


def _is_query(checker: ExpressionChecker, source: ast.SqlBlock) -> bool:
    """Is `source` a query (its binds resolved as any sql! block's)?"""
    shape = checker.sql(source)
    checker.analysis.types[id(source)] = t.UNKNOWN
    if shape is None:
        return True  # reported already
    return bool(shape.tokens) and shape.tokens[0].token_type in (TokenType.SELECT, TokenType.WITH)


def _plain(name: str) -> bool:
    """A name SQL reads as a column without quotes: not one of Oracle's reserved words."""
    return name.lower() not in naming.ORACLE_RESERVED


def source_text(
    source: ast.SqlBlock, binds: list[tuple[sqltext.Bind, str]]
) -> tuple[str, list[str]]:
    """The source query's text, each bind a positional placeholder (`:1`, `:2`, ...), and the
    PL/SQL values of those binds in USING order (USING binds by position)."""
    pieces: list[str] = []
    using: list[str] = []
    position = 0
    for bind, value in sorted(binds, key=lambda pair: pair[0].start):
        using.append(value)
        pieces += [source.text[position : bind.start], f":{len(using)}"]
        position = bind.end
    text = ("".join(pieces) + source.text[position:]).strip().rstrip(";").rstrip()
    if sqltext.ends_in_line_comment(text):
        text += "\n"  # what follows it in the PIVOT's text must not land in the comment
    return text, using
