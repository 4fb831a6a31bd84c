"""Source text -> AST: lark's LALR parser (contextual lexer, sped up by pell.lexer), with callbacks that build pell.ast nodes."""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import pickle
import re
import sys
import tempfile
import threading
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import lark
from lark import Lark, Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.parsers.lalr_analysis import Reduce, Shift

from pell import ast
from pell import lexer as lexer_module
from pell.ast_builder import AstBuilder, Built, token_span
from pell.diagnostics import Diagnostic
from pell.lexer import ModeSpec, mode_specs
from pell.lexer import install as install_fast_lexer
from pell.resources import cache_dir, resource_dir

_LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "strict": True,
    "propagate_positions": False,  # spans come from the tokens, in AstBuilder's callbacks
    "maybe_placeholders": True,
}


# pell.lexer.FastLexer in place of lark's contextual lexer: the same tokens and errors in about
# 40% of the time (tests/test_lexer.py compares the two); False lexes with lark's own
FAST_LEXER = True


@functools.cache
def grammar_parser() -> Lark:
    """The Lark parser for grammar/pell.lark, built once per process, lexing with FastLexer.

    lark is built with its contextual lexer, whose per-state terminal sets FastLexer reuses;
    so the cache holds what it always held (a custom lexer class would be part of lark's
    options, and its cache key, but is given no parse table to find those sets in).
    """
    parser, specs = _analysed_grammar()
    if FAST_LEXER:
        install_fast_lexer(parser, specs)
    return parser


# FastLexer's modes of a parser, worked out before (pell.lexer.mode_specs), by mode_key
ModeSpecs = dict[tuple[str, ...], ModeSpec]


def _analysed_grammar() -> tuple[Lark, ModeSpecs]:
    """The Lark parser for grammar/pell.lark, with lark's own contextual lexer, and the specs
    of FastLexer's modes when they were made before (else none: FastLexer makes them).

    The analysed grammar is cached in the user's cache directory under a name made of a hash
    of the grammar and the options, and the lark and Python versions (lark checks its own hash
    again on load). A new cache file is written beside its final name and renamed, so
    processes sharing the directory never read half a file; when the directory cannot be
    written, lark caches in the temporary directory instead. Beside it, a snapshot of the
    parser lark builds from it, with the mode specs (`_load_snapshot`), makes later start-ups
    quicker still."""
    grammar = (resource_dir("grammar") / "pell.lark").read_text(encoding="utf-8")
    options = repr(sorted(_LARK_OPTIONS.items()))
    key = hashlib.sha256((grammar + options).encode("utf-8")).hexdigest()[:16]
    version = f"lark{lark.__version__}-py{sys.version_info[0]}.{sys.version_info[1]}"
    cache = cache_dir() / f"grammar-{key}-{version}.cache"
    snapshot = _snapshot_path(cache)
    loaded = _load_snapshot(snapshot) if snapshot is not None else None
    if loaded is not None:
        return loaded
    if cache.exists():
        parser = Lark(grammar, cache=str(cache), **_LARK_OPTIONS)
        return parser, _save_snapshot(parser, snapshot) if snapshot is not None else {}
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=cache.parent, prefix=".grammar-", suffix=".tmp")
        os.close(fd)
    except OSError:
        return Lark(grammar, cache=True, **_LARK_OPTIONS), {}  # lark's own file in the temp dir
    try:
        parser = Lark(grammar, cache=temporary, **_LARK_OPTIONS)
        os.replace(temporary, cache)
    except OSError:
        parser = Lark(grammar, **_LARK_OPTIONS)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return parser, {}


# ---- the parser snapshot -----------------------------------------------------
# Loading lark's cache rebuilds the parser object by object in Python (about 50 ms here, a
# sixth of pellc's start-up); the same objects pickled whole load in about a fifth of that.
# The snapshot holds lark's objects only, keyed like lark's cache (grammar, options, lark and
# Python versions) and read from the same directory that lark's own pickled cache is read
# from. Some members are not pickled but named: modules (lark keeps the `re` module it lexes
# with) and the parse table's two actions, which lark's parser tells apart by identity
# (`action is Shift`); and the parse-tree callbacks (functions lark makes) are made again on
# load, as lark's own loader makes them.
_SHARED: dict[str, object] = {"Shift": Shift, "Reduce": Reduce}
# What writes and reads the snapshot and its mode specs: this module and pell.lexer.
_SNAPSHOT_CODE = (__file__, lexer_module.__file__)


