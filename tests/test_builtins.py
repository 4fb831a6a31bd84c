"""Oracle's SQL functions as free fns: the table, its result types and its lowering."""

from __future__ import annotations

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.checker import builtins as b
from pell.checker import types as t
from pell.diagnostics import render_all
from pell.precedence import ADDITIVE, ATOM, COMPARISON

REQUIRED = {
    "string": "upper lower initcap length substr instr replace trim ltrim rtrim lpad rpad chr "
    "ascii concat",
    "numeric": "abs ceil floor round trunc mod power sqrt sign greatest least",
    "nulls": "nvl nvl2 coalesce nullif",
    "conversion": "to_char to_number to_date to_timestamp",
    "dates": "sysdate systimestamp add_months months_between last_day extract",
    "session": "sys_guid user",
}


def test_every_required_function_is_in_the_table() -> None:
    required = {name for names in REQUIRED.values() for name in names.split()}
    assert required <= set(b.BUILTINS)


def test_names_are_unique_both_ways() -> None:
    assert len(b.BUILTINS) == len(b.TABLE) == len(b.BY_PLSQL)
    # Oracle's own by their names; Pell's own (`reverse`) by the package function they call
    assert all(
        builtin.plsql == builtin.name.upper()
        for builtin in b.TABLE
        if builtin.name not in b.HELPERS
    )
    assert {"reverse"} == b.HELPERS


def test_arities() -> None:
    assert b.BUILTINS["concat"].wanted() == "2 arguments"  # Oracle's CONCAT takes exactly two
    assert b.BUILTINS["substr"].wanted() == "2 to 3 arguments"
    assert b.BUILTINS["coalesce"].wanted() == "at least 2 arguments"
    assert b.BUILTINS["sysdate"].wanted() == "no arguments"
    assert b.BUILTINS["to_char"].wanted() == "1 to 3 arguments"


def test_only_the_parameterless_session_values_are_bare() -> None:
    assert {x.name for x in b.TABLE if x.bare} == {"sysdate", "systimestamp", "user"}


DATE = t.Scalar("date")
TIMESTAMP = t.Scalar("timestamp")


@pytest.mark.parametrize(
    ("types", "common"),
    [
        ([t.INT, t.INT], t.INT),
        ([t.INT, t.NUMBER], t.NUMBER),
        ([t.INT, t.SqlValue()], t.NUMBER),  # a column may hold a fraction
        ([t.SqlValue(), t.SqlValue()], t.SqlValue()),
        ([t.NullType(), t.TEXT], t.TEXT),
        ([t.TEXT, t.BIGTEXT], t.BIGTEXT),
        ([DATE, t.NullType()], DATE),
        ([t.UNKNOWN, t.INT], t.UNKNOWN),
    ],
)
def test_common_type(types: list[t.Type], common: t.Type) -> None:
    assert b.common_type(types) == common


@pytest.mark.parametrize(
    ("name", "types", "result"),
    [
        ("length", [t.TEXT], t.NUMBER),  # Oracle's LENGTH returns NUMBER
        ("upper", [t.BIGTEXT], t.BIGTEXT),
        ("upper", [t.INT], t.TEXT),
        ("concat", [t.TEXT, t.BIGTEXT], t.BIGTEXT),
        ("round", [t.INT], t.INT),
        ("round", [t.NUMBER, t.INT], t.NUMBER),
        ("trunc", [TIMESTAMP], DATE),  # ROUND/TRUNC of a datetime return DATE
        ("trunc", [t.SqlValue()], t.SqlValue()),
        ("mod", [t.INT, t.INT], t.INT),
        ("mod", [t.INT, t.NUMBER], t.NUMBER),
        ("add_months", [TIMESTAMP, t.INT], DATE),
        ("to_date", [t.TEXT], DATE),
        ("sys_guid", [], t.TEXT),
        ("systimestamp", [], TIMESTAMP),
    ],
)
def test_result_types(name: str, types: list[t.Type], result: t.Type) -> None:
    assert b._result(b.BUILTINS[name], types, types) == result


def test_lowering_forms() -> None:
    assert b.lower("UPPER", [("l_s", ATOM)]) == ("UPPER(l_s)", ATOM)
    assert b.lower("SYSDATE", []) == ("SYSDATE", ATOM)
    assert b.lower("USER", []) == ("USER", ATOM)
    assert b.lower("SYS_GUID", []) == ("RAWTOHEX(SYS_GUID())", ATOM)
    assert b.lower("EXTRACT", [("'month'", ATOM), ("l_d", ATOM)]) == (
        "EXTRACT(MONTH FROM l_d)",
        ATOM,
    )
    # NVL2 is SQL-only: a CASE, its tested value parenthesised if it binds looser than `||`
    assert b.lower("NVL2", [("a = b", COMPARISON), ("1", ATOM), ("2", ATOM)]) == (
        "CASE WHEN (a = b) IS NOT NULL THEN 1 ELSE 2 END",
        ATOM,
    )
    assert b.lower("NVL2", [("a || b", ADDITIVE), ("1", ATOM), ("2", ATOM)])[0].startswith(
        "CASE WHEN a || b IS NOT NULL"
    )


def _compile(body: str, params: str = "s: text, d: date, n: number") -> str:
    source = f"module m;\n\npub fn f({params}) -> text {{\n{body}\n}}\n"
    result = compile_source(source, "m.pell", "23ai")
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    assert_oracle_accepts(result.sql)
    return result.sql


def test_a_local_of_a_builtins_name_wins() -> None:
    sql = _compile("    let sysdate = 1;\n    let user = s;\n    return user + to_char(sysdate);")
    assert "l_user := p_s;" in sql
    assert "TO_CHAR(l_sysdate)" in sql
    assert "SYSDATE;" not in sql


def test_a_parameter_of_a_builtins_name_wins() -> None:
    sql = _compile("    return user;", params="user: text")
    assert "RETURN p_user;" in sql


def test_bare_and_called_session_values_lower_alike() -> None:
    sql = _compile(
        "    let a = sysdate;\n    let b = sysdate();\n    let c = systimestamp;\n"
        '    return to_char(a) + to_char(b) + to_char(c, "HH24") + user + user();'
    )
    assert "l_a := SYSDATE;" in sql and "l_b := SYSDATE;" in sql
    assert "l_c := SYSTIMESTAMP;" in sql
    assert "USER || USER" in sql


def test_builtins_type_their_results() -> None:
    # `length` is a number: checked where it is used
    source = (
        "module m;\n\npub fn f(s: text) -> text {\n    let d: date = length(s);\n    return s;\n}\n"
    )
    result = compile_source(source, "m.pell", "23ai")
    rendered = render_all(result.diagnostics, result.source)
    assert result.sql is None
    assert "is declared `date` but is given a `number`" in rendered


def test_the_result_is_unknown_after_a_wrong_argument() -> None:
    # one error for `nvl(d, 0)`, none more for what its value is then used for
    source = (
        "module m;\n\npub fn f(d: date) -> number {\n    let x = nvl(d, 0);\n    return x + 1;\n}\n"
    )
    result = compile_source(source, "m.pell", "23ai")
    assert [d.code for d in result.diagnostics if d.is_error] == ["type-mismatch"]
