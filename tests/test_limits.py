"""Every input is answered in time linear in its size, and oddities of input text are read as
a person means them. Scaling is measured as a ratio of time per item at two sizes, never as an
absolute time: a linear construct keeps the ratio near 1, a quadratic one near the size factor.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from pell import compile_source, decode_source
from pell.diagnostics import render_all

SIZE_FACTOR = 10
# Linear stays near 1 (noise and caches aside); the quadratic ones measured 4 to 10.
MAX_RATIO = 2.5


def _seconds(text: str, pretty: bool = False) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        result = compile_source(text, "scale.pell")
        if pretty:
            render_all(result.diagnostics, result.source, pretty=True)
        best = min(best, time.perf_counter() - start)
    return best


def _per_item_ratio(program: Callable[[int], str], small: int, pretty: bool = False) -> float:
    large = small * SIZE_FACTOR
    compile_source(program(small), "warm.pell")  # grammar and imports loaded
    per_small = _seconds(program(small), pretty) / small
    per_large = _seconds(program(large), pretty) / large
    return per_large / per_small


def _binds(n: int) -> str:
    values = ", ".join([":x"] * n)
    return (
        f"module m;\npub fn f(x: number) {{\n    sql! {{ insert into t values ({values}) }};\n}}\n"
    )


def _records(n: int) -> str:
    records = "".join(
        f"record R{i} {{ a: number, b: R{i - 1} }}\n" if i else "record R0 { a: number }\n"
        for i in range(n)
    )
    return f"module m;\n{records}pub fn f(r: R{n - 1}) -> number {{ return r.a; }}\n"


def _unknown_names(n: int) -> str:
    statements = " ".join(f"let a{i} = x{i};" for i in range(n))
    return f"module m;\npub fn f() -> number {{ {statements} return 1; }}\n"


@pytest.mark.parametrize(
    ("program", "small", "pretty"),
    [
        (_binds, 2_500, False),  # one sql! with many binds (was a string splice per bind)
        (_records, 500, False),  # a long chain of records (was a list lookup per type)
        (_unknown_names, 500, False),  # unknown names among many locals (suggestions)
        (_unknown_names, 500, True),  # ... on one long line, rendered with --pretty
    ],
    ids=["binds", "records", "unknown-names", "pretty-long-line"],
)
def test_time_per_item_does_not_grow_with_size(
    program: Callable[[int], str], small: int, pretty: bool
) -> None:
    assert _per_item_ratio(program, small, pretty) < MAX_RATIO


def test_nested_list_literals_are_checked_in_linear_time() -> None:
    # Checking list types both ways at every level was exponential: 26 levels took 69 s.
    def nested(depth: int) -> str:
        return f"module m;\npub fn f() -> number {{\n    let x = {'[' * depth}1{']' * depth};\n    return 1;\n}}\n"

    ratio = _per_item_ratio(nested, 15)
    result = compile_source(nested(26), "deep.pell")
    assert [d.code for d in result.diagnostics] == ["unsupported"]  # once, not per level
    assert ratio < MAX_RATIO


def test_a_byte_order_mark_is_not_source() -> None:
    text, failure = decode_source(
        b"\xef\xbb\xbfmodule m;\npub fn f() -> number { return 1; }\n", "bom.pell"
    )
    assert failure is None and text is not None and not text.startswith("\ufeff")
    assert compile_source(text, "bom.pell").sql is not None
    assert compile_source("\ufeffmodule m;\n", "bom.pell").diagnostics == ()


@pytest.mark.parametrize("newline", ["\r", "\r\n", "\n"], ids=["cr", "crlf", "lf"])
def test_every_line_ending_gives_the_right_line(newline: str) -> None:
    text = newline.join(["module m;", "// a comment", "pub fn f() -> number { return x; }", ""])
    result = compile_source(text, "ends.pell")
    rendered = render_all(result.diagnostics, result.source)
    assert rendered.startswith("ends.pell:3:31: error: unknown name `x`"), rendered
