"""Projects: modules that import each other, checked across files; stubs of Oracle packages;
a single file that finds its project; duplicate modules; rebuilds that follow imports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.cli import main
from pell.project import read_header, shipped_stubs, stub_index
from pell.syntax import parse

PROJECTS = Path(__file__).parent / "projects"


def _check(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["check", "--no-verify", *argv])
    return code, capsys.readouterr().err.splitlines()


def test_a_project_compiles_with_another_modules_types_fns_enums_and_errors(
    tmp_path: Path,
) -> None:
    assert main(["build", str(PROJECTS / "bank"), "-d", str(tmp_path)]) == 0
    transfers = (tmp_path / "ledger" / "transfers.sql").read_text(encoding="utf-8")
    accounts = (tmp_path / "accounts.sql").read_text(encoding="utf-8")
    for sql in (transfers, accounts, (tmp_path / "pell_runtime.sql").read_text("utf-8")):
        assert_oracle_accepts(sql)
    # the record is the other package's type, not a copy declared here
    assert "l_source bank.accounts.t_account;" in transfers
    assert "TYPE t_account" not in transfers and "TYPE t_account IS RECORD" in accounts
    assert "FUNCTION opening(p_owner IN VARCHAR2) RETURN bank.accounts.t_account;" in transfers
    assert "l_source := bank.accounts.find(p_from_id);" in transfers
    assert "bank.accounts.deposit(p_to_id, p_amount);" in transfers
    assert "l_status := bank.accounts.c_status_open;" in transfers
    # the other module's error: its own runtime code and its own name in the message
    assert "pell_runtime.c_bank_accounts_notfound, SUBSTRB('bank.accounts.NotFound: " in transfers
    assert "dbms_output.put_line(" in transfers


def test_cross_module_errors_are_reported_at_their_file_and_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(PROJECTS)
    code, lines = _check(["bank_errors"], capsys)
    assert code == 1
    errors = [line for line in lines if ": error: " in line]
    assert errors == [
        "bank_errors/transfers.pell:4:1: error: no module `bank::nowhere` in this project  [unknown-module]",
        "bank_errors/transfers.pell:7:5: error: module `bank.accounts` has no fn `nosuch`  [unknown-fn]",
        "bank_errors/transfers.pell:8:21: error: `n` is declared `number` but is given an `accounts::Account`  [type-mismatch]",
        "bank_errors/transfers.pell:9:5: error: fn `accounts::find` takes 1 argument, but 2 were given  [arity]",
        "bank_errors/transfers.pell:10:20: error: argument `id` of `accounts::find` is `number`, not `text`  [type-mismatch]",
        "bank_errors/transfers.pell:11:12: error: record `Internal` of module `bank.accounts` is not `pub`  [private]",
        "bank_errors/transfers.pell:12:5: error: fn `audit` of module `bank.accounts` is not `pub`  [private]",
        "bank_errors/transfers.pell:13:13: error: enum `accounts::Status` has no variant `Shut`  [unknown-name]",
        "bank_errors/transfers.pell:14:12: error: module `bank.accounts` declares no type `Missing`  [unknown-type]",
        # a module with errors is still checked across modules: every error of the file
        "bank_errors/transfers.pell:19:5: error: `bank.accounts::close` commits (COMMIT): it ends the transaction, and with it the retry's savepoint (ORA-01086)  [commit-in-retry]",
    ]


def test_two_files_declaring_one_module_are_an_error_at_both(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(PROJECTS)
    code, lines = _check(["duplicate"], capsys)
    assert code == 1
    assert lines == [
        "duplicate/a/accounts.pell:1:1: error: module `bank.accounts` is also declared in "
        "duplicate/b/copy.pell; a schema holds one package of a name  [duplicate-module]",
        "duplicate/b/copy.pell:2:1: error: module `bank.accounts` is also declared in "
        "duplicate/a/accounts.pell; a schema holds one package of a name  [duplicate-module]",
    ]
    # a build writes neither
    assert main(["build", "duplicate", "-d", str(tmp_path)]) == 1
    assert not list(tmp_path.rglob("*.sql"))


def test_a_module_importing_itself_is_a_located_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # it was an internal error (exit 3): its code was in no registry
    (tmp_path / "pell.toml").write_text("", "utf-8")
    source = tmp_path / "a.pell"
    source.write_text("module a;\n\nimport a;\n\npub fn f() -> number {\n    return 1;\n}\n")
    assert main(["check", str(source)]) == 1
    assert capsys.readouterr().err == (
        f"{source}:3:1: error: a module does not import itself  [duplicate-name]\n"
    )


def test_a_single_file_finds_its_project_by_its_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "bank"
    shutil.copytree(PROJECTS / "bank", project)
    single = project / "ledger" / "transfers.pell"
    # without a project root, `accounts` is an unknown package: its types are unknown
    code, lines = _check([str(single)], capsys)
    assert code == 1 and any("no module `accounts` is known here" in line for line in lines)
    (project / "pyproject.toml").write_text('[project]\nname = "bank"\n\n[tool.pellc]\n')
    code, lines = _check([str(single)], capsys)
    assert code == 0, lines
    assert main(["build", str(single)]) == 0
    assert "bank.accounts.t_account" in capsys.readouterr().out


def test_a_retried_fn_calling_another_modules_committing_fn_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "a.pell").write_text(
        "module shop::stock;\n\npub fn close_day() {\n    sql! { commit };\n}\n"
    )
    (tmp_path / "b.pell").write_text(
        "module shop::orders;\n\nimport shop::stock;\n\n@retry(n = 3, on = [deadlock])\n"
        "pub fn run() {\n    stock::close_day();\n}\n"
    )
    code, lines = _check([str(tmp_path / "b.pell")], capsys)
    assert code == 1
    assert any(
        "b.pell:7:5: error:" in line and "[commit-in-retry]" in line for line in lines
    ), lines


def test_another_modules_finally_is_seen_by_the_retry_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `close_day` commits in its `finally` only: a retried caller in another module loses its
    # savepoint all the same
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "a.pell").write_text(
        "module shop::stock;\n\npub fn close_day() {\n"
        "    sql! { update days set closed = 1 };\n} finally {\n    sql! { commit };\n}\n"
    )
    (tmp_path / "b.pell").write_text(
        "module shop::orders;\n\nimport shop::stock;\n\n@retry(n = 3, on = [busy])\n"
        "pub fn run() {\n    stock::close_day();\n}\n"
    )
    code, lines = _check([str(tmp_path)], capsys)
    assert code == 1
    assert [line for line in lines if ": error: " in line] == [
        f"{tmp_path / 'b.pell'}:7:5: error: `shop.stock::close_day` commits (COMMIT): it ends "
        "the transaction, and with it the retry's savepoint (ORA-01086)  [commit-in-retry]"
    ]


def test_another_modules_transaction_scoped_fn_after_dml_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "a.pell").write_text(
        "module shop::payments;\n\n"
        '@retry(n = 3, scope = "transaction", on = [deadlock])\n'
        "pub fn charge(id: number) {\n"
        "    sql! { update cards set charged = 1 where id = :id };\n}\n\n"
        "pub fn charge_now(id: number) {\n    charge(id);\n}\n"
    )
    (tmp_path / "b.pell").write_text(
        "module shop::orders;\n\nimport shop::payments;\n\n"
        "pub fn place(id: number) {\n"
        "    sql! { insert into orders (id) values (:id) };\n"
        "    payments::charge_now(id);\n}\n"
    )
    code, lines = _check([str(tmp_path)], capsys)
    assert code == 1
    assert [line for line in lines if ": error: " in line] == [
        f"{tmp_path / 'b.pell'}:7:5: error: `shop.payments::charge_now` calls transaction-scoped "
        "`shop.payments::charge`, which refuses to start inside an open transaction; the DML "
        "before this call opens one whenever it changes a row, and the call then raises "
        "pell_transaction_open  [transaction-already-open]"
    ]
    # the build refuses it too, and writes nothing of the module
    assert main(["build", str(tmp_path), "-d", str(tmp_path / "out")]) == 1
    assert not (tmp_path / "out" / "orders.sql").exists()


def test_another_modules_retried_fn_called_from_sql_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "a.pell").write_text(
        "module shop::pricing;\n\n@retry(n = 3, on = [busy])\n"
        "pub fn price(id: number) -> number {\n"
        "    let p: number = sql! { select price from items where id = :id }.one();\n"
        "    return p;\n}\n"
    )
    (tmp_path / "b.pell").write_text(
        "module shop::orders;\n\nimport shop::pricing;\n\n"
        "pub fn total(id: number) -> number {\n"
        "    let t: number = sql! { select sum(pricing.price(item_id)) from lines "
        "where order_id = :id }.one();\n"
        "    return t;\n}\n"
    )
    code, lines = _check([str(tmp_path)], capsys)
    assert code == 1
    assert [line for line in lines if ": error: " in line] == [
        f"{tmp_path / 'b.pell'}:6:39: error: this SQL statement calls `shop.pricing::price`, "
        "which is retried (@retry runs SAVEPOINT and ROLLBACK TO): a fn called from SQL may not "
        "run SAVEPOINT, ROLLBACK or COMMIT, so Oracle raises an error when it does  "
        "[transaction-in-sql]"
    ]


def test_on_postgres_another_modules_committing_fn_called_from_sql_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 11, finding 4: that fn is a PROCEDURE on postgres, which no query can call; a
    savepoint-scoped retried fn is a FUNCTION there, which one can."""
    (tmp_path / "pell.toml").write_text("")
    (tmp_path / "a.pell").write_text(
        "module shop::pricing;\n\n@retry(n = 3, on = [busy])\n"
        "pub fn price(id: number) -> number {\n"
        "    let p: number = sql! { select price from items where id = :id }.one();\n"
        "    return p;\n}\n\n"
        "pub fn post(id: number) {\n    transaction {\n"
        "        sql! { insert into lines (id) values (:id) };\n    }\n}\n"
    )
    (tmp_path / "b.pell").write_text(
        "module shop::orders;\n\nimport shop::pricing;\n\n"
        "pub fn total(id: number) -> number {\n"
        "    let t: number = sql! { select sum(pricing.price(item_id)) from lines "
        "where order_id = :id and pricing.post(item_id) is null }.one();\n"
        "    return t;\n}\n"
    )
    code, lines = _check([str(tmp_path), "--target", "postgres"], capsys)
    assert code == 1
    assert [line for line in lines if ": error: " in line] == [
        f"{tmp_path / 'b.pell'}:6:99: error: this SQL statement calls `shop.pricing::post`, "
        "which commits (a `transaction { }` block): on postgres such a fn is a PROCEDURE, which "
        "only CALL runs, not a query  [transaction-in-sql]"
    ]


