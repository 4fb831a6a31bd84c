"""The grammar: raw SQL capture, strings and interpolation, precedence, spans, every construct."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pell import ast, compile_source, parse
from pell.diagnostics import render_all


def _module(body: str) -> ast.Module:
    module, diagnostics = parse(f"module m;\nfn f() {{\n{body}\n}}\n")
    assert not diagnostics, diagnostics
    assert module is not None
    return module


def _first_stmt(body: str) -> ast.Stmt:
    fn = _module(body).items[0]
    assert isinstance(fn, ast.Fn)
    return fn.body.stmts[0]


def _sql(body: str) -> str:
    stmt = _first_stmt(body)
    assert isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.SqlBlock)
    return stmt.expr.text


@pytest.mark.parametrize(
    "sql",
    [
        " select 1 from dual ",
        " select '}' from dual ",
        " select '{' || '''}''' from dual ",
        " select q'[ } ]', q'{ {} }', q'( } )', q'< } >', q'! } !' from dual ",
        " select 1 -- } not the end\n from dual ",
        " select /* } */ 1 from dual ",
        ' select "Odd}Name" from dual ',
        " select json_object('a' value 1) from t match_recognize (pattern (a{2}) define a as 1=1) ",
        " select 10 - 2 / 1 from dual ",
        " select x, nq'[ü}]' from dual ",
    ],
)
def test_sql_block_ends_at_the_matching_brace(sql: str) -> None:
    assert _sql(f"sql! {{{sql}}};") == sql


def test_sql_block_keeps_its_text_and_position() -> None:
    module, _ = parse("module m;\nfn f() { sql!{ select :x from t } ; }\n")
    assert module is not None
    fn = module.items[0]
    assert isinstance(fn, ast.Fn)
    stmt = fn.body.stmts[0]
    assert isinstance(stmt, ast.ExprStmt) and isinstance(stmt.expr, ast.SqlBlock)
    block = stmt.expr
    source = "module m;\nfn f() { sql!{ select :x from t } ; }\n"
    assert source[block.text_start : block.text_start + len(block.text)] == block.text
    assert source[block.span.start : block.span.end] == "sql!{ select :x from t }"


def test_interpolation_nests_strings_and_unescapes() -> None:
    stmt = _first_stmt('let s = "a {g("x}}")} \\n {{b}} \\{c\\}";')
    assert isinstance(stmt, ast.Let) and isinstance(stmt.value, ast.StringLit)
    parts = stmt.value.parts
    assert parts[0] == "a "
    call = parts[1]
    assert isinstance(call, ast.Call)
    assert call.args == (ast.StringLit(("x}",), span=ast.NO_SPAN),)
    assert parts[2] == " \n {b} {c}"


def test_a_string_may_span_lines_and_keeps_its_newlines() -> None:
    stmt = _first_stmt('let s = "a\n  b";')
    assert isinstance(stmt, ast.Let)
    assert stmt.value == ast.StringLit(("a\n  b",), span=ast.NO_SPAN)


def test_a_lone_close_brace_in_a_string_is_an_error_with_a_hint() -> None:
    _, diagnostics = parse('module m;\nfn f() { let s = "a } b"; }\n')
    assert [(d.code, d.message, d.hints) for d in diagnostics] == [
        ("syntax", "unexpected `}`; expected `{`, a string or string text",
         ("a literal brace in a string is written `{{` or `}}`",)),
    ]  # fmt: skip


def test_raw_strings_have_no_escapes_or_interpolation() -> None:
    stmt = _first_stmt("let s = `a\\n{b}`;")
    assert isinstance(stmt, ast.Let)
    assert stmt.value == ast.StringLit(("a\\n{b}",), span=ast.NO_SPAN)


def _expr(text: str) -> ast.Expr:
    stmt = _first_stmt(f"let v = {text};")
    assert isinstance(stmt, ast.Let) and stmt.value is not None
    return stmt.value


def _shape(expr: ast.Expr) -> str:
    if isinstance(expr, ast.Binary):
        return f"({_shape(expr.left)} {expr.op} {_shape(expr.right)})"
    if isinstance(expr, ast.Unary):
        return f"({expr.op}{_shape(expr.operand)})"
    if isinstance(expr, ast.Name):
        return expr.text
    if isinstance(expr, ast.NumberLit):
        return expr.text
    return type(expr).__name__


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("a || b && c", "(a || (b && c))"),
        ("a == b && c != d", "((a == b) && (c != d))"),
        ("a < b == c", "((a < b) == c)"),
        ("a + b * c - d", "((a + (b * c)) - d)"),
        ("a - b - c", "((a - b) - c)"),
        ("a / b % c", "((a / b) % c)"),
        ("-a * b", "((-a) * b)"),
        ("!a && b", "((!a) && b)"),
        ("(a + b) * c", "((a + b) * c)"),
        ("1_000 + 2", "(1000 + 2)"),
    ],
)
def test_operator_precedence(text: str, shape: str) -> None:
    assert _shape(_expr(text)) == shape


def test_record_literal_is_not_taken_for_an_if_block() -> None:
    stmt = _first_stmt("if done { x = 1; }")
    assert isinstance(stmt, ast.If)
    assert stmt.condition == ast.Name(("done",), span=ast.NO_SPAN)


def test_spans_point_at_the_source() -> None:
    source = "module m;\nfn f() {\n  let total = price * 2;\n}\n"
    module, _ = parse(source)
    assert module is not None
    fn = module.items[0]
    assert isinstance(fn, ast.Fn)
    let = fn.body.stmts[0]
    assert isinstance(let, ast.Let) and let.value is not None
    assert source[let.span.start : let.span.end] == "let total = price * 2;"
    assert source[let.value.span.start : let.value.span.end] == "price * 2"
    assert source[let.name_span.start : let.name_span.end] == "total"


EVERY_CONSTRUCT = """
module billing::charges;
import dbms_output;
import app::audit_pkg;

