"""`transaction { }`, `@autonomous` and the Oracle packages' calls on `--target postgres`,
on a real server (issue 28, item 5): what commits, what is undone, and where PL/pgSQL cannot
and pellc says so (docs/postgres.md, "Transactions" and "@autonomous").

One throwaway cluster of each kind serves the run (conftest.py: the embedded server, and the
system server where pg_config finds one) and each test gets a database of its own on each.
"""

from __future__ import annotations

import time

import pytest

from pell import compile_source
from pell.postgres import runtime_sql
from pell.runtime import number_errors

psycopg = pytest.importorskip("psycopg")


@pytest.fixture
def dsn(postgres_database: str) -> str:
    """A fresh database for one test (conftest.py: one server for the run)."""
    return postgres_database


def compiled(source: str) -> tuple[str, str]:
    """The module's script and its runtime's."""
    result = compile_source(source, "module.pell", "postgres")
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert result.sql is not None and result.module is not None, errors
    numbered, _ = number_errors([result.module])
    return result.sql, runtime_sql([(e.exception, e.code) for e in numbered], "-- runtime")


def load(dsn: str, source: str, setup: str = "") -> None:
    sql, runtime = compiled(source)
    with psycopg.connect(dsn, autocommit=True) as connection:
        if setup:
            connection.execute(setup)
        connection.execute(runtime)
        connection.execute(sql)


def refusal(source: str) -> list[str]:
    """The errors compiling `source` for postgres gives, as `line:col: message`."""
    result = compile_source(source, "module.pell", "postgres")
    assert result.sql is None
    lines = []
    for d in result.diagnostics:
        if d.is_error:
            line, col = result.source.line_col(d.span.start)
            lines.append(f"{line}:{col}: {d.message}  [{d.code}]")
    return lines


def rows(connection: object, query: str) -> list[tuple[object, ...]]:
    return connection.execute(query).fetchall()  # type: ignore[attr-defined,no-any-return]


# ---- transaction { }

LEDGER = """
module ledger;

pub fn post(id: number, fail: bool) {
    sql! { insert into lines (id) values (:id) };
    transaction {
        sql! { insert into lines (id) values (:id + 1) };
    }
    sql! { insert into lines (id) values (:id + 2) };
    transaction {
        sql! { insert into lines (id) values (:id + 3) };
        if fail {
            sql! { insert into lines (id) values (null) };
        }
    }
}

pub fn each(n: int) {
    for i in 1..=n {
        transaction {
            sql! { insert into lines (id) values (:i) };
            if i == 2 {
                continue;
            }
            if i == 4 {
                break;
            }
        }
    }
}

pub fn first(n: number) {
    transaction {
        sql! { insert into lines (id) values (:n) };
        if n > 0 {
            return;
        }
        sql! { insert into lines (id) values (-1) };
    }
}

pub fn both(id: number) {
    post(id, false);
    first(id + 10);
}
"""

LINES = "create table lines (id numeric not null)"


def test_a_transaction_block_commits_its_work_and_the_work_before_it(dsn: str) -> None:
    """The CALL is made from a DO block that fails after it: what the procedure committed
    stays, what it did not goes with the block's rollback."""
    load(dsn, LEDGER, LINES)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.RaiseException):
            connection.execute(
                "DO $$ BEGIN CALL ledger.post(10, false); RAISE EXCEPTION 'after'; END $$"
            )
        assert rows(connection, "select id from lines order by id") == [
            (10,), (11,), (12,), (13,)
        ]  # fmt: skip


def test_an_error_in_a_transaction_block_undoes_it_and_the_callers_work_since_the_last_commit(
    dsn: str,
) -> None:
    """docs/postgres.md, "Transactions": the failed block's work goes, and so does the work
    done before it since the last COMMIT (12), which Oracle's ROLLBACK TO would keep pending;
    what the first block committed (10, 11) stays."""
    load(dsn, LEDGER, LINES)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.NotNullViolation):
            connection.execute("call ledger.post(10, true)")
        assert rows(connection, "select id from lines order by id") == [(10,), (11,)]


