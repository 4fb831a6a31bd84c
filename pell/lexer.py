"""The modes of lark's contextual lexer for pellc's grammar, as pell.lalr lexes with them.

lark's ContextualLexer keeps one BasicLexer per LALR state, each scanning with one regex of
the terminals that state accepts (plus the ignored WS and COMMENT), in lark's priority order.
`mode_specs` takes each one's terminal set and order from lark's own BasicLexers (so a grammar
change needs no change here) and makes of it one regex (a ModeSpec) that
  1. skips, in the same match, every run of ignored text lark would skip, and
  2. then matches the next token with lark's alternation, in lark's order;
with a table of its groups: each one's terminal, and the keywords lark looks up from it.
pell.syntax exports them with lark's parse table; pell.lalr lexes with them where lark is not
imported, yielding exactly the tokens lark's lexer yields (tests/test_lexer.py compares them).
"""

from __future__ import annotations

import array
import functools
import importlib
import re
from typing import Any

from lark import Lark
from lark.lexer import BasicLexer, ContextualLexer, PatternStr, TerminalDef

from pell.lalr import END_GROUP, END_OF_TEXT, ModeSpec, SreCode, Terminal, precompiled


def mode_key(lexer: BasicLexer) -> tuple[str, ...]:
    """What tells one parser's lexers apart: their terminals, in lark's order."""
    return tuple(t.name for t in lexer.terminals)


def mode_specs(parser: Lark) -> dict[tuple[str, ...], ModeSpec]:
    """The spec of each of the modes of `parser` (built with lark's contextual lexer) that
    pell.lalr can lex in as lark does (the others are left to lark)."""
    contextual = getattr(parser.parser, "lexer", None)
    if not isinstance(contextual, ContextualLexer):
        return {}
    specs = {}
    for lexer in {id(lexer): lexer for lexer in contextual.lexers.values()}.values():
        if isinstance(lexer, BasicLexer):
            try:
                specs[mode_key(lexer)] = _mode_spec(lexer)
            except _Unsupported:
                continue
    return specs


def _mode_spec(lexer: BasicLexer) -> ModeSpec:
    """The regex and group table of the mode of `lexer`; _Unsupported when lark lexes in a
    way it does not copy."""
    if lexer.re is not re or lexer.user_callbacks or lexer.g_regex_flags:
        raise _Unsupported("the regex module, lexer callbacks or regex flags")
    terminals, keyword_tables = _scanner_terminals(lexer)
    ignore = lexer.ignore_types
    skipped = ignore & lexer.newline_types  # WS, COMMENT: other ignored ones match as tokens
    regexps = {t.name: t.pattern.to_regexp() for t in terminals}
    firsts = {name: _first_chars(regexp) for name, regexp in regexps.items()}
    # 1. The skip. lark skips an ignored terminal at a position when it is the first of
    # its alternatives to match there: when no token terminal before it matches there
    # too (the negative lookahead, of the terminals that can start with a character the
    # ignored one can start with). The atomic group keeps the engine from backtracking
    # into what was skipped. Group 1 ends where the token starts.
    steps = []
    for index, terminal in enumerate(terminals):
        if terminal.name not in skipped:
            continue
        guard = [
            f"(?:{regexps[t.name]})"
            for t in terminals[:index]
            if t.name not in ignore and not _disjoint(firsts[t.name], firsts[terminal.name])
        ]
        lookahead = f"(?!{'|'.join(guard)})" if guard else ""
        steps.append(f"{lookahead}(?:{regexps[terminal.name]})")
    skip = f"((?>(?:{'|'.join(steps)})*))" if steps else "()"
    # 2. The token: lark's alternation, its terminals as named groups, in lark's order.
    # Where the skip stopped no skipped terminal is first to match, so they are left out.
    # A terminal's first character goes before its group where that is the same regex:
    # the engine then passes over the alternative on that character without opening the
    # group (the thirty-odd alternatives of a state go about 2.5 times faster).
    branches = []
    for terminal in terminals:
        if terminal.name in skipped:
            continue
        first, rest = _split_first(regexps[terminal.name])
        branches.append(f"{first}(?P<{terminal.name}>{rest})")
    # 3. The end of the text, after the skip: only ignored text was left, where lark would
    # build its own scanner for the state only to skip it (a file's last line break).
    branches.append(rf"(?P<{END_GROUP}>\Z)")
    pattern = f"{skip}(?:{'|'.join(branches)})"
    try:
        compiled = re.compile(pattern)
    except re.error as error:  # e.g. a terminal with a named group of its own
        raise _Unsupported(str(error)) from error
    # lastindex is a terminal's group: a group inside it closes before it does
    table: list[Terminal | None] = [None] * (compiled.groups + 1)
    for name, group in compiled.groupindex.items():
        if name == END_GROUP:
            table[group] = (END_OF_TEXT, False, True, None)
            continue
        lines = name in lexer.newline_types
        table[group] = (name, lines, name in ignore, keyword_tables.get(name))
    return pattern, table


