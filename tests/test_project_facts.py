"""A project's retry facts, whole whatever is built: a project's own `@stub` modules, whose
`@commits("why")` and `@irreversible("why")` marks count as pellc's own stubs' do (language.md
section 11), and modules with errors, whose facts still count; each in a directory build,
`check`, and the one-file commands, and across incremental builds."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_projects import COMMIT_IN_RETRY, SHOP_STOCK, _shop

from pell.cli import main

# A project's own package, declared by a stub: `purge` commits (the package's own COMMIT).
JOBS_STUB = """@stub
module acme_jobs;

@commits("its purge commits each batch")
pub fn purge(days: number);

@irreversible("sends a message to the operators")
pub fn notify(message: text);

pub fn pending() -> number;
"""

# Retried, and calls the stub with no import (a stubbed package needs none).
ORDERS = """module shop::orders;

@retry(n = 3, on = [busy])
pub fn settle(id: number) {
    sql! { update orders set state = 'SETTLED' where id = :id };
    let left = acme_jobs::pending();
    acme_jobs::purge(30);
}
"""

STUB_COMMIT_IN_RETRY = (
    'orders.pell:7:5: error: `acme_jobs::purge` commits (marked @commits("its purge commits '
    "each batch\")): it ends the transaction, and with it the retry's savepoint (ORA-01086)  "
    "[commit-in-retry]"
)


def _project(tmp_path: Path, stub: str = JOBS_STUB, orders: str = ORDERS) -> Path:
    """A project (pell.toml at its root): the stub in src/, orders in a directory of its own."""
    root = tmp_path / "shop"
    (root / "src" / "orders").mkdir(parents=True)
    (root / "pell.toml").write_text("", "utf-8")
    (root / "src" / "acme_jobs.pell").write_text(stub, "utf-8")
    (root / "src" / "orders" / "orders.pell").write_text(orders, "utf-8")
    return root


COMMANDS = {
    "build dir -d": lambda root, out: ["build", str(root), "-d", str(out)],
    "build": lambda root, out: ["build", str(root / "src" / "orders" / "orders.pell")],
    "build -d": lambda root, out: [
        "build", str(root / "src" / "orders" / "orders.pell"), "-d", str(out)
    ],
    "check": lambda root, out: ["check", str(root / "src" / "orders" / "orders.pell")],
    "check dir": lambda root, out: ["check", str(root)],
    "verify": lambda root, out: ["verify", str(root / "src" / "orders" / "orders.pell")],
    "deploy": lambda root, out: [
        "deploy", "--dry-run", str(root / "src" / "orders" / "orders.pell")
    ],
    "explain": lambda root, out: ["explain", str(root / "src" / "orders" / "orders.pell")],
}  # fmt: skip


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_project_stubs_commits_mark_refuses_a_retried_caller(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """language.md section 11: "a stub can also mark a fn as committing, which the
    retry-safety checks use". A retried fn of another module that calls it is refused, located
    at the call, by a build of the whole project and by each command given that one file; and
    nothing of it is written, printed or deployed."""
    root = _project(tmp_path)
    out = tmp_path / "out"
    assert main(COMMANDS[command](root, out)) == 1
    captured = capsys.readouterr()
    assert any(line.endswith(STUB_COMMIT_IN_RETRY) for line in captured.err.splitlines()), (
        captured.err
    )
    assert captured.out == ""
    assert not list(out.rglob("orders.sql")) if out.exists() else True


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_project_stub_without_the_mark_is_accepted(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same project with `purge` unmarked: no command finds a commit (the mark, not the
    call, is what commits)."""
    stub = JOBS_STUB.replace('@commits("its purge commits each batch")\n', "")
    root = _project(tmp_path, stub)
    assert main(COMMANDS[command](root, tmp_path / "out")) == 0, capsys.readouterr().err
    assert "[commit-in-retry]" not in capsys.readouterr().err


# orders -> ledger -> acme.jobs (a schema-qualified stub, imported): a `transaction { }` block
# that reaches the commit through a call of another module
LEDGER = """module shop::ledger;

import acme::jobs;

pub fn book(day: date) {
    jobs::purge(30);
}
"""

QUALIFIED_STUB = JOBS_STUB.replace("module acme_jobs;", "module acme.jobs;")


