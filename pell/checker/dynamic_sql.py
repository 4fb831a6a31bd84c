"""Dynamic SQL: `exec_dyn("...")` in an `unsafe fn`, as public Pell writes it, lowered to
EXECUTE IMMEDIATE with binds only.

The text is one string literal. `{name}` in it splices a text variable into the SQL text: an
identifier (a table, a column), which is why the fn must say `unsafe`; pellc passes it through
DBMS_ASSERT.QUALIFIED_SQL_NAME, which raises ORA-44004 unless the value is a qualified SQL
name (PL/SQL Packages and Types Reference, DBMS_ASSERT, QUALIFIED_SQL_NAME Function), so no
value can carry SQL into the statement. A value goes to the statement only as a bind: `:name`
placeholders, each a parameter the fn lists in `@binds(...)`, passed in USING.

USING binds by position, not by name ("using_clause: Specifies bind variables, using
positional notation", PL/SQL Language Reference, EXECUTE IMMEDIATE Statement): pellc writes
one bind per placeholder in the order they stand in the text, and, for a SQL statement, one per
occurrence of a repeated name; in a PL/SQL block (`begin ...`) a repeated name is one
placeholder (PL/SQL Language Reference, "Repeated Placeholder Names in Dynamic SQL
Statements").

A `let x: T = exec_dyn(...)` takes one row INTO x (a record field by field); a statement
`exec_dyn(...);` takes none, so its text cannot be a query: "If dynamic_sql_statement is a
SELECT statement, and you omit both into_clause and bulk_collect_into_clause, then
execute_immediate_statement never runs" (EXECUTE IMMEDIATE Statement, Semantics).
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from pell import ast, naming, sqltext
from pell.checker import types as t
from pell.records import record
from pell.sqltokens import TokenType

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

NAME = "exec_dyn"
# What stands for a `{name}` while pellc reads the text: any identifier does
_NAME_STAND_IN = "pell_dyn_name"
# The SQL text of a query, by its first word
_QUERY_WORDS = ("select", "with")
_BLOCK_WORDS = ("begin", "declare")


@record
class DynamicSql:
    """One `exec_dyn` call as it is lowered: the text's pieces, each a literal piece of SQL
    (str) or the PL/SQL name of a text variable spliced in as an identifier (tuple of one);
    the PL/SQL names of its binds, in USING order; whether it fills a `let` (INTO)."""

    pieces: tuple[str | tuple[str], ...]
    binds: tuple[str, ...]
    into: bool

    @property
    def literal(self) -> str | None:
        """The whole SQL text when nothing is spliced into it; None otherwise."""
        if any(isinstance(piece, tuple) for piece in self.pieces):
            return None
        return "".join(str(piece) for piece in self.pieces)


def listed_binds(fn: ast.Fn) -> dict[str, ast.AnnotationArg]:
    """The names `@binds(a, b)` lists, each with its argument."""
    found: dict[str, ast.AnnotationArg] = {}
    for annotation in fn.annotations:
        if annotation.name == "binds":
            for arg in annotation.args:
                if arg.name is None and isinstance(arg.value, ast.Name):
                    found.setdefault(arg.value.path[0], arg)
    return found


def _values(expr: ast.Call) -> list[ast.Expr]:
    return [*expr.args, *(keyword.value for keyword in expr.keywords)]


def check_call(
    checker: ExpressionChecker, expr: ast.Call, into: bool, expected: t.Type | None
) -> t.Type:
    """Check `exec_dyn(...)`; `into`: it is the value of a `let` of type `expected` (the let
    checks the rest). Records what the lowering needs in the fn's analysis."""
    decl = checker.fn.decl
    as_statement = checker.as_statement  # typing its parts changes it
    text = expr.args[0] if len(expr.args) == 1 and not expr.keywords else None
    if not decl.unsafe or not isinstance(text, ast.StringLit):
        for arg in _values(expr):
            checker.expr(arg, None)
        if not decl.unsafe:
            checker.error(
                "dynamic-sql",
                f"`{NAME}` runs dynamic SQL, which only an `unsafe fn` may do; `{decl.name}` "
                "is not one",
                expr.callee.span,
                f"declare it `unsafe fn {decl.name}(...)`, or write the statement in "
                "`sql! { }`",
            )
        else:
            checker.error(
                "dynamic-sql",
                f"`{NAME}` takes one argument, the SQL text as a string literal",
                expr.span,
                "splice identifiers in with `{name}` and bind values with `:name` and "
                '@binds: `exec_dyn("delete from {table} where id = :id")`',
            )
        return t.UNKNOWN
    if into and not _fetchable(expected):
        checker.error(
            "dynamic-sql",
            f"`{NAME}` reads one row into a scalar (not bool) or a record; the `let` is "
            f"{'of no type written' if expected is None else f'a `{expected}`'}",
            expr.span,
            f"write its type: `let n: number = {NAME}(...)`",
        )
        for arg in _values(expr):
            checker.expr(arg, None)
        return t.UNKNOWN
    pieces, readable, ok = _pieces(checker, text)
    try:
        shape = sqltext.analyse("".join(readable))
    except sqltext.SqlTextError as error:
        checker.error("dynamic-sql", f"`{NAME}`'s SQL text cannot be read: {error}", text.span)
        return expected if into and expected is not None else t.UNKNOWN
    binds, bound = _binds(checker, decl, shape, text.span)
    if ok and not _splices_stand_alone(text, shape):
        checker.error(
            "dynamic-sql",
            f"a `{{name}}` in `{NAME}`'s text must stand where an identifier does: not inside "
            "a string, a quoted name or a comment, and not joined to other characters (a "
            "quoted name DBMS_ASSERT passes may hold any character, `'` and newlines "
            "included, so there it could end the string or the comment)",
            text.span,
            "pass a value as a bind: `:name` in the text, and the parameter in @binds(name)",
        )
        ok = False
    for colon, after in itertools.pairwise(shape.tokens):
        numbered = after.text[:1].isdigit()  # `:1`: no parameter to bind it from
        if colon.token_type == TokenType.COLON and after.start == colon.end + 1 and numbered:
            checker.error(
                "dynamic-sql",
                f"the placeholder `:{after.text}` binds no value: `{NAME}` binds named "
                "placeholders, each a parameter @binds lists",
                text.span,
                "name it after the parameter: `:id`, and list it: @binds(id)",
            )
            bound = False
    first = shape.tokens[0].text.lower() if shape.tokens else ""
    if first in _BLOCK_WORDS:
        binds = list(dict.fromkeys(binds))  # a PL/SQL block: a repeated name binds once
    if not into and first in _QUERY_WORDS and as_statement:
        checker.error(
            "dynamic-sql",
            f"this `{NAME}` runs a query and reads no row from it: Oracle never runs it",
            expr.span,
            f"read its row: `let row: T = {NAME}(...)`",
        )
        ok = False
    elif into and first not in (*_QUERY_WORDS, _NAME_STAND_IN):
        checker.error(
            "dynamic-sql",
            f"this `{NAME}` runs no query, so it has no row to give the `let`",
            expr.span,
            f"run it as a statement: `{NAME}(...);`",
        )
        ok = False
    elif not into and not as_statement:
        checker.error(
            "dynamic-sql",
            f"`{NAME}` stands as a statement of its own, or as the value of a `let` with its "
            "type written",
            expr.span,
            f"`let n: number = {NAME}(...);` then use `n`",
        )
        ok = False
    if ok and bound:
        checker.analysis.dynamic_sql[id(expr)] = DynamicSql(tuple(pieces), tuple(binds), into)
    return expected if into and expected is not None else t.UNIT


