"""Package names: `@package("name")` chooses the PL/SQL package a module lowers to (for its
own output and every module that calls it), and a module whose package would have the name of
a table or view its SQL uses gets a warning (one schema holds one object of a name)."""

from __future__ import annotations

from pathlib import Path

from conftest import assert_oracle_accepts

from pell import compile_source
from pell.cli import main
from pell.diagnostics import render_all

ORDERS = """module shop.orders;

pub fn count_open() -> number {
    let n: number = sql! { select count(*) from orders where status = 'open' }.one();
    return n;
}
"""


def _rendered(text: str) -> tuple[str | None, str]:
    result = compile_source(text, "orders.pell")
    return result.sql, render_all(result.diagnostics, result.source)


def test_a_package_named_like_a_table_its_sql_uses_is_a_warning_at_the_table() -> None:
    sql, rendered = _rendered(ORDERS)
    assert sql is not None  # a warning: the module still compiles
    assert rendered == (
        "orders.pell:4:49: warning: module `shop.orders` becomes the package `orders`, the name "
        "of the table or view `orders` its SQL uses: one schema cannot hold both (ORA-00955)  "
        "[package-clash]\n"
    )
    # each way SQL names a table
    for statement in (
        "update orders set status = 'x'",
        "insert into orders (id) values (1)",
        "delete from shop.orders",
        "merge into orders o using dual on (1 = 0) when not matched then insert (id) values (1)",
        "select 1 from customers c, orders o where c.id = o.customer_id",
        "select 1 from customers c join orders o on c.id = o.customer_id",
    ):
        text = f"module shop.orders;\n\npub fn f() {{\n    sql! {{ {statement} }};\n}}\n"
        assert "[package-clash]" in _rendered(text)[1], statement
    # another schema's table, or a name that only contains the package's, is no clash
    for statement in ("delete from archive.orders", "delete from orders_log"):
        text = f"module shop.orders;\n\npub fn f() {{\n    sql! {{ {statement} }};\n}}\n"
        assert "[package-clash]" not in _rendered(text)[1], statement


def test_package_chooses_the_name_for_the_module_and_its_callers(tmp_path: Path) -> None:
    src = tmp_path / "db"
    src.mkdir()
    (src / "orders.pell").write_text('@package("orders_api")\n' + ORDERS, "utf-8")
    (src / "report.pell").write_text(
        "module shop.report;\n\nimport shop::orders;\n\n"
        "pub fn open_orders() -> number {\n    return orders::count_open();\n}\n",
        "utf-8",
    )
    out = tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    orders = (out / "orders.sql").read_text("utf-8")
    report = (out / "report.sql").read_text("utf-8")
    assert_oracle_accepts(orders)
    assert_oracle_accepts(report)
    assert "CREATE OR REPLACE PACKAGE shop.orders_api AS" in orders
    assert "END orders_api;" in orders
    assert "RETURN shop.orders_api.count_open;" in report
    _, rendered = _rendered('@package("orders_api")\n' + ORDERS)
    assert rendered == ""  # no clash left


def test_a_bad_package_name_is_an_error_at_the_annotation() -> None:
    cases = {
        '@package("order-api")': "`order-api` is not a plain Oracle name",
        '@package("select")': "`select` is an Oracle reserved word",
        "@package(orders_api)": '@package takes one text, the package name',
        '@package("a", "b")': '@package takes one text, the package name',
    }
    for annotation, message in cases.items():
        sql, rendered = _rendered(f"{annotation}\n{ORDERS}")
        assert sql is None
        assert rendered.startswith(f"orders.pell:1:1: error: {message}"), rendered
        assert "[annotation-argument]" in rendered
    sql, rendered = _rendered('@stub\n@package("x")\nmodule dbms_x;\n\npub fn f();\n')
    assert "a stub's package is the Oracle package of its module name" in rendered


def test_the_from_of_extract_and_trim_names_a_value_not_a_table() -> None:
    source = """module hired;

pub fn year_of() -> number {
    return sql! { select extract(year from hired) + length(trim(' ' from hired)) from people }.one();
}

pub fn from_table() -> number {
    return sql! { select count(*) from (select extract(year from d) y from hired) }.one();
}
"""
    result = compile_source(source, "hired.pell")
    clashes = [d for d in result.diagnostics if d.code == "package-clash"]
    # only the real table, in the second fn's subquery
    assert [result.source.line_col(d.span.start)[0] for d in clashes] == [8]
