"""`--target postgres` against a real PostgreSQL server: the compiled code loads, returns the
right values, and its retry loop behaves under real deadlocks (issue 14).

One throwaway cluster of each kind serves the run (conftest.py, tests/postgres_server.py): each
test runs on pellc's embedded server and again on the system server, with a database of its
own on each. A server that cannot be had skips its run with the reason.
"""

from __future__ import annotations

import json
import shutil
import threading
from decimal import Decimal
from pathlib import Path

import pytest

from pell import compile_source
from pell.postgres import runtime_sql
from pell.runtime import number_errors

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def dsn(postgres_database: str) -> str:
    """A fresh database for one test (conftest.py: one server for the run)."""
    return postgres_database


def load(dsn: str, source: str, setup: str = "") -> None:
    """Compile `source` for postgres and load it, its runtime and `setup` SQL."""
    result = compile_source(source, "module.pell", "postgres")
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert result.sql is not None, errors
    assert result.module is not None
    numbered, _ = number_errors([result.module])
    runtime = runtime_sql([(e.exception, e.code) for e in numbered], "-- runtime")
    with psycopg.connect(dsn, autocommit=True) as connection:
        if setup:
            connection.execute(setup)
        connection.execute(runtime)
        connection.execute(result.sql)


BANK = """
module bank.transfers;

pub record Account { id: number, owner: text, balance: number }

pub error NotFound { id: number }
pub error Overdraft { account_id: number, needed: number }

pub fn find(id: number) -> Result<Account, NotFound> {
    let a = sql! { select id, owner, balance from accounts where id = :id }.one()?;
    return Ok(a);
}

pub fn greeting(id: number) -> text {
    let owner: text = sql! { select owner from accounts where id = :id }.one();
    let nickname: text = None;
    return "Hello {owner}{nickname}, {id + 1}";
}

@retry(n = 20, backoff = 10, jitter = 20, exponential = true, cap = 200)
pub fn transfer(from_id: number, to_id: number, amount: number, pause: number) -> Result<(), Overdraft | NotFound> {
    let attempt: number = sql! { select nextval('attempts') }.one();
    let source = find(from_id)?;
    if source.balance < amount {
        return Err(Overdraft { account_id: from_id, needed: amount - source.balance });
    }
    sql! { update accounts set balance = balance - :amount where id = :from_id };
    let slept: text = sql! { select pg_sleep(:pause)::text }.one();
    sql! { update accounts set balance = balance + :amount where id = :to_id };
    return Ok(());
}

pub fn total() -> number {
    var sum: number = 0;
    for r in sql! { select balance from accounts } {
        sum = sum + r.balance;
    }
    return sum;
}
"""

BANK_SETUP = """
create sequence attempts;
create table accounts (id numeric primary key, owner text not null, balance numeric not null);
insert into accounts values (1, 'ada', 1000), (2, 'bob', 1000);
"""