def test_an_unchanged_module_is_compiled_again_when_a_module_it_imports_changes(
    tmp_path: Path,
) -> None:
    project = tmp_path / "bank"
    shutil.copytree(PROJECTS / "bank", project)
    out = tmp_path / "out"
    assert main(["build", str(project), "-d", str(out)]) == 0
    accounts = project / "accounts.pell"
    # the record loses a field: the importer that builds the record must now fail
    accounts.write_text(
        accounts.read_text().replace("owner: text, balance: number", "owner: text"),
        encoding="utf-8",
    )
    assert main(["build", str(project), "-d", str(out)]) == 1


# ---- stubs -------------------------------------------------------------------


def test_every_shipped_stub_is_a_checked_stub_module() -> None:
    names = {path[0] for path in shipped_stubs()}
    assert {
        "dbms_output", "dbms_random", "dbms_session", "dbms_lock", "dbms_utility",
        "dbms_application_info", "dbms_sql", "dbms_stats", "dbms_scheduler", "utl_http",
        "utl_file", "utl_raw", "utl_url", "utl_smtp",
    } <= names  # fmt: skip
    for path in shipped_stubs():
        module = stub_index().parsed(path)
        assert module is not None and module.is_stub
        text = (Path(__file__).parents[1] / "pell" / "stubs" / f"{path[0]}.pell").read_text()
        result = compile_source(text, f"{path[0]}.pell")
        assert result.ok_stub, [d.message for d in result.diagnostics]


