"""Embedded SQL, read with pell.sqltokens: binds, the select list, the top-level FROM."""

from __future__ import annotations

import functools
import itertools
import re

from pell.records import record
from pell.sqltokens import SqlTextError as SqlTextError  # raised here, caught by the checker
from pell.sqltokens import Token, TokenType
from pell.sqltokens import tokenize as _tokenize

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$#]*\Z")


@record
class Bind:
    """`:name` at [start, end) of the SQL text (the colon included)."""

    name: str
    start: int
    end: int


@record
class SqlShape:
    """What pellc needs to know of one SQL statement."""

    tokens: tuple[Token, ...]
    binds: tuple[Bind, ...]
    is_select: bool
    select_items: tuple[tuple[int, int], ...]  # [start, end) of each top-level select item
    select_names: tuple[str | None, ...]  # the name each select item is known by, if any
    from_offset: int | None  # where the top-level FROM keyword starts
    returning_count: int  # values in a top-level RETURNING clause of DML; 0 without one
    row_clause: str | None = None  # a top-level FOR UPDATE, FETCH or OFFSET, as written
    skip_locked: bool = False  # a top-level FOR UPDATE ... SKIP LOCKED
    # under SKIP LOCKED: what limits the rows before locked ones are skipped (ROWNUM in a
    # predicate of the top query level, a top-level FETCH or OFFSET), as written, and where
    limit_before_skip: tuple[str, int] | None = None


# Token kinds whose text is a value, not a word: strings (their text is the string's value)
# and "quoted" identifiers. A keyword is never one of them: `where kind = 'fetch'` and
# `select "FETCH"` name no FETCH clause.
_QUOTED = frozenset(
    {
        TokenType.IDENTIFIER,
        TokenType.STRING,
        TokenType.NATIONAL_STRING,
        TokenType.UNICODE_STRING,
        TokenType.RAW_STRING,
        TokenType.NATIONAL_RAW_STRING,
    }
)


def _words(tokens: tuple[Token, ...]) -> list[str]:
    """Each token's text in lower case, "" for a string or a quoted identifier."""
    return ["" if token.token_type in _QUOTED else token.text.lower() for token in tokens]


def _depths(tokens: tuple[Token, ...]) -> list[int]:
    """Each token's parenthesis depth; a parenthesis is at the depth outside it."""
    depths = []
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.R_PAREN:
            depth -= 1
        depths.append(depth)
        if token.token_type == TokenType.L_PAREN:
            depth += 1
    return depths


def _row_limits(words: list[str], depths: list[int]) -> list[int]:
    """Where the query's own row-limiting clause starts (its OFFSET, its FETCH), at depth 0:
    `[OFFSET n {ROW | ROWS}] [FETCH {FIRST | NEXT} ... {ROW | ROWS} {ONLY | WITH TIES}]` (SQL
    Language Reference, SELECT, row_limiting_clause). OFFSET and FETCH are not Oracle SQL
    reserved words (SQL Language Reference, "Oracle SQL Reserved Words"; tests/
    test_reserved_words.py types the list), so a column may be named either (`select id,
    offset from msgs`); ROW and ROWS are reserved. So the clause is found from its ROW or ROWS:
    before ONLY or WITH, the ROWS of a FETCH FIRST|NEXT; else of an OFFSET. A MODEL clause's
    RETURN {ALL | UPDATED} ROWS is the one other ROWS a query holds at its own level."""
    starts = []
    for index, word in enumerate(words):
        model_rows = index >= 2 and words[index - 2] == "return"
        if depths[index] or word not in ("row", "rows") or model_rows:
            continue
        fetch = words[index + 1 : index + 2] in (["only"], ["with"])
        opening = "fetch" if fetch else "offset"
        start = next(
            (at for at in range(index - 1, -1, -1) if not depths[at] and words[at] == opening),
            None,
        )
        if start is not None and (
            not fetch or words[start + 1 : start + 2] in (["first"], ["next"])
        ):
            starts.append(start)
    return sorted(set(starts))


def _row_clause(
    tokens: tuple[Token, ...], words: list[str], depths: list[int], limits: list[int]
) -> str | None:
    """The first top-level clause that locks or limits rows: `.first()` cannot add its own
    FETCH FIRST after one (Oracle allows one row-limiting clause per query, before FOR UPDATE,
    and none with FOR UPDATE)."""
    for index, word in enumerate(words):
        if depths[index] == 0 and word == "for" and words[index + 1 : index + 2] == ["update"]:
            return "FOR UPDATE"
        if index in limits:
            return tokens[index].text.upper()
    return None


