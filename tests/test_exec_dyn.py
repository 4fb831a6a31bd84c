"""`exec_dyn` in an `unsafe fn` (pell.checker.dynamic_sql): EXECUTE IMMEDIATE with binds only,
and what the transaction checks and the verifier's model read of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from verify_checks import assert_found, retry_parts, tree

from pell import compile_source, parse, plsql
from pell.verify import verify

CASE = Path(__file__).parent / "cases" / "exec_dyn.pell"


def _compiled():  # type: ignore[no-untyped-def]
    result = compile_source(CASE.read_text(encoding="utf-8"), filename=CASE.name)
    assert result.lowered is not None and result.sql is not None
    return result


def _dynamic(subprogram: plsql.Subprogram) -> plsql.Sql:
    return next(
        s
        for s in plsql.walk(subprogram.body)
        if isinstance(s, plsql.Sql) and s.text.startswith("EXECUTE IMMEDIATE")
    )


def test_unsafe_fn_parses_as_a_fn_marked_unsafe() -> None:
    module, diagnostics = parse("module m;\npub unsafe fn f() { }\npub fn g() { }\n")
    assert diagnostics == []
    assert module is not None
    assert [(fn.name, fn.unsafe) for fn in module.items if hasattr(fn, "unsafe")] == [
        ("f", True),
        ("g", False),
    ]


def test_values_are_bound_and_only_names_are_spliced_through_dbms_assert() -> None:
    sql = _compiled().sql
    assert sql is not None
    statements = [line.strip() for line in sql.splitlines() if "EXECUTE IMMEDIATE" in line]
    assert len(statements) == 4
    for statement in statements:
        # every piece joined to the text is a literal or a checked name, never a bare value
        for joined in re.findall(r"\|\| (\S+)", statement):
            assert joined.startswith(("'", "DBMS_ASSERT.QUALIFIED_SQL_NAME(")), statement
    # USING by position, one bind per placeholder occurrence (`:id` twice)
    assert statements[1].endswith("USING p_new_st, p_id, p_id;")


def test_a_spliced_text_is_a_commit_to_the_verifier_and_a_literal_dml_is_not() -> None:
    result = _compiled()
    spliced = _dynamic(tree(result, "set_status"))
    assert spliced.ends_transaction is not None
    assert "cannot read" in spliced.ends_transaction
    literal = _dynamic(tree(result, "purge"))
    assert literal.ends_transaction is None and literal.verb == "delete"
    # plant: the retried fn runs the spliced statement before its DELETE: the verifier's model
    # commits there, and a failed DELETE's rollback finds no savepoint
    _, attempt = retry_parts(tree(result, "purge"))
    spliced.origin = literal.origin
    attempt.body.insert(0, spliced)
    assert_found(verify([result]), ("verify-no-savepoint", "35:15"), "raises ORA-01086")


# Where a `{name}` may not stand: DBMS_ASSERT.QUALIFIED_SQL_NAME passes a quoted name, which
# may hold `'`, `--` or a newline, so inside a string or a comment it could end it (review 5)
SPLICED = {
    "in a string": "delete from t where owner = 'x{t}'",
    "in a string after a doubled quote": "delete from t where owner = 'a''{t}'",
    "quoted inside a comment": "delete from t -- '{t}'\\n where 1 = 0",
    "in a line comment": "delete from t -- {t}\\n where 1 = 0",
    "in a block comment": "delete from t /* {t} */ where 1 = 0",
    "in a quoted name": 'delete from \\"{t}\\"',
    "before a database link": "delete from {t}@remote",
    "joined to a name": "delete from tab_{t}",
    "joined to another splice": "delete from {t}{t}",
}


@pytest.mark.parametrize("sql", SPLICED.values(), ids=SPLICED.keys())
def test_a_splice_that_does_not_stand_as_an_identifier_is_refused(sql: str) -> None:
    source = f'module inj;\n\npub unsafe fn f(t: text) {{\n    exec_dyn("{sql}");\n}}\n'
    result = compile_source(source, filename="inj.pell")
    assert result.sql is None
    assert [d.code for d in result.diagnostics] == ["dynamic-sql"]
    assert "must stand where an identifier does" in result.diagnostics[0].message


def test_a_splice_standing_as_an_identifier_compiles() -> None:
    source = (
        'module inj;\n\npub unsafe fn f(s: text, t: text) {\n'
        '    exec_dyn("delete from {s}.{t} where ({t}.id) > 0");\n}\n'
    )
    result = compile_source(source, filename="inj.pell")
    assert result.sql is not None, result.diagnostics
    assert "'delete from ' || DBMS_ASSERT.QUALIFIED_SQL_NAME(p_s) || '.' ||" in result.sql


def _codes(source: str) -> list[tuple[str, int]]:
    result = compile_source(source, "m.pell")
    return [
        (d.code, result.source.line_col(d.span.start)[0]) for d in result.diagnostics if d.is_error
    ]


def test_a_spliced_literal_run_as_sql_counts_as_a_commit() -> None:
    # review 8: a `'{x}'` that a block's EXECUTE IMMEDIATE or a committing call runs is text
    # pellc cannot read, not the statement `x`; a `'{x}'` compared in a DELETE is a value
    source = (
        "module m;\n@retry(3, on = [lock_timeout])\npub unsafe fn a(stmt: text) {\n"
        "    exec_dyn(\"begin execute immediate '{stmt}'; end;\");\n}\n"
        "@retry(3, on = [lock_timeout])\npub unsafe fn b(stmt: text) {\n"
        "    exec_dyn(\"call dbms_utility.exec_ddl_statement('{stmt}')\");\n}\n"
        "@retry(3, on = [lock_timeout])\npub unsafe fn c(v: text) {\n"
        "    exec_dyn(\"delete from plan_table where statement_id = '{v}'\");\n}\n"
    )
    assert _codes(source) == [("commit-in-retry", 4), ("commit-in-retry", 8)]


def test_a_block_that_calls_a_project_fn_that_commits_is_a_commit() -> None:
    # review 10: the block's calls were resolved for `sql! { begin dw.cm(); end; }` only;
    # a bare `cm()` in a dynamic block is no fn of the package (the block runs outside it)
    source = (
        "module dw;\n@retry(3, on = [lock_timeout])\npub unsafe fn a(x: text) {\n"
        '    exec_dyn("begin dw.cm(); end;");\n}\n'
        "@retry(3, on = [lock_timeout])\npub unsafe fn b(x: text) {\n"
        '    exec_dyn("call dw.cm()");\n}\n'
        "@retry(3, on = [lock_timeout])\npub unsafe fn c(x: text) {\n"
        "    exec_dyn(\"begin dw.keep('{x}'); end;\");\n}\n"
        "@retry(3, on = [lock_timeout])\npub unsafe fn d(x: text) {\n"
        '    exec_dyn("begin dw.quiet(); cm(); end;");\n}\n'
        "pub fn cm() { sql! { commit }; }\n"
        "pub fn keep(s: text) { sql! { commit }; }\n"
        "pub fn quiet() { sql! { update t set x = 1 }; }\n"
    )
    assert _codes(source) == [("commit-in-retry", 4), ("commit-in-retry", 8), ("commit-in-retry", 12)]
    transaction = (
        "module dw;\npub unsafe fn a() {\n    transaction {\n"
        '        exec_dyn("begin dw.cm(); end;");\n    }\n}\n'
        "pub fn cm() { sql! { commit }; }\n"
    )
    assert _codes(transaction) == [("commit-in-transaction", 4)]


def test_texts_pellc_cannot_read_its_splices_in_are_refused() -> None:
    source = (
        "module m;\n"
        'pub unsafe fn a(t: text) -> number {\n    let n: number = exec_dyn("select count(*) '
        "from pell_dyn_name where 'x {t} y' = 'z'\");\n    return n;\n}\n"
        'pub unsafe fn b(t: text) { exec_dyn(""); }\n'
        'pub unsafe fn c(t: text) { exec_dyn("{t}"); }\n'
    )
    assert _codes(source) == [("dynamic-sql", 3), ("dynamic-sql", 6), ("dynamic-sql", 7)]