def _fetchable(type_: t.Type | None) -> bool:
    if isinstance(type_, t.RecordType):
        return True
    return isinstance(type_, t.Scalar) and type_ != t.BOOL


def _pieces(
    checker: ExpressionChecker, text: ast.StringLit
) -> tuple[list[str | tuple[str]], list[str], bool]:
    """The text's pieces (a spliced identifier as the 1-tuple of its PL/SQL name), the text
    pellc reads (a stand-in name for each), and whether every splice is a text variable."""
    pieces: list[str | tuple[str]] = []
    readable: list[str] = []
    ok = True
    for part in text.parts:
        if isinstance(part, str):
            pieces.append(part)
            readable.append(part)
            continue
        part_type = checker.expr(part, None)
        symbol = None
        if isinstance(part, ast.Name) and len(part.path) == 1:
            symbol = checker.lookup(part.path[0])
        if symbol is None or part_type != t.TEXT:
            what = f"a `{part_type}`" if symbol is not None else "this expression"
            checker.error(
                "type-mismatch",
                f"`{{...}}` in `{NAME}`'s text splices an identifier into the SQL: it takes a "
                f"`text` variable, not {what}",
                part.span,
                "pass a value as a bind instead: `:name` in the text, and the parameter in "
                "@binds(name)",
            )
            ok = False
            continue
        pieces.append((symbol.plsql,))
        readable.append(f" {_NAME_STAND_IN} ")
    return pieces, readable, ok


def _binds(
    checker: ExpressionChecker, decl: ast.Fn, shape: sqltext.SqlShape, span: ast.Span
) -> tuple[list[str], bool]:
    """The PL/SQL names of the placeholders' parameters, one per placeholder in text order;
    and whether each placeholder names a parameter that @binds lists."""
    listed = listed_binds(decl)
    params = {param.decl.name for param in checker.fn.params}
    binds: list[str] = []
    ok = True
    for bind in shape.binds:
        if bind.name not in listed or bind.name not in params:
            checker.error(
                "dynamic-sql",
                f"the placeholder `:{bind.name}` binds no value: `{decl.name}` lists no "
                f"parameter `{bind.name}` in @binds(...)",
                span,
                f"take `{bind.name}` as a parameter and list it: @binds({bind.name})",
            )
            ok = False
            continue
        binds.append(naming.param_name(bind.name))
    return binds, ok


# Characters that must not touch a splice: they would join it to a longer name, a quoted name,
# a string or a database link (`t@link`)
_JOINING = frozenset("\"'@$#_")


def _splices_stand_alone(text: ast.StringLit, shape: sqltext.SqlShape) -> bool:
    """Whether every `{name}` of `text` stands alone as an identifier: a word of its own in the
    SQL (not in a string, a quoted name or a comment, which the tokens leave out or hold
    whole), with nothing that joins it to more characters on either side.
    DBMS_ASSERT.QUALIFIED_SQL_NAME accepts a quoted name, whose text may be any characters but
    `"` (PL/SQL Packages and Types Reference, DBMS_ASSERT): only where an identifier stands
    is that harmless."""
    splices = sum(1 for part in text.parts if not isinstance(part, str))
    words = sum(
        1
        for token in shape.tokens
        if token.token_type == TokenType.VAR and token.text.lower() == _NAME_STAND_IN
    )
    if words != splices:
        return False
    # each piece of literal text, None for a splice
    texts = [part if isinstance(part, str) else None for part in text.parts]
    for index, piece in enumerate(texts):
        if piece is not None:
            continue
        before = texts[index - 1] if index > 0 else ""
        after = texts[index + 1] if index + 1 < len(texts) else ""
        if before is None or after is None:
            return False  # `{a}{b}`: one name of two splices
        for neighbour in (before[-1:], after[:1]):
            if neighbour and (neighbour.isalnum() or neighbour in _JOINING):
                return False
    return True
