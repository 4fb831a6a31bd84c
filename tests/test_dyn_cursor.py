"""Dynamic cursors, `pivot::`, and a value spliced in as a literal (issue 26, item 7):
pell.checker.dynamic_sql, pell.checker.pivot, pell.ast_builder.typed_pivot and their lowering
in pell.codegen.subprograms."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.verify import verify

CASE = Path(__file__).parent / "cases" / "dyn_cursor.pell"


def _sql() -> str:
    result = compile_source(CASE.read_text(encoding="utf-8"), filename=CASE.name)
    assert result.sql is not None, result.diagnostics
    return result.sql


def _body(sql: str, fn: str) -> str:
    """The text of one subprogram of the package body."""
    match = re.search(rf"\n  (?:FUNCTION|PROCEDURE) {fn}\b[^\n]* IS\n(.*?)\n  END {fn};", sql, re.S)
    assert match is not None, fn
    return match.group(1)


def _compile(body: str, head: str = "pub unsafe fn f(t: text, q: text, n: number)") -> list[str]:
    source = f"module inj;\n\nrecord R {{ id: number }}\n\n{head} {{\n{body}\n}}\n"
    result = compile_source(source, filename="inj.pell")
    return [d.code for d in result.diagnostics if d.is_error]


def test_a_cursor_opens_with_names_checked_and_values_bound() -> None:
    sql = _sql()
    opens = [line.strip() for line in sql.splitlines() if line.strip().startswith("OPEN ")]
    statement = next(line for line in opens if "where status" in line)
    assert statement == (
        "OPEN l_pell_cursor FOR 'select id, status from ' || "
        "DBMS_ASSERT.QUALIFIED_SQL_NAME(p_tname) || ' where status = :st' USING p_st;"
    )


def test_a_cursor_the_fn_opens_is_closed_on_every_way_out() -> None:
    body = _body(_sql(), "count_open")
    # every RETURN is preceded by the cursor's CLOSE, and the handler closes it too
    returns = [m.start() for m in re.finditer(r"RETURN ", body)]
    assert len(returns) == 2
    for at in returns:
        before = body[:at].rstrip().splitlines()[-1].strip()
        assert before == "IF l_orders%ISOPEN THEN CLOSE l_orders; END IF;", before
    handler = body[body.index("EXCEPTION") :]
    assert "IF l_orders%ISOPEN THEN CLOSE l_orders; END IF;\n      RAISE;" in handler


def test_a_returned_cursor_stays_open_and_one_handed_to_a_call_is_closed_if_still_open() -> None:
    handed = _body(_sql(), "handed")
    main = handed[: handed.index("EXCEPTION")]
    assert "CLOSE" not in main and main.rstrip().endswith("RETURN l_c;")
    # review 8: a cursor handed to a call was never closed here, though the callee may return
    # before it reads (and closes) it, or an error or a `return` may come first
    source = (
        "module m;\nrecord R { id: number }\n"
        "pub fn consume(c: cursor<R>) -> number {\n    return 0;\n}\n"
        "pub unsafe fn n_of(t: text, flag: bool) -> number {\n"
        '    let c: cursor<R> = exec_dyn("select id from {t}");\n'
        "    if flag {\n        return 0;\n    }\n"
        "    return consume(c);\n}\n"
    )
    result = compile_source(source, filename="m.pell")
    assert result.sql is not None, result.diagnostics
    body = _body(result.sql, "n_of")
    close = "IF l_c%ISOPEN THEN CLOSE l_c; END IF;"
    assert body.count(close) == 3  # the early `return`, the last one, the handler
    # the call reads the cursor before it is closed
    assert body.index("l_pell_result := consume(l_c);") < body.rindex(close)


def test_an_assignment_opens_a_cursor_and_none_is_assigned_null() -> None:
    sql = _sql()
    assert "OPEN p_c FOR 'select id, status from ' || DBMS_ASSERT.QUALIFIED_SQL_NAME(p_tname);" in (
        _body(sql, "open_into")
    )
    # "You cannot assign nulls to a cursor variable": a `var` without a value needs nothing
    assert "l_c := NULL" not in _body(sql, "reopened")
    # and a retried attempt closes what a failed one left open in an `out` cursor
    source = (
        "module m;\nrecord R { id: number }\n@retry(3, on = [lock_timeout])\n"
        "pub unsafe fn open_into(t: text, out c: cursor<R>) {\n"
        '    c = exec_dyn("select id from {t}");\n}\n'
    )
    result = compile_source(source, filename="m.pell")
    assert result.sql is not None, result.diagnostics
    assert_oracle_accepts(result.sql)
    body = _body(result.sql, "open_into")
    assert "p_c := NULL" not in body
    assert body.index("IF p_c%ISOPEN THEN CLOSE p_c; END IF;") < body.index("OPEN p_c FOR")


def test_a_loop_over_a_returned_cursor_holds_it_and_closes_it() -> None:
    body = _body(_sql(), "first_open")
    assert "l_pell_cursor := open_orders(p_tname, 'open');" in body
    assert "FETCH l_pell_cursor BULK COLLECT INTO l_pell_rows LIMIT 100;" in body
    assert "CLOSE l_pell_cursor;" in body


def test_a_dynamic_pivot_writes_each_value_through_dbms_assert() -> None:
    body = _body(_sql(), "region_sales")
    item = next(line for line in body.splitlines() if "l_pivot_columns :=" in line and "||" in line)
    assert "|| pell_pivot_item(r_pivot_value.region);" in item
    sql = _sql()
    text_item = sql[sql.index("FUNCTION pell_pivot_item(p_value IN VARCHAR2)") :]
    text_item = text_item[: text_item.index("END pell_pivot_item;")]
    assert "DBMS_ASSERT.ENQUOTE_LITERAL('''' || REPLACE(p_value, '''', '''''') || '''')" in text_item
    assert "DBMS_ASSERT.ENQUOTE_NAME(p_value, FALSE)" in text_item
    # the source's bind is a USING bind of the OPEN, by position; never joined to the text
    opened = body[body.index("OPEN ") :]
    assert "sales > :1" in opened and "END USING p_lo;" in opened
    assert "p_lo ||" not in opened and "|| p_lo" not in opened


def test_a_dynamic_pivot_writes_no_value_in_the_session_nls_formats() -> None:
    # review 8: a date (or number) value went into the IN list through the session's
    # NLS_DATE_FORMAT (DD-MON-RR, no time): two times of one day made one alias twice, and a
    # value with a time never matched its own literal. Each type is written with a fixed format.
    sql = _sql()
    functions = sql[sql.index("FUNCTION pell_pivot_item(p_value IN NUMBER)") :]
    functions = functions[: functions.index("FUNCTION", functions.index("TIME ZONE)"))]
    assert "TO_CHAR(p_value, 'TM9', 'NLS_NUMERIC_CHARACTERS = ''.,''')" in functions
    assert "FUNCTION pell_pivot_item(p_value IN DATE) RETURN VARCHAR2 IS\n" in functions
    # (each datetime's format, and how it is read back: the next test)
    assert functions.count("TO_CHAR(p_value, c_format, 'NLS_CALENDAR=GREGORIAN');") == 3
    # no conversion is left to the session: every TO_CHAR has its format
    assert "TO_CHAR(p_value)" not in functions
    assert "REPLACE(r_pivot_value" not in sql


def _pivot_items(sql: str) -> dict[str, str]:
    """Each pell_pivot_item overload's text, by its parameter's type."""
    found = re.findall(
        r"\n  FUNCTION pell_pivot_item\(p_value IN ([A-Z0-9 ]+)\) RETURN VARCHAR2 IS\n"
        r"(.*?)\n  END pell_pivot_item;",
        sql,
        re.S,
    )
    return dict(found)


def test_a_dynamic_pivot_reads_each_datetime_back_with_the_format_it_was_written_in() -> None:
    # review 13: YYYY has no sign, so 15 March 44 BC was written as the ANSI literal
    # TIMESTAMP '0044-03-15 00:00:00', AD 44: its rows matched no IN item and their sums were
    # lost. An ANSI literal takes no signed year ("Datetime Literals"): each datetime is
    # written with SYYYY in the Gregorian calendar and read back by the TO_ function of its
    # type with the same format and calendar, never the session's.
    items = _pivot_items(_sql())
    readers = {
        "DATE": "TO_DATE",
        "TIMESTAMP": "TO_TIMESTAMP",
        "TIMESTAMP WITH TIME ZONE": "TO_TIMESTAMP_TZ",
    }
    assert set(items) == {"VARCHAR2", "NUMBER", *readers}
    for type_, reader in readers.items():
        body = items[type_]
        written = re.search(r"c_format CONSTANT VARCHAR2\(40\) := '([^']*)';", body)
        assert written is not None, type_
        assert written.group(1).startswith("SYYYY-MM-DD HH24:MI:SS"), type_
        assert "l_text VARCHAR2(100) := TO_CHAR(p_value, c_format, 'NLS_CALENDAR=GREGORIAN');" in body
        read = (
            f"RETURN '{reader}(''' || l_text || ''', ''' || c_format || "
            "''', ''NLS_CALENDAR=GREGORIAN'') AS '"
        )
        assert read in body, type_
        # the alias is the text without the blank before an AD year: 44 BC and AD 44 are
        # two names
        assert "|| DBMS_ASSERT.ENQUOTE_NAME(LTRIM(l_text), FALSE);" in body, type_
        assert "TIMESTAMP '''" not in body, type_
        assert "YYYY" not in body.replace("SYYYY", ""), type_


def test_a_dynamic_pivot_refuses_a_text_value_with_a_double_quote() -> None:
    # review 13: ENQUOTE_NAME adds no quotes to a name already quoted, so the value `"EAST"`
    # got the alias "EAST", the same as the value `EAST`: two IN items, one column name. No
    # quoted name holds a `"`: such a value is refused before its item is written.
    body = _pivot_items(_sql())["VARCHAR2"]
    check = body.index("IF INSTR(p_value, '\"') > 0 THEN\n      RAISE VALUE_ERROR;\n    END IF;")
    assert check < body.index("RETURN DBMS_ASSERT.ENQUOTE_LITERAL(") < body.index("ENQUOTE_NAME(p_value")


def test_a_typed_pivot_is_a_static_query_over_the_enum_values() -> None:
    body = _body(_sql(), "list_totals")
    assert (
        "pivot (sum(sales) for region in ('NORTH' as NORTH, 'SOUTH' as SOUTH, 'EAST' as EAST, "
        "'WEST' as WEST, 'Central ''hub''' as \"Central 'hub'\"))"
    ) in body
    assert "select product, NORTH, SOUTH, EAST, WEST, \"Central 'hub'\" BULK COLLECT INTO l_rows" in body
    assert "EXECUTE" not in body and "OPEN" not in body


def test_a_value_where_sql_takes_no_bind_is_an_enquoted_literal() -> None:
    # the value's quotes doubled and the literal's added before ENQUOTE_LITERAL checks it, which
    # adds none to a quoted value: `'abc'` stays itself and `O'Brien` is no error (review 8)
    body = _body(_sql(), "explain_for")
    literal = "DBMS_ASSERT.ENQUOTE_LITERAL('''' || REPLACE(p_stmt_id, '''', '''''') || '''')"
    assert f"EXECUTE IMMEDIATE 'delete from plan_table where statement_id = ' || {literal};" in body
    assert (
        f"EXECUTE IMMEDIATE 'explain plan set statement_id = ' || {literal} || ' for ' || p_query;"
    ) in body


# Injection attempts: a splice that could end its string, or a statement spliced in anywhere
# but at the end of an EXPLAIN PLAN run on its own
REFUSED = {
    "a literal joined to text": 'exec_dyn("delete from t where a = \'x{t}\'");',
    "a literal after a doubled quote": 'exec_dyn("delete from t where a = \'x\'\'{t}\'");',
    "a quoted splice in a comment": 'exec_dyn("delete from t -- \'{t}\'\\n where 1 = 0");',
    "a statement read into a let": 'let x: number = exec_dyn("explain plan for {q}");',
    "a statement opened as a cursor": 'let c: cursor<R> = exec_dyn("explain plan for {q}");',
    "a statement after a comment ending in for": 'exec_dyn("explain plan -- for\\n{q}");',
    "a cursor over DML": 'let c: cursor<R> = exec_dyn("delete from {t}");',
    "a number spliced as a literal": 'exec_dyn("delete from t where a = \'{n}\'");',
}


@pytest.mark.parametrize("body", REFUSED.values(), ids=REFUSED.keys())
def test_an_injection_shape_is_refused(body: str) -> None:
    codes = _compile(body)
    assert codes and set(codes) <= {"dynamic-sql", "type-mismatch"}, codes


def test_a_statement_spliced_after_explain_plan_for_compiles() -> None:
    result = compile_source(
        'module inj;\npub unsafe fn f(q: text) {\n    exec_dyn("explain plan for {q}");\n}\n',
        filename="inj.pell",
    )
    assert result.sql is not None, result.diagnostics
    assert "EXECUTE IMMEDIATE 'explain plan for ' || p_q;" in result.sql
    # anywhere else, `{q}` is a name, checked by QUALIFIED_SQL_NAME
    result = compile_source(
        'module inj;\npub unsafe fn f(q: text) {\n    exec_dyn("delete from t where id in ({q})");\n}\n',
        filename="inj.pell",
    )
    assert result.sql is not None and "DBMS_ASSERT.QUALIFIED_SQL_NAME(p_q)" in result.sql


def test_a_dynamic_query_is_a_read_and_a_spliced_statement_a_commit_for_retry() -> None:
    source = (
        "module r;\nrecord R { id: number }\n"
        "@retry(3, on = [lock_timeout])\n"
        "pub unsafe fn reads(t: text, s: text) -> number {\n"
        "    var n: number = 0;\n"
        '    let c: cursor<R> = exec_dyn("select id from {t}");\n'
        "    for r in c { n = n + r.id; }\n"
        '    let m: number = exec_dyn("select count(*) from {t}");\n'
        "    exec_dyn(\"delete from plan_table where statement_id = '{s}'\");\n"
        "    return n + m;\n}\n"
    )
    result = compile_source(source, filename="r.pell")
    assert result.sql is not None, result.diagnostics
    assert_oracle_accepts(result.sql)
    report = verify([result])
    assert [f for f in report.findings if f.severity == "error"] == []
    explained = source.replace(
        "    return n + m;", '    exec_dyn("explain plan for {t}");\n    return n + m;'
    )
    result = compile_source(explained, filename="r.pell")
    assert [d.code for d in result.diagnostics if d.is_error] == ["commit-in-retry"]


def test_a_cursor_of_dyn_rows_is_read_by_for_as_json() -> None:
    # the rows' lowering: tests/test_dyn_rows.py
    assert _compile("for r in c { let n: number = r; }", "pub fn f(c: cursor<dyn>)") == [
        "type-mismatch"
    ]
    assert _compile("for r in c { println(json::get_text(r, \"$.A\")); }", "pub fn f(c: cursor<dyn>)") == []


TOTAL_PG = """
module feeds;

