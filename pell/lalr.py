"""pellc's own LALR(1) parser and contextual lexer, driven by tables lark worked out: no lark.

pell.syntax exports lark's parse table for pellc's grammar, its rules and pell.lexer's mode
specs (the regex of each LALR state's lexer) as plain data, once, beside lark's cache. A
successful parse then runs here, without importing lark (about a fifth of pellc's start-up)
and in one loop that lexes and parses, without lark's generator and per-token calls. It does
exactly what lark's LALR parser does with its contextual lexer: the same tokens, the same
shifts and reductions, the same callbacks (tests/test_lexer.py and tests/test_lalr.py compare
the two). Anything else -- a lexical error, a token the table does not take, a state whose
lexer pell.lexer does not copy -- is `Rejected`, and pell.syntax parses the text again with
lark, for lark's syntax errors.
"""

from __future__ import annotations

import importlib
import operator
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

# re's engine (no stub): a mode's regex compiled before is handed to it as re.compile does
_sre: Any = importlib.import_module("_sre")


class Token(str):
    """A token: its text, its terminal and where it is (character offsets). The attributes of
    lark's Token that pellc's AST callbacks use, so they take either (pell.syntax gives them
    ours); lines and columns are worked out from offsets when a message needs them."""

    __slots__ = ("end_pos", "start_pos", "type", "value")

    type: str
    value: str
    start_pos: int
    end_pos: int

    @classmethod
    def of(cls, type_: str, value: str, start_pos: int, end_pos: int) -> Token:
        token = str.__new__(cls, value)
        token.type = type_
        token.value = value
        token.start_pos = start_pos
        token.end_pos = end_pos
        return token

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {self.value!r})"


class Symbol(NamedTuple):
    """A symbol of a rule's expansion, as lark's grammar analysis left it."""

    name: str
    is_term: bool
    filter_out: bool  # an anonymous token (`"("`) or an inlined one (`_NAME`)


class Rule(NamedTuple):
    """A grammar rule and the options of it that shape its children (lark's Rule and
    RuleOptions): what pell.ast_builder makes each rule's callback from."""

    origin: str
    expansion: tuple[Symbol, ...]
    alias: str | None
    expand1: bool  # a `?rule`
    keep_all_tokens: bool  # a `!rule`
    empty_indices: tuple[bool, ...]  # where `[x]` placeholders go (lark's flags), or ()
    template_source: str | None


# ---- the lexer's modes -------------------------------------------------------------------
# pell.lexer makes them from lark's lexers; they are kept here, where lark is not needed.

# A terminal of a mode: its name, whether lark counts lines in it, whether it is ignored, and
# its keywords (text -> keyword terminal) when lark looks them up from it.
Terminal = tuple[str, bool, bool, "dict[str, str] | None"]

# A mode before its regex is compiled: the regex and the table of its groups (what
# match.lastindex means).
ModeSpec = tuple[str, list[Terminal | None]]

# The group of a mode's regex that matches at the end of the text (a lark terminal's name is
# upper case), and its terminal in the group table (no name a group or terminal can have).
END_GROUP = "end_of_text"
END_OF_TEXT = "$END_OF_TEXT"


# A mode's regex as re.compile hands it to its engine: _sre.compile's arguments after the
# pattern (pell.lexer.sre_code), the code as bytes of 32-bit words (what marshal loads
# quickest). re's Python code takes longer to compile a mode's regex than pellc takes to parse
# a small file; the engine checks the code it is given.
SreCode = tuple[int, bytes, int, dict[str, int], tuple[str | None, ...]]


class Mode:
    """What one of lark's lexers does: one compiled regex, and a table of its groups."""

    __slots__ = ("match", "terminals")

    match: Callable[[str, int, int], re.Match[str] | None]
    terminals: list[Terminal | None]  # by group number (match.lastindex)

    def __init__(self, spec: ModeSpec, code: SreCode | None = None) -> None:
        pattern, self.terminals = spec
        compiled = precompiled(pattern, code) if code is not None else None
        self.match = (compiled or re.compile(pattern)).match


def precompiled(pattern: str, code: SreCode) -> re.Pattern[str] | None:
    """`pattern`'s regex from its SreCode; None when re's engine does not take that code."""
    flags, words, groups, groupindex, indexgroup = code
    try:
        ops = memoryview(words).cast("I").tolist()  # the code words: 4 bytes (CODESIZE)
        compiled: re.Pattern[str] = _sre.compile(
            pattern, flags, ops, groups, groupindex, indexgroup
        )
    except Exception:  # the code of another re
        return None
    return compiled


# ---- the tables --------------------------------------------------------------------------

