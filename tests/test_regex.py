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
        r"(a)(b)\2\1",  # back references to groups opened before them
        r"a+?b*?c??d{2}?e{1,3}?",  # lazy quantifiers (Table D-3)
        r"a{2,2}b{0,}",
        r"[*+?]\*x{",  # quantifier characters in brackets or escaped; a `{` not an interval
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
        # Oracle has no quoting: `\Q` and `\E` are the letters, so the meaning changes
        (r"\Q.", 0, "no `\\Q...\\E` quoting"),
        (r"a.\E", 2, "letter E"),
        # a back reference needs its group opened before it
        (r"(a)\2", 3, "only 1 group open"),
        (r"\1(a)", 0, "only 0 groups open"),
        # possessive quantifiers
        ("a++", 2, "possessive"),
        ("a*+", 2, "possessive"),
        ("a?+", 2, "possessive"),
        ("a{2}+", 4, "possessive"),
        # a quantifier with nothing before it
        ("*a", 0, "nothing before it"),
        ("a|*b", 2, "nothing before it"),
        ("(*a)", 1, "nothing before it"),
        ("x|{2}", 2, "`{2}` has nothing before it"),
        ("a|?", 2, "nothing before it"),
        # an interval whose minimum is above its maximum
        ("a{2,1}", 1, "minimum must not be above the maximum"),
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


def test_a_back_reference_beyond_the_groups_is_reported_once_per_reference() -> None:
    problems = pattern_problems(_literal(r"(a)\1\3"))
    assert [span.start for _, span in problems] == [1 + 5]


@pytest.mark.parametrize("source", [r"a*", r"x?", r"()", r"(a|)", r"a|b*", r"^$", r"a{0,2}", r"\Ab?\Z"])
@pytest.mark.parametrize("fn", ["find_all", "split"])
def test_find_all_and_split_refuse_a_pattern_that_can_match_the_empty_string(
    fn: str, source: str
) -> None:
    text = f"module m;\npub fn f(s: text) -> list<text> {{\n    return re::{fn}(s, /{source}/);\n}}\n"
    result = compile_source(text, "m.pell")
    assert [d.code for d in result.diagnostics] == ["bad-regex"]
    assert "can match the empty string" in result.diagnostics[0].message
    assert result.diagnostics[0].span.start == text.index("/")


@pytest.mark.parametrize("source", [r"\d+", r"a(b)*", r"(a|)b", r"x*y", r"[ ]{1,}", r"(a*)\1"])
@pytest.mark.parametrize("fn", ["find_all", "split"])
def test_find_all_and_split_take_a_pattern_that_matches_a_character(fn: str, source: str) -> None:
    """`(a*)\\1` can match the empty string, but a back reference is read as a character:
    in doubt, not refused."""
    text = f"module m;\npub fn f(s: text) -> list<text> {{\n    return re::{fn}(s, /{source}/);\n}}\n"
    result = compile_source(text, "m.pell")
    assert not result.diagnostics, [d.message for d in result.diagnostics]


def test_other_re_fns_take_a_pattern_that_can_match_the_empty_string() -> None:
    text = "module m;\npub fn f(s: text) -> text {\n    return re::replace_all(s, /x*/, \"-\");\n}\n"
    assert not compile_source(text, "m.pell").diagnostics


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
