"""`transaction { }` blocks: a savepoint name of each block's own, and `pellc verify` runs the
fns that control the transaction, under a model that moves a reused savepoint name and erases
the savepoints set after the one a ROLLBACK TO names.

Oracle: "You can reuse savepoint names within a transaction. The savepoint moves from its old
position to the current point in the transaction." and "When you roll back to a savepoint, any
savepoints marked after that savepoint are erased." (PL/SQL User's Guide and Reference 10g
Release 2, "SAVEPOINT Statement", Usage Notes; docs/verify.md sources [3] to [5].)
"""

from __future__ import annotations

import re

import pytest
from verify_checks import findings, tree

from pell import compile_source, naming, plsql
from pell.compiler import CompileResult
from pell.verify import verify
from pell.verify.model import ModelError, Session

# Two blocks in one fn, one in another fn; and a module of another path with the same fn
# names: four blocks, four savepoints.
LEDGER = """\
module {path};

fn post(id: number) {{
    transaction {{
        sql! {{ insert into ledger_lines (id) values (:id) }};
    }}
    transaction {{
        sql! {{ update ledger_totals set n = n + 1 where id = :id }};
    }}
}}

fn close_the_accounting_day_all(id: number) {{
    transaction {{
        sql! {{ update days set closed = 1 where id = :id }};
    }}
}}
"""

SAVEPOINT_STATEMENT = re.compile(r"\b(SAVEPOINT|ROLLBACK TO) (\w+);")


def _compiled(path: str, target: str = "23ai") -> CompileResult:
    result = compile_source(LEDGER.format(path=path), f"{path}.pell", target)
    assert result.ok and result.sql is not None, [d.message for d in result.diagnostics]
    return result


def _blocks(sql: str) -> list[tuple[str, list[str]]]:
    """Each SAVEPOINT in the printed SQL, with the ROLLBACK TOs that follow it (before the next
    SAVEPOINT): the blocks, in order, read from the text rather than the tree."""
    blocks: list[tuple[str, list[str]]] = []
    for match in SAVEPOINT_STATEMENT.finditer(sql):
        verb, name = match.groups()
        if verb == "SAVEPOINT":
            blocks.append((name, []))
        else:
            assert blocks, f"ROLLBACK TO {name} before any SAVEPOINT"
            blocks[-1][1].append(name)
    return blocks


@pytest.mark.parametrize("target", ["23ai", "12.2"])
def test_every_transaction_block_has_a_savepoint_of_its_own(target: str) -> None:
    """Planted defect: `naming.transaction_savepoint` returning `pell_transaction` (+ `_<n>`
    for a fn's n-th block), the shared name of old, fails the distinctness assertion."""
    blocks = [
        block
        for path in ("ledger", "archive.ledger")
        for block in _blocks(_compiled(path, target).sql or "")
    ]
    assert len(blocks) == 6  # three per module
    names = [name for name, _ in blocks]
    assert len(set(names)) == len(names), names  # across fns, modules and one fn's blocks
    for name, rollbacks in blocks:
        # each block's handler rolls back to its own savepoint, and to no other
        assert rollbacks == [name], (name, rollbacks)
        assert len(name.encode("utf-8")) <= naming.MAX_IDENTIFIER_BYTES[target], name
        assert re.fullmatch(r"tx_[a-z0-9_]+_[0-9a-f]{8}", name), name
    # deterministic: the same source, the same names
    assert [name for name, _ in _blocks(_compiled("ledger", target).sql or "")] == names[:3]


def test_transaction_savepoint_names_are_apart_where_their_readable_part_is_cut() -> None:
    cut = [naming.transaction_savepoint(("ledger",), "a" * 40, n, 30) for n in (1, 2, 3)]
    assert len(set(cut)) == 3 and all(len(name) <= 30 for name in cut), cut
    assert naming.transaction_savepoint(("ledger",), "post", 2, 128).startswith("tx_ledger_post_2_")
    # never a retried fn's name, whose prefix is `sp_`
    assert naming.transaction_savepoint(("ledger",), "post", 1, 128) != naming.savepoint_name(
        ("ledger",), "post", 128
    )


# -- pellc verify runs the fns that control the transaction


SETTLE = """\
module ledger;

fn log_step(id: number) {
    transaction {
        sql! { insert into steps (id) values (:id) };
    }
}

fn settle(id: number) {
    transaction {
        sql! { update accounts set balance = balance - 1 where id = :id };
        sql! { insert into ledger (id) values (:id) };
    }
}
"""


