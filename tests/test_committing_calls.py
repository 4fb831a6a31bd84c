"""The one table of Oracle procedures that commit (`COMMITTING_CALLS`): every row cited, printed
in docs/retry.md, and read alike for a Pell call, a call in a PL/SQL block of `sql! { }`, and a
call in the literal block an EXECUTE IMMEDIATE runs; DBMS_SQL.PARSE read by its text."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pell import ast, compile_source
from pell.checker.retry_facts import COMMITTING_CALLS, committing_call, ends_transaction
from pell.project import shipped_stubs, stub_index
from pell.verify import interpreter, schedules, verify

ROOT = Path(__file__).parent.parent


def test_every_row_is_cited_and_says_how_it_is_known() -> None:
    for pattern, why, source in COMMITTING_CALLS:
        assert re.fullmatch(r"[a-z_]+\.[a-z_*]+", pattern), pattern
        kind = source.split(":")[0]
        assert kind in ("documented", "observed", "inferred"), source
        # a row that is not documented says so in the message a user reads, too
        assert kind == "documented" or f"({kind})" in why, (pattern, why)
        # a documented row names where: a quotation and the reference it is from
        assert kind != "documented" or ('"' in source and "Reference" in source), source


def test_the_retry_guide_prints_the_table() -> None:
    guide = (ROOT / "docs" / "retry.md").read_text(encoding="utf-8")
    section = guide[guide.index("### Calls that commit") : guide.index("## What it warns about")]
    rows = re.findall(r"^\| `([^`]+)` \| (.+?) \| (.+?) \|$", section, re.MULTILINE)
    assert rows == [tuple(row) for row in COMMITTING_CALLS]


def test_the_shipped_stubs_leave_commits_to_the_table() -> None:
    """One table: a shipped stub marking @commits would be a second one."""
    for path in shipped_stubs():
        module = stub_index().parsed(path)
        assert module is not None
        marked = [
            f"{path[0]}.{item.name}"
            for item in module.items
            if isinstance(item, ast.Fn) and any(a.name == "commits" for a in item.annotations)
        ]
        assert marked == []


@pytest.mark.parametrize(
    ("path", "commits"),
    [
        (("dbms_stats", "gather_table_stats"), True),
        (("DBMS_STATS", "Gather_Table_Stats"), True),  # Oracle folds unquoted names
        (("dbms_stats", "set_table_stats"), True),  # not declared by the stub: the table knows
        (("dbms_stats", "create_stat_table"), True),
        (("dbms_stats", "get_param"), False),
        (("dbms_mview", "refresh"), True),
        (("dbms_mview", "refresh_all_mviews"), True),
        (("dbms_mview", "explain_mview"), False),
        (("dbms_ddl", "alter_compile"), True),
        (("dbms_lock", "allocate_unique"), True),
        (("dbms_lock", "sleep"), False),
        (("dbms_sql", "parse"), False),  # only when its text is DDL: read from the text
        (("refresh",), False),
        (("reports", "dbms_mview", "refresh"), False),  # a Pell module path, not a package
        # DBMS_TRANSACTION: COMMIT and ROLLBACK end the transaction (review D5); a rollback to
        # a savepoint keeps it, and ROLLBACK FORCE acts on an in-doubt transaction only
        (("dbms_transaction", "commit"), True),
        (("DBMS_TRANSACTION", "COMMIT_COMMENT"), True),
        (("dbms_transaction", "rollback"), True),
        (("dbms_transaction", "rollback_savepoint"), False),
        (("dbms_transaction", "rollback_force"), False),
        (("dbms_transaction", "savepoint"), False),
    ],
)
def test_committing_call(path: tuple[str, ...], commits: bool) -> None:
    assert (committing_call(path) is not None) == commits


def _ends(sql: str) -> str | None:
    return ends_transaction(ast.SqlBlock(sql, 0, 0, span=ast.Span(0, len(sql))))


@pytest.mark.parametrize(
    ("sql", "ends"),
    [
        ("begin dbms_mview.refresh('SALES_MV', method => 'C'); end;", "`dbms_mview.refresh`"),
        (
            "begin SYS.DBMS_STATS.GATHER_TABLE_STATS(USER, 'T'); end;",
            "`SYS.DBMS_STATS.GATHER_TABLE_STATS` in a PL/SQL block (commits before and after",
        ),
        ('begin "DBMS_DDL".alter_compile(\'PACKAGE\', user, \'P\'); end;', "DBMS_DDL.alter_compile"),
        (
            "declare n int; begin n := 1; dbms_stats.set_table_stats(user, 'T', numrows => n); end;",
            "dbms_stats.set_table_stats",
        ),
        (
            "begin execute immediate 'BEGIN dbms_mview.refresh(''MV''); END;'; end;",
            "EXECUTE IMMEDIATE of `dbms_mview.refresh` in a PL/SQL block",
        ),
        (
            "begin execute immediate q'[declare begin dbms_ddl.alter_compile('PACKAGE', user, 'P'); end;]'; end;",
            "EXECUTE IMMEDIATE of `dbms_ddl.alter_compile`",
        ),
        (
            "begin dbms_sql.parse(c, 'create table t (x int)', dbms_sql.native); end;",
            "`dbms_sql.parse` of DDL (CREATE) in a PL/SQL block",
        ),
        (
            "begin dbms_sql.parse(language_flag => 1, statement => 'drop table t', c => c); end;",
            "`dbms_sql.parse` of DDL (DROP)",
        ),
        (
            "begin execute immediate 'begin dbms_sql.parse(c, ''truncate table t'', 1); end;'; end;",
            "EXECUTE IMMEDIATE of `dbms_sql.parse` of DDL (TRUNCATE)",
        ),
        # a concatenation is not a literal: what it runs cannot be read
        ("begin execute immediate 'drop table ' || l_name; end;", "cannot read"),
        # nothing that commits
        ("begin dbms_mview.explain_mview('MV'); end;", None),
        ("begin reports.refresh('MV'); end;", None),  # not an Oracle package of the table
        ("begin dbms_sql.parse(c, 'select 1 from dual', dbms_sql.native); end;", None),
        ("begin dbms_sql.parse(c, l_text, dbms_sql.native); n := dbms_sql.execute(c); end;", None),
        ("begin dbms_output.put_line('commit'); end;", None),  # a string is no statement
        ("begin execute immediate 'insert into t values (1)'; end;", None),
        # COMMIT and ROLLBACK as statements, wherever a statement starts
        ("begin commit; end;", "COMMIT in a PL/SQL block"),
        ("begin if n > 0 then commit write nowait; else rollback work; end if; end;", "COMMIT"),
        ("begin for r in (select 1 from dual) loop commit; end loop; end;", "COMMIT"),
        ("begin <<done>> rollback; end;", "ROLLBACK in a PL/SQL block"),
        ("begin null; exception when others then rollback; raise; end;", "ROLLBACK"),
        ("begin commit comment 'nightly'; end;", "COMMIT"),
        ("begin rollback to savepoint s; end;", None),
        # a column or field named commit or rollback is no statement (review D5)
        ("declare s varchar2(40); begin select b.commit into s from builds b; end;", None),
        ("begin update builds b set b.rollback = 'n' where b.commit = 'x'; end;", None),
        ("begin select commit into s from builds; end;", None),
        ("begin update builds set commit = :sha; end;", None),
        ("begin select case when n = 1 then commit else rollback end into s from b; end;", None),
        ("begin l_build.commit := 'x'; end;", None),
        # DBMS_TRANSACTION's procedures that end it, in any case and with a schema (review D5)
        ("begin dbms_transaction.commit; end;", "`dbms_transaction.commit` in a PL/SQL block"),
        ("begin SYS.DBMS_TRANSACTION.ROLLBACK; end;", "`SYS.DBMS_TRANSACTION.ROLLBACK` in a"),
        ("begin dbms_transaction.commit_comment('nightly'); end;", "(runs COMMIT (documented))"),
        ("begin dbms_transaction.rollback_savepoint('s'); end;", None),
        ("begin dbms_transaction.rollback_force('1.21.17'); end;", None),
        # FORCE ends the in-doubt transaction it names, not the current one (review 3, N6)
        ("begin commit force '1.21.17'; end;", None),
        ("begin rollback work force '1.21.17'; end;", None),
        ("commit force '1.21.17', 1234", None),
        ("rollback force '1.21.17'", None),
        ("begin execute immediate 'commit work force ''1.21.17'''; end;", None),
        ("begin rollback; commit force '1.21.17'; end;", "ROLLBACK in a PL/SQL block"),
    ],
)
def test_a_plsql_block_ends_the_transaction(sql: str, ends: str | None) -> None:
    what = _ends(sql)
    assert (what is None) if ends is None else (what is not None and ends in what), what


def _codes(source: str) -> list[tuple[str, int]]:
    result = compile_source(source, "m.pell")
    return [(d.code, result.source.line_col(d.span.start)[0]) for d in result.diagnostics]


def test_a_committing_call_in_a_plsql_block_is_refused_like_a_pell_call() -> None:
    source = """module m;

