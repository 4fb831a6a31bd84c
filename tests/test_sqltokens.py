"""pell.sqltokens against sqlglot's Oracle tokenizer, which pellc used before it (issue 15).

Every `sql! { }` body of the examples and test cases, edge cases written here, and seeded
mutations of them go through pell.sqltext (on pell.sqltokens) and through a copy of the
sqlglot-based functions it replaced (`Reference` below): the binds, select list, FROM,
RETURNING, row clause and named tables must be the same, errors must happen on the same inputs,
and the token streams must agree token by token (text, offsets, and every type pellc tests).
`pytest -m fuzz` runs many more mutations.
"""

from __future__ import annotations

import functools
import itertools
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from conftest import EXAMPLES, ROOT, TESTS
from sqlglot.dialects.oracle import Oracle
from sqlglot.errors import TokenError
from sqlglot.tokenizer_core import Token as GlotToken
from sqlglot.tokenizer_core import TokenType as G

from pell import ast, parse, sqltext, sqltokens
from pell.sqltokens import TokenType

# ---------------------------------------------------------------------------------------------
# The reference: pell/sqltext.py as it was on sqlglot (analyse, tables_named and their helpers),
# unchanged but for names. Not `row_clause`: it has read the row-limiting clause by its shape
# since (a string, a quoted name or a column named OFFSET or FETCH is none), from the tokens'
# types and texts, which `token_differences` compares; tests/test_row_fetches.py tests it.

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_$#]*\Z")


class ReferenceError(Exception):
    pass


class _Tokenizer(Oracle.Tokenizer):  # type: ignore[misc]
    # sqlglot reads the rest of a statement that starts with EXECUTE, FETCH, CALL... as one
    # string; pell.sqltokens tokenizes it (a bind in `using :v` is read, like any other)
    COMMANDS: ClassVar[set[Any]] = set()


@functools.cache
def _glot_tokenizer() -> Any:
    return _Tokenizer()


def glot_tokenize(sql: str) -> tuple[GlotToken, ...]:
    try:
        return tuple(_glot_tokenizer().tokenize(sql))
    except TokenError as error:
        raise ReferenceError(str(error).splitlines()[0]) from error


def _ref_binds(tokens: tuple[GlotToken, ...]) -> list[tuple[str, int, int]]:
    binds = []
    for colon, name in itertools.pairwise(tokens):
        if (
            colon.token_type == G.COLON
            and name.start == colon.end + 1
            and _IDENTIFIER.match(name.text)
        ):
            binds.append((name.text, colon.start, name.end + 1))
    return binds


def _ref_item_name(tokens: list[GlotToken]) -> str | None:
    if not tokens:
        return None
    last = tokens[-1]
    if last.token_type == G.STAR:
        return None
    if len(tokens) >= 2 and tokens[-2].token_type == G.ALIAS:
        return str(last.text)
    if last.token_type in (G.VAR, G.IDENTIFIER) or _IDENTIFIER.match(last.text):
        if len(tokens) == 1:
            return str(last.text)
        before = tokens[-2]
        if before.token_type == G.DOT:
            return str(last.text)
        if before.token_type not in (G.DOT, G.L_PAREN, G.COMMA) and (
            before.token_type in (G.R_PAREN,) or _IDENTIFIER.match(before.text)
        ):
            return str(last.text)
    return None


def _ref_returning_count(tokens: tuple[GlotToken, ...]) -> int:
    depth = 0
    count = 0
    for token in tokens:
        kind = token.token_type
        if kind == G.L_PAREN:
            depth += 1
        elif kind == G.R_PAREN:
            depth -= 1
        elif depth == 0 and kind == G.RETURNING:
            count = 1
        elif depth == 0 and count and kind == G.COMMA:
            count += 1
        elif depth == 0 and count and kind == G.INTO:
            break
    return count