def test_verify_runs_a_transaction_block_that_calls_a_committing_block() -> None:
    """Issue 24's case, planted in the trees (pellc refuses the call where it can see it):
    settle's block calls log_step, whose block re-uses settle's savepoint name and commits. A
    failure of settle's insert then meets `ROLLBACK TO` a savepoint the COMMIT erased
    (ORA-01086, in place of the insert's own error). Neither fn is retried or calls a retried
    fn: before `verify` ran every fn that controls the transaction, it said nothing."""
    result = compile_source(SETTLE, "settle.pell")
    assert result.ok
    assert findings(verify([result])) == []  # as compiled, each block stands alone
    settle, log_step = tree(result, "settle"), tree(result, "log_step")
    block = next(s for s in settle.body if isinstance(s, plsql.Block))
    shared = next(s for s in settle.body if isinstance(s, plsql.Savepoint)).name
    for stmt in plsql.walk(log_step.body):
        if isinstance(stmt, plsql.Savepoint | plsql.RollbackTo):
            stmt.name = shared
    call = plsql.Exec("log_step(p_id)", (("log_step",),), origin=block.body[0].origin)
    block.body.insert(1, call)
    report = verify([result])
    assert ("verify-no-savepoint", "10:5") in findings(report), findings(report)
    finding = next(f for f in report.findings if f.code == "verify-no-savepoint")
    assert f"ROLLBACK TO {shared} raises ORA-01086" in finding.message
    assert report.has_errors
    assert "ledger::settle" in "\n".join(report.summary_lines())


def test_verify_runs_every_fn_that_commits_and_its_callers() -> None:
    """A COMMIT of its own, a call to an Oracle procedure that commits, and their callers;
    not a fn that only does DML."""
    source = """\
module jobs;

import dbms_stats;

fn archive(id: number) {
    sql! { insert into archive (id) values (:id) };
    sql! { commit };
}

fn nightly(id: number) {
    archive(id);
}

fn analyse() {
    dbms_stats::gather_table_stats("APP", "JOBS");
}

fn weekly() {
    analyse();
}

fn plain(id: number) {
    sql! { insert into log (id) values (:id) };
}
"""
    result = compile_source(source, "jobs.pell")
    assert result.ok, [d.message for d in result.diagnostics]
    verified = [verdict.fn for verdict in verify([result]).verdicts]
    assert verified == ["archive", "nightly", "analyse", "weekly"]


# -- ROLLBACK TO erases the savepoints set after the one it names


def test_the_model_erases_the_savepoints_after_the_one_rolled_back_to() -> None:
    """Planted defect: `Session.rollback_to` without `del tx.savepoints[index + 1 :]`."""
    session = Session()
    session.savepoint("outer")
    session.savepoint("inner")
    session.rollback_to("outer")
    with pytest.raises(ModelError, match="ORA-01086"):
        session.rollback_to("inner")
    assert session.rollback_to("outer") == []  # the one rolled back to stays


def test_the_model_moves_a_reused_savepoint_name() -> None:
    """Planted defect: `Session.savepoint` keeping the earlier mark of the same name."""
    from pell.verify.model import Effect

    session = Session()
    session.savepoint("x")
    first = Effect("first", ((), 0), (), True, 0)
    session.record(first)
    session.savepoint("x")  # moves x after `first`
    session.record(Effect("second", ((), 0), (), True, 1))
    assert [e.what for e in session.rollback_to("x")] == ["second"]
    assert session.current.work == [first]


REFILL = """\
module shop.stock;

@retry(n = 3, on = [busy])
fn restock(id: number) {
    sql! { update stock set qty = qty + 1 where id = :id };
    sql! { rollback to before_restock };
    sql! { insert into restocks (id) values (:id) };
}

fn refill(id: number) {
    sql! { savepoint before_restock };
    restock(id);
}
"""


def test_a_rollback_past_a_retried_fns_savepoint_is_found() -> None:
    """restock rolls back to its caller's savepoint, set before restock's own: that erases
    restock's savepoint, so when its insert then fails, the retry's ROLLBACK TO raises
    ORA-01086. The model must erase the later savepoint to see it (planted defect: as in
    the test above, the model keeping it finds nothing on refill)."""
    result = compile_source(REFILL, "refill.pell")
    assert result.ok, [d.message for d in result.diagnostics]
    report = verify([result])
    savepoint = naming.savepoint_name(("shop", "stock"), "restock", 128)
    refill = next(v for v in report.verdicts if v.fn == "refill")
    erased = [v for v in refill.violations if v.code == "verify-no-savepoint"]
    assert erased, "\n".join(f.render() for f in report.findings)
    assert f"ROLLBACK TO {savepoint} raises ORA-01086" in erased[0].message
    assert ("verify-no-savepoint", "4:4") in findings(report)