def test_the_reference_module_loads_and_returns_the_right_values(dsn: str) -> None:
    load(dsn, BANK, BANK_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute("select (bank_transfers.find(2)).*").fetchone()
        assert row == (2, "bob", 1000)
        # interpolation skips a NULL as Oracle's || does, and formats numbers as text
        greeting = connection.execute("select bank_transfers.greeting(1)").fetchone()
        assert greeting == ("Hello ada, 2",)
        connection.execute("select bank_transfers.transfer(1, 2, 250, 0)")
        assert connection.execute("select bank_transfers.total()").fetchone() == (2000,)
        balances = connection.execute("select balance from accounts order by id").fetchall()
        assert balances == [(750,), (1250,)]


def test_pell_errors_carry_their_sqlstate_and_json_message(dsn: str) -> None:
    load(dsn, BANK, BANK_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select bank_transfers.find(99)")
        assert raised.value.sqlstate == "PE100"  # NotFound: the first code of its range
        assert raised.value.diag.message_primary == 'bank.transfers.NotFound: {"id" : 99}'
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select bank_transfers.transfer(1, 2, 5000, 0)")
        assert raised.value.sqlstate == "PE101"
        # the fn's own error is not retried: one attempt only (a sequence is never rolled back)
        assert connection.execute("select last_value from attempts").fetchone() == (1,)
        balances = connection.execute("select balance from accounts order by id").fetchall()
        assert balances == [(1000,), (1000,)]


def test_opposite_order_transfers_deadlock_and_every_one_completes(dsn: str) -> None:
    load(dsn, BANK, BANK_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        before = connection.execute(
            "select deadlocks from pg_stat_database where datname = current_database()"
        ).fetchone()
    failures: list[BaseException] = []
    per_session = 6

    def session(index: int) -> None:
        from_id, to_id = (1, 2) if index % 2 else (2, 1)
        try:
            with psycopg.connect(dsn, autocommit=True) as connection:
                for _ in range(per_session):
                    connection.execute(
                        "select bank_transfers.transfer(%s, %s, 1, 0.005)", (from_id, to_id)
                    )
        except BaseException as error:  # any failure is the test's
            failures.append(error)

    threads = [threading.Thread(target=session, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with psycopg.connect(dsn, autocommit=True) as connection:
        after = connection.execute(
            "select deadlocks from pg_stat_database where datname = current_database()"
        ).fetchone()
        balances = connection.execute("select balance from accounts order by id").fetchall()
        attempts = connection.execute("select last_value from attempts").fetchone()
    assert before is not None and after is not None and attempts is not None
    assert after[0] > before[0], "the workload should really deadlock"
    assert balances == [(1000,), (1000,)]  # 24 each way: conserved, and every one applied
    assert attempts[0] > 8 * per_session  # deadlocks were retried


POLICIES = """
module policies;

@panic error Corrupt { id: number }
error Busy { id: number }

fn attempt() -> number {
    return sql! { select nextval('attempts') }.one();
}

// a constraint violation (23505) is never retried
@retry(n = 4, backoff = 1)
pub fn insert_twice(id: number) {
    let n = attempt();
    sql! { insert into items values (:id) };
    sql! { insert into items values (:id) };
}

// a panic is never retried, nor undone beyond its own attempt
@retry(n = 4, backoff = 1)
pub fn panics(id: number) -> Result<(), Corrupt> {
    let n = attempt();
    sql! { insert into items values (:id) };
    return Err(Corrupt { id: id });
}

// `on` names the fn's own transient error: retried until it stops
@retry(n = 5, backoff = 1, on = [Busy])
pub fn busy_twice(id: number) -> Result<number, Busy> {
    let n = attempt();
    sql! { insert into items values (:id + :n) };
    if n < 3 {
        return Err(Busy { id: id });
    }
    return Ok(n);
}

// attempts run out: `recover` answers, with the same arguments
@retry(n = 3, backoff = 1, on = [Busy], recover = fallback)
pub fn always_busy(id: number) -> Result<number, Busy> {
    let n = attempt();
    sql! { insert into items values (:id + :n) };
    return Err(Busy { id: id });
}

fn fallback(id: number) -> Result<number, Busy> {
    return Ok(-id);
}

// `within` stops retrying at the deadline, not after n attempts
@retry(n = 100, backoff = 50, on = [Busy], within = 300)
pub fn slow_busy(id: number) -> Result<(), Busy> {
    let n = attempt();
    return Err(Busy { id: id });
}

// a retried fn calling a retried fn: each retry undoes its own attempt only, the outer one's
// also what the inner one did for it (sequences count the calls: no rollback returns them)
@retry(n = 3, backoff = 1, on = [Busy])
pub fn inner(id: number) -> Result<(), Busy> {
    let n: number = sql! { select nextval('inner_calls') }.one();
    sql! { insert into items values (:id + 100 * :n) };
    if n == 1 {
        return Err(Busy { id: id });
    }
    return Ok(());
}

@retry(n = 3, backoff = 1, on = [Busy])
pub fn outer(id: number) -> Result<(), Busy> {
    let m: number = sql! { select nextval('outer_calls') }.one();
    sql! { insert into items values (:id + :m) };
    inner(id)?;
    if m == 1 {
        return Err(Busy { id: id });
    }
    return Ok(());
}
"""

POLICIES_SETUP = """
create sequence attempts;
create sequence inner_calls;
create sequence outer_calls;
create table items (id numeric primary key);
"""


def _attempts(connection: object) -> int:
    row = connection.execute("select last_value, is_called from attempts").fetchone()  # type: ignore[attr-defined]
    return int(row[0]) if row[1] else 0


def test_never_retry_codes_and_panics_are_not_retried(dsn: str) -> None:
    load(dsn, POLICIES, POLICIES_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.UniqueViolation):
            connection.execute("select policies.insert_twice(1)")
        assert _attempts(connection) == 1
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select policies.panics(2)")
        assert raised.value.sqlstate == "PE300"  # the panic range
        assert _attempts(connection) == 2
        assert connection.execute("select count(*) from items").fetchone() == (0,)


def test_on_retries_the_named_error_and_recover_answers_when_attempts_run_out(dsn: str) -> None:
    load(dsn, POLICIES, POLICIES_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select policies.busy_twice(100)").fetchone() == (3,)
        # attempts 1 and 2 were rolled back: only the third attempt's row stays
        assert connection.execute("select id from items").fetchall() == [(103,)]
        assert connection.execute("select policies.always_busy(200)").fetchone() == (-200,)
        assert _attempts(connection) == 6
        assert connection.execute("select count(*) from items").fetchone() == (1,)


def test_within_gives_up_at_the_deadline(dsn: str) -> None:
    load(dsn, POLICIES, POLICIES_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select policies.slow_busy(1)")
        assert raised.value.sqlstate == "PE100"
        # 50 ms between attempts, 300 ms in all: far fewer than the 100 allowed
        assert 3 <= _attempts(connection) <= 8


def test_a_retried_fn_calling_a_retried_fn_never_repeats_work(dsn: str) -> None:
    load(dsn, POLICIES, POLICIES_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("select policies.outer(10)")
        rows = sorted(r[0] for r in connection.execute("select id from items").fetchall())
        calls = connection.execute(
            "select (select last_value from outer_calls), (select last_value from inner_calls)"
        ).fetchone()
    # outer 1: row 11, inner 1: row 110 (undone by inner's retry), inner 2: row 210; outer 1
    # fails: 11 and 210 undone by outer's retry; outer 2: row 12, inner 3: row 310
    assert calls == (2, 3)
    assert rows == [12, 310]


COUNTER = """
module counters;

// read-modify-write: under SERIALIZABLE, concurrent increments fail with 40001 and are
// retried as whole transactions
@retry(scope = "transaction", isolation = "serializable", n = 40, backoff = 2, jitter = 8, exponential = true, cap = 100)
pub fn increment(id: number, pause: number) -> number {
    let attempt: number = sql! { select nextval('attempts') }.one();
    let v: number = sql! { select v from counters where id = :id }.one();
    let slept: text = sql! { select pg_sleep(:pause)::text }.one();
    sql! { update counters set v = :v + 1 where id = :id };
    return v + 1;
}
"""

COUNTER_SETUP = """
create sequence attempts;
create table counters (id numeric primary key, v numeric not null);
insert into counters values (1, 0);
"""


def test_serializable_read_modify_write_through_a_transaction_retry_loses_no_update(
    dsn: str,
) -> None:
    load(dsn, COUNTER, COUNTER_SETUP)
    failures: list[BaseException] = []
    per_session = 5

    def session() -> None:
        try:
            with psycopg.connect(dsn, autocommit=True) as connection:
                for _ in range(per_session):
                    row = connection.execute("call counters.fn_increment(1, 0.002, NULL)").fetchone()
                    assert row is not None and row[0] >= 1
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=session) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select v from counters").fetchone() == (8 * per_session,)
        assert _attempts(connection) > 8 * per_session  # serialization failures were retried


def test_a_transaction_retry_refuses_to_run_inside_a_callers_transaction(dsn: str) -> None:
    load(dsn, COUNTER, COUNTER_SETUP)
    # not autocommit: psycopg sends BEGIN first, so the CALL runs inside a transaction block
    with (
        psycopg.connect(dsn) as connection,
        pytest.raises(psycopg.errors.InvalidTransactionTermination),
    ):
        connection.execute("call counters.fn_increment(1, 0, NULL)")


LEDGER = """
module ledger;

// each booking is a transaction of its own: committed before the call returns
@retry(scope = "transaction", n = 3, backoff = 1, on = [serialization])
pub fn book(id: number, amount: number) -> number {
    sql! { insert into entries (id, amount) values (:id, :amount) };
    return id;
}
"""

LEDGER_SETUP = "create table entries (id numeric primary key, amount numeric not null);"


def test_a_transaction_scoped_retry_commits_its_work_before_it_returns(dsn: str) -> None:
    """The other live tests CALL in autocommit, where the server commits whatever a CALL left
    open when it ends: a procedure that never COMMITted would pass them. Here the CALL is made
    from a DO block that goes on after it, in the same transaction unless the procedure
    committed: another session looks at the table while the block waits (on an advisory lock
    that session holds), and again after the block has failed and rolled back what it had."""
    load(dsn, LEDGER, LEDGER_SETUP)
    lock = 24_005
    with (
        psycopg.connect(dsn, autocommit=True) as watcher,
        psycopg.connect(dsn, autocommit=True) as caller,
    ):
        watcher.execute("select pg_advisory_lock(%s)", (lock,))
        caller_pid = caller.info.backend_pid
        failed: list[BaseException] = []

        def call() -> None:
            try:
                caller.execute(
                    "DO $$ DECLARE booked numeric; BEGIN "
                    "CALL ledger.book(1, 250, booked); "
                    f"PERFORM pg_advisory_lock({lock}); "
                    "RAISE EXCEPTION 'the caller fails after the booking'; END $$"
                )
            except BaseException as error:
                failed.append(error)

        thread = threading.Thread(target=call)
        thread.start()
        try:
            # the DO block has returned from the CALL once it waits for the watcher's lock
            waiting = False
            for _ in range(500):
                row = watcher.execute(
                    "select count(*) from pg_locks where locktype = 'advisory' "
                    "and pid = %s and not granted",
                    (caller_pid,),
                ).fetchone()
                if row is not None and row[0] > 0:
                    waiting = True
                    break
                thread.join(0.01)
            assert waiting, f"the DO block never reached its wait: {failed}"
            seen = watcher.execute("select id, amount from entries").fetchall()
        finally:
            watcher.execute("select pg_advisory_unlock(%s)", (lock,))
            thread.join()
        assert seen == [(1, 250)], "another session must see the booking once the CALL returned"
        assert len(failed) == 1 and "the caller fails after the booking" in str(failed[0])
        # the block's failure rolled back what came after the procedure's COMMIT, not the booking
        assert watcher.execute("select id, amount from entries").fetchall() == [(1, 250)]


EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.pell"))


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_loads_or_names_what_postgres_lacks(example: Path, dsn: str) -> None:
    source = example.read_text(encoding="utf-8")
    result = compile_source(source, example.name, "postgres")
    errors = [d for d in result.diagnostics if d.is_error]
    if result.sql is None:
        # nothing approximate: each refusal is a located `unsupported`
        assert errors and all(d.code == "unsupported" for d in errors), [
            f"{d.code}: {d.message}" for d in errors
        ]
        return
    load(dsn, source)


def test_a_project_built_for_postgres_loads_runtime_first_then_each_module(
    dsn: str, tmp_path: Path
) -> None:
    from pell.cli import main

    shop = Path(__file__).parent.parent / "examples" / "shop"
    project = tmp_path / "shop"
    shutil.copytree(shop, project)
    out = tmp_path / "out"
    assert main(["build", "--target", "postgres", str(project), "-d", str(out)]) == 0
    runtime = (out / "pell_runtime.sql").read_text(encoding="utf-8")
    assert "-- Target: PostgreSQL 15" in runtime and "RETURNS text" in runtime
    modules = sorted(p for p in out.rglob("*.sql") if p.name != "pell_runtime.sql")
    assert len(modules) == 3
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(runtime)
        pending = list(modules)
        # each module after the modules whose types its signatures use
        while pending:
            loaded = []
            for path in pending:
                try:
                    with connection.transaction():
                        connection.execute(path.read_text(encoding="utf-8"))
                    loaded.append(path)
                except psycopg.errors.UndefinedObject:
                    continue
            assert loaded, f"no module of {pending} loads"
            pending = [p for p in pending if p not in loaded]
        schemas = connection.execute(
            "select count(*) from information_schema.schemata where schema_name like 'shop_%'"
        ).fetchone()
    assert schemas == (3,)


PARAMETERS = """
module params;

error Busy { id: number }

pub fn swap(inout a: number, inout b: number) {
    let t = a;
    a = b;
    b = t;
}

pub fn split(total: number, out half: number) -> number {
    half = total / 2;
    return total - half;
}

// the first attempt fails after changing `counter` and `note`: the retry must start from the
// values the caller passed (a subtransaction's rollback does not restore variables)
@retry(n = 3, backoff = 1, on = [Busy])
pub fn bump(inout counter: number, out note: text) -> Result<(), Busy> {
    let n: number = sql! { select nextval('attempts') }.one();
    counter = counter + 1;
    if n == 1 {
        note = "failed";
        return Err(Busy { id: n });
    }
    if note != None {
        note = "saw the failed attempt's note";
        return Ok(());
    }
    note = "clean";
    return Ok(());
}

pub fn use_them() -> text {
    var x: number = 1;
    var y: number = 2;
    swap(x, y);
    var h: number = 0;
    let rest = split(10, h);
    var c: number = 40;
    var note: text = None;
    bump(c, note)?;
    return "{x} {y} {rest} {h} {c} {note}";
}
"""


def test_out_and_inout_parameters_come_back_and_a_retry_restores_them(dsn: str) -> None:
    load(dsn, PARAMETERS, "create sequence attempts;")
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute("select params.use_them()").fetchone()
    # swapped; 10 split 5 + 5; bumped once from 40 (not twice); note from a clean attempt
    assert row == ("2 1 5 5 41 clean",)


OBSERVED = """
module observed;

error Busy { id: number }
@panic error Broken { id: number }

// the second attempt sees application_name name the retry; every way out restores it
@retry(n = 3, backoff = 1, on = [Busy], observe = true)
pub fn watched(id: number) -> Result<text, Busy | Broken> {
    let n: number = sql! { select nextval('attempts') }.one();
    let name: text = sql! { select current_setting('application_name') }.one();
    if n == 1 {
        return Err(Busy { id: id });
    }
    if id < 0 {
        return Err(Broken { id: id });
    }
    return Ok(name);
}

@retry(scope = "transaction", n = 3, backoff = 1, on = [Busy], observe = true)
pub fn watched_transaction(id: number) -> Result<text, Busy> {
    let n: number = sql! { select nextval('attempts') }.one();
    let name: text = sql! { select current_setting('application_name') }.one();
    if n == 1 {
        return Err(Busy { id: id });
    }
    return Ok(name);
}
"""


def test_observe_names_the_retry_in_application_name_and_restores_it(dsn: str) -> None:
    load(dsn, OBSERVED, "create sequence attempts;")
    with psycopg.connect(dsn, autocommit=True, application_name="shop") as connection:
        assert connection.execute("select observed.watched(1)").fetchone() == (
            "retry 2/3 watched",
        )
        assert connection.execute("show application_name").fetchone() == ("shop",)
        connection.execute("alter sequence attempts restart")
        with pytest.raises(psycopg.Error):  # a panic after a retry: not retried, restored
            connection.execute("select observed.watched(-1)")
        assert connection.execute("show application_name").fetchone() == ("shop",)
        connection.execute("alter sequence attempts restart")
        row = connection.execute("call observed.watched_transaction(1, NULL)").fetchone()
        assert row == ("retry 2/3 watched_transaction",)
        assert connection.execute("show application_name").fetchone() == ("shop",)


PIPELINED = """
module feeds;

pub record Price { sym: text, amount: number }

@pipelined
pub fn doubled(rows: cursor<Price>, limit: int) -> stream<Price> {
    var n: int = 0;
    for r in rows {
        if n >= limit {
            return;
        }
        n = n + 1;
        yield Price { sym: r.sym, amount: r.amount * 2 };
    }
}
"""


def test_a_pipelined_fn_reads_a_cursor_and_returns_its_rows(dsn: str) -> None:
    load(dsn, PIPELINED)
    with psycopg.connect(dsn) as connection:  # a cursor lives in its transaction
        connection.execute(
            "declare prices cursor for "
            "select * from (values ('a', 1), ('b', 2.5), ('c', 4)) v(sym, amount) order by sym"
        )
        rows = connection.execute("select * from feeds.doubled('prices', 2)").fetchall()
        # the `return` inside the loop closed the cursor, as the end of the loop does
        open_cursors = connection.execute("select name from pg_cursors").fetchall()
    assert rows == [("a", 2), ("b", 5)]
    assert open_cursors == []


FINALLY = """
module exports;

error Empty { day: number }

// the lock row is released on every way out: a return, the end, an error
pub fn export(day: number) -> Result<number, Empty> {
    sql! { update locks set holder = 'export' where name = 'daily' };
    let n: number = sql! { select count(*) from items where day = :day }.one();
    if n == 0 {
        return Err(Empty { day: day });
    }
    if n > 2 {
        return Ok(2);
    }
    sql! { insert into runs values (:day, :n) };
    return Ok(n);
} finally {
    sql! { update locks set holder = null, released = released + 1 where name = 'daily' };
    // a sequence is not rolled back: it shows the cleanup ran on the error path too
    let c: number = sql! { select nextval('cleanups') }.one();
}
"""

FINALLY_SETUP = """
create table locks (name text primary key, holder text, released int not null default 0);
insert into locks (name) values ('daily');
create table items (day numeric);
insert into items values (1), (2), (2), (3), (3), (3);
create table runs (day numeric, n numeric);
create sequence cleanups;
"""


def test_finally_runs_once_on_every_way_out(dsn: str) -> None:
    load(dsn, FINALLY, FINALLY_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:

        def state() -> tuple[object, ...] | None:
            return connection.execute(
                "select holder, released, (select last_value from cleanups) from locks"
            ).fetchone()

        assert connection.execute("select exports.export(2)").fetchone() == (2,)
        assert state() == (None, 1, 1)
        assert connection.execute("select exports.export(3)").fetchone() == (2,)  # early return
        assert state() == (None, 2, 2)
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select exports.export(9)")
        assert raised.value.sqlstate == "PE100"
        # the cleanup ran once more; its update went with the failed call's rollback
        assert state() == (None, 2, 3)
        assert connection.execute("select count(*) from runs").fetchone() == (1,)


def test_a_body_holding_the_dollar_quote_gets_another(dsn: str) -> None:
    load(dsn, 'module dq;\npub fn f() -> text {\n    return "costs $pell$ and $pell2$";\n}\n')
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select dq.f()").fetchone() == ("costs $pell$ and $pell2$",)


def test_a_pipelined_fn_with_finally_returns_its_rows_then_cleans_up(dsn: str) -> None:
    source = (
        "module pf;\n@pipelined\npub fn ids(n: int) -> stream<number> {\n"
        "    for i in 1..=n {\n        if i > 2 { return; }\n        yield i;\n    }\n"
        "} finally {\n    let c: number = sql! { select nextval('cleanups') }.one();\n}\n"
    )
    load(dsn, source, "create sequence cleanups;")
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select * from pf.ids(9)").fetchall() == [(1,), (2,)]
        assert connection.execute("select last_value from cleanups").fetchone() == (1,)


MODEL_RULES = """
create table model_rules (n int);
create function model_rules_commit_in_function() returns void language plpgsql as $$
begin
  insert into model_rules values (1);
  commit;
end $$;
create procedure model_rules_commit_in_handler_block() language plpgsql as $$
begin
  begin
    insert into model_rules values (2);
    commit;
  exception when deadlock_detected then
    null;
  end;
end $$;
create procedure model_rules_late_isolation() language plpgsql as $$
begin
  insert into model_rules values (3);
  set transaction isolation level serializable;
end $$;
create procedure model_rules_subtransaction() language plpgsql as $$
begin
  insert into model_rules values (4);
  begin
    insert into model_rules values (5);
    perform 1 / 0;
  exception when division_by_zero then
    null;
  end;
end $$;
"""


def test_the_rules_of_the_verifiers_postgres_model_hold_on_the_server(dsn: str) -> None:
    """docs/verify.md, "PostgreSQL": each rule pell.verify follows for this target, observed."""
    errors = psycopg.errors
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(MODEL_RULES)
        # [P1] an error caught by a block's handler undoes that block's work only
        connection.execute("call model_rules_subtransaction()")
        assert connection.execute("select n from model_rules").fetchall() == [(4,)]
        # [P3] no COMMIT in a block with handlers; [P4] none in a function; both 2D000
        with pytest.raises(errors.InvalidTransactionTermination):
            connection.execute("call model_rules_commit_in_handler_block()")
        with pytest.raises(errors.InvalidTransactionTermination):
            connection.execute("select model_rules_commit_in_function()")
        # [P4] SET TRANSACTION after a statement of the transaction: 25001
        with pytest.raises(errors.ActiveSqlTransaction):
            connection.execute("call model_rules_late_isolation()")
        # each failed CALL took its work with it
        assert connection.execute("select n from model_rules").fetchall() == [(4,)]
    # [P5] a CALL in the client's transaction block may not end it; [P6] an error aborts the
    # whole transaction, the client's earlier work with it
    with psycopg.connect(dsn) as connection:
        connection.execute("insert into model_rules values (6)")
        with pytest.raises(errors.InvalidTransactionTermination):
            connection.execute("do $$ begin commit; end $$")
        with pytest.raises(errors.InFailedSqlTransaction):
            connection.execute("select 1")
        connection.rollback()
        assert connection.execute("select count(*) from model_rules where n = 6").fetchone() == (0,)


QUERIED_CONDITIONS = """
module drain;

fn drain() -> number {
    let n: number = 0;
    while sql! { select count(*) from work_queue }.one() > 0 {
        sql! { delete from work_queue where id = (select min(id) from work_queue) };
        n = n + 1;
    }
    return n;
}

fn pick(first: bool) -> number {
    if first {
        return 1;
    } else if sql! { select v from picks where id = 99 }.one() > 0 {
        return 2;
    }
    return 3;
}
"""


def test_a_condition_that_needs_a_query_runs_it_where_the_condition_is_tested(dsn: str) -> None:
    """A WHILE's query runs before each pass (not once); an ELSIF's only when the branches
    before it were not taken."""
    setup = (
        "create table work_queue (id int);"
        "insert into work_queue select generate_series(1, 3);"
        "create table picks (id int, v int)"
    )
    load(dsn, QUERIED_CONDITIONS, setup)
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select drain.drain()").fetchone() == (3,)
        assert connection.execute("select count(*) from work_queue").fetchone() == (0,)
        assert connection.execute("select drain.pick(true)").fetchone() == (1,)
        with pytest.raises(psycopg.errors.NoDataFound):
            connection.execute("select drain.pick(false)")


# The example up to its claim (the rest writes Oracle SQL: `systimestamp`).
JOB_QUEUE = (Path(__file__).parent.parent / "examples" / "job_queue.pell").read_text("utf-8")
CLAIM = JOB_QUEUE[: JOB_QUEUE.index("pub fn finish")]
JOBS_SETUP = """
create table jobs (
    id numeric primary key, kind text, payload text, attempts int not null default 0,
    state text not null, worker text, finished_at timestamptz, last_error text
);
create table job_failures (job_id numeric, reason text);
insert into jobs (id, kind, payload, state)
    select g, 'mail', 'job ' || g, 'ready' from generate_series(1, 3) g;
"""


def test_a_skip_locked_claim_takes_a_job_another_worker_does_not_hold(dsn: str) -> None:
    """examples/job_queue.pell: while one worker's claim is still open, a second worker takes
    another ready job, not ReadyJobNotFound; each holds only the row it took (a third session
    can lock the last job), and with every job held the claim is ReadyJobNotFound."""
    load(dsn, CLAIM, JOBS_SETUP)
    claim = "select (jobs_queue.claim(%s)).id"
    with (
        psycopg.connect(dsn) as first,
        psycopg.connect(dsn) as second,
        psycopg.connect(dsn) as third,
        psycopg.connect(dsn) as fourth,
    ):
        (a,) = first.execute(claim, ["a"]).fetchone() or (None,)
        (b,) = second.execute(claim, ["b"]).fetchone() or (None,)
        assert {a, b} < {1, 2, 3} and a != b
        (last,) = {1, 2, 3} - {a, b}
        free = third.execute("select id from jobs order by id for update skip locked").fetchall()
        assert free == [(last,)]
        third.rollback()
        assert third.execute(claim, ["c"]).fetchone() == (last,)
        with pytest.raises(psycopg.Error) as raised:
            fourth.execute(claim, ["d"])
        assert raised.value.diag.message_primary == "jobs.queue.ReadyJobNotFound: {}"
        first.commit()
        for connection in (second, third, fourth):
            connection.rollback()
        states = first.execute("select id, state, worker from jobs order by id").fetchall()
        assert states == [
            (job, "running", "a") if job == a else (job, "ready", None) for job in (1, 2, 3)
        ]


RETURNING = """
module counters;

pub error CounterNotFound { id: number }

pub fn bump(id: number) -> Result<number, CounterNotFound> {
    let n = sql! { update counters set n = n + 1 where id = :id returning n }.returning::<number>().one()?;
    return Ok(n);
}

pub fn touch(id: number) -> Result<(), CounterNotFound> {
    sql! { update counters set n = n where id = :id returning n }.returning::<number>().one()?;
    return Ok(());
}

pub fn bump_group(grp: number) -> number {
    let n = sql! { update counters set n = n + 1 where grp = :grp returning n }.returning::<number>().one();
    return n;
}
"""


def test_returning_one_with_no_row_or_several_raises(dsn: str) -> None:
    """`.returning::<T>().one()` is INTO STRICT, its value used or not: no row is NO_DATA_FOUND,
    with `?` the fn's NotFound error; several rows are TOO_MANY_ROWS, and the update is undone
    with it."""
    setup = "create table counters (id int primary key, grp int, n int);"
    setup += "insert into counters values (1, 10, 0), (2, 20, 0), (3, 20, 0);"
    load(dsn, RETURNING, setup)
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select counters.bump(1)").fetchone() == (1,)
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select counters.bump(99)")
        assert raised.value.sqlstate == "PE100"
        assert raised.value.diag.message_primary == 'counters.CounterNotFound: {"id" : 99}'
        connection.execute("select counters.touch(1)")  # the value unused: still INTO
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select counters.touch(99)")
        assert raised.value.sqlstate == "PE100"
        assert connection.execute("select counters.bump_group(10)").fetchone() == (2,)
        with pytest.raises(psycopg.errors.NoDataFound):
            connection.execute("select counters.bump_group(30)")
        with pytest.raises(psycopg.errors.TooManyRows):
            connection.execute("select counters.bump_group(20)")
        counts = connection.execute("select id, n from counters order by id").fetchall()
        assert counts == [(1, 2), (2, 0), (3, 0)]


TEXT_TESTS = """
module texts;

// which branch an `if` takes: NULL would take neither
fn mark(b: bool) -> text {
    if b {
        return "T";
    }
    if !b {
        return "F";
    }
    return "?";
}

pub fn probe(s: text, x: text) -> text {
    return mark(s.contains(x)) + mark(s.starts_with(x)) + mark(s.ends_with(x)) + mark(s.is_empty());
}

pub fn not_abc(s: text) -> text {
    if !s.ends_with("abc") {
        return "taken";
    }
    return "not taken";
}
"""


CALLER_LISTS = """
module baskets;

pub record Item { id: number, qty: number }

pub fn total(xs: list<number>) -> number {
    var sum: number = 0;
    for x in xs {
        sum = sum + x;
    }
    return sum;
}

pub fn weighted(xs: list<number>) -> number {
    var sum: number = 0;
    for i in xs.indices() {
        sum = sum + i * xs.at(i);
    }
    return sum;
}

pub fn ends(xs: list<number>) -> text {
    return "{xs.first()}..{xs.last()}";
}

pub fn save(items: list<Item>) {
    forall it in items {
        sql! { insert into items (id, qty) values (:it.id, :it.qty) };
    }
}

pub fn remove(ids: list<number>) {
    forall id in ids {
        sql! { delete from items where id = :id };
    }
}
"""


def test_text_tests_are_true_or_false_for_every_text(dsn: str) -> None:
    """`if !s.ends_with("abc")` takes its branch for a short `s` and for None (Oracle's empty
    text); each text test is TRUE or FALSE: None is the empty text, which every text contains,
    starts and ends with (pell/checker/methods.py, METHODS)."""
    load(dsn, TEXT_TESTS)
    with psycopg.connect(dsn, autocommit=True) as connection:

        def call(sql: str, *args: str | None) -> object:
            row = connection.execute(sql, list(args)).fetchone()
            assert row is not None
            return row[0]

        for s in ("ab", "", None, "xabc!"):
            assert call("select texts.not_abc(%s)", s) == "taken", s
        assert call("select texts.not_abc(%s)", "xabc") == "not taken"
        expected = {
            ("xabc", "abc"): "TFTF",
            ("abcx", "abc"): "TTFF",
            ("ab", "abc"): "FFFF",
            ("ab", ""): "TTTF",
            ("ab", None): "TTTF",
            ("", "abc"): "FFFT",
            (None, "abc"): "FFFT",
            ("", ""): "TTTT",
            (None, None): "TTTT",
        }
        found = {pair: call("select texts.probe(%s, %s)", *pair) for pair in expected}
        assert found == expected


def test_lists_from_a_caller_may_start_at_any_subscript(dsn: str) -> None:
    """A caller's array may start at any subscript (`'[0:2]={...}'`, PostgreSQL 15 docs, 8.15.4
    Modifying Arrays); it cannot be sparse: the positions between are "filled with nulls"
    (ibid.). `for x in xs`, `indices()` with `at(i)` and `forall` read every element where the
    caller put it, and an empty array, or none (NULL), runs no pass."""
    load(dsn, CALLER_LISTS, "create table items (id numeric, qty numeric);")
    with psycopg.connect(dsn, autocommit=True) as connection:

        def value(sql: str) -> object:
            row = connection.execute(sql).fetchone()
            assert row is not None
            return row[0]

        assert value("select baskets.total('[0:2]={1,2,3}')") == 6
        # 0*1 + 1*2 + 2*3: the indexes are the caller's, and `at` reads them
        assert value("select baskets.weighted('[0:2]={1,2,3}')") == 8
        assert value("select baskets.weighted('[-1:0]={5,7}')") == -5
        assert value("select baskets.weighted('{4,5}')") == 14
        assert value("select baskets.weighted('{}')") == 0
        # a SQL caller may pass NULL: no element, as `.len()` says, never an error
        assert value("select baskets.total(null)") == 0
        assert value("select baskets.weighted(null)") == 0
        assert value("select baskets.ends('[0:2]={1,2,3}')") == "0..2"
        connection.execute(
            """select baskets.save('[0:2]={"(1,10)","(2,20)","(3,30)"}'::baskets.t_item[])"""
        )
        connection.execute("select baskets.save('{}')")
        rows = connection.execute("select id, qty from items order by id").fetchall()
        assert rows == [(1, 10), (2, 20), (3, 30)]
        connection.execute("select baskets.remove('[0:1]={1,3}')")
        assert connection.execute("select id from items").fetchall() == [(2,)]


PIPELINED_BATCHES = """
module tickers;

pub record Price { sym: text, amount: number }

@pipelined
pub fn kept(rows: cursor<Price>) -> stream<Price> {
    for r in rows {
        if r.amount % 7 == 0 {
            continue;
        }
        if r.amount > 250 {
            break;
        }
        yield Price { sym: r.sym, amount: r.amount };
    }
}
"""


def test_a_pipelined_fn_reads_more_rows_than_one_batch(dsn: str) -> None:
    """Over 300 rows, more than the 100 a FETCH brings at once on Oracle: every row up to the
    `break` comes out, those `continue` skips aside, the last partial batch too."""
    load(dsn, PIPELINED_BATCHES)
    with psycopg.connect(dsn) as connection:  # a cursor lives in its transaction
        connection.execute(
            "declare prices cursor for "
            "select 'p' || n, n from generate_series(1, 300) n order by n"
        )
        rows = connection.execute("select * from tickers.kept('prices')").fetchall()
    amounts = [amount for _, amount in rows]
    assert amounts == [n for n in range(1, 251) if n % 7 != 0]
    assert rows[-1] == ("p250", 250)


TEXTS = """
module texts;

pub fn texts(n: number, i: int, d: date, ts: timestamp, iv: interval, b: bool) -> text {
    let hours = numtodsinterval(30, "HOUR");
    return "{n}|{i}|{d}|{ts}|{iv}|{b}|" + d.into::<text>() + "|" + iv.to_text() + "|"
        + lpad(i, 5, "0") + "|{hours}";
}
"""

# (DateStyle, IntervalStyle): each changes how PostgreSQL writes a timestamp or an interval
# as text (PostgreSQL 15 docs, 8.5.2 "Date/Time Output", 8.5.5 "Interval Output")
SESSIONS = [
    ("ISO, MDY", "postgres"),
    ("German", "sql_standard"),
    ("SQL, DMY", "iso_8601"),
    ("Postgres, DMY", "postgres_verbose"),
]


def test_dates_numbers_and_intervals_are_the_same_text_in_every_session(dsn: str) -> None:
    """Issue 25, item 2: a value interpolated, `.to_text()`, `.into::<text>()` or passed where
    a built-in takes text is one text whatever the session's DateStyle and IntervalStyle, and
    the text the Oracle target writes (pell/codegen/text_forms.py): 30 hours are 1 day 6 hours,
    as Oracle's NUMTODSINTERVAL(30, 'HOUR') is. A number's text needs no
    session here: numeric's output ignores lc_numeric, which "Sets the locale to use for
    formatting numbers, for example with the to_char family of functions" (19.11.2); this
    cluster has only the C locales anyway."""
    load(dsn, TEXTS)
    call = (
        "select texts.texts(-0.5, 42, timestamp '2024-05-01 13:45:06', "
        "timestamp '2024-05-01 13:45:06.25', interval '-1 day -02:03:04.5', true)"
    )
    texts = set()
    with psycopg.connect(dsn, autocommit=True) as connection:
        for datestyle, intervalstyle in SESSIONS:
            connection.execute(f"SET DateStyle = '{datestyle}'")
            connection.execute(f"SET IntervalStyle = '{intervalstyle}'")
            texts.add(connection.execute(call).fetchone()[0])
    assert texts == {
        "-0.5|42|2024-05-01 13:45:06|2024-05-01 13:45:06.250000|-1 02:03:04.500000|true"
        "|2024-05-01 13:45:06|-1 02:03:04.500000|00042|1 06:00:00.000000"
    }


PAYLOADS = """
module late;

pub error Late { by: interval, at: timestamp, n: number, k: int }

pub fn late_by(a: timestamp, b: timestamp, n: number, k: int) -> Result<number, Late> {
    if b > a {
        return Err(Late { by: b - a, at: b, n: n / 4, k: k });
    }
    return Ok(n);
}
"""


def test_error_payloads_write_the_same_json_in_every_session(dsn: str) -> None:
    """An error's JSON takes each value in the form Oracle's does (pell/codegen/text_forms.py,
    JSON_FORMS): an interval as its text, not as IntervalStyle says (`P1DT2H0.5S` under
    iso_8601); a timestamp with six decimals; a number without the 16 decimals numeric
    division keeps (10 / 4 is 2.5000000000000000)."""
    load(dsn, PAYLOADS)
    call = (
        "select late.late_by(timestamp '2024-04-30 11:45:00', "
        "timestamp '2024-05-01 13:45:00.5', 10, 3)"
    )
    messages = set()
    with psycopg.connect(dsn, autocommit=True) as connection:
        for datestyle, intervalstyle in SESSIONS:
            connection.execute(f"SET DateStyle = '{datestyle}'")
            connection.execute(f"SET IntervalStyle = '{intervalstyle}'")
            with pytest.raises(psycopg.Error) as raised:
                connection.execute(call)
            messages.add(raised.value.diag.message_primary)
    assert messages == {
        'late.Late: {"by" : "1 02:00:00.500000", "at" : "2024-05-01T13:45:00.500000", '
        '"n" : 2.5, "k" : 3}'
    }



def test_a_script_runs_as_a_do_block(dsn: str) -> None:
    # a script's statements run in a DO block; its notices are what its println wrote
    script = compile_source(
        "let total = 0;\nfor r in sql! { select n from tally order by n } {\n"
        "    total = total + r.n * 2;\n}\n"
        "sql! { insert into tally (n) values (:total) };\n"
        'println("total {total}");\n',
        "s.pell",
        "postgres",
    )
    assert script.sql is not None, [d.message for d in script.diagnostics]
    notices: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("create table tally (n integer); insert into tally values (1), (2), (3)")
        connection.add_notice_handler(lambda notice: notices.append(notice.message_primary))
        connection.execute(script.sql)
        rows = connection.execute("select n from tally order by n").fetchall()
    assert notices == ["total 12"] and rows == [(1,), (2,), (3,), (12,)]


def test_a_commit_in_a_script_says_the_script_is_a_do_block() -> None:
    # review 9: the message named a fn (a PostgreSQL function), where a script is a DO block
    script = compile_source("sql! { commit };\n", "s.pell", "postgres")
    fn = compile_source("module m;\npub fn f() {\n    sql! { commit };\n}\n", "m.pell", "postgres")
    assert [d.message for d in script.diagnostics] == [
        "`COMMIT` in a script (a PostgreSQL DO block) is not supported on postgres yet"
    ]
    assert [d.message for d in fn.diagnostics] == [
        "`COMMIT` in a fn (a PostgreSQL function) is not supported on postgres yet"
    ]


def test_match_on_values_runs_as_case_and_if(dsn: str) -> None:
    # a value `match` is a CASE, a statement `match` IF / ELSIF / ELSE; "" matches the
    # empty text and None as on Oracle (where '' is NULL)
    load(
        dsn,
        'module picks;\npub fn size(word: text?) -> int {\n    return match word {\n'
        '        "small" | "tiny" => 1,\n        "" => 0,\n        _ if word.length() > 9 => 9,\n'
        "        _ => 2,\n    };\n}\n"
        "pub fn sign(n: number) -> number {\n    var s: number = 0;\n    match n - 1 {\n"
        "        0 -> { s = 0; }\n        _ if n > 1 -> { s = 1; }\n        _ -> { s = -1; }\n"
        "    }\n    return s;\n}\n",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        sizes = [
            connection.execute("select picks.fn_size(%s)", (word,)).fetchone()[0]
            for word in ("tiny", "", None, "enormous words", "mid")
        ]
        signs = [
            connection.execute("select picks.sign(%s)", (n,)).fetchone()[0] for n in (1, 5, -3)
        ]
    assert sizes == [1, 0, 0, 9, 2]
    assert signs == [0, 1, -1]


def test_a_table_row_is_the_tables_composite_type(dsn: str) -> None:
    # rowtype<table> is the table's own composite type on PostgreSQL (8.16 Composite Types)
    load(
        dsn,
        (Path(__file__).parent / "cases" / "rowtype.pell").read_text(encoding="utf-8"),
        "create table accounts (id numeric primary key, owner_name text, balance numeric);"
        "insert into accounts values (1, 'ann', 10);",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        balance = connection.execute("select accounts_rows.balance_of(1)").fetchone()
        credited = connection.execute(
            "select (accounts_rows.credit(accounts_rows.fetch_one(1), 5)).balance"
        ).fetchone()
        stored = connection.execute("select balance from accounts where id = 1").fetchone()
    assert balance == (10,) and credited == (15,) and stored == (15,)


def test_exec_dyn_runs_with_its_names_checked_and_its_values_bound(dsn: str) -> None:
    # a spliced name passes parse_ident (an identifier chain, nothing after it) and is
    # written as it is; values are $n binds; a spliced literal is quote_nullable's
    source = (
        "module dyn;\nrecord Row { id: number, note: text }\n"
        '@binds(id)\npub unsafe fn drop_one(tname: text, id: number) {\n'
        '    exec_dyn("delete from {tname} where id = :id");\n}\n'
        "@binds(id)\npub unsafe fn read_one(tname: text, id: number) -> Row {\n"
        "    let r: Row = exec_dyn(\"select id, note from {tname} where id = :id and note <> ':x'\");\n"
        "    return r;\n}\n"
        "pub unsafe fn count_tagged(tname: text, tag: text) -> number {\n"
        "    let n: number = exec_dyn(\"select count(*) from {tname} where note = '{tag}'\");\n"
        "    return n;\n}\n"
    )
    load(
        dsn,
        source,
        "create table notes (id numeric primary key, note text);"
        "insert into notes values (1, 'a'), (2, 'O''Brien'), (3, ':x');",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        counted = connection.execute(
            "select dyn.count_tagged('public.notes', 'O''Brien')"
        ).fetchone()
        read = connection.execute("select (dyn.read_one('notes', 1)).note").fetchone()
        connection.execute("select dyn.drop_one('notes', 1)")
        left = connection.execute("select count(*) from notes").fetchone()
        with pytest.raises(psycopg.Error, match="not a valid identifier"):
            connection.execute("select dyn.drop_one('notes where 1 = 1; drop table notes', 2)")
        still = connection.execute("select count(*) from notes").fetchone()
    assert counted == (1,) and read == ("a",) and left == (2,) and still == (2,)


def test_a_dynamic_cursor_is_opened_by_open_for_execute(dsn: str) -> None:
    load(
        dsn,
        "module dync;\nrecord Row { id: number, note: text }\n"
        "pub unsafe fn open_rows(tname: text) -> cursor<Row> {\n"
        '    return exec_dyn("select id, note from {tname} order by id");\n}\n'
        "pub fn total(rows: cursor<Row>) -> number {\n    var n: number = 0;\n"
        "    for r in rows { n = n + r.id; }\n    return n;\n}\n"
        "pub unsafe fn local_total(tname: text) -> number {\n"
        '    let c: cursor<Row> = exec_dyn("select id, note from {tname}");\n'
        "    var n: number = 0;\n    for r in c { n = n + r.id; }\n    return n;\n}\n",
        "create table notes (id numeric primary key, note text);"
        "insert into notes values (1, 'a'), (2, 'b'), (4, 'c');",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        handed = connection.execute("select dync.total(dync.open_rows('notes'))").fetchone()
        local = connection.execute("select dync.local_total('public.notes')").fetchone()
    assert handed == (7,) and local == (7,)


def test_json_get_text_and_get_json_raise_where_oracle_does(dsn: str) -> None:
    load(
        dsn,
        'module pj;\npub fn t(j: json) -> text { return json::get_text(j, "$.a"); }\n'
        'pub fn o(j: json) -> text? { let v: text? = json::get_text(j, "$.b"); return v; }\n'
        'pub fn q(j: json) -> json { return json::get_json(j, "$.c"); }\n',
    )
    doc = '{"a": "x", "c": {"d": 1}}'
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select pj.t(%s)", (doc,)).fetchone() == ("x",)
        assert connection.execute("select pj.o(%s)", (doc,)).fetchone() == (None,)
        assert connection.execute("select pj.q(%s)::text", (doc,)).fetchone() == ('{"d": 1}',)
        with pytest.raises(psycopg.Error, match="not a scalar"):
            connection.execute("select pj.t(%s)", ('{"a": [1]}',))
        with pytest.raises(psycopg.Error, match="not an object or array"):
            connection.execute("select pj.q(%s)", ('{"c": 2}',))
        with pytest.raises(psycopg.Error):  # a missing member, not optional: strict mode
            connection.execute("select pj.t(%s)", ("{}",))


def test_json_into_fills_a_record_and_refuses_a_fraction_for_an_int(dsn: str) -> None:
    load(
        dsn,
        "module pi;\nrecord U { name: text, age: int, score: number, nick: text? }\n"
        "pub fn u(j: json) -> U { return json::into::<U>(j); }\n",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        row = connection.execute(
            "select (pi.u(%s)).*", ('{"name": "ann", "age": 7, "score": 2.5}',)
        ).fetchone()
        assert row == ("ann", 7, Decimal("2.5"), None)
        with pytest.raises(psycopg.Error):  # 7.5 is no int: no rounding
            connection.execute("select pi.u(%s)", ('{"name": "a", "age": 7.5, "score": 1}',))
        with pytest.raises(psycopg.Error):  # a missing member that is not optional
            connection.execute("select pi.u(%s)", ('{"name": "a", "score": 1}',))


def test_a_number_list_index_must_be_whole(dsn: str) -> None:
    # `.at(n)` of a `number` n: 2.0 is index 2; 2.5 raises, where a numeric subscript rounds
    load(
        dsn,
        "module li;\npub fn pick(xs: list<number>, pos: number) -> number {\n"
        "    let ys: list<number> = xs;\n    return ys.at(pos);\n}\n",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        picked = connection.execute("select li.pick(array[10, 20, 30], 2.0)").fetchone()
        assert picked == (Decimal("20"),)
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            connection.execute("select li.pick(array[10, 20, 30], 2.5)")


def test_the_rows_of_a_dyn_cursor_are_jsonb_objects(dsn: str) -> None:
    # to_jsonb of each fetched row; the cursor a call returns is fetched from one temporary
    load(
        dsn,
        "module dr;\npub unsafe fn open_all(tname: text) -> cursor<dyn> {\n"
        '    return exec_dyn("select * from {tname} order by id");\n}\n'
        "pub unsafe fn names(tname: text) -> text {\n"
        '    var out: text = "";\n    for row in open_all(tname) {\n'
        '        let n: text = json::get_text(row, "$.note");\n'
        '        out = out + n + ";";\n    }\n    return out;\n}\n',
        "create table notes (id numeric primary key, note text);"
        "insert into notes values (1, 'a'), (2, 'b');",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select dr.names('notes')").fetchone() == ("a;b;",)


def test_json_methods_set_remove_and_append_as_on_oracle(dsn: str) -> None:
    load(
        dsn,
        "module pm;\npub fn tagged(j: json, tag: text) -> json {\n"
        '    return j.set("meta.tag", tag).remove("draft");\n}\n'
        'pub fn more(j: json, n: number) -> json { return j.append("xs", n); }\n'
        # literals: to_jsonb cannot type an untyped literal by itself (42804 before the cast)
        'pub fn literals(j: json, d: date) -> json {\n'
        '    return j.set("k", "v").set("n", 2.50).set("b", true).set("z", None)'
        '.set("d", d).append("xs", "w");\n}\n',
    )
    with psycopg.connect(dsn, autocommit=True) as connection:

        def run(call: str, doc: str) -> object:
            return connection.execute(f"select {call}::text", (doc,)).fetchone()[0]

        assert run("pm.tagged(%s, 'x')", '{"draft": 1, "meta": 3}') == '{"meta": {"tag": "x"}}'
        assert run("pm.more(%s, 1.50)", '{"a": 1}') == '{"a": 1, "xs": [1.5]}'
        assert run("pm.more(%s, 2)", '{"xs": [1]}') == '{"xs": [1, 2]}'
        with pytest.raises(psycopg.Error, match="no array"):
            run("pm.more(%s, 2)", '{"xs": 1}')
        assert json.loads(run("pm.literals(%s, date '2024-02-29')", '{"xs": []}')) == {
            "k": "v",
            "n": 2.5,
            "b": True,
            "z": None,
            "d": "2024-02-29T00:00:00",
            "xs": ["w"],
        }


JQ = """
module pq;

pub record Person { name: text, age: int, born: date, seen: timestamp }

pub fn adults(j: json) -> list<text> {
    let names: list<text> = jq!{ j | .users[] | select(.age >= 18) | .name }.collect();
    return names;
}

pub fn not_in(j: json) -> list<text> {
    let names: list<text> = jq!{ j | .users[] | select(.team != "x") | .name }.collect();
    return names;
}

pub fn young(j: json) -> list<text> {
    let names: list<text> = jq!{ j | .users[] | select(.age < 18) | .name }.collect();
    return names;
}

pub fn before_a(j: json) -> list<text> {
    let names: list<text> = jq!{ j | .users[] | select(.name < "a") | .name }.collect();
    return names;
}

pub fn picked(j: json) -> list<text> {
    let names: list<text> = jq!{ j | .users[] | select(.a == 1 or .b == 2) | select(.c == 3) | .name }.collect();
    return names;
}

pub fn ages(j: json) -> list<int> {
    let xs: list<int> = jq!{ j | .users[] | .age }.collect();
    return xs;
}

pub fn people(j: json) -> list<Person> {
    let ps: list<Person> = jq!{ j | .users[] }.collect();
    return ps;
}

pub fn first_name(j: json) -> text {
    let n: text = jq!{ j | .users[] | .name }.first();
    return n;
}

pub fn the_count(j: json) -> number {
    let n: number = jq!{ j | .meta.count }.one();
    return n;
}
"""


def test_jq_on_postgres_gives_oracles_rows_in_their_order(dsn: str) -> None:
    """Issue 26 item 11: `jq! { }` on PostgreSQL 15 (no JSON_TABLE) is a query over
    jsonb_path_query's rows (pell/postgres/jq_lowering.py) with Oracle's semantics: rows in the
    array's order; `select` leaves out a row whose member is missing or of another type for
    `==`, `>`, `>=`, and keeps it for `!=`, `<`, `<=` (jq's null); two selects are both true;
    a value taken raises when missing (ERROR ON EMPTY); an int refuses a fraction."""
    load(dsn, JQ)
    users = (
        '{"users": [{"name": "c", "age": 40, "team": "x"}, {"name": "a", "age": 17},'
        ' {"name": "b", "age": 18.0}, {"name": "d"}, {"name": "e", "age": "20"},'
        ' {"name": "B", "age": [30]}]}'
    )
    with psycopg.connect(dsn, autocommit=True) as connection:

        def run(fn: str, doc: str | None) -> object:
            return connection.execute(f"select pq.{fn}(%s::jsonb)", (doc,)).fetchone()[0]

        assert run("adults", users) == ["c", "b"]  # document order, not sorted
        assert run("not_in", users) == ["a", "b", "d", "e", "B"]  # no team: kept
        assert run("young", users) == ["a", "d", "e", "B"]  # no age, or no number: kept
        rows = (
            '{"users": [{"name": "p", "a": 1, "c": 3}, {"name": "q", "b": 2, "c": 4},'
            ' {"name": "r", "a": 5, "b": 2, "c": 3}, {"name": "s", "a": 1}]}'
        )
        assert run("picked", rows) == ["p", "r"]  # (a == 1 or b == 2) and c == 3
        assert run("ages", '{"users": [{"age": 3}, {"age": 2.0}]}') == [3, 2]
        assert run("ages", '{"users": []}') == []
        assert run("ages", "{}") == []  # no array: no row (Oracle's lax row path)
        assert run("ages", '{"users": {"age": 5}}') == [5]  # an object: one row
        assert run("first_name", users) == "c"
        assert run("first_name", '{"users": []}') is None
        assert run("the_count", '{"meta": {"count": 2.5}}') == Decimal("2.5")
        with pytest.raises(psycopg.Error, match="integer"):  # 2.5 is no int: no rounding
            run("ages", '{"users": [{"age": 2.5}]}')
        with pytest.raises(psycopg.Error):  # a row without the member taken
            run("adults", '{"users": [{"age": 20}]}')
        with pytest.raises(psycopg.Error, match="not a scalar"):  # an object is no text
            run("first_name", '{"users": [{"name": {"x": 1}}]}')
        with pytest.raises(psycopg.errors.NoDataFound):  # .one() of no row: a NULL document
            run("the_count", None)
        with pytest.raises(psycopg.Error, match="member accessor"):  # JSON null: no member
            run("the_count", "null")
        with pytest.raises(psycopg.Error):  # .one() of a missing member
            run("the_count", '{"meta": {}}')
        people = connection.execute(
            "select p.name, p.age, to_char(p.born, 'YYYY-MM-DD HH24:MI:SS'),"
            " to_char(p.seen, 'YYYY-MM-DD HH24:MI:SS.US') from unnest(pq.people(%s)) p",
            ('{"users": [{"name": "z", "age": 4, "born": "2024-05-01T13:45:06",'
             ' "seen": "2024-05-01T13:45:06.250000"}, {"name": "y", "age": 5, "born": null,'
             ' "seen": null}]}',),
        ).fetchall()  # fmt: skip
        assert people == [
            ("z", 4, "2024-05-01 13:45:06", "2024-05-01 13:45:06.250000"),
            ("y", 5, None, None),
        ]


def test_jq_compares_text_by_code_point_whatever_the_databases_collation(dsn: str) -> None:
    """`select(.name < "a")` orders text as Oracle's binary comparison and jq do, by code point
    (COLLATE "C"), not by the database's collation: "B" < "a" there, not in ICU's en-US."""
    name = "jq_icu"
    with psycopg.connect(dsn, autocommit=True) as connection:
        try:
            connection.execute(
                f"CREATE DATABASE {name} LOCALE_PROVIDER icu ICU_LOCALE 'en-US' TEMPLATE template0"
            )
        except psycopg.Error as error:
            pytest.skip(f"no ICU collations on this server: {error}")
    icu = dsn.rsplit("dbname=", 1)[0] + f"dbname={name}"
    load(icu, JQ)
    users = '{"users": [{"name": "b"}, {"name": "B"}, {"name": "a"}, {"name": "A"}, {"name": 1}]}'
    with psycopg.connect(icu, autocommit=True) as connection:
        assert connection.execute("select 'B' < 'a'").fetchone() == (False,)  # en-US
        names = connection.execute("select pq.before_a(%s)", (users,)).fetchone()[0]
    # the number 1 is compared as its text, as get_text reads it: "1" < "a" (jq too puts
    # numbers before strings)
    assert names == ["B", "A", "1"]


DATES = """
module pd;

pub record Event { day: date, seen: timestamp, note: date? }

pub fn event(j: json) -> Event { return json::into::<Event>(j); }
"""


def test_json_into_reads_dates_and_timestamps_as_json_from_writes_them_in_every_session(
    dsn: str,
) -> None:
    """Issue 26 item 11: json::into of a date or timestamp field on PostgreSQL takes exactly
    the text json::from writes (`YYYY-MM-DD"T"HH24:MI:SS`, `.FF6` for a timestamp: Oracle's
    TO_DATE / TO_TIMESTAMP masks), the same value whatever DateStyle says; any other text
    raises instead of being read by the session's settings (a day-first date, `now`) or
    beyond Oracle's fields (the hour 24, the second 60, a fraction in a date)."""
    load(dsn, DATES)
    call = (
        "select to_char(e.day, 'YYYY-MM-DD HH24:MI:SS'), to_char(e.seen, 'YYYY-MM-DD HH24:MI:SS.US'),"
        " e.note from pd.event(%s) e"
    )
    good = '{"day": "2024-05-01T13:45:06", "seen": "2024-05-01T13:45:06.250000", "note": null}'
    bad = [
        '"05/01/2024 13:45:06"',
        '"01.05.2024 13:45:06"',
        '"2024-05-01 13:45:06"',
        '"2024-05-01"',
        '"now"',
        '"2024-05-01T24:00:00"',
        '"2024-05-01T23:59:60"',
        '"2024-05-01T13:45:06.5"',
        '"2024-05-01T13:45:06+02:00"',
        '"2024-02-30T00:00:00"',
        "20240501",
    ]
    with psycopg.connect(dsn, autocommit=True) as connection:
        for datestyle, _ in SESSIONS:
            connection.execute(f"SET DateStyle = '{datestyle}'")
            assert connection.execute(call, (good,)).fetchone() == (
                "2024-05-01 13:45:06",
                "2024-05-01 13:45:06.250000",
                None,
            ), datestyle
            for text in bad:
                doc = f'{{"day": {text}, "seen": "2024-05-01T13:45:06.000000"}}'
                with pytest.raises(psycopg.Error):
                    connection.execute(call, (doc,))
                    pytest.fail(f"{text} read as a date under {datestyle}")
            with pytest.raises(psycopg.Error, match="is no timestamp"):  # six digits, as written
                connection.execute(call, ('{"day": null, "seen": "2024-05-01T13:45:06.25"}',))
            with pytest.raises(psycopg.Error):  # a missing member that is not optional
                connection.execute(call, ('{"seen": "2024-05-01T13:45:06.250000"}',))


def test_json_into_an_int_takes_a_whole_number_written_with_a_fraction_part(dsn: str) -> None:
    """7.0 is the int 7, as the Oracle lowering's whole-number check takes it (7 = TRUNC(7));
    the text "7.0" cast to integer would raise, and 7.5 still does (no rounding)."""
    load(dsn, "module pw;\nrecord W { n: int }\npub fn w(j: json) -> W { return json::into::<W>(j); }\n")
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select (pw.w(%s)).n", ('{"n": 7.0}',)).fetchone() == (7,)
        assert connection.execute("select (pw.w(%s)).n", ('{"n": 7e2}',)).fetchone() == (700,)
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            connection.execute("select pw.w(%s)", ('{"n": 7.5}',))


def test_json_into_and_jq_take_an_int_only_from_a_json_number_as_a_number(dsn: str) -> None:
    """Review 11, finding 6: an int field read any scalar's text (`" 1e1 "` was 10, `"7"` 7)
    where a number field refuses a JSON string; both take a JSON number only now (docs/
    postgres.md: which strings Oracle's lax JSON_VALUE reads as a number is not documented)."""
    load(
        dsn,
        "module ps;\nrecord C { n: int, x: number }\n"
        "pub fn c(j: json) -> C { return json::into::<C>(j); }\n"
        "pub fn ns(j: json) -> list<int> {\n"
        "    let ns: list<int> = jq!{ j | .xs[] | .n }.collect();\n    return ns;\n}\n",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select (ps.c(%s)).*", ('{"n": 7, "x": 1}',)).fetchone() == (
            7,
            Decimal("1"),
        )
        for doc in ('{"n": "7", "x": 1}', '{"n": " 1e1 ", "x": 1}', '{"n": 7, "x": "1"}'):
            with pytest.raises(psycopg.errors.InvalidParameterValue, match="jsonb string"):
                connection.execute("select ps.c(%s)", (doc,))
        assert connection.execute("select ps.ns(%s)", ('{"xs": [{"n": 1}, {"n": 2.0}]}',)).fetchone() == ([1, 2],)
        with pytest.raises(psycopg.errors.InvalidParameterValue, match="jsonb string"):
            connection.execute("select ps.ns(%s)", ('{"xs": [{"n": 1}, {"n": "3"}]}',))


def test_a_list_index_outside_the_list_raises_as_on_oracle(dsn: str) -> None:
    """Review 11, finding 7: `xs.at(i)` past the ends was NULL; Oracle's associative array
    raises NO_DATA_FOUND, and VALUE_ERROR for a NULL index. An aggregate's part gets the
    helper too."""
    load(
        dsn,
        "module lx;\npub fn pick(xs: list<number>, pos: int) -> number {\n"
        "    let ys: list<number> = xs;\n    return ys.at(pos) + ys(pos);\n}\n",
    )
    # a module whose aggregate alone calls the helper
    load(
        dsn,
        "module lx_agg;\npub aggregate second(s: number) -> number {\n"
        "    state { xs: list<number>; }\n    step(v: number) { self.xs.append(v); }\n"
        "    finish() -> number { return self.xs.at(2); }\n}\n",
    )
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("select lx.pick(array[10, 20, 30], 3)").fetchone() == (
            Decimal("60"),
        )
        # a caller's array may start at any subscript: its own bounds count
        assert connection.execute("select lx.pick('[0:1]={10,20}', 0)").fetchone() == (
            Decimal("20"),
        )
        for pos in ("4", "0", "-1"):
            with pytest.raises(psycopg.errors.NoDataFound):
                connection.execute(f"select lx.pick(array[10, 20, 30], {pos})")
        with pytest.raises(psycopg.errors.NoDataFound):
            connection.execute("select lx.pick('{}', 1)")
        with pytest.raises(psycopg.errors.NullValueNotAllowed):
            connection.execute("select lx.pick(array[10, 20, 30], null)")
        assert connection.execute(
            "select lx_agg.second(x) from (values (5), (6), (7)) v(x)"
        ).fetchone() == (Decimal("6"),)
        with pytest.raises(psycopg.errors.NoDataFound):
            connection.execute("select lx_agg.second(x) from (values (5)) v(x)")