record Order { id: number, status: text }

// a cursor the caller opened, read by a fn that is not @pipelined: FETCH until none is left,
// then CLOSE (a `return` inside the loop closes it first)
pub fn total(rows: cursor<Order>, stop: number) -> number {
    var n: number = 0;
    for o in rows {
        if o.id == stop {
            return -n;
        }
        n = n + o.id;
    }
    return n;
}
"""


def test_a_cursor_parameter_of_a_plain_fn_runs_on_postgres(postgres_database: str) -> None:
    psycopg = pytest.importorskip("psycopg")
    result = compile_source(TOTAL_PG, "feeds.pell", "postgres")
    assert result.sql is not None, result.diagnostics
    with psycopg.connect(postgres_database) as connection:  # a cursor lives in its transaction
        connection.execute(result.sql)
        query = "select * from (values (1, 'a'), (2, 'b'), (4, 'c')) v(id, status) order by id"
        connection.execute(f"declare all_rows cursor for {query}")
        total = connection.execute("select feeds.total('all_rows', 0)").fetchone()
        connection.execute(f"declare stopped cursor for {query}")
        stopped = connection.execute("select feeds.total('stopped', 2)").fetchone()
        open_cursors = connection.execute("select name from pg_cursors").fetchall()
    assert total == (7,) and stopped == (-1,)
    assert open_cursors == []


def test_a_dyn_cursor_parameter_is_a_sys_refcursor() -> None:
    # review 8: a `cursor<dyn>` parameter crashed the Oracle lowering (no row type to fetch into)
    result = compile_source(
        "module m;\npub fn f(d: cursor<dyn>) -> number {\n    return 1;\n}\n"
        "pub fn pass(d: cursor<dyn>) -> cursor<dyn> { return d; }\n",
        "m.pell",
    )
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert "FUNCTION pass(p_d IN SYS_REFCURSOR) RETURN SYS_REFCURSOR;" in result.sql


def test_a_typed_pivot_into_a_record_of_another_field_order_is_refused() -> None:
    # review 8: the rows are fetched by position, so `south` got NORTH's sums
    template = (
        "module m;\nenum Region {{ NORTH, SOUTH }}\nrecord T {{ product: text, {fields} }}\n"
        "pub fn totals() -> list<T> {{\n    let rows: list<T> = pivot::sum(\n"
        "        source = sql! {{ select product, region, sales from orders }},\n"
        "        rows = product, col = region, over = Region, value = sales,\n"
        "    ).collect();\n    return rows;\n}}\n"
    )
    swapped = compile_source(template.format(fields="south: number, north: number"), "m.pell")
    assert [d.code for d in swapped.diagnostics] == ["type-mismatch"]
    ordered = compile_source(template.format(fields="north: number, south: number"), "m.pell")
    assert ordered.sql is not None, [d.message for d in ordered.diagnostics]


def test_a_typed_pivot_checks_the_field_order_of_quoted_aliases_too() -> None:
    # review 10: a value that is no name (a quoted alias) was "any field", so `sw, ne` got
    # the sums of "north east" and "south west" crossed; such a field is named as its variant
    template = (
        "module m;\nenum Region {{ North = \"north east\", South = \"south west\" }}\n"
        "record T {{ product: text, {fields} }}\n"
        "pub fn totals() -> list<T> {{\n    let rows: list<T> = pivot::sum(\n"
        "        source = sql! {{ select product, region, sales from orders }},\n"
        "        rows = product, col = region, over = Region, value = sales,\n"
        "    ).collect();\n    return rows;\n}}\n"
    )
    for fields in ("sw: number, ne: number", "south: number, north: number"):
        crossed = compile_source(template.format(fields=fields), "m.pell")
        assert [d.code for d in crossed.diagnostics] == ["type-mismatch"], fields
        assert "fills the fields `product, north, south`" in crossed.diagnostics[0].message
    ordered = compile_source(template.format(fields="north: number, south: number"), "m.pell")
    assert ordered.sql is not None, [d.message for d in ordered.diagnostics]
    assert_oracle_accepts(ordered.sql)
    assert "select product, \"north east\", \"south west\" BULK COLLECT INTO" in ordered.sql


def test_a_cursor_opened_in_the_loop_that_reads_it_is_read_once_a_pass() -> None:
    # review 8: opened again on each pass, it was refused as "read inside another loop"
    source = (
        "module m;\nrecord Order { id: number, status: text }\n"
        "pub unsafe fn inloop(a: text) -> number {\n    var n: number = 0;\n"
        "    for i in 1..3 {\n"
        '        let c: cursor<Order> = exec_dyn("select id, status from {a}");\n'
        "        for o in c { n = n + o.id; }\n    }\n    return n;\n}\n"
    )
    result = compile_source(source, "m.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    outside = source.replace(
        "    for i in 1..3 {\n        let c: cursor<Order> = exec_dyn(\"select id, status from {a}\");\n",
        "    let c: cursor<Order> = exec_dyn(\"select id, status from {a}\");\n    for i in 1..3 {\n",
    )
    assert [d.code for d in compile_source(outside, "m.pell").diagnostics] == ["type-mismatch"]


def test_a_cursor_handed_to_a_call_whose_result_is_returned_stays_open() -> None:
    # review 10: `return pass(c)` closed `c`, the very cursor returned; and a call that
    # returns a cursor, as a statement, left it open for good
    source = (
        "module m;\nrecord Order { id: number, status: text }\n"
        "pub fn pass(d: cursor<Order>) -> cursor<Order> { return d; }\n"
        "pub unsafe fn wrap(a: text) -> cursor<Order> {\n"
        '    let c: cursor<Order> = exec_dyn("select id, status from {a}");\n'
        "    return pass(c);\n}\n"
    )
    result = compile_source(source, "m.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert "CLOSE l_c" not in _body(result.sql, "wrap")
    dropped = compile_source(
        source + "pub unsafe fn go(a: text) {\n    let c: cursor<Order> = exec_dyn(\"select id, "
        'status from {a}");\n    pass(c);\n}\n',
        "m.pell",
    )
    assert [d.code for d in dropped.diagnostics] == ["not-a-statement"]


def test_a_retried_fn_that_reads_its_callers_cursor_is_refused() -> None:
    # a rollback does not move a cursor back: the next attempt read only the rows the failed
    # one left, and the total missed the others with no error
    source = (
        "module m;\nrecord Order { id: number, status: text }\n"
        "@retry(3, on = [lock_timeout])\npub fn total(rows: cursor<Order>) -> number {\n"
        "    var n: number = 0;\n    for o in rows { n = n + o.id; }\n    return n;\n}\n"
        "@retry(3, on = [lock_timeout])\npub fn passes(rows: cursor<dyn>) -> number {\n"
        "    return count(rows);\n}\n"
        "pub fn count(rows: cursor<dyn>) -> number {\n"
        "    var n: number = 0;\n    for r in rows { n = n + 1; }\n    return n;\n}\n"
        "@retry(3, on = [lock_timeout])\npub unsafe fn opens(t: text) -> number {\n"
        '    let c: cursor<Order> = exec_dyn("select id, status from {t}");\n'
        "    var n: number = 0;\n    for o in c { n = n + o.id; }\n    return n;\n}\n"
    )
    result = compile_source(source, "m.pell")
    line = result.source.line_col
    found = [
        (d.code, line(d.span.start)[0], [line(n.span.start)[0] for n in d.notes])
        for d in result.diagnostics
    ]
    # a fn that opens its cursor opens it again on each attempt: accepted
    assert found == [("retry-combination", 3, [6]), ("retry-combination", 9, [11])]