class _SnapshotPickler(pickle.Pickler):
    def persistent_id(self, obj: object) -> str | None:
        if isinstance(obj, types.ModuleType):
            return f"module:{obj.__name__}"
        if obj is Shift or obj is Reduce:
            return f"action:{obj.name}"
        return None


class _SnapshotUnpickler(pickle.Unpickler):
    def persistent_load(self, pid: object) -> object:
        if pid in ("module:re", "module:regex"):
            return importlib.import_module(str(pid).removeprefix("module:"))
        if pid in ("action:Shift", "action:Reduce"):
            return _SHARED[str(pid).removeprefix("action:")]
        raise pickle.UnpicklingError(f"unexpected {pid!r} in the parser snapshot")


def _snapshot_path(cache: Path) -> Path | None:
    """Where the snapshot of the parser lark loads from `cache` is kept. It holds mode specs
    too: it is pellc's own, so pellc's code is part of its name. None when that code cannot be
    read (no snapshot then)."""
    try:
        code = hashlib.sha256(b"".join(Path(f).read_bytes() for f in _SNAPSHOT_CODE))
    except OSError:
        return None
    return cache.with_name(f"{cache.stem}-{code.hexdigest()[:12]}.parser")


def _callback_holders(parser: Lark) -> tuple[Any, Any]:
    """The parser configuration and the LALR parser: where lark keeps its callbacks, besides
    `parser._callbacks`."""
    frontend: Any = parser.parser
    return frontend.parser_conf, frontend.parser.parser


def _load_snapshot(path: Path) -> tuple[Lark, ModeSpecs] | None:
    """The parser pickled at `path`, its callbacks made again, and its mode specs; None when
    there is none, or it cannot be read (it is written again then)."""
    try:
        with path.open("rb") as handle:
            loaded = _SnapshotUnpickler(handle).load()
        if not isinstance(loaded, tuple) or len(loaded) != 2:
            return None
        parser, specs = loaded
        if not isinstance(parser, Lark) or not isinstance(specs, dict):
            return None
        parser._prepare_callbacks()
        for holder in _callback_holders(parser):
            holder.callbacks = parser._callbacks
    except Exception:  # missing, damaged, or from another lark: lark's cache then
        return None
    return parser, specs


def _save_snapshot(parser: Lark, path: Path) -> ModeSpecs:
    """Pickle `parser` (lark's own, before FastLexer is installed) and the specs of its modes
    to `path`, atomically; the specs. A cache that cannot be written is not an error."""
    specs = mode_specs(parser)
    holders = _callback_holders(parser)
    callbacks = parser._callbacks
    parser._callbacks = {}
    for holder in holders:
        holder.callbacks = {}
    try:
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".parser-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                _SnapshotPickler(handle, protocol=pickle.HIGHEST_PROTOCOL).dump((parser, specs))
            os.replace(temporary, path)
        finally:
            Path(temporary).unlink(missing_ok=True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):
        pass
    finally:
        parser._callbacks = callbacks
        for holder in holders:
            holder.callbacks = callbacks
    return specs


