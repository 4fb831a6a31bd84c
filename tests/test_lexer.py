"""pell.lalr's lexing (pell.lexer's mode specs) against lark's contextual lexer, differentially.

Each lexes while its own parser drives it, with callbacks that keep every shifted token (no
AST), so each lexes in the parser states the other did. Where lark parses a text, pell.lalr
must too, from the very same tokens (type, value, start and end offsets); where lark raises,
pell.lalr must reject the text (pell.syntax then asks lark, for its diagnostic: lark's lexer
makes it). Inputs: every .pell file under examples/ and tests/, with CRLF line ends too,
deterministic seeded mutations of them (characters and tokens deleted, inserted, duplicated
and swapped, unclosed strings and SQL, stray braces, odd unicode), generated programs
(tests/fuzz_programs.py), texts lark lexes in particular ways, and a small grammar with what
pellc's has not (lexical errors, an ignored terminal without line breaks, priorities).
`pytest -m fuzz` runs many more of them. (tests/test_lalr.py compares the ASTs built.)
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest
from conftest import ROOT
from fuzz_programs import generate
from lark import Lark
from lark.exceptions import UnexpectedInput

from pell import lalr, syntax

SOURCES = sorted(
    path
    for folder in ("examples", "tests")
    for path in (ROOT / folder).rglob("*.pell")
    if ".venv" not in path.parts
)
NORMAL_MUTATIONS = 6_000
FUZZ_MUTATIONS = 60_000
NORMAL_PROGRAMS = 100
FUZZ_PROGRAMS = 2_000

Tokens = list[tuple[str, str, int, int]]


def _tokens(tree: Any) -> Tokens:
    """The tokens of a tree of children lists, in order (lark's and pell.lalr's tokens alike)."""
    found: Tokens = []
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(reversed(node))
        elif node is not None:
            found.append((node.type, node.value, node.start_pos, node.end_pos))
    return found


def _keep(children: list[Any]) -> list[Any]:
    return children


def lark_tokens(text: str, parser: Lark) -> Tokens | None:
    """The tokens lark's parser shifts parsing `text`, lexing with its contextual lexer; None
    where it raises (a syntax or lexical error)."""
    interactive = parser.parse_interactive(text)
    interactive.parser_state.parse_conf.callbacks = {}  # a reduction's value: its children
    try:
        return _tokens(interactive.resume_parse())
    except UnexpectedInput:
        return None


def lalr_tokens(text: str, parser: lalr.Parser) -> Tokens | None:
    """The tokens pell.lalr shifts parsing `text`; None where it rejects the text."""
    try:
        return _tokens(parser.parse(text, [_keep] * len(parser.rules)))
    except lalr.Rejected:
        return None


LARK = syntax.grammar_parser()
OWN = syntax._fast_parser()


def check(text: str, label: str, parsers: tuple[Lark, lalr.Parser | None] = (LARK, OWN)) -> bool:
    """Whether lark parses `text` (pell.lalr from the same tokens): a failure where they differ."""
    assert parsers[1] is not None, "pell.lalr has no tables"
    expected = lark_tokens(text, parsers[0])
    actual = lalr_tokens(text, parsers[1])
    if actual != expected:
        if actual is None or expected is None:
            verdicts = f"lark {'parses' if actual is None else 'raises'}, pell.lalr does not"
            pytest.fail(f"{label}: {verdicts}\n  text: {text!r}")
        same = 0
        for a, b in zip(actual, expected, strict=False):
            if a != b:
                break
            same += 1
        pytest.fail(
            f"{label}: pell.lalr's tokens differ from lark's after {same} equal tokens\n"
            f"  text: {text!r}\n"
            f"  pell.lalr: {actual[same : same + 3]}\n"
            f"  lark:      {expected[same : same + 3]}"
        )
    return expected is not None


# ---- the files -----------------------------------------------------------------------------


def test_the_files_are_found() -> None:
    assert len(SOURCES) > 50


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_files_lex_alike(path: Any) -> None:
    text = path.read_text(encoding="utf-8")
    check(text, str(path))
    check(text.replace("\n", "\r\n"), f"{path} (CRLF)")


def test_the_synthetic_module_lexes_alike() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from synthetic import module
    finally:
        sys.path.remove(str(ROOT / "bench"))
    text = module(50)
    assert check(text, "bench/synthetic.py")
    assert OWN is not None
    assert len(lalr_tokens(text, OWN) or ()) > 2000


# ---- mutations -----------------------------------------------------------------------------

_TOKENISH = re.compile(r"[A-Za-z_0-9]+|\s+|.", re.DOTALL)
_SNIPPETS = (
    '"', "'", "`", "{", "}", "(", ")", "[", "]", "{{", "}}", ";", ",", ".", "..", "..=", "::",
    "->", "=>", "|>", "|", "&&", "||", "!", "?", "@", "/", "*", "//", "/*", "*/", "--", "-",
    "sql! {", "sql!{", "jq! {", "q'[", "q'{", "Q'<x>'", "q", "'it''s'", '"id"', "/re/",
    "/a\\/b/", "0", "1.5", "1_000", "9.", "fn", "pub", "module", "let x = ", "match", "type",
    "None", "Ok(", "Err", "Some", "true", "in", "if", "else", "return", "\\", "\\n", "\n",
    "\t", "\r", "\f", "\v", " ", "\x00", "\u00a0", "\u2028", "\ufeff", "é", "ß", "İ", "µ",
    "😀", "٣", "\uff46\uff4e", "#", "$", "~", "^",
)  # fmt: skip


def mutate(text: str, rng: random.Random) -> str:
    """One to three random edits of `text`."""
    for _ in range(rng.randint(1, 3)):
        size = len(text)
        at = rng.randint(0, size)
        pieces = [m.span() for m in _TOKENISH.finditer(text)]
        token = rng.choice(pieces) if pieces else (0, 0)
        edit = rng.randrange(10)
        if edit == 0 and size:  # delete a character
            at = min(at, size - 1)
            text = text[:at] + text[at + 1 :]
        elif edit == 1:  # insert a snippet
            text = text[:at] + rng.choice(_SNIPPETS) + text[at:]
        elif edit == 2:  # insert a random character, often outside ASCII
            char = chr(rng.choice((rng.randint(0, 127), rng.randint(128, 0x2FFF))))
            text = text[:at] + char + text[at:]
        elif edit == 3:  # duplicate a span
            length = rng.randint(1, 12)
            text = text[:at] + text[at : at + length] + text[at:]
        elif edit == 4:  # delete a token
            text = text[: token[0]] + text[token[1] :]
        elif edit == 5:  # duplicate a token
            text = text[: token[1]] + text[token[0] : token[1]] + text[token[1] :]
        elif edit == 6 and len(pieces) > 1:  # swap two tokens
            a, b = sorted(rng.sample(pieces, 2))
            text = (
                text[: a[0]]
                + text[b[0] : b[1]]
                + text[a[1] : b[0]]
                + text[a[0] : a[1]]
                + text[b[1] :]
            )
        elif edit == 7:  # cut the text short
            text = text[:at]
        elif edit == 8:  # a stray brace or quote
            text = text[:at] + rng.choice("{}\"'") + text[at:]
        else:  # delete a span
            text = text[:at] + text[at + rng.randint(1, 30) :]
    return text


def _check_mutations(seeds: range) -> int:
    texts = [path.read_text(encoding="utf-8") for path in SOURCES]
    errors = 0
    for seed in seeds:
        rng = random.Random(seed)
        errors += not check(mutate(rng.choice(texts), rng), f"mutation seed {seed}")
    return errors


def test_mutations_lex_alike() -> None:
    # the mutations reach the errors
    assert _check_mutations(range(NORMAL_MUTATIONS)) > NORMAL_MUTATIONS // 3


@pytest.mark.fuzz
@pytest.mark.parametrize("chunk", range(10))
def test_many_mutations_lex_alike(chunk: int) -> None:
    size = FUZZ_MUTATIONS // 10
    _check_mutations(range(NORMAL_MUTATIONS + chunk * size, NORMAL_MUTATIONS + (chunk + 1) * size))


# ---- generated programs --------------------------------------------------------------------


def test_generated_programs_lex_alike() -> None:
    for seed in range(NORMAL_PROGRAMS):
        check(generate(seed).text, f"fuzz_programs seed {seed}")


@pytest.mark.fuzz
def test_many_generated_programs_lex_alike() -> None:
    for seed in range(NORMAL_PROGRAMS, FUZZ_PROGRAMS):
        text = generate(seed).text
        check(text, f"fuzz_programs seed {seed}")
        check(mutate(text, random.Random(seed)), f"mutated fuzz_programs seed {seed}")


# ---- pieces lark lexes in particular ways ---------------------------------------------------

TRICKY = [
    "",
    "   \n\n  ",
    "// only a comment",
    "/* unclosed",
    "module m;",
    "module m;\n/* a\nb */ // c\n   fn",
    "module m; fn f() { let x = 1 /* c */ / 2 // d\n; }",
    "module m; fn f() { let x = a / b / c; let y = /re/; }",
    'module m; fn f() { let s = "a {b} {{c}} \\" d"; }',
    'module m; fn f() { let s = "unclosed',
    'module m; fn f() { let s = "a { b "c" }"; }',
    "module m; fn f() { sql! { select '}' from \"x}\" -- }\n where q'[}]' = /* } */ 1 }; }",
    "module m; fn f() { sql!{ { nested { } } } ; }",
    "module m; fn f() { sql! { unclosed",
    "module m; fn f() { for i in 0..=10 { } for j in 0..n { } }",
    "module m; fn fnord() { let fn = 1; }",
    "module m; pub record Record { record: Record }",
    "module m; fn f() { let x = 1.5.one(); }",
    'module m; fn f() { let x = `raw {} "`; }',
    "module m; fn f() { let x = \u00a0 1; }",
    "module m; fn f() { let x = 1; } }",
    "module m;\r\nfn f() {\r\n  let x = 1;\r\n}\r\n",
    "module m; fn f() { match x { 0 -> 1, _ => 2 } }",
    "module m; @retry(5, backoff_ms=100) pub fn f() { }",
    "module m; fn f() { jq! { .a } }",
    "\ufeffmodule m;",
    "module m; fn f() { let x = 1 ~ 2; }",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_texts_lex_alike(text: str) -> None:
    check(text, "tricky text")


# Where no terminal at all matches lark raises UnexpectedCharacters: never with pellc's grammar
# (STRING_TEXT or SQL_TEXT matches any character the other terminals do not), so a small
# grammar has it, and a terminal ignored without line breaks (matched as a token and dropped,
# not skipped), priorities and keywords.
TOY_GRAMMAR = r"""
start: stmt*
stmt: "let" NAME "=" expr ";" | "say" expr ";" | "if" expr "{" stmt* "}" | KEY ";"
expr: atom ("+" atom)*
atom: NAME | NUMBER | STRING | "(" expr ")"
KEY.2: /k[0-9]+/
NAME: /[a-z_]+/
NUMBER: /[0-9]+/
STRING: /"[^"\n]*"/
COMMENT: /#[^\n]*/
TILDE: "~"
%ignore /[ \t\n]+/
%ignore COMMENT
%ignore TILDE
"""
_TOY_PIECES = (
    "let", "say", "if", "x", "abc", "k1", "k", "12", '"s"', '"', "#c\n", "+", "=", ";", "{",
    "}", "(", ")", "~", "@", " ", "\n", "\t", "é",
)  # fmt: skip


def _toy(**options: Any) -> tuple[Lark, lalr.Parser]:
    toy = Lark(TOY_GRAMMAR, parser="lalr", lexer="contextual", **options)
    return toy, lalr.Parser(syntax._tables(toy))


def test_a_small_grammar_lexes_alike() -> None:
    toy, own = _toy()
    assert -1 not in own.state_modes
    rng = random.Random(15)
    outcomes: set[str] = set()
    for number in range(400):
        text = "".join(rng.choice(_TOY_PIECES) for _ in range(rng.randint(0, 30)))
        if number % 2:
            text = 'let x = 1; say x + (k2); if y { say "a" ; } ' + text
        check(text, "small grammar", (toy, own))
        try:
            toy.parse(text)
        except UnexpectedInput as error:
            outcomes.add(type(error).__name__)
        else:
            outcomes.add("parsed")
    assert {"parsed", "UnexpectedCharacters", "UnexpectedToken"} <= outcomes


def test_a_grammar_with_lexer_callbacks_is_left_to_lark() -> None:
    # lark calls them on the tokens it makes: pell.lexer makes no spec of such a lexer
    toy, own = _toy(lexer_callbacks={"NUMBER": lambda t: t})
    assert set(own.state_modes) == {-1}
    assert lalr_tokens("let x = 1;", own) is None
    assert lark_tokens("let x = 1;", toy) is not None