def test_stubbed_calls_are_typed_and_need_no_import() -> None:
    source = """module m;

pub fn f() -> number {
    dbms_output::put_line("x");
    dbms_output::put_line("x", 2);
    dbms_output::nosuch();
    let n: text = dbms_random::value();
    return dbms_random::value();
}
"""
    messages = [
        (d.code, d.message) for d in compile_source(source, "m.pell").diagnostics if d.is_error
    ]
    assert messages == [
        ("arity", "fn `dbms_output::put_line` takes 1 argument, but 2 were given"),
        ("unknown-fn", "module `dbms_output` has no fn `nosuch`"),
        ("type-mismatch", "`n` is declared `text` but is given a `number`"),
    ]


def test_stub_marks_drive_the_retry_checks() -> None:
    source = """module m;

@retry(n = 3, on = [deadlock])
pub fn f() {
    utl_http::request("http://example.com/");
    dbms_stats::gather_table_stats("HR", "EMP");
}
"""
    found = {d.code: d.message for d in compile_source(source, "m.pell").diagnostics}
    assert "sends an HTTP request" in found["side-effect-in-retry"]
    assert "commits before and after its work" in found["commit-in-retry"]


def test_optional_stub_parameters_may_be_left_out() -> None:
    source = """module m;

pub fn f() {
    dbms_stats::gather_table_stats("HR", "EMP");
    dbms_stats::gather_table_stats("HR");
}
"""
    errors = [d for d in compile_source(source, "m.pell").diagnostics if d.is_error]
    short = source.index('dbms_stats::gather_table_stats("HR");')
    assert len(errors) == 1 and errors[0].code == "arity" and errors[0].span.start == short