def _skip_locked(
    tokens: tuple[Token, ...], words: list[str], limits: list[int]
) -> tuple[bool, tuple[str, int] | None]:
    """Does the query end in FOR UPDATE ... SKIP LOCKED, and what, at its own level, limits
    its rows first: ROWNUM after the top-level FROM (in WHERE, ON, CONNECT BY: a predicate),
    or its row-limiting clause (FETCH or OFFSET). A parenthesis that opens with SELECT or WITH
    is a subquery, another level; any other (`where (a or rownum = 1)`) stays at this one.
    Only unquoted words count: `'rownum'` is a string, `"ROWNUM"` a column."""
    subqueries: list[bool] = []  # per open parenthesis: does it open a subquery?
    seen_from = seen_for_update = skip = False
    limit: tuple[str, int] | None = None
    for index, token in enumerate(tokens):
        kind = token.token_type
        if kind == TokenType.L_PAREN:
            following = tokens[index + 1].token_type if index + 1 < len(tokens) else None
            subqueries.append(following in (TokenType.SELECT, TokenType.WITH))
            continue
        if kind == TokenType.R_PAREN:
            if subqueries:
                subqueries.pop()
            continue
        if any(subqueries):
            continue
        word, top = words[index], not subqueries
        following_word = words[index + 1] if index + 1 < len(words) else ""
        if top and word == "from":
            seen_from = True
        elif top and word == "for" and following_word == "update":
            seen_for_update = True
        elif top and seen_for_update and word == "skip" and following_word == "locked":
            skip = True
        elif limit is None and ((word == "rownum" and seen_from) or index in limits):
            limit = (token.text, token.start)
    return skip, limit if skip else None


@functools.lru_cache(maxsize=4096)
def tokenize(sql: str) -> tuple[Token, ...]:
    """The tokens of `sql` (comments are not tokens); SqlTextError for an unterminated string,
    quoted identifier or comment."""
    return tuple(_tokenize(sql))


def _binds(tokens: tuple[Token, ...]) -> list[Bind]:
    binds = []
    for colon, name in itertools.pairwise(tokens):
        if (
            colon.token_type == TokenType.COLON
            and name.start == colon.end + 1
            and _IDENTIFIER.match(name.text)
        ):
            binds.append(Bind(name.text, colon.start, name.end + 1))
    return binds


def _item_name(tokens: list[Token]) -> str | None:
    """The name a select item is known by: its alias, or the column it names."""
    if not tokens:
        return None
    last = tokens[-1]
    if last.token_type == TokenType.STAR:
        return None
    if len(tokens) >= 2 and tokens[-2].token_type == TokenType.ALIAS:
        return last.text
    if last.token_type in (TokenType.VAR, TokenType.IDENTIFIER) or _IDENTIFIER.match(last.text):
        if len(tokens) == 1:
            return last.text
        before = tokens[-2]
        # `t.col` names col; `expr alias` names alias
        if before.token_type == TokenType.DOT:
            return last.text
        if before.token_type not in (
            TokenType.DOT,
            TokenType.L_PAREN,
            TokenType.COMMA,
        ) and (before.token_type in (TokenType.R_PAREN,) or _IDENTIFIER.match(before.text)):
            return last.text
    return None


@functools.lru_cache(maxsize=4096)
def analyse(sql: str) -> SqlShape:
    """Tokenize `sql` and find its binds and, for a query, its select list and top-level FROM.
    Cached: the checker, the safety checks and code generation all ask about the same text."""
    tokens = tokenize(sql)
    depth = 0
    for token in tokens:
        # pellc wraps and extends this text (cursor loops, INTO): its parentheses must pair up
        depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(token.token_type, 0)
        if depth < 0:
            raise SqlTextError("a `)` closes nothing", token.start)
    if depth > 0:
        raise SqlTextError(f"{depth} `(` never closed", len(sql))
    binds = tuple(_binds(tokens))
    is_select = bool(tokens) and tokens[0].token_type in (TokenType.SELECT, TokenType.WITH)
    items: list[tuple[int, int]] = []
    names: list[str | None] = []
    from_offset = None
    if is_select:
        depth = 0
        select_seen = False
        item_tokens: list[Token] = []
        for token in tokens:
            kind = token.token_type
            if kind == TokenType.L_PAREN:
                depth += 1
            elif kind == TokenType.R_PAREN:
                depth -= 1
            if depth == 0 and kind == TokenType.SELECT and not select_seen:
                select_seen = True
                continue
            if not select_seen:
                continue
            if depth == 0 and kind in (TokenType.FROM, TokenType.INTO):
                from_offset = token.start
                break
            if depth == 0 and kind == TokenType.DISTINCT and not item_tokens and not items:
                continue
            if depth == 0 and kind == TokenType.COMMA:
                items.append(
                    (item_tokens[0].start, item_tokens[-1].end + 1)
                    if item_tokens
                    else (token.start, token.start)
                )
                names.append(_item_name(item_tokens))
                item_tokens = []
                continue
            item_tokens.append(token)
        if item_tokens:
            items.append((item_tokens[0].start, item_tokens[-1].end + 1))
            names.append(_item_name(item_tokens))
    row_clause, skip_locked, limit_before_skip = None, False, None
    if is_select:
        words, depths = _words(tokens), _depths(tokens)
        limits = _row_limits(words, depths)
        row_clause = _row_clause(tokens, words, depths, limits)
        skip_locked, limit_before_skip = _skip_locked(tokens, words, limits)
    return SqlShape(
        tokens,
        binds,
        is_select,
        tuple(items),
        tuple(names),
        from_offset,
        _returning_count(tokens),
        row_clause,
        skip_locked,
        limit_before_skip,
    )


