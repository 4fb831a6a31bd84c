"""`"{xs}"` for a list of scalars (issue 26, point 10; public Pell's form): `[a, b]`, each
element in its text form, `NULL` for a NULL element, `[]` for none; the same on both targets
(pell.codegen.text_forms)."""

from __future__ import annotations

import psycopg
from conftest import assert_oracle_accepts

from pell import compile_source

SOURCE = """module listed;

pub fn show(at: date, gap: number) -> text {
    let xs: list<number> = [1, 2.5, -0.5];
    xs.append(None);
    let ts: list<text> = ["a", "b c"];
    let ds: list<date> = [at];
    let bs: list<bool> = [true, false];
    let none: list<int> = [];
    p(xs);
    return "{xs} {ts} {ds} {bs} {none}";
}
"""

EXPECTED = "[1, 2.5, -0.5, NULL] [a, b c] [2024-05-01 13:45:00] [true, false] []"


def test_oracle_writes_a_list_through_one_function_per_element_type() -> None:
    result = compile_source(SOURCE, "listed.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    sql = result.sql
    assert_oracle_accepts(sql)
    for element in ("number", "text", "date", "bool", "int"):
        assert sql.count(f"FUNCTION pell_list_text_{element}(p_list IN t_{element}_list)") == 1
    assert "NVL(pell_number_text(p_list(l_at)), 'NULL')" in sql  # the number's own text form
    assert "dbms_output.put_line(pell_list_text_number(l_xs));" in sql
    assert (
        "RETURN pell_list_text_number(l_xs) || ' ' || pell_list_text_text(l_ts) || ' ' || "
        "pell_list_text_date(l_ds) || ' ' || pell_list_text_bool(l_bs) || ' ' || "
        "pell_list_text_int(l_none);"
    ) in sql
    # each function after the list type it takes, and after pell_number_text it calls
    assert sql.index("TYPE t_number_list") < sql.index("FUNCTION pell_number_text(") < sql.index(
        "FUNCTION pell_list_text_number("
    )


def test_a_script_declares_the_list_function_too() -> None:
    result = compile_source('let xs: list<number> = [1, 2];\np("{xs}");\n', "s.pell")
    assert result.sql is not None
    assert_oracle_accepts(result.sql)
    assert "  FUNCTION pell_list_text_number(p_list IN t_number_list) RETURN VARCHAR2 IS" in (
        result.sql
    )


def test_a_list_of_records_or_of_lists_stays_an_error() -> None:
    source = (
        "module m;\n\nrecord R { n: number }\n\npub fn f(rs: list<R>) -> text {\n"
        '    return "{rs}";\n}\n'
    )
    result = compile_source(source, "m.pell")
    assert [(d.code, d.span.start) for d in result.diagnostics] == [
        ("type-mismatch", source.index("rs}"))
    ]


def test_postgres_writes_the_same_text(postgres_database: str) -> None:
    result = compile_source(SOURCE, "listed.pell", "postgres")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(result.sql)
        row = connection.execute(
            "select listed.show(timestamp '2024-05-01 13:45:00', 1)"
        ).fetchone()
    assert row == (EXPECTED,)