def ref_analyse(sql: str) -> dict[str, object]:
    tokens = glot_tokenize(sql)
    depth = 0
    for token in tokens:
        depth += {G.L_PAREN: 1, G.R_PAREN: -1}.get(token.token_type, 0)
        if depth < 0:
            raise ReferenceError("a `)` closes nothing")
    if depth > 0:
        raise ReferenceError(f"{depth} `(` never closed")
    binds = tuple(_ref_binds(tokens))
    is_select = bool(tokens) and tokens[0].token_type in (G.SELECT, G.WITH)
    items: list[tuple[int, int]] = []
    names: list[str | None] = []
    from_offset = None
    if is_select:
        depth = 0
        select_seen = False
        item_tokens: list[GlotToken] = []
        for token in tokens:
            kind = token.token_type
            if kind == G.L_PAREN:
                depth += 1
            elif kind == G.R_PAREN:
                depth -= 1
            if depth == 0 and kind == G.SELECT and not select_seen:
                select_seen = True
                continue
            if not select_seen:
                continue
            if depth == 0 and kind in (G.FROM, G.INTO):
                from_offset = token.start
                break
            if depth == 0 and kind == G.DISTINCT and not item_tokens and not items:
                continue
            if depth == 0 and kind == G.COMMA:
                items.append(
                    (item_tokens[0].start, item_tokens[-1].end + 1)
                    if item_tokens
                    else (token.start, token.start)
                )
                names.append(_ref_item_name(item_tokens))
                item_tokens = []
                continue
            item_tokens.append(token)
        if item_tokens:
            items.append((item_tokens[0].start, item_tokens[-1].end + 1))
            names.append(_ref_item_name(item_tokens))
    tail = sql[tokens[-1].end + 1 :] if tokens else sql
    return {
        "binds": binds,
        "is_select": is_select,
        "select_items": tuple(items),
        "select_names": tuple(names),
        "from_offset": from_offset,
        "returning_count": _ref_returning_count(tokens),
        "ends_in_line_comment": "--" in tail,
    }


_TABLE_KEYWORDS = frozenset({"from", "join", "update", "into", "using", "delete"})


def ref_tables_named(sql: str) -> list[tuple[str | None, str, int]]:
    try:
        tokens = glot_tokenize(sql)
    except ReferenceError:
        return []
    found: list[tuple[str | None, str, int]] = []
    value_froms: list[int] = []
    depth = 0
    index = 0
    while index < len(tokens):
        token = tokens[index]
        word = token.text.lower()
        index += 1
        if token.token_type == G.L_PAREN:
            depth += 1
            if index >= 2 and tokens[index - 2].text.lower() in ("extract", "trim"):
                value_froms.append(depth)
            continue
        if token.token_type == G.R_PAREN:
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
            if index + 2 < len(tokens) and tokens[index + 1].token_type == G.DOT:
                schema, name, start = name, tokens[index + 2].text, tokens[index + 2].start
                index += 2
            found.append((schema, name, start))
            index += 1
            if index < len(tokens) and tokens[index].token_type not in (
                G.COMMA, G.L_PAREN,
            ) and _IDENTIFIER.match(tokens[index].text) and tokens[index].text.lower() not in (
                "where", "set", "values", "join", "on", "inner", "left", "right", "full",
                "cross", "natural", "group", "order", "for", "select", "when", "using",
            ):
                index += 1
            if index < len(tokens) and tokens[index].token_type == G.COMMA and word == "from":
                index += 1
                continue
            break
    return found


# ---------------------------------------------------------------------------------------------
# The comparison


def new_analyse(sql: str) -> dict[str, object]:
    shape = sqltext.analyse(sql)
    return {
        "binds": tuple((b.name, b.start, b.end) for b in shape.binds),
        "is_select": shape.is_select,
        "select_items": shape.select_items,
        "select_names": shape.select_names,
        "from_offset": shape.from_offset,
        "returning_count": shape.returning_count,
        "ends_in_line_comment": sqltext.ends_in_line_comment(sql),
    }