@retry(n = 3, on = [busy])
pub fn a() {
    dbms_stats::gather_table_stats("HR", "EMP");
    sql! { begin dbms_stats.gather_table_stats('HR', 'EMP'); end; };
}

pub fn b() {
    transaction {
        sql! { begin dbms_mview.refresh('MV'); end; };
    }
}
"""
    assert _codes(source) == [
        ("commit-in-retry", 5),
        ("commit-in-retry", 6),
        ("commit-in-transaction", 11),
    ]


def test_dbms_transaction_commit_is_refused_and_a_column_named_commit_is_not() -> None:
    """Review D5: `b.commit` (a git SHA column) is no COMMIT; DBMS_TRANSACTION.COMMIT and
    COMMIT_COMMENT, called from Pell or from a PL/SQL block, are."""
    source = """module m;

import dbms_transaction;

@retry(n = 3, on = [busy])
pub fn a(id: number) {
    sql! {
        declare
            l_sha varchar2(40);
        begin
            select b.commit into l_sha from builds b where b.id = :id;
            update builds b set b.rollback = 'n' where b.id = :id;
        end;
    };
}

@retry(n = 3, on = [busy])
pub fn b(id: number) {
    sql! { update t set a = 1 where id = :id };
    dbms_transaction::commit_comment("nightly");
    sql! { begin dbms_transaction.commit; end; };
}
"""
    assert _codes(source) == [("commit-in-retry", 20), ("commit-in-retry", 21)]


def test_verify_runs_dbms_transaction_rollback_as_a_rollback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """pellc verify models a Pell call of DBMS_TRANSACTION.ROLLBACK as the ROLLBACK it is: the
    work before it is undone, not committed."""
    source = """module m;

