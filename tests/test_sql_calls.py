"""`transaction-in-sql`: which names in a SQL statement's text are calls of a Pell fn, as Oracle
resolves them. A bare SQL built-in is Oracle's built-in (PLW-05004), a dotted name without `(`
is a column qualified by its table or alias, and a package-qualified call reaches any module of
the project, imported or not (raw SQL needs no Pell import), from one file as from the whole
project."""

from __future__ import annotations

from pathlib import Path

import pytest

from pell import compile_source
from pell.checker import builtins
from pell.cli import main

IN_SQL = "transaction-in-sql"


def _findings(text: str) -> list[tuple[int, str]]:
    """(line, what is called) of each transaction-in-sql finding of a module compiled alone."""
    result = compile_source(text, "m.pell")
    found = []
    for diagnostic in result.diagnostics:
        if diagnostic.code == IN_SQL:
            line = text.count("\n", 0, diagnostic.span.start) + 1
            found.append((line, text[diagnostic.span.start : diagnostic.span.end]))
    return found


# ---- SQL built-ins (review D1) -------------------------------------------------------------

BUILTIN_NAMES = """module app.stats;

pub fn log(msg: text) {
    transaction {
        sql! { insert into app_log (msg) values (:msg) };
    }
}

@retry(n=3, on=[busy])
pub fn upper(id: number) -> number {
    sql! { update items set n = n + 1 where id = :id };
    return id;
}

@retry(n=3, on=[busy])
pub fn Round(id: number) -> number {
    return id;
}

pub fn entropy(id: number) -> number {
    let e: number = sql! { select sum(p * log(2, p)) from probs where id = :id }.one();
    let u: number = sql! { select count(*) from items where upper(name) = 'X' }.one();
    let r: number = sql! { select ROUND(price, 2) from items where id = :id }.one();
    let q: number = sql! { select stats.log(2) + app.stats.upper(:id) from dual }.one();
    return e + u + r + q;
}
"""


def test_a_bare_sql_builtin_is_oracles_not_the_packages_fn() -> None:
    # LOG(2, p), UPPER(name) and ROUND(price, 2) are Oracle's; qualified, they are the fns
    assert _findings(BUILTIN_NAMES) == [(24, "stats.log"), (24, "app.stats.upper")]


def test_the_sql_builtins_hold_every_builtin_pell_calls() -> None:
    # one table of Oracle's function names: the typed part Pell calls lies inside it
    assert set(builtins.BUILTINS) - builtins.HELPERS <= builtins.SQL_FUNCTIONS
    assert {"log", "upper", "count", "sum", "decode", "listagg", "row_number"} <= (
        builtins.SQL_FUNCTIONS
    )
    assert all(name == name.lower() for name in builtins.SQL_FUNCTIONS)


# ---- qualified columns (review D2) ---------------------------------------------------------

QUALIFIED_COLUMNS = """module api.orders;

@retry(n=3, on=[busy])
pub fn total(id: number) -> number {
    sql! { update data.orders set touched = 1 where id = :id };
    return id;
}

pub fn report(id: number) -> number {
    let a: number = sql! { select orders.total from data.orders where orders.id = :id }.one();
    let b: number = sql! { select orders.total from order_lines orders where id = :id }.one();
    let c: number = sql! { select api.orders.total from api.orders where id = :id }.one();
    let d: number = sql! { select orders.total(:id) from dual }.one();
    return a + b + c + d;
}
"""


def test_a_dotted_name_without_parenthesis_is_a_column() -> None:
    # a column qualified by its table, by an alias, by schema and table; only `(` calls
    assert _findings(QUALIFIED_COLUMNS) == [(13, "orders.total")]


# ---- modules the SQL names without an import (review D4) -----------------------------------

PRICING = """module shop.pricing;

import shop::tax;

@retry(n=3, on=[busy])
pub fn price(id: number) -> number {
    let p: number = sql! { select price from items where id = :id }.one();
    return p;
}

// commits through the module it imports
pub fn taxed(id: number) -> number {
    tax::record(id);
    return id;
}

pub fn plain(id: number) -> number {
    return id;
}
"""

TAX = """module shop.tax;

pub fn record(id: number) {
    transaction {
        sql! { insert into tax_log (id) values (:id) };
    }
}
"""

REPORTS = """module shop.reports;

// no `import shop::pricing;`: SQL calls the package by name
pub fn report(id: number) -> number {
    let a: number = sql! { select shop.pricing.price(:id) from dual }.one();
    let b: number = sql! { select pricing.taxed(:id) + pricing.plain(:id) from dual }.one();
    let c: number = sql! { select other.pricing.price(:id) from dual }.one();
    return a + b + c;
}
"""

