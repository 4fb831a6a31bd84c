"""`jq! { j | .users[] | select(.age >= 18) | .name }` on PostgreSQL 15, which has no JSON_TABLE
(it came in PostgreSQL 17): the rows Oracle's JSON_TABLE query gives (pell.checker.jq), from
jsonb's path functions (PostgreSQL 15 docs, 9.16 "JSON Functions and Operators"):

    SELECT <each value>
      FROM jsonb_path_query(j, 'lax $.users[*]') WITH ORDINALITY AS pell_jq(pell_e, pell_i)
     WHERE <the conditions of `select`>
     ORDER BY pell_jq.pell_i

- The rows: jsonb_path_query "Returns all JSON items returned by the JSON path for the
  specified JSON value" (9.16.1, "JSON Processing Functions"), in lax mode as Oracle's row path
  is (its paths are lax unless written strict, JSON Developer's Guide, "SQL/JSON Path Expression
  Syntax Relaxation"): a missing array gives no row, and a value that is no array is "wrapped as
  an SQL/JSON array" of one (9.16.2.1 "Strict and Lax Modes"). A NULL document gives none (the
  function is strict). WITH ORDINALITY numbers the rows as the function returns them, the
  array's order (7.2.1.4 "Table Functions"), and ORDER BY keeps that order, for `.first()` and
  `.collect()` alike. Without `[]` the path is `$`: one row, the document.
- Each value taken (`ERROR ON ERROR ERROR ON EMPTY` on Oracle) is read as `json::into` reads a
  member (pell.postgres.json_lowering.member_value), by a `strict` path from the row
  (jsonb_path_query_first, 9.16.1: its first item, NULL for none): a missing member, or a
  member of a value that is no object, is a structural error, which strict mode raises
  (9.16.2.1); a value of the other kind raises; an `int` refuses a fraction; a date or
  timestamp is the text json::from writes. The select list is computed after WHERE, so a row
  `select` leaves out is not read, as jq reads nothing of it.
- Each member `select` compares (`NULL ON ERROR NULL ON EMPTY` on Oracle) is read by a `strict`
  path with `silent` true, which "suppresses the same errors as the @? and @@ operators do"
  (jsonb_path_exists, 9.16.1), missing members and values of another type among them, and a
  filter on its JSON type (`.type()`, 9.16.2.2 "SQL/JSON Path Operators and Methods"): NULL
  when missing, null or of another kind. A number is compared as a number; a string, number
  or boolean as its text (`#>> '{}'`, the value at the empty path as text, 9.16.1, as get_text
  reads it), by byte values (COLLATE "C", 24.2 "Collation Support"): in UTF-8 the code-point
  order of Oracle's default binary comparison and of jq's strings. NULL is jq's null, which
  differs from every value and sorts before them: `!=`, `<` and `<=` hold for it
  (`coalesce(c, TRUE)`), `==`, `>` and `>=` do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast
from pell.checker import types as t
from pell.checker.jq import Comparison, Condition, JqRows
from pell.checker.json import member_path
from pell.codegen.expressions import quote_text
from pell.postgres.json_lowering import member_value

if TYPE_CHECKING:
    from pell.postgres.lower import PgFnLowerer

ROW = "pell_jq.pell_e"  # the row's value
# What `select` compares of a member: a JSON number, or the text of a scalar
_NUMBER_FILTER = '@.type() == "number"'
_TEXT_FILTER = '@.type() != "object" && @.type() != "array"'
_NULL_IS_TRUE = ("<>", "<", "<=")  # jq's null is unequal to every value and sorts first


def query_text(lowerer: PgFnLowerer, block: ast.SqlBlock, rows: JqRows) -> str:
    """The SELECT of the jq query `block` was made of; its json source is the bind's value."""
    query = rows.query
    [source] = {replacement for _, replacement in lowerer.analysis.binds[id(block)]}
    if isinstance(rows.row, t.RecordType):
        fields = lowerer.checked.record_info(rows.row).fields.items()
        selected = [_value(lowerer, block, (*query.projection, n), ft) for n, ft in fields]
    else:
        selected = [_value(lowerer, block, query.projection, rows.row)]
    row_path = _path(query.row_path) + ("[*]" if query.iterates else "")
    text = "SELECT " + ",\n       ".join(selected) + "\n"
    text += f"  FROM jsonb_path_query({source}, {quote_text('lax ' + row_path)}) WITH ORDINALITY"
    text += " AS pell_jq(pell_e, pell_i)"
    if query.filters:
        alone = len(query.filters) == 1  # several are joined by AND, each `or` in parentheses
        text += "\n WHERE " + "\n   AND ".join(_condition(c, alone) for c in query.filters)
    return text + "\n ORDER BY pell_jq.pell_i"


def _path(steps: tuple[str, ...]) -> str:
    return "$" + "".join(member_path(step) for step in steps)


def _value(
    lowerer: PgFnLowerer, block: ast.SqlBlock, steps: tuple[str, ...], type_: t.Type
) -> str:
    item = ROW
    if steps:
        item = f"jsonb_path_query_first({ROW}, {quote_text('strict ' + _path(steps))})"
    value = member_value(lowerer, item, type_)
    if value is None:  # the checker takes only the types member_value reads
        raise lowerer.unsupported(f"a jq query's `{type_}` value", block.span)
    return value


def _condition(condition: Condition | Comparison, top: bool = False) -> str:
    if isinstance(condition, Comparison):
        steps = _path(condition.path)
        if condition.is_number:
            path = quote_text(f"strict {steps} ? ({_NUMBER_FILTER})")
            member = f"CAST(jsonb_path_query_first({ROW}, {path}, '{{}}', TRUE) AS numeric)"
        else:
            path = quote_text(f"strict {steps} ? ({_TEXT_FILTER})")
            member = f'(jsonb_path_query_first({ROW}, {path}, \'{{}}\', TRUE) #>> \'{{}}\') COLLATE "C"'
        compared = f"{member} {condition.op} {condition.literal}"
        return f"coalesce({compared}, TRUE)" if condition.op in _NULL_IS_TRUE else compared
    joined = f" {condition.join.upper()} ".join(_condition(p) for p in condition.parts)
    return joined if top or len(condition.parts) == 1 else f"({joined})"
