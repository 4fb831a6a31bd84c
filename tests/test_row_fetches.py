"""Rows a statement may not have (issue 24): `.returning::<T>().one()` after DML that changed
no row, and `.first()` on a FOR UPDATE SKIP LOCKED query, fetched from a cursor of its own that
every way out closes; the `rownum-skip-locked` warning. PostgreSQL runs them for real in
test_postgres.py."""

from __future__ import annotations

from typing import Any

import parseora
import pytest
from conftest import assert_oracle_accepts
from verify_checks import retry_parts, tree

from pell import compile_source, plsql, sqltext
from pell.compiler import CompileResult
from pell.verify import interpreter, schedules, verify

CLAIMS = """module claims;

pub record Task { id: number, payload: text }

pub error TaskNotFound { id: number }

@retry(n = 3, backoff = 10, on = [busy, lock_timeout, TaskNotFound])
pub fn claim(worker: text) -> Result<Task, TaskNotFound> {
    let task: Task = sql! {
        select id, payload from tasks where state = 'ready' for update skip locked
    }.first();
    if task.id == None {
        return Err(TaskNotFound { id: None });
    }
    let id = task.id;
    sql! { update tasks set state = 'running', worker = :worker where id = :id };
    return Ok(task);
}

@retry(n = 3, backoff = 10, on = [busy, TaskNotFound])
pub fn start(id: number) -> Result<number, TaskNotFound> {
    let attempts = sql! {
        update tasks set attempts = attempts + 1 where id = :id returning attempts
    }.returning::<number>().one()?;
    return Ok(attempts);
}

@retry(n = 2, on = [busy])
pub fn finish(id: number) -> text {
    let payload = sql! { delete from tasks where id = :id returning payload }.returning::<text>().one();
    return payload;
}

pub fn touch(id: number) -> Result<(), TaskNotFound> {
    sql! { update tasks set seen = 1 where id = :id returning id }.returning::<number>().one()?;
    return Ok(());
}
"""


def compiled(source: str = CLAIMS, target: str = "23ai") -> CompileResult:
    result = compile_source(source, "claims.pell", target)
    assert result.sql is not None, [d.message for d in result.diagnostics]
    return result


def statements_after_returning(subprogram: plsql.Subprogram) -> list[plsql.Stmt]:
    """The statement that follows each DML RETURNING INTO, in the list that holds both."""
    found: list[plsql.Stmt] = []
    lists = [subprogram.body] + [b for s in plsql.walk(subprogram.body) for b in _lists_in(s)]
    for body in lists:
        for index, stmt in enumerate(body):
            if isinstance(stmt, plsql.Sql) and " returning " in stmt.text.lower():
                found.append(body[index + 1] if index + 1 < len(body) else plsql.Null())
    return found


def _lists_in(stmt: plsql.Stmt) -> list[list[plsql.Stmt]]:
    if isinstance(stmt, plsql.If):
        return [branch.body for branch in stmt.branches] + [stmt.otherwise or []]
    if isinstance(stmt, plsql.Loop | plsql.CursorLoop | plsql.RetryLoop):
        return [stmt.body]
    if isinstance(stmt, plsql.Block):
        return [stmt.body] + [handler.body for handler in stmt.handlers]
    return []


# -- RETURNING INTO with no row


def test_returning_into_no_row_raises_no_data_found_or_the_fns_not_found_error() -> None:
    """"If the statement affects no rows, then the values of the variables are undefined"
    (PL/SQL Language Reference, RETURNING INTO Clause): the statement right after the DML
    tests SQL%ROWCOUNT and raises, so nothing reads them; with `?` the error is the fn's
    NotFound, which `on` retries like `.one()?`'s."""
    result = compiled()
    plain = statements_after_returning(tree(result, "finish"))
    assert len(plain) == 1 and isinstance(plain[0], plsql.If)
    branch = plain[0].branches[0]
    assert branch.condition.text() == "SQL%ROWCOUNT = 0"
    assert branch.body == [plsql.Raise(plsql.NO_DATA_FOUND, origin=branch.body[0].origin)]
    mapped = statements_after_returning(tree(result, "start"))
    assert len(mapped) == 1 and isinstance(mapped[0], plsql.If)
    branch = mapped[0].branches[0]
    assert branch.condition.text() == "SQL%ROWCOUNT = 0"
    assert [type(s) for s in branch.body] == [plsql.RaiseError]
    raised = branch.body[0]
    assert isinstance(raised, plsql.RaiseError) and raised.error == (("claims",), "TaskNotFound")
    assert result.sql is not None
    assert "IF SQL%ROWCOUNT = 0 THEN RAISE NO_DATA_FOUND; END IF;" in result.sql