EACH_LOWERED = """CREATE OR REPLACE PROCEDURE ledger.each(p_n integer)
LANGUAGE plpgsql AS $pell$
BEGIN
  FOR l_i IN 1 .. p_n LOOP
    BEGIN
      insert into lines (id) values (l_i);
      IF l_i = 2 THEN
        COMMIT;
        CONTINUE;
      END IF;
      IF l_i = 4 THEN
        COMMIT;
        EXIT;
      END IF;
      COMMIT;
    END;
  END LOOP;
END;
$pell$;"""


@pytest.mark.parametrize(
    ("call", "kept"),
    [
        # the `continue` on the last pass is the last way out before the failure: only its
        # COMMIT keeps 2
        ("ledger.each(2)", [(1,), (2,)]),
        # the `break` likewise for 4
        ("ledger.each(9)", [(1,), (2,), (3,), (4,)]),
        ("ledger.first(7)", [(7,)]),
    ],
)
def test_break_continue_and_return_leaving_a_transaction_block_commit_first(
    dsn: str, call: str, kept: list[tuple[int]]
) -> None:
    """Each call is the last thing before the DO block fails: what it did not commit goes."""
    assert EACH_LOWERED in compiled(LEDGER)[0]
    load(dsn, LEDGER, LINES)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.RaiseException):
            connection.execute(f"DO $$ BEGIN CALL {call}; RAISE EXCEPTION 'after'; END $$")
        assert rows(connection, "select id from lines order by id") == kept


def test_a_fn_calling_one_that_commits_is_a_procedure_too(dsn: str) -> None:
    sql, _ = compiled(LEDGER)
    assert "CREATE OR REPLACE PROCEDURE ledger.both(" in sql
    load(dsn, LEDGER, LINES)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.errors.RaiseException):
            connection.execute("DO $$ BEGIN CALL ledger.both(100); RAISE EXCEPTION 'x'; END $$")
        assert rows(connection, "select id from lines order by id") == [
            (100,), (101,), (102,), (103,), (110,)
        ]  # fmt: skip


def test_a_fn_that_reaches_a_commit_through_recursion_is_a_procedure() -> None:
    """b() calls a(), which commits through d() after it: b() is a procedure although the
    question about it was first asked while a() was being looked at."""
    sql, _ = compiled(
        "module rec;\n\nfn a(n: number) {\n    if n > 0 { b(n - 1); }\n    d();\n}\n\n"
        "fn b(n: number) {\n    a(n);\n}\n\n"
        "fn d() {\n    transaction {\n        sql! { insert into t (n) values (1) };\n    }\n}\n"
    )
    for fn in ("a", "b", "d"):
        assert f"CREATE OR REPLACE PROCEDURE rec.{fn}(" in sql


def test_a_transaction_block_refuses_to_run_inside_a_callers_transaction(dsn: str) -> None:
    load(dsn, LEDGER, LINES)
    # not autocommit: psycopg sends BEGIN first (CALL: "transaction control statements are
    # only allowed if CALL is executed in its own transaction")
    with (
        psycopg.connect(dsn) as connection,
        pytest.raises(psycopg.errors.InvalidTransactionTermination),
    ):
        connection.execute("call ledger.first(1)")


def test_a_transaction_block_in_a_script_commits_in_its_do_block(dsn: str) -> None:
    script = compile_source(
        "sql! { insert into lines (id) values (1) };\n"
        "transaction {\n    sql! { insert into lines (id) values (2) };\n}\n"
        "sql! { insert into lines (id) values (null) };\n",
        "s.pell",
        "postgres",
    )
    assert script.sql is not None, [d.message for d in script.diagnostics]
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(LINES)
        with pytest.raises(psycopg.errors.NotNullViolation):
            connection.execute(script.sql)
        assert rows(connection, "select id from lines order by id") == [(1,), (2,)]


def test_a_transaction_block_where_plpgsql_cannot_commit_is_a_located_error() -> None:
    source = """module m;

fn value() -> number {
    transaction {
        sql! { insert into lines (id) values (1) };
    }
    return 1;
}

fn cleaned() {
    transaction {
        sql! { insert into lines (id) values (1) };
    }
} finally {
    sql! { insert into lines (id) values (2) };
}

fn plain() {
    transaction {
        sql! { insert into lines (id) values (1) };
    }
}

fn caller() -> number {
    plain();
    return 2;
}

@autonomous
fn alone() {
    plain();
}
"""
    assert refusal(source) == [
        "4:5: a `transaction { }` block in a fn that returns a value (a FUNCTION, which cannot "
        "COMMIT) is not supported on postgres yet  [unsupported]",
        "11:5: a `transaction { }` block in a fn with `finally` (its body is a block with an "
        "exception handler, inside which PostgreSQL ends no transaction) is not supported on "
        "postgres yet  [unsupported]",
        "25:5: a call of `plain`, which commits (a `transaction { }` block), in a fn that "
        "returns a value (a FUNCTION, which cannot COMMIT) is not supported on postgres yet  "
        "[unsupported]",
        "31:5: a call of `plain`, which commits (a `transaction { }` block), in an "
        "`@autonomous` fn (its body runs as a FUNCTION, in a session of its own) is not "
        "supported on postgres yet  [unsupported]",
    ]


