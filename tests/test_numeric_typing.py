"""Numbers that cannot lose value (issue 25, item 1): what the generated text declares, and on
a real PostgreSQL server, what a fractional total and a product past 32 bits come to.

A local without a type that starts as a whole number is an `int` only while every value it is
given is an `int`; `int * int` is a `number`, computed as one; a `number` into an `int` is an
error whose hint is `.into::<int>()` (README, "Numbers"). tests/cases/numeric_typing.pell and
tests/cases/errors/number_into_int.pell show the whole generated text and every error.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source

NUMBERS = """
module numbers;

pub fn acc(a: number) -> number {
    var s = 0;
    s = s + a;
    return s;
}

pub fn square() -> number {
    let x = 100000;
    let y = x * x;
    return y;
}

pub fn area(w: int, h: int) -> number {
    return w * h;
}

pub fn counted(n: int) -> int {
    var i = 0;
    while i < n {
        i = i + 1;
    }
    return i;
}

fn halve(n: number, out half: number) {
    half = n / 2;
}

pub fn halves(n: number) -> number {
    var h = 0;
    halve(n, h);
    return h;
}

pub fn rounded(a: number) -> int {
    return a.into::<int>();
}

pub fn ratio(a: int, b: int) -> number {
    return a / b;
}

pub fn ratio_text(a: int, b: int) -> text {
    return "r={a / b} {7 / 2}";
}
"""


def _sql(source: str, target: str = "23ai") -> str:
    result = compile_source(source, "numbers.pell", target)
    assert result.sql is not None, [d.message for d in result.diagnostics]
    return result.sql


def _errors(source: str) -> list[Any]:
    result = compile_source(source, "m.pell")
    assert result.sql is None
    return [d for d in result.diagnostics if d.is_error]


def test_a_local_given_a_number_is_declared_number() -> None:
    sql = _sql(NUMBERS)
    assert "l_s NUMBER;" in sql
    assert "l_s := l_s + p_a;" in sql
    assert "l_h NUMBER;" in sql  # written back by an `out number` parameter


def test_a_local_given_only_ints_stays_pls_integer() -> None:
    sql = _sql(NUMBERS)
    assert "l_i PLS_INTEGER;" in sql
    assert "l_x PLS_INTEGER;" in sql


def test_a_local_given_a_query_value_is_declared_number() -> None:
    source = (
        "module q;\npub fn avg() -> number {\n    var a = 0;\n"
        "    a = sql! { select avg(price) from items }.one();\n    return a;\n}\n"
    )
    assert "l_a NUMBER;" in _sql(source)


def test_a_product_of_two_ints_is_computed_as_a_number() -> None:
    # PL/SQL Language Reference, "PLS_INTEGER and BINARY_INTEGER Data Types": a calculation
    # with two PLS_INTEGER values past the range raises ORA-01426 even into a NUMBER
    sql = _sql(NUMBERS)
    assert "l_y := CAST(l_x AS NUMBER) * l_x;" in sql
    assert "RETURN CAST(p_w AS NUMBER) * p_h;" in sql
    assert "l_y NUMBER;" in sql


def test_into_int_rounds_explicitly() -> None:
    assert "RETURN ROUND(p_a);" in _sql(NUMBERS)


def test_a_list_literal_with_a_fraction_holds_numbers() -> None:
    source = "module l;\npub fn n() -> number {\n    let xs = [1, 2.5];\n    return xs.at(2);\n}\n"
    assert "l_xs t_number_list;" in _sql(source)


def test_a_number_into_an_int_is_an_error_with_the_conversion() -> None:
    source = "module m;\npub fn f(a: number) -> int {\n    var j: int = 0;\n    j = a;\n    return j;\n}\n"
    [error] = _errors(source)
    assert error.code == "type-mismatch"
    at = source.index("a;")
    assert (error.span.start, error.span.end) == (at, at + 1)
    assert any("`.into::<int>()`" in hint for hint in error.hints)


def test_an_out_number_into_an_int_is_an_error() -> None:
    source = (
        "module m;\nfn g(out n: number) {\n    n = 2.5;\n}\n"
        "pub fn f() -> int {\n    var j: int = 0;\n    g(j);\n    return j;\n}\n"
    )
    [error] = _errors(source)
    assert error.code == "type-mismatch"
    assert "writes a `number` back into an `int`" in error.message


# -- a list literal of ints given a list of numbers; a `number` range bound

LISTS = """
module lists;

fn total(xs: list<number>) -> number {
    var s: number = 0;
    for x in xs {
        s = s + x;
    }
    return s;
}

fn grow(inout xs: list<number>) {
    xs.append(0.5);
}

pub fn passed() -> number {
    let xs = [1, 2];
    return total(xs);
}

pub fn reassigned(ys: list<number>) -> number {
    var xs = [1];
    xs = ys;
    return total(xs);
}

pub fn grown() -> number {
    var xs = [1, 2];
    grow(xs);
    return total(xs);
}

pub fn appended() -> number {
    var xs = [1, 2];
    xs.append(2.5);
    return total(xs);
}

pub fn relisted(n: number) -> number {
    var xs = [1];
    xs = [2, n];
    return total(xs);
}

pub fn counted() -> int {
    var xs = [1, 2];
    xs = [3, 4];
    xs.append(5);
    return xs.at(3);
}

