"""The quick paths after parsing give what the plain ones they replaced gave."""

from __future__ import annotations

import re

from conftest import CASES, EXAMPLES

from pell import ast
from pell.codegen import strip_markers
from pell.diagnostics import SourceFile
from pell.plsql import source_marker
from pell.syntax import parse

SAMPLES = sorted([*CASES.glob("*.pell"), *(CASES / "errors").glob("*.pell"), *EXAMPLES.glob("*.pell")])


def _deepest_by_stack(node: ast.Node) -> tuple[int, ast.Node]:
    """The walk `ast.deepest` replaced: a (value, depth) pair per value, last child first."""
    deepest_depth, deepest_node = 0, node
    stack: list[tuple[object, int]] = [(node, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, ast.Node):
            if depth > deepest_depth:
                deepest_depth, deepest_node = depth, current
            names = ast._child_fields(current)
            stack.extend((getattr(current, name), depth + 1) for name in names)
        elif isinstance(current, tuple):
            stack.extend((item, depth) for item in current)
    return deepest_depth, deepest_node


def test_deepest_finds_the_same_depth_and_node_and_every_sql_block() -> None:
    texts = [path.read_text(encoding="utf-8") for path in SAMPLES]
    texts += [
        "module m;\nfn f() -> number { return " + "(" * 300 + "1" + ")" * 300 + "; }\n",
        "module m;\nfn f(x: number) {\n" + "if x > 0 {\n" * 250 + "}\n" * 250 + "}\n",
    ]
    checked = 0
    for text in texts:
        module, _ = parse(text)
        if module is None:
            continue
        blocks: list[ast.SqlBlock] = []
        depth, node = ast.deepest(module, blocks)
        expected_depth, expected_node = _deepest_by_stack(module)
        assert depth == expected_depth and node is expected_node
        walked = [n for n in ast.walk(module) if isinstance(n, ast.SqlBlock)]
        assert sorted(map(id, blocks)) == sorted(map(id, walked))
        checked += 1
    assert checked > 50


def test_line_cols_match_a_regex_line_table() -> None:
    for text in ("", "a", "ab\ncd\n\nef", "a\r\nb\rc\n\r\nd", "\n\n", "x\r"):
        source = SourceFile("t", text)
        starts = [0, *(m.end() for m in re.finditer(r"\r\n|\r|\n", text))]
        for offset in range(-1, len(text) + 2):
            at = max(0, min(offset, len(text)))
            line = max(i for i, start in enumerate(starts) if start <= at)
            assert source.line_col(offset) == (line + 1, at - starts[line] + 1)
        offsets = [3, 0, 3, len(text), 1]
        assert source.line_cols(offsets) == [source.line_col(o) for o in offsets]
        for line in range(1, len(starts) + 1):
            start, end = source.line_span(line)
            assert "\n" not in text[start:end] and "\r" not in text[start:end]


def test_strip_markers_keeps_the_first_marker_of_each_line() -> None:
    rendered = (
        f"{source_marker(5)}a{source_marker(7)}b\n"
        f"\n"
        f"c {source_marker(9)}\n"
        f"\ue000x\ue001 not a marker\n"
        f"{source_marker(11)}"
    )
    sql, origins = strip_markers(rendered)
    assert sql == "ab\n\nc \n\ue000x\ue001 not a marker\n"
    assert origins == {1: 5, 3: 9, 5: 11}
