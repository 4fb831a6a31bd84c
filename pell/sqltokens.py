"""Oracle SQL as tokens: the reader of the text of `sql! { }` blocks (pell.sqltext).

pellc read this text with sqlglot's Oracle tokenizer until importing sqlglot came to cost a
quarter of its start-up. This scanner follows that tokenizer's rules wherever what pellc
reads of the tokens depends on them, so that binds, select lists and the rest come out the same
(tests/test_sqltokens.py checks it against sqlglot):

- Comments (`--`, `/* */`, `{# #}`) are not tokens, except an optimizer hint (`/*+ ... */`)
  right after SELECT, INSERT, UPDATE or DELETE, which is one HINT token.
- Strings: '...' with '' for a quote, N'...', U'...', q'[...]' and nq'[...]' with any
  delimiter Oracle allows (`[`, `{`, `(`, `<` close with their pair, others with themselves);
  a token's text is the string's value, without quotes. A "quoted identifier" likewise.
- Multi-word keywords (ORDER BY, GROUP BY, BULK COLLECT INTO, ...) are one KEYWORD token,
  and operators of two or more characters (`||`, `<=`, `:=`, `=>`, `::`, `(+)`, ...) one
  OPERATOR token; their text is upper case, spaces between the words reduced to one.
- Unlike sqlglot, a statement that starts with EXECUTE, FETCH, CALL and the like is tokenized
  as any other: sqlglot keeps the rest of such a statement as one string, where a bind
  (`using :v`) would be neither rewritten nor reported.
- `:name` is a COLON and a name; numbers are digits with an optional fraction and exponent
  (`1d`, `1f` are a number and a word).
- Offsets: `start` and `end` are character offsets in the text, `end` inclusive.

An unterminated string, quoted identifier or comment is a SqlTextError at its start.
"""

from __future__ import annotations

import enum
import re
from typing import NamedTuple