def _scanner_terminals(lexer: BasicLexer) -> tuple[list[TerminalDef], dict[str, dict[str, str]]]:
    """The terminals of lark's scanner for this lexer, in its order, and its keyword tables.

    As lark's _create_unless (lark/lexer.py) makes them, without compiling a regex of the
    keywords for each state: a string terminal (a keyword) that a regex terminal of the same
    priority matches in full retypes that terminal's tokens whose text it is (a NAME `fn`
    becomes FN), and leaves the scanner. Only the keywords a state accepts do: elsewhere `fn`
    stays a NAME."""
    strings = [t for t in lexer.terminals if isinstance(t.pattern, PatternStr)]
    embedded: set[str] = set()
    keywords: dict[str, dict[str, str]] = {}
    for regex_terminal in lexer.terminals:
        if isinstance(regex_terminal.pattern, PatternStr):
            continue
        table: dict[str, str] = {}
        for keyword in strings:
            if keyword.priority != regex_terminal.priority:
                continue
            if not _matches_all(regex_terminal.pattern.to_regexp(), keyword.pattern.value):
                continue
            if keyword.pattern.flags:
                raise _Unsupported(f"keyword {keyword.name} has flags")
            table.setdefault(keyword.pattern.value, keyword.name)
            embedded.add(keyword.name)  # lark: when its flags are the regex's (none, here)
        if table:
            keywords[regex_terminal.name] = table
    return [t for t in lexer.terminals if t.name not in embedded], keywords


@functools.cache
def _matches_all(regexp: str, text: str) -> bool:
    """Whether `regexp`'s match at the start of `text` is all of it (lark's test, above)."""
    found = re.match(regexp, text)
    return found is not None and found.group(0) == text


class _Unsupported(Exception):
    """A state lark lexes in a way a ModeSpec does not copy: pell.lalr leaves it to lark."""


# ---- what a regex can start with ---------------------------------------------------------
# From Python's own regex parser (re._parser, private: anything unexpected answers "any
# character" or "no split", which costs speed, never correctness).

try:
    _parser: Any = importlib.import_module("re._parser")
    _compiler: Any = importlib.import_module("re._compiler")
    _ops: Any = importlib.import_module("re._constants")
except ImportError:  # pragma: no cover - CPython 3.11 to 3.13 have them
    _parser = _compiler = _ops = None

# A set of first characters: (False, chars) is those chars, (True, chars) all but those.
_Chars = tuple[bool, frozenset[str]]
_ANY: _Chars = (True, frozenset())


def _union(a: _Chars, b: _Chars) -> _Chars:
    if not a[0] and not b[0]:
        return (False, a[1] | b[1])
    if a[0] and b[0]:
        return (True, a[1] & b[1])
    negated, positive = (a, b) if a[0] else (b, a)
    return (True, negated[1] - positive[1])


def _disjoint(a: _Chars, b: _Chars) -> bool:
    """Whether no character is in both (False when unsure)."""
    if a[0] and b[0]:
        return False
    if not a[0] and not b[0]:
        return not a[1] & b[1]
    negated, positive = (a, b) if a[0] else (b, a)
    return positive[1] <= negated[1]


@functools.cache
def _first_chars(regexp: str) -> _Chars:
    """The characters a match of `regexp` can start with, or more."""
    if _parser is None:
        return _ANY
    try:
        parsed = _parser.parse(regexp)
        if parsed.state.flags & (re.IGNORECASE | re.VERBOSE):
            return _ANY
        chars, nullable = _sequence_first(list(parsed))
    except Exception:  # an unknown shape: no claim
        return _ANY
    return _ANY if nullable else chars