CURSOR_LOOPS = """module m;

pub record Row { id: number }

unsafe fn rows() -> cursor<Row> {
    return exec_dyn("select id from lines order by id");
}

fn keep(id: number) {
    transaction {
        sql! { insert into seen (id) values (:id) };
    }
}

pub unsafe fn drain() {
    for r in rows() {
        transaction {
            sql! { insert into seen (id) values (:r.id) };
        }
    }
}

pub unsafe fn drain_local() {
    let c: cursor<Row> = exec_dyn("select id from lines order by id");
    for r in c {
        keep(r.id);
    }
}

pub fn drain_deleted() {
    for r in sql! { with d as (delete from lines returning id) select id from d } {
        keep(r.id);
    }
}
"""


def test_a_commit_inside_a_loop_whose_cursor_it_would_close_is_a_located_error() -> None:
    """Review 11, finding 1: on the server each of these committed the first row, then failed
    (34000 "cursor does not exist" for the refcursors, 55000 for the query that deletes)."""
    loop = (
        "(a COMMIT closes the cursor: PostgreSQL keeps only a cursor FOR loop's cursor over a "
        "COMMIT) is not supported on postgres yet  [unsupported]"
    )
    assert refusal(CURSOR_LOOPS) == [
        f"17:9: a `transaction {{ }}` block in a `for` loop over a `cursor<Row>` {loop}",
        "26:9: a call of `keep`, which commits (a `transaction { }` block), in a `for` loop "
        f"over a `cursor<Row>` {loop}",
        "32:9: a call of `keep`, which commits (a `transaction { }` block), in a `for` loop "
        "over a query that changes data (PostgreSQL keeps a cursor loop's cursor over a COMMIT "
        "only for a read-only query) is not supported on postgres yet  [unsupported]",
    ]


def test_a_commit_inside_a_loop_over_a_read_only_query_keeps_the_loops_cursor(dsn: str) -> None:
    """43.8: the cursor of a loop over a read-only query is made holdable by the first COMMIT,
    so every row is read (`for update` locks rows, and is read-only there)."""
    source = """module m;

pub fn copy() {
    for r in sql! { select id from lines order by id for update } {
        transaction {
            sql! { insert into seen (id) values (:r.id) };
        }
    }
}
"""
    load(dsn, source, "create table lines (id numeric); create table seen (id numeric);"
         "insert into lines values (1), (2), (3);")
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("call m.copy()")
        assert rows(connection, "select id from seen order by id") == [(1,), (2,), (3,)]


def test_a_query_calling_a_fn_that_commits_is_a_located_error_on_postgres() -> None:
    """Review 11, finding 4: such a fn is a PROCEDURE there, which a query cannot call (42809
    on the server); a savepoint-scoped retried fn is a FUNCTION, which it can."""
    source = """module sq;

pub fn post(id: number) {
    transaction {
        sql! { insert into lines (id) values (:id) };
    }
}

@retry(3, on = [lock_timeout])
pub fn saved(id: number) -> number {
    sql! { insert into lines (id) values (:id) };
    return 1;
}

pub fn via_sql(id: number) -> number {
    let n: number = sql! { select count(*) from lines where sq.post(:id) is null }.one();
    let m: number = sql! { select sq.saved(:id) }.one();
    return n + m;
}
"""
    assert refusal(source) == [
        "16:61: this SQL statement calls `post`, which commits (a `transaction { }` block): on "
        "postgres such a fn is a PROCEDURE, which only CALL runs, not a query  "
        "[transaction-in-sql]"
    ]


# ---- @autonomous