def _returning_count(tokens: tuple[Token, ...]) -> int:
    depth = 0
    count = 0
    for token in tokens:
        kind = token.token_type
        if kind == TokenType.L_PAREN:
            depth += 1
        elif kind == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and kind == TokenType.RETURNING:
            count = 1
        elif depth == 0 and count and kind == TokenType.COMMA:
            count += 1
        elif depth == 0 and count and kind == TokenType.INTO:
            break
    return count


def ends_in_line_comment(sql: str) -> bool:
    """Does a `--` comment run to the end of this SQL? Then whatever follows needs a new line."""
    tokens = tokenize(sql)
    tail = sql[tokens[-1].end + 1 :] if tokens else sql
    return "--" in tail


def reindent(sql: str, indent: str, first_column: int) -> str:
    """The SQL trimmed, each continuation line placed under `indent` as far right of it as it
    stood right of the SQL's first character (`first_column`) in the source."""
    lines = sql.strip().splitlines()
    if not lines:
        return ""
    out = [lines[0].strip()]
    for line in lines[1:]:
        stripped = line.strip()
        if not stripped:
            out.append("")
            continue
        offset = max(0, len(line.expandtabs(4)) - len(line.expandtabs(4).lstrip()) - first_column)
        out.append(f"{indent}{' ' * offset}{stripped}")
    return "\n".join(out)


# Keywords after which a statement names a table or view: `from t`, `join t`, `update t`,
# `insert into t`, `merge into t`, `using t`, `delete t`.
_TABLE_KEYWORDS = frozenset({"from", "join", "update", "into", "using", "delete"})


def tables_named(sql: str) -> list[tuple[str | None, str, int]]:
    """The tables and views a statement names, as (schema or None, name, offset of the name),
    in order; `from a, b` names both. A subquery in parentheses is read for its own."""
    try:
        tokens = tokenize(sql)
    except SqlTextError:
        return []
    found: list[tuple[str | None, str, int]] = []
    # the FROM of EXTRACT(YEAR FROM d) and TRIM(c FROM s) names a value, not a table: the
    # parenthesis depths at which such a call is open
    value_froms: list[int] = []
    depth = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        word = token.text.lower()
        index += 1
        if token.token_type == TokenType.L_PAREN:
            depth += 1
            if index >= 2 and tokens[index - 2].text.lower() in ("extract", "trim"):
                value_froms.append(depth)
            continue
        if token.token_type == TokenType.R_PAREN:
            if value_froms and value_froms[-1] == depth:
                value_froms.pop()
            depth -= 1
            continue
        if word not in _TABLE_KEYWORDS or (word == "from" and value_froms and value_froms[-1] == depth):
            continue
        while index < len(tokens) and _IDENTIFIER.match(tokens[index].text):
            if tokens[index].text.lower() in _TABLE_KEYWORDS | {"select", "where", "set"}:
                break
            schema, name, start = None, tokens[index].text, tokens[index].start
            if index + 2 < len(tokens) and tokens[index + 1].token_type == TokenType.DOT:
                schema, name, start = name, tokens[index + 2].text, tokens[index + 2].start
                index += 2
            found.append((schema, name, start))
            index += 1
            if index < len(tokens) and tokens[index].token_type not in (
                TokenType.COMMA, TokenType.L_PAREN,
            ) and _IDENTIFIER.match(tokens[index].text) and tokens[index].text.lower() not in (
                "where", "set", "values", "join", "on", "inner", "left", "right", "full",
                "cross", "natural", "group", "order", "for", "select", "when", "using",
            ):
                index += 1  # an alias
            if index < len(tokens) and tokens[index].token_type == TokenType.COMMA and word == "from":
                index += 1
                continue
            break
    return found