def _sequence_first(items: list[tuple[Any, Any]]) -> tuple[_Chars, bool]:
    """The first characters of a sequence of parsed items, and whether it can match empty."""
    chars: _Chars = (False, frozenset())
    for op, argument in items:
        item, nullable = _item_first(op, argument)
        chars = _union(chars, item)
        if not nullable:
            return chars, False
    return chars, True


def _item_first(op: Any, argument: Any) -> tuple[_Chars, bool]:
    if op is _ops.LITERAL:
        return (False, frozenset(chr(argument))), False
    if op is _ops.NOT_LITERAL:
        return (True, frozenset(chr(argument))), False
    if op is _ops.IN:
        return _class_first(argument), False
    if op in (_ops.MAX_REPEAT, _ops.MIN_REPEAT, _ops.POSSESSIVE_REPEAT):
        low, _high, body = argument
        chars, nullable = _sequence_first(list(body))
        return chars, nullable or low == 0
    if op is _ops.SUBPATTERN:
        _group, add_flags, _del_flags, body = argument
        if add_flags & re.IGNORECASE:
            return _ANY, True
        return _sequence_first(list(body))
    if op is _ops.ATOMIC_GROUP:
        return _sequence_first(list(argument))
    if op is _ops.BRANCH:
        union: _Chars = (False, frozenset())
        any_nullable = False
        for alternative in argument[1]:
            first, nullable = _sequence_first(list(alternative))
            union = _union(union, first)
            any_nullable = any_nullable or nullable
        return union, any_nullable
    if op in (_ops.AT, _ops.ASSERT, _ops.ASSERT_NOT):
        return (False, frozenset()), True  # zero width: what follows starts the match
    return _ANY, True  # ANY, back references and the rest: anything


def _class_first(items: list[tuple[Any, Any]]) -> _Chars:
    """A character class: its characters, or all but them when negated."""
    negated = bool(items) and items[0][0] is _ops.NEGATE
    chars: set[str] = set()
    for op, argument in items[1:] if negated else items:
        if op is _ops.LITERAL:
            chars.add(chr(argument))
        elif op is _ops.RANGE and argument[1] - argument[0] < 512:
            chars.update(map(chr, range(argument[0], argument[1] + 1)))
        elif not negated:  # a category or a wide range: anything
            return _ANY
        # in a negated class, leaving a member out only widens the set
    return (negated, frozenset(chars))


# A first element of a regex that matches exactly one character: a class or a character.
_FIRST_ELEMENT = re.compile(
    r"\[\^?(?:\\.|[^\]\\])(?:\\.|[^\]\\])*\]|\\[^0-9A-Za-z]|[^\\\[\](){}|*+?.^$]"
)


@functools.cache
def _split_first(regexp: str) -> tuple[str, str]:
    """`regexp` as its first character's regex and the rest, when the two in sequence compile
    to the very same code; else "" and all of it."""
    found = _FIRST_ELEMENT.match(regexp)
    if found is None or _parser is None:
        return "", regexp
    first, rest = found.group(), regexp[found.end() :]
    if rest[:1] in ("*", "+", "?", "{"):
        return "", regexp  # the quantifier belongs to the first element
    try:
        if _parser.parse(first).getwidth() != (1, 1):
            return "", regexp
        same = _compiler._code(_parser.parse(regexp), 0) == _compiler._code(
            _parser.parse(f"{first}(?:{rest})"), 0
        )
    except Exception:  # an unknown shape: no split
        return "", regexp
    return (first, rest) if same else ("", regexp)


def sre_code(pattern: str) -> SreCode | None:
    """What re.compile hands its engine for `pattern` (re._compiler.compile's steps), when
    handing it that again makes the very same regex; else None (pell.lalr compiles the
    pattern then)."""
    if _parser is None or array.array("I").itemsize != 4:
        return None
    try:
        parsed = _parser.parse(pattern, 0)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        code: SreCode = (
            int(parsed.state.flags),
            array.array("I", _compiler._code(parsed, 0)).tobytes(),
            parsed.state.groups - 1,
            groupindex,
            tuple(indexgroup),
        )
        same = precompiled(pattern, code) == re.compile(pattern)
    except Exception:  # an re that works otherwise
        return None
    return code if same else None
