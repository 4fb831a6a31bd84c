"""RetryPolicy: argument reading, number formatting and the sleep expression (plain asserts)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from pell import ast, parse
from pell.retry import (
    RetryPolicy,
    format_seconds,
    policy_from_annotation,
    schedule,
    sleep_expression,
)


@pytest.mark.parametrize(
    ("milliseconds", "seconds"),
    [(100, "0.1"), (50, "0.05"), (2000, "2.0"), (1, "0.001"), (1500, "1.5"), (10000, "10.0"),
     (20, "0.02"), (0, "0.0"), (123456, "123.456")],
)  # fmt: skip
def test_format_seconds(milliseconds: int, seconds: str) -> None:
    assert format_seconds(milliseconds) == seconds


def _policy(arguments: str) -> tuple[RetryPolicy, list[str]]:
    module, diagnostics = parse(f"module m;\n@retry{arguments}\nfn f() {{ }}\n")
    assert module is not None and not diagnostics
    fn = module.items[0]
    assert isinstance(fn, ast.Fn)
    policy, found = policy_from_annotation(fn.annotations[0])
    # The scope warning has tests of its own below; the rest do not repeat it.
    return policy, [d.code for d in found if d.code != "retry-deadlock-scope"]


@pytest.mark.parametrize(
    ("arguments", "warned"),
    [
        ("", True),  # the default retries every error, deadlocks included, to a savepoint
        ("(on=[deadlock])", True),
        ("(on=[busy, deadlock])", True),
        ("(on=[busy, lock_timeout])", False),
        ('(scope="transaction")', False),
        ('(scope="transaction", on=[deadlock, serialization])', False),
        ("(n=0)", False),  # an argument error already: no second message about the scope
    ],
)
def test_savepoint_retry_of_deadlocks_is_warned(arguments: str, warned: bool) -> None:
    module, _ = parse(f"module m;\n@retry{arguments}\nfn f() {{ }}\n")
    assert module is not None
    fn = module.items[0]
    assert isinstance(fn, ast.Fn)
    _, found = policy_from_annotation(fn.annotations[0])
    assert ("retry-deadlock-scope" in [d.code for d in found]) == warned


@pytest.mark.parametrize(
    ("arguments", "codes"),
    [
        ('(scope="transaction", isolation="serializable")', []),
        ('(scope="transaction", isolation="read_committed")', []),
        ('(isolation="serializable")', ["retry-argument"]),  # needs transaction scope
        ('(scope="transaction", isolation="snapshot")', ["retry-argument"]),
        ("(n=20, backoff=1000, exponential=true)", ["retry-argument"]),  # 4096 s after 13
        ("(n=13, backoff=1000, exponential=true)", []),  # 2048 s at most
        ("(n=20, backoff=1000, exponential=true, cap=3600000)", []),
        ("(n=20, backoff=1000, exponential=true, within=60000)", []),  # the deadline bounds it
        ("(n=100, backoff=1, exponential=true)", ["retry-argument"]),  # 2**22 ms after 23
        ("(n=100, backoff=3600001)", ["retry-argument"]),
        ("(n=100, backoff=3600000)", []),
        ("(n=101)", ["retry-argument"]),  # at most 100 attempts
        ("(n=100000000)", ["retry-argument"]),
        (f"(n={'9' * 4301})", ["retry-argument"]),  # past Python's int() limit: still an error
        (f"(n=3, backoff={'9' * 5000})", ["retry-argument"]),
    ],
)
def test_isolation_and_the_one_hour_sleep_limit(arguments: str, codes: list[str]) -> None:
    assert _policy(arguments)[1] == codes


# The tuning table: each row lowers to the sleep expression the rules of retry.md section 2 give.
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("(n=3, backoff=50, jitter=20)", "0.05 + DBMS_RANDOM.VALUE(0, 0.02)"),
        (
            "(n=5, backoff=200, jitter=100, exponential=true, cap=2000)",
            "LEAST(0.2 * POWER(2, l_pell_attempt - 1) + DBMS_RANDOM.VALUE(0, 0.1), 2.0)",
        ),
        (
            "(n=5, backoff=100, jitter=50, exponential=true)",
            "0.1 * POWER(2, l_pell_attempt - 1) + DBMS_RANDOM.VALUE(0, 0.05)",
        ),
        ("(n=3, backoff=1000, jitter=500)", "1.0 + DBMS_RANDOM.VALUE(0, 0.5)"),
    ],
)
def test_tuning_table_rows(arguments: str, expected: str) -> None:
    policy, codes = _policy(arguments)
    assert codes == []
    assert sleep_expression(policy) == expected


def test_defaults() -> None:
    policy, codes = _policy("")
    assert policy == RetryPolicy(attempts=3)
    assert codes == []
    assert sleep_expression(policy) is None


def test_backoff_alone_and_with_cap() -> None:
    assert sleep_expression(RetryPolicy(backoff_ms=250)) == "0.25"
    assert sleep_expression(RetryPolicy(backoff_ms=250, cap_ms=250)) == "LEAST(0.25, 0.25)"


def test_public_pell_forms() -> None:
    policy, codes = _policy("(5, backoff_ms=100, cap_ms=2000, jitter=true)")
    assert codes == []
    assert policy == RetryPolicy(attempts=5, backoff_ms=100, cap_ms=2000, jitter_factor=True)
    assert sleep_expression(policy) == "LEAST(0.1 * (0.75 + DBMS_RANDOM.VALUE * 0.5), 2.0)"
    policy, _ = _policy("(2, backoff_ms=100, exponential=true, jitter=true)")
    assert (
        sleep_expression(policy)
        == "0.1 * POWER(2, l_pell_attempt - 1) * (0.75 + DBMS_RANDOM.VALUE * 0.5)"
    )


def test_custom_attempt_variable() -> None:
    assert sleep_expression(RetryPolicy(backoff_ms=10, exponential=True), "k") == (
        "0.01 * POWER(2, k - 1)"
    )


@pytest.mark.parametrize(
    ("arguments", "codes"),
    [
        ("(n=0)", ["retry-argument"]),
        ("(n=-2)", ["retry-argument"]),
        ("(n=1.5)", ["retry-argument"]),
        ("(n=true)", ["retry-argument"]),
        ("(backof=100)", ["retry-argument"]),
        ("(n=3, n=4)", ["retry-argument"]),
        ("(3, n=4)", ["retry-argument"]),
        ("(backoff=100, backoff_ms=100)", ["retry-argument"]),
        ("(backoff=-1)", ["retry-argument"]),
        ("(backoff=1.5)", ["retry-argument"]),
        ('(backoff="100")', ["retry-argument"]),
        ("(backoff=500, cap=100)", ["retry-argument"]),
        ("(exponential=1, backoff=10)", ["retry-argument"]),
        ("(n=2, 3)", ["retry-argument"]),
        ("(jitter=10)", ["retry-no-effect"]),
        ("(cap=10)", ["retry-no-effect"]),
        ("(exponential=true)", ["retry-no-effect"]),
        ("(backoff=0, jitter=10)", ["retry-no-effect"]),
        ("(within=0)", ["retry-argument"]),
        ("(within=-5)", ["retry-argument"]),
        ("(on=deadlock)", ["retry-argument"]),
        ("(on=[])", ["retry-argument"]),
        ("(on=[deadlock, deadlock])", ["retry-argument"]),
        ('(scope="global")', ["retry-argument"]),
        ("(scope=transaction)", ["retry-argument"]),
        ("(observe=1)", ["retry-argument"]),
        ('(recover="fallback")', ["retry-argument"]),
        ("(on=[serialization])", ["retry-serialization-scope"]),
    ],
)
def test_bad_arguments_are_reported(arguments: str, codes: list[str]) -> None:
    assert _policy(arguments)[1] == codes


def test_cap_equal_to_backoff_is_fine() -> None:
    assert _policy("(backoff=100, cap=100)")[1] == []


def test_beyond_the_reference_arguments() -> None:
    policy, codes = _policy(
        '(n=4, on=[deadlock, serialization], scope="transaction", within=1500, '
        "recover=fallback, observe=true)"
    )
    assert codes == []
    assert policy.on == ("deadlock", "serialization")
    assert policy.scope == "transaction"
    assert policy.within_ms == 1500
    assert policy.recover == "fallback"
    assert policy.observe is True


def test_schedule_of_the_reference_case() -> None:
    policy, _ = _policy("(n=5, backoff=100, jitter=50, exponential=true, cap=2000)")
    rows = schedule(policy)
    assert [(r.attempt, str(r.sleep_min), str(r.sleep_max)) for r in rows] == [
        (1, "0", "0"), (2, "0.1", "0.15"), (3, "0.2", "0.25"), (4, "0.4", "0.45"), (5, "0.8", "0.85"),
    ]  # fmt: skip
    assert rows[-1].cumulative_max == Decimal("1.7")


def test_schedule_caps_and_deadline() -> None:
    rows = schedule(
        RetryPolicy(attempts=4, backoff_ms=1000, exponential=True, cap_ms=1500, within_ms=2000)
    )
    assert [str(r.sleep_max) for r in rows] == ["0", "1", "1.5", "1.5"]
    assert [r.within_deadline for r in rows] == [True, True, False, False]


def test_the_argument_table_is_the_one_the_docs_print() -> None:
    from pathlib import Path

    from pell.retry import RETRY_ARGUMENTS, argument_table

    root = Path(__file__).parent.parent
    for doc in ("README.md", "docs/retry.md"):
        assert argument_table() in (root / doc).read_text(encoding="utf-8"), doc

    # every name and alias of the table is read as an argument; another name is unknown
    def unknown(arguments: str) -> bool:
        module, _ = parse(f"module m;\n@retry{arguments}\nfn f() {{ }}\n")
        assert module is not None and isinstance(module.items[0], ast.Fn)
        _, found = policy_from_annotation(module.items[0].annotations[0])
        return any("unknown @retry argument" in d.message for d in found)

    for argument in RETRY_ARGUMENTS:
        for spelling in (argument.name, *argument.aliases):
            assert not unknown(f"({spelling}=1)"), spelling
    assert unknown("(retries=1)")
