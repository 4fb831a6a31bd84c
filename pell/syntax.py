"""Source text -> AST: pellc's own LALR parser (pell.lalr) from tables lark worked out, or
lark's LALR parser (contextual lexer), with callbacks that build pell.ast nodes.

A text parses first with pell.lalr, which needs no lark: a successful parse imports none of
it. pell.lalr rejects whatever lark would not parse as it does (a syntax error, mostly), and
the text is parsed again with lark, whose exceptions make the syntax diagnostics."""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import marshal
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pell import ast, lalr
from pell.ast_builder import AstBuilder, Built, Callback, _Inlined, token_span
from pell.diagnostics import Diagnostic
from pell.lalr import Token
from pell.resources import cache_dir, resource_dir

if TYPE_CHECKING:  # imported when lark parses: pellc's own parser needs neither
    from lark import Lark
    from lark import Token as LarkToken
    from lark.exceptions import UnexpectedInput, UnexpectedToken

_LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "strict": True,
    "propagate_positions": False,  # spans come from the tokens, in AstBuilder's callbacks
    "maybe_placeholders": True,
}

Parsed = tuple[ast.Module | None, list[Diagnostic]]


def parse(text: str) -> Parsed:
    """Parse Pell source into a Module, or return the syntax diagnostics."""
    built = _fast_built(text)
    if built is None:  # pellc's own parser has no tables, or rejects the text: lark's verdict
        return _parse_with_lark(text)
    return _result(*built)


def _result(built: Built, builder: AstBuilder) -> Parsed:
    module = built[0]
    assert isinstance(module, ast.Module)
    if any(d.code in ("unsupported", "syntax") for d in builder.diagnostics):
        # public Pell that pellc does not lower yet, or a misshapen `|>` pipeline, left out of
        # the AST as it was built: the rest is not checked, where every use of what was left
        # out would be an error too
        return None, sorted(builder.diagnostics, key=lambda d: d.span.start)
    return module, builder.diagnostics


_per_thread = threading.local()  # AstBuilders: their callback tables are made once per thread


def _fast_built(text: str) -> tuple[Built, AstBuilder] | None:
    """The start rule's value with pell.lalr, and its builder; None when there are no tables
    or pell.lalr rejects the text."""
    parser = _fast_parser()
    if parser is None:
        return None
    held = getattr(_per_thread, "fast_builder", None)
    if held is None or held[0] is not parser:
        held = _per_thread.fast_builder = (parser, AstBuilder(parser.rules))
    builder: AstBuilder = held[1]
    builder.begin(text)
    try:
        built: Built = parser.parse(text, builder.table)
    except lalr.Rejected:
        return None
    return built, builder


def _parse_with_lark(text: str) -> Parsed:
    """`parse` with lark's parser: its syntax errors made diagnostics."""
    from lark.exceptions import UnexpectedInput

    try:
        built, builder = _lark_built(text)
    except UnexpectedInput as error:
        return None, [_syntax_diagnostic(error, text, grammar_parser())]
    return _result(built, builder)


def _lark_built(text: str) -> tuple[Built, AstBuilder]:
    """The start rule's value with lark's parser, and its builder; lark's UnexpectedInput at a
    syntax error."""
    parser = grammar_parser()
    held = getattr(_per_thread, "lark_builder", None)
    if held is None or held[0] is not parser:
        held = _per_thread.lark_builder = (parser, *lark_callbacks(parser))
    _, builder, table = held
    builder.begin(text)
    interactive = parser.parse_interactive(text)
    # lark's own parser loop, with our callbacks in place of its tree builder's
    interactive.parser_state.parse_conf.callbacks = table
    built = cast(Callable[[], Built], interactive.resume_parse)()  # lark leaves it untyped
    return built, builder


def lark_callbacks(parser: Lark) -> tuple[AstBuilder, dict[Any, Callback]]:
    """An AstBuilder for lark's parser loop, and its callbacks by lark's rules: they take
    pell.lalr Tokens, as in pellc's own parser, in place of lark's."""
    from lark import Token as LarkToken

    def taking_our_tokens(callback: Callback) -> Callback:
        def convert(children: list[Any]) -> Any:
            return callback([_own(c) if isinstance(c, LarkToken) else c for c in children])

        return convert

    builder = AstBuilder([_rule(rule) for rule in parser.rules])
    table = {
        rule: taking_our_tokens(c) for rule, c in zip(parser.rules, builder.table, strict=True)
    }
    return builder, table


