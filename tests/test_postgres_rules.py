"""The retry-safety findings follow the target's rules: those that rest on Oracle's (a savepoint
rollback keeps waiters queued, savepoint names are per fn, ORA-00955) are not given for
postgres; those that hold there too still are. No server needed."""

from __future__ import annotations

from conftest import EXAMPLES

from pell import compile_source

RECURSIVE = """
module tree;

error Busy { id: number }

@retry(n = 3, backoff = 1, on = [Busy])
pub fn walk(id: number, depth: int) -> Result<(), Busy> {
    sql! { update nodes set seen = 1 where id = :id };
    if depth > 0 {
        walk(id + 1, depth - 1)?;
    }
    return Ok(());
}

@retry(n = 2, backoff = 1)
pub fn outer(id: number) -> Result<(), Busy> {
    walk(id, 2)?;
    return Ok(());
}
"""


def _codes(source: str, target: str) -> list[str]:
    return sorted({d.code for d in compile_source(source, "m.pell", target).diagnostics})


def test_oracle_only_findings_are_not_given_for_postgres() -> None:
    orders = (EXAMPLES / "orders.pell").read_text(encoding="utf-8")
    assert "retry-deadlock-scope" in _codes(orders, "23ai")
    assert "package-clash" in _codes(orders, "23ai")
    assert _codes(orders, "postgres") == []
    oracle = _codes(RECURSIVE, "23ai")
    postgres = _codes(RECURSIVE, "postgres")
    assert "retry-recursion" in oracle and "retry-recursion" not in postgres
    # more attempts than meant, on either target
    assert "nested-retry" in oracle and "nested-retry" in postgres


def test_a_pipeline_is_a_located_refusal_on_postgres() -> None:
    """TABLE(f(CURSOR(q))) has no PostgreSQL form: each `|>` pipeline is refused where it is,
    never printed as Oracle's SQL."""
    from pathlib import Path

    case = Path(__file__).parent / "cases" / "pipelines.pell"
    source = case.read_text(encoding="utf-8")
    result = compile_source(source, case.name, "postgres")
    assert result.sql is None
    refused = [source[d.span.start : d.span.end] for d in result.diagnostics]
    assert [d.code for d in result.diagnostics] == ["unsupported"] * 3
    assert all(
        d.message == "a `|>` pipeline is not supported on postgres yet" for d in result.diagnostics
    )
    assert all(text.startswith("sql! {") and text.endswith(")") for text in refused)
