"""utPLSQL suites (pell.checker.ut): `@suite`/`@test` lower to the annotated package spec
utPLSQL reads, `ut::expect(...)` and its matchers to utPLSQL's own calls, and misuse is a
located error."""

from __future__ import annotations

from conftest import assert_oracle_accepts

from pell import compile_source

SUITE = """@suite("orders (happy path)", rollback = "manual")
module orders_test;

import ut;

pub record Row { id: number }

@beforeall
pub fn seed() {
    sql! { insert into orders (id) values (1) };
}

pub fn open_session() {
    sql! { insert into sessions (id) values (1) };
}

@test("counts orders")
@beforetest("open_session")
pub fn t_count() {
    let n: number = sql! { select count(*) from orders }.one();
    ut::expect(n, "rows").to_equal(1);
    ut::expect(n).not_to_be_null();
}

fn helper() -> number {
    return 1;
}
"""


def _compiled(source: str) -> str:
    result = compile_source(source, "m.pell")
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    assert result.sql is not None
    assert_oracle_accepts(result.sql)
    return result.sql


def _errors(source: str) -> list[tuple[str, int, str]]:
    result = compile_source(source, "m.pell")
    return [
        (d.code, result.source.line_col(d.span.start)[0], d.message)
        for d in result.diagnostics
        if d.is_error
    ]


def _spec(sql: str) -> list[str]:
    spec = sql.split("CREATE OR REPLACE PACKAGE ", 1)[1].split("\n/\n", 1)[0]
    return spec.splitlines()


def test_suite_annotations_open_the_spec_and_an_empty_line_ends_them() -> None:
    # annotations.md, "Package level annotations": separated by an empty line from the
    # procedure annotations, best at the very top; the text between the brackets, unquoted
    lines = _spec(_compiled(SUITE))
    assert lines[0] == "orders_test AS"
    assert lines[1:4] == ["  --%suite(orders (happy path))", "  --%rollback(manual)", ""]


def test_procedure_annotations_stand_directly_before_their_procedure() -> None:
    # annotations.md, "Procedure level annotations": no empty line or comment in between
    lines = _spec(_compiled(SUITE))
    at = lines.index("  PROCEDURE t_count;")
    assert lines[at - 2 : at] == ["  --%test(counts orders)", "  --%beforetest(open_session)"]
    at = lines.index("  PROCEDURE seed;")
    assert lines[at - 1] == "  --%beforeall"
    # a fn with no suite annotation gets none, and the body has none
    at = lines.index("  PROCEDURE open_session;")
    assert lines[at - 1] == "  PROCEDURE seed;"
    body = _compiled(SUITE).split("CREATE OR REPLACE PACKAGE BODY", 1)[1]
    assert "--%" not in body


def test_a_module_without_suite_has_no_annotations() -> None:
    sql = _compiled("module plain;\n\npub fn f() {\n}\n")
    assert "--%" not in sql


def test_expectations_lower_to_utplsql_calls() -> None:
    sql = _compiled(SUITE)
    assert "    ut.expect(l_n, 'rows').to_equal(1);\n" in sql
    assert "    ut.expect(l_n).not_to_be_null();\n" in sql


def test_ut_is_a_shipped_stub() -> None:
    sql = _compiled('module runner;\n\npub fn run_all() {\n    ut::run("orders_test");\n}\n')
    assert "ut.run('orders_test');" in sql


def test_misuse_of_test_fns_is_located() -> None:
    source = """@suite
module m;

@test
pub fn t_args(x: number) {
}

@test
pub fn t_value() -> number {
    return 1;
}

@test
fn t_hidden() {
}
"""
    errors = _errors(source)
    assert [(code, line) for code, line, _ in errors] == [
        ("annotation-misuse", 5),
        ("annotation-misuse", 9),
        ("annotation-misuse", 14),
    ]
    assert "takes parameters" in errors[0][2]
    assert "returns a value" in errors[1][2]
    assert "not `pub`" in errors[2][2]


def test_a_test_outside_a_suite_is_an_error() -> None:
    errors = _errors("module m;\n\n@test\npub fn t() {\n}\n")
    assert [(code, line) for code, line, _ in errors] == [("annotation-misuse", 3)]


def test_beforetest_names_a_procedure_of_the_module() -> None:
    source = """@suite
module m;

@test
@beforetest("setup", "missing")
pub fn t() {
}

pub fn setup(x: number) {
}
"""
    errors = _errors(source)
    assert [(code, line) for code, line, _ in errors] == [
        ("annotation-argument", 5),
        ("annotation-argument", 5),
    ]


def test_matchers_take_the_types_utplsql_declares_them_for() -> None:
    source = """@suite
module m;

@test
pub fn t() {
    ut::expect(1).to_be_like("1%");
    ut::expect("a").to_be_true();
    ut::expect(1).to_equal("1");
    ut::expect(1).to_be_greater_than(0);
    ut::expect(sysdate).to_be_less_than(sysdate);
}
"""
    errors = _errors(source)
    assert [(code, line) for code, line, _ in errors] == [
        ("type-mismatch", 6),
        ("type-mismatch", 7),
        ("type-mismatch", 8),
    ]


def test_an_expectation_is_a_statement_and_needs_a_matcher() -> None:
    source = """@suite
module m;

@test
pub fn t() {
    ut::expect(1);
    ut::expect(1).to_be_nul();
}
"""
    errors = _errors(source)
    assert [(code, line) for code, line, _ in errors] == [
        ("not-a-statement", 6),
        ("unknown-fn", 7),
    ]
    assert "to_be_null" in errors[1][2]


def test_a_suite_fn_that_commits_under_automatic_rollback_is_a_warning() -> None:
    # review 9: utPLSQL reports "Unable to perform automatic rollback" for a test that
    # commits; `rollback = "manual"` is the opt-out
    template = (
        '@suite("money"{manual})\nmodule money_test;\n'
        "fn close_books() {{ sql! {{ commit }}; }}\n"
        '@test("adds")\npub fn t_add() {{\n    sql! {{ commit }};\n}}\n'
        '@test("closes")\n@beforetest("setup")\npub fn t_close() {{\n    close_books();\n}}\n'
        "pub fn setup() {{ sql! {{ rollback }}; }}\n"
        "pub fn helper() {{ sql! {{ commit }}; }}\n"
    )
    auto = compile_source(template.format(manual=""), "money_test.pell")
    assert auto.sql is not None
    found = [
        (d.code, auto.source.line_col(d.span.start)[0], d.is_error) for d in auto.diagnostics
    ]
    assert found == [
        ("suite-commits", 6, False),
        ("suite-commits", 11, False),
        ("suite-commits", 13, False),
    ]
    assert "`t_close` calls `close_books`, which commits" in auto.diagnostics[1].message
    manual = compile_source(template.format(manual=', rollback = "manual"'), "money_test.pell")
    assert [d.code for d in manual.diagnostics] == []
