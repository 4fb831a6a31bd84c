"""Regex literals and `re::` (pell.checker.regex): what the checks read in a pattern, and the
text Oracle gets."""

from __future__ import annotations

import pytest

from pell import ast, compile_source
from pell.checker.regex import pattern_problems, pattern_text


def _literal(source: str) -> ast.RegexLit:
    return ast.RegexLit(source, span=ast.Span(0, len(source) + 2))


@pytest.mark.parametrize(
    "source",
    [
        r"[[:alpha:]]+\d",  # a character class holds its own brackets
        r"[](]",  # a `]` first in a bracket expression is a member, and so is the `(`
        r"[^])]+",
        r"[(]\)",  # a `(` inside brackets, an escaped `)`
        r"(a|(b))*?",
        r"a\/b",
    ],
)
def test_patterns_oracle_reads_are_accepted(source: str) -> None:
    assert pattern_problems(_literal(source)) == []


@pytest.mark.parametrize(
    ("source", "at", "words"),
    [
        ("(a", 0, "never closed by a `)`"),
        ("a)", 1, "closes no `(`"),
        ("[a-z", 0, "never closed by a `]`"),
        ("[[:alpha:]", 0, "never closed by a `]`"),
        ("x(?:y)", 1, "`(?` groups"),
        (r"a\bc", 1, "word boundary"),
    ],
)
def test_a_pattern_oracle_refuses_is_reported_where_it_goes_wrong(
    source: str, at: int, words: str
) -> None:
    problems = pattern_problems(_literal(source))
    assert len(problems) == 1
    message, span = problems[0]
    assert words in message
    assert span.start == 1 + at  # after the opening slash


def test_a_pattern_over_512_bytes_is_reported() -> None:
    assert pattern_problems(_literal("é" * 256)) == []  # 512 bytes in UTF-8
    [(message, _)] = pattern_problems(_literal("é" * 256 + "a"))
    assert "513 bytes" in message


def test_an_escaped_slash_reaches_oracle_as_a_slash() -> None:
    assert pattern_text(_literal(r"a\/b\\\/c\d")) == r"a/b\\/c\d"


def test_a_regex_literal_without_its_closing_slash_is_a_syntax_error() -> None:
    result = compile_source("module m;\nfn f(s: text) -> bool { return re::matches(s, /ab\n); }\n")
    assert [(d.code, d.span.start) for d in result.diagnostics] == [("syntax", 56)]
    assert "closing `/`" in result.diagnostics[0].message


def test_import_re_is_public_pells_re() -> None:
    """Public Pell code may import `re`: no project module of that name, so pellc's own."""
    source = (
        "module m;\nimport re;\npub fn f(s: text) -> text {\n    return re::find(s, /x+/);\n}\n"
    )
    result = compile_source(source, "m.pell")
    assert not result.diagnostics and result.sql is not None
    assert "REGEXP_SUBSTR(p_s, 'x+', 1, 1, 'c')" in result.sql