# sqlglot's types that pell.sqltokens keeps by name; the others (DATE, ORDER_BY, EQ, ...) are
# VAR, KEYWORD or OPERATOR there
_KEPT = {t.name for t in TokenType} - {"VAR", "KEYWORD", "OPERATOR"}


def _expected_type(token: GlotToken) -> str | None:
    """The type pell.sqltokens must give this token; None: any of VAR, KEYWORD, OPERATOR."""
    name = token.token_type.name
    return name if name in _KEPT and name != "VAR" else None


def token_differences(sql: str) -> str | None:
    try:
        theirs: tuple[GlotToken, ...] | None = glot_tokenize(sql)
    except ReferenceError:
        theirs = None
    try:
        ours: tuple[sqltokens.Token, ...] | None = tuple(sqltokens.tokenize(sql))
    except sqltokens.SqlTextError:
        ours = None
    if theirs is None or ours is None:
        if (theirs is None) != (ours is None):
            return f"sqlglot fails: {theirs is None}, sqltokens fails: {ours is None}"
        return None
    if len(theirs) != len(ours):
        return f"{len(theirs)} tokens, sqltokens {len(ours)}: {theirs} / {ours}"
    for glot, our in zip(theirs, ours, strict=True):
        if (glot.text, glot.start, glot.end) != (our.text, our.start, our.end):
            return f"{glot!r} / {our!r}"
        expected = _expected_type(glot)
        if expected is not None and our.token_type.name != expected:
            return f"type: {glot!r} / {our!r}"
        if expected is None and our.token_type.name not in ("VAR", "KEYWORD", "OPERATOR"):
            return f"type: {glot!r} / {our!r}"
        # sqlglot gives other keywords (DATE, NUMBER, ...) their own types, sqltokens VAR: the
        # same to pellc, which tests a word's text unless it is not a plain identifier
        if glot.token_type == G.VAR and our.token_type != TokenType.VAR:
            return f"type: {glot!r} / {our!r}"
        if (
            our.token_type == TokenType.VAR
            and glot.token_type != G.VAR
            and not _IDENTIFIER.match(our.text)
        ):
            return f"type: {glot!r} / {our!r}"
    return None


def differences(sql: str) -> str | None:
    """What pell.sqltext (on sqltokens) says of `sql` differently from the sqlglot reference."""
    try:
        theirs: dict[str, object] | None = ref_analyse(sql)
    except ReferenceError:
        theirs = None
    try:
        ours: dict[str, object] | None = new_analyse(sql)
    except sqltext.SqlTextError as error:
        assert 0 <= error.offset <= len(sql), (sql, error.offset)
        ours = None
    if (theirs is None) != (ours is None):
        return f"sqlglot fails: {theirs is None}, sqltokens fails: {ours is None}"
    if theirs != ours:
        assert theirs is not None and ours is not None
        return "; ".join(
            f"{k}: {theirs[k]!r} / {ours[k]!r}" for k in theirs if theirs[k] != ours[k]
        )
    if ref_tables_named(sql) != sqltext.tables_named(sql):
        return f"tables_named: {ref_tables_named(sql)} / {sqltext.tables_named(sql)}"
    return token_differences(sql)


# ---------------------------------------------------------------------------------------------
# The inputs


def _pell_files() -> list[Path]:
    return sorted({*EXAMPLES.rglob("*.pell"), *TESTS.rglob("*.pell")})


@functools.cache
def corpus() -> tuple[str, ...]:
    """Every `sql! { }` body pellc's parser finds in the examples and test programs."""
    bodies: dict[str, None] = {}
    for path in _pell_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        module, _ = parse(text)
        if module is None:
            continue
        for node in ast.walk(module):
            if isinstance(node, ast.SqlBlock):
                bodies[node.text] = None
    return tuple(bodies)


