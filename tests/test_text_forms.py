"""Values become text the same way in every session (issue 25, item 2): every conversion to
text (interpolation, `.to_text()`, `.into::<text>()`, `+`, a number where a built-in takes
text) reads one table, pell/codegen/text_forms.py. On Oracle by the generated text: each
date, timestamp and number names its format and its decimal character, where TO_CHAR without
them follows NLS_DATE_FORMAT and NLS_NUMERIC_CHARACTERS (SQL Language Reference, TO_CHAR
(datetime), TO_CHAR (number)); text is never wrapped in TO_CHAR. tests/test_postgres.py runs
the PostgreSQL forms under several DateStyle and IntervalStyle settings.
"""

from __future__ import annotations

import re

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.diagnostics import render_all


def _oracle(source: str) -> str:
    result = compile_source(source, "texts.pell")
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    assert_oracle_accepts(result.sql)
    return result.sql


def _errors(source: str) -> list[str]:
    result = compile_source(source, "texts.pell")
    return [d.message for d in result.diagnostics if d.is_error]


SHOW = """
module demo.texts;

pub fn show(n: number, i: int, d: date, ts: timestamp, iv: interval, b: bool, s: text) -> text {
    return "{n} {i} {d} {ts} {iv} {b} {s}";
}
"""

# What each value is written as; the text is as it is
FORMS = {
    "n": "pell_number_text(p_n)",
    "i": "TO_CHAR(p_i)",
    "d": "TO_CHAR(p_d, 'YYYY-MM-DD HH24:MI:SS')",
    "ts": "TO_CHAR(p_ts, 'YYYY-MM-DD HH24:MI:SS.FF6')",
    "iv": "pell_interval_text(p_iv)",
    "b": "CASE WHEN p_b THEN 'true' WHEN NOT p_b THEN 'false' END",
    "s": "p_s",
}


def test_interpolation_writes_each_type_in_its_session_free_form() -> None:
    sql = _oracle(SHOW)
    expected = " || ' ' || ".join(FORMS.values())
    assert f"RETURN {expected};" in sql
    # nothing is left to the session's NLS_DATE_FORMAT or NLS_NUMERIC_CHARACTERS
    for bare in ("TO_CHAR(p_n)", "TO_CHAR(p_d)", "TO_CHAR(p_ts)", "TO_CHAR(p_iv)", "TO_CHAR(p_s)"):
        assert bare not in sql


@pytest.mark.parametrize(
    "conversion",
    ["{x}", "x.to_text()", "x.into::<text>()", '"" + x.to_text()'],
)
@pytest.mark.parametrize(("pell_type", "form"), [("number", "pell_number_text(p_x)"),
                                                ("date", "TO_CHAR(p_x, 'YYYY-MM-DD HH24:MI:SS')")])  # fmt: skip
def test_to_text_into_and_plus_write_what_interpolation_writes(
    conversion: str, pell_type: str, form: str
) -> None:
    body = f'"{conversion}"' if conversion.startswith("{") else conversion
    sql = _oracle(f"module demo.one;\n\npub fn f(x: {pell_type}) -> text {{\n    return {body};\n}}\n")
    assert re.search(rf"RETURN (''\s*\|\|\s*)?{re.escape(form)};", sql), sql


def test_the_package_functions_fix_the_format_and_come_only_when_used() -> None:
    sql = _oracle(SHOW)
    # TM9 with the decimal character given, whatever NLS_NUMERIC_CHARACTERS says; 0 before a
    # leading point
    assert "TO_CHAR(p_value, 'TM9', 'NLS_NUMERIC_CHARACTERS = ''.,''')" in sql
    assert "RETURN '0' || l_text;" in sql
    assert "RETURN '-0' || SUBSTR(l_text, 2);" in sql
    # an interval from its fields, the sign once, seconds written with the period element
    assert "FUNCTION pell_interval_text(p_value IN INTERVAL DAY TO SECOND) RETURN VARCHAR2" in sql
    assert "TO_CHAR(TRUNC(EXTRACT(SECOND FROM l_size), 6), 'FM00.000000')" in sql
    # declared before the fns that call them, once
    assert sql.count("FUNCTION pell_number_text(") == 1
    assert sql.index("FUNCTION pell_number_text(") < sql.rindex("FUNCTION show(p_n")
    only_text = _oracle('module demo.plain;\n\npub fn f(s: text, i: int) -> text {\n    return "{s} {i}";\n}\n')
    assert "pell_number_text" not in only_text
    assert "pell_interval_text" not in only_text


def test_a_number_where_a_builtin_takes_text_is_written_as_interpolation_writes_it() -> None:
    sql = _oracle(
        "module demo.pad;\n\npub fn f(n: number, i: int) -> text {\n"
        '    return lpad(n, 8, "0") + upper(i);\n}\n'
    )
    assert "LPAD(pell_number_text(p_n), 8, '0') || UPPER(TO_CHAR(p_i))" in sql


ROWS = """
module demo.rows;

import dbms_output;

pub fn report() {
    for r in sql! {
        select e.last_name, 'Dr. ' || e.first_name as title, upper(e.email) mail,
               to_char(e.hire_date, 'YYYY') hired, e.salary
          from employees e
    } {
        dbms_output::put_line("{r.title}, {r.mail}, {r.hired}: {r.last_name} {r.salary}");
        dbms_output::put_line(r.title.to_text());
        dbms_output::put_line(r.last_name.to_text());
    }
}
"""


