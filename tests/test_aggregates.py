"""Aggregates (pell.checker.aggregates, pell.codegen.aggregates) and @parallel
(pell.checker.parallel): the ODCIAggregate type, its body and the aggregate function; the
PARALLEL_ENABLE clauses Oracle allows; what each refuses, at the place it refuses it."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.cli import main
from pell.deploy import deployment_steps, split_script
from pell.diagnostics import render_all

TOTAL = """module reports.stats;

@parallel
pub aggregate total_amount(x: number) -> number {
    state { acc: number = 0; }
    step(v: number) { self.acc = self.acc + v; }
    merge(o: Self) { self.acc = self.acc + o.acc; }
    finish() -> number { return self.acc; }
}
"""


def _sql(text: str, target: str = "23ai") -> str:
    result = compile_source(text, "m.pell", target)
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    if target != "postgres":
        assert_oracle_accepts(result.sql)
    return result.sql


def _errors(text: str, target: str = "23ai") -> list[tuple[str, str, str]]:
    """(code, the source text the error points at, message) of each error."""
    result = compile_source(text, "m.pell", target)
    assert result.sql is None
    return [
        (d.code, text[d.span.start : d.span.end], d.message)
        for d in result.diagnostics
        if d.is_error
    ]


def test_an_aggregate_is_an_odci_type_its_body_and_the_aggregate_function() -> None:
    """The interface's four routines with its signatures (Data Cartridge Developer's Guide),
    each returning ODCIConst.Success; `@parallel` with `merge` is PARALLEL_ENABLE."""
    sql = _sql(TOTAL)
    impl = "reports.total_amount_impl"
    for line in (
        f"CREATE OR REPLACE TYPE {impl} FORCE AS OBJECT (",
        "  acc NUMBER,",
        f"  STATIC FUNCTION ODCIAggregateInitialize(sctx IN OUT {impl}) RETURN NUMBER,",
        f"  MEMBER FUNCTION ODCIAggregateIterate(self IN OUT {impl}, p_v IN NUMBER) RETURN NUMBER,",
        f"  MEMBER FUNCTION ODCIAggregateMerge(self IN OUT {impl}, p_o IN {impl}) RETURN NUMBER,",
        f"  MEMBER FUNCTION ODCIAggregateTerminate(self IN {impl}, returnValue OUT NUMBER, "
        "flags IN NUMBER) RETURN NUMBER",
        f"    sctx := {impl}(0);",
        "    SELF.acc := SELF.acc + p_v;",
        "    SELF.acc := SELF.acc + p_o.acc;",
        "    returnValue := SELF.acc;",
        "CREATE OR REPLACE FUNCTION reports.total_amount(p_x IN NUMBER) RETURN NUMBER "
        "PARALLEL_ENABLE",
        f"AGGREGATE USING {impl};",
    ):
        assert line in sql.splitlines(), line
    assert sql.count("RETURN ODCIConst.Success;") == 4


def test_without_merge_there_is_no_parallel_enable_and_merge_reports_an_error() -> None:
    """Every routine must exist, and Oracle may call Merge serially too: without `merge` it
    returns ODCIConst.Error rather than combine nothing."""
    text = TOTAL.replace("@parallel\n", "").replace(
        "    merge(o: Self) { self.acc = self.acc + o.acc; }\n", ""
    )
    sql = _sql(text)
    assert "RETURN NUMBER\nAGGREGATE USING reports.total_amount_impl;" in sql
    assert "PARALLEL_ENABLE" not in sql
    merge = sql[sql.index("MEMBER FUNCTION ODCIAggregateMerge(self IN OUT reports.total_amount_impl, ctx2") :]
    assert merge.index("RETURN ODCIConst.Error;") < merge.index("END ODCIAggregateMerge;")


def test_state_defaults_make_the_new_state_and_a_field_without_one_starts_null() -> None:
    text = """module m;

pub aggregate spread(n: number) -> number {
    state { lo: number = 0; label: text; hi: number = 100 - 1; }
    step(v: number) { if v < self.lo { self.lo = v; } }
    finish() -> number { return self.hi - self.lo; }
}
"""
    assert "    sctx := spread_impl(0, NULL, 100 - 1);" in _sql(text).splitlines()


def test_each_return_of_finish_sets_return_value_then_returns_success() -> None:
    text = """module m;

