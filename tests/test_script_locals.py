"""Scripts (files with no `module` line) with fns and records of their own (issue 26, point
9/10): the anonymous block's local types and subprograms (language.md, "Scripts")."""

from __future__ import annotations

from conftest import assert_oracle_accepts

from pell import compile_source

SCRIPT = """pub record Employee {
    id: number,
    level: number,
}

let alice = Employee { id: 1, level: 5 };
let promoted = promote(alice);
println(promoted.level);

fn promote(e: Employee) -> Employee {
    return Employee { id: e.id, level: capped(e.level + 1) };
}

pub fn capped(level: number) -> number {
    if level > 10 {
        return 10;
    }
    return level;
}
"""


def _sql(source: str) -> str:
    result = compile_source(source, "s.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert_oracle_accepts(result.sql)
    return result.sql


def test_a_scripts_fns_and_records_are_its_blocks_own() -> None:
    sql = _sql(SCRIPT)
    declare, body = sql.split("\nBEGIN\n  l_alice.id := 1;", 1)
    # types, then the statements' locals, then each fn declared, then defined
    order = [
        "  TYPE t_employee IS RECORD (",  # a `pub` record too
        "  l_alice t_employee;",
        "  FUNCTION pell_number_text(",
        "  FUNCTION promote(p_e IN t_employee) RETURN t_employee;",
        "  FUNCTION capped(p_level IN NUMBER) RETURN NUMBER;",
        "  FUNCTION promote(p_e IN t_employee) RETURN t_employee IS",
        "    l_pell_employee.f_level := capped(p_e.f_level + 1);",
        "  FUNCTION capped(p_level IN NUMBER) RETURN NUMBER IS",
    ]
    positions = [declare.index(line) for line in order]
    assert positions == sorted(positions), positions
    assert "  l_promoted := promote(l_alice);\n" in body
    assert "CREATE" not in sql  # one anonymous block, no package


def test_one_local_fn_needs_no_forward_declaration() -> None:
    sql = _sql('p(twice(2));\nfn twice(x: number) -> number {\n    return x * 2;\n}\n')
    assert sql.count("FUNCTION twice(p_x IN NUMBER) RETURN NUMBER") == 1


def test_a_scripts_fn_does_not_see_the_scripts_lets() -> None:
    source = "let n = 2;\np(twice(1));\nfn twice(x: number) -> number {\n    return x * n;\n}\n"
    result = compile_source(source, "s.pell")
    assert result.sql is None
    assert [(d.code, d.span.start) for d in result.diagnostics] == [
        ("unknown-name", source.index("n;\n}"))
    ]


def test_a_script_declares_the_text_to_number_function_it_calls() -> None:
    # only pell_text_number is needed: the block must still declare it
    sql = _sql('let n = "0.5".into::<number>();\nsql! { insert into t (n) values (:n) };\n')
    assert "  l_n := pell_text_number('0.5');" in sql
    assert "  FUNCTION pell_text_number(p_text IN VARCHAR2) RETURN NUMBER IS" in sql


def test_an_error_in_a_script_stays_unsupported_and_so_do_scripts_on_postgres() -> None:
    result = compile_source("let n = 1;\nerror Oops;\n", "s.pell")
    assert [(d.code, d.span.start) for d in result.diagnostics] == [("unsupported", 11)]
    result = compile_source(SCRIPT, "s.pell", "postgres")
    assert [d.code for d in result.diagnostics] == ["unsupported"]