@pytest.mark.parametrize(
    ("orders", "expected"),
    [
        (
            "module shop::orders;\n\nimport shop::ledger;\n\npub fn close(day: date) {\n"
            "    transaction {\n        ledger::book(day);\n    }\n}\n",
            "orders.pell:7:9: error: `shop.ledger::book` commits (marked @commits(\"its purge "
            'commits each batch"), in `acme.jobs::purge`), inside a `transaction { }` block: '
            "the block's work would be committed before the block ends  "
            "[commit-in-transaction]",
        ),
        (
            # a PL/SQL block calls it by its Oracle name: any case, with its schema
            "module shop::orders;\n\n@retry(n = 3, on = [busy])\npub fn close(day: date) {\n"
            "    sql! { begin ACME.Jobs.PURGE(days => 30); end; };\n}\n",
            'orders.pell:5:5: error: `acme.jobs::purge` commits (marked @commits("its purge '
            "commits each batch\")): it ends the transaction, and with it the retry's savepoint "
            "(ORA-01086)  [commit-in-retry]",
        ),
    ],
    ids=["transaction through a call", "plsql block"],
)
@pytest.mark.parametrize("command", ["build dir -d", "check", "build"])
def test_a_stubs_commit_is_found_through_calls_and_in_plsql_blocks(
    orders: str,
    expected: str,
    command: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = _project(tmp_path, QUALIFIED_STUB, orders)
    (root / "src" / "acme_jobs.pell").rename(root / "src" / "jobs.pell")
    (root / "src" / "ledger.pell").write_text(LEDGER, "utf-8")
    assert main(COMMANDS[command](root, tmp_path / "out")) == 1
    captured = capsys.readouterr()
    assert any(line.endswith(expected) for line in captured.err.splitlines()), captured.err
    assert captured.out == ""


@pytest.mark.parametrize("written", ["acme_jobs.purge(30)", "app_owner.Acme_Jobs.PURGE"])
def test_a_plsql_block_calls_a_stub_by_its_package_with_or_without_a_schema(
    written: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    orders = (
        "module shop::orders;\n\n@retry(n = 3, on = [busy])\npub fn close(day: date) {\n"
        f"    sql! {{ begin {written}; end; }};\n}}\n"
    )
    root = _project(tmp_path, orders=orders)
    assert main(COMMANDS["check"](root, tmp_path / "out")) == 1
    expected = STUB_COMMIT_IN_RETRY.replace("orders.pell:7:5:", "orders.pell:5:5:")
    err = capsys.readouterr().err
    assert any(line.endswith(expected) for line in err.splitlines()), err


def test_a_plsql_block_names_only_what_it_calls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A stub's call in a string, or the field of a local record named like the stub, set, is
    no call."""
    orders = (
        "module shop::orders;\n\n@retry(n = 3, on = [busy])\npub fn close(day: date) {\n"
        "    sql! { declare acme_jobs jobs%rowtype; begin "
        "dbms_output.put_line('acme_jobs.purge(1);'); acme_jobs.purge := 1; end; };\n}\n"
    )
    root = _project(tmp_path, orders=orders)
    assert main(COMMANDS["check"](root, tmp_path / "out")) == 0, capsys.readouterr().err


def test_a_project_stubs_irreversible_mark_warns_in_a_retry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`@irreversible("why")` of a project's stub drives side-effect-in-retry, as pellc's own
    stubs' marks do."""
    stub = JOBS_STUB.replace('@commits("its purge commits each batch")\n', "")
    orders = ORDERS.replace("acme_jobs::purge(30);", 'acme_jobs::notify("settled");')
    root = _project(tmp_path, stub, orders)
    assert main(COMMANDS["check"](root, tmp_path / "out")) == 0
    err = capsys.readouterr().err
    assert (
        "orders.pell:7:5: warning: `acme_jobs::notify` sends a message to the operators; a "
        "rollback cannot take that back, so every attempt repeats it  [side-effect-in-retry]"
    ) in err, err


@pytest.mark.parametrize("imported", [False, True], ids=["no import", "imported"])
def test_a_mark_added_to_a_stub_refuses_the_next_build_of_its_callers(
    imported: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Incremental builds: the stub gains `@commits`, the caller's text does not change (with
    no import, its recorded facts are reused): the next build refuses the caller all the same;
    and accepts it again once the mark is gone."""
    unmarked = JOBS_STUB.replace('@commits("its purge commits each batch")\n', "")
    orders = ORDERS.replace("module shop::orders;\n", "module shop::orders;\n\nimport acme_jobs;\n")
    root = _project(tmp_path, unmarked, orders if imported else ORDERS)
    out = tmp_path / "out"
    argv = ["build", str(root), "-d", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    stub = root / "src" / "acme_jobs.pell"
    stub.write_text(JOBS_STUB, "utf-8")
    assert main(argv) == 1
    err = capsys.readouterr().err
    line = 9 if imported else 7
    expected = STUB_COMMIT_IN_RETRY.replace("orders.pell:7:", f"orders.pell:{line}:")
    assert any(found.endswith(expected) for found in err.splitlines()), err
    assert "failed 1" in err
    stub.write_text(unmarked, "utf-8")
    assert main(argv) == 0, capsys.readouterr().err


BROKEN_STOCK = SHOP_STOCK + '\npub fn opening_count() -> number {\n    return "none";\n}\n'


@pytest.mark.parametrize("command", ["build dir -d", "check dir"])
def test_a_module_with_errors_still_refuses_the_retried_fns_that_reach_its_commit(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole project at once: stock has an unrelated type error, and orders' retried
    `settle` calls stock's `close_day`, which commits. orders is refused too (as a build of
    orders alone refuses it), not written while stock fails."""
    root = _shop(tmp_path, BROKEN_STOCK)
    out = tmp_path / "out"
    argv = (
        ["build", str(root), "-d", str(out)]
        if command == "build dir -d"
        else ["check", "--no-verify", str(root)]
    )
    assert main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert any(line.endswith(COMMIT_IN_RETRY) for line in err), err
    assert any("stock.pell:10:12: error:" in line and "[return-type]" in line for line in err)
    if command == "build dir -d":
        assert err[-1] == "built 0, unchanged 0, failed 2"
        assert not list(out.rglob("*.sql"))


def test_a_module_that_breaks_refuses_its_unchanged_callers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Incremental: orders was built when stock did not commit; stock now commits and has an
    unrelated error. orders, unchanged but for what it imports, is refused in the next build."""
    root = _shop(tmp_path, SHOP_STOCK.replace("    sql! { commit };\n", ""))
    out = tmp_path / "out"
    argv = ["build", str(root), "-d", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    (root / "src" / "stock.pell").write_text(BROKEN_STOCK, "utf-8")
    assert main(argv) == 1
    err = capsys.readouterr().err.splitlines()
    assert any(line.endswith(COMMIT_IN_RETRY) for line in err), err
    # neither keeps the output of the build before (README, "As a build step")
    assert err[-1].endswith("failed 2, removed 2")
    assert not list(out.rglob("*.sql"))


@pytest.mark.parametrize(
    "header",
    [
        '@irreversible("it mails the operators (SMTP)")\n@stub\nmodule acme_jobs;',
        '// Acme (vendor)\n@stub\n@irreversible ("mails")\nmodule acme_jobs;',
        "@stub /* no arguments */ module acme_jobs;",
    ],
)
@pytest.mark.parametrize("command", ["check", "build"])
def test_a_project_stub_is_found_by_its_header_as_the_parser_reads_it(
    header: str, command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Review 3, N4: the one-file commands join the project's stubs by their headers, read as
    the grammar reads them: a `)` inside an annotation's string, a space before `(`, a
    comment."""
    root = _project(tmp_path, JOBS_STUB.replace("@stub\nmodule acme_jobs;", header))
    assert main(COMMANDS[command](root, tmp_path / "out")) == 1
    err = capsys.readouterr().err
    assert any(line.endswith(STUB_COMMIT_IN_RETRY) for line in err.splitlines()), err


@pytest.mark.parametrize("command", ["check", "check dir"])
def test_a_stub_fn_that_commits_called_from_sql_is_refused(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A project stub's fn marked @commits, called from a SQL statement, in `sql! { }` or in
    a PL/SQL block's query: a function called from SQL may not commit (transaction-in-sql)."""
    stub = JOBS_STUB + '\n@commits("it commits each batch")\npub fn purged(days: number) -> number;\n'
    orders = (
        "module shop::orders;\n\npub fn count(id: number) -> number {\n"
        "    let n: number = sql! { select acme_jobs.purged(30) from dual }.one();\n"
        "    sql! { declare x number; begin select ACME_JOBS.PURGED(30) into x from dual; end; };\n"
        "    return n;\n}\n"
    )
    root = _project(tmp_path, stub, orders)
    assert main(COMMANDS[command](root, tmp_path / "out")) == 1
    err = capsys.readouterr().err
    found = [line.split("/")[-1].split(" (marked")[0] for line in err.splitlines() if "error" in line]
    assert found == [
        "orders.pell:4:35: error: this SQL statement calls `acme_jobs::purged`, which commits",
        "orders.pell:5:43: error: this SQL statement calls `acme_jobs::purged`, which commits",
    ]