pub aggregate unique_or_none(s: text) -> text {
    state { val: text; seen: number = 0; conflict: number = 0; }
    step(v: text) {
        if self.seen == 0 { self.val = v; self.seen = 1; }
        else if self.val != v { self.conflict = 1; }
    }
    finish() -> text {
        if self.conflict == 1 { return None; }
        return self.val;
    }
}
"""
    sql = _sql(text)
    start = sql.index("flags IN NUMBER) RETURN NUMBER IS")
    terminate = sql[start:]
    body = terminate[: terminate.index("END ODCIAggregateTerminate;")].splitlines()
    assert [line.strip() for line in body[1:] if line.strip()] == [
        "BEGIN",
        "IF SELF.conflict = 1 THEN",
        "returnValue := NULL;",
        "RETURN ODCIConst.Success;",
        "END IF;",
        "returnValue := SELF.val;",
        "RETURN ODCIConst.Success;",
    ]


def test_sql_calls_the_aggregate_and_a_retried_fn_may_run_that_query() -> None:
    """The package body's SQL calls the schema-level function; an aggregate changes nothing,
    so the retry checks find nothing in a query that calls it."""
    text = TOTAL + """
@retry(3, on = [busy])
pub fn total_of(region: text) -> number {
    return sql! { select total_amount(amount) from orders where region = :region }.one();
}
"""
    result = compile_source(text, "m.pell", "23ai")
    assert result.sql is not None
    assert [d.code for d in result.diagnostics] == []
    body = result.sql.index("CREATE OR REPLACE PACKAGE BODY")
    assert result.sql.index("AGGREGATE USING") < body
    assert "select total_amount(amount) INTO" in result.sql[body:]


def test_an_int_argument_and_result_are_sql_integers() -> None:
    text = """module m;

pub aggregate count_odd(x: int) -> int {
    state { n: int = 0; }
    step(v: int) { if v % 2 == 1 { self.n = self.n + 1; } }
    finish() -> int { return self.n; }
}
"""
    lines = _sql(text).splitlines()
    assert "  n NUMBER(38)," in lines
    assert (
        "  MEMBER FUNCTION ODCIAggregateIterate(self IN OUT count_odd_impl, p_v IN INTEGER) "
        "RETURN NUMBER,"
    ) in lines
    assert "CREATE OR REPLACE FUNCTION count_odd(p_x IN INTEGER) RETURN INTEGER" in lines


def test_pell_code_does_not_call_an_aggregate() -> None:
    text = TOTAL + "\npub fn f() -> number { return total_amount(3); }\n"
    assert _errors(text) == [
        (
            "unknown-fn",
            "total_amount",
            "`total_amount` is an aggregate: SQL calls it over a group of rows "
            "(`sql! { select total_amount(x) from t }`), Pell code does not",
        )
    ]


ARGMAX = """module m;