# What pell.syntax stores (marshal: builtin types only), a version first:
#   (FORMAT, start state, end state, states, rules, mode specs, each state's mode,
#    re's engine's version, each spec's SreCode or None)
# where a state maps a terminal or rule name to a shift (the next state, >= 0) or a reduce
# (~rule number, < 0), a rule is a Rule of tuples, and a state's mode is an index into the
# specs, or -1 where pell.lexer made no spec (lark lexes there).
FORMAT = "pellc-lalr-1"
TableData = tuple[
    str,
    int,
    int,
    list[dict[str, int]],
    list[tuple[Any, ...]],
    list[ModeSpec],
    list[int],
    str,
    list[SreCode | None],
]
# the SreCodes' engine: its version, and how its code words are laid out
SRE_MAGIC = f"{_sre.MAGIC}-{_sre.CODESIZE}-{sys.byteorder}"

# The callback of a rule whose value is its one child's (a `?rule` passing it up): the parser
# leaves that value where it is, and calls nothing.
FIRST: Callable[[list[Any]], Any] = operator.itemgetter(0)


class Rejected(Exception):
    """The text is not one this parser takes on its own: lark parses it again."""


class Parser:
    """The parse table of TableData, each state's lexer compiled when first needed."""

    def __init__(self, data: TableData) -> None:
        (
            tag,
            self.start,
            self.end,
            self.states,
            rules,
            self.specs,
            self.state_modes,
            magic,
            codes,
        ) = data
        if tag != FORMAT or len(self.state_modes) != len(self.states):
            raise ValueError("not pellc's LALR tables, or of another version")
        self.codes = codes if magic == SRE_MAGIC else [None] * len(self.specs)
        # tuple.__new__ for speed: a NamedTuple's own __new__ is a Python call per tuple
        new = tuple.__new__
        self.rules = [
            new(Rule, (rule[0], tuple([new(Symbol, symbol) for symbol in rule[1]]), *rule[2:]))
            for rule in rules
        ]
        self._modes: list[Mode | None] = [None] * len(self.states)
        self._compiled: dict[int, Mode] = {}  # by spec: states share their lexers

    def _mode(self, state: int) -> Mode:
        index = self.state_modes[state]
        if index < 0:
            raise Rejected("a state whose lexer pell.lexer does not copy")
        mode = self._compiled.get(index)
        if mode is None:
            mode = self._compiled[index] = Mode(self.specs[index], self.codes[index])
        self._modes[state] = mode
        return mode

    def parse(self, text: str, callbacks: Sequence[Callable[[list[Any]], Any]]) -> Any:
        """The value the start rule's callback makes of `text` (callbacks by rule number);
        Rejected where lark's parser would raise, or lex with its own lexer."""
        states = self.states
        modes = self._modes
        # (rule name, length, callback), the callback None where it is FIRST of one child
        reductions: list[tuple[str, int, Callable[[list[Any]], Any] | None]] = []
        for rule, given in zip(self.rules, callbacks, strict=True):
            size = len(rule.expansion)
            reductions.append((rule.origin, size, None if given is FIRST and size == 1 else given))
        state_stack = [self.start]
        value_stack: list[Any] = []
        pos = 0
        end = len(text)
        new_str = str.__new__
        while True:
            state = state_stack[-1]
            mode = modes[state] or self._mode(state)
            match = mode.match(text, pos, end)
            if match is None:  # a lexical error: lark says which
                raise Rejected("no terminal of this state matches")
            # the skipped text (group 1), then the token (pell.lexer._mode_spec)
            type_, _, ignored, keywords = mode.terminals[match.lastindex]  # type: ignore[index,misc]
            start = match.end(1)
            pos = match.end()
            if ignored:
                if type_ == END_OF_TEXT:
                    break
                continue  # an ignored terminal the skip does not take
            value = text[start:pos]
            if keywords is not None:
                type_ = keywords.get(value, type_)
            token = new_str(Token, value)
            token.type = type_
            token.value = value
            token.start_pos = start
            token.end_pos = pos
            # lark's ParserState.feed_token: reduce as the token says, then shift it
            while True:
                action = states[state].get(type_)
                if action is None:
                    raise Rejected("a token the parse table does not take here")
                if action >= 0:
                    state_stack.append(action)
                    value_stack.append(token)
                    break
                origin, size, callback = reductions[~action]
                if callback is None:  # its one child's value stays: only the state changes
                    state = states[state_stack[-2]][origin]
                    state_stack[-1] = state
                    continue
                if size:
                    children = value_stack[-size:]
                    del state_stack[-size:]
                    del value_stack[-size:]
                else:
                    children = []
                state = states[state_stack[-1]][origin]
                state_stack.append(state)
                value_stack.append(callback(children))
        # the end of the text: reduce until the start rule is
        end_state = self.end
        while True:
            action = states[state_stack[-1]].get("$END")
            if action is None or action >= 0:
                raise Rejected("the text ends where the grammar does not let it")
            origin, size, callback = reductions[~action]
            if callback is None:
                callback = FIRST
            if size:
                children = value_stack[-size:]
                del state_stack[-size:]
                del value_stack[-size:]
            else:
                children = []
            state = states[state_stack[-1]][origin]
            built = callback(children)
            if state == end_state:
                return built
            state_stack.append(state)
            value_stack.append(built)