def test_a_returning_whose_value_is_unused_still_has_its_into_and_no_row_check() -> None:
    """`sql! { ... returning id }.returning::<number>().one()?;` as a statement: PL/SQL has no
    RETURNING without INTO, so the value goes to a temporary, checked like any other."""
    touch = tree(compiled(), "touch")
    [dml] = [s for s in plsql.walk(touch.body) if isinstance(s, plsql.Sql)]
    assert dml.text.endswith("returning id INTO l_pell_number")
    [after] = statements_after_returning(touch)
    assert isinstance(after, plsql.If) and after.branches[0].condition.text() == "SQL%ROWCOUNT = 0"
    assert isinstance(after.branches[0].body[0], plsql.RaiseError)


def test_the_verifier_retries_the_not_found_error_of_a_returning_that_changed_no_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pellc verify runs the no-row branch: the NotFound error is raised there, rolled back to
    the savepoint and retried (`on` names it); NO_DATA_FOUND, which `on` does not name, is
    rolled back and raised to the caller; and nothing is found wrong."""
    runs = runs_of(verified_runs(compiled(), monkeypatch), "start")
    raised = [run for run in runs if any("raises claims.TaskNotFound" in t for t, _ in run.log)]
    assert raised, "no run took the no-row branch"
    assert any(any("attempt 2 of start" in text for text, _ in run.log) for run in raised)
    # without `?`: NO_DATA_FOUND, which `on` does not name: rolled back, raised to the caller
    runs = runs_of(verified_runs(compiled(), monkeypatch), "finish")
    assert any(any("the call raised NO_DATA_FOUND" in t for t, _ in run.log) for run in runs)
    assert not verify([compiled()]).findings


# -- `.first()` under SKIP LOCKED: a cursor of its own


def test_first_under_skip_locked_fetches_one_row_from_a_cursor_closed_on_every_way_out() -> None:
    result = compiled()
    _, attempt = retry_parts(tree(result, "claim"))
    block = attempt.body[0]
    assert isinstance(block, plsql.Block)
    assert len(block.declarations) == 1
    assert block.declarations[0].startswith("CURSOR c_pell_first IS")
    assert block.declarations[0].endswith("for update skip locked;")
    texts = [s.text if isinstance(s, plsql.Sql | plsql.Exec) else type(s).__name__ for s in block.body]
    assert texts == [
        "OPEN c_pell_first",
        "FETCH c_pell_first INTO l_task.id, l_task.payload",
        "If",
        "CLOSE c_pell_first",
    ]
    no_row = block.body[2]
    assert isinstance(no_row, plsql.If)
    assert no_row.branches[0].condition.text() == "c_pell_first%NOTFOUND"
    assert no_row.branches[0].body == [plsql.Assign("l_task", "NULL", origin=no_row.origin)]
    # any error between OPEN and CLOSE: closed, then raised again
    [handler] = block.handlers
    assert handler.exceptions == [plsql.OTHERS]
    close, again = handler.body
    assert isinstance(close, plsql.If) and isinstance(again, plsql.Raise)
    assert close.branches[0].condition.text() == "c_pell_first%ISOPEN"
    assert close.branches[0].body == [plsql.Exec("CLOSE c_pell_first", origin=close.origin)]
    assert again.exception is None
    assert result.sql is not None
    assert "FETCH FIRST" not in result.sql


def verified_runs(
    result: CompileResult,
    monkeypatch: pytest.MonkeyPatch,
    run_class: type[interpreter.Run] = interpreter.Run,
) -> list[interpreter.Run]:
    """Every schedule pellc verify runs on `result`, as the runs themselves."""
    made: list[interpreter.Run] = []

    class Recorded(run_class):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(schedules, "Run", Recorded)
    verify([result])
    return made


def runs_of(runs: list[interpreter.Run], fn: str) -> list[interpreter.Run]:
    return [run for run in runs if any(f"call claims::{fn}" in t for t, _ in run.log[:2])]


class CursorRun(interpreter.Run):
    """A verifier run that also keeps the explicit cursors open, as strictly as PL/SQL could:
    a cursor stays open until CLOSE, whatever block declared it. Opening an open one
    (CURSOR_ALREADY_OPEN, ORA-06511) and one left open when the call ends are recorded."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.cursors_open: set[str] = set()
        self.cursor_faults: list[str] = []

    def sql(self, stmt: plsql.Sql, frame: interpreter.Frame) -> None:
        if stmt.verb != "open":
            super().sql(stmt, frame)
            return
        cursor = stmt.text.split()[1]
        if cursor in self.cursors_open:
            self.cursor_faults.append(f"OPEN {cursor} while open")
        super().sql(stmt, frame)  # an OPEN that fails opens nothing
        self.cursors_open.add(cursor)

    def close(self, stmt: plsql.Exec, frame: interpreter.Frame) -> None:
        if stmt.text.startswith("CLOSE "):
            self.cursors_open.discard(stmt.text.split()[1])
        self.with_calls(stmt, frame)

    def test(self, condition: plsql.Condition, frame: interpreter.Frame, at: Any) -> bool:
        if isinstance(condition, plsql.Opaque) and condition.sql.endswith("%ISOPEN"):
            return condition.sql.removesuffix("%ISOPEN") in self.cursors_open
        return super().test(condition, frame, at)

    def call_top(self, *args: Any) -> None:
        super().call_top(*args)
        self.cursor_faults += [f"{cursor} left open" for cursor in sorted(self.cursors_open)]


