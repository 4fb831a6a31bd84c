"""`rowtype<table>` (issue 26): `table%ROWTYPE`, its fields the table's columns (language.md,
"Table rows")."""

from __future__ import annotations

from conftest import assert_oracle_accepts

from pell import compile_source

SOURCE = """module rows;

pub fn owner(acct: rowtype<accounts>) -> text {
    let name = acct.owner_name;
    return name;
}

pub fn fetch_one(id: number) -> rowtype<accounts> {
    let r: rowtype<accounts> = sql! { select * from accounts where id = :id }.one();
    return r;
}
"""


def test_a_table_row_is_its_rowtype_and_a_field_its_column_type() -> None:
    result = compile_source(SOURCE, "rows.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert_oracle_accepts(result.sql)
    assert "  FUNCTION owner(p_acct IN accounts%ROWTYPE) RETURN VARCHAR2;" in result.sql
    assert "    l_name accounts.owner_name%TYPE;" in result.sql
    assert "    l_name := p_acct.owner_name;" in result.sql
    assert "    select * INTO l_r from accounts where id = p_id;" in result.sql


def test_a_table_row_on_postgres_is_the_tables_composite_type() -> None:
    # each table has a composite type of its name (tests/test_postgres.py runs one)
    result = compile_source(SOURCE, "rows.pell", "postgres")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert " accounts" in result.sql and "%ROWTYPE" not in result.sql


def test_a_reserved_column_name_is_refused() -> None:
    source = SOURCE.replace("acct.owner_name", "acct.level")
    result = compile_source(source, "rows.pell")
    assert [(d.code, d.span.start) for d in result.diagnostics] == [
        ("reserved-name", source.index("level"))
    ]


def test_a_table_named_like_a_fn_of_the_module_is_refused() -> None:
    # review 9: inside the package `orders` is the fn, so `orders%ROWTYPE` is PLS-00310
    source = (
        "module shop;\npub fn orders() -> number {\n"
        "    return sql! { select count(*) from orders }.one();\n}\n"
        "pub fn latest() -> rowtype<orders> {\n"
        "    let r: rowtype<ORDERS> = sql! { select * from orders where rownum = 1 }.one();\n"
        "    return r;\n}\n"
    )
    result = compile_source(source, "shop.pell")
    found = [(d.code, result.source.line_col(d.span.start)) for d in result.diagnostics]
    assert found == [("type-mismatch", (5, 28)), ("type-mismatch", (6, 20))]
    assert "(PLS-00310)" in result.diagnostics[0].message
    # a fn of another name leaves the table in reach; a script's own fn captures it too
    renamed = compile_source(source.replace("fn orders()", "fn order_count()"), "shop.pell")
    assert renamed.sql is not None, [d.message for d in renamed.diagnostics]
    script = compile_source(
        "fn orders() -> number { return 1; }\n"
        "fn latest() { let r: rowtype<orders> = sql! { select * from orders }.first(); }\n",
        "s.pell",
    )
    assert [d.code for d in script.diagnostics if d.is_error] == ["type-mismatch"]