pub fn priced() -> number {
    var s: number = 0;
    for r in sql! { select price from items } {
        let xs = [1, r.price];
        s = s + total(xs);
    }
    return s;
}
"""

WIDENED = ("passed", "reassigned", "grown", "appended", "relisted", "priced")


def _body(sql: str, name: str) -> str:
    start = sql.index(f"  FUNCTION {name}", sql.index("PACKAGE BODY"))
    return sql[start : sql.index(f"  END {name};", start)]


@pytest.mark.parametrize("fn", WIDENED)
def test_a_list_of_ints_given_numbers_is_a_list_of_numbers(fn: str) -> None:
    # before: `argument xs of total is list<number>, not list<int>` (and before cfb2de3, a
    # t_int_list passed for a t_number_list, which Oracle refuses: PLS-00306)
    sql = _sql(LISTS)
    assert_oracle_accepts(sql)
    assert "    l_xs t_number_list;\n" in _body(sql, fn)


def test_a_list_of_ints_given_only_ints_stays_one() -> None:
    assert "    l_xs t_int_list;\n" in _body(_sql(LISTS), "counted")


def test_a_list_declared_of_ints_is_an_error_with_the_declaration_to_change() -> None:
    source = (
        "module m;\nfn total(xs: list<number>) -> number {\n    return xs.at(1);\n}\n"
        "pub fn f() -> number {\n    let xs: list<int> = [1, 2];\n    return total(xs);\n}\n"
    )
    [error] = _errors(source)
    assert error.code == "type-mismatch"
    at = source.index("xs);")
    assert (error.span.start, error.span.end) == (at, at + 2)
    assert error.hints == (
        "`list<int>` and `list<number>` are two PL/SQL collection types, and neither converts "
        "to the other: declare `xs` a `list<number>`",
    )


RANGES = """
module ranges;

pub fn up_to(n: number) {
    for i in 1..n {
        p("{i}");
    }
}
"""


def test_a_number_range_bound_is_an_error_with_the_conversion() -> None:
    # PL/SQL rounds a FOR loop's bounds to integers (PL/SQL Language Reference, "FOR LOOP
    # Statement"): with n 2.4, `1 .. p_n - 1` would run to ROUND(1.4) = 1, skipping i = 2
    [error] = _errors(RANGES)
    assert error.code == "type-mismatch"
    at = RANGES.index("n {")
    assert (error.span.start, error.span.end) == (at, at + 1)
    assert any("`n.into::<int>()`" in hint for hint in error.hints)


def test_an_int_range_bound_is_no_error() -> None:
    fixed = RANGES.replace("1..n", "1..n.into::<int>()")
    assert "FOR l_i IN 1 .. ROUND(p_n) - 1 LOOP" in _sql(fixed)
    assert "FOR l_i IN 1 .. p_n - 1 LOOP" in _sql(RANGES.replace("n: number", "n: int"))


def test_a_local_given_a_number_is_no_range_bound() -> None:
    source = (
        "module m;\npub fn f(a: number) {\n    var n = 0;\n    n = n + a;\n"
        '    for i in 0..n {\n        p("{i}");\n    }\n}\n'
    )
    [error] = _errors(source)
    assert error.code == "type-mismatch"
    assert error.span.start == source.index("n {")


# -- on a real server

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def connection(postgres_database: str) -> Iterator[Any]:
    with psycopg.connect(postgres_database, autocommit=True) as opened:
        opened.execute(_sql(NUMBERS, "postgres"))
        opened.execute(_sql(LISTS, "postgres"))
        yield opened


def _value(connection: Any, query: str) -> Any:
    row = connection.execute(query).fetchone()
    assert row is not None
    return row[0]


def test_a_fractional_total_keeps_its_fraction_on_the_server(connection: Any) -> None:
    assert _value(connection, "select numbers.acc(2.5)") == Decimal("2.5")  # not 3


def test_a_product_past_32_bits_is_exact_on_the_server(connection: Any) -> None:
    # not "integer out of range"
    assert _value(connection, "select numbers.square()") == 10_000_000_000
    assert _value(connection, "select numbers.area(100000, 100000)") == 10_000_000_000


def test_a_number_written_back_keeps_its_fraction_on_the_server(connection: Any) -> None:
    assert _value(connection, "select numbers.halves(5)") == Decimal("2.5")  # not 3


def test_into_int_rounds_half_away_from_zero_on_the_server(connection: Any) -> None:
    assert _value(connection, "select numbers.rounded(2.5)") == 3
    assert _value(connection, "select numbers.rounded(-2.5)") == -3


def test_an_int_divided_by_an_int_keeps_its_fraction_on_the_server(connection: Any) -> None:
    # `/` is a `number` (README, "Numbers"); PostgreSQL's integer / integer truncates
    assert _value(connection, "select numbers.ratio(7, 2)") == Decimal("3.5")  # not 3
    assert _value(connection, "select numbers.ratio(-7, 2)") == Decimal("-3.5")  # not -3
    assert _value(connection, "select numbers.ratio_text(7, 2)") == "r=3.5 3.5"


def test_an_int_counter_still_counts_on_the_server(connection: Any) -> None:
    assert _value(connection, "select numbers.counted(5)") == 5


def test_a_list_of_ints_given_numbers_keeps_their_fractions_on_the_server(
    connection: Any,
) -> None:
    assert _value(connection, "select lists.appended()") == Decimal("5.5")  # 1 + 2 + 2.5
    assert _value(connection, "select lists.grown()") == Decimal("3.5")  # 1 + 2 + 0.5
    assert _value(connection, "select lists.reassigned(array[0.25, 0.5])") == Decimal("0.75")
    assert _value(connection, "select lists.relisted(0.5)") == Decimal("2.5")  # 2 + 0.5
    assert _value(connection, "select lists.counted()") == 5