EDGE_CASES = [
    "",
    "   ",
    "select a, b from t where x = :y",
    'select a as "Quoted""Name", t.b, count(*) c, (select 1 from dual) d from t',
    "select distinct a from t for update",
    "select a from t order by a fetch first 5 rows only",
    "select a from t offset 5 rows",
    "with q as (select 1 x from dual) select x from q",
    "insert into t (a) values (:a) returning id, name into :x, :y",
    "update t set a = :a where b = :b returning a",
    "delete t where a = :a",
    "merge into t using s on (t.id = s.id) when matched then update set t.a = s.a",
    "select extract(year from d) y, trim(c from s) z from t, u x, v",
    "select q'[it's]', q'{a}', q'<b>', q'(c)', q'!d!', Q'#e#', nq'[f]', NQ'|g|' from dual",
    "select N'national', u'unicode', 'it''s', '' from dual",
    "select 'a' 'b' from dual",
    "select 1, 1.5, .5, 1e10, 1E-3, 2e+4, 1d, 1.5f, 0x1F, 1..2, 3. from dual",
    "select a || b, a <= b, a >= b, a <> b, a != b, a ^= b, a => b from t",
    "begin x := :y; end;",
    "select t.a(+), b from t, u where t.id = u.id(+)",
    "select $a, a$b, a#b, a@b, @a, #a from t",
    "select a -- comment ,b from t\nfrom t",
    "select a /* from */ from t",
    "select /*+ index(t i) */ a from t",
    "insert /*+ append */ into t select * from u",
    "select a from t -- last",
    "select a from t /* last */",
    "begin execute immediate 'drop table t'; end;",
    "begin execute immediate q'[create table t (x int)]'; end;",
    "begin if x then execute immediate 'truncate table t'; end if; end;",
    "begin execute immediate 'insert into t values (:1)' using :v; commit; end;",
    "begin start_job(:x); end;",
    "fetch c into :x",
    "call p(:a)",
    "rename a to b",
    "select a from t group by a order siblings by a",
    "select a bulk collect into :x from t",
    "select :a::b, ::c from dual",
    "select x from t where a = :b.c and :d . e = 1",
    "select {# jinja #} a from t",
    "select a from t where b = ':not_a_bind' and c = \":neither\"",
    # errors
    "select 'unterminated from t",
    "select q'[unterminated from t",
    'select "unterminated from t',
    "select a /* unterminated from t",
    "select a from t where b = 'x''",
    "select (a from t",
    "select a) from t",
    "'",
    '"',
    "q'[",
    "/*",
    "/*+",
    "n'",
]


def mutate(text: str, rng: random.Random) -> str:
    """`text` changed in one to three places: a piece cut, doubled or moved, or a piece of SQL
    that tokenizers read differently put in."""
    pieces = [
        "'", "''", '"', "q'[", "]'", "nq'{", "N'", "u'", "--", "\n", "\r", "/*", "*/", "/*+",
        "{#", "#}", "(", ")", "(+)", ",", ";", ":", "::", ":=", ":x", " :y ", ".", "..", "*",
        "||", "<=", "=>", "^=", "@", "#", "$", "1", "1.5", ".5", "1e", "e", "0x", " ", "\t",
        " as ", " from ", " into ", " select ", " distinct ", " returning ", " with ",
        " execute ", " fetch ", " begin ", " call ", " order by ", " group\n by ",
        " bulk collect into ", " for update ", " offset ", " extract(", " trim(", " join ",
        " update ", " using ", " delete ", "é", "\u00a0",
    ]  # fmt: skip
    for _ in range(rng.randint(1, 3)):
        size = len(text)
        at = rng.randint(0, size)
        end = min(size, at + rng.randint(0, 12))
        choice = rng.random()
        if choice < 0.35:
            text = text[:at] + rng.choice(pieces) + text[at:]
        elif choice < 0.55:
            text = text[:at] + text[end:]
        elif choice < 0.7:
            text = text[:at] + text[at:end] * 2 + text[end:]
        elif choice < 0.85 and size:
            other = rng.randint(0, size)
            piece = text[at:end]
            rest = text[:at] + text[end:]
            other = min(other, len(rest))
            text = rest[:other] + piece + rest[other:]
        else:
            text = text[:at] + text[at:end].swapcase() + text[end:]
    return text


