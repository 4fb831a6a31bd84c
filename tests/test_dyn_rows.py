"""The rows of a `cursor<dyn>` as json (issue 26, item 7): `for row in c` in
pell.checker.bodies, pell.codegen.subprograms.dyn_cursor_loop and the package functions
pell_dyn_open / pell_dyn_row (templates/json_functions.sql.j2); `json::get_keys`; `.rpad(n)`
and `.lpad(n)` on text and numbers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.verify import verify

CASE = Path(__file__).parent / "cases" / "dyn_rows.pell"
CLOSE = "DBMS_SQL.CLOSE_CURSOR(l_pell_dyn);"
CLOSE_IF_OPEN = f"IF DBMS_SQL.IS_OPEN(l_pell_dyn) THEN {CLOSE} END IF;"


def _sql() -> str:
    result = compile_source(CASE.read_text(encoding="utf-8"), filename=CASE.name)
    assert result.sql is not None, result.diagnostics
    return result.sql


def _body(sql: str, fn: str) -> str:
    """The text of one subprogram of the package body."""
    match = re.search(rf"\n  (?:FUNCTION|PROCEDURE) {fn}\b[^\n]* IS\n(.*?)\n  END {fn};", sql, re.S)
    assert match is not None, fn
    return match.group(1)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_each_row_is_a_json_object_read_through_dbms_sql() -> None:
    sql = _sql()
    assert_oracle_accepts(sql)
    dump = _lines(_body(sql, "dump"))
    # a call's cursor is held, made a DBMS_SQL cursor, and read row by row into the json local
    assert dump[dump.index("l_pell_cursor := region_sales;") :][:5] == [
        "l_pell_cursor := region_sales;",
        "l_pell_dyn := pell_dyn_open(l_pell_cursor, l_pell_dyn_columns);",
        "LOOP",
        "l_row := pell_dyn_row(l_pell_dyn, l_pell_dyn_columns);",
        "EXIT WHEN l_row IS NULL;",
    ]
    assert "l_row CLOB;" in dump and "l_pell_dyn_columns DBMS_SQL.DESC_TAB2;" in dump
    opened = _body(sql, "pell_dyn_open")
    for call in (
        "DBMS_SQL.TO_CURSOR_NUMBER(p_cursor)",
        "DBMS_SQL.DESCRIBE_COLUMNS2(l_cursor, l_count, p_columns)",
        "DBMS_SQL.DEFINE_COLUMN(l_cursor, i, l_text, 32767)",
    ):
        assert call in opened
    row = _body(sql, "pell_dyn_row")
    assert "IF DBMS_SQL.FETCH_ROWS(p_cursor) = 0 THEN" in row
    assert "DBMS_SQL.COLUMN_VALUE(p_cursor, i, l_number);" in row
    assert "l_row.put_null(l_name)" in row and "RETURN l_row.to_clob;" in row
    # dates as the json type writes them, whatever the session's NLS_DATE_FORMAT
    assert """TO_CHAR(l_date, 'YYYY-MM-DD"T"HH24:MI:SS')""" in row


def test_the_dbms_sql_cursor_is_closed_on_every_way_out() -> None:
    sql = _sql()
    for fn in ("dump", "east_total", "fn_columns", "first_id", "retried_count"):
        raw = _body(sql, fn).splitlines()
        lines = _lines("\n".join(raw))
        # after the loop (the END LOOP as indented as its LOOP), and in the fn's handler
        loop = raw[lines.index("l_row := pell_dyn_row(l_pell_dyn, l_pell_dyn_columns);") - 1]
        end = raw.index(loop.replace("LOOP", "END LOOP;"), lines.index("EXIT WHEN l_row IS NULL;"))
        assert lines[end + 1] == CLOSE, fn
        handler = lines[lines.index("WHEN OTHERS THEN", len(lines) - 6) :]
        assert CLOSE_IF_OPEN in handler and handler[-1] == "RAISE;", fn
    # a `return` inside the loop closes it first
    east = _lines(_body(sql, "east_total"))
    assert east[east.index("RETURN l_pell_result;") - 1] == CLOSE
    first = _lines(_body(sql, "first_id"))
    assert first[first.index("RETURN l_pell_result;") - 1] == CLOSE
    # pell_dyn_open closes what it opened when it fails, then raises again
    opened = _lines(_body(sql, "pell_dyn_open"))
    handler = opened[opened.index("EXCEPTION") :]
    assert "IF DBMS_SQL.IS_OPEN(l_cursor) THEN DBMS_SQL.CLOSE_CURSOR(l_cursor); END IF;" in handler
    assert "IF p_cursor%ISOPEN THEN CLOSE p_cursor; END IF;" in handler
    assert handler[-1] == "RAISE;"


def test_a_retried_attempt_closes_the_cursor_an_earlier_one_left_open() -> None:
    lines = _lines(_body(_sql(), "retried_count"))
    at = lines.index("l_pell_dyn := pell_dyn_open(l_c, l_pell_dyn_columns);")
    assert lines[at - 1] == CLOSE_IF_OPEN
    assert lines.index("SAVEPOINT sp_dynrows_retried_count_96c57064;") < at - 1


def test_a_parameter_is_read_through_a_copy() -> None:
    # TO_CURSOR_NUMBER takes the ref cursor IN OUT, which an IN parameter cannot be
    lines = _lines(_body(_sql(), "east_total"))
    assert lines[lines.index("l_pell_cursor := p_rows;") + 1] == (
        "l_pell_dyn := pell_dyn_open(l_pell_cursor, l_pell_dyn_columns);"
    )
    assert not any("pell_dyn_open(p_rows" in line for line in lines)


def test_get_keys_is_a_list_of_text_and_a_number_pads_as_its_text() -> None:
    sql = _sql()
    lines = _lines(_body(sql, "fn_columns"))
    assert "l_pell_text_list := pell_json_keys(l_row);" in lines
    assert sql.index("TYPE t_text_list IS TABLE OF VARCHAR2(4000)") < sql.index(
        "FUNCTION pell_json_keys(p_doc IN CLOB) RETURN t_text_list IS"
    )
    assert "l_keys JSON_KEY_LIST := JSON_OBJECT_T.parse(p_doc).get_keys;" in sql
    assert (
        "dbms_output.put_line(RPAD(l_product, 20) || ' ' || RPAD(l_k, 10) || ' ' "
        "|| RPAD(pell_number_text(l_v), 12));"
    ) in lines


def test_reading_the_rows_is_a_read_for_verify() -> None:
    result = compile_source(CASE.read_text(encoding="utf-8"), filename=CASE.name)
    report = verify([result])
    assert [f for f in report.findings if f.severity == "error"] == []


def test_the_helpers_are_declared_only_when_used() -> None:
    source = "module plain;\npub fn f(x: number) -> number {\n    return x;\n}\n"
    result = compile_source(source, filename="plain.pell")
    assert result.sql is not None
    assert "pell_dyn_open" not in result.sql and "pell_json_keys" not in result.sql


def test_rows_of_a_dyn_cursor_are_jsonb_on_postgres() -> None:
    # tests/test_postgres.py runs one on the server
    source = 'module pg;\npub fn f(c: cursor<dyn>) {\n    for r in c {\n        println("{r}");\n    }\n}\n'
    result = compile_source(source, "pg.pell", "postgres")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert "l_r := to_jsonb(l_pell_row);" in result.sql


PADDED = """
module pads;

pub fn padded(name: text, n: number) -> text {
    return "[{name.rpad(5)}|{n.lpad(6)}|{name.lpad(2)}]";
}
"""


def test_pads_run_on_postgres_as_on_oracle(postgres_database: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    oracle = compile_source(PADDED, "pads.pell")
    assert oracle.sql is not None, oracle.diagnostics
    assert "RPAD(p_name, 5)" in oracle.sql and "LPAD(pell_number_text(p_n), 6)" in oracle.sql
    result = compile_source(PADDED, "pads.pell", "postgres")
    assert result.sql is not None, result.diagnostics
    with psycopg.connect(postgres_database) as connection:
        connection.execute(result.sql)
        rows = [
            connection.execute("select pads.padded(%s::text, %s::numeric)", (name, n)).fetchone()
            for name, n in (("ab", 2.5), ("abcdef", -10), ("", 0))
        ]
    # RPAD and LPAD cut a longer text to n characters; Oracle keeps '' as NULL, which pads to
    # NULL, and interpolation writes NULL as nothing
    assert rows == [("[ab   |   2.5|ab]",), ("[abcde|   -10|ab]",), ("[|     0|]",)]