AUDIT = """
module auditing;

pub error Refused { why: text }

@autonomous
pub fn log_line(msg: text) {
    sql! { insert into log_lines (msg) values (:msg) };
}

@autonomous
pub fn stamp(at: date, gap: interval, amount: number) -> date {
    sql! { insert into stamps (at, gap, amount) values (:at, :gap, :amount) };
    return at;
}

@autonomous
pub fn seen() -> number {
    return sql! { select count(*) from work_rows }.one();
}

@autonomous
pub fn refuse(why: text) -> Result<(), Refused> {
    sql! { insert into log_lines (msg) values (:why) };
    return Err(Refused { why: why });
}

pub fn work(msg: text) -> number {
    sql! { insert into work_rows (msg) values (:msg) };
    log_line(msg);
    return seen();
}
"""

AUDIT_SETUP = (
    "create table log_lines (msg text);"
    "create table work_rows (msg text);"
    "create table stamps (at timestamp(0), gap interval, amount numeric);"
)


def test_an_autonomous_insert_survives_the_callers_rollback(dsn: str) -> None:
    load(dsn, AUDIT, AUDIT_SETUP)
    with psycopg.connect(dsn) as connection:  # a transaction the test rolls back
        # the autonomous fn does not see the caller's uncommitted row
        assert connection.execute("select auditing.work('first')").fetchone() == (0,)
        connection.rollback()
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert rows(connection, "select msg from log_lines") == [("first",)]
        assert rows(connection, "select msg from work_rows") == []