def mutants(count: int, seed: int) -> Iterator[str]:
    rng = random.Random(seed)
    seeds = [*corpus(), *EDGE_CASES]
    for _ in range(count):
        yield mutate(rng.choice(seeds), rng)


# ---------------------------------------------------------------------------------------------
# The tests


def test_the_corpus_is_the_sql_of_the_examples_and_cases() -> None:
    bodies = corpus()
    assert len(bodies) > 150
    assert any("returning" in body.lower() for body in bodies)
    assert any(":" in body for body in bodies)


def test_the_sql_of_the_examples_and_cases_reads_the_same() -> None:
    found = {sql: d for sql in corpus() if (d := differences(sql)) is not None}
    assert found == {}


@pytest.mark.parametrize("sql", EDGE_CASES)
def test_edge_cases_read_the_same(sql: str) -> None:
    assert differences(sql) is None


def test_mutations_read_the_same() -> None:
    found = {sql: d for sql in mutants(10_000, seed=15) if (d := differences(sql)) is not None}
    assert dict(itertools.islice(found.items(), 5)) == {}


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", range(8))
def test_many_mutations_read_the_same(seed: int) -> None:
    count = 200_000 if os.environ.get("PELL_FUZZ_LONG") == "1" else 25_000
    found = {sql: d for sql in mutants(count, seed=seed) if (d := differences(sql)) is not None}
    assert dict(itertools.islice(found.items(), 5)) == {}


@pytest.mark.fuzz
def test_random_characters_tokenize_the_same() -> None:
    rng = random.Random(1515)
    alphabet = "aeqnuNQUxX0159.;:'\"[]{}()<>!#@$*/+-=|?~^&,`\\ \t\n\r\u00a0é%"
    for _ in range(200_000):
        sql = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20)))
        assert token_differences(sql) is None, sql


def test_errors_say_where() -> None:
    for sql, offset in [
        ("select 'abc from t", 7),
        ("select a, q'[abc from t", 10),
        ('select "abc from t', 7),
        ("select a /* from t", 9),
        ("select a from t where b = 'x''", 26),
    ]:
        with pytest.raises(sqltext.SqlTextError) as error:
            sqltext.analyse(sql)
        assert error.value.offset == offset, sql
        assert "never closed" in str(error.value)


def test_pellc_does_not_import_sqlglot(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pell", "build",
         str(EXAMPLES / "orders.pell"), "-o", str(tmp_path / "orders.sql")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "sqlglot" not in result.stderr


@pytest.mark.parametrize(
    ("sql", "binds", "ends"),
    [
        # a bind after USING is read (and so rewritten or reported) like any other
        ("begin execute immediate 'delete from t where id = :1' using :v; end;", ["v"], None),
        ("begin execute immediate 'truncate table t'; end;", [], "EXECUTE IMMEDIATE of DDL"),
        # the DDL of a q'[...]' literal is found as that of a plain one
        (
            "begin execute immediate q'[create table t (x int)]'; end;",
            [],
            "EXECUTE IMMEDIATE of DDL",
        ),
        ("begin execute immediate l_text using in out :n; end;", ["n"], "cannot read"),
        ("fetch c into :x", ["x"], None),
    ],
)
def test_statements_sqlglot_reads_as_commands(
    sql: str, binds: list[str], ends: str | None
) -> None:
    from pell.checker.retry_facts import ends_transaction

    assert [bind.name for bind in sqltext.analyse(sql).binds] == binds
    what = ends_transaction(ast.SqlBlock(sql, 0, 0, span=ast.Span(0, len(sql))))
    assert (what is None) if ends is None else (what is not None and ends in what)