pub record Charge { id: number, amount: number, note: text?, tags: list<text>, when: date }
error NotFound { id: number }
@panic error Broken;
@skip
pub error Ignored;
enum Color { Red, Green = "g" }

@retry(n=3, backoff=10)
@deterministic
pub fn f(a: number, out b: text, inout c: int) -> Result<Charge, NotFound | Broken> {
    let x: Option<number> = None;
    var y: int;
    let z = Some(1);
    y = 2;
    if a > 1 { return Err(NotFound { id: a }); } else if a < 0 { return Err(Broken); } else { }
    while y < 10 { y = y + 1; if y == 5 { break; } continue; }
    for i in 0..10 { }
    for i in 0..=10 { }
    for r in sql! { select id from charges } { dbms_output::put_line("{r.id}"); }
    for t in ["a", "b"] { }
    transaction { sql! { update charges set amount = 0 }; }
    let one: Charge = sql! { select * from charges where id = :a }.one()?;
    let first = sql! { select id from charges }.first();
    let all: list<Charge> = sql! { select * from charges }.collect();
    let n = sql! { delete from charges }.rowcount();
    let id = sql! { insert into charges (id) values (1) returning id }.returning::<number>().one();
    let locked = sql! { select id from charges }.for_update().one();
    let u = ();
    app::audit_pkg::log(b.upper());
    return Ok(Charge { id: 1, amount: 2, note: None, tags: [], when: x });
} finally {
    dbms_output::put_line(`done`);
}

@pipelined
fn rows() -> number { yield 1; return 0; }

