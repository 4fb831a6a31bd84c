"""`pellc explain`: its table is the loop that runs.

The property test compiles random policies, takes the argument of the SLEEP call out of the
generated PL/SQL, evaluates it with sqlglot's parser (DBMS_RANDOM.VALUE(a, b) at a, then at b)
for every attempt, and compares the bounds with explain's schedule.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
import sqlglot
from conftest import EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import expressions as exp

from pell import check, compile_source, parse
from pell.cli import main
from pell.diagnostics import SourceFile
from pell.explain import explain


def evaluate(node: exp.Expression, attempt: int, high: bool) -> Decimal:
    """The value of a sleep expression for `l_pell_attempt = attempt`, randomness at an end."""
    if isinstance(node, exp.Literal):
        return Decimal(str(node.this))
    if isinstance(node, exp.Column):
        assert node.name == "l_pell_attempt", node.name
        return Decimal(attempt)
    if isinstance(node, exp.Paren):
        return evaluate(node.this, attempt, high)
    if isinstance(node, exp.Rand):
        if node.args.get("lower") is None:
            return Decimal(1 if high else 0)  # DBMS_RANDOM.VALUE: [0, 1)
        bound = node.args["upper"] if high else node.args["lower"]
        return evaluate(bound, attempt, high)
    if isinstance(node, exp.Least):
        values = [evaluate(node.this, attempt, high)]
        values += [evaluate(e, attempt, high) for e in node.expressions]
        return min(values)
    binary = {exp.Add: Decimal.__add__, exp.Sub: Decimal.__sub__, exp.Mul: Decimal.__mul__}
    for kind, operation in binary.items():
        if isinstance(node, kind):
            return operation(
                evaluate(node.this, attempt, high), evaluate(node.expression, attempt, high)
            )
    if isinstance(node, exp.Pow):
        base = evaluate(node.this, attempt, high)
        power = evaluate(node.expression, attempt, high)
        return base ** int(power)
    raise AssertionError(f"unexpected node in a sleep expression: {node!r}")


def sleep_argument(sql: str) -> str | None:
    """The SQL of the SLEEP argument; through `l_pell_sleep` when a deadline needs the value."""
    match = re.search(r"DBMS_SESSION\.SLEEP\((.*)\);$", sql, re.MULTILINE)
    if match is None:
        return None
    argument = match.group(1)
    if argument == "l_pell_sleep":
        assigned = re.search(r"l_pell_sleep := (.*);$", sql, re.MULTILINE)
        assert assigned is not None
        argument = assigned.group(1)
    return argument


policies = st.fixed_dictionaries(
    {"n": st.integers(1, 8)},
    optional={
        "backoff": st.integers(0, 5000),
        "jitter": st.one_of(st.integers(0, 3000), st.booleans()),
        "exponential": st.booleans(),
        "cap_extra": st.integers(0, 20000),
        "within": st.integers(1, 60000),
    },
)


@settings(max_examples=120, deadline=None)
@given(policies)
def test_explain_schedule_matches_the_emitted_sleep(arguments: dict[str, object]) -> None:
    parts = [f"n={arguments['n']}"]
    backoff = arguments.get("backoff")
    for name in ("backoff", "jitter", "exponential", "within"):
        if name in arguments:
            value = arguments[name]
            parts.append(f"{name}={str(value).lower() if isinstance(value, bool) else value}")
    if "cap_extra" in arguments and isinstance(backoff, int):
        parts.append(f"cap={backoff + int(str(arguments['cap_extra']))}")
    source = (
        f"module m;\n@retry({', '.join(parts)})\npub fn f(id: number) {{\n"
        "    sql! { update t set a = 1 where id = :id };\n}\n"
    )
    result = compile_source(source, "m.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    module, _ = parse(source)
    assert module is not None
    checked, _ = check(module)
    (explanation,) = explain(checked, SourceFile("m.pell", source))
    rows = explanation.schedule

    # the table has one row per attempt the loop makes
    limit = re.search(r"IF l_pell_attempt >= (\d+)(?: OR [^\n]*)? THEN", result.sql)
    assert limit is not None and int(limit.group(1)) == len(rows) == arguments["n"]

    argument = sleep_argument(result.sql)
    if argument is None:
        assert all(row.sleep_max == 0 for row in rows), "the table shows sleeps the loop lacks"
        return
    tree = sqlglot.parse_one(argument, read="oracle")
    for row in rows[1:]:
        failed = row.attempt - 1
        assert evaluate(tree, failed, high=False) == row.sleep_min
        assert evaluate(tree, failed, high=True) == row.sleep_max


def test_the_evaluator_can_fail() -> None:
    tree = sqlglot.parse_one(
        "LEAST(0.1 * POWER(2, l_pell_attempt - 1) + DBMS_RANDOM.VALUE(0, 0.05), 2.0)", read="oracle"
    )
    assert evaluate(tree, 1, high=False) == Decimal("0.1")
    assert evaluate(tree, 1, high=True) == Decimal("0.15")
    assert evaluate(tree, 6, high=True) == Decimal("2.0")  # 3.2 + 0.05 capped
    assert evaluate(tree, 2, high=True) != Decimal("0.15")


def test_explain_reference_text(capsys: pytest.CaptureFixture[str]) -> None:
    example = EXAMPLES / "orders.pell"
    assert main(["explain", str(example)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-7:] == [
        "  attempt  sleep before it (s)  worst case so far (s)",
        "  1        -                    0.000",
        "  2        0.100 - 0.150        0.150",
        "  3        0.200 - 0.250        0.400",
        "  4        0.400 - 0.450        0.850",
        "  5        0.800 - 0.850        1.700",
        "  worst-case sleep: 1.700 s over 5 attempts",
    ]
    assert "scope     savepoint" in out


def test_explain_json_and_one_fn(capsys: pytest.CaptureFixture[str]) -> None:
    case = Path(__file__).parent / "cases" / "retry_beyond.pell"
    assert main(["explain", str(case), "quote", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (fn,) = data["fns"]
    assert fn["name"] == "quote"
    assert fn["deadline_ms"] == 1500
    assert fn["recover"] == "quote_cached"
    assert [row["within_deadline"] for row in fn["schedule"]] == [True, True, True, True, False]
    assert fn["worst_case_sleep_s"] == pytest.approx(1.4)


def test_explain_unknown_fn_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", str(EXAMPLES / "orders.pell"), "nope"]) == 2
    assert "has no fn `nope` with @retry" in capsys.readouterr().err


def test_retry_guide_prints_the_never_retry_table_from_the_code() -> None:
    from pell.oracle_errors import NEVER_RETRY

    guide = (Path(__file__).parent.parent / "docs" / "retry.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(-?\d+)` \| (.+?) \| (.+?) \|$", guide, re.MULTILINE)
    assert [(int(code), name, reason) for code, name, reason in rows] == list(NEVER_RETRY)


def test_retry_guide_shows_the_current_safety_messages() -> None:
    guide = (Path(__file__).parent.parent / "docs" / "retry.md").read_text(encoding="utf-8")
    snapshot = (
        Path(__file__).parent
        / "__snapshots__"
        / "test_cases"
        / "test_error_case_is_reported[retry_safety].txt"
    ).read_text(encoding="utf-8")
    assert snapshot in guide


def test_explain_for_postgres_says_what_is_retried_by_sqlstate(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["explain", "--target", "postgres", str(EXAMPLES / "orders.pell")]) == 0
    text = capsys.readouterr().out
    # no `on`: the three transient SQLSTATEs and nothing else, not Oracle's deny-list
    assert (
        "retries   deadlock_detected (40P01), serialization_failure (40001), "
        "lock_not_available (55P03); no other SQLSTATE" in text
    )
    assert "BEGIN ... EXCEPTION block, a subtransaction" in text
    # a subtransaction's rollback releases waiters there: deadlocks are curable, snapshots not
    assert "cures     deadlock, busy" in text
    assert "cannot    serialization:" in text
    assert "ORA-" not in text