def test_no_schedule_reopens_the_claim_cursor_or_leaves_it_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every fault pellc verify plants in the claim (at OPEN, at FETCH, after CLOSE, on each
    attempt) leaves the cursor closed, so the next attempt's OPEN finds it closed."""
    executors = {**interpreter.EXECUTORS, plsql.Sql: CursorRun.sql, plsql.Exec: CursorRun.close}
    monkeypatch.setattr(interpreter, "EXECUTORS", executors)
    runs = runs_of(verified_runs(compiled(), monkeypatch, CursorRun), "claim")
    assert any(any("fetch statement fails" in t for t, _ in run.log) for run in runs)
    assert any(any("attempt 2 of claim" in t for t, _ in run.log) for run in runs)
    faults = [run.cursor_faults for run in runs if isinstance(run, CursorRun) and run.cursor_faults]
    assert faults == []


# -- the warning


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("select id from t where state = 'ready' and rownum = 1 for update skip locked", "ROWNUM"),
        ("select id from t where (rownum <= 5 or x = 1) for update of t.id skip locked", "ROWNUM"),
        ("select id from t order by id fetch first 1 rows only for update skip locked", "FETCH"),
        ("select id from t order by id offset 1 rows for update skip locked", "OFFSET"),
        ("select id from t where id in (select id from u where rownum = 1) for update skip locked", None),
        ("select rownum, id from t for update skip locked", None),
        ("select id from t where rownum = 1 for update", None),
        ("select id from t where rownum = 1 for update nowait", None),
        # words in strings and quoted names are no keywords; OFFSET and FETCH, not reserved,
        # may name columns (review D3)
        ("select id from t where kind = 'fetch' for update skip locked", None),
        ("select id from t where note <> 'rownum' and k = q'[offset]' for update skip locked", None),
        ('select id from t where "ROWNUM" = 1 and "FETCH" = 2 for update skip locked', None),
        ("select id, offset from t where offset > 0 order by offset for update skip locked", None),
        ("select id from t where fetch = 'next' for update skip locked", None),
        # a column named OFFSET, then the clause: the clause's word is the one warned
        ("select id from t order by offset offset 2 rows for update skip locked", "OFFSET"),
        ("select id from t order by fetch fetch next 2 rows only for update skip locked", "FETCH"),
    ],
)
def test_rownum_fetch_or_offset_under_skip_locked_is_a_warning_on_oracle_only(
    query: str, word: str | None
) -> None:
    source = f"module m;\npub fn f() -> number {{\n    let n: number = sql! {{ {query} }}.one();\n    return n;\n}}\n"
    warned = [d for d in compile_source(source, "m.pell").diagnostics if d.code == "rownum-skip-locked"]
    if word is None:
        assert warned == []
    else:
        assert len(warned) == 1 and warned[0].message.startswith(f"{word} limits the rows")
        start = warned[0].span.start
        assert source[start : start + len(word)].upper() == word
        if word != "ROWNUM":  # the clause's own word, after a column of the same name
            assert start == source.upper().rindex(f" {word} ") + 1
    # PostgreSQL applies LIMIT after locking, and has no ROWNUM: no warning there
    postgres = compile_source(source, "m.pell", "postgres").diagnostics
    assert [d for d in postgres if d.code == "rownum-skip-locked"] == []


def test_the_rownum_warning_says_a_batch_gets_fewer_rows_not_none() -> None:
    """`rownum <= 10` under SKIP LOCKED: each kept row another session holds is a row fewer;
    no row at all only when every kept row is held (review D6)."""
    source = """module m;
pub fn f() -> list<number> {
    let ids: list<number> = sql! {
        select id from jobs where rownum <= 10 for update skip locked
    }.collect();
    return ids;
}
"""
    [warned] = compile_source(source, "m.pell").diagnostics
    assert warned.code == "rownum-skip-locked"
    assert "fewer rows than ROWNUM allows" in warned.message
    assert "none when other sessions hold every row it keeps" in warned.message
    assert "finds no row" not in warned.message


