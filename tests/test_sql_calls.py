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
    assert set(builtins.BUILTINS) <= builtins.SQL_FUNCTIONS
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