def _own(token: LarkToken | Token) -> Token:
    """A token of lark's as one of pell.lalr's (one of ours as it is)."""
    if isinstance(token, Token):
        return token
    start = token.start_pos or 0
    return Token.of(
        token.type, token.value, start, start if token.end_pos is None else token.end_pos
    )


def _rule(rule: Any) -> lalr.Rule:
    """One of lark's analysed rules, as pell.lalr keeps it."""
    options = rule.options
    return lalr.Rule(
        str(rule.origin.name),
        tuple(
            lalr.Symbol(str(s.name), s.is_term, s.is_term and s.filter_out) for s in rule.expansion
        ),
        None if rule.alias is None else str(rule.alias),
        bool(options.expand1),
        bool(options.keep_all_tokens),
        tuple(bool(flag) for flag in options.empty_indices or ()),
        None if options.template_source is None else str(options.template_source),
    )


# ---- lark's parser ------------------------------------------------------------


@functools.cache
def grammar_parser() -> Lark:
    """The Lark parser for grammar/pell.lark, with lark's contextual lexer, built once per
    process. pell.lalr's tables are exported from it when there are none (or they cannot be
    read)."""
    parser = _lark_parser()
    if _fast_parser() is None:
        tables = _tables_path()
        if tables is not None and _save_tables(parser, tables):
            _fast_parser.cache_clear()  # the rest of this process parses with them
    return parser


def _grammar_cache(lark_version: str) -> Path:
    """lark's cache of the analysed grammar: named by a hash of the grammar and the options,
    and the lark and Python versions (lark checks its own hash again on load)."""
    grammar = (resource_dir("grammar") / "pell.lark").read_text(encoding="utf-8")
    options = repr(sorted(_LARK_OPTIONS.items()))
    key = hashlib.sha256((grammar + options).encode("utf-8")).hexdigest()[:16]
    version = f"lark{lark_version}-py{sys.version_info[0]}.{sys.version_info[1]}"
    return cache_dir() / f"grammar-{key}-{version}.cache"


def _lark_parser() -> Lark:
    """The Lark parser for grammar/pell.lark, its analysed grammar cached in the user's cache
    directory (`_grammar_cache`). A new cache file is written beside its final name and
    renamed, so processes sharing the directory never read half a file; when the directory
    cannot be written, lark caches in the temporary directory instead."""
    import tempfile

    import lark
    from lark import Lark

    grammar = (resource_dir("grammar") / "pell.lark").read_text(encoding="utf-8")
    cache = _grammar_cache(lark.__version__)
    if cache.exists():
        return Lark(grammar, cache=str(cache), **_LARK_OPTIONS)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=cache.parent, prefix=".grammar-", suffix=".tmp")
        os.close(fd)
    except OSError:
        return Lark(grammar, cache=True, **_LARK_OPTIONS)  # lark's own file in the temp dir
    try:
        parser = Lark(grammar, cache=temporary, **_LARK_OPTIONS)
        os.replace(temporary, cache)
    except OSError:
        parser = Lark(grammar, **_LARK_OPTIONS)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return parser


# ---- pellc's own parser's tables -------------------------------------------------------------
# Exported from lark's parser by grammar_parser, beside lark's cache and keyed as it is, and by
# a hash of the code that makes and reads them; read with marshal: loading them imports nothing.

# What makes and reads the tables: this module, pell.lexer and pell.lalr (pell.lexer imports
# lark: it is not imported to find its file).
_TABLES_CODE = (__file__, str(Path(__file__).with_name("lexer.py")), lalr.__file__)


def _lark_version() -> str | None:
    """The version of the lark that `import lark` imports, without importing it: from its
    `__version__ = "..."` line. None when that cannot be found."""
    imported = sys.modules.get("lark")
    if imported is not None:
        return str(imported.__version__)
    try:
        spec = importlib.util.find_spec("lark")
        origin = spec.origin if spec is not None else None
        if origin is None:
            return None
        found = re.search(
            r"^__version__\s*(?::\s*str\s*)?=\s*[\"']([^\"']+)[\"']",
            Path(origin).read_text(encoding="utf-8"),
            re.MULTILINE,
        )
    except (OSError, ImportError, ValueError):
        return None
    return found.group(1) if found is not None else None


