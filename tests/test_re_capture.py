"""`re::capture::<T>(text, /pattern/)` (pell.checker.regex): a record filled field by field with
REGEXP_SUBSTR's subexpression of each group; groups named `(?<field>...)` pair with fields by
name, unnamed ones in order; a pairing that fails is `capture-fields` at the pattern."""

from __future__ import annotations

import pytest
from conftest import assert_oracle_accepts

from pell import ast, compile_source
from pell.checker.regex import capture_groups, pattern_text
from pell.syntax import parse

RECORDS = """module m;

pub record Phone { area: text, line: text }
pub record Three { a: text, b: text, c: text }
"""


def _compiled(body: str) -> str:
    result = compile_source(RECORDS + body, "m.pell")
    assert not [d for d in result.diagnostics if d.is_error], result.diagnostics
    assert result.sql is not None
    assert_oracle_accepts(result.sql)
    return result.sql


def _errors(body: str) -> list[tuple[str, str]]:
    result = compile_source(RECORDS + body, "m.pell")
    return [(d.code, d.message) for d in result.diagnostics if d.is_error]


def _literal(pattern: str) -> ast.RegexLit:
    return ast.RegexLit(pattern, span=ast.Span(0, len(pattern) + 2))


def test_the_call_parses_with_its_type_argument() -> None:
    module, diagnostics = parse("module m;\nfn f(s: text) { let p = re::capture::<Phone>(s, /(a)/); }\n")
    assert diagnostics == [] and module is not None
    fn = module.items[0]
    assert isinstance(fn, ast.Fn)
    let = fn.body.stmts[0]
    assert isinstance(let, ast.Let) and isinstance(let.value, ast.Call)
    assert let.value.callee.path == ("re", "capture")
    (type_arg,) = let.value.type_args
    assert isinstance(type_arg.alternatives[0], ast.NamedType)
    assert type_arg.alternatives[0].name == "Phone"


def test_named_groups_fill_the_field_of_their_name() -> None:
    sql = _compiled(
        "pub fn f(s: text) -> Phone {\n"
        "    return re::capture::<Phone>(s, /(?<line>[0-9]{4})-(?<area>[0-9]{3})/);\n}\n"
    )
    # Oracle has no named groups: the pattern goes without the names
    pattern = "'([0-9]{4})-([0-9]{3})'"
    assert f".area := REGEXP_SUBSTR(p_s, {pattern}, 1, 1, 'c', 2);" in sql
    assert f".line := REGEXP_SUBSTR(p_s, {pattern}, 1, 1, 'c', 1);" in sql


def test_unnamed_groups_fill_the_fields_in_order_numbered_by_left_parenthesis() -> None:
    # REGEXP_INSTR (subexpr): "Subexpressions are numbered in order in which their left
    # parentheses appear in pattern"; nested ones included
    sql = _compiled(
        "pub fn f(s: text) -> Three {\n    return re::capture::<Three>(s, /((a)b)(c)/);\n}\n"
    )
    assert ".a := REGEXP_SUBSTR(p_s, '((a)b)(c)', 1, 1, 'c', 1);" in sql
    assert ".b := REGEXP_SUBSTR(p_s, '((a)b)(c)', 1, 1, 'c', 2);" in sql
    assert ".c := REGEXP_SUBSTR(p_s, '((a)b)(c)', 1, 1, 'c', 3);" in sql


@pytest.mark.parametrize(
    ("pattern", "count"),
    [
        (r"\(a\)(b)", 1),  # escaped parentheses are characters
        (r"[(]x(y)[)]", 1),  # so are parentheses in a bracket expression
        (r"(?<a>x)(y)", 2),
        (r"(a)|(b)", 2),
    ],
)
def test_groups_are_counted_as_oracle_counts_them(pattern: str, count: int) -> None:
    assert len(capture_groups(_literal(pattern))) == count


def test_names_are_taken_out_of_the_pattern_and_nothing_else() -> None:
    literal = _literal(r"(?<a>x)[(?<b>)](?<c>\d)")
    assert pattern_text(literal, without_names=True) == r"(x)[(?<b>)](\d)"
    assert pattern_text(literal) == literal.source


def test_a_computed_text_is_read_once_before_the_first_field() -> None:
    sql = _compiled(
        "pub fn f(p: Phone) -> Phone {\n"
        "    var q = p;\n"
        "    q = re::capture::<Phone>(q.line, /(a)(b)/);\n"
        "    return q;\n}\n"
    )
    assert "l_pell_text := l_q.line;" in sql
    assert sql.index("l_pell_text := l_q.line;") < sql.index("l_q.area := REGEXP_SUBSTR(")
    assert "REGEXP_SUBSTR(l_pell_text, '(a)(b)', 1, 1, 'c', 2)" in sql