import dbms_transaction;

pub fn undo(id: number) {
    sql! { update t set a = 1 where id = :id };
    dbms_transaction::rollback();
}
"""
    result = compile_source(source, "m.pell")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    logs: list[str] = []

    class Recorded(interpreter.Run):
        def call_top(self, *args: Any) -> None:
            super().call_top(*args)
            logs.extend(text for text, _ in self.log)

    monkeypatch.setattr(schedules, "Run", Recorded)
    verify([result])
    ended = [text for text in logs if "dbms_transaction::rollback" in text and "ends" in text]
    assert ended and all("update t set" in text.split("undoes")[1] for text in ended), logs
    assert not any("dbms_transaction::rollback commits" in text for text in logs)


def test_a_parse_of_a_text_pellc_cannot_read_is_a_warning_where_it_may_commit() -> None:
    source = """module m;

fn parse(c: int, stmt: text) {
    sql! { begin dbms_sql.parse(:c, :stmt, dbms_sql.native); end; };
}

@retry(n = 3, on = [busy])
pub fn a(c: int, stmt: text) {
    parse(c, stmt);
}

pub fn b(c: int, stmt: text) {
    parse(c, stmt);
}
"""
    # in the retried fn (through a call), not where no transaction needs keeping open
    assert _codes(source) == [("parse-may-commit", 9)]
