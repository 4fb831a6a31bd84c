"""Pell calls of transaction-scoped fns on `--target postgres` (issue 28, "Done when"): a
script's DO block and a PROCEDURE CALL them, each attempt's COMMIT ending the caller's
transaction where PL/pgSQL allows it (PostgreSQL 15 docs, 43.8 "Transaction Management":
"CALL or DO invocations from the top level or nested CALL or DO invocations without any other
intervening command"); where it does not, a located `unsupported` error. Run on each server of
conftest.py (the embedded one, and the system one where pg_config finds it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pell import compile_source
from pell.runtime import number_errors

psycopg = pytest.importorskip("psycopg")

ROOT = Path(__file__).parent.parent

LEDGER = """\
module ledger;

@retry(n = 5, backoff = 1, scope = "transaction")
pub fn transfer(from_id: number, to_id: number, amount: number) {
    sql! { update accounts set balance = balance - :amount where id = :from_id };
    sql! { update accounts set balance = balance + :amount where id = :to_id };
}

@retry(n = 5, backoff = 1, scope = "transaction")
pub fn next_number() -> number {
    return sql! { update counters set n = n + 1 returning n }.returning::<number>().one();
}

// a PROCEDURE: it calls transaction-scoped fns, which only a procedure's CALL may nest
pub fn round_trip(a: number, b: number) {
    transfer(a, b, 5);
    transfer(b, a, 2);
}
"""

SETUP = (
    "create table accounts (id numeric primary key, balance numeric not null);"
    "insert into accounts values (1, 100), (2, 100);"
    "create table counters (n numeric not null);"
    "insert into counters values (0);"
)

SCRIPT = """\
import ledger;
for i in 1..=3 {
    ledger::transfer(1, 2, 10);
}
let n = ledger::next_number();
println("number {n}");
ledger::round_trip(1, 2);
sql! { insert into accounts (id, balance) values (3, null) };
"""


def url(conninfo: str) -> str:
    """conftest's `host=... port=... user=postgres dbname=...` as a postgresql:// URL."""
    fields = dict(part.split("=", 1) for part in conninfo.split())
    return (
        f"postgresql://{fields['user']}@/{fields['dbname']}"
        f"?host={fields['host']}&port={fields['port']}"
    )


def rows(dsn: str, query: str) -> list[tuple[object, ...]]:
    with psycopg.connect(dsn, autocommit=True) as connection:
        return connection.execute(query).fetchall()  # type: ignore[no-any-return]