@autonomous @udf @result_cache
fn unit() -> () { return Ok(()); }
"""


def test_every_construct_parses() -> None:
    module, diagnostics = parse(EVERY_CONSTRUCT)
    assert diagnostics == []
    assert module is not None
    assert [type(item).__name__ for item in module.items] == [
        "Record", "ErrorDecl", "ErrorDecl", "ErrorDecl", "Enum", "Fn", "Fn", "Fn",
    ]  # fmt: skip


def test_every_construct_compiles_or_gets_located_errors_never_a_crash() -> None:
    result = compile_source(EVERY_CONSTRUCT, "every.pell")
    # this file breaks rules on purpose (retry with finally, select * into a record, ...)
    assert result.sql is None
    assert {d.code for d in result.diagnostics} >= {"retry-combination", "sql-column-count"}
    for diagnostic in result.diagnostics:
        assert 0 <= diagnostic.span.start <= diagnostic.span.end <= len(EVERY_CONSTRUCT)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            'fn f() { let y = json!{ "a": 1 }; }',
            "JSON literals (`json! { }`) are not supported yet",
        ),
    ],
)
def test_out_of_scope_constructs_are_unsupported_not_syntax_errors(
    source: str, message: str
) -> None:
    _, diagnostics = parse(f"module m;\n{source}\n")
    assert [(d.code, d.message) for d in diagnostics] == [("unsupported", message)]


def test_jq_blocks_and_turbofish_calls_parse() -> None:
    """`jq! { }` keeps its text (a `}` in a string inside it included), and `json::into::<T>`
    and `re::capture::<T>` are calls with a type argument (the checker says which it takes)."""
    text = (
        'module m;\nfn f(j: json) {\n  let x = jq!{ j | .a[] | select(.b == "}") }.collect();\n'
        "  let u = json::into::<User>(j);\n  let p = re::capture::<Phone>(s);\n}\n"
    )
    module, diagnostics = parse(text)
    assert diagnostics == []
    assert module is not None
    fn = module.items[0]
    assert isinstance(fn, ast.Fn)
    jq_let, into_let, capture_let = fn.body.stmts
    assert isinstance(jq_let, ast.Let) and isinstance(jq_let.value, ast.MethodCall)
    block = jq_let.value.target
    assert isinstance(block, ast.JqBlock)
    assert block.text == ' j | .a[] | select(.b == "}") '
    for stmt, path in ((into_let, ("json", "into")), (capture_let, ("re", "capture"))):
        assert isinstance(stmt, ast.Let) and isinstance(stmt.value, ast.Call)
        assert stmt.value.callee.path == path
        assert len(stmt.value.type_args) == 1


def test_every_unsupported_form_of_a_file_is_reported_in_source_order() -> None:
    text = (
        "module m;\n@json(order = (a, b))\nfn f(x: number) {\n  let y = 1;\n}\n"
        "@retry(on = (c, d))\nfn g() { }\n"
    )
    _, diagnostics = parse(text)
    words = [text[d.span.start : d.span.end] for d in diagnostics]
    assert words == ["order = (a, b)", "on = (c, d)"]


def test_a_pipeline_is_its_query_read_through_table_fns() -> None:
    """`q |> f |> g(a, 2) |> collect()` is `.collect()` on one query that reads q through f
    then g; offsets into the query still point at its source."""
    text = (
        "module m;\nfn h(a: number) {\n"
        "  let xs: list<R> = sql! {  select x\n from t } |> f |> g(a, 2) |> collect();\n}\n"
    )
    module, diagnostics = parse(text)
    assert module is not None and diagnostics == []
    fn = module.items[0]
    assert isinstance(fn, ast.Fn)
    let = fn.body.stmts[0]
    assert isinstance(let, ast.Let)
    call = let.value
    assert isinstance(call, ast.MethodCall) and call.name == "collect" and call.args == ()
    assert text[call.name_span.start : call.name_span.end] == "collect"
    block = call.target
    assert isinstance(block, ast.SqlBlock)
    assert block.text == (
        "select * from table(g(cursor(select * from table(f(cursor(select x\n from t)))), :a, 2))"
    )
    at = block.text.index("from t)")
    assert text[block.text_start + at : block.text_start + at + 6] == "from t"
    assert [stage.callee.path for stage in block.stages] == [("f",), ("g",)]
    assert [len(stage.args) for stage in block.stages] == [0, 2]
    assert text[block.stages[1].span.start : block.stages[1].span.end] == "g(a, 2)"


def test_a_pipeline_where_the_grammar_takes_none_is_a_located_syntax_error() -> None:
    text = "module m;\nfn h() {\n  if sql! { select 1 from dual } |> f |> one() { }\n}\n"
    module, diagnostics = parse(text)
    assert module is None
    assert [d.code for d in diagnostics] == ["syntax"]
    assert "a `|>` pipeline cannot stand here" in diagnostics[0].message
    span = diagnostics[0].span
    assert text[span.start : span.end] == "|>"


def test_the_new_keywords_stay_names_where_no_keyword_can_stand() -> None:
    """`type`, `match`, `case`, `state` are fields, locals and columns as before; `/` after an
    operand is a division, never a regex literal."""
    text = (
        "module m;\npub record R { type: text, case: number }\n"
        "fn f(r: R, a: number, b: number) -> number {\n  let state = r.case;\n"
        "  let t = r.type;\n  return a / b / state;\n}\n"
    )
    module, diagnostics = parse(text)
    assert diagnostics == [] and module is not None
    result = compile_source(text, "m.pell")
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    assert "p_a / p_b / l_state" in result.sql


def test_a_file_without_a_module_line_is_a_script_of_one_implicit_procedure() -> None:
    text = "// a script\nimport accounts;\n\nlet n = 1;\nn = n + 1;\n"
    module, diagnostics = parse(text)
    assert diagnostics == [] and module is not None and module.script
    assert [i.path for i in module.imports] == [("accounts",)]
    (main,) = module.items
    assert isinstance(main, ast.Fn) and len(main.body.stmts) == 2


def test_a_script_compiles_to_an_anonymous_block_and_refuses_errors() -> None:
    text = "let n = 1;\ndbms_output::put_line(\"{n}\");\n"
    result = compile_source(text, "s.pell")
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    body = result.sql.split("\n\n", 1)[1]
    assert body.startswith("DECLARE\n  l_n PLS_INTEGER;\nBEGIN\n") and body.endswith("END;\n/\n")
    assert "PACKAGE" not in result.sql
    # a fn is a local subprogram of the block (tests/test_script_locals.py); an error is not
    _, diagnostics = parse("let n = 1;\nerror Oops;\n")
    assert [(d.code, d.span.start) for d in diagnostics] == [("unsupported", 11)]
    # on postgres a DO block (tests/test_postgres.py runs one)
    pg = compile_source(text, "s.pell", target="postgres")
    assert pg.sql is not None and "\nDO $pell$\nDECLARE\n  l_n integer;\nBEGIN\n" in pg.sql


def test_a_parser_loaded_from_lark_s_cache_parses_as_the_one_lark_analyses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pell.syntax has lark cache the analysed grammar (docs in pell/syntax.py); the next start-up
    # that needs lark loads it. The same trees, spans and syntax errors either way.
    from pell import syntax

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    analysed = syntax._lark_parser()  # analyses the grammar, writes lark's cache
    assert len(list((tmp_path / "pellc").glob("grammar-*.cache"))) == 1
    from_cache = syntax._lark_parser()
    root = Path(__file__).resolve().parent.parent
    paths = sorted((root / "examples").glob("*.pell")) + sorted(
        (root / "tests" / "cases").rglob("*.pell")
    )
    texts = [path.read_text(encoding="utf-8") for path in paths]
    texts += [text[: len(text) // 2] for text in texts]  # cut short: syntax errors
    results = []
    for parser in (analysed, from_cache):
        monkeypatch.setattr(syntax, "grammar_parser", lambda parser=parser: parser)
        monkeypatch.setattr(syntax, "_per_thread", threading.local())
        parsed = [syntax._parse_with_lark(text) for text in texts]
        spans = [[n.span for n in ast.walk(m)] if m is not None else None for m, _ in parsed]
        results.append((parsed, spans))
    assert results[0] == results[1]
    assert any(diagnostics for _, diagnostics in results[0][0])


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("module m;\n\nfn f() -> number {\n    return 1;\n}\n/* never closed\n", "/* never"),
        ("module m;\n\nfn f() -> number {\n    return 1; /* never closed\n}\n", "/* never"),
        ("module m;\n\nfn f() -> number {\n    return 1 /* never closed;\n}\n", "/* never"),
    ],
)
def test_an_unclosed_block_comment_is_reported_as_one(text: str, at: str) -> None:
    """Not as a regex literal's `/` or a division's, which is what the lexer reads of it."""
    result = compile_source(text)
    assert [(d.code, d.span.start, d.message) for d in result.diagnostics] == [
        ("syntax", text.index(at), "this `/*` comment is never closed: `*/` is missing")
    ]
