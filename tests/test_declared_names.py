"""No generated PL/SQL uses a local (`l_`), parameter (`p_`) or type (`t_`) it did not declare.

Checked over every .sql snapshot with parseora's tokenizer, independently of pellc: comments and
string literals are tokens of their own, so only real identifiers are looked at.
"""

from __future__ import annotations

from pathlib import Path

import parseora
import pytest

SNAPSHOTS = sorted(
    p for p in (Path(__file__).parent / "__snapshots__").rglob("*.sql") if "runtime" not in p.name
)
SKIPPED_KINDS = {"Whitespace", "LineComment", "BlockComment", "Comment", "Newline"}


def _tokens(sql: str) -> list[tuple[str, str, int]]:
    """(kind, text lowered, line) of every significant token."""
    return [
        (t["kind"], t["text"].lower(), t["line"])
        for t in parseora.tokenize(sql)
        if t["kind"] not in SKIPPED_KINDS and "comment" not in t["kind"].lower()
    ]


def undeclared_names(sql: str) -> list[str]:
    tokens = _tokens(sql)
    problems: list[str] = []
    types = {
        tokens[i + 1][1]
        for i, (_, text, _) in enumerate(tokens[:-1])
        if text == "type" and tokens[i + 1][0] == "Ident"
    }
    subprogram: str | None = None  # the top-level subprogram we are in
    declared: set[str] = set()
    outer: set[str] = set()  # a script's anonymous block declares these for all of it
    for i, (kind, text, line) in enumerate(tokens):
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1] if i + 1 < len(tokens) else ("", "", 0)
        if kind != "Ident":
            continue
        if text in ("function", "procedure") and subprogram is None and before != "end":
            subprogram = after[1]
            declared = set()
            continue
        if subprogram is not None and before == "end" and text == subprogram:
            subprogram = None
            continue
        if not text.startswith(("l_", "p_", "t_")):
            continue
        if after[1] == "=>":  # named notation: the callee's parameter, not a name here
            continue
        if text.startswith("t_"):
            if text not in types and before != ".":  # `shop.catalog.t_product`: another package's
                problems.append(f"line {line}: type {text} is not declared")
            continue
        # a declaration: `name TYPE`, `name IN ...` in a header, `FOR name IN`
        is_declaration = (
            (
                after[0] == "Ident"
                and after[1] not in ("in",)
                and before in (";", "is", "as", "(", ",", "declare")
            )
            or (before in ("for", "forall") and after[1] == "in")
            or (before in ("(", ",") and after[1] in ("in", "out"))
        )
        if is_declaration:
            (declared if subprogram is not None else outer).add(text)
        elif text not in declared and text not in outer:
            problems.append(f"line {line}: {text} is used but not declared in {subprogram}")
    return problems


def test_the_check_itself_finds_undeclared_names() -> None:
    sql = (
        "CREATE OR REPLACE PACKAGE BODY x AS\n"
        "  FUNCTION f(p_a IN NUMBER) RETURN t_missing IS\n    l_b NUMBER;\n  BEGIN\n"
        "    l_b := p_a + l_c;\n    FOR l_i IN 1 .. 3 LOOP l_b := l_i; END LOOP;\n"
        "    RETURN p_z; -- l_comment\n  END f;\nEND x;\n/\n"
    )
    assert undeclared_names(sql) == [
        "line 2: type t_missing is not declared",
        "line 5: l_c is used but not declared in f",
        "line 7: p_z is used but not declared in f",
    ]


def test_the_check_reads_a_script_s_anonymous_block() -> None:
    sql = (
        "DECLARE\n  l_a NUMBER;\n  FUNCTION f(p_x IN NUMBER) RETURN NUMBER IS\n  BEGIN\n"
        "    RETURN p_x + l_a;\n  END f;\nBEGIN\n  l_a := f(l_b);\nEND;\n/\n"
    )
    assert undeclared_names(sql) == ["line 8: l_b is used but not declared in None"]


@pytest.mark.parametrize("snapshot", SNAPSHOTS, ids=[p.stem for p in SNAPSHOTS])
def test_snapshot_declares_every_name_it_uses(snapshot: Path) -> None:
    assert undeclared_names(snapshot.read_text(encoding="utf-8")) == []