def _tables_path() -> Path | None:
    """Where pell.lalr's tables are kept: beside lark's cache, named as it is and by a hash of
    pellc's code that makes them. None when lark's version or that code cannot be read."""
    version = _lark_version()
    if version is None:
        return None
    try:
        code = hashlib.sha256(b"".join(Path(f).read_bytes() for f in _TABLES_CODE))
    except OSError:
        return None
    cache = _grammar_cache(version)
    return cache.with_name(f"{cache.stem}-{code.hexdigest()[:12]}.tables")


@functools.cache
def _fast_parser() -> lalr.Parser | None:
    """pellc's own parser, from its tables; None when there are none, or they cannot be read
    (grammar_parser writes them again)."""
    try:
        path = _tables_path()
        return lalr.Parser(marshal.loads(path.read_bytes())) if path is not None else None
    except Exception:  # missing, damaged, or of another format: lark parses
        return None


def _tables(parser: Lark) -> lalr.TableData:
    """pell.lalr's tables of `parser` (built with lark's contextual lexer), and the modes of
    its lexers (pell.lexer.mode_specs)."""
    from lark.lexer import BasicLexer, ContextualLexer
    from lark.parsers.lalr_analysis import Shift

    from pell.lexer import mode_key, mode_specs, sre_code

    table = parser.parser.parser.parser.parse_table
    number = {rule: index for index, rule in enumerate(parser.rules)}
    states: list[dict[str, int]] = []
    for state in range(len(table.states)):  # lark's IntParseTable numbers them from 0
        actions = table.states[state]
        states.append(
            {
                symbol: target if action is Shift else ~number[target]
                for symbol, (action, target) in actions.items()
            }
        )
    contextual = parser.parser.lexer
    assert isinstance(contextual, ContextualLexer)
    specs = mode_specs(parser)
    keys = list(specs)
    state_modes = []
    for state in range(len(states)):
        lexer = contextual.lexers[state]
        key = mode_key(lexer) if isinstance(lexer, BasicLexer) else None
        state_modes.append(keys.index(key) if key in specs else -1)
    rules = []
    for rule in map(_rule, parser.rules):  # as plain tuples: marshal takes no NamedTuple
        expansion = tuple(tuple(symbol) for symbol in rule.expansion)
        rules.append((rule.origin, expansion, *rule[2:]))
    start, end = table.start_states["start"], table.end_states["start"]
    modes = [specs[key] for key in keys]
    codes = [sre_code(pattern) for pattern, _ in modes]
    return (lalr.FORMAT, start, end, states, rules, modes, state_modes, lalr.SRE_MAGIC, codes)


def _save_tables(parser: Lark, path: Path) -> bool:
    """Write pell.lalr's tables of `parser` to `path`, atomically; whether they were (a cache
    that cannot be written is not an error)."""
    import tempfile

    try:
        data = _tables(parser)
        lalr.Parser(data)  # what a load checks
    except Exception:  # a parser lark made otherwise than pellc expects: lark parses
        return False
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".pellc-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                marshal.dump(data, handle)
            os.replace(temporary, path)
        finally:
            Path(temporary).unlink(missing_ok=True)
    except Exception:  # no directory, no room, or what marshal cannot write
        return False
    return True


# ---- syntax errors -----------------------------------------------------------

_EXPRESSION_STARTS = {"NAME", "NUMBER", "QUOTE", "SQL_OPEN", "LPAR"}

_TOKEN_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "QUOTE": "a string",
    "RAW_STRING": "a raw string",
    "SQL_OPEN": "`sql! {`",
    "$END": "the end of the file",
    "RANGE": "`..`",
    "STRING_TEXT": "string text",
}


def _describe_terminal(name: str, parser: Lark) -> str:
    if name in _TOKEN_WORDS:
        return _TOKEN_WORDS[name]
    try:
        pattern = parser.get_terminal(name).pattern
    except KeyError:
        return name.lower()
    return f"`{pattern.value}`" if pattern.type == "str" else name.lower()


