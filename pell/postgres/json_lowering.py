"""`json::` calls on PostgreSQL, where a `json` is a `jsonb` (PostgreSQL 15 docs, 9.16 "JSON
Functions and Operators"): the fns with a faithful form there. `get_text` and `get_json`
read the jsonpath query's value through a helper function of the schema that raises where
Oracle's JSON_VALUE / JSON_QUERY raise; `json::into` and `jq!` (pell.postgres.jq_lowering)
read each value so too (`member_value`). `get_keys` is `unsupported`: jsonb keeps no key order.

A member or element is what Oracle's JSON holds for the same value (JSON_FORMS): a number
without numeric's trailing zeros, a date or timestamp as its ISO text; a boolean is a JSON
boolean (jsonb_build_object "converts each argument as per to_jsonb"). jsonb keeps its own
member order ("jsonb ... does not preserve the order of object keys", 8.14 "JSON Types"), so
the text of an object may differ from Oracle's, the same in every session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.checker.json import JsonCall, is_optional, member_path
from pell.codegen.expressions import quote_text
from pell.codegen.text_forms import json_form, postgres_text
from pell.diagnostics import quoted_with_article
from pell.precedence import ATOM, Lowered

if TYPE_CHECKING:
    from pell.postgres.lower import PgFnLowerer

LOWERED = frozenset(
    {"object", "array", "from", "parse", "stringify", "get_number", "has", "get_text", "get_json"}
)

# Functions of the module's schema the lowering calls, each raising where Oracle's
# JSON_VALUE / JSON_QUERY with ERROR ON ERROR raise: a value of the other kind (a scalar
# for get_json, an object or array for get_text), with the SQLSTATEs PostgreSQL names
# sql_json_scalar_required and sql_json_object_not_found (Appendix A). JSON null is NULL,
# as JSON_VALUE gives it.
_HELPERS = {
    "pell_json_text": (
        "(p_value jsonb) RETURNS text",
        "  IF jsonb_typeof(p_value) IN ('object', 'array') THEN\n"
        "    RAISE EXCEPTION 'json::get_text: the path selects an %, not a scalar',"
        " jsonb_typeof(p_value) USING ERRCODE = '2203F';\n"
        "  END IF;\n"
        "  RETURN p_value #>> '{{}}';",
    ),
    "pell_json_query": (
        "(p_value jsonb) RETURNS jsonb",
        "  IF p_value IS NOT NULL AND jsonb_typeof(p_value) NOT IN ('object', 'array') THEN\n"
        "    RAISE EXCEPTION 'json::get_json: the path selects a %, not an object or array',"
        " jsonb_typeof(p_value) USING ERRCODE = '2203C';\n"
        "  END IF;\n"
        "  RETURN p_value;",
    ),
}


# j.set("a.b", v), j.remove("k"), j.append("k", v) on a jsonb object, as the Oracle helpers
# of templates/json_functions.sql.j2 do them: `||` of an object replaces or adds its members
# (9.16 "jsonb || jsonb"), `-` removes a key (no change when there is none). Each body is
# formatted with its schema (`{schema}`), which pell_json_set calls itself through.
_HELPERS |= {
    "pell_json_set": (
        "(p_doc jsonb, p_key text, p_value jsonb) RETURNS jsonb",
        "  IF jsonb_typeof(p_doc) IS DISTINCT FROM 'object' THEN\n"
        "    RAISE EXCEPTION '.set: the json value is no object' USING ERRCODE = '2203C';\n"
        "  END IF;\n"
        "  IF strpos(p_key, '.') = 0 THEN\n"
        "    RETURN p_doc || jsonb_build_object(p_key, p_value);\n"
        "  END IF;\n"
        "  -- objects made, or put in place of any other value, on the way\n"
        "  RETURN p_doc || jsonb_build_object(split_part(p_key, '.', 1), {schema}.pell_json_set(\n"
        "    CASE WHEN jsonb_typeof(p_doc -> split_part(p_key, '.', 1)) = 'object'\n"
        "      THEN p_doc -> split_part(p_key, '.', 1) ELSE '{{}}'::jsonb END,\n"
        "    substr(p_key, strpos(p_key, '.') + 1), p_value));",
    ),
    "pell_json_remove": (
        "(p_doc jsonb, p_key text) RETURNS jsonb",
        "  IF jsonb_typeof(p_doc) IS DISTINCT FROM 'object' THEN\n"
        "    RAISE EXCEPTION '.remove: the json value is no object' USING ERRCODE = '2203C';\n"
        "  END IF;\n"
        "  RETURN p_doc - p_key;",
    ),
    "pell_json_append": (
        "(p_doc jsonb, p_key text, p_value jsonb) RETURNS jsonb",
        "  IF jsonb_typeof(p_doc) IS DISTINCT FROM 'object' THEN\n"
        "    RAISE EXCEPTION '.append: the json value is no object' USING ERRCODE = '2203C';\n"
        "  END IF;\n"
        "  IF p_doc ? p_key AND jsonb_typeof(p_doc -> p_key) IS DISTINCT FROM 'array' THEN\n"
        "    -- a member that is no array is an error, never replaced\n"
        "    RAISE EXCEPTION '.append: member % is no array', p_key USING ERRCODE = '22039';\n"
        "  END IF;\n"
        "  RETURN p_doc || jsonb_build_object(p_key,\n"
        "    coalesce(p_doc -> p_key, '[]'::jsonb) || jsonb_build_array(p_value));",
    ),
}


# A member read into a date or timestamp (json::into, jq!) is the text json::from writes
# (pell.codegen.text_forms, JSON_FORMS), which Oracle reads with TO_DATE / TO_TIMESTAMP and the
# same format model: only that form is taken here, checked by a regular expression (9.7.3
# "POSIX Regular Expressions"), then cast. The cast of ISO 8601 text reads year, month, day in
# that order whatever DateStyle says ("1999-01-08 | ISO 8601; January 8 in any mode", 8.5.1.1
# "Dates", Table 8.10); with the form checked first it never reads `now`, `epoch` or a time
# zone, nor the hour 24 or the second 60, which the cast would take (as the next day, the next
# minute) and Oracle's HH24 and SS refuse. JSON null is NULL.
_DIGIT = "[0-9]"
_DAY = f"{_DIGIT * 4}-{_DIGIT * 2}-{_DIGIT * 2}"
_TIME = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
DATETIME_FORMS = {
    "date": (f"^{_DAY}T{_TIME}$", "YYYY-MM-DDTHH24:MI:SS", "timestamp(0)"),
    "timestamp": (f"^{_DAY}T{_TIME}[.]{_DIGIT * 6}$", "YYYY-MM-DDTHH24:MI:SS.FF6", "timestamp"),
}
_HELPERS |= {
    f"pell_json_{family}": (
        f"(p_text text) RETURNS {sql_type}",
        f"  IF p_text !~ '{pattern}' THEN\n"
        f"    RAISE EXCEPTION 'json: % is no {family} written {shown}', p_text"
        " USING ERRCODE = '22007';\n"
        "  END IF;\n"
        f"  RETURN CAST(p_text AS {sql_type});",
    )
    for family, (pattern, shown, sql_type) in DATETIME_FORMS.items()
}


# `xs.at(i)` (and `xs(i)`) reads an element that is there, or raises as Oracle's associative
# array does (PL/SQL Language Reference, chapter 6, "Collection Exceptions": NO_DATA_FOUND when
# "a subscript designates ... a nonexistent element of an associative array", VALUE_ERROR when
# "a subscript is null", ORA-06502 "NULL index table key value"), where a PostgreSQL subscript
# outside the array's bounds, or NULL, gives NULL (8.15.3 "Accessing Arrays"). Not a JSON
# helper, but a function of the module's schema as they are.
_HELPERS |= {
    "pell_list_at": (
        "(p_list anyarray, p_index integer) RETURNS anyelement",
        "  IF p_index IS NULL THEN\n"
        "    RAISE EXCEPTION 'NULL index table key value' USING ERRCODE = 'null_value_not_allowed';\n"
        "  END IF;\n"
        "  IF NOT coalesce(p_index BETWEEN array_lower(p_list, 1) AND array_upper(p_list, 1), false)"
        " THEN\n"
        "    RAISE EXCEPTION 'no element at index % of the list', p_index"
        " USING ERRCODE = 'no_data_found';\n"
        "  END IF;\n"
        "  RETURN p_list[p_index];",
    ),
}


def method_sql(lowerer: PgFnLowerer, expr: ast.MethodCall) -> str:
    """`j.set(key, v)`, `j.remove(key)`, `j.append(key, v)`: the helper of the schema."""
    helper = {"set": "pell_json_set", "remove": "pell_json_remove", "append": "pell_json_append"}[
        expr.name
    ]
    lowerer.helpers.add(helper)
    args = [lowerer.lower(expr.target), lowerer.lower(expr.args[0])]
    if expr.name != "remove":
        # as jsonb_build_object converts its arguments ("as per to_jsonb")
        args.append(_as_jsonb(lowerer, expr.args[1]))
    return f"{lowerer.schema}.{helper}({', '.join(args)})"


def _as_jsonb(lowerer: PgFnLowerer, expr: ast.Expr) -> str:
    """A value as the jsonb to_jsonb makes of it. to_jsonb takes `anyelement`, which a literal
    of unknown type cannot resolve to ("could not determine polymorphic type", 42804), so the
    value is cast to its type first; None is JSON null."""
    if isinstance(expr, ast.NoneLit):
        return "'null'::jsonb"
    type_ = lowerer.type_of(expr)
    value = element(lowerer, expr)
    if isinstance(type_, t.RecordType) or type_ == t.JSON:
        return f"to_jsonb({value})"  # jsonb already
    # a number stays a number (trim_scale of a numeric); the other forms are text
    form = json_form(type_)
    sql_type = lowerer.sql_type(type_) if form is None or t.is_numeric(type_) else "text"
    return f"to_jsonb(CAST({value} AS {sql_type}))"


def json_helper(schema: str, name: str) -> str:
    """The DDL of one helper function of `schema` (IMMUTABLE: it reads nothing but its
    argument)."""
    signature, template = _HELPERS[name]
    body = template.format(schema=schema)
    return (
        f"CREATE OR REPLACE FUNCTION {schema}.{name}{signature}\n"
        f"LANGUAGE plpgsql IMMUTABLE AS $pell$\nBEGIN\n{body}\nEND;\n$pell$;"
    )


def element(lowerer: PgFnLowerer, expr: ast.Expr) -> str:
    type_ = lowerer.type_of(expr)
    lowered = lowerer.lower_with_precedence(expr)
    if isinstance(type_, t.RecordType):
        return record_object(lowerer, lowered, type_)
    return _scalar(lowered, type_)


def _scalar(lowered: Lowered, type_: t.Type) -> str:
    form = json_form(type_)
    return lowered[0] if form is None else postgres_text(form, lowered)


def record_object(lowerer: PgFnLowerer, value: Lowered, record: t.RecordType) -> str:
    base = value[0] if value[1] >= ATOM and "." not in value[0] else f"({value[0]})"
    pairs: list[str] = []
    for name, field_type in lowerer.checked.record_info(record).fields.items():
        field = (f"{base}.{naming.field_name(name)}", ATOM)
        if isinstance(field_type, t.RecordType):
            pairs += [quote_text(name), record_object(lowerer, field, field_type)]
        else:
            pairs += [quote_text(name), _scalar(field, field_type)]
    return f"jsonb_build_object({', '.join(pairs)})"


def call_sql(lowerer: PgFnLowerer, expr: ast.Call, call: JsonCall) -> Lowered:
    name = call.name
    if name not in LOWERED:
        raise lowerer.unsupported(f"`{expr.callee.text}`", expr.callee.span)
    if name == "object":
        pairs = [f"{quote_text(k.name)}, {element(lowerer, k.value)}" for k in expr.keywords]
        return f"jsonb_build_object({', '.join(pairs)})", ATOM
    if name == "array":
        items = expr.args[0]
        assert isinstance(items, ast.ListLit)
        return f"jsonb_build_array({', '.join(element(lowerer, i) for i in items.items)})", ATOM
    if name == "from":
        record = lowerer.type_of(expr.args[0])
        assert isinstance(record, t.RecordType)
        return record_object(lowerer, lowerer.lower_with_precedence(expr.args[0]), record), ATOM
    if name == "parse":
        # the cast raises on text that is not JSON ("invalid input syntax for type json")
        return f"CAST({lowerer.lower(expr.args[0])} AS jsonb)", ATOM
    if name == "stringify":
        return f"CAST({lowerer.lower(expr.args[0])} AS text)", ATOM
    document = lowerer.lower(expr.args[0])
    if name == "has":
        # lax mode: a missing member is no match (9.16.2.1 "Strict and Lax Modes")
        return f"jsonb_path_exists({document}, {_path(lowerer, expr, call, 'lax')})", ATOM
    # get_number: strict mode raises on a missing member unless the value is optional (lax:
    # no match, NULL), and the cast raises on a value that is no number; JSON null is NULL,
    # as JSON_VALUE gives it (the cast would raise)
    mode = "lax" if call.optional else "strict"
    query = f"jsonb_path_query_first({document}, {_path(lowerer, expr, call, mode)})"
    if name in ("get_text", "get_json"):
        helper = "pell_json_text" if name == "get_text" else "pell_json_query"
        lowerer.helpers.add(helper)
        return f"{lowerer.schema}.{helper}({query})", ATOM
    return f"CAST(NULLIF({query}, 'null') AS numeric)", ATOM


def into_assignments(
    lowerer: PgFnLowerer, document: str, target: str, record: t.RecordType, at: ast.Span
) -> list[tuple[str, str]]:
    """`json::into::<T>(j)`: each field of `target` from its member (`strict $.name`: a
    missing member raises, `lax` for a field written optional), read as `member_value` reads
    it. A nested record field: `unsupported`."""
    info = lowerer.checked.record_info(record)
    optional = {f.name for f in info.decl.fields if is_optional(f.type)}
    pairs: list[tuple[str, str]] = []
    for name, field_type in info.fields.items():
        mode = "lax" if name in optional else "strict"
        path = quote_text(f"{mode} ${member_path(name)}")
        query = f"jsonb_path_query_first({document}, CAST({path} AS jsonpath))"
        value = member_value(lowerer, query, field_type)
        if value is None:
            what = f"`json::into` of field `{name}` ({quoted_with_article(field_type)})"
            raise lowerer.unsupported(what, at)
        pairs.append((f"{target}.{naming.field_name(name)}", value))
    return pairs


def member_value(lowerer: PgFnLowerer, query: str, type_: t.Type) -> str | None:
    """The value of type `type_` of the jsonb item `query` gives (SQL NULL: none), as
    get_text, get_number and get_json read it, raising where Oracle's JSON_VALUE and JSON_QUERY
    with ERROR ON ERROR raise; a date or timestamp from its text, a number or an int from a
    JSON number only. None: a type with no form here."""
    name = type_.name if isinstance(type_, t.Scalar) else ""
    if t.is_text(type_) or name in DATETIME_FORMS:
        lowerer.helpers.add("pell_json_text")
        value = f"{lowerer.schema}.pell_json_text({query})"
        if name in DATETIME_FORMS:
            lowerer.helpers.add(f"pell_json_{name}")
            return f"{lowerer.schema}.pell_json_{name}({value})"
        return value
    # A number, and an int, only from a JSON number: the cast of a jsonb string to numeric
    # raises (22023), where Oracle's JSON_VALUE RETURNING NUMBER, lax by default, may read a
    # string holding a number (JSON Developer's Guide 23, 18.7 "TYPE Clause for SQL Functions
    # and Conditions": JSON values "can be implicitly interpreted (essentially cast)"). Which
    # strings Oracle takes is not documented, so no string is taken here (docs/postgres.md).
    number = f"CAST(NULLIF({query}, 'null') AS numeric)"
    if name == "int":
        # whole, as the Oracle lowering checks it: the exact text of the number (trim_scale
        # drops the trailing zeroes of 2.0, 9.3 "Mathematical Functions and Operators") cast
        # to integer, which raises for a fraction where a numeric's cast would round
        return f"CAST(trim_scale({number})::text AS integer)"
    if type_ == t.NUMBER:
        return number
    if type_ == t.JSON:
        lowerer.helpers.add("pell_json_query")
        return f"{lowerer.schema}.pell_json_query({query})"
    return None


def _path(lowerer: PgFnLowerer, expr: ast.Call, call: JsonCall, mode: str) -> str:
    """The jsonpath: Oracle's path syntax (`$.a.b`, `[0]`, `[*]`, `[last]`, `."x y"`) is
    PostgreSQL's too (9.16.2 "The SQL/JSON Path Language"), after the mode."""
    if call.path is not None:
        return f"CAST({quote_text(f'{mode} {call.path}')} AS jsonpath)"
    return f"CAST({quote_text(mode + ' ')} || {lowerer.lower(expr.args[1])} AS jsonpath)"
