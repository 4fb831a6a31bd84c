"""`@deterministic` on a fn whose own SQL reads or changes a table, `@result_cache` on one whose
SQL changes a table: warnings (issue 25, item 6; the rules are cited at
pell/checker/annotations.py, check_cached_fn_tables). The negative cases are
tests/cases/function_clauses_tables.pell."""

from __future__ import annotations

from pell import compile_source
from pell.diagnostics import render_all


def _warnings(source: str, target: str = "23ai") -> list[str]:
    result = compile_source(source, "m.pell", target)
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    return [d.code for d in result.diagnostics]


def test_a_deterministic_fn_reading_a_table_is_warned_at_the_table() -> None:
    source = (
        "module m;\n@deterministic\npub fn price(sku: text) -> number {\n"
        "    let p: number = sql! { select price from prices where sku = :sku }.one();\n"
        "    return p;\n}\n"
    )
    result = compile_source(source, "m.pell")
    rendered = render_all(result.diagnostics, result.source, pretty=True)
    assert "m.pell:4:46: warning: @deterministic on fn `price`, whose SQL reads the table" in rendered
    assert "note: @deterministic is here" in rendered
    assert "help: drop @deterministic: @result_cache caches a fn that reads tables" in rendered
    # the rule is PostgreSQL's too: @deterministic is IMMUTABLE there
    assert _warnings(source, "postgres") == ["deterministic-reads-tables"]


def test_the_finally_counts_and_the_fns_called_do_not() -> None:
    """A `finally` runs on every call, so its SQL is the fn's own; a callee's SQL is not read
    (the check keeps to the fn's body)."""
    with_finally = (
        "module m;\n@result_cache\npub fn rate(c: text) -> number {\n    return 1;\n"
        "} finally {\n    sql! { delete from lookups where country = :c };\n}\n"
    )
    assert _warnings(with_finally) == ["result-cache-writes"]
    through_a_call = (
        "module m;\nfn log(c: text) {\n    sql! { insert into lookups values (:c) };\n}\n"
        "@deterministic\n@result_cache\npub fn rate(c: text) -> number {\n    log(c);\n"
        "    return 1;\n}\n"
    )
    assert _warnings(through_a_call) == []


def test_a_result_cached_fn_may_read_tables() -> None:
    source = (
        "module m;\n@result_cache\npub fn rate(c: text) -> number {\n"
        "    let r: number = sql! { select rate from rates where country = :c }.one();\n"
        "    return r;\n}\n"
    )
    assert _warnings(source) == []


def test_a_cached_fn_reading_a_sequence_the_clock_or_a_random_value_is_warned() -> None:
    """Review 4, D10: a value that changes from call to call with the same arguments, in Pell
    or in the fn's SQL (pell/checker/annotations.py, check_cached_fn_values)."""
    sequence = "module m;\npub seq ids;\n@result_cache\npub fn next_id() -> number {\n    return ids.nextval;\n}\n"
    result = compile_source(sequence, "m.pell")
    rendered = render_all(result.diagnostics, result.source)
    assert (
        "m.pell:5:12: warning: @result_cache on fn `next_id`, which reads a sequence's next "
        "number (`ids.nextval`): a call answered from the cache gets an earlier call's value"
    ) in rendered
    assert _warnings(sequence.replace("@result_cache", "@deterministic")) == ["volatile-cached-fn"]
    in_sql = (
        "module m;\n@deterministic\npub fn stamp(n: number) -> number {\n"
        "    let t: number = sql! { select :n + (sysdate - date '2000-01-01') from dual }.one();\n"
        "    return t;\n}\n"
    )
    assert _warnings(in_sql) == ["volatile-cached-fn"]
    assert _warnings(in_sql, "postgres") == ["volatile-cached-fn"]  # IMMUTABLE there
    guid = "module m;\n@deterministic\npub fn g() -> text {\n    return sys_guid();\n}\n"
    assert _warnings(guid) == ["volatile-cached-fn"]


def test_a_field_named_like_a_sequence_column_and_a_string_are_not_a_sequence() -> None:
    source = (
        "module m;\nrecord R { nextval: number }\n@deterministic\npub fn f(r: R) -> number {\n"
        "    let s: text = sql! { select 'sysdate' from dual }.one();\n"
        "    return r.nextval;\n}\n"
    )
    assert _warnings(source) == []
