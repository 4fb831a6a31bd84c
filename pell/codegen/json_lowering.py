"""`json::` calls and json methods (pell.checker.json) as PL/SQL.

Every value is JSON text in a CLOB. The generation functions write `NULL ON NULL` (a None
member or element is JSON null, not left out: JSON_ARRAY's default is ABSENT ON NULL) and
`RETURNING CLOB` (SQL Language Reference, JSON_OBJECT and JSON_ARRAY: JSON_on_null_clause,
JSON_returning_clause). The query functions write `ERROR ON ERROR` and, unless the value is
optional, `ERROR ON EMPTY` (SQL Language Reference, JSON_VALUE and JSON_QUERY:
JSON_value_on_error_clause, JSON_value_on_empty_clause; JSON_EXISTS: JSON_exists_on_error_
clause): no NULL where a value was asked for. A path computed at run time, which these
functions do not take ("The path expression must be a text literal", JSON_VALUE), goes to a
package function that runs the same query with the path as a literal
(templates/json_functions.sql.j2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.checker.json import JsonCall, is_optional, member_path
from pell.codegen.text_forms import JSON_SEPARATOR, datetime_mask, json_form, oracle_text
from pell.precedence import ATOM, Lowered

if TYPE_CHECKING:
    from pell.codegen.expressions import ExpressionLowerer

GENERATED = "NULL ON NULL RETURNING CLOB"
# The package's own functions (templates/json_functions.sql.j2), by the fn or method using one
HELPERS = {
    "get_text": "pell_json_text",
    "get_number": "pell_json_number",
    "get_json": "pell_json_query",
    "has": "pell_json_exists",
    "set": "pell_json_set",
    "remove": "pell_json_remove",
    "append": "pell_json_append",
    "get_keys": "pell_json_keys",
}
KEYS_HELPER = HELPERS["get_keys"]  # returns the package's list<text> type
# `for row in c` over a cursor<dyn> (templates/json_functions.sql.j2): open, then one row
DYN_OPEN_HELPER = "pell_dyn_open"
DYN_ROW_HELPER = "pell_dyn_row"
DYN_ROW_HELPERS = (DYN_OPEN_HELPER, DYN_ROW_HELPER)
# `json::into` of an `int` field, a `number` list index: the number, or VALUE_ERROR for a
# fraction (no rounding)
WHOLE_HELPER = "pell_whole"


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def on_empty(optional: bool) -> str:
    return "NULL ON EMPTY" if optional else "ERROR ON EMPTY"


def element(lowerer: ExpressionLowerer, expr: ast.Expr) -> str:
    """A value as JSON_OBJECT and JSON_ARRAY take it (SQL Language Reference, JSON_ARRAY:
    "You can specify FORMAT JSON to indicate that the input string is JSON, and will
    therefore not be quoted in the output")."""
    type_ = lowerer.type_of(expr)
    if isinstance(type_, t.RecordType):
        return record_object(lowerer, lowerer.lower(expr), type_) + " FORMAT JSON"
    if isinstance(expr, ast.BoolLit):
        return f"'{str(expr.value).lower()}' FORMAT JSON"
    return scalar_element(lowerer, lowerer.lower_with_precedence(expr), type_)


def scalar_element(lowerer: ExpressionLowerer, value: Lowered, type_: t.Type) -> str:
    if type_ == t.JSON:
        return f"{value[0]} FORMAT JSON"
    if type_ == t.BOOL:
        # JSON true and false; NULL stays NULL (JSON null)
        return (
            f"CASE WHEN {value[0]} THEN 'true' WHEN NOT {_atom(value)} THEN 'false' END "
            "FORMAT JSON"
        )
    form = json_form(type_)  # dates, timestamps, intervals and bytes as error payloads write them
    if form is not None:
        if form.oracle_function:
            lowerer.helpers.add(form.oracle_function)
        return oracle_text(form, value)
    return value[0]


def _atom(value: Lowered) -> str:
    return value[0] if value[1] >= ATOM else f"({value[0]})"


def record_object(lowerer: ExpressionLowerer, value: str, record: t.RecordType) -> str:
    """JSON_OBJECT of the record's fields, each under its Pell name."""
    members = []
    for name, field_type in lowerer.checked.record_info(record).fields.items():
        field_value = f"{value}.{naming.field_name(name)}"
        if isinstance(field_type, t.RecordType):
            member = record_object(lowerer, field_value, field_type) + " FORMAT JSON"
        else:
            member = scalar_element(lowerer, (field_value, ATOM), field_type)
        members.append(f"{quote(name)} VALUE {member}")
    return f"JSON_OBJECT({', '.join(members)} {GENERATED})"


def one_element_array(lowerer: ExpressionLowerer, expr: ast.Expr) -> str:
    """The value as a one-element JSON array: how the package's functions take any value
    (JSON_ARRAY_T.parse(...).get(0) is it as a JSON_ELEMENT_T, whatever its JSON type)."""
    return f"JSON_ARRAY({element(lowerer, expr)} {GENERATED})"


def call_sql(lowerer: ExpressionLowerer, expr: ast.Call, call: JsonCall) -> Lowered:
    name = call.name
    if name == "object":
        if not expr.keywords:
            return "'{}'", ATOM
        members = [f"{quote(k.name)} VALUE {element(lowerer, k.value)}" for k in expr.keywords]
        return f"JSON_OBJECT({', '.join(members)} {GENERATED})", ATOM
    if name == "array":
        items = expr.args[0]
        assert isinstance(items, ast.ListLit)
        if not items.items:
            return "'[]'", ATOM
        elements = [element(lowerer, item) for item in items.items]
        return f"JSON_ARRAY({', '.join(elements)} {GENERATED})", ATOM
    if name == "parse":
        # JSON_QUERY of the whole text raises on text that is not JSON (ERROR ON ERROR)
        return f"JSON_QUERY({lowerer.lower(expr.args[0])}, '$' RETURNING CLOB ERROR ON ERROR)", ATOM
    if name == "stringify":
        return lowerer.lower_with_precedence(expr.args[0])  # the CLOB is the text
    if name == "from":
        record = lowerer.type_of(expr.args[0])
        assert isinstance(record, t.RecordType)
        return record_object(lowerer, lowerer.lower(expr.args[0]), record), ATOM
    if name == "into":
        return lowerer.prelude_value(expr), ATOM  # field by field: pell.codegen.subprograms
    document = lowerer.lower(expr.args[0])
    if name == "get_keys":
        lowerer.helpers.add(HELPERS[name])
        return f"{HELPERS[name]}({document})", ATOM
    if call.path is None:  # a path computed at run time
        helper = HELPERS[name]
        lowerer.helpers.add(helper)
        path = lowerer.lower(expr.args[1])
        if name == "has":
            return f"{helper}({document}, {path})", ATOM
        optional = "TRUE" if call.optional else "FALSE"
        return f"{helper}({document}, {path}, {optional})", ATOM
    path = quote(call.path)
    if name == "has":
        return f"JSON_EXISTS({document}, {path} ERROR ON ERROR)", ATOM
    empty = on_empty(call.optional)
    if name == "get_json":
        return f"JSON_QUERY({document}, {path} RETURNING CLOB ERROR ON ERROR {empty})", ATOM
    returning = "NUMBER" if name == "get_number" else "VARCHAR2(4000)"
    return f"JSON_VALUE({document}, {path} RETURNING {returning} ERROR ON ERROR {empty})", ATOM


def method_sql(lowerer: ExpressionLowerer, expr: ast.MethodCall) -> Lowered:
    helper = HELPERS[expr.name]
    lowerer.helpers.add(helper)
    arguments = [lowerer.lower(expr.target), lowerer.lower(expr.args[0])]
    if expr.name != "remove":
        arguments.append(one_element_array(lowerer, expr.args[1]))
    return f"{helper}({', '.join(arguments)})", ATOM


# A record field's RETURNING type in JSON_VALUE, by its Pell type (pell.checker.json refuses
# the others). A date or timestamp is read back from the text `json::from` writes
# (text_forms.JSON_FORMS), with the same format model.
_RETURNING = {
    "text": "VARCHAR2(4000)",
    "number": "NUMBER",
    "int": "NUMBER",
    "bigtext": "CLOB",
}
_FROM_TEXT = {"date": "TO_DATE", "timestamp": "TO_TIMESTAMP"}


def into_assignments(
    lowerer: ExpressionLowerer, document: str, target: str, record: t.RecordType, prefix: str = "$"
) -> list[tuple[str, str]]:
    """`json::into::<T>(j)`: each field of `target` from its member, (target, value) pairs.
    A field written optional (`name: text?`) is None when its member is missing."""
    info = lowerer.checked.record_info(record)
    optional = {f.name for f in info.decl.fields if is_optional(f.type)}
    pairs: list[tuple[str, str]] = []
    for name, field_type in info.fields.items():
        field_target = f"{target}.{naming.field_name(name)}"
        path = prefix + member_path(name)
        if isinstance(field_type, t.RecordType):
            pairs += into_assignments(lowerer, document, field_target, field_type, path)
            continue
        empty = on_empty(name in optional)
        if field_type == t.JSON:
            value = f"JSON_QUERY({document}, {quote(path)} RETURNING CLOB ERROR ON ERROR {empty})"
        else:
            name_of_type = field_type.name if isinstance(field_type, t.Scalar) else "text"
            returning = _RETURNING.get(name_of_type, "VARCHAR2(4000)")
            value = (
                f"JSON_VALUE({document}, {quote(path)} RETURNING {returning} ERROR ON ERROR {empty})"
            )
            if name_of_type in _FROM_TEXT:
                mask = datetime_mask(name_of_type, JSON_SEPARATOR)
                value = f"{_FROM_TEXT[name_of_type]}({value}, '{mask}')"
            elif name_of_type == "int":
                lowerer.helpers.add(WHOLE_HELPER)
                value = f"{WHOLE_HELPER}({value})"
        pairs.append((field_target, value))
    return pairs
