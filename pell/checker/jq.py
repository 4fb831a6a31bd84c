"""`jq! { j | .users[] | select(.age >= 18) | .name }`: a jq-style query of a json value,
made a JSON_TABLE query (SQL Language Reference, JSON_TABLE) that the terminators of
`sql! { }` then read: `.collect()`, `.one()`, `.first()`.

The form public Pell writes: a json name, then stages joined by `|`:
  `.a.b`      members (before the iteration, the path to the array; after it, the value
              of each element to take, as the row or its fields)
  `.a[]`      each element of the array at `.a` (`.[]`: of the value itself), one row
              each: JSON_TABLE's row path `$.a[*]`; at most one per query
  `select(c)` after the iteration: the rows where `c` holds; `c` compares a member with a
              number or a string (`== != < <= > >=`), joined by `and`, `or` and parentheses
Without `[]` the query has one row: the value at the path.

Each column says what Oracle does with a value that is missing or of another type: a row's
value (or field) ERROR ON ERROR ERROR ON EMPTY, no NULL where a value was asked for; a
member that `select` compares NULL ON ERROR NULL ON EMPTY, so that a row without it (or
with a value of another type) is left out, as jq's `select` leaves out a comparison that is
not true. The document itself must be JSON (ERROR ON ERROR on the table).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.checker.json import member_path
from pell.diagnostics import quoted_with_article
from pell.records import record

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

_TOKEN = re.compile(
    r"\s*(?:(?P<string>\"(?:[^\"\\]|\\.)*\")|(?P<number>-?\d+(?:\.\d+)?)"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>==|!=|<=|>=|<|>)|(?P<punct>[.|()\[\]]))"
)
_SQL_OPERATORS = {"==": "=", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# JSON_TABLE column types by the Pell type of the value (JSON_value_return_type)
COLUMN_TYPES = {
    "text": "VARCHAR2(4000)",
    "number": "NUMBER",
    "int": "NUMBER",
    "bigtext": "CLOB",
    "date": "VARCHAR2(4000)",  # read back with the mask json::from writes (see _selected)
    "timestamp": "VARCHAR2(4000)",
    "json": "CLOB FORMAT JSON",
}


class JqError(Exception):
    def __init__(self, message: str, offset: int, length: int = 1) -> None:
        super().__init__(message)
        self.offset = offset
        self.length = length


@record
class Token:
    kind: str  # string, number, name, op, punct, end
    text: str
    offset: int


@record
class Comparison:
    path: tuple[str, ...]
    op: str
    literal: str  # as SQL writes it
    is_number: bool


@record
class Condition:
    """`a or b`, `a and b`, or one comparison."""

    join: str  # "or", "and", "" for a comparison
    parts: tuple[Condition | Comparison, ...]


@record
class JqQuery:
    source: str
    source_offset: int
    row_path: tuple[str, ...]  # members to the array (or to the value, without `[]`)
    iterates: bool
    filters: tuple[Condition, ...]
    projection: tuple[str, ...]  # members of each row's value to take


@record
class JqRows:
    """A checked query and the type of its rows (a record or a scalar), which the PostgreSQL
    target lowers (pell.postgres.jq_lowering) in place of the JSON_TABLE text."""

    query: JqQuery
    row: t.Type


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    position = 0
    while position < len(text):
        if not text[position:].strip():
            break
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            at = len(text) - len(text[position:].lstrip())
            raise JqError(f"`{text[at]}` cannot stand in a jq query", at)
        kind = match.lastgroup or ""
        start = match.start(kind)
        tokens.append(Token(kind, match.group(kind), start))
        position = match.end()
    tokens.append(Token("end", "", len(text.rstrip())))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = tokenize(text)
        self.index = 0

    def peek(self, ahead: int = 0) -> Token:
        return self.tokens[min(self.index + ahead, len(self.tokens) - 1)]

    def take(self) -> Token:
        token = self.peek()
        self.index += 1
        return token

    def expect(self, text: str, what: str) -> Token:
        token = self.peek()
        if token.text != text or token.kind not in ("punct", "op", "name"):
            raise JqError(f"expected {what}, found {_shown(token)}", token.offset, len(token.text) or 1)
        return self.take()

    def query(self) -> JqQuery:
        source = self.take()
        if source.kind != "name":
            raise JqError(
                "a jq query starts with the json value it reads: `jq! { j | .users[] }`",
                source.offset,
                len(source.text) or 1,
            )
        row: list[str] = []
        projection: list[str] = []
        filters: list[Condition] = []
        iterates = False
        while self.peek().text == "|" and self.peek().kind == "punct":
            self.take()
            token = self.peek()
            if token.kind == "name" and token.text == "select":
                self.take()
                if not iterates:
                    raise JqError(
                        "`select` filters the rows of an iteration: put `.array[]` before it",
                        token.offset,
                        len(token.text),
                    )
                if projection:
                    raise JqError(
                        "`select` after a member taken from each row: select first, then take",
                        token.offset,
                        len(token.text),
                    )
                self.expect("(", "`(` after `select`")
                filters.append(self.condition())
                self.expect(")", "`)` closing `select(`")
                continue
            steps, iteration, _ = self.path()
            if iteration is not None and (iterates or filters or projection):
                raise JqError(
                    "one `[]` per query: JSON_TABLE makes one row per element of one array",
                    iteration,
                    2,
                )
            if iteration is not None:
                row += steps[0]
                projection += steps[1]
                iterates = True
            elif iterates:
                projection += steps[0]
            else:
                row += steps[0]
        end = self.peek()
        if end.kind != "end":
            raise JqError(
                f"expected `|` or the end of the query, found {_shown(end)}",
                end.offset,
                len(end.text) or 1,
            )
        return JqQuery(
            source.text, source.offset, tuple(row), iterates, tuple(filters), tuple(projection)
        )

    def path(self) -> tuple[tuple[list[str], list[str]], int | None, int]:
        """`.a.b`, `.a[]`, `.[]`, `.a[].b`: the members before `[]`, after it, and where
        the `[]` is (None: none)."""
        start = self.expect(".", "a path (`.name`, `.array[]`) or `select(...)`").offset
        before: list[str] = []
        after: list[str] = []
        iteration: int | None = None
        expecting_member = True
        while True:
            token = self.peek()
            if token.kind == "name" and expecting_member:
                self.take()
                (after if iteration is not None else before).append(token.text)
                expecting_member = False
            elif token.text == "[" and token.kind == "punct":
                self.take()
                if iteration is not None:
                    raise JqError(
                        "one `[]` per query: JSON_TABLE makes one row per element of one array",
                        token.offset,
                        2,
                    )
                close = self.peek()
                if close.text != "]":
                    raise JqError(
                        "only `[]` (each element) is taken here, not an index or a slice",
                        close.offset,
                        len(close.text) or 1,
                    )
                self.take()
                iteration = token.offset
                expecting_member = False
            elif token.text == "." and token.kind == "punct" and not expecting_member:
                self.take()
                expecting_member = True
            else:
                break
        if expecting_member and (before or after):
            token = self.peek()
            raise JqError(f"expected a member name after `.`, found {_shown(token)}", token.offset)
        return (before, after), iteration, start

    def condition(self) -> Condition:
        parts: list[Condition | Comparison] = [self.conjunction()]
        while self.peek().kind == "name" and self.peek().text == "or":
            self.take()
            parts.append(self.conjunction())
        first = parts[0]
        if len(parts) == 1 and isinstance(first, Condition):
            return first
        return Condition("or", tuple(parts))

    def conjunction(self) -> Condition:
        parts: list[Condition | Comparison] = [self.comparison()]
        while self.peek().kind == "name" and self.peek().text == "and":
            self.take()
            parts.append(self.comparison())
        if len(parts) == 1 and isinstance(parts[0], Condition):
            return parts[0]
        return Condition("and" if len(parts) > 1 else "", tuple(parts))

    def comparison(self) -> Condition | Comparison:
        if self.peek().text == "(" and self.peek().kind == "punct":
            self.take()
            inner = self.condition()
            self.expect(")", "`)`")
            return inner
        (steps, _), iteration, start = self.path()
        if iteration is not None or not steps:
            raise JqError("`select` compares a member of the row: `.age >= 18`", start)
        op = self.take()
        if op.kind != "op":
            raise JqError(
                f"expected a comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`), found {_shown(op)}",
                op.offset,
                len(op.text) or 1,
            )
        value = self.take()
        if value.kind == "number":
            return Comparison(tuple(steps), _SQL_OPERATORS[op.text], value.text, True)
        if value.kind == "string":
            text = re.sub(r"\\(.)", r"\1", value.text[1:-1])
            if not text:
                # Oracle's '' is NULL ("a character value with a length of zero", SQL Language
                # Reference, Nulls): `= ''` and `<> ''` are never true, and no row would pass
                raise JqError(
                    "`select` cannot compare with `\"\"`: Oracle reads the empty string as NULL, "
                    "so the comparison is never true",
                    value.offset,
                    len(value.text),
                )
            return Comparison(tuple(steps), _SQL_OPERATORS[op.text], _quote(text), False)
        raise JqError(
            f"`select` compares with a number or a string, not {_shown(value)}",
            value.offset,
            len(value.text) or 1,
        )


def _shown(token: Token) -> str:
    return "the end of the query" if token.kind == "end" else f"`{token.text}`"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _path(steps: tuple[str, ...] | list[str], iterate: bool = False) -> str:
    return _quote("$" + "".join(member_path(s) for s in steps) + ("[*]" if iterate else ""))


def parse(text: str) -> JqQuery:
    return _Parser(text).query()


def check(
    checker: ExpressionChecker,
    block: ast.JqBlock,
    terminator: str | None,
    expected: t.Type | None,
) -> ast.SqlBlock | None:
    """The JSON_TABLE query of `block` for rows of the type expected (a list's elements for
    `.collect()`); None after a diagnostic."""
    if block.compiled:
        return block.compiled[0]
    from pell.checker.json import not_on_12_2

    if not_on_12_2(checker, ast.Span(block.span.start, block.span.start + 2)):
        return None
    try:
        query = parse(block.text)
    except JqError as error:
        start = block.text_start + error.offset
        checker.error("bad-jq", str(error), ast.Span(start, start + error.length))
        return None
    source_span = ast.Span(
        block.text_start + query.source_offset,
        block.text_start + query.source_offset + len(query.source),
    )
    symbol = checker.lookup(query.source)
    if symbol is None:
        checker.error("unknown-name", f"unknown name `{query.source}`", source_span)
        return None
    if symbol.type not in (t.JSON, t.UNKNOWN):
        checker.error(
            "type-mismatch",
            f"a jq query reads a json value, not {quoted_with_article(symbol.type)}",
            source_span,
            "`json::parse(text)` makes a json value of text",
        )
        return None
    if terminator is None:
        checker.error(
            "needs-annotation",
            "a `jq! { }` needs a terminator: .collect(), .one() or .first()",
            block.span,
            "to loop over its rows, name the list first: "
            "`let names: list<text> = jq! { ... }.collect();`",
        )
        return None
    row = expected
    if terminator == "collect" and isinstance(expected, t.ListType):
        row = expected.element
    if row is None:
        checker.error(
            "needs-annotation",
            "the type of a jq query's rows must be written: "
            "`let names: list<text> = jq! { ... }.collect();`",
            block.span,
        )
        return None
    if isinstance(row, t.UnknownType):
        return None
    if not query.iterates:
        # one row, the whole value: what the path selects is its column (a row path to a
        # scalar would make the row a scalar)
        query = JqQuery(query.source, query.source_offset, (), False, (), query.row_path)
    columns: list[str] = []
    selected: list[str] = []
    if isinstance(row, t.RecordType):
        for name, field_type in checker.module.record_info(row).fields.items():
            column = naming.field_name(name)
            sql_type = _column_type(checker, field_type, block, f"field `{name}` of `{row}`")
            if sql_type is None:
                return None
            path = _path([*query.projection, name])
            columns.append(f"{column} {sql_type} PATH {path} ERROR ON ERROR ERROR ON EMPTY")
            selected.append(_selected(f"jt.{column}", field_type))
    else:
        sql_type = _column_type(checker, row, block, "a row")
        if sql_type is None:
            return None
        columns.append(f"v {sql_type} PATH {_path(query.projection)} ERROR ON ERROR ERROR ON EMPTY")
        selected.append(_selected("jt.v", row))
    names = [c.split(" ", 1)[0] for c in columns]
    whole = frozenset(
        name
        for name, type_ in zip(names, _row_types(checker, row), strict=True)
        if type_ == t.INT
    )
    if whole:
        # each value aliased by its column: the rows are read one by one (pell_whole)
        selected = [f"{value} AS {name}" for value, name in zip(selected, names, strict=True)]
    compared: list[str] = []  # the columns `select` compares
    # one `select` is the whole WHERE; several are joined by AND, each `or` in parentheses
    alone = len(query.filters) == 1
    conditions = [_condition(c, compared, top=alone) for c in query.filters]
    columns += compared
    text = f"SELECT {', '.join(selected)}\n"
    text += f"  FROM JSON_TABLE(:{query.source}, {_path(query.row_path, query.iterates)} ERROR ON ERROR\n"
    text += "         COLUMNS (" + ",\n                  ".join(columns) + ")) jt"
    if conditions:
        text += "\n WHERE " + "\n   AND ".join(conditions)
    compiled = ast.SqlBlock(
        text,
        block.text_start,
        0,
        span=block.span,
        jq=JqRows(query, row),
        jq_columns=tuple(names) if whole else (),
        jq_whole=whole,
    )
    block.compiled.append(compiled)
    return compiled


def _row_types(checker: ExpressionChecker, row: t.Type) -> list[t.Type]:
    """The types of a row's columns: a record's fields, or the one value."""
    if isinstance(row, t.RecordType):
        return list(checker.module.record_info(row).fields.values())
    return [row]


def _selected(column: str, type_: t.Type) -> str:
    """A column as the row takes it: a date or timestamp from the text json::from writes
    (pell.codegen.text_forms, JSON_FORMS), read with the same format model."""
    from pell.codegen.text_forms import JSON_SEPARATOR, datetime_mask

    if type_ == t.DATE or type_ == t.TIMESTAMP:
        function = "TO_DATE" if type_ == t.DATE else "TO_TIMESTAMP"
        return f"{function}({column}, '{datetime_mask(str(type_), JSON_SEPARATOR)}')"
    return column


def _column_type(
    checker: ExpressionChecker, type_: t.Type, block: ast.JqBlock, what: str
) -> str | None:
    if isinstance(type_, t.Scalar) and type_.name in COLUMN_TYPES:
        return COLUMN_TYPES[type_.name]
    checker.error(
        "unsupported",
        f"{what} is {quoted_with_article(type_)}; a jq query's rows hold text, numbers, dates, "
        "timestamps and json values",
        block.span,
    )
    return None


def _condition(condition: Condition | Comparison, columns: list[str], top: bool = False) -> str:
    """The WHERE condition, each compared member a column of its own (added to `columns`:
    pell_f0, pell_f1, ...)."""
    if isinstance(condition, Comparison):
        sql_type = "NUMBER" if condition.is_number else "VARCHAR2(4000)"
        definition = f"{sql_type} PATH {_path(condition.path)} NULL ON ERROR NULL ON EMPTY"
        known = [c.split(" ", 1) for c in columns]
        # `pell_` names: a record row's columns are its fields' names, which may be `f0`
        fresh = f"pell_f{len(columns)}"
        column = next((name for name, rest in known if rest == definition), fresh)
        if column == fresh:
            columns.append(f"{column} {definition}")
        compared = f"jt.{column} {condition.op} {condition.literal}"
        if condition.op in ("<>", "<", "<="):
            # jq's null (a missing member too) differs from every string and number and
            # sorts before them: `!=`, `<` and `<=` are true for it (jq manual, "Math" and
            # "sort": null < false < true < numbers < strings)
            return f"(jt.{column} IS NULL OR {compared})"
        return compared
    joined = f" {condition.join.upper()} ".join(_condition(p, columns) for p in condition.parts)
    return joined if top or len(condition.parts) == 1 else f"({joined})"