def pellc_exec(script: Path, database: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PELL_DB_URL", "PELL_DSN")}
    env["PELL_PG_DATA"] = str(tmp_path / "unused")  # no embedded server of pellc's own
    return subprocess.run(
        [sys.executable, "-m", "pell", "exec", "--db", url(database), script.name],
        capture_output=True,
        text=True,
        env=env,
        cwd=script.parent,
        timeout=120,
        check=False,
    )


def test_a_script_calls_transaction_scoped_fns_and_each_call_commits(
    postgres_database: str, tmp_path: Path
) -> None:
    """`pellc exec` runs the script's DO block at the top level (autocommit): each CALL commits
    its work, so the failure of the script's last statement rolls back only what came after
    the last call; the CALLs nested in round_trip commit as well."""
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(SETUP)
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    (tmp_path / "ledger.pell").write_text(LEDGER)
    (tmp_path / "run.pell").write_text(SCRIPT)
    ran = pellc_exec(tmp_path / "run.pell", postgres_database, tmp_path)
    assert (ran.returncode, ran.stdout) == (1, "number 1\n"), ran.stderr
    assert ran.stderr.startswith("run.pell:8:1: error: null value in column")
    # 3 x 10 from 1 to 2, then round_trip: 5 from 1 to 2, 2 back
    assert rows(postgres_database, "select id, balance from accounts order by id") == [
        (1, 67),
        (2, 133),
    ]
    assert rows(postgres_database, "select n from counters") == [(1,)]
    assert not (tmp_path / "unused").exists()


def load(dsn: str) -> None:
    result = compile_source(LEDGER, "ledger.pell", "postgres")
    assert result.sql is not None and result.module is not None, result.diagnostics
    numbered, _ = number_errors([result.module])
    from pell.postgres import runtime_sql

    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(SETUP)
        connection.execute(runtime_sql([(e.exception, e.code) for e in numbered], "-- rt"))
        connection.execute(result.sql)


def test_a_transaction_scoped_fn_refuses_a_callers_transaction_that_has_written(
    postgres_database: str,
) -> None:
    """As on Oracle, where it checks DBMS_TRANSACTION.LOCAL_TRANSACTION_ID: its first COMMIT
    would commit the caller's work, a retry's ROLLBACK undo it. pellc's own error, before
    either; the caller's write is rolled back with the error."""
    load(postgres_database)
    refused = "PE399"
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        with pytest.raises(psycopg.Error) as raised:
            connection.execute(
                "DO $$ BEGIN UPDATE counters SET n = 50; CALL ledger.transfer(1, 2, 1); END $$"
            )
        assert raised.value.sqlstate == refused
        assert 'ledger.transfer: @retry(scope = "transaction") starts its own transaction' in str(
            raised.value
        )
        # a caller that has only read is no open transaction: the call runs and commits
        connection.execute(
            "DO $$ BEGIN PERFORM count(*) FROM accounts; CALL ledger.round_trip(1, 2); END $$"
        )
    with psycopg.connect(postgres_database) as client:  # psycopg's BEGIN first
        client.execute("UPDATE counters SET n = 60")
        with pytest.raises(psycopg.Error) as raised:
            client.execute("CALL ledger.transfer(1, 2, 1)")
        assert raised.value.sqlstate == refused
    assert rows(postgres_database, "select n from counters") == [(0,)]
    assert rows(postgres_database, "select balance from accounts order by id") == [(97,), (103,)]


def refusals(source: str) -> list[str]:
    result = compile_source(source, "m.pell", "postgres")
    assert result.sql is None
    return [
        "{}:{}: {}".format(*result.source.line_col(d.span.start), d.message)
        for d in result.diagnostics
        if d.is_error
    ]


def test_a_call_of_a_transaction_scoped_fn_where_plpgsql_cannot_commit_is_a_located_error() -> None:
    source = """module m;

@retry(scope = "transaction")
fn next() -> number {
    return sql! { update counters set n = n + 1 returning n }.returning::<number>().one();
}

@retry(scope = "transaction")
fn bump() {
    sql! { update counters set n = n + 1 };
}

fn valued() -> number {
    bump();
    return 1;
}

fn cleaned() {
    bump();
} finally {
    println("done");
}

@autonomous
fn alone() {
    bump();
}

fn summed() {
    let x = next() + 1;
}

fn chosen(flag: bool) {
    if flag && next() > 0 {
        println("both");
    }
}

fn whole() {
    let x = next();
    x = next();
    bump();
}
"""
    tail = " is not supported on postgres yet"
    which = "a call of `{}`, which commits (a transaction-scoped `@retry`), "
    expression = (
        "inside an expression (only as a statement, or as the whole value of a `let` or an "
        "assignment)"
    )
    assert refusals(source) == [
        f"14:5: {which.format('bump')}in a fn that returns a value (a FUNCTION, which cannot "
        f"COMMIT){tail}",
        f"19:5: {which.format('bump')}in a fn with `finally` (its body is a block with an "
        f"exception handler, inside which PostgreSQL ends no transaction){tail}",
        f"26:5: {which.format('bump')}in an `@autonomous` fn (its body runs as a FUNCTION, in a "
        f"session of its own){tail}",
        f"30:13: {which.format('next')}{expression}{tail}",
        f"34:16: {which.format('next')}{expression}{tail}",
    ]


def test_a_fn_that_calls_a_transaction_scoped_fn_is_a_procedure_that_calls_it() -> None:
    result = compile_source(LEDGER, "ledger.pell", "postgres")
    assert result.sql is not None
    body = result.sql.split("CREATE OR REPLACE PROCEDURE ledger.round_trip(", 1)[1]
    assert "CALL ledger.transfer(p_a, p_b, 5);" in body.split("$pell$;", 1)[0]


def test_exec_redeploys_a_fn_whose_routine_kind_changed(
    postgres_database: str, tmp_path: Path
) -> None:
    """A fn made transaction-scoped becomes a PROCEDURE, and one made savepoint-scoped again a
    FUNCTION: CREATE OR REPLACE changes no routine's kind (42809), so the deploy drops the
    old one first."""
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute(SETUP)
    (tmp_path / "pell.toml").write_text('target = "postgres"\n')
    (tmp_path / "run.pell").write_text("import ledger;\nledger::transfer(1, 2, 1);\n")
    kinds = []
    for scope in ("savepoint", "transaction", "savepoint"):
        source = LEDGER.replace('scope = "transaction"', f'scope = "{scope}"')
        (tmp_path / "ledger.pell").write_text(source)
        ran = pellc_exec(tmp_path / "run.pell", postgres_database, tmp_path)
        assert ran.returncode == 0, ran.stderr
        kinds += rows(
            postgres_database,
            "select prokind from pg_proc where oid = 'ledger.transfer'::regproc",
        )
    assert kinds == [("f",), ("p",), ("f",)]
    assert rows(postgres_database, "select balance from accounts order by id") == [(97,), (103,)]
