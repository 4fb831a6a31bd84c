"""Small gaps against public Pell (issue 26): a module's own fn `p`, `xs(1)` on a list, a
sequence of another schema, `re::` with a text pattern and unknown escapes, `reverse(text)`,
and `bool` fields in the rows of a @pipelined fn."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.diagnostics import Diagnostic


def compiled(source: str, target: str = "23ai") -> str:
    result = compile_source(source, "m.pell", target)
    assert result.sql is not None, [d.message for d in result.diagnostics]
    if target != "postgres":
        assert_oracle_accepts(result.sql)
    return result.sql


def errors(source: str, target: str = "23ai") -> list[Diagnostic]:
    result = compile_source(source, "m.pell", target)
    assert result.sql is None
    return [d for d in result.diagnostics if d.is_error]


# -- a module's own fn `p`

OWN_P = """module m;
pub fn p() -> Result<Unit, Bad> {
  return Ok(());
}
pub error Bad;
pub fn run(n: number) -> Result<Unit, Bad> {
  p()?;
  print(n);
  return Ok(());
}
"""


def test_a_modules_own_fn_p_is_called_there_and_the_other_aliases_still_print() -> None:
    sql = compiled(OWN_P)
    assert "FUNCTION p RETURN" in sql or "PROCEDURE p" in sql
    assert "dbms_output.put_line(pell_number_text(p_n));" in sql
    body = sql[sql.index("run") :]
    assert "dbms_output.put_line" in body
    assert "p;" in body or "p()" in body


def test_p_prints_in_a_module_that_only_calls_another_modules_p() -> None:
    sql = compiled("module other;\npub fn show(n: number) { p(n); }\n")
    assert "dbms_output.put_line(pell_number_text(p_n));" in sql


def test_a_call_of_the_own_fn_p_is_checked_against_its_parameters() -> None:
    found = errors("module m;\npub fn p(s: text) { }\npub fn f() { p(1); }\n")
    assert [d.code for d in found] == ["type-mismatch"]


# -- `xs(1)` on a list


def test_a_list_called_like_a_fn_is_indexed_as_at() -> None:
    source = """module m;
