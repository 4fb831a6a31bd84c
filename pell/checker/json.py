"""The `json` type's fns (`json::object`, `json::get_text`, ...) and its methods (`.set`,
`.remove`, `.append`): one table the checker (signatures, paths) and the lowering
(pell.codegen.json_lowering) both read.

A `json` value is JSON text in a CLOB on every Oracle target (language.md, "JSON"). Oracle's
SQL/JSON functions json_value, json_query, json_object and json_array, and the condition
json_exists, are PL/SQL built-ins since 12.2 (JSON Developer's Guide 12.2, Changes in This
Release, "SQL/JSON Functions and Conditions Added to PL/SQL"), so most fns are one
expression. By default these functions "avoid raising runtime errors" (JSON Developer's
Guide, "Error Clause for SQL Functions and Conditions": json_value returns NULL, json_exists
false): every call here says ERROR ON ERROR, and a path that selects nothing is an error
(ERROR ON EMPTY) unless the value goes where an optional type (`T?`, `Option<T>`) is written.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pell import ast
from pell.checker import types as t
from pell.diagnostics import did_you_mean, quoted_with_article
from pell.records import record

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker

JSON = t.JSON
LIBRARY = "json"


@record
class JsonFn:
    """`json::name(...)`: what it takes (for messages) and gives."""

    name: str
    takes: str  # how a message says what it takes
    result: t.Type | None  # None: the type argument's (`into::<T>`)


TABLE: tuple[JsonFn, ...] = (
    JsonFn("object", "named values (`json::object(name = n, age = 3)`), or none", JSON),
    JsonFn("array", "a list literal (`json::array([a, b])`)", JSON),
    JsonFn("get_text", "a json value and a path (`\"$.name\"`)", t.TEXT),
    JsonFn("get_number", "a json value and a path (`\"$.age\"`)", t.NUMBER),
    JsonFn("get_json", "a json value and a path to an object or array", JSON),
    JsonFn("has", "a json value and a path", t.BOOL),
    JsonFn("get_keys", "a json object", t.ListType(t.TEXT)),
    JsonFn("parse", "a text", JSON),
    JsonFn("stringify", "a json value", t.TEXT),
    JsonFn("from", "a record", JSON),
    JsonFn("into", "a json value and a record type (`json::into::<User>(j)`)", None),
)
FNS: dict[str, JsonFn] = {f.name: f for f in TABLE}
PATH_FNS = ("get_text", "get_number", "get_json", "has")

# Methods of a json value (an object): each gives a new value, the receiver is unchanged.
METHODS: dict[str, str] = {
    "set": "`.set(\"a.b\", value)`: the member at the dotted key path set, objects made on the way",
    "remove": "`.remove(\"key\")`: the object without that member",
    "append": "`.append(\"key\", value)`: the value added at the end of that member's array",
}

# A SQL/JSON path as JSON_VALUE, JSON_QUERY and JSON_EXISTS read it: `$`, then object steps
# (`.name`, `."any name"`, `.*`) and array steps (`[0]`, `[*]`, `[1 to 3]`, `[last]`)
# (JSON Developer's Guide, "SQL/JSON Path Expression Syntax"; filters and item methods are
# not taken here).
_STEP = re.compile(
    r'\.(?:[A-Za-z][A-Za-z0-9_]*|"(?:[^"\\]|\\.)*"|\*)'
    r"|\[\s*(?:\*|(?:\d+|last(?:\s*-\s*\d+)?)(?:\s+to\s+(?:\d+|last(?:\s*-\s*\d+)?))?"
    r"(?:\s*,\s*(?:\d+|last)(?:\s+to\s+(?:\d+|last))?)*)\s*\]"
)
# A key of `.set`, `.remove`, `.append`: member names, one per dot
_KEY = re.compile(r"[^.]+(?:\.[^.]+)*")


@record
class JsonCall:
    """What the lowering needs of one checked `json::` call or json method."""

    name: str
    optional: bool = False  # a path that selects nothing is None, not an error
    path: str | None = None  # the path when it is a literal; None: computed at run time
    record: t.RecordType | None = None  # `into::<T>`'s record


_SIMPLE_MEMBER = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def member_path(name: str) -> str:
    """A path step for a member name: `.name`, or `."name"` when a simple name cannot be one
    (JSON Developer's Guide, "SQL/JSON Path Expression Syntax": a field name in a path is
    alphanumeric, starting with a letter, or else double-quoted)."""
    return f".{name}" if _SIMPLE_MEMBER.fullmatch(name) else f'."{name}"'


def literal_text(expr: ast.Expr) -> str | None:
    """The text of a string literal without interpolation; None for anything else."""
    if isinstance(expr, ast.StringLit) and all(isinstance(p, str) for p in expr.parts):
        return "".join(str(p) for p in expr.parts)
    return None


def path_problem(path: str) -> tuple[str, int] | None:
    """Why Oracle would not read `path` as a SQL/JSON path, and the offset in it; None if it
    would."""
    if not path.startswith("$"):
        return "a JSON path starts with `$` (the whole value): `$.name`", 0
    position = 1
    while position < len(path):
        step = _STEP.match(path, position)
        if step is None:
            return f"`{path[position:]}` is not a step of a JSON path (`.name`, `[0]`, `[*]`)", position
        position = step.end()
    return None


def is_optional(ref: ast.TypeRef | None) -> bool:
    """Is a type written optional (`text?`, `Option<text>`)?"""
    return isinstance(ref, ast.NamedType) and (ref.optional or ref.name == "Option")


def note_optional(checker: ExpressionChecker, value: ast.Expr, ref: ast.TypeRef | None) -> None:
    """`let x: text? = json::get_text(...)`: a path that selects nothing is None there."""
    while isinstance(value, ast.Propagate):
        value = value.operand
    if is_optional(ref) and isinstance(value, ast.Call) and value.callee.path[:1] == (LIBRARY,):
        checker.analysis.json_optional.add(id(value))


def json_value_type(type_: t.Type) -> bool:
    """May a value of `type_` be a member or element of a json value?"""
    return isinstance(
        type_, t.Scalar | t.RecordType | t.SqlValue | t.NullType | t.UnknownType
    )


def not_on_12_2(checker: ExpressionChecker, span: ast.Span) -> bool:
    """Reported: the json forms on `--target 12.2`, whose SQL/JSON functions return no CLOB
    ("In the RETURNING clause you can specify only data type VARCHAR2", JSON Developer's Guide
    12.2, JSON_QUERY; LOB results came in 18c: JSON Developer's Guide 18c, Changes in This
    Release), which a `json` value is."""
    if checker.target != "12.2":
        return False
    checker.error(
        "unsupported",
        "json on `--target 12.2` is not supported: its SQL/JSON functions return no CLOB "
        "(LOB results came in Oracle 18c)",
        span,
        "build for 19c or 23ai",
    )
    return True


def check_call(checker: ExpressionChecker, expr: ast.Call, expected: t.Type | None) -> t.Type:
    """Type `json::name(...)`, reporting what is surely wrong, and record it for the lowering."""
    as_statement = checker.as_statement  # before the arguments' checks reset it
    name = "::".join(expr.callee.path[1:])
    if not_on_12_2(checker, expr.callee.span):
        _check_all(checker, expr)
        return t.UNKNOWN
    fn = FNS.get(name)
    if fn is None:
        _check_all(checker, expr)
        checker.error(
            "unknown-fn",
            f"`json` has no fn `{name}`{did_you_mean(name, list(FNS))}",
            expr.callee.span,
            f"`json` has {', '.join(f'`{f.name}`' for f in TABLE)}",
        )
        return t.UNKNOWN
    if expr.type_args and name != "into":
        _check_all(checker, expr)
        checker.error(
            "type-mismatch", f"`json::{name}` takes no type argument", expr.type_args[0].span
        )
        return t.UNKNOWN
    if expr.keywords and name != "object":
        _check_all(checker, expr)
        checker.error(
            "keyword-argument",
            f"`json::{name}` takes its arguments by position",
            expr.keywords[0].name_span,
        )
        return t.UNKNOWN
    call = JsonCall(name, optional=id(expr) in checker.analysis.json_optional)
    result = fn.result
    if name == "object":
        if expr.args:
            _check_all(checker, expr)
            checker.error(
                "type-mismatch",
                "`json::object` takes named values: `json::object(name = n, age = 3)`",
                expr.args[0].span,
            )
            return JSON
        seen: set[str] = set()
        for keyword in expr.keywords:
            if keyword.name in seen:
                checker.error(
                    "keyword-argument",
                    f"member `{keyword.name}` is given twice",
                    keyword.name_span,
                )
            seen.add(keyword.name)
            _member(checker, keyword.value, "a member of `json::object`")
    elif not _arity(checker, expr, name, 2 if name in PATH_FNS else 1):
        return result or t.UNKNOWN
    elif name == "array":
        items = expr.args[0]
        if not isinstance(items, ast.ListLit):
            checker.expr(items, None)
            checker.error(
                "type-mismatch",
                "`json::array` takes a list literal (`json::array([a, b, c])`): JSON_ARRAY "
                "takes its elements one by one",
                items.span,
            )
        else:
            for item in items.items:
                _member(checker, item, "an element of `json::array`")
    elif name in PATH_FNS:
        _argument(checker, expr, 0, JSON, name)
        path = expr.args[1]
        literal = literal_text(path)
        if literal is None:
            _argument(checker, expr, 1, t.TEXT, name)
        else:
            checker.expr(path, t.TEXT)
            problem = path_problem(literal)
            if problem is not None:
                message, offset = problem
                start = path.span.start + 1 + offset  # after the opening quote
                checker.error(
                    "bad-json-path", message, ast.Span(start, min(start + 1, path.span.end))
                )
            call = JsonCall(name, call.optional, literal)
    elif name == "parse":
        _argument(checker, expr, 0, t.TEXT, name)
    elif name in ("stringify", "get_keys"):
        _argument(checker, expr, 0, JSON, name)
    elif name == "from":
        source = checker.expr(expr.args[0], None)
        if not isinstance(source, t.RecordType | t.UnknownType):
            checker.error(
                "type-mismatch",
                f"`json::from` takes a record, not {quoted_with_article(source)}",
                expr.args[0].span,
                "a single value becomes json with `json::object(name = value)`",
            )
        elif isinstance(source, t.RecordType):
            _record_members(checker, source, expr.args[0].span)
    elif name == "into":
        _argument(checker, expr, 0, JSON, name)
        if len(expr.type_args) != 1 or len(expr.type_args[0].alternatives) != 1:
            checker.error(
                "type-mismatch",
                "`json::into` takes one record type: `json::into::<User>(j)`",
                expr.callee.span,
            )
            return t.UNKNOWN
        wanted = checker.resolver.resolve(expr.type_args[0].alternatives[0])
        if not isinstance(wanted, t.RecordType):
            if not isinstance(wanted, t.UnknownType):
                checker.error(
                    "type-mismatch",
                    f"`json::into` makes a record, not {quoted_with_article(wanted)}",
                    expr.type_args[0].span,
                    "read one value with `json::get_text` or `json::get_number`",
                )
            return t.UNKNOWN
        _record_members(checker, wanted, expr.type_args[0].span, into=True)
        call = JsonCall(name, call.optional, record=wanted)
        result = wanted
    checker.analysis.json_calls[id(expr)] = call
    if as_statement:
        checker.error(
            "not-a-statement",
            f"the value of `json::{name}(...)` is not used; it only computes a value",
            expr.span,
            f"store it: `let x = json::{name}(...);`",
        )
    return result or t.UNKNOWN


def check_method(
    checker: ExpressionChecker, expr: ast.MethodCall, as_statement: bool
) -> t.Type:
    """`j.set("a.b", v)`, `j.remove("k")`, `j.append("k", v)` on a json value."""
    if not_on_12_2(checker, expr.span):
        for arg in expr.args:
            checker.expr(arg, None)
        return t.UNKNOWN
    if expr.name not in METHODS:
        for arg in expr.args:
            checker.expr(arg, None)
        checker.error(
            "unknown-fn",
            f"a json value has no method `{expr.name}`{did_you_mean(expr.name, list(METHODS))}",
            expr.name_span,
            "json values have .set(key, value), .remove(key), .append(key, value) and "
            ".to_text(); `json::` has the rest",
        )
        return t.UNKNOWN
    wanted = 1 if expr.name == "remove" else 2
    if len(expr.args) != wanted or expr.type_args:
        for arg in expr.args:
            checker.expr(arg, None)
        takes = "a key" if expr.name == "remove" else "a key and a value"
        checker.error("arity", f"`.{expr.name}()` takes {takes}: {METHODS[expr.name]}", expr.span)
        return JSON
    key = expr.args[0]
    key_type = checker.expr(key, t.TEXT)
    if not t.assignable(key_type, t.TEXT):
        checker.error(
            "type-mismatch",
            f"the key of `.{expr.name}()` is a text, not {quoted_with_article(key_type)}",
            key.span,
        )
    literal = literal_text(key)
    if literal is not None and _KEY.fullmatch(literal) is None:
        checker.error(
            "bad-json-path",
            f"`{literal}` is no key: member names joined by single dots (`user.address.city`)",
            key.span,
        )
    elif literal is not None and expr.name != "set" and "." in literal:
        # JSON_OBJECT_T.remove and get_array take one member's name
        checker.error(
            "bad-json-path",
            f"`.{expr.name}()` takes one member's name, not the path `{literal}` "
            "(a dotted key is `.set`'s)",
            key.span,
        )
    if expr.name != "remove":
        _member(checker, expr.args[1], f"the value of `.{expr.name}()`")
    checker.analysis.json_calls[id(expr)] = JsonCall(expr.name)
    if as_statement:
        checker.error(
            "not-a-statement",
            f"`.{expr.name}()` gives a new json value and leaves this one as it is",
            expr.span,
            f"store it: `j = j.{expr.name}(...);`",
        )
    return JSON


def _check_all(checker: ExpressionChecker, expr: ast.Call) -> None:
    for value in (*expr.args, *(k.value for k in expr.keywords)):
        checker.expr(value, None)


def _arity(checker: ExpressionChecker, expr: ast.Call, name: str, count: int) -> bool:
    if len(expr.args) == count:
        return True
    _check_all(checker, expr)
    given = len(expr.args)
    checker.error(
        "arity",
        f"fn `json::{name}` takes {FNS[name].takes}: {count} argument{'s' * (count != 1)}, "
        f"but {given} {'was' if given == 1 else 'were'} given",
        expr.span,
    )
    return False


def _argument(
    checker: ExpressionChecker, expr: ast.Call, index: int, param: t.Type, name: str
) -> None:
    arg = expr.args[index]
    type_ = checker.expr(arg, param)
    if not t.assignable(type_, param):
        checker.error(
            "type-mismatch",
            f"argument {index + 1} of `json::{name}` must be {quoted_with_article(param)}, "
            f"not {quoted_with_article(type_)}",
            arg.span,
            *(("`json::parse(text)` makes a json value of text",) if param == JSON else ()),
        )


def _member(checker: ExpressionChecker, value: ast.Expr, what: str) -> None:
    type_ = checker.expr(value, None)
    if isinstance(type_, t.RecordType):
        _record_members(checker, type_, value.span)
    elif not json_value_type(type_):
        checker.error(
            "type-mismatch",
            f"{what} is a scalar, a record or a json value, not {quoted_with_article(type_)}",
            value.span,
            "a list becomes a json array with `json::array([a, b])`",
        )


def _record_members(
    checker: ExpressionChecker, record: t.RecordType, span: ast.Span, into: bool = False
) -> None:
    """Every field of `record` must have a JSON form (a list has none; `into` reads scalars,
    json and nested records)."""
    for field_name, field_type in checker.module.record_info(record).fields.items():
        if isinstance(field_type, t.RecordType):
            _record_members(checker, field_type, span, into)
        elif isinstance(field_type, t.ListType) or (
            into and field_type in (t.BOOL, t.INTERVAL, t.BYTES)
        ):
            direction = "read from" if into else "written as"
            checker.error(
                "unsupported",
                f"field `{field_name}` of record `{record}` is {quoted_with_article(field_type)}, "
                f"which pellc has not {direction} JSON",
                span,
            )