REPORT_ERRORS = [
    "reports.pell:5:35: error: this SQL statement calls `shop.pricing::price`, which is retried "
    "(@retry runs SAVEPOINT and ROLLBACK TO): a fn called from SQL may not run SAVEPOINT, "
    "ROLLBACK or COMMIT, so Oracle raises an error when it does  [transaction-in-sql]",
    "reports.pell:6:35: error: this SQL statement calls `shop.pricing::taxed`, which commits "
    "(a `transaction { }` block, in `shop.tax::record`): a fn called from SQL may not run "
    "SAVEPOINT, ROLLBACK or COMMIT, so Oracle raises an error when it does  [transaction-in-sql]",
]


def _shop(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / "src" / "reports").mkdir(parents=True)
    (root / "pell.toml").write_text("")
    (root / "src" / "pricing.pell").write_text(PRICING)
    (root / "src" / "tax.pell").write_text(TAX)
    (root / "src" / "reports" / "reports.pell").write_text(REPORTS)
    return root


@pytest.mark.parametrize(
    "command", ["check dir", "build dir", "check file", "build file", "build file -o"]
)
def test_a_module_the_sql_names_without_an_import_is_found(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _shop(tmp_path)
    reports = root / "src" / "reports" / "reports.pell"
    out = tmp_path / "out"
    argv = {
        "check dir": ["check", "--no-verify", str(root)],
        "build dir": ["build", str(root), "-d", str(out)],
        "check file": ["check", "--no-verify", str(reports)],
        "build file": ["build", str(reports)],
        "build file -o": ["build", str(reports), "-o", str(out / "reports.sql")],
    }[command]
    assert main(argv) == 1
    captured = capsys.readouterr()
    errors = [line for line in captured.err.splitlines() if ": error: " in line]
    assert [line.split("/")[-1] for line in errors] == REPORT_ERRORS
    assert captured.out == ""
    assert not (out / "reports.sql").exists() and not (out / "reports" / "reports.sql").exists()


BILLING = """// its package is BILL_API, not BILLING
@package("bill_api")
module shop.billing;

@retry(n=3, on=[busy])
pub fn charge(id: number) -> number {
    return id;
}
"""


@pytest.mark.parametrize("one_file", [True, False])
def test_a_package_renamed_by_its_annotation_is_found_by_that_name(
    one_file: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _shop(tmp_path)
    (root / "src" / "billing.pell").write_text(BILLING)
    reports = root / "src" / "reports" / "reports.pell"
    # by the module's name, BILLING.CHARGE is no fn of the project: not a call (in one file,
    # it would also join the module by that name)
    other = "" if one_file else " + billing.charge(:id)"
    reports.write_text(
        "module shop.reports;\n\npub fn report(id: number) -> number {\n"
        f"    let a: number = sql! {{ select bill_api.charge(:id){other} from dual }}.one();\n"
        "    return a;\n}\n"
    )
    assert main(["check", "--no-verify", str(reports if one_file else root)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert [line.split("/")[-1] for line in errors] == [
        "reports.pell:4:35: error: this SQL statement calls `shop.billing::charge`, which is "
        "retried (@retry runs SAVEPOINT and ROLLBACK TO): a fn called from SQL may not run "
        "SAVEPOINT, ROLLBACK or COMMIT, so Oracle raises an error when it does  "
        "[transaction-in-sql]"
    ]


def test_an_unchanged_module_is_refused_when_the_package_its_sql_calls_becomes_retried(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # its recorded facts hold the names its SQL calls, resolved on every build: no import
    # ties it to the other module, so nothing else would compile it again
    root = _shop(tmp_path)
    pricing = root / "src" / "pricing.pell"
    pricing.write_text(
        PRICING.replace("@retry(n=3, on=[busy])\n", "").replace("tax::record(id);", "")
    )
    out = tmp_path / "out"
    assert main(["build", str(root), "-d", str(out)]) == 0, capsys.readouterr().err
    pricing.write_text(PRICING)
    assert main(["build", str(root), "-d", str(out)]) == 1
    captured = capsys.readouterr().err
    assert "reports.pell:5:35: error: this SQL statement calls `shop.pricing::price`" in captured
    assert "reports.pell:6:35: error: this SQL statement calls `shop.pricing::taxed`" in captured
    # pricing compiled again; tax unchanged; reports unchanged, its recorded facts refused
    assert "built 1, unchanged 1, failed 1" in captured


# ---- SQL's own syntax before `(` (review 3, N1) --------------------------------------------

SYNTAX_WORDS = """module app.rep;

@retry(n=3, on=[busy])
pub fn sample(id: number) -> number {
    sql! { update items set n = n + 1 where id = :id };
    return id;
}

@retry(n=3, on=[busy])
pub fn totals(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn over(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn regexp_like(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn partition(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn prev(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn rollup(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn keep(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn pivot(id: number) -> number {
    return id;
}

pub fn syntax(id: number) -> number {
    let a: number = sql! { select count(*) from items sample (10) }.one();
    let b: number = sql! { select count(*) from items i sample block (5) seed (1) }.one();
    let c: number = sql! { with totals (id, n) as (select id, n from items) select count(*) from totals }.one();
    let d: number = sql! { select max(rn) from (select row_number() over (order by id) rn from items) }.one();
    let e: number = sql! { select max(v) from (select first_value(n) ignore nulls over (order by id) v from items) }.one();
    let f: number = sql! { select count(*) from items where regexp_like(name, '^a') }.one();
    let g: number = sql! { select count(*) from items partition (p1) }.one();
    let h: number = sql! { select count(*) from ticks match_recognize (order by t measures last(price) as p one row per match pattern (a b*) define b as price > prev(price)) }.one();
    let i: number = sql! { select count(*) from (select kind, sum(n) s from items group by rollup(kind)) }.one();
    let j: number = sql! { select min(n) keep (dense_rank first order by id) from items }.one();
    let k: number = sql! { select count(*) from (select * from items pivot (sum(n) for kind in ('a' as a))) }.one();
    return a + b + c + d + e + f + g + h + i + j + k;
}

pub fn calls(id: number) -> number {
    let a: number = sql! { select sample(:id) from dual }.one();
    let b: number = sql! { select count(*) from items where n = over(:id) }.one();
    let c: number = sql! { select prev(:id) + rollup(:id) from dual }.one();
    let d: number = sql! { with q as (select totals(:id) t from dual) select t from q }.one();
    let e: number = sql! { select partition(:id) + keep(:id) from dual }.one();
    return a + b + c + d + e;
}
"""


def test_sql_syntax_before_a_parenthesis_is_no_call_where_the_syntax_has_it() -> None:
    # SAMPLE, a WITH query's columns, OVER, REGEXP_LIKE, PARTITION, MATCH_RECOGNIZE's PREV,
    # ROLLUP, KEEP and PIVOT are SQL's own; the same names where an expression stands call
    # the package's fns (REGEXP_LIKE is a condition wherever it is written)
    assert _findings(SYNTAX_WORDS) == [
        (65, "sample"),
        (66, "over"),
        (67, "prev"),
        (67, "rollup"),
        (68, "totals"),
        (69, "partition"),
        (69, "keep"),
    ]


def test_the_syntax_table_names_no_function_no_reserved_word_and_cites_each_row() -> None:
    from pell.checker.retry_facts import SQL_SYNTAX_BEFORE_PAREN
    from pell.naming import ORACLE_RESERVED

    words = set(SQL_SYNTAX_BEFORE_PAREN)
    assert not words & builtins.SQL_FUNCTIONS  # a function is called, syntax is not
    assert not words & ORACLE_RESERVED  # no fn has a reserved word's name: a dead row
    assert all(len(source) > 20 for _, source in SQL_SYNTAX_BEFORE_PAREN.values())


# ---- the built-ins of the Functions chapter (review 3, N2) ----------------------------------

# Typed from the SQL Language Reference 23ai (sqlrf pages of each name) and 19c: data mining,
# statistics, bitmap, partition, OLAP, container, XML update (11.2), JSON, boolean, domain,
# vector and data quality functions the table had missed
NEW_BUILTINS = """
cluster_details cluster_distance cluster_id cluster_probability cluster_set feature_compare
feature_details feature_id feature_set feature_value ora_dm_partition_name prediction
prediction_bounds prediction_cost prediction_details prediction_probability prediction_set
stats_binomial_test stats_crosstab stats_f_test stats_ks_test stats_mode stats_mw_test
stats_one_way_anova stats_t_test_one stats_t_test_paired stats_t_test_indep
stats_t_test_indepu stats_wsr_test bitmap_bit_position bitmap_bucket_number
bitmap_construct_agg bitmap_count bitmap_or_agg dataobj_to_partition
dataobj_to_mat_partition cube_table con_id_to_con_name con_id_to_dbid con_id_to_guid
con_id_to_uid sys_op_zone_id sys_row_etag appendchildxml deletexml insertchildxml
insertchildxmlafter insertchildxmlbefore insertxmlafter insertxmlbefore updatexml
to_utc_timestamp_tz time_bucket round_ties_to_even json json_scalar json_id to_boolean
boolean_and_agg boolean_or_agg domain_check domain_check_type domain_display domain_name
domain_order vector to_vector from_vector vector_serialize vector_norm
vector_dimension_count vector_dims vector_dimension_format vector_distance l1_distance
l2_distance cosine_distance inner_product hamming_distance jaccard_distance vector_chunks
vector_embedding fuzzy_match phonic_encode
""".split()


def test_the_sql_builtins_hold_the_functions_chapter() -> None:
    assert set(NEW_BUILTINS) <= builtins.SQL_FUNCTIONS


def test_a_fn_named_like_a_newer_builtin_is_called_from_sql_only_qualified() -> None:
    source = """module app.dq;

@retry(n=3, on=[busy])
pub fn domain_name(id: number) -> number {
    return id;
}

@retry(n=3, on=[busy])
pub fn cluster_id(id: number) -> number {
    return id;
}

pub fn q(id: number) -> number {
    let a: number = sql! { select domain_name(kind) || cluster_id(m using *) from items }.one();
    let b: number = sql! { select dq.domain_name(:id) + app.dq.cluster_id(:id) from dual }.one();
    return a + b;
}
"""
    assert _findings(source) == [(15, "dq.domain_name"), (15, "app.dq.cluster_id")]


# ---- a fn with no parameters, named without `()` (review 3, N3) ----------------------------

NO_PARENTHESES = """module app.seq;

@retry(n=3, on=[busy])
pub fn next_id() -> number {
    sql! { update counters set n = n + 1 where name = 'id' };
    return 1;
}

@retry(n=3, on=[busy])
pub fn price(id: number) -> number {
    return id;
}

pub fn use_it(id: number) -> number {
    let a: number = sql! { select app.seq.next_id from dual }.one();
    let b: number = sql! { select seq.next_id + 1 from dual where :id > 0 }.one();
    let c: number = sql! { select seq.next_id from counters seq }.one();
    let d: number = sql! { select seq.next_id from seq }.one();
    let e: number = sql! { select app.seq.next_id from app.seq }.one();
    let f: number = sql! { select s.next_id from counters s }.one();
    let g: number = sql! { select seq.price from dual }.one();
    let h: number = sql! { select next_id from dual }.one();
    let i: number = sql! { select max(seq.next_id) from (select 1 next_id from dual) seq }.one();
    let j: number = sql! { select count(*) from dual where :seq > 0 and seq.next_id > 0 }.one();
    return a + b + c + d + e + f + g + h + i + j;
}
"""


def test_a_fn_without_parameters_named_without_parentheses_is_called() -> None:
    # `seq` a table or alias of the statement: a column; `price` takes a parameter; a bare
    # name is a column
    assert _findings(NO_PARENTHESES) == [(15, "app.seq.next_id"), (16, "seq.next_id"), (24, "seq.next_id")]


@pytest.mark.parametrize("one_file", [True, False])
def test_another_modules_fn_without_parameters_named_in_sql_is_called(
    one_file: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _shop(tmp_path)
    (root / "src" / "rates.pell").write_text(
        "module shop.rates;\n\n@retry(n=3, on=[busy])\npub fn current_rate() -> number {\n"
        "    return 1;\n}\n"
    )
    reports = root / "src" / "reports" / "reports.pell"
    reports.write_text(
        "module shop.reports;\n\npub fn report(id: number) -> number {\n"
        "    let a: number = sql! { select rates.current_rate * 2 from dual }.one();\n"
        "    let b: number = sql! { select rates.current_rate from rates }.one();\n"
        "    return a + b;\n}\n"
    )
    assert main(["check", "--no-verify", str(reports if one_file else root)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert [line.split("/")[-1].split(", which")[0] for line in errors] == [
        "reports.pell:4:35: error: this SQL statement calls `shop.rates::current_rate`"
    ]


# ---- PL/SQL blocks: their SQL statements, and their calls of the project's fns (N5) --------

PLSQL_BLOCKS = """module app.bs;

@retry(n=3, on=[busy])
pub fn price(id: number) -> number {
    sql! { update items set hits = hits + 1 where id = :id };
    return id;
}

// commits: a `transaction { }` block
pub fn settle(id: number) {
    transaction {
        sql! { insert into ledger (id) values (:id) };
    }
}

// its PL/SQL name is UPPER: PL/SQL finds it before STANDARD's, SQL does not
pub fn upper(id: number) -> number {
    transaction {
        sql! { insert into ledger (id) values (:id) };
    }
    return id;
}

pub fn in_sql(id: number) {
    sql! { declare x number; begin select price(:id) into x from dual; end; };
    sql! { begin for r in (select bs.price(id) p from items) loop null; end loop; end; };
    sql! { begin update items set n = app.bs.price(id) where id = :id; end; };
    sql! { declare cursor c is select price(id) from items; begin null; end; };
    sql! { declare type t is table of number; v t := t(1); begin forall i in 1..v.count insert into log_t (p) values (price(v(i))); end; };
}

@retry(n=3, on=[busy])
pub fn in_retry(id: number) {
    sql! { begin bs.settle(:id); end; };
    sql! { begin if :id > 0 then settle(:id); end if; end; };
    sql! { declare s varchar2(10); begin s := upper('a'); end; };
}

pub fn in_transaction(id: number) {
    transaction {
        sql! { begin APP.BS.SETTLE(:id); end; };
    }
}

@retry(n=3, on=[busy])
pub fn none_of_them(id: number) {
    sql! {
        declare
            settle number := 1;
            bs items%rowtype;
            x varchar2(100);
        begin
            dbms_output.put_line('settle(1); select price(1) from dual');
            /* settle(2); bs.settle(2); */
            select price, upper(name) into settle, x from items where id = :id;
            x := settle(1);
            bs.settle(3);
            select bs.price into x from items bs where bs.id = :id;
        end;
    };
}
"""


def _located(text: str, codes: tuple[str, ...]) -> list[tuple[int, str, str]]:
    """(line, code, text at the finding) of the findings of these codes, of a module alone."""
    result = compile_source(text, "m.pell")
    found = []
    for diagnostic in result.diagnostics:
        if diagnostic.code in codes:
            line = text.count("\n", 0, diagnostic.span.start) + 1
            found.append((line, diagnostic.code, text[diagnostic.span.start : diagnostic.span.end][:12]))
    return found


def test_a_plsql_blocks_sql_and_its_calls_of_the_projects_fns_are_checked() -> None:
    # SQL statements of the block call from SQL (transaction-in-sql, at the name); its own
    # PL/SQL calls the package's fns, bare or by the package's name (at the block). None of
    # a local, a record's field, a string, a comment, a column, or SQL's UPPER
    assert _located(
        PLSQL_BLOCKS, ("transaction-in-sql", "commit-in-retry", "commit-in-transaction")
    ) == [
        (25, "transaction-in-sql", "price"),
        (26, "transaction-in-sql", "bs.price"),
        (27, "transaction-in-sql", "app.bs.price"),
        (28, "transaction-in-sql", "price"),
        (29, "transaction-in-sql", "price"),
        (34, "commit-in-retry", "sql! { begin"),
        (35, "commit-in-retry", "sql! { begin"),
        (36, "commit-in-retry", "sql! { decla"),
        (41, "commit-in-transaction", "sql! { begin"),
    ]


@pytest.mark.parametrize(
    "header",
    [
        '@package ("bill_api")',
        '// the billing API (its package is BILL_API)\n@package( "bill_api" )',
        '@package /* the package */ ("bill_api") /* then */',
    ],
)
def test_one_file_finds_a_package_whatever_the_spacing_of_its_header(
    header: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # review 3, N4: one file joins the module whose package its SQL names, read from that
    # module's header as the parser reads it (a directory check always parsed it)
    root = _shop(tmp_path)
    (root / "src" / "billing.pell").write_text(BILLING.replace('@package("bill_api")', header))
    reports = root / "src" / "reports" / "reports.pell"
    reports.write_text(
        "module shop.reports;\n\npub fn report(id: number) -> number {\n"
        "    let a: number = sql! { select bill_api.charge(:id) from dual }.one();\n"
        "    return a;\n}\n"
    )
    assert main(["check", "--no-verify", str(reports)]) == 1
    errors = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert [line.split("/")[-1].split(", which")[0] for line in errors] == [
        "reports.pell:4:35: error: this SQL statement calls `shop.billing::charge`"
    ]


def test_facts_of_an_older_pellc_are_not_reused() -> None:
    # an older pellc recorded neither the parameters SQL's bare names need, nor the SQL calls
    # of PL/SQL blocks: its manifest's facts are refused, and the module compiles again
    from pell.build import _cached_facts

    facts = compile_source(NO_PARENTHESES, "m.pell").retry_facts
    assert facts is not None
    data = facts.to_json()
    assert _cached_facts({"retry_facts": data}) == facts
    fns = data["fns"]
    assert isinstance(fns, list)
    older = {**data, "fns": [fn[:10] for fn in fns]}  # as pellc wrote them before `params`
    assert _cached_facts({"retry_facts": older}) is None