def test_a_bad_configuration_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pellc]\ntarget = "9i"\n')
    (tmp_path / "m.pell").write_text("module m;\n")
    assert main(["check", str(tmp_path / "m.pell")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pyproject.toml: [tool.pellc]: target `9i`" in err


STOCK = """module shop.stock;

pub error OutOfStock { sku: text }
pub error Busy;
error Internal;
@panic pub error Broken;

pub fn take(sku: text, qty: number) -> Result<number, OutOfStock | Busy> {
    return Ok(qty);
}
"""


def test_a_retry_retries_another_modules_error_named_in_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "db"
    src.mkdir()
    (src / "stock.pell").write_text(STOCK, "utf-8")
    orders = src / "orders.pell"
    orders.write_text(
        "module shop.orders;\n\nimport shop::stock;\n\n"
        "@retry(n = 3, backoff = 20, on = [busy, stock::Busy])\n"
        "pub fn place(sku: text) -> Result<number, stock::OutOfStock | stock::Busy> {\n"
        "    let n = stock::take(sku, 1)?;\n    return Ok(n);\n}\n",
        "utf-8",
    )
    out = tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    sql = (out / "orders.sql").read_text("utf-8")
    assert_oracle_accepts(sql)
    # stock's Busy is retried; its OutOfStock, like every other error, is rolled back and raised
    assert "WHEN e_pell_busy OR pell_runtime.shop_stock_busy THEN" in sql
    assert "pell_runtime.shop_stock_outofstock" not in sql
    assert "shop_stock_busy EXCEPTION;" in (out / "pell_runtime.sql").read_text("utf-8")
    capsys.readouterr()
    # the verifier injects stock's Busy and sees it retried, OutOfStock not
    assert main(["verify", str(src)]) == 0
    assert "no findings" in capsys.readouterr().out
    from pell.retry import RetryPolicy
    from pell.verify.model import Failure
    from pell.verify.properties import policy_retries

    policy = RetryPolicy(on=("busy", "shop.stock::Busy"))
    here = ("shop", "orders")
    for error, retried in [(("shop", "stock"), "Busy"), (here, "Busy")]:
        failure = Failure("x", pell_error=(error, retried))
        assert policy_retries(policy, failure, here) is (error != here)
    for written, message in [
        ("stock::Nope", "`stock::Nope` in `on`: `stock` has no error `Nope`"),
        ("stock::Internal", "`stock::Internal` in `on`: error `Internal` of `stock` is not `pub`"),
        ("stock::Broken", "`stock::Broken` is a @panic error"),
        ("ledger::Busy", "`ledger::Busy` in `on`: module `ledger` is not imported"),
    ]:
        orders.write_text(
            "module shop.orders;\n\nimport shop::stock;\n\n"
            f"@retry(n = 3, backoff = 20, on = [{written}])\npub fn place() {{\n}}\n",
            "utf-8",
        )
        code, err = _check([str(src)], capsys)
        assert code == 1
        assert any(
            line.startswith(f"{orders}:5:") and message in line and "[retry-argument]" in line
            for line in err
        ), err


def test_a_directory_with_settings_of_its_own_is_another_project(tmp_path: Path) -> None:
    (tmp_path / "a.pell").write_text("module a;\n\npub error E;\n", "utf-8")
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pell.toml").write_text("", "utf-8")
    (inner / "a.pell").write_text("module a;\n\npub error F;\n", "utf-8")  # same name: no clash
    out = tmp_path / "out"
    assert main(["build", str(tmp_path), "-d", str(out)]) == 0
    assert sorted(p.name for p in out.rglob("*.sql")) == ["a.sql", "pell_runtime.sql"]
    assert "c_a_f" not in (out / "pell_runtime.sql").read_text("utf-8")
    assert main(["build", str(inner), "-d", str(tmp_path / "inner_out")]) == 0
    assert (inner / "pell-error-codes.json").is_file()


def test_a_record_of_a_module_not_imported_reached_through_a_signature(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "db"
    src.mkdir()
    (src / "a.pell").write_text(
        "module x.a;\npub record R { id: number }\npub fn make() -> R { return R { id: 1 }; }\n"
    )
    (src / "b.pell").write_text(
        "module x.b;\nimport x::a;\npub fn get() -> a::R { return a::make(); }\n"
        "pub fn take(r: a::R) -> number { return r.id; }\n"
    )
    (src / "c.pell").write_text(
        "module x.c;\nimport x::b;\npub fn use_it() -> number {\n    let r = b::get();\n"
        "    let n = b::take(r);\n    return n + r.id;\n}\n"
    )
    out = tmp_path / "out"
    assert main(["build", str(src), "-d", str(out)]) == 0
    sql = (out / "c.sql").read_text("utf-8")
    assert_oracle_accepts(sql)
    assert "l_r x.a.t_r;" in sql and "RETURN l_n + l_r.id;" in sql
    capsys.readouterr()
    (src / "c.pell").write_text(
        "module x.c;\nimport x::b;\npub fn bad() -> text {\n    let s: text = b::get();\n"
        "    return b::get().nosuch;\n}\n"
    )
    code, err = _check([str(src)], capsys)
    assert code == 1
    assert err == [
        f"{src / 'c.pell'}:4:19: error: `s` is declared `text` but is given a `x.a::R`  "
        "[type-mismatch]",
        f"{src / 'c.pell'}:5:21: error: record `R` has no field `nosuch`  [unknown-field]",
    ]


def test_building_a_stub_alone_writes_nothing_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stub = tmp_path / "dbms_x.pell"
    stub.write_text("@stub\nmodule dbms_x;\n\npub fn ping(s: text);\n", "utf-8")
    out = tmp_path / "x.sql"
    assert main(["build", str(stub), "-o", str(out)]) == 0
    assert not out.exists()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"{stub}: a @stub module declares an Oracle package: nothing to generate\n"
    )


def test_another_modules_pipelined_fn_is_read_in_sql_not_called(tmp_path: Path) -> None:
    (tmp_path / "feeds.pell").write_text(
        "module shop.feeds;\n"
        "pub record Price { sym: text, amount: number }\n"
        "@pipelined\n"
        "pub fn prices(rows: cursor<Price>) -> stream<Price> {\n"
        "    for r in rows { yield r; }\n"
        "}\n",
        encoding="utf-8",
    )
    (tmp_path / "report.pell").write_text(
        "module shop.report;\n"
        "import shop::feeds;\n"
        "@pipelined\n"
        "pub fn doubled(rows: cursor<feeds::Price>) -> stream<number> {\n"
        "    for r in rows { yield r.amount * 2; }\n"
        "}\n"
        "pub fn wrong() -> number {\n"
        "    let n = feeds::prices(1);\n"
        "    return 0;\n"
        "}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code = main(["build", str(tmp_path), "-d", str(out)])
    assert code == 1
    report = (tmp_path / "report.pell").read_text(encoding="utf-8")
    (tmp_path / "report.pell").write_text(
        report.replace("    let n = feeds::prices(1);\n", ""), encoding="utf-8"
    )
    assert main(["build", str(tmp_path), "-d", str(out)]) == 0
    sql = (out / "report.sql").read_text(encoding="utf-8")
    assert_oracle_accepts(sql)
    # the other module's record is the FETCH target: the cursor's columns fill its fields,
    # fetched in batches into a list of it
    assert "l_r shop.feeds.t_price;" in sql
    assert "TYPE t_feeds_price_list IS TABLE OF shop.feeds.t_price INDEX BY PLS_INTEGER;" in sql
    assert "FETCH p_rows BULK COLLECT INTO l_pell_rows LIMIT 100;" in sql
    assert "l_r := l_pell_rows(l_pell_i);" in sql


def test_a_call_of_another_modules_pipelined_fn_is_located(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "feeds.pell").write_text(
        "module feeds;\n@pipelined\npub fn ids() -> stream<number> {\n    yield 1;\n}\n",
        encoding="utf-8",
    )
    (tmp_path / "report.pell").write_text(
        "module report;\nimport feeds;\npub fn n() -> number {\n"
        "    let xs = feeds::ids();\n    return 0;\n}\n",
        encoding="utf-8",
    )
    code, lines = _check([str(tmp_path)], capsys)
    assert code == 1
    assert [line for line in lines if ": error: " in line] == [
        f"{tmp_path / 'report.pell'}:4:14: error: `feeds::ids` is @pipelined: SQL reads its "
        "rows, PL/SQL cannot call it  [table-function]"
    ]


# ---- one file (or one directory) of a project: the project's retry checks ------


SHOP_STOCK = """module shop::stock;

// Closes the day's stock book: its own transaction, committed here.
pub fn close_day(day: date) {
    sql! { update stock_book set closed = 'Y' where day = :day };
    sql! { commit };
}
"""

SHOP_ORDERS = """module shop::orders;

import shop::stock;

@retry(n = 3, on = [busy])
pub fn settle(id: number, day: date) {
    sql! { update orders set state = 'SETTLED' where id = :id };
    stock::close_day(day);
}
"""


def _shop(tmp_path: Path, stock: str = SHOP_STOCK) -> Path:
    """A project (pell.toml at its root) whose orders module, in a directory of its own, calls
    the stock module's fn from a retried fn."""
    root = tmp_path / "shop"
    (root / "src" / "orders").mkdir(parents=True)
    (root / "pell.toml").write_text("", "utf-8")
    (root / "src" / "stock.pell").write_text(stock, "utf-8")
    (root / "src" / "orders" / "orders.pell").write_text(SHOP_ORDERS, "utf-8")
    return root


COMMIT_IN_RETRY = (
    "orders.pell:8:5: error: `shop.stock::close_day` commits (COMMIT): it ends the transaction,"
    " and with it the retry's savepoint (ORA-01086)  [commit-in-retry]"
)


@pytest.mark.parametrize(
    "command",
    ["build", "build -o", "build -d", "build dir -d", "check", "verify", "deploy", "explain"],
)
def test_one_file_of_a_project_is_refused_when_it_calls_another_modules_commit_from_a_retry(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """language.md section 11: whole-project facts stay whole-project whatever subset is built,
    checked or deployed. Each command that takes one file refuses it, as a directory build of
    the whole project does, and writes, prints or deploys nothing of it."""
    root = _shop(tmp_path)
    orders = root / "src" / "orders" / "orders.pell"
    out = tmp_path / "out"
    argv = {
        "build": ["build", str(orders)],
        "build -o": ["build", str(orders), "-o", str(out / "orders.sql")],
        "build -d": ["build", str(orders), "-d", str(out)],
        "build dir -d": ["build", str(orders.parent), "-d", str(out)],  # a subset of the project
        "check": ["check", str(orders)],
        "verify": ["verify", str(orders)],
        "deploy": ["deploy", "--dry-run", str(orders)],
        "explain": ["explain", str(orders)],
    }[command]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert any(line.endswith(COMMIT_IN_RETRY) for line in captured.err.splitlines()), captured
    assert captured.out == ""  # no SQL, no plan, no explanation, no "no findings"
    assert not list(out.rglob("*.sql")) if out.exists() else True
    if command == "deploy":
        assert "nothing deployed" in captured.err
    # the whole project, built as one directory, says the same
    assert main(["build", str(root), "-d", str(tmp_path / "whole")]) == 1
    assert COMMIT_IN_RETRY in capsys.readouterr().err


@pytest.mark.parametrize("command", ["build", "build -d", "check", "verify", "deploy", "explain"])
def test_one_file_of_a_project_without_a_commit_in_its_retries_is_accepted(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same project with a stock module that leaves the commit to its caller: every command
    accepts the file, and a build writes the named file's output only, not the modules it
    imports (each module's output is its own build's)."""
    root = _shop(tmp_path, SHOP_STOCK.replace("    sql! { commit };\n", ""))
    orders = root / "src" / "orders" / "orders.pell"
    out = tmp_path / "out"
    argv = {
        "build": ["build", str(orders)],
        "build -d": ["build", str(orders), "-d", str(out)],
        "check": ["check", str(orders)],
        "verify": ["verify", str(orders)],
        "deploy": ["deploy", "--dry-run", str(orders)],
        "explain": ["explain", str(orders)],
    }[command]
    assert main(argv) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert "error" not in captured.err
    if command == "build":
        assert "CREATE OR REPLACE PACKAGE BODY shop.orders" in captured.out
        assert "shop.stock" in captured.out and "PACKAGE shop.stock" not in captured.out
    if command == "build -d":
        assert sorted(p.name for p in out.rglob("*.sql")) == ["orders.sql"]
    if command == "deploy":
        assert "orders.sql: PACKAGE BODY" in captured.out and "stock" not in captured.out


def test_one_file_is_checked_with_what_the_modules_it_imports_reach_at_any_depth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """orders -> ledger -> stock: the commit two modules away refuses the single-file build."""
    root = _shop(tmp_path)
    orders = root / "src" / "orders" / "orders.pell"
    (root / "src" / "ledger.pell").write_text(
        "module shop::ledger;\n\nimport shop::stock;\n\n"
        "pub fn book(day: date) {\n    stock::close_day(day);\n}\n",
        "utf-8",
    )
    orders.write_text(
        SHOP_ORDERS.replace("import shop::stock;", "import shop::ledger;").replace(
            "stock::close_day(day)", "ledger::book(day)"
        ),
        "utf-8",
    )
    assert main(["build", str(orders)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "orders.pell:8:5: error: `shop.ledger::book` commits (COMMIT, in " in captured.err


@pytest.mark.parametrize("command", ["build", "check", "verify", "deploy", "explain"])
def test_an_error_elsewhere_in_an_imported_module_does_not_hide_its_commit(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The stock module has an unrelated error in another fn (its own build reports it): its
    bodies are still checked, so the commit `settle` reaches is still seen from orders alone."""
    broken = SHOP_STOCK + '\npub fn opening_count() -> number {\n    return "none";\n}\n'
    root = _shop(tmp_path, broken)
    orders = root / "src" / "orders" / "orders.pell"
    argv = {
        "build": ["build", str(orders)],
        "check": ["check", str(orders)],
        "verify": ["verify", str(orders)],
        "deploy": ["deploy", "--dry-run", str(orders)],
        "explain": ["explain", str(orders)],
    }[command]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert any(line.endswith(COMMIT_IN_RETRY) for line in captured.err.splitlines()), captured
    assert captured.out == ""


# One file reached by two names: a path through `..`, a directory given twice, a symlinked
# directory, a symlink to a file beside it. Each is one module, not a duplicate of itself,
# and its diagnostics name it as the command did (relative, as given).
SAME_FILE = {
    "check a/../a/file": (["check", "--no-verify", "proj/src/../src/orders.pell"], "proj/src/../src"),
    "build a/../a/file": (["build", "proj/src/../src/orders.pell"], "proj/src/../src"),
    "build x/.. -d": (["build", "proj/x/..", "-d", "out"], "proj/x/../src"),
    "check dir dir/../dir": (["check", "--no-verify", "proj/src", "proj/src/../src"], "proj/src"),
    "check file a/../a/file": (
        ["check", "--no-verify", "proj/src/orders.pell", "proj/src/../src/orders.pell"], "proj/src"
    ),
    "check link/file": (["check", "--no-verify", "proj/link/orders.pell"], "proj/link"),
    "build link -d": (["build", "proj/link", "-d", "out"], "proj/link"),
    "check dir with alias": (["check", "--no-verify", "proj/src"], "proj/src"),
    "build dir with alias -d": (["build", "proj/src", "-d", "out"], "proj/src"),
}  # fmt: skip


@pytest.mark.parametrize("case", SAME_FILE)
def test_a_file_reached_by_two_names_is_one_module(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv, shown = SAME_FILE[case]
    src = tmp_path / "proj" / "src"
    src.mkdir(parents=True)
    (tmp_path / "proj" / "x").mkdir()
    (tmp_path / "proj" / "pell.toml").write_text("", "utf-8")
    (tmp_path / "proj" / "link").symlink_to("src", target_is_directory=True)
    (src / "pricing.pell").write_text(
        "module shop.pricing;\npub fn price(id: number) -> number { return id; }\n", "utf-8"
    )
    (src / "orders.pell").write_text(
        "module shop.orders;\nimport shop::pricing;\n"
        "pub fn total(id: number) -> number { return pricing::price(id); }\n"
        'pub fn bad() -> number { return "x"; }\n',
        "utf-8",
    )
    if "alias" in case:
        (src / "alias.pell").symlink_to("orders.pell")  # sorted first, a symlink: not its name
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if ": error: " in line] == [
        f"{shown}/orders.pell:4:33: error: fn `bad` returns `number`, not `text`  [return-type]"
    ]
    if "-d" in argv:
        assert err[-1] == "built 1, unchanged 0, failed 1"
        assert sorted(p.name for p in (tmp_path / "out").rglob("*.sql")) == ["pricing.sql"]


def test_a_projects_file_is_found_by_any_of_its_names(tmp_path: Path) -> None:
    from pell.build import project_of

    src = tmp_path / "src"
    src.mkdir()
    (tmp_path / "link").symlink_to("src", target_is_directory=True)
    (src / "a.pell").write_text("module a;\npub fn f() { }\n", "utf-8")
    (src / "copy.pell").write_text("module a;\npub fn g() { }\n", "utf-8")
    project = project_of([src])
    file = project.file(src / "a.pell")
    assert file is not None
    for name in (src / ".." / "src" / "a.pell", tmp_path / "link" / "a.pell"):
        assert project.file(name) is file
        duplicate = project.duplicate_of(name)  # still a duplicate of the other file, not itself
        assert duplicate is not None and f"declared in {src / 'copy.pell'};" in duplicate.message
    assert project.file(src / "b.pell") is None


# Module headers, each as the grammar takes it (review 3, N4), and some it refuses
HEADERS = [
    "module a.b;",
    "module a::b::c ;",
    '@package ("prices")\nmodule shop.pricing;',
    '@package("a(b)") module a.b;',
    '@package("a\\"b)") module a.b;',
    '// c (\n/* x ) */ @stub @package( "x{1 + (2)}y{{" ) module a::b ;',
    "@irreversible(`it writes (files)`)\n@stub\nmodule m;",
    "@ package /* c */ (\"q\") // d )\n module /* e */ a . b;",
    '@retry(n = 3, on = [busy, deadlock])\nmodule x;',
    '@doc("{f(")")} and }} )") module x;',
]
REFUSED = [
    "module a.b::c;",
    '@p("unterminated) module a;',
    "modulex a;",
    "@p(a)) module a;",
    "/* unterminated module a;",
    "@p(}) module a;",
]


@pytest.mark.parametrize("text", HEADERS)
def test_a_module_header_is_read_as_the_parser_reads_it(text: str) -> None:
    """The header reader (pell.project.read_header) finds each module's path and annotations
    without parsing the file: the same the parser finds."""
    module, diagnostics = parse(text + "\n")
    assert module is not None, diagnostics
    header = read_header(text)
    assert header is not None
    assert header.path == module.path
    assert header.annotations == {annotation.name for annotation in module.annotations}


@pytest.mark.parametrize("text", REFUSED)
def test_a_header_the_parser_refuses_declares_no_module(text: str) -> None:
    assert parse(text + "\n")[0] is None
    assert read_header(text) is None
