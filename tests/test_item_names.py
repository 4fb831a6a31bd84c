"""Item names that differ only in case: a clash only where their PL/SQL names would be one."""

from __future__ import annotations

from conftest import assert_oracle_accepts

from pell import compile_source


def codes(source: str) -> list[tuple[str, int]]:
    result = compile_source(source, "m.pell")
    return [(d.code, result.source.line_col(d.span.start)[0]) for d in result.diagnostics]


def test_a_fn_and_a_record_that_differ_in_case_are_two_plsql_names() -> None:
    # public Pell's 03_transfer: `fn transfer` returns `record Transfer` (the type t_transfer)
    source = (
        "module billing.charges;\n"
        "pub record Transfer { id: number, amount: number }\n"
        "pub fn transfer(id: number) -> Transfer { return Transfer { id: id, amount: 1 }; }\n"
    )
    result = compile_source(source, "m.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert_oracle_accepts(result.sql)
    assert "FUNCTION transfer(p_id IN NUMBER) RETURN t_transfer;" in result.sql
    pg = compile_source(source, "m.pell", "postgres")
    assert pg.sql is not None, [d.message for d in pg.diagnostics]


def test_names_that_would_be_one_plsql_name_still_clash() -> None:
    source = (
        "module m;\n"
        "pub record Order { id: number }\n"
        "pub fn t_order() -> number { return 1; }\n"  # the record's type is t_order
        "pub fn total() -> number { return 1; }\n"
        "pub fn Total() -> number { return 2; }\n"  # one PL/SQL function name
        "seq ids;\n"
        "pub fn IDS() -> number { return 3; }\n"
        "pub error NotFound { id: number }\n"
        "pub enum NOTFOUND { A, B }\n"  # kept apart: types share one namespace in Pell too
        "pub record total { id: number }\n"  # the same name twice, whatever the kinds
    )
    assert codes(source) == [
        ("duplicate-name", 3),
        ("duplicate-name", 5),
        ("duplicate-name", 7),
        ("duplicate-name", 9),
        ("duplicate-name", 10),
    ]