pub fn f(xs: list<number>) -> number {
    let ys = [1, 2];
    return xs(1) / 2 + ys(2);
}
"""
    sql = compiled(source)
    assert "RETURN p_xs(1) / 2 + l_ys(2);" in sql
    assert "RETURN m.pell_list_at(p_xs, 1) / 2 + m.pell_list_at(l_ys, 2);" in compiled(source, "postgres")


def test_xs_call_gets_the_checks_of_at() -> None:
    source = "module m;\npub fn f(xs: list<number>) -> number { return xs(\"a\"); }\n"
    found = errors(source)
    assert [(d.code, d.span.start) for d in found] == [("type-mismatch", source.index('"a"'))]


def test_a_non_list_local_called_like_a_fn_is_still_an_unknown_fn() -> None:
    found = errors("module m;\npub fn f(n: number) -> number { return n(1); }\n")
    assert [d.code for d in found] == ["unknown-fn"]


def test_a_modules_fn_wins_over_a_list_of_the_same_name() -> None:
    sql = compiled(
        "module m;\npub fn xs(i: number) -> number { return i; }\n"
        "pub fn f(xs: list<number>) -> number { return xs(1); }\n"
    )
    assert "RETURN xs(1);" in sql


# -- `seq a::b;`

QUALIFIED_SEQ = """module m;
pub seq hr::emp_seq;
pub fn n() -> number { return hr::emp_seq.nextval; }
pub fn c() -> number { return hr::emp_seq.currval; }
"""


def test_a_sequence_of_another_schema_is_schema_dot_sequence() -> None:
    sql = compiled(QUALIFIED_SEQ)
    assert "RETURN hr.emp_seq.NEXTVAL;" in sql
    assert "RETURN hr.emp_seq.CURRVAL;" in sql
    pg = compiled(QUALIFIED_SEQ, "postgres")
    assert "RETURN nextval('hr.emp_seq');" in pg
    assert "RETURN currval('hr.emp_seq');" in pg


def test_a_retried_nextval_of_another_schemas_sequence_is_a_side_effect() -> None:
    source = QUALIFIED_SEQ + "@retry(3, on = [busy])\npub fn r() -> number { return hr::emp_seq.nextval; }\n"
    result = compile_source(source, "m.pell")
    assert result.sql is not None
    assert "side-effect-in-retry" in [d.code for d in result.diagnostics]


def test_a_qualified_sequence_has_only_nextval_and_currval() -> None:
    found = errors(QUALIFIED_SEQ.replace("emp_seq.currval", "emp_seq.lastval"))
    assert [d.code for d in found] == ["unknown-field"]
    assert "hr::emp_seq" in found[0].message


# -- `re::` with a text pattern, and unknown escapes


def test_a_text_pattern_is_a_regex_pattern() -> None:
    for fn, lowered in (
        ("matches", "REGEXP_LIKE(p_s, '\\d+', 'c')"),
        ("find", "REGEXP_SUBSTR(p_s, '\\d+', 1, 1, 'c')"),
        ("find_all", "pell_regexp_all(p_s, '\\d+')"),
        ("split", "pell_regexp_split(p_s, '\\d+')"),
    ):
        returns = {"matches": "bool", "find": "text"}.get(fn, "list<text>")
        source = f'module m;\npub fn f(s: text) -> {returns} {{ return re::{fn}(s, "\\d+"); }}\n'
        result = compile_source(source, "m.pell")
        assert result.sql is not None, [d.message for d in result.diagnostics]
        assert not result.diagnostics, fn  # no escape warning in a pattern
        assert lowered in result.sql


def test_a_text_pattern_is_checked_as_a_regex_literal() -> None:
    source = 'module m;\npub fn f(s: text) -> bool { return re::matches(s, "(\\d+"); }\n'
    found = errors(source)
    assert [(d.code, d.span.start) for d in found] == [("bad-regex", source.index("(\\d"))]
    source = 'module m;\npub fn f(s: text) -> list<text> { return re::find_all(s, "a*"); }\n'
    assert [d.code for d in errors(source)] == ["bad-regex"]


def test_a_text_pattern_with_a_known_escape_is_its_value_located_at_the_literal() -> None:
    # "\\\\" is one backslash: the pattern is `\\(`, an escaped backslash then an open group
    source = 'module m;\npub fn f(s: text) -> bool { return re::matches(s, "\\\\\\\\("); }\n'
    found = errors(source)
    literal = source.index('"\\\\')
    assert [(d.code, d.span.start, d.span.end) for d in found] == [
        ("bad-regex", literal, source.index(")", literal))
    ]


def test_a_pattern_that_is_no_literal_is_refused() -> None:
    source = "module m;\npub fn f(s: text, p: text) -> bool { return re::matches(s, p); }\n"
    found = errors(source)
    assert [d.code for d in found] == ["type-mismatch"]
    assert "text literal" in found[0].message


def test_an_unknown_escape_is_kept_as_written_with_a_warning() -> None:
    source = 'module m;\npub fn f() -> text { return "\\d\\w\\s\\b"; }\n'
    result = compile_source(source, "m.pell")
    assert result.sql is not None
    assert "RETURN '\\d\\w\\s\\b';" in result.sql
    assert [(d.code, d.is_error) for d in result.diagnostics] == [("invalid-escape", False)] * 4


def test_only_the_pattern_of_a_re_call_keeps_its_escapes_silently() -> None:
    source = 'module m;\npub fn f() -> bool { return re::matches("a\\qb", "\\d"); }\n'
    result = compile_source(source, "m.pell")
    assert [(d.code, d.span.start) for d in result.diagnostics] == [
        ("invalid-escape", source.index("\\q"))
    ]


# -- reverse(text)

REVERSE = "module m;\npub fn r(s: text) -> text { return reverse(s); }\n"


def test_reverse_is_a_character_loop_in_a_package_function() -> None:
    sql = compiled(REVERSE)
    assert "RETURN pell_reverse(p_s);" in sql
    assert "FOR i IN REVERSE 1 .. NVL(LENGTH(p_text), 0) LOOP" in sql
    assert "l_reversed := l_reversed || SUBSTR(p_text, i, 1);" in sql
    assert "REVERSE(p_s)" not in sql
    assert "pell_reverse" not in compiled("module m;\npub fn r(s: text) -> text { return s; }\n")


def test_reverse_of_a_bigtext_is_located_unsupported() -> None:
    # review 9: pell_reverse takes a VARCHAR2(32767): a longer CLOB raised VALUE_ERROR
    source = "module m;\npub fn f(b: bigtext, s: text) -> text {\n    return reverse(b) + reverse(s);\n}\n"
    result = compile_source(source, "m.pell")
    found = [(d.code, result.source.line_col(d.span.start)) for d in result.diagnostics]
    assert found == [("unsupported", (3, 20))]
    # PostgreSQL's reverse takes any text
    assert compile_source(source, "m.pell", "postgres").sql is not None


def test_reverse_is_postgres_reverse() -> None:
    assert "RETURN reverse(p_s);" in compiled(REVERSE, "postgres")


def test_reverse_on_postgres_reverses_characters(postgres_database: str) -> None:
    import psycopg

    result = compile_source(REVERSE, "m.pell", "postgres")
    assert result.sql is not None
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(result.sql)
        row = connection.execute("select m.r('añb€'), m.r(null)").fetchone()
    assert row == ("€bña", None)


# -- bool fields in piped rows

BOOL_ROWS = """module m;
pub record Src { id: number, active: bool }
pub record Out { id: number, ok: bool }
@pipelined
pub fn pipe(rows: cursor<Src>) -> stream<Out> {
  for s in rows { yield Out { id: s.id, ok: s.active }; }
}
"""


def test_a_bool_in_piped_rows_is_sql_boolean_on_23ai() -> None:
    sql = compiled(BOOL_ROWS)
    assert "  ok BOOLEAN\n);" in sql
    assert "PIPE ROW(m_out_row(l_s.id, l_s.active));" in sql


def test_a_bool_in_piped_rows_is_number_1_below_23ai() -> None:
    source = BOOL_ROWS.replace("active: bool", "active: number").replace(
        "ok: s.active }", "ok: s.active == 1 }"
    )
    for target in ("19c", "12.2"):
        sql = compiled(source, target)
        assert "  ok NUMBER(1)\n);" in sql
        assert (
            "PIPE ROW(m_out_row(l_s.id, CASE (l_s.active = 1) WHEN TRUE THEN 1 WHEN FALSE THEN 0 END));"
            in sql
        )


def test_a_cursor_row_with_a_bool_needs_23ai() -> None:
    found = errors(BOOL_ROWS, "19c")
    assert [d.code for d in found] == ["sql-boolean"]


def test_std_print_is_the_print_alias_even_where_the_module_has_its_own_p() -> None:
    source = (
        "module m;\npub fn p() { }\n"
        'pub fn f(n: number) { std::print("hello"); std::println(n); std::p(n); p(); }\n'
    )
    sql = compiled(source)
    assert "dbms_output.put_line('hello');" in sql
    assert sql.count("dbms_output.put_line(pell_number_text(p_n));") == 2
    assert "    p;\n" in sql  # the module's own `p`
    assert "RAISE NOTICE '%', 'hello';" in compiled(source, "postgres")


def test_a_value_call_as_a_statement_keeps_its_effect_and_a_pure_one_is_refused() -> None:
    # review 9: `g();` of a fn returning a value was written `g;`, which Oracle refuses
    # (PLS-00221): its value goes to a temporary; `s.upper();` or `xs(1);` only compute one
    sql = compiled(
        "module m;\npub fn g() -> number { return 1; }\n"
        "pub fn f() {\n    g();\n    dbms_random::value();\n}\n"
    )
    assert "    l_pell_number := g;\n    l_pell_number := dbms_random.value;\n" in sql
    found = errors(
        "module m;\npub fn f(xs: list<int>, s: text) {\n"
        "    var ys: list<int> = xs;\n"
        "    ys(1);\n    ys.at(1);\n    s.upper();\n    s.len();\n    ys.append(2);\n}\n"
    )
    assert [d.code for d in found] == ["not-a-statement"] * 4


def test_a_one_part_module_named_like_a_standard_function_is_a_pkg_package() -> None:
    # review 9: a package LOG is shadowed by STANDARD's LOG in `log.info(...)` (PLS-00225)
    sql = compiled('module log;\npub fn info(msg: text) { println("I {msg}"); }\n')
    assert "CREATE OR REPLACE PACKAGE pkg_log AS" in sql
    sql = compiled('module ledger;\npub fn info(msg: text) { println("I {msg}"); }\n')
    assert "CREATE OR REPLACE PACKAGE ledger AS" in sql


def test_a_scripts_own_p_is_called_there() -> None:
    result = compile_source(
        'let n = 1;\np(n);\nfn p(x: number) { dbms_output::put_line("mine"); }\n', "s.pell"
    )
    assert result.sql is not None and "\n  p(l_n);\n" in result.sql


def test_an_object_type_in_a_signature_is_located_on_postgres() -> None:
    # review 9: a type used only in a signature, a list or a record field crashed (exit 3)
    result = compile_source(
        "module pgt;\npub type Money { amount: number; }\npub fn f(ms: list<Money>) {\n}\n"
        "pub record R { m: Money }\npub fn g(m: Money) { }\n",
        "m.pell",
        "postgres",
    )
    assert result.sql is None
    assert [d.code for d in result.diagnostics if d.is_error] == ["unsupported"]


def test_a_sequence_name_oracle_would_not_read_is_reserved_name() -> None:
    # review 9: `select.s3.NEXTVAL`, `number.NEXTVAL`, and a schema that is the package itself
    result = compile_source(
        "module payroll;\npub seq select::s3;\npub seq number;\npub seq payroll::s4;\n"
        "pub seq hr::ids;\n",
        "m.pell",
    )
    found = [(d.code, result.source.line_col(d.span.start)[0]) for d in result.diagnostics]
    assert found == [("reserved-name", 2), ("reserved-name", 3), ("reserved-name", 4)]


def test_standard_function_names_are_kept_off_packages_and_sequence_schemas() -> None:
    # review 10: `seq log::s` and `@package("log")` met STANDARD's LOG (PLS-00225)
    result = compile_source("module m;\npub seq log::s;\n", "m.pell")
    assert [d.code for d in result.diagnostics] == ["reserved-name"]
    sql = compiled('@package("log")\nmodule m;\npub fn f() -> number { return 1; }\n')
    assert "CREATE OR REPLACE PACKAGE pkg_log AS" in sql


def test_a_sequence_whose_schema_is_another_modules_package_is_reserved_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 9: with package HR in the schema, `hr.emp_seq` in another package resolves `hr`
    # to that package first (PLS-00302), as it does inside HR itself
    from pell.checker.retry_facts import ModuleFacts
    from pell.cli import main

    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "hr.pell").write_text("module hr;\npub fn ids() -> number { return 1; }\n")
    app = (
        "module app;\nimport hr;\npub seq hr::emp_seq;\npub seq ledger::log_seq;\n"
        "pub fn next() -> number {\n"
        "    return hr::emp_seq.nextval + ledger::log_seq.nextval + hr::ids();\n}\n"
    )
    (tmp_path / "app.pell").write_text(app)
    assert main(["check", "--no-verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "app.pell:3:1: error: sequence `hr::emp_seq`: the package `hr` of module `hr`" in err
    assert err.count("[reserved-name]") == 1  # `ledger` is no package of the project
    (tmp_path / "hr.pell").rename(tmp_path / "people.pell")
    (tmp_path / "people.pell").write_text("module people;\npub fn ids() -> number { return 1; }\n")
    (tmp_path / "app.pell").write_text(app.replace("import hr;", "import people;").replace(
        "hr::ids()", "people::ids()"
    ))
    assert main(["check", "--no-verify", str(tmp_path)]) == 0, capsys.readouterr().err
    # the facts a build keeps for the next one hold the sequences
    facts = compile_source(app, "app.pell").retry_facts
    assert facts is not None and [n for n, _ in facts.schema_sequences] == [
        "hr::emp_seq",
        "ledger::log_seq",
    ]
    assert ModuleFacts.from_json(facts.to_json()) == facts


_AGGREGATE = (
    "pub aggregate {name}(x: number) -> number {{\n    state {{ n: number = 0; }}\n"
    "    step(v: number) {{ self.n = self.n + 1; }}\n"
    "    merge(o: Self) {{ self.n = self.n + o.n; }}\n    finish() -> number {{ return self.n; }}\n}}\n"
)


def test_a_sequence_whose_schema_is_a_fn_or_aggregate_of_its_module_is_reserved_name() -> None:
    # review 13: inside package `shop`, `hr.emp_seq.NEXTVAL` names its FUNCTION hr (PLS-00225),
    # and an aggregate `hr` is the schema's function hr, found before the schema `hr`
    def codes(items: str) -> list[tuple[str, int]]:
        result = compile_source(f"module shop;\npub seq hr::emp_seq;\n{items}", "shop.pell")
        return [(d.code, result.source.line_col(d.span.start)[0]) for d in result.diagnostics]

    use = "pub fn next_id() -> number { return hr::emp_seq.nextval; }\n"
    assert codes("pub fn hr() -> number { return 1; }\n" + use) == [("reserved-name", 2)]
    assert codes("fn HR() -> number { return 1; }\n" + use) == [("reserved-name", 2)]
    assert codes(_AGGREGATE.format(name="hr") + use) == [("reserved-name", 2)]
    # negative cases: a fn of another name, a record (the type t_hr), a local `hr`
    assert codes("pub fn hrs() -> number { return 1; }\n" + use) == []
    assert codes("record hr { id: number }\n" + use) == []
    local = "pub fn next_id() -> number {\n    let hr: number = 1;\n    return hr + hr::emp_seq.nextval;\n}\n"
    assert codes(local) == []


def test_a_sequence_whose_schema_is_another_modules_aggregate_is_reserved_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 13: with the aggregate function HR in the schema, `hr.emp_seq` in package B finds
    # the function before the schema `hr`; as a package `hr` was refused already
    from pell.cli import main

    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "hrx.pell").write_text("module hrx;\n" + _AGGREGATE.format(name="hr"))
    user = "module {name};\npub seq hr::emp_seq;\npub fn f() -> number {{ return hr::emp_seq.nextval; }}\n"
    for name in ("a", "z"):  # before and after the aggregate's module
        (tmp_path / f"{name}.pell").write_text(user.format(name=name))
    assert main(["check", "--no-verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    for name in ("a", "z"):
        assert (
            f"{name}.pell:2:1: error: sequence `hr::emp_seq`: the schema-level object `hr` (an "
            "aggregate's function or a type) of module `hrx` is in the same schema"
        ) in err
    assert err.count("[reserved-name]") == 2
    # negative case: the aggregate in another schema does not capture the name in this one
    (tmp_path / "hrx.pell").write_text("module other.hrx;\n" + _AGGREGATE.format(name="hr"))
    assert main(["check", "--no-verify", str(tmp_path)]) == 0, capsys.readouterr().err
    # nor does a fn `hr` of another module: a member of that module's package
    (tmp_path / "hrx.pell").write_text("module hrx;\npub fn hr() -> number { return 1; }\n")
    assert main(["check", "--no-verify", str(tmp_path)]) == 0, capsys.readouterr().err


def test_a_text_pattern_keeps_its_escaped_braces() -> None:
    # review 9: `"^a\{2\}$"` became the quantifier `^a{2}$` (matching "aa"); public Pell keeps
    # `\{` as written, the brace-literal pattern a `/^a\{2\}$/` literal is. Elsewhere `\{` is
    # a brace, as before.
    source = (
        'module m;\npub fn f(s: text) -> bool { return re::matches(s, "^a\\{2\\}$"); }\n'
        "pub fn g(s: text) -> bool { return re::matches(s, /^a\\{2\\}$/); }\n"
        'pub fn h() -> text { return "x\\{y\\}"; }\n'
        'pub fn k(s: text) -> text { return re::replace_all(s, "\\{", "\\{"); }\n'
    )
    result = compile_source(source, "m.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert not result.diagnostics
    assert result.sql.count("REGEXP_LIKE(p_s, '^a\\{2\\}$', 'c')") == 2
    assert "RETURN 'x{y}';" in result.sql
    assert "REGEXP_REPLACE(p_s, '\\{', '{'" in result.sql  # the replacement is no pattern
