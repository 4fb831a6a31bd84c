"""Retry findings do not depend on the order of declarations (review 15, finding 4): the same
fns in another order give the same diagnostics, word for word. No server needed."""

from __future__ import annotations

import pytest

from pell import compile_source

INNER = "@retry(n = 3) pub fn inner(x: number) { sql! { update t set n = :x }; }\n"
OUTER = "@retry(n = 3) pub fn outer(x: number) { middle(x); }\n"
MIDDLE = "pub fn middle(x: number) { inner(x); if x > 0 { outer(x - 1); } }\n"


def _findings(source: str, target: str, code: str) -> list[str]:
    result = compile_source(source, "a.pell", target)
    return sorted(d.message for d in result.diagnostics if d.code == code)


@pytest.mark.parametrize("target", ["23ai", "postgres"])
@pytest.mark.parametrize(
    "order", [(INNER, OUTER, MIDDLE), (OUTER, MIDDLE, INNER), (MIDDLE, INNER, OUTER)]
)
def test_nested_retry_through_a_fn_that_also_reaches_the_caller(
    target: str, order: tuple[str, ...]
) -> None:
    """`middle` reaches both `outer` (recursion, reported apart) and `inner`: the nesting of
    `inner` in `outer` is reported whichever fn comes first."""
    source = "module a;\n" + "".join(order)
    assert _findings(source, target, "nested-retry") == [
        "`outer` (@retry n=3) calls `middle`, which reaches `inner` (@retry n=3): up to 9 "
        "attempts of `inner` in one call"
    ]


COMMITS = [
    "pub fn saves() { sql! { update t set n = 1 }; sql! { commit }; }\n",
    "pub fn blocks() { transaction { sql! { update t set n = 2 }; } }\n",
]
CALLERS = "pub fn via() { saves(); }\npub fn both() { blocks(); via(); }\n"
WORK = "@retry(n = 2) pub fn work() { both(); }\n"


def test_the_commit_named_in_commit_in_retry_is_the_same_in_any_order() -> None:
    """`both` reaches two commits: the one named is the nearest (`blocks`, one call away),
    whichever is declared first."""
    for first, second in (COMMITS, COMMITS[::-1]):
        source = "module a;\n" + first + second + CALLERS + WORK
        assert _findings(source, "23ai", "commit-in-retry") == [
            "`both` commits (a `transaction { }` block, in `blocks`): it ends the transaction, "
            "and with it the retry's savepoint (ORA-01086)"
        ]