pub aggregate argmax(val: text, key: number) -> text {
    state { best: text; best_key: number; }
    step(v: text, k: number) {
        if self.best_key == None || k > self.best_key { self.best = v; self.best_key = k; }
    }
    finish() -> text { return self.best; }
}
"""


def test_several_arguments_are_one_object_of_their_type() -> None:
    """AGGREGATE USING takes one input argument (PL/SQL Language Reference, "AGGREGATE
    Clause"): several are the attributes of an object type, which Iterate unpacks."""
    lines = _sql(ARGMAX).splitlines()
    for line in (
        "CREATE OR REPLACE TYPE argmax_args FORCE AS OBJECT (",
        "  v VARCHAR2(4000),",
        "  k NUMBER",
        "  MEMBER FUNCTION ODCIAggregateIterate(self IN OUT argmax_impl, pell_args IN "
        "argmax_args) RETURN NUMBER IS",
        "    p_v VARCHAR2(32767) := pell_args.v;",
        "    p_k NUMBER := pell_args.k;",
        "CREATE OR REPLACE FUNCTION argmax(pell_args IN argmax_args) RETURN VARCHAR2",
    ):
        assert line in lines, line
    pg = _sql(ARGMAX, "postgres")
    assert "CREATE OR REPLACE AGGREGATE m.argmax(text, numeric) (" in pg
    assert "IS NULL THEN RETURN self" not in pg  # Oracle's object of arguments is never NULL


def test_aggregate_errors_are_located() -> None:
    text = """module m;

pub aggregate counted() -> number {
    state { n: number = 0; }
    step() { self.n = self.n + 1; }
    finish() -> number { return self.n; }
}

pub aggregate logged(x: number) -> number {
    state { acc: number = 0; }
    step(v: number) { sql! { delete from t where id = :v }; }
    finish() -> number { commit_work(); return self.acc; }
}

fn commit_work() { }
"""
    assert _errors(text) == [
        (
            "aggregate-shape",
            "counted",
            "aggregate `counted` takes no argument: SQL gives it a value per row",
        ),
        (
            "aggregate-dml",
            "delete",
            "`step` of aggregate `logged` runs `delete`: an aggregate runs inside a query, which "
            "cannot change data or end the transaction (ORA-14551, ORA-14552)",
        ),
        (
            "unsupported",
            "commit_work",
            "a call of this module's fn `commit_work` from an aggregate is not supported yet: "
            "the aggregate is a type of its own, outside the package",
        ),
    ]


def test_a_list_in_the_state_is_a_nested_table_that_starts_empty_and_grows_by_extend() -> None:
    """A nested table must be made (EXTEND on a NULL one raises COLLECTION_IS_NULL) and
    extended before an element is assigned (SUBSCRIPT_BEYOND_COUNT): PL/SQL Language
    Reference, "Collection Methods", EXTEND."""
    text = """module m;

pub aggregate sample_count(x: number) -> number {
    state { vals: list<number>; seen: list<text> = []; }
    step(v: number) { self.vals.append(v); }
    finish() -> number { return self.vals.len(); }
}
"""
    lines = _sql(text).splitlines()
    for line in (
        "CREATE OR REPLACE TYPE sample_count_vals_list FORCE AS TABLE OF NUMBER;",
        "CREATE OR REPLACE TYPE sample_count_seen_list FORCE AS TABLE OF VARCHAR2(4000);",
        "  vals sample_count_vals_list,",
        "    sctx := sample_count_impl(sample_count_vals_list(), sample_count_seen_list());",
        "    SELF.vals.EXTEND;",
        "    SELF.vals(SELF.vals.LAST) := p_v;",
        "    returnValue := SELF.vals.COUNT;",
    ):
        assert line in lines, line
    assert lines.index("    SELF.vals.EXTEND;") + 1 == lines.index("    SELF.vals(SELF.vals.LAST) := p_v;")


def test_the_package_types_are_refused_in_an_aggregate() -> None:
    """A local list is the package's INDEX BY type, which a type's body cannot see."""
    text = """module m;

pub aggregate copy(x: number) -> number {
    state { vals: list<number> = []; }
    step(v: number) { let xs: list<number> = self.vals; self.vals.append(v + xs.len()); }
    finish() -> number { return self.vals.len(); }
}
"""
    [(code, at, message)] = _errors(text)
    assert (code, at) == ("unsupported", "copy")
    assert "`t_number_list`" in message


def test_a_value_the_package_converts_to_text_is_refused_in_an_aggregate() -> None:
    """A type's body cannot call the package's private helper functions."""
    text = """module m;

pub aggregate joined(x: number) -> text {
    state { acc: text = ""; }
    step(v: number) { self.acc = self.acc + "{v},"; }
    finish() -> text { return self.acc; }
}
"""
    [(code, at, message)] = _errors(text)
    assert (code, at) == ("unsupported", "joined")
    assert "pell_number_text" in message


def test_aggregate_names_fit_the_target_and_are_no_reserved_words() -> None:
    long_name = "a" * 26  # its type, `<name>_impl`, is 31 bytes
    text = TOTAL.replace("total_amount", long_name).replace("reports.stats", "m")
    found = _errors(text, "12.2")
    assert ("identifier-too-long", long_name) in [(code, at) for code, at, _ in found]
    found = _errors(TOTAL.replace("total_amount", "level"))
    assert ("reserved-name", "level") in [(code, at) for code, at, _ in found]


def test_on_postgres_an_aggregate_is_create_aggregate_over_functions_of_its_parts() -> None:
    sql = _sql(TOTAL, "postgres")
    for text in (
        "CREATE TYPE reports_stats.total_amount_impl AS (\n    acc numeric\n  );",
        "CREATE OR REPLACE FUNCTION reports_stats.total_amount_step(self "
        "reports_stats.total_amount_impl, p_v numeric) RETURNS reports_stats.total_amount_impl",
        "  IF p_v IS NULL THEN RETURN self; END IF;",
        "CREATE OR REPLACE AGGREGATE reports_stats.total_amount(numeric) (\n"
        "  SFUNC = reports_stats.total_amount_step,\n"
        "  STYPE = reports_stats.total_amount_impl,\n"
        "  COMBINEFUNC = reports_stats.total_amount_merge,\n"
        "  FINALFUNC = reports_stats.total_amount_finish,\n"
        "  PARALLEL = SAFE\n);",
    ):
        assert text in sql, text


LIST_STATE = """module m;

@parallel
pub aggregate above_mean(x: number) -> number {
    state { vals: list<number>; total: number = 0; }
    step(v: number) { self.vals.append(v); self.total = self.total + v; }
    merge(o: Self) {
        for y in o.vals { self.vals.append(y); }
        self.total = self.total + o.total;
    }
    finish() -> number {
        var above: number = 0;
        for v in self.vals {
            if v * self.vals.len() > self.total { above = above + 1; }
        }
        return above;
    }
}
"""


def test_aggregates_run_on_postgres_serially_and_in_parallel(postgres_database: str) -> None:
    """NULLs skipped, an empty group gives the defaults' result, groups apart; a parallel plan
    (Partial Aggregate, then the combine function) gives what a serial one does."""
    import psycopg

    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(_sql(TOTAL, "postgres"))
        connection.execute(_sql(LIST_STATE, "postgres"))
        connection.execute(_sql(ARGMAX, "postgres"))

        def one(query: str) -> list[tuple[object, ...]]:
            return connection.execute(query).fetchall()

        total = "reports_stats.total_amount"
        assert one(f"select {total}(x) from (values (1), (2), (null), (3)) t(x)") == [(6,)]
        assert one(f"select {total}(x) from (values (1)) t(x) where false") == [(0,)]
        assert one(
            f"select g, {total}(x) from (values (1, 1), (1, 2), (2, 5)) t(g, x) "
            "group by g order by g"
        ) == [(1, 3), (2, 5)]
        assert one("select m.above_mean(x) from (values (1), (2), (9)) t(x)") == [(1,)]
        assert one(
            "select m.argmax(v, k) from (values ('a', 1), ('b', null), ('c', 3), ('d', 2)) t(v, k)"
        ) == [("c",)]
        connection.execute(
            "create table big as select g::numeric as x from generate_series(1, 3000) g;"
            "analyze big;"
            "set parallel_setup_cost = 0; set parallel_tuple_cost = 0;"
            "set min_parallel_table_scan_size = 0; set max_parallel_workers_per_gather = 2"
        )
        query = f"select {total}(x), m.above_mean(x) from big"
        plan = "\n".join(str(row[0]) for row in one("explain " + query))
        assert "Partial Aggregate" in plan
        assert one(query) == [(4501500, 1500)]


def test_deploy_creates_types_and_the_function_before_the_bodies() -> None:
    sql = _sql(TOTAL + "\npub fn f() -> number { return 1; }\n")
    statements = split_script(sql)
    kinds = [(s.object_type, s.object_name) for s in statements]
    assert kinds == [
        ("PACKAGE", "STATS"),
        ("TYPE", "TOTAL_AMOUNT_IMPL"),
        ("TYPE BODY", "TOTAL_AMOUNT_IMPL"),
        ("FUNCTION", "TOTAL_AMOUNT"),
        ("PACKAGE BODY", "STATS"),
    ]
    from pathlib import Path

    from pell.deploy import Script

    script = Script(Path("m.sql"), None, Path("m.pell"))
    steps = [s.object_type for _, s in deployment_steps([(script, statements)])]
    assert steps == ["PACKAGE", "TYPE", "FUNCTION", "TYPE BODY", "PACKAGE BODY"]


# ---- @parallel ----------------------------------------------------------------------------

ROWS = """module rolling;

pub record Txn {
    country_code: text,
    ts: timestamp,
    amount: number,
}
"""


def test_hash_partitioning_takes_a_strongly_typed_cursor_declared_in_the_spec() -> None:
    """Oracle partitions a weak cursor only BY ANY (PARALLEL_ENABLE Clause)."""
    text = ROWS + """
@pipelined
@parallel(partition = hash(country_code), order = (country_code, ts))
pub fn running(rows: cursor<Txn>) -> stream<Txn> {
    for r in rows { yield r; }
}

@pipelined
@parallel(partition = any)
pub fn anyhow(rows: cursor<Txn>) -> stream<Txn> {
    for r in rows { yield r; }
}
"""
    sql = _sql(text)
    spec = sql[: sql.index("CREATE OR REPLACE PACKAGE BODY")]
    assert "  TYPE t_txn_cursor IS REF CURSOR RETURN t_txn;" in spec.splitlines()
    assert spec.index("TYPE t_txn IS RECORD") < spec.index("TYPE t_txn_cursor")
    assert (
        "FUNCTION running(p_rows IN t_txn_cursor) RETURN rolling_txn_rows PIPELINED "
        "PARALLEL_ENABLE (PARTITION p_rows BY HASH (country_code) ORDER p_rows BY "
        "(country_code, ts));"
    ) in spec
    assert (
        "FUNCTION anyhow(p_rows IN SYS_REFCURSOR) RETURN rolling_txn_rows PIPELINED "
        "PARALLEL_ENABLE (PARTITION p_rows BY ANY);"
    ) in spec


def test_parallel_alone_is_parallel_enable_and_on_postgres_parallel_safe() -> None:
    text = "module m;\n\n@parallel\npub fn twice(x: number) -> number { return x * 2; }\n"
    assert "FUNCTION twice(p_x IN NUMBER) RETURN NUMBER PARALLEL_ENABLE;" in _sql(text)
    assert "LANGUAGE plpgsql PARALLEL SAFE AS" in _sql(text, "postgres")


def test_parallel_misuse_is_located() -> None:
    text = ROWS + """
@pipelined
@parallel(partition = range(ts), order = (ts), cluster = (amount))
pub fn both(rows: cursor<Txn>) -> stream<Txn> {
    for r in rows { yield r; }
}

@pipelined
@parallel(order = (ts))
pub fn unordered(rows: cursor<Txn>) -> stream<Txn> {
    for r in rows { yield r; }
}

@pipelined
@parallel(partition = hash)
pub fn bare(rows: cursor<Txn>) -> stream<Txn> {
    for r in rows { yield r; }
}

@pipelined
@parallel(partition = any, by = (ts))
pub fn unknown(rows: cursor<Txn>) -> stream<Txn> {
    for r in rows { yield r; }
}
"""
    assert [(code, at) for code, at, _ in _errors(text)] == [
        ("parallel-misuse", "cluster = (amount)"),
        ("parallel-misuse", "@parallel(order = (ts))"),
        ("parallel-misuse", "hash"),
        ("parallel-misuse", "by = (ts)"),
    ]
    assert [(c, at) for c, at, _ in _errors(ROWS + text[len(ROWS) :], "postgres")][:1] == [
        ("parallel-misuse", "cluster = (amount)")
    ]


def test_a_parallel_fn_that_writes_or_retries_is_refused() -> None:
    # review 7: parallel query servers run it inside a query (ORA-14551; PARALLEL UNSAFE on
    # PostgreSQL), and a retry's savepoint cannot be rolled back there (ORA-14552)
    source = (
        "module m;\n@parallel\npub fn bump(x: number) -> number {\n"
        "    sql! { update counters set n = n + 1 };\n    return x;\n}\n"
        "@parallel\n@retry(n = 3, on = [deadlock])\npub fn r(x: number) -> number { return x; }\n"
        "@parallel\npub fn ok(x: number) -> number { return x * 2; }\n"
    )
    for target in ("23ai", "postgres"):
        result = compile_source(source, "m.pell", target)
        found = [
            (d.code, result.source.line_col(d.span.start)[0])
            for d in result.diagnostics
            if d.is_error
        ]
        assert sorted(found) == [("parallel-misuse", 4), ("retry-callable-from-sql", 8)], target


def test_schema_level_names_of_two_modules_of_one_schema_clash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 7: aggregates are schema-level and unprefixed: two modules' `total` replaced
    # each other, and a package `total` refused the function (ORA-00955), with no diagnostic
    aggregate = (
        "module {name};\npub aggregate total(x: number) -> number {{\n"
        "    state {{ acc: number = 0; }}\n    step(v: number) {{ self.acc = self.acc + v; }}\n"
        "    finish() -> number {{ return self.acc; }}\n}}\n"
    )
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "sales.pell").write_text(aggregate.format(name="sales"))
    (tmp_path / "returns.pell").write_text(aggregate.format(name="returns"))
    (tmp_path / "total.pell").write_text("module total;\npub fn f() -> number { return 1; }\n")
    assert main(["check", "--no-verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "returns.pell:2:15: error: schema-level name `total` is also the package" in err
    assert "sales.pell:2:15: error: schema-level name `total_impl` is also" in err
    (tmp_path / "total.pell").unlink()
    (tmp_path / "returns.pell").unlink()
    assert main(["check", "--no-verify", str(tmp_path)]) == 0


def test_a_part_that_runs_a_block_or_a_committing_call_is_aggregate_dml() -> None:
    # review 7: only the first word of a `sql!` was read
    parts = (
        "sql! { begin commit; end; };",
        'dbms_stats::gather_table_stats("a", "b");',
    )
    for part in parts:
        source = (
            "module m;\npub aggregate a(x: number) -> number {\n"
            "    state { acc: number = 0; }\n"
            f"    step(v: number) {{ {part} self.acc = self.acc + v; }}\n"
            "    finish() -> number { return self.acc; }\n}\n"
        )
        result = compile_source(source, "m.pell")
        assert [d.code for d in result.diagnostics if d.is_error] == ["aggregate-dml"], part


def test_a_parallel_fn_that_commits_itself_or_through_a_call_is_refused() -> None:
    # review 10: only writes in the fn's own body were caught
    source = (
        "module par;\nfn close_day(v: number) -> number {\n    sql! { commit };\n    return v;\n}\n"
        "@parallel\npub fn f(v: number) -> number { return close_day(v); }\n"
        "@parallel\n"
        'pub fn h(v: number) -> number { dbms_stats::gather_table_stats("A", "T"); return v; }\n'
    )
    for target in ("23ai", "postgres"):
        result = compile_source(source, "m.pell", target)
        found = [
            (d.code, result.source.line_col(d.span.start)[0])
            for d in result.diagnostics
            if d.is_error
        ]
        if target == "postgres":  # Oracle's dbms_stats has no PostgreSQL form
            found = [f for f in found if f[0] != "unsupported"]
        assert ("parallel-misuse", 7) in found, (target, found)
    oracle = compile_source(source, "m.pell")
    assert [d.code for d in oracle.diagnostics if d.is_error] == ["parallel-misuse"] * 2


def test_a_part_that_calls_another_modules_fn_that_commits_is_aggregate_dml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 10: only the table of Oracle procedures was consulted, not a project fn that
    # commits (through another module) or a project stub's @commits
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "stubs").mkdir()
    (tmp_path / "stubs" / "ext.pell").write_text(
        'module ext;\n@commits("it commits")\npub fn flush();\n'
    )
    (tmp_path / "w.pell").write_text(
        "module w;\npub fn close_day() {\n    sql! { commit };\n}\n"
        "pub fn twice(v: number) -> number {\n    return v * 2;\n}\n"
    )
    (tmp_path / "s.pell").write_text(
        "module s;\nimport w;\nimport ext;\n"
        "pub aggregate tot(x: number) -> number {\n"
        "    state { acc: number = 0; }\n"
        "    step(v: number) { self.acc = self.acc + w::twice(v); w::close_day(); }\n"
        "    finish() -> number { ext::flush(); return self.acc; }\n}\n"
    )
    assert main(["check", "--no-verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert (
        "s.pell:6:58: error: `step` of aggregate `tot` calls `w::close_day`, which commits "
        "(COMMIT)"
    ) in err
    assert "s.pell:7:26: error: `finish` of aggregate `tot` calls `ext::flush`, which commits" in err
    assert err.count("[aggregate-dml]") == 2  # `w::twice` commits nothing
    # a fn it calls that starts to commit, in a later build
    (tmp_path / "s.pell").write_text(
        "module s;\nimport w;\n"
        "pub aggregate tot(x: number) -> number {\n"
        "    state { acc: number = 0; }\n"
        "    step(v: number) { self.acc = self.acc + w::twice(v); }\n"
        "    finish() -> number { return self.acc; }\n}\n"
    )
    out = str(tmp_path / "out")
    assert main(["build", str(tmp_path), "-d", out]) == 0
    (tmp_path / "w.pell").write_text(
        "module w;\npub fn twice(v: number) -> number {\n"
        "    sql! { commit };\n    return v * 2;\n}\n"
    )
    capsys.readouterr()
    assert main(["build", str(tmp_path), "-d", out]) == 1
    assert "s.pell:5:45: error: `step` of aggregate `tot` calls `w::twice`" in capsys.readouterr().err


def test_the_facts_a_build_keeps_hold_each_aggregate_parts_calls() -> None:
    # a build's manifest keeps each module's facts for the next build (aggregate-dml above)
    from pell.checker.retry_facts import ModuleFacts

    source = (
        "module s;\npub aggregate tot(x: number) -> number {\n"
        "    state { acc: number = 0; }\n"
        "    step(v: number) { self.acc = self.acc + w::twice(v); }\n"
        "    finish() -> number { return self.acc; }\n}\n"
    )
    facts = compile_source(source, "s.pell").retry_facts
    assert facts is not None
    assert [(a, part, call.callee) for a, part, call in facts.aggregate_calls] == [
        ("tot", "step", ("w", "twice"))
    ]
    assert ModuleFacts.from_json(facts.to_json()) == facts


def test_a_schema_level_name_of_a_project_stubs_package_clashes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 10: stubs were left out, yet a stub says its package exists in the schema:
    # TYPE a_b (of `a.B`) beside package A_B is ORA-00955. pellc's own stubs are SYS
    # packages reached through public synonyms, no object of the schema.
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "stubs").mkdir()
    (tmp_path / "stubs" / "a_b.pell").write_text("module a_b;\npub fn g() -> number;\n")
    (tmp_path / "a.pell").write_text(
        "module a;\npub type B { amount: number; }\npub fn f() -> number { return 1; }\n"
    )
    (tmp_path / "c.pell").write_text(
        "module c;\nimport a_b;\npub fn h() -> number { return a_b::g(); }\n"
    )
    assert main(["check", "--no-verify", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "a.pell:2:1: error: schema-level name `a_b` is also the package of stub `a_b`" in err
    (tmp_path / "stubs" / "a_b.pell").unlink()
    (tmp_path / "c.pell").unlink()
    (tmp_path / "a.pell").write_text(
        "module a;\npub aggregate dbms_output(x: number) -> number {\n"
        "    state { acc: number = 0; }\n    step(v: number) { self.acc = self.acc + v; }\n"
        "    finish() -> number { return self.acc; }\n}\n"
    )
    (tmp_path / "stubs" / "dbms_output.pell").write_text(
        "module dbms_output;\npub fn put_line(a: text);\n"
    )
    assert main(["check", "--no-verify", str(tmp_path)]) == 0, capsys.readouterr().err