CLAIMS_WITH_KEYWORD_WORDS = """module crawl;

pub record Job { id: number, kind: text }
pub record Msg { id: number, offset: number }

pub fn claim_fetch_job() -> Job {
    let job: Job = sql! {
        select id, kind from jobs where kind = 'fetch' and state = 'ready' for update skip locked
    }.first();
    return job;
}

pub fn claim_unnoted() -> Job {
    let job: Job = sql! { select id, kind from jobs where note <> 'rownum' for update skip locked }.first();
    return job;
}

pub fn claim_offset_column() -> Msg {
    let m: Msg = sql! { select id, offset from msgs where state = 'ready' for update skip locked }.first();
    return m;
}

pub fn claim_quoted() -> Job {
    let job: Job = sql! {
        select id, "FETCH" as kind from jobs where state = 'ready' for update skip locked
    }.first();
    return job;
}

pub fn first_fetch_job() -> Job {
    let job: Job = sql! { select id, kind from jobs where kind = 'offset' order by id }.first();
    return job;
}
"""


@pytest.mark.parametrize("target", ["23ai", "postgres"])
def test_first_on_a_claim_with_fetch_or_offset_in_a_string_or_a_name_compiles(target: str) -> None:
    """The claim docs/retry.md recommends, `.first()` under SKIP LOCKED, on queries holding
    the words FETCH, OFFSET or ROWNUM in a string, a quoted name or as a column: no clause, so
    no sql-syntax error and no rownum-skip-locked warning (review D3)."""
    result = compile_source(CLAIMS_WITH_KEYWORD_WORDS, "crawl.pell", target)
    assert [(d.code, d.message) for d in result.diagnostics] == []
    assert result.sql is not None
    if target == "23ai":
        assert result.sql.count("CURSOR c_pell_first IS") == 4  # the four claims
        assert result.sql.count("FETCH FIRST 1 ROWS ONLY") == 1  # the plain query
        assert_oracle_accepts(result.sql)


def test_first_on_a_claim_with_its_own_row_limit_says_the_cursor_fetches_one_row() -> None:
    """Under SKIP LOCKED `.first()` adds no FETCH FIRST: the error says what it does and why
    the query's own FETCH or OFFSET is refused (review D3)."""
    source = """module m;
pub fn f() -> number? {
    let n: number? = sql! { select id from jobs order by id fetch first 5 rows only for update skip locked }.first();
    return n;
}
"""
    errors = [d for d in compile_source(source, "m.pell").diagnostics if d.code == "sql-syntax"]
    assert [d.message for d in errors] == [
        "`.first()` on a SKIP LOCKED query fetches one row from a cursor, but this query has "
        "FETCH: Oracle allows no row-limiting clause with FOR UPDATE"
    ]
    assert errors[0].hints == (
        "drop FETCH: the cursor's one FETCH takes the first row no other session holds",
    )


@pytest.mark.parametrize(
    ("query", "clause"),
    [
        ("select id from t order by id fetch first 1 rows only", "FETCH"),
        ("select id from t order by id offset :n rows fetch next 5 rows only", "OFFSET"),
        ("select id from t offset (select count(*) from u) row", "OFFSET"),
        ("select id from t fetch first 10 percent rows with ties", "FETCH"),
        ("select id from t for update", "FOR UPDATE"),
        ("select id, offset, fetch from t where offset > 0 order by fetch", None),
        ("select id from t where kind = 'fetch' or kind = 'offset'", None),
        ('select "OFFSET", "FETCH" from t', None),
        # a subquery's clause is its own
        ("select id from t where id in (select id from u order by id fetch first 1 rows only)", None),
        # ROWS of a window and of a MODEL clause are no row limit
        ("select offset, sum(x) over (order by id rows between 1 preceding and current row) from t", None),
        ("select offset from t model return updated rows dimension by (id) measures (offset x) rules ()", None),
    ],
)
def test_the_row_clause_is_found_by_its_shape(query: str, clause: str | None) -> None:
    assert sqltext.analyse(query).row_clause == clause


def test_first_needs_skip_locked_to_fetch_from_a_cursor() -> None:
    """A plain FOR UPDATE would lock every row the query selects: still an error."""
    source = "module m;\npub fn f() -> number? {\n    let n: number? = sql! { select id from t for update }.first();\n    return n;\n}\n"
    codes = [d.code for d in compile_source(source, "m.pell").diagnostics]
    assert codes == ["sql-syntax"]


def test_parseora_still_refuses_for_update_in_a_cursor() -> None:
    """tests/conftest.py cuts the FOR UPDATE clause of a cursor declaration before parseora
    reads it; when this fails, parseora reads the clause and the cut can go."""
    sql = """CREATE OR REPLACE PACKAGE BODY p AS
  PROCEDURE x IS
    CURSOR c IS select id from t for update skip locked;
  BEGIN
    OPEN c;
    CLOSE c;
  END x;
END p;
/
"""
    problems = [e["message"] for s in parseora.parse(sql) for e in s["errors"]]
    assert problems