def _describe_expected(expected: set[str], parser: Lark) -> str:
    if expected >= _EXPRESSION_STARTS:
        return "an expression"
    words = sorted({_describe_terminal(name, parser) for name in expected})
    if len(words) > 6:
        return ", ".join(words[:6]) + " or another token"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


_UNCLOSED = {
    "SQL_OPEN": "this `sql! {` block has no matching `}`",
    "QUOTE": "this string has no closing quote",
    "LBRACE": "this `{` has no matching `}`",
    "LPAR": "this `(` has no matching `)`",
    "LSQB": "this `[` has no matching `]`",
}


def _stack_tokens(error: UnexpectedInput) -> list[Token]:
    """The tokens on lark's value stack at `error` (lark's, or ours a callback passed up)."""
    from lark import Token as LarkToken

    parser = getattr(error, "interactive_parser", None)
    stack = getattr(getattr(parser, "parser_state", None), "value_stack", [])
    return [_own(value) for value in stack if isinstance(value, Token | LarkToken)]


def _unclosed_opener(error: UnexpectedToken) -> Token | None:
    """At the end of the file: the innermost construct still open, from the parser's stack."""
    closers = {"RBRACE": "LBRACE", "RPAR": "LPAR", "RSQB": "LSQB"}
    pending: list[str] = []
    for value in reversed(_stack_tokens(error)):
        if value.type in closers:
            pending.append(closers[value.type])
        elif pending and value.type == pending[-1]:
            pending.pop()
        elif value.type in _UNCLOSED:
            return value
    return None


def _first_word(value: str) -> str:
    """A token's first word, at most 20 characters: what a message quotes of it."""
    word = value.strip().split()[0] if value.strip() else value
    return word[:20]


def _shown(value: str) -> str:
    """A token as the user wrote it: its first word, quoted (escaped when not printable)."""
    word = _first_word(value)
    suffix = "..." if len(value.strip()) > len(word) and len(word) == 20 else ""
    return f"`{word}{suffix}`" if word.isprintable() and "`" not in word else repr(word)