def test_a_cursor_column_the_sql_makes_text_is_text_without_to_char() -> None:
    sql = _oracle(ROWS)
    # a column of the database's type: `||` converts it as TO_CHAR would, by the session
    assert (
        "dbms_output.put_line(l_r.title || ', ' || l_r.mail || ', ' || l_r.hired || ': ' "
        "|| l_r.last_name || ' ' || l_r.salary);"
    ) in sql
    assert "dbms_output.put_line(l_r.title);" in sql
    assert "dbms_output.put_line(TO_CHAR(l_r.last_name));" in sql  # alone: a VARCHAR2 anywhere


def test_a_cursor_column_the_sql_makes_text_is_typed_text() -> None:
    source = ROWS.replace(
        'dbms_output::put_line("{r.title}', 'let wrong: number = r.title;\n        dbms_output::put_line("{r.title}'
    )
    assert any("`text`" in message for message in _errors(source)), _errors(source)
    assert _errors(ROWS.replace("r.salary}", "r.salary} {r.title + r.mail}")) == []


@pytest.mark.parametrize(
    ("item", "text"),
    [
        ("'x'", True),
        ("'x' as label", True),
        ("n'x' label", True),
        ("upper(e.name)", True),
        ("to_char(d, 'YYYY') y", True),
        ("a || b", True),
        ("e.first || ' ' || e.last full_name", True),
        ("'id ' || :id || lower(x) as t", True),
        ("e.name", False),
        ("name", False),
        ("count(*)", False),
        ("salary * 2", False),
        ("case when a > 1 then 'a' else 'b' end k", False),
        ("'x' || 1 = 'x1' flag", False),
        ("(a || b)", False),
        ("pkg.upper(x)", False),
        ("upper(x) || 1 + 2", False),
        ("nvl(a, 'x')", False),
    ],
)
def test_which_select_items_are_text(item: str, text: bool) -> None:
    from pell import sqltext
    from pell.checker.sql_typing import is_text_item

    shape = sqltext.analyse(f"select {item} from t")
    ((start, end),) = shape.select_items
    tokens = [token for token in shape.tokens if start <= token.start < end]
    assert is_text_item(tokens) is text, item


def test_json_payloads_write_the_fields_interpolation_writes() -> None:
    from pell.checker import types as t
    from pell.codegen.subprograms import json_value
    from pell.codegen.text_forms import TEXT_FORMS

    helpers: set[str] = set()
    for family in ("date", "timestamp"):
        text_mask = re.search(r"'([^']*)'\)$", TEXT_FORMS[family].oracle)
        json_mask = re.search(r"'([^']*)'\)\)$", json_value("p_x", t.Scalar(family), helpers))
        assert text_mask is not None and json_mask is not None
        assert json_mask.group(1) == text_mask.group(1).replace(" ", '"T"')
    assert helpers == set()
    # an interval is a string of its text, not TO_CHAR's `+000000001 02:00:00.500000000`
    interval = json_value("p_b - p_a", t.Scalar("interval"), helpers)
    assert interval == "pell_runtime.json_text(pell_interval_text(p_b - p_a))"
    assert helpers == {"pell_interval_text"}
    sql = _oracle(
        "module demo.late;\n\npub error Late { by: interval }\n\n"
        "pub fn f(a: timestamp, b: timestamp) -> Result<(), Late> {\n"
        "    return Err(Late { by: b - a });\n}\n"
    )
    assert "pell_runtime.json_text(pell_interval_text(p_b - p_a))" in sql
    assert "FUNCTION pell_interval_text(" in sql  # declared: the payload calls it


def test_text_becomes_a_number_the_same_in_every_session() -> None:
    """`s.into::<number>()` reads a period as the decimal mark in every session: TO_NUMBER(s)
    reads the session's NLS_NUMERIC_CHARACTERS, and "0.5" is ORA-01722 in a German one (review
    4, D4). The package's pell_text_number takes a number literal (SQL Language Reference,
    Numeric Literals) and gives TO_NUMBER the session's own decimal character in its place."""
    sql = _oracle(
        "module demo.read;\n\npub fn n(s: text) -> number {\n    return s.into::<number>();\n}\n"
        "pub fn i(s: text) -> int {\n    return s.into::<int>();\n}\n"
    )
    assert "RETURN pell_text_number(p_s);" in sql
    assert "RETURN ROUND(pell_text_number(p_s));" in sql
    assert "TO_NUMBER(p_s)" not in sql
    assert sql.count("FUNCTION pell_text_number(p_text IN VARCHAR2) RETURN NUMBER IS") == 1
    assert "RETURN TO_NUMBER(REPLACE(l_text, '.', SUBSTR(TO_CHAR(0.5, 'FM0D0'), 2, 1)));" in sql
    # the text it takes, in every session: what the regular expression matches (a POSIX
    # extended one, read the same by Python here)
    found = re.search(r"REGEXP_LIKE\(l_text, '([^']*)'\)", sql)
    assert found is not None
    literal = re.compile(found.group(1))
    for text in ("0.5", "-0.5", "+3", "5.", ".5", "1e-20", "-1.5E+3", "12345678901234567890"):
        assert literal.match(text), text
    for text in ("1,5", "1.000,5", "1 000", ".", "e5", "1e", "1.5.1", "0x1F", "1f", "--1", "abc"):
        assert not literal.match(text), text
    assert "pell_text_number" not in _oracle(SHOW)
