"""Every method that yields a `bool` is TRUE or FALSE, never NULL (issue 25, item 3): on Oracle
by the generated text (the rules are cited at METHODS, pell/checker/methods.py); on PostgreSQL
`tests/test_postgres.py::test_text_tests_are_true_or_false_for_every_text` runs them."""

from __future__ import annotations

import re

from conftest import assert_oracle_accepts

from pell import compile_source
from pell.checker import types as t
from pell.checker.methods import METHODS
from pell.precedence import ATOM

SOURCE = """module texts;

pub fn not_abc(s: text) -> text {
    if !s.ends_with("abc") {
        return "taken";
    }
    return "not taken";
}

pub fn probe(s: text, x: text) -> bool {
    return s.contains(x) || s.starts_with(x) || s.ends_with(x) || s.ends_with("!{x}");
}
"""


def _oracle() -> str:
    result = compile_source(SOURCE, "texts.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert_oracle_accepts(result.sql)
    return result.sql


def test_if_not_ends_with_takes_its_branch_for_a_short_text() -> None:
    """SUBSTR(p_s, -LENGTH('abc')) is NULL for a shorter (or empty) `s`: the CASE makes that
    FALSE, so NOT of it is TRUE and the branch is taken. A literal is never empty: no test of
    it for NULL."""
    sql = _oracle()
    assert (
        "IF NOT CASE WHEN SUBSTR(p_s, -LENGTH('abc')) = 'abc' THEN TRUE ELSE FALSE END THEN"
        in sql
    )


def test_an_argument_that_may_be_empty_is_found_in_every_text() -> None:
    """`x` may be empty (NULL): every text contains, starts and ends with it. An interpolated
    literal with text of its own is never empty."""
    sql = _oracle()
    for test in (
        "INSTR(p_s, p_x) > 0",
        "SUBSTR(p_s, 1, LENGTH(p_x)) = p_x",
        "SUBSTR(p_s, -LENGTH(p_x)) = p_x",
    ):
        assert f"CASE WHEN p_x IS NULL OR {test} THEN TRUE ELSE FALSE END" in sql
    assert "CASE WHEN SUBSTR(p_s, -LENGTH('!' || p_x)) = '!' || p_x THEN TRUE ELSE FALSE END" in sql


def test_every_bool_method_is_true_or_false() -> None:
    """The methods yielding a `bool`, each lowered to a CASE whose results are TRUE and FALSE
    or to a test that is never NULL (IS NULL; COUNT, a number, compared): a new one must be
    added here, and be one or the other."""
    lowered = {
        (m.receiver, m.name): m.lower(("p_s", ATOM), ["p_x"])[0]
        for m in METHODS
        if m.result == t.BOOL
    }
    assert set(lowered) == {
        ("text", "is_empty"),
        ("text", "contains"),
        ("text", "starts_with"),
        ("text", "ends_with"),
        ("list", "is_empty"),
    }
    never_null = {"p_s IS NULL", "p_s.COUNT = 0"}
    for key, text in lowered.items():
        two_valued = re.fullmatch(r"CASE WHEN p_x IS NULL OR .* THEN TRUE ELSE FALSE END", text)
        assert two_valued or text in never_null, (key, text)


def test_postgres_sees_none_as_the_empty_text() -> None:
    result = compile_source(SOURCE, "texts.pell", "postgres")
    assert result.sql is not None
    assert "IF NOT (right(coalesce(p_s, ''), length('abc')) = 'abc') THEN" in result.sql
    assert "strpos(coalesce(p_s, ''), coalesce(p_x, '')) > 0" in result.sql
    assert "starts_with(coalesce(p_s, ''), coalesce(p_x, ''))" in result.sql