# Constructs of the wider Pell language that pellc does not take yet (language.md section 10),
# by the word that starts them, with the message to give.
_OUT_OF_SCOPE_WORDS = {
    "json": "JSON literals (`json! { }`) are not supported yet",
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _out_of_scope(error: UnexpectedInput, text: str) -> Diagnostic | None:
    """An `unsupported` diagnostic when the parse failed on a construct out of scope."""
    from lark.exceptions import UnexpectedToken

    position = getattr(error, "pos_in_stream", None)
    if isinstance(error, UnexpectedToken) and error.token.start_pos is not None:
        position = error.token.start_pos
    if position is None:
        return None
    if text.startswith("|>", position):
        return Diagnostic.of(
            "syntax",
            "a `|>` pipeline cannot stand here (a condition or a loop's source): give it a "
            "name with `let` first",
            ast.Span(position, position + 2),
        )
    # The word at the error (`sealed type`), or just before it (`match x`, `jq! {`).
    here = _WORD.match(text, position)
    words = [(here.group(), position)] if here else []
    line_start = text.rfind("\n", 0, position) + 1
    previous = list(_WORD.finditer(text, line_start, position))
    if previous and not text[previous[-1].end() : position].strip(" \t!"):
        words.append((previous[-1].group(), previous[-1].start()))
    for word, start in words:
        if word in _OUT_OF_SCOPE_WORDS:
            message = _OUT_OF_SCOPE_WORDS[word]
            return Diagnostic.of("unsupported", message, ast.Span(start, start + len(word)))
    if (
        isinstance(error, UnexpectedToken)
        and str(error.token.value).startswith("/")
        and set(error.expected) >= _EXPRESSION_STARTS
    ):
        # the REGEX terminal (grammar/pell.lark) did not match: no pattern, or no closing `/`
        return Diagnostic.of(
            "syntax",
            "a regex literal (`/pattern/`) needs a pattern and its closing `/` on the same line",
            ast.Span(position, position + 1),
        )
    return None


def _parsed_end(error: UnexpectedInput) -> int | None:
    """Where the text the parser took before `error` ends: the end of the last value on its
    stack (a token, or what a rule built of tokens: its (value, start, end))."""
    from lark import Token as LarkToken

    parser = getattr(error, "interactive_parser", None)
    stack = getattr(getattr(parser, "parser_state", None), "value_stack", [])
    for value in reversed(stack):
        if isinstance(value, Token | LarkToken) and value.end_pos is not None:
            return int(value.end_pos)
        if type(value) is tuple and len(value) == 3 and value[2] >= 0:
            return int(value[2])
        if isinstance(value, _Inlined) and value.end >= 0:
            return value.end
    return None


def _missing_semicolon(
    error: UnexpectedToken, text: str, start: int, found: str
) -> Diagnostic | None:
    """A `;` the parser wanted before a token on a later line: the line that lacks it is the
    one before, so it is reported at its end, where the `;` goes (not at the next statement)."""
    if "SEMICOLON" not in error.expected:
        return None
    end = _parsed_end(error)
    if end is None or "\n" not in text[end:start]:
        return None
    line = text.count("\n", 0, start) + 1
    return Diagnostic.of(
        "syntax",
        f"missing `;` at the end of this line (the next token is {found}, on line {line})",
        ast.Span(end, end),
    )


def _unclosed_comment(error: UnexpectedInput, text: str) -> Diagnostic | None:
    """A `/*` with no `*/` after it: COMMENT (grammar/pell.lark) does not match, and the lexer
    reads a `/`, which the parse then fails on as a regex literal's opening, or as a division
    followed by `*`."""
    from lark.exceptions import UnexpectedToken

    position = getattr(error, "pos_in_stream", None)
    if isinstance(error, UnexpectedToken) and error.token.start_pos is not None:
        position = error.token.start_pos
    if position is None:
        return None
    if not text.startswith("/*", position):
        position -= 1  # the error is at the `*`
    if position < 0 or not text.startswith("/*", position) or "*/" in text[position + 2 :]:
        return None
    return Diagnostic.of(
        "syntax",
        "this `/*` comment is never closed: `*/` is missing",
        ast.Span(position, position + 2),
    )


def _syntax_diagnostic(error: UnexpectedInput, text: str, parser: Lark) -> Diagnostic:
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

    unclosed = _unclosed_comment(error, text)
    if unclosed is not None:
        return unclosed
    unsupported = _out_of_scope(error, text)
    if unsupported is not None:
        return unsupported
    at_end = isinstance(error, UnexpectedEOF) or (
        isinstance(error, UnexpectedToken) and error.token.type == "$END"
    )
    if at_end:
        opener = _unclosed_opener(error) if isinstance(error, UnexpectedToken) else None
        if opener is not None:
            return Diagnostic.of(
                "syntax",
                f"unexpected end of file: {_UNCLOSED[opener.type]}",
                token_span(opener),
            )
        end = len(text)
        return Diagnostic.of("syntax", "unexpected end of file", ast.Span(end, end))
    if isinstance(error, UnexpectedToken):
        token = error.token
        start = token.start_pos if token.start_pos is not None else 0
        found = _shown(str(token.value))
        missing = _missing_semicolon(error, text, start, found)
        if missing is not None:
            return missing
        expected = _describe_expected(set(error.expected), parser)
        hints: tuple[str, ...] = ()
        if "STRING_TEXT" in error.expected and str(token.value).startswith(("{", "}")):
            hints = ("a literal brace in a string is written `{{` or `}}`",)
        return Diagnostic.of(
            "syntax",
            f"unexpected {found}; expected {expected}",
            ast.Span(start, min(len(text), start + max(1, len(_first_word(str(token.value)))))),
            hints=hints,
        )
    if isinstance(error, UnexpectedCharacters):
        position = error.pos_in_stream if error.pos_in_stream is not None else 0
        char = text[position] if position < len(text) else ""
        return Diagnostic.of(
            "syntax", f"unexpected character {_shown(char)}", ast.Span(position, position + 1)
        )
    return Diagnostic.of("syntax", "the source could not be parsed", ast.Span(0, 0))


# ---- AST building ------------------------------------------------------------