def parse(text: str) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Parse Pell source into a Module, or return the syntax diagnostics."""
    parser = grammar_parser()
    builder = getattr(_per_thread, "builder", None)
    if builder is None:  # the callback table is made once per thread, not once per file
        builder = _per_thread.builder = AstBuilder(parser.rules)
    builder.begin(text)
    interactive = parser.parse_interactive(text)
    # lark's own parser loop, with our callbacks in place of its tree builder's
    interactive.parser_state.parse_conf.callbacks = builder.table
    try:
        built = cast(Callable[[], Built], interactive.resume_parse)()  # lark leaves it untyped
    except UnexpectedInput as error:
        return None, [_syntax_diagnostic(error, text, parser)]
    module = built[0]
    assert isinstance(module, ast.Module)
    if any(d.code == "unsupported" for d in builder.diagnostics):
        # public Pell that pellc does not lower yet, left out of the AST as it was built: the
        # rest is not checked, where every use of what was left out would be an error too
        return None, sorted(builder.diagnostics, key=lambda d: d.span.start)
    return module, builder.diagnostics


_per_thread = threading.local()


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


def _unclosed_opener(error: UnexpectedToken) -> Token | None:
    """At the end of the file: the innermost construct still open, from the parser's stack."""
    parser = getattr(error, "interactive_parser", None)
    stack = getattr(getattr(parser, "parser_state", None), "value_stack", [])
    closers = {"RBRACE": "LBRACE", "RPAR": "LPAR", "RSQB": "LSQB"}
    pending: list[str] = []
    for value in reversed(stack):
        if not isinstance(value, Token):
            continue
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
    "match": "`match` is not supported yet",
    "sealed": "sealed types are not supported yet",
    "aggregate": "aggregates are not supported yet",
    "type": "object types (`type Name { }`) are not supported yet",
    "jq": "jq queries (`jq! { }`) are not supported yet",
    "json": "JSON literals (`json! { }`) are not supported yet",
    "unsafe": "`unsafe fn` (dynamic SQL) is not supported yet",
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The grammar's keywords of those constructs: a syntax error inside one (the public compiler's
# forms parse) is reported as the construct being unsupported, at its keyword.
_OUT_OF_SCOPE_KEYWORDS = {
    "MATCH": "match",
    "SEALED": "sealed",
    "TYPE": "type",
    "AGGREGATE": "aggregate",
    "UNSAFE": "unsafe",
}


def _inside_out_of_scope(error: UnexpectedInput) -> Diagnostic | None:
    """The `unsupported` diagnostic of the out-of-scope construct the parse failed inside."""
    parser = getattr(error, "interactive_parser", None)
    stack = getattr(getattr(parser, "parser_state", None), "value_stack", [])
    for value in stack:
        if isinstance(value, Token) and value.type in _OUT_OF_SCOPE_KEYWORDS:
            message = _OUT_OF_SCOPE_WORDS[_OUT_OF_SCOPE_KEYWORDS[value.type]]
            return Diagnostic.of("unsupported", message, token_span(value))
    return None


_MODULE_LINE = re.compile(r"^\s*(?:@[^\n]*\n\s*)*module\b", re.MULTILINE)


def _out_of_scope(error: UnexpectedInput, text: str) -> Diagnostic | None:
    """An `unsupported` diagnostic when the parse failed on a construct out of scope."""
    position = getattr(error, "pos_in_stream", None)
    if isinstance(error, UnexpectedToken) and error.token.start_pos is not None:
        position = error.token.start_pos
    if position is None:
        return None
    if _MODULE_LINE.search(text) is None and text.strip():
        start = position
        return Diagnostic.of(
            "unsupported",
            "a file without a `module` line (a script) is not supported: public Pell runs "
            "one as an anonymous block (`pell exec`), not a package; start it with "
            "`module name;`",
            ast.Span(start, start),
        )
    if text.startswith("<", position) and text[:position].rstrip().endswith("::"):
        before = text[:position].rstrip()[:-2]
        qualified = re.search(r"([A-Za-z_]\w*)\s*(?:::\s*[A-Za-z_]\w*\s*)*$", before)
        if qualified is not None and qualified.group(1) in ("json", "re", "pivot"):
            start = qualified.start(1)
            library = qualified.group(1)
            return Diagnostic.of(
                "unsupported",
                f"`{library}::` (a module of the public Pell library) is not supported yet",
                ast.Span(start, start + len(library)),
            )
    inside = _inside_out_of_scope(error)
    if inside is not None:
        return inside
    if text.startswith("|>", position):
        return Diagnostic.of(
            "unsupported", "`|>` pipelines are not supported yet", ast.Span(position, position + 2)
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
        return Diagnostic.of(
            "unsupported",
            "regex literals (`/pattern/`) are not supported yet",
            ast.Span(position, position + 1),
        )
    return None


def _syntax_diagnostic(error: UnexpectedInput, text: str, parser: Lark) -> Diagnostic:
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