def test_an_autonomous_fn_reads_its_arguments_in_the_callers_date_and_interval_styles(
    dsn: str,
) -> None:
    load(dsn, AUDIT, AUDIT_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("set datestyle = 'SQL, DMY'; set intervalstyle = 'sql_standard'")
        row = connection.execute(
            "select auditing.stamp('2026-01-02 03:04:05', '-1 02:00:00', 1.50)::text"
        ).fetchone()
        assert row == ("02/01/2026 03:04:05",)
        connection.execute("reset datestyle; reset intervalstyle")
        assert rows(connection, "select at::text, gap::text, amount::text from stamps") == [
            ("2026-01-02 03:04:05", "-1 days -02:00:00", "1.50")
        ]


def test_an_autonomous_fns_error_keeps_its_sqlstate_and_undoes_its_own_work(dsn: str) -> None:
    load(dsn, AUDIT, AUDIT_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select auditing.refuse('no')")
        assert raised.value.sqlstate == "PE100"
        assert raised.value.diag.message_primary == 'auditing.Refused: {"why" : "no"}'
        assert rows(connection, "select msg from log_lines") == []
        # the connection an error left is closed: the next call works
        connection.execute("select auditing.log_line('again')")
        assert rows(connection, "select msg from log_lines") == [("again",)]


def test_an_autonomous_fn_says_what_it_lacks(dsn: str) -> None:
    load(dsn, AUDIT, AUDIT_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("create role pell_parity_clerk login; grant usage on schema auditing to pell_parity_clerk")
        connection.execute("grant usage on schema pell_runtime to pell_parity_clerk")
        connection.execute("set role pell_parity_clerk")
        with pytest.raises(psycopg.errors.InsufficientPrivilege, match="pell_autonomous"):
            connection.execute("select auditing.log_line('x')")
        connection.execute("reset role; drop extension dblink")
        with pytest.raises(psycopg.errors.FeatureNotSupported, match="dblink"):
            connection.execute("select auditing.log_line('x')")
        # the module's script creates the extension, and says why when it cannot
        (database,) = connection.execute("select current_database()").fetchone() or ("",)
        connection.execute(f"grant create on database {database} to pell_parity_clerk")
        connection.execute("set role pell_parity_clerk")
        with pytest.raises(psycopg.errors.RaiseException, match="need the dblink extension"):
            connection.execute(compiled(AUDIT)[0])


# ---- Oracle packages

SLEEPS = """
module naps;

pub fn nap(s: number) {
    dbms_lock::sleep(s);
    dbms_session::sleep(s);
    dbms_output::put_line("slept");
}
"""


def test_dbms_lock_and_dbms_session_sleep_are_pg_sleep(dsn: str) -> None:
    load(dsn, SLEEPS)
    notices: list[str] = []
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.add_notice_handler(lambda notice: notices.append(notice.message_primary))
        started = time.monotonic()
        connection.execute("select naps.nap(0.2)")
        assert time.monotonic() - started >= 0.4
    assert notices == ["slept"]


WAITS = """
module waits;

@autonomous
pub fn slow(s: number) {
    sql! { insert into log_lines (msg) values ('slow') };
    dbms_lock::sleep(s);
}

@autonomous
pub fn bump(id: number) {
    sql! { update acct set n = n + 1 where id = :id };
}

@autonomous
pub fn clock() -> text {
    return sql! { select to_char(localtimestamp, 'YYYY-MM-DD HH24') }.one();
}
"""

WAITS_SETUP = (
    "create table log_lines (msg text);"
    "create table acct (id numeric primary key, n numeric);"
    "insert into acct values (1, 0);"
    # a safety net: a session that waits for a lock in vain fails after 5 s instead of hanging
    # the test run (the caller's own setting, passed on, is what the tests look at)
    "do $$ begin execute format('alter database %I set lock_timeout = ''5s''', "
    "current_database()); end $$;"
)


def test_a_cancelled_autonomous_call_cancels_its_work_and_leaves_no_connection(dsn: str) -> None:
    """The caller's statement_timeout ends the wait at once (not when the other session's
    statement ends), that statement is cancelled (its insert is rolled back), and the
    connection is closed: the next call works."""
    load(dsn, WAITS, WAITS_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("set statement_timeout = '300ms'")
        started = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            connection.execute("select waits.slow(3)")
        assert time.monotonic() - started < 2
        connection.execute("set statement_timeout = 0")
        assert rows(connection, "select dblink_get_connections()") == [(None,)]
        connection.execute("select waits.slow(0)")
        # the cancelled call's insert went with its statement; the second call's stays
        assert rows(connection, "select msg from log_lines") == [("slow",)]


def test_an_autonomous_call_replaces_a_connection_left_under_its_name(dsn: str) -> None:
    load(dsn, WAITS, WAITS_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(
            "select dblink_connect('pell_autonomous', pell_runtime.autonomous_connection())"
        )
        connection.execute("select waits.slow(0)")
        assert rows(connection, "select msg from log_lines") == [("slow",)]
        assert rows(connection, "select dblink_get_connections()") == [(None,)]


def test_an_autonomous_fn_waiting_for_its_callers_lock_takes_the_callers_lock_timeout(
    dsn: str,
) -> None:
    load(dsn, WAITS, WAITS_SETUP)
    with psycopg.connect(dsn) as connection:  # the caller's transaction holds the row lock
        # the deadlock check below waits for deadlock_timeout (50ms on the test server)
        connection.execute("set lock_timeout = '300ms'; set deadlock_timeout = '10s'")
        connection.execute("update acct set n = n + 100 where id = 1")
        started = time.monotonic()
        with pytest.raises(psycopg.errors.LockNotAvailable):
            connection.execute("select waits.bump(1)")
        assert time.monotonic() - started < 2
        connection.rollback()


def test_an_autonomous_fn_waiting_for_its_callers_lock_is_a_deadlock(dsn: str) -> None:
    """With no lock_timeout, the wait is found as PostgreSQL finds a deadlock, after
    deadlock_timeout; the other session's statement is cancelled, so its work is undone, as
    Oracle's ORA-00060 in the autonomous transaction."""
    load(dsn, WAITS, WAITS_SETUP)
    with psycopg.connect(dsn) as connection:
        connection.execute("set deadlock_timeout = '200ms'")
        connection.execute("update acct set n = n + 100 where id = 1")
        started = time.monotonic()
        with pytest.raises(psycopg.errors.DeadlockDetected):
            connection.execute("select waits.bump(1)")
        assert time.monotonic() - started < 3
        connection.rollback()
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert rows(connection, "select n from acct") == [(0,)]


def test_an_autonomous_fn_reads_the_clock_in_the_callers_time_zone(dsn: str) -> None:
    load(dsn, WAITS, WAITS_SETUP)
    with psycopg.connect(dsn, autocommit=True) as connection:
        for zone in ("Etc/GMT-14", "Etc/GMT+11"):  # 25 hours apart: one differs from the server's
            connection.execute(f"set timezone = '{zone}'")
            assert rows(
                connection, "select waits.clock() = to_char(localtimestamp, 'YYYY-MM-DD HH24')"
            ) == [(True,)]