class SqlTextError(Exception):
    """The SQL could not be tokenized; `offset` is where, relative to the SQL text."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


class TokenType(enum.Enum):
    L_PAREN = enum.auto()
    R_PAREN = enum.auto()
    COMMA = enum.auto()
    DOT = enum.auto()
    COLON = enum.auto()
    SEMICOLON = enum.auto()
    STAR = enum.auto()
    PARAMETER = enum.auto()  # `@`
    OPERATOR = enum.auto()  # any other punctuation: `=`, `||`, `:=`, `(+)`, ...
    ALIAS = enum.auto()  # AS
    SELECT = enum.auto()
    WITH = enum.auto()
    FROM = enum.auto()
    INTO = enum.auto()
    DISTINCT = enum.auto()
    RETURNING = enum.auto()
    INSERT = enum.auto()
    UPDATE = enum.auto()
    DELETE = enum.auto()
    BEGIN = enum.auto()  # BEGIN, START
    KEYWORD = enum.auto()  # a keyword of several words: ORDER BY, BULK COLLECT INTO, ...
    HINT = enum.auto()  # /*+ ... */ after SELECT, INSERT, UPDATE or DELETE
    VAR = enum.auto()  # any other word, keywords included
    IDENTIFIER = enum.auto()  # "quoted"
    NUMBER = enum.auto()
    STRING = enum.auto()
    NATIONAL_STRING = enum.auto()  # N'...'
    UNICODE_STRING = enum.auto()  # U'...'
    RAW_STRING = enum.auto()  # q'[...]'
    NATIONAL_RAW_STRING = enum.auto()  # nq'[...]'


class Token(NamedTuple):
    token_type: TokenType
    text: str  # as written; a string's or quoted identifier's value; a keyword in upper case
    start: int
    end: int  # inclusive


_T = TokenType

# Punctuation: a token of one character, which ends a word (but `@` and `#` do not: `a#b`)
_SINGLE = {
    "(": _T.L_PAREN,
    ")": _T.R_PAREN,
    ",": _T.COMMA,
    ".": _T.DOT,
    ":": _T.COLON,
    ";": _T.SEMICOLON,
    "*": _T.STAR,
    "@": _T.PARAMETER,
    **{c: _T.OPERATOR for c in "[]{}&^-=><%!|+/\\~?#'`\""},
}
_WORD_END = re.compile(r"[\s()\[\]{}&^:,.\-=><%!|+;/\\*~?'`\"]")
_LINE_END = re.compile(r"[\n\r]")
_DIGITS = frozenset("0123456789")
_WORDS = {
    "AS": _T.ALIAS,
    "SELECT": _T.SELECT,
    "WITH": _T.WITH,
    "FROM": _T.FROM,
    "INTO": _T.INTO,
    "DISTINCT": _T.DISTINCT,
    "RETURNING": _T.RETURNING,
    "INSERT": _T.INSERT,
    "UPDATE": _T.UPDATE,
    "DELETE": _T.DELETE,
    "BEGIN": _T.BEGIN,
    "START": _T.BEGIN,
}
_HINTED = (_T.SELECT, _T.INSERT, _T.UPDATE, _T.DELETE)

# One token each, the longest that fits (found in _TRIE). These are sqlglot's, some of other
# dialects than Oracle's kept too: `::x` is no bind, and token boundaries place select items.
_OPERATORS = frozenset(
    "!= #> #>> %} && &< &> (+) +%} +}} -%} -> ->> -|- -}} :: := <-> <<->> <= <=> <> == => >= "
    "?:: ?? ^= {% {%+ {%- {{+ {{- |> || ~* ~~ ~~* ~~~".split()
)
_KEYWORDS = (
    "BULK COLLECT INTO,CHAR VARYING,CHARACTER VARYING,CLUSTER BY,CONNECT BY,DISTRIBUTE BY,"
    "DOUBLE PRECISION,FOREIGN KEY,GROUP BY,GROUPING SETS,ORDER BY,ORDER SIBLINGS BY,PARTITION BY,"
    "PARTITIONED BY,PRIMARY KEY,SIMILAR TO,SORT BY,SQL SECURITY,USER-DEFINED"
).split(",")
_COMMENTS = {"--": "", "/*": "*/", "/*+": "*/", "{#": "#}"}


# Where a string starts: ', N', U', or q' and its delimiter, with an N before it or not (any
# case). A q-string's delimiter is any ASCII letter, digit or punctuation; [ { ( < close with
# their pair, the others with themselves.
_OPENING = re.compile(r"([nN]?)[qQ]'([!-~])|([nNuU]?)'")
_PAIRS = {"[": "]", "{": "}", "(": ")", "<": ">"}
_PREFIXES = {"": _T.STRING, "N": _T.NATIONAL_STRING, "U": _T.UNICODE_STRING}


_Trie = dict[str, "_Trie"]


def _trie(keys: tuple[str, ...]) -> _Trie:
    """`keys` in a trie of upper-case characters; "" marks where a key ends."""
    root: _Trie = {}
    for key in keys:
        node = root
        for char in key.upper():
            node = node.setdefault(char, {})
        node[""] = {}
    return root


_TRIE = _trie((*_OPERATORS, *_KEYWORDS, *_COMMENTS))
_UPPER = {chr(i): chr(i).upper() for i in range(97, 123)}


def tokenize(sql: str) -> list[Token]:
    """The tokens of `sql`, comments left out. SqlTextError for an unterminated string,
    quoted identifier or comment."""
    scanner = _Scanner(sql)
    scanner.scan()
    return scanner.tokens


class _Scanner:
    """sqlglot's tokenizer loop: `current` is the offset after the character being read, and
    `start` where the token being read starts."""

    __slots__ = ("current", "size", "sql", "start", "tokens")

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self.size = len(sql)
        self.tokens: list[Token] = []
        self.start = 0
        self.current = 0

    def scan(self) -> None:
        sql, size = self.sql, self.size
        while self.current < size:
            current = self.current
            while current < size and sql[current] in " \t":
                current += 1
            self.start = current
            self.current += current - self.current if current > self.current else 1
            char = sql[self.current - 1]
            if not char.isspace():
                if char in _DIGITS:
                    self.number()
                elif char == '"':
                    self.quoted('"', _T.IDENTIFIER, 1)
                else:
                    self.word()

    def add(self, kind: TokenType, text: str | None = None) -> None:
        if text is None:
            text = self.sql[self.start : self.current]
        self.tokens.append(Token(kind, text, self.start, self.current - 1))

    def word(self) -> None:
        """A keyword, operator, string, comment, punctuation or a word (sqlglot's
        `_scan_keywords`): the longest prefix in the trie, if a space, punctuation or the end
        follows it (or it holds punctuation)."""
        sql, size = self.sql, self.size
        first = char = chars = sql[self.current - 1]
        if first in "'nNqQuU" and (opening := _OPENING.match(sql, self.start)):
            national, delimiter, prefix = opening.groups()
            if delimiter is None:
                self.quoted("'", _PREFIXES[prefix.upper()], opening.end() - self.start)
            else:
                kind = _T.NATIONAL_RAW_STRING if national else _T.RAW_STRING
                close = _PAIRS.get(delimiter, delimiter) + "'"
                self.quoted(close, kind, opening.end() - self.start)
            return
        length = 0
        found = None
        prev_space = skip = False
        single = first in _SINGLE
        node = _TRIE
        while True:
            if not skip:
                below = node.get(_UPPER.get(char, char))
                if below is None:
                    break
                node = below
                if "" in node:
                    found = chars
            at = self.current + length
            length += 1
            if at >= size:
                char = ""
                break
            char = sql[at]
            single = single or char in _SINGLE
            is_space = char.isspace()
            if not is_space or not prev_space:
                if is_space:
                    char = " "
                chars += char
                prev_space = is_space
                skip = False
            else:
                skip = True
        if found:
            if found in _COMMENTS:
                self.comment(found)
                return
            if prev_space or single or not char:
                self.current += length - 1
                text = found.upper()
                self.add(_T.OPERATOR if text in _OPERATORS else _T.KEYWORD, text)
                return
        if first in _SINGLE:
            self.add(_SINGLE[first], first)
            return
        end = _WORD_END.search(sql, self.current)
        self.current = end.start() if end else size
        if self.tokens and self.tokens[-1].token_type is _T.PARAMETER:
            self.add(_T.VAR)
        else:
            self.add(_WORDS.get(sql[self.start : self.current].upper(), _T.VAR))

    def number(self) -> None:
        sql, size = self.sql, self.size
        current = self.current
        if sql[current - 1] == "0" and sql[current : current + 1] in ("x", "X"):
            self.add(_T.NUMBER)  # `0x1F`: sqlglot reads 0, then a word (Oracle has no hex literal)
            return
        decimal = False
        exponent = 0
        while current < size:
            peek = sql[current]
            if peek in _DIGITS:
                current += 1
            elif peek == "." and not decimal:
                if self.tokens and self.tokens[-1].token_type is _T.PARAMETER:
                    break
                decimal = True
                current += 1
            elif peek in ("-", "+") and exponent == 1:
                if current + 1 < size and sql[current + 1] in _DIGITS:
                    exponent = 2
                    current += 1
                else:
                    break
            elif peek in ("e", "E") and not exponent:
                exponent = 1
                current += 1
            else:
                break
        self.current = current
        self.add(_T.NUMBER)

    def quoted(self, close: str, kind: TokenType, opening: int) -> None:
        """A string or quoted identifier whose opening (`'`, `n'`, `q'[`, `"`...) is `opening`
        characters from its start: its value, up to `close`. Doubled, a one-character `close`
        stands for itself; q'...' strings have no escapes."""
        sql, size = self.sql, self.size
        start = self.start
        position = start + opening
        what = "quoted identifier" if kind is _T.IDENTIFIER else "string"
        if len(close) > 1:
            end = sql.find(close, position)
            if end == -1:
                raise SqlTextError(
                    f"a {sql[start:position]} string is never closed (by {close})", start
                )
            self.current = end + len(close)
            self.add(kind, sql[position:end])
            return
        pieces = []
        while True:
            end = sql.find(close, position)
            if end == -1:
                raise SqlTextError(f"a {what} is never closed (by {close})", start)
            if end + 1 < size and sql[end + 1] == close:
                pieces.append(sql[position : end + 1])
                position = end + 2
                continue
            pieces.append(sql[position:end])
            break
        self.current = end + 1
        self.add(kind, "".join(pieces))

    def comment(self, opening: str) -> None:
        sql = self.sql
        close = _COMMENTS[opening]
        if not close:
            newline = _LINE_END.search(sql, self.current)
            self.current = newline.start() if newline else self.size
            return
        end = sql.find(close, self.start + len(opening))
        if end == -1:
            raise SqlTextError(f"a comment is never closed (by {close})", self.start)
        self.current = end + len(close)
        if opening == "/*+" and self.tokens and self.tokens[-1].token_type in _HINTED:
            self.add(_T.HINT)
