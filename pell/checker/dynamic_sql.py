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

A `{name}` that is a whole string literal of the text (`'{name}'`) is a value where SQL takes
no bind (EXPLAIN PLAN's STATEMENT_ID): the quotes are replaced by
DBMS_ASSERT.ENQUOTE_LITERAL(name), which adds them and raises a value error unless every other
`'` in the value is doubled (DBMS_ASSERT, ENQUOTE_LITERAL Function, Usage Notes), so the value
cannot end the literal. After `explain plan ... for`, a `{name}` that ends the text is the
statement explained: EXPLAIN PLAN only explains it, and the text before it fixes what the
statement is; pellc cannot read it, so it counts as a commit (possibly DDL) like any text with a
name spliced in.

A `let x: T = exec_dyn(...)` takes one row INTO x (a record field by field); a statement
`exec_dyn(...);` takes none, so its text cannot be a query: "If dynamic_sql_statement is a
SELECT statement, and you omit both into_clause and bulk_collect_into_clause, then
execute_immediate_statement never runs" (EXECUTE IMMEDIATE Statement, Semantics). A `let c:
cursor<T> = exec_dyn(...)`, or `return exec_dyn(...)` in a fn that returns a cursor, opens a
cursor over the query: OPEN c FOR text USING binds (PL/SQL Language Reference, OPEN FOR
Statement).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pell import ast, naming, sqltext
from pell.checker import types as t
from pell.records import record
from pell.sqltokens import TokenType

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

NAME = "exec_dyn"
# What stands for a `{name}` while pellc reads the text: any identifier does; in `'{name}'`,
# the literal's text
NAME_STAND_IN = "pell_dyn_name"
LITERAL_STAND_IN = "pell_dyn_literal"
SpliceKind = Literal["name", "literal", "statement"]
# The text before a whole statement spliced in: `explain plan ... for`
_BEFORE_STATEMENT = re.compile(r"\bfor\s*$", re.IGNORECASE)
_EXPLAIN_PLAN = re.compile(r"\s*explain\s+plan\b", re.IGNORECASE)
# The SQL text of a query, by its first word
_QUERY_WORDS = ("select", "with")
_BLOCK_WORDS = ("begin", "declare")


@record
class Splice:
    """A text variable spliced into dynamic SQL: its PL/SQL name and how it is checked (a
    name: QUALIFIED_SQL_NAME; a literal: ENQUOTE_LITERAL; a statement explained: as it is)."""

    plsql: str
    kind: SpliceKind


@record
class DynamicSql:
    """One `exec_dyn` call (or dynamic query) as it is lowered: the text's pieces, each a
    literal piece of SQL (str) or a Splice (a literal's quotes left out of the pieces around
    it); the PL/SQL names of its binds, in USING order; whether it fills a `let` (INTO) or
    opens a cursor (OPEN FOR)."""

    pieces: tuple[str | Splice, ...]
    binds: tuple[str, ...]
    into: bool
    opens: bool = False

    @property
    def literal(self) -> str | None:
        """The whole SQL text when nothing is spliced into it; None otherwise."""
        if any(isinstance(piece, Splice) for piece in self.pieces):
            return None
        return "".join(str(piece) for piece in self.pieces)

    @property
    def readable(self) -> tuple[str | None, bool]:
        """The text pellc reads of it (a stand-in for each spliced name or literal), None with a
        statement spliced in; and whether a name is spliced in."""
        text: list[str] = []
        for piece in self.pieces:
            if isinstance(piece, str):
                text.append(piece)
            elif piece.kind == "statement":
                return None, False
            else:
                # a literal is read as the bind it stands for: a block's EXECUTE IMMEDIATE of
                # it, or a committing call given it, runs what pellc cannot read
                text.append(f" {NAME_STAND_IN} " if piece.kind == "name" else " :pell_literal ")
        return "".join(text), any(
            isinstance(piece, Splice) and piece.kind == "name" for piece in self.pieces
        )


def splice_kind(parts: Sequence[object], index: int) -> SpliceKind:
    """How the `{...}` at `parts[index]` of a dynamic text (its parts: str, or a splice) is
    written: `'{x}'`, a whole string literal; `{x}` ending an `explain plan ... for` text, the
    statement explained; any other, a name (the checker says whether it stands as one)."""
    before = parts[index - 1] if index > 0 else ""
    after = parts[index + 1] if index + 1 < len(parts) else ""
    before = before if isinstance(before, str) else ""
    after = after if isinstance(after, str) else ""
    if before.endswith("'") and after.startswith("'"):
        return "literal"
    first = parts[0] if parts and isinstance(parts[0], str) else ""
    rest = parts[index + 1 :]
    if (
        _EXPLAIN_PLAN.match(first)
        and _BEFORE_STATEMENT.search(before)
        and all(isinstance(part, str) and not part.strip() for part in rest)
    ):
        return "statement"
    return "name"


def readable_text(parts: Sequence[object]) -> tuple[str, tuple[SpliceKind, ...]]:
    """The text pellc reads for a dynamic text's parts (a stand-in name for each spliced name,
    a stand-in inside each spliced literal's quotes, nothing for a statement), and the kind
    of each splice in order."""
    text: list[str] = []
    kinds: list[SpliceKind] = []
    for index, part in enumerate(parts):
        if isinstance(part, str):
            text.append(part)
            continue
        kind = splice_kind(parts, index)
        kinds.append(kind)
        text.append({"name": f" {NAME_STAND_IN} ", "literal": LITERAL_STAND_IN}.get(kind, ""))
    return "".join(text), tuple(kinds)


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
    """Check `exec_dyn(...)`; `into`: it is the value of a `let` (or `return`) of type
    `expected` (which checks the rest): a row read INTO it, or a cursor opened over it.
    Records what the lowering needs in the fn's analysis."""
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
    opens = into and isinstance(expected, t.CursorType)
    if into and not opens and not _fetchable(expected):
        checker.error(
            "dynamic-sql",
            f"`{NAME}` reads one row into a scalar (not bool) or a record, or opens a "
            f"`cursor<T>`; the `let` is "
            f"{'of no type written' if expected is None else f'a `{expected}`'}",
            expr.span,
            f"write its type: `let n: number = {NAME}(...)`",
        )
        for arg in _values(expr):
            checker.expr(arg, None)
        return t.UNKNOWN
    dynamic = check_text(checker, text, into, opens, as_statement, expr.span)
    if dynamic is not None:
        checker.analysis.dynamic_sql[id(expr)] = dynamic
    return expected if into and expected is not None else t.UNIT


def check_text(
    checker: ExpressionChecker,
    text: ast.StringLit,
    into: bool,
    opens: bool,
    as_statement: bool,
    span: ast.Span,
) -> DynamicSql | None:
    """Check one dynamic SQL text; its lowering, or None when it is wrong (reported)."""
    decl = checker.fn.decl
    written = "".join(part for part in text.parts if isinstance(part, str)).lower()
    if NAME_STAND_IN in written or LITERAL_STAND_IN in written:
        # pellc reads each splice as one of these words: the text's own would pass for one
        checker.error(
            "dynamic-sql",
            f"`{NAME}`'s text holds `{NAME_STAND_IN}` or `{LITERAL_STAND_IN}`, the words pellc "
            "reads its splices as",
            text.span,
            "rename that name in the SQL",
        )
        return None
    pieces, readable, kinds, ok = _pieces(checker, text)
    try:
        shape = sqltext.analyse(readable)
    except sqltext.SqlTextError as error:
        checker.error("dynamic-sql", f"`{NAME}`'s SQL text cannot be read: {error}", text.span)
        return None
    binds, bound = _binds(checker, decl, shape, text.span)
    if ok and not _splices_stand_alone(text, shape, kinds):
        checker.error(
            "dynamic-sql",
            f"a `{{name}}` in `{NAME}`'s text must stand where an identifier does: not inside "
            "a string, a quoted name or a comment, and not joined to other characters (a "
            "quoted name DBMS_ASSERT passes may hold any character, `'` and newlines "
            "included, so there it could end the string or the comment)",
            text.span,
            "pass a value as a bind: `:name` in the text, and the parameter in @binds(name); "
            "where SQL takes no bind, make the splice the whole string: `'{name}'`",
        )
        ok = False
    words = [token.text.lower() for token in shape.tokens]
    if (not words or words == [NAME_STAND_IN]) and "statement" not in kinds:
        # EXECUTE IMMEDIATE of no text raises ORA-06535; a name alone would run as a whole
        # statement (`commit`)
        checker.error(
            "dynamic-sql",
            f"`{NAME}`'s text is {'empty' if not words else 'one spliced name'}: it runs no "
            "statement pellc can read",
            text.span,
            "write the statement, splicing names where identifiers stand",
        )
        return None
    explains = words[:2] == ["explain", "plan"] and words[-1:] == ["for"]
    if "statement" in kinds and (into or not as_statement or not explains):
        checker.error(
            "dynamic-sql",
            f"a whole statement spliced into `{NAME}`'s text stands only at the end of an "
            "`explain plan ... for` statement run on its own, which explains it and runs "
            "nothing of it",
            text.span,
            "splice names with `{name}` and bind values with `:name`",
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
    first = words[0] if words else ""
    if first in _BLOCK_WORDS:
        binds = list(dict.fromkeys(binds))  # a PL/SQL block: a repeated name binds once
    if opens and first not in _QUERY_WORDS:
        checker.error(
            "dynamic-sql",
            f"a cursor opens over a query (`select` or `with`); this `{NAME}` runs no query",
            span,
            f"run it as a statement: `{NAME}(...);`",
        )
        ok = False
    elif not into and first in _QUERY_WORDS and as_statement:
        checker.error(
            "dynamic-sql",
            f"this `{NAME}` runs a query and reads no row from it: Oracle never runs it",
            span,
            f"read its row: `let row: T = {NAME}(...)`",
        )
        ok = False
    elif into and first not in (*_QUERY_WORDS, NAME_STAND_IN):
        checker.error(
            "dynamic-sql",
            f"this `{NAME}` runs no query, so it has no row to give the `let`",
            span,
            f"run it as a statement: `{NAME}(...);`",
        )
        ok = False
    elif not into and not as_statement:
        checker.error(
            "dynamic-sql",
            f"`{NAME}` stands as a statement of its own, or as the value of a `let` with its "
            "type written",
            span,
            f"`let n: number = {NAME}(...);` then use `n`",
        )
        ok = False
    if ok and bound:
        return DynamicSql(tuple(pieces), tuple(binds), into and not opens, opens)
    return None


def _fetchable(type_: t.Type | None) -> bool:
    if isinstance(type_, t.RecordType):
        return True
    return isinstance(type_, t.Scalar) and type_ != t.BOOL


def _pieces(
    checker: ExpressionChecker, text: ast.StringLit
) -> tuple[list[str | Splice], str, tuple[SpliceKind, ...], bool]:
    """The text's pieces (a spliced literal's quotes left out of the pieces around it), the
    text pellc reads (readable_text), the kind of each splice, and whether every splice is a
    text variable."""
    readable, kinds = readable_text(text.parts)
    pieces: list[str | Splice] = []
    ok = True
    splices = iter(kinds)
    for part in text.parts:
        if isinstance(part, str):
            if pieces and isinstance(pieces[-1], Splice) and pieces[-1].kind == "literal":
                part = part[1:]  # the closing quote: ENQUOTE_LITERAL writes it
            pieces.append(part)
            continue
        kind = next(splices)
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
        if kind == "literal" and pieces and isinstance(pieces[-1], str):
            pieces[-1] = pieces[-1][:-1]  # the opening quote: ENQUOTE_LITERAL writes it
        pieces.append(Splice(symbol.plsql, kind))
    return pieces, readable, kinds, ok


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


def _splices_stand_alone(
    text: ast.StringLit, shape: sqltext.SqlShape, kinds: tuple[SpliceKind, ...]
) -> bool:
    """Whether every `{name}` of `text` stands alone as an identifier: a word of its own in the
    SQL (not in a string, a quoted name or a comment, which the tokens leave out or hold
    whole), with nothing that joins it to more characters on either side; and every
    `'{name}'` is a whole string literal of the SQL (not inside a comment, nor after a
    doubled quote inside a longer string).
    DBMS_ASSERT.QUALIFIED_SQL_NAME accepts a quoted name, whose text may be any characters but
    `"` (PL/SQL Packages and Types Reference, DBMS_ASSERT): only where an identifier stands
    is that harmless."""
    words = sum(
        1
        for token in shape.tokens
        if token.token_type == TokenType.VAR and token.text.lower() == NAME_STAND_IN
    )
    literals = sum(
        1
        for token in shape.tokens
        if token.token_type == TokenType.STRING
        and token.text == LITERAL_STAND_IN
        and token.end - token.start == len(LITERAL_STAND_IN) + 1  # `'...'`, nothing doubled
    )
    if words != kinds.count("name") or literals != kinds.count("literal"):
        return False
    # each piece of literal text, None for a splice
    texts = [part if isinstance(part, str) else None for part in text.parts]
    splices = iter(kinds)
    for index, piece in enumerate(texts):
        if piece is not None or next(splices) != "name":
            continue
        before = texts[index - 1] if index > 0 else ""
        after = texts[index + 1] if index + 1 < len(texts) else ""
        if before is None or after is None:
            return False  # `{a}{b}`: one name of two splices
        for neighbour in (before[-1:], after[:1]):
            if neighbour and (neighbour.isalnum() or neighbour in _JOINING):
                return False
    return True