def test_fields_and_groups_that_do_not_pair_are_located_errors() -> None:
    errors = _errors(
        "pub fn f(s: text) -> Phone {\n    return re::capture::<Phone>(s, /(a)(b)(c)/);\n}\n"
    )
    assert errors == [
        (
            "capture-fields",
            "the pattern has 3 groups and `Phone` 2 fields: each field takes one group, in "
            "order, or the group that names it (`(?<field>...)`)",
        )
    ]
    errors = _errors(
        "pub fn f(s: text) -> Phone {\n    return re::capture::<Phone>(s, /(?<area>a)(?<lin>b)/);\n}\n"
    )
    assert [code for code, _ in errors] == ["capture-fields", "capture-fields"]


def test_a_group_past_nine_is_an_error() -> None:
    # REGEXP_SUBSTR: subexpr "is a nonnegative integer from 0 to 9"
    pattern = "(a)" * 9 + "(?<area>b)(?<line>c)"
    errors = _errors(
        f"pub fn f(s: text) -> Phone {{\n    return re::capture::<Phone>(s, /{pattern}/);\n}}\n"
    )
    assert [code for code, _ in errors] == ["capture-fields", "capture-fields"]
    assert "group 10" in errors[0][1]


def test_type_arguments_elsewhere_are_not_ignored() -> None:
    errors = _errors("pub fn f(s: text) -> bool {\n    return re::matches::<Phone>(s, /a/);\n}\n")
    assert [code for code, _ in errors] == ["type-mismatch"]
    errors = _errors("pub fn g(s: text) -> text {\n    return g::<Phone>(s);\n}\n")
    assert errors == [("type-mismatch", "`g` takes no type argument")]
    # a library module pellc does not provide says so, generic or not
    errors = _errors("pub fn h(j: text) {\n    let u = fmt::parse::<Phone>(j);\n}\n")
    assert [code for code, _ in errors] == ["unsupported"]


def test_postgres_refuses_it() -> None:
    result = compile_source(
        RECORDS + "pub fn f(s: text) -> Phone {\n    return re::capture::<Phone>(s, /(a)(b)/);\n}\n",
        "m.pell",
        "postgres",
    )
    assert [d.code for d in result.diagnostics if d.is_error] == ["unsupported"]


def test_a_text_literal_is_a_pattern_too() -> None:
    # public Pell writes the pattern as a raw string as well: `(?<area>\d{3})`
    sql = _compiled(
        "pub fn f(s: text) -> Phone {\n"
        "    return re::capture::<Phone>(s, `(?<area>\\d{3})-(?<line>\\d{4})`);\n}\n"
    )
    assert ".line := REGEXP_SUBSTR(p_s, '(\\d{3})-(\\d{4})', 1, 1, 'c', 2);" in sql
    result = compile_source(
        RECORDS
        + "pub fn f(s: text) -> Phone {\n    return re::capture::<Phone>(s, `(?<area>a)(?<lin>b)`);\n}\n",
        "m.pell",
    )
    (wrong, missing) = [d for d in result.diagnostics if d.is_error]
    # at the group's name in the raw string, as in a regex literal
    assert result.source.text[wrong.span.start : wrong.span.end] == "lin"
    assert "field `line`" in missing.message
    errors = _errors("pub fn f(s: text, p: text) -> Phone {\n    return re::capture::<Phone>(s, p);\n}\n")
    assert [code for code, _ in errors] == ["type-mismatch"]


def test_a_capture_whose_value_is_unused_is_not_a_statement() -> None:
    errors = _errors("pub fn f(s: text) {\n    re::capture::<Phone>(s, /(a)(b)/);\n}\n")
    assert [code for code, _ in errors] == ["not-a-statement"]


def test_a_capture_appended_to_a_list_is_one_element() -> None:
    # each `COUNT + 1` would be another element: the record is filled first
    sql = _compiled(
        "pub fn f(s: text) -> number {\n    var xs: list<Phone> = [];\n"
        "    xs.append(re::capture::<Phone>(s, /(a)(b)/));\n    return xs.len();\n}\n"
    )
    assert "COUNT + 1)." not in sql
    assert "l_xs(l_xs.COUNT + 1) := l_pell_phone;" in sql
