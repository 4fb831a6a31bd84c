"""pell.lexer.FastLexer against lark's contextual lexer, differentially.

Both lex while pellc's parser (with its AST callbacks) drives them, so each lexes in the parser
states the other did, for as long as their tokens agree. Compared: every token (type, value and
all eight positions), the exception when one is raised (its type, position, expected and
allowed sets, token and token history, and pellc's diagnostic made from it), and lark's lexer
state left behind. Inputs: every .pell file under examples/ and tests/, deterministic seeded
mutations of them (characters and tokens deleted, inserted, duplicated and swapped, unclosed
strings and SQL, stray braces, odd unicode), and generated programs (tests/fuzz_programs.py).
`pytest -m fuzz` runs many more of them.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from conftest import ROOT
from fuzz_programs import generate
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken
from lark.lexer import ContextualLexer, Lexer, LexerState
from lark.utils import TextSlice

from pell import syntax
from pell.lexer import FastLexer

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

PARSER = syntax.grammar_parser()
_INSTALLED = PARSER.parser.lexer
CONTEXTUAL: ContextualLexer = (
    _INSTALLED.contextual if isinstance(_INSTALLED, FastLexer) else _INSTALLED
)
FAST = FastLexer(CONTEXTUAL)  # its own, so this file builds every mode it needs itself
BUILDER, TABLE = syntax.lark_callbacks(PARSER)  # slow to make: one for all runs


def _token(token: Token | None) -> tuple[Any, ...] | None:
    if token is None:
        return None
    return (
        token.type,
        token.value,
        token.start_pos,
        token.line,
        token.column,
        token.end_line,
        token.end_column,
        token.end_pos,
    )


class _Recorder(Lexer):
    """The lexer under test, its tokens kept as tuples."""

    def __init__(self, inner: Lexer) -> None:
        self.inner = inner
        self.tokens: list[tuple[Any, ...] | None] = []

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        for token in self.inner.lex(lexer_state, parser_state):
            self.tokens.append(_token(token))
            yield token


@dataclass
class Run:
    tokens: list[tuple[Any, ...] | None]
    error: tuple[Any, ...] | None
    lexer_state: tuple[Any, ...]


def _error(error: UnexpectedInput, text: str, parser: Lark) -> tuple[Any, ...]:
    """All an exception tells, and the diagnostic pellc makes of it."""
    details: tuple[Any, ...] = (
        type(error).__name__,
        error.pos_in_stream,
        error.line,
        error.column,
        str(syntax._syntax_diagnostic(error, text, parser)),
    )
    if isinstance(error, UnexpectedCharacters):
        details += (
            error.char,
            sorted(error.allowed),
            [_token(t) for t in error.token_history or []],
        )
    if isinstance(error, UnexpectedToken):
        details += (
            _token(error.token),
            sorted(error.expected),
            [_token(t) for t in error.token_history or []],
        )
    state = getattr(error, "state", None)
    details += (getattr(state, "position", state),)
    return details


def run(text: str | TextSlice[str], lexer: Lexer, parser: Lark = PARSER) -> Run:
    """Parse `text` as syntax.parse does, lexing with `lexer` (another parser: no callbacks)."""
    interactive = parser.parse_interactive(text)
    if parser is PARSER:
        assert isinstance(text, str)
        BUILDER.begin(text)
        interactive.parser_state.parse_conf.callbacks = TABLE
    else:
        interactive.parser_state.parse_conf.callbacks = {}
    recorder = _Recorder(lexer)
    interactive.lexer_thread.lexer = recorder
    error = None
    try:
        interactive.resume_parse()
    except UnexpectedInput as raised:
        error = _error(raised, text if isinstance(text, str) else text.text, parser)
    state = interactive.lexer_thread.state
    assert state is not None
    counter = state.line_ctr
    lexer_state = (
        counter.char_pos,
        counter.line,
        counter.column,
        counter.line_start_pos,
        _token(state.last_token),
    )
    return Run(recorder.tokens, error, lexer_state)


def check(
    text: str | TextSlice[str],
    label: str,
    lexers: tuple[Lexer, Lexer] = (CONTEXTUAL, FAST),
    parser: Lark = PARSER,
) -> Run:
    expected = run(text, lexers[0], parser)
    actual = run(text, lexers[1], parser)
    if actual != expected:
        same = 0
        for a, b in zip(actual.tokens, expected.tokens, strict=False):
            if a != b:
                break
            same += 1
        pytest.fail(
            f"{label}: FastLexer differs from lark's after {same} equal tokens\n"
            f"  text: {text!r}\n"
            f"  fast: {actual.tokens[same : same + 3]} {actual.error} {actual.lexer_state}\n"
            f"  lark: {expected.tokens[same : same + 3]} {expected.error} {expected.lexer_state}"
        )
    return actual


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
    result = check(module(50), "bench/synthetic.py")
    assert result.error is None and len(result.tokens) > 2000


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


def _check_mutations(seeds: range) -> tuple[int, set[str]]:
    texts = [path.read_text(encoding="utf-8") for path in SOURCES]
    errors = 0
    kinds: set[str] = set()
    for seed in seeds:
        rng = random.Random(seed)
        text = mutate(rng.choice(texts), rng)
        result = check(text, f"mutation seed {seed}")
        if result.error is not None:
            errors += 1
            kinds.add(result.error[0])
    return errors, kinds


def test_mutations_lex_alike() -> None:
    errors, kinds = _check_mutations(range(NORMAL_MUTATIONS))
    # the mutations reach the errors (UnexpectedToken: STRING_TEXT matches almost any
    # character, so lark turns almost every unexpected character into an unexpected token)
    assert errors > NORMAL_MUTATIONS // 3
    assert "UnexpectedToken" in kinds


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
# Where no terminal at all matches lark raises UnexpectedCharacters: never with pellc's grammar
# (STRING_TEXT or SQL_TEXT matches any character the other terminals do not), so a small
# grammar has it, and a terminal ignored without newlines (left to lark's loop, not the skip),
# priorities and keywords; and the same grammar with a lexer callback (left to lark).
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


@pytest.mark.parametrize("callbacks", [False, True], ids=["plain", "lexer callback"])
def test_a_small_grammar_lexes_alike(callbacks: bool) -> None:
    options: dict[str, Any] = {"lexer_callbacks": {"NUMBER": lambda t: t}} if callbacks else {}
    toy = Lark(TOY_GRAMMAR, parser="lalr", lexer="contextual", **options)
    contextual = toy.parser.lexer
    assert isinstance(contextual, ContextualLexer)
    lexers = (contextual, FastLexer(contextual))
    rng = random.Random(15)
    kinds: set[str | None] = set()
    for number in range(400):
        text = "".join(rng.choice(_TOY_PIECES) for _ in range(rng.randint(0, 30)))
        if number % 2:
            text = 'let x = 1; say x + (k2); if y { say "a" ; } ' + text
        result = check(text, "small grammar", lexers, toy)
        kinds.add(result.error[0] if result.error else None)
    assert {None, "UnexpectedCharacters", "UnexpectedToken"} <= kinds
    # a slice of a text: lark starts counting lines at its start
    text = 'junk @ "\n\n let x = 1;\n say x + 2; # c\n if y { say "a"; } \n@'
    for start in range(len(text) - 3):
        for end in (len(text), -1, -3):
            check(TextSlice(text, start, end), "small grammar, a slice", lexers, toy)


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_texts_lex_alike(text: str) -> None:
    check(text, "tricky text")
