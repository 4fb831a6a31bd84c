"""Lists from any caller, cursors read in batches, and no DELETE of a list that is empty
already (issue 25, items 4, 5 and the first of 6), on Oracle by the generated text. A PL/SQL
caller may pass an associative array that is sparse or starts at 0: a loop over a list pellc
did not fill itself walks FIRST/NEXT, `forall` takes INDICES OF, `append` goes after LAST.
PostgreSQL runs the same forms for real in test_postgres.py."""

from __future__ import annotations

import re

import pytest
from conftest import assert_oracle_accepts
from verify_checks import tree

from pell import compile_source, plsql
from pell.verify import interpreter


def compiled_sql(source: str) -> str:
    result = compile_source(source, "module.pell", "23ai")
    errors = [d.message for d in result.diagnostics if d.is_error]
    assert result.sql is not None, errors
    assert_oracle_accepts(result.sql)
    return result.sql


def body_of(sql: str, name: str) -> str:
    """The text of subprogram `name` in the package body, from its header to its END."""
    found = re.search(
        rf"^  (?:FUNCTION|PROCEDURE) {name}\b[^;]* IS\n.*?^  END {name};\n", sql, re.M | re.S
    )
    assert found is not None, sql
    return found.group(0)


LOOPS = """module shop.baskets;

pub fn total(xs: list<number>) -> number {
    var sum: number = 0;
    for x in xs {
        if x == None {
            continue;
        }
        sum = sum + x;
    }
    return sum;
}
"""


def test_a_loop_over_a_parameter_walks_the_callers_indexes() -> None:
    """FIRST, then NEXT up to the LAST it had when the loop began: a sparse or 0-based list
    loses no element and raises no NO_DATA_FOUND; `continue` takes the next index first (or it
    would loop on the same one forever)."""
    assert body_of(compiled_sql(LOOPS), "total") == (
        "  FUNCTION total(p_xs IN t_number_list) RETURN NUMBER IS\n"
        "    l_sum NUMBER;\n"
        "    l_x NUMBER;\n"
        "    l_pell_i PLS_INTEGER;\n"
        "    l_pell_last PLS_INTEGER;\n"
        "  BEGIN\n"
        "    l_sum := 0;\n"
        "    l_pell_i := p_xs.FIRST;\n"
        "    l_pell_last := p_xs.LAST;\n"
        "    WHILE l_pell_i <= l_pell_last LOOP\n"
        "      l_x := p_xs(l_pell_i);\n"
        "      IF l_x IS NULL THEN\n"
        "        l_pell_i := p_xs.NEXT(l_pell_i);\n"
        "        CONTINUE;\n"
        "      END IF;\n"
        "      l_sum := l_sum + l_x;\n"
        "      l_pell_i := p_xs.NEXT(l_pell_i);\n"
        "    END LOOP;\n"
        "    RETURN l_sum;\n"
        "  END total;\n"
    )


SOURCES = """module shop.sources;

pub record Basket { owner: text, items: list<number> }

fn make(n: number) -> list<number> {
    return [n];
}

fn grow(inout xs: list<number>) {
    xs.append(1);
}

fn peek(xs: list<number>) -> number {
    return xs.len();
}

pub fn from_param(xs: list<number>) { for x in xs { p("{x}"); } }
pub fn from_field(b: Basket) { for x in b.items { p("{x}"); } }
pub fn from_call() { for x in make(1) { p("{x}"); } }
pub fn from_call_local() { let xs = make(1); for x in xs { p("{x}"); } }
pub fn copy_of_param(ys: list<number>) { let xs = ys; for x in xs { p("{x}"); } }
pub fn reassigned(ys: list<number>) { var xs = [1]; xs = ys; for x in xs { p("{x}"); } }
pub fn passed_inout() { var xs = [1, 2]; grow(xs); for x in xs { p("{x}"); } }
pub fn own_literal() { let xs = [1, 2]; for x in xs { p("{x}"); } }
pub fn own_appends(n: number) { var xs: list<number> = []; xs.append(n); for x in xs { p("{x}"); } }
pub fn own_query() { let xs: list<number> = sql! { select id from t }.collect(); for x in xs { p("{x}"); } }
pub fn own_split(s: text) { let xs = s.split(","); for x in xs { p("{x}"); } }
pub fn own_copy() { let ys = [1, 2]; let xs = ys; for x in xs { p("{x}"); } }
pub fn passed_in() { let xs = [1, 2]; let n = peek(xs); for x in xs { p("{x}"); } }
pub fn own_literal_inline() { for x in [1, 2] { p("{x}"); } }
"""

# fn -> does pellc fill the list itself (1 .. COUNT), or may a caller have (FIRST/NEXT)?
OWN = {
    "from_param": False,  # the caller's
    "from_field": False,  # a record's field: whoever filled the record
    "from_call": False,  # another fn may return the list it was passed
    "from_call_local": False,
    "copy_of_param": False,  # a copy keeps the caller's indexes
    "reassigned": False,  # one of its values is the caller's
    "passed_inout": False,  # the callee may leave it sparse
    "own_literal": True,
    "own_appends": True,
    "own_query": True,  # BULK COLLECT fills from index 1, consecutively
    "own_split": True,  # pell_split appends from an empty list
    "own_copy": True,
    "passed_in": True,  # an `in` argument comes back unchanged
    "own_literal_inline": True,
}


@pytest.mark.parametrize(("fn", "own"), OWN.items(), ids=list(OWN))
def test_which_lists_pellc_filled_itself(fn: str, own: bool) -> None:
    body = body_of(compiled_sql(SOURCES), fn)
    walks = "WHILE l_pell_i <= l_pell_last LOOP" in body
    counts = re.search(r"FOR l_pell_i IN 1 \.\. \w+\.COUNT LOOP", body) is not None
    assert (counts, walks) == (own, not own), body


FORALL = """module shop.bulk;

pub record Item { id: number, qty: number }

pub fn save(items: list<Item>) {
    forall it in items {
        sql! { insert into basket_items (id, qty) values (:it.id, :it.qty) };
    }
    let stale: list<number> = sql! { select id from basket_items where qty = 0 }.collect();
    forall id in stale {
        sql! { delete from basket_items where id = :id };
    }
}
"""


def test_forall_over_a_callers_list_binds_its_indices() -> None:
    """FORALL i IN 1 .. COUNT raises ORA-22160 at the first index a sparse list lacks, and
    misses the elements of a 0-based one; INDICES OF binds the indexes the list has."""
    assert body_of(compiled_sql(FORALL), "save") == (
        "  PROCEDURE save(p_items IN t_item_list) IS\n"
        "    l_stale t_number_list;\n"
        "  BEGIN\n"
        "    FORALL l_pell_bulk IN INDICES OF p_items\n"
        "      insert into basket_items (id, qty) values (p_items(l_pell_bulk).id, "
        "p_items(l_pell_bulk).qty);\n"
        "    select id BULK COLLECT INTO l_stale from basket_items where qty = 0;\n"
        "    FORALL l_pell_bulk IN 1 .. l_stale.COUNT\n"
        "      delete from basket_items where id = l_stale(l_pell_bulk);\n"
        "  END save;\n"
    )


INDICES = """module shop.weights;

pub fn weighted(xs: list<number>) -> number {
    var sum: number = 0;
    for i in xs.indices() {
        sum = sum + i * xs.at(i);
    }
    let i = "done";
    let ys = [1, 2];
    for j in ys.indices() {
        sum = sum + ys.at(j);
    }
    return sum;
}
"""


def test_the_indices_of_a_callers_list_are_its_own() -> None:
    """`xs.at(i)` reads the index the caller gave: `indices()` walks those indexes (FIRST/
    NEXT into the loop variable, declared for the fn: a later `i` is another variable); over
    the fn's own list it stays 1 .. COUNT."""
    assert body_of(compiled_sql(INDICES), "weighted") == (
        "  FUNCTION weighted(p_xs IN t_number_list) RETURN NUMBER IS\n"
        "    l_sum NUMBER;\n"
        "    l_i_2 VARCHAR2(32767);\n"
        "    l_ys t_int_list;\n"
        "    l_i PLS_INTEGER;\n"
        "    l_pell_last PLS_INTEGER;\n"
        "  BEGIN\n"
        "    l_sum := 0;\n"
        "    l_i := p_xs.FIRST;\n"
        "    l_pell_last := p_xs.LAST;\n"
        "    WHILE l_i <= l_pell_last LOOP\n"
        "      l_sum := l_sum + l_i * p_xs(l_i);\n"
        "      l_i := p_xs.NEXT(l_i);\n"
        "    END LOOP;\n"
        "    l_i_2 := 'done';\n"
        "    l_ys(1) := 1;\n"
        "    l_ys(2) := 2;\n"
        "    FOR l_j IN 1 .. l_ys.COUNT LOOP\n"
        "      l_sum := l_sum + l_ys(l_j);\n"
        "    END LOOP;\n"
        "    RETURN l_sum;\n"
        "  END weighted;\n"
    )


def test_append_to_a_callers_list_goes_after_its_last_index() -> None:
    """COUNT + 1 is an index a sparse list may hold (indexes 2 and 3: COUNT + 1 = 3 would
    overwrite the last element); after LAST, NVL'd for an empty list, is free."""
    sql = compiled_sql(
        "module shop.adds;\n"
        "pub record Item { id: number, qty: number }\n"
        "pub fn add(inout xs: list<number>, inout items: list<Item>, x: number) {\n"
        "    xs.append(x);\n"
        "    items.append(Item { id: x, qty: 1 });\n"
        "    var mine: list<number> = [];\n"
        "    mine.append(x);\n"
        "}\n"
    )
    body = body_of(sql, "fn_add")
    assert "    p_xs(NVL(p_xs.LAST, 0) + 1) := p_x;\n" in body
    assert "    p_items(NVL(p_items.LAST, 0) + 1) := l_pell_item;\n" in body
    assert "    l_mine(l_mine.COUNT + 1) := p_x;\n" in body


def test_each_loop_over_a_value_reads_a_list_of_its_own() -> None:
    """A list a loop computes (`for x in [1, 2]`) is read on every pass: an inner loop's list
    of the same type must not be stored in the same variable, or the outer loop reads the
    inner one's elements from its second pass on."""
    sql = compiled_sql(
        "module shop.grid;\n"
        "pub fn grid() -> number {\n"
        "    var n: number = 0;\n"
        "    for s in [1, 2, 3] {\n"
        "        for w in [10, 20] {\n"
        "            n = n + s * w;\n"
        "        }\n"
        "    }\n"
        "    return n;\n"
        "}\n"
    )
    body = body_of(sql, "grid")
    assert "      l_s := l_pell_int_list(l_pell_i);\n" in body
    assert "      l_pell_int_list_2(1) := 10;\n" in body
    assert "        l_w := l_pell_int_list_2(l_pell_i_2);\n" in body


REASSIGNED = """module shop.redo;

fn refill(out ys: list<int>) {
    ys = [7];
}

pub fn reassign(xs: list<int>) -> int {
    var ys = xs;
    var s: int = 0;
    for y in ys {
        s = s + y;
        ys = [1000, 2000, 3000, 4000];
    }
    return s;
}

pub fn refilled() -> int {
    var ys = [1, 2, 3];
    var s: int = 0;
    for y in ys {
        s = s + y;
        refill(ys);
    }
    for i in ys.indices() {
        s = s + i;
    }
    return s;
}

pub fn dense() -> int {
    var ys = [1, 2, 3];
    var s: int = 0;
    for y in ys {
        s = s + y;
        ys = [1000, 2000];
    }
    return s;
}

pub fn appended(xs: list<int>) -> int {
    var ys = xs;
    var s: int = 0;
    for y in ys {
        s = s + y;
        ys.append(y);
    }
    return s;
}
"""


def test_a_loop_whose_body_gives_its_list_a_new_value_walks_the_list_it_began_with() -> None:
    """Each pass reads its element from the loop's list: a body that assigns the list (or
    passes it as `out`) would have the loop read the new list's elements (1 + 2000 + 3000
    for `reassign([1, 2, 3])`), where PostgreSQL's FOREACH walks the array it began with (6).
    The loop walks a copy made before it; a body that only appends needs none."""
    sql = compiled_sql(REASSIGNED)
    reassign = body_of(sql, "reassign")
    assert (
        "    l_pell_int_list := l_ys;\n"
        "    l_pell_i := l_pell_int_list.FIRST;\n"
        "    l_pell_last := l_pell_int_list.LAST;\n"
        "    WHILE l_pell_i <= l_pell_last LOOP\n"
        "      l_y := l_pell_int_list(l_pell_i);\n"
    ) in reassign
    refilled = body_of(sql, "refilled")
    assert (
        "    l_pell_int_list := l_ys;\n"
        "    l_pell_i := l_pell_int_list.FIRST;\n"
    ) in refilled
    assert "      refill(l_ys);\n      l_pell_i := l_pell_int_list.NEXT(l_pell_i);\n" in refilled
    assert (
        "    l_pell_int_list := l_ys;\n"
        "    FOR l_pell_i IN 1 .. l_pell_int_list.COUNT LOOP\n"
        "      l_y := l_pell_int_list(l_pell_i);\n"
    ) in body_of(sql, "dense")
    assert "    l_i := l_ys.FIRST;\n" in refilled  # nothing in that loop writes it
    appended = body_of(sql, "appended")
    assert "l_pell_int_list" not in appended
    assert "      l_y := l_ys(l_pell_i);\n" in appended


PIPELINED = """module market.feeds;

pub record Stock { sym: text, price: number }

@pipelined
pub fn priced(rows: cursor<Stock>) -> stream<Stock> {
    for s in rows {
        if s.price == None {
            continue;
        }
        if s.sym == "STOP" {
            break;
        }
        yield s;
    }
}
"""


def test_a_cursor_is_fetched_in_batches_until_a_fetch_brings_none() -> None:
    """FETCH ... BULK COLLECT ... LIMIT 100, each row of the batch piped; the loop ends on an
    empty batch (EXIT WHEN %NOTFOUND right after the FETCH would drop the last, partial one);
    `break` leaves both loops by the FETCH loop's label, `continue` goes to the next row, and
    the cursor is closed after; on an exception too: NO_DATA_NEEDED, which PIPE ROW raises
    when the query reading the fn wants no more rows, ends the fn before that CLOSE (PL/SQL
    Language Reference, Example 12-35, "Pipelined Table Function Handles NO_DATA_NEEDED",
    cleans up and re-raises it, "equivalent to RETURN")."""
    assert body_of(compiled_sql(PIPELINED), "priced") == (
        "  FUNCTION priced(p_rows IN SYS_REFCURSOR) RETURN market.feeds_stock_rows PIPELINED IS\n"
        "    l_s t_stock;\n"
        "    l_pell_rows t_stock_list;\n"
        "  BEGIN\n"
        "    <<pell_fetch>>\n"
        "    LOOP\n"
        "      FETCH p_rows BULK COLLECT INTO l_pell_rows LIMIT 100;\n"
        "      EXIT WHEN l_pell_rows.COUNT = 0;\n"
        "      FOR l_pell_i IN 1 .. l_pell_rows.COUNT LOOP\n"
        "        l_s := l_pell_rows(l_pell_i);\n"
        "        IF l_s.price IS NULL THEN\n"
        "          CONTINUE;\n"
        "        END IF;\n"
        "        IF l_s.sym = 'STOP' THEN\n"
        "          EXIT pell_fetch;\n"
        "        END IF;\n"
        "        PIPE ROW(market.feeds_stock_row(l_s.sym, l_s.price));\n"
        "      END LOOP;\n"
        "    END LOOP;\n"
        "    CLOSE p_rows;\n"
        "    RETURN;\n"
        "  EXCEPTION\n"
        "    WHEN OTHERS THEN\n"
        "      IF p_rows%ISOPEN THEN CLOSE p_rows; END IF;\n"
        "      RAISE;\n"
        "  END priced;\n"
    )
    # the batch is a list of the cursor's row type, declared in the package body
    assert "  TYPE t_stock_list IS TABLE OF t_stock INDEX BY PLS_INTEGER;\n" in compiled_sql(
        PIPELINED
    )


def test_a_pipelined_fn_with_finally_closes_its_cursor_then_cleans_up_on_an_exception() -> None:
    sql = compiled_sql(
        PIPELINED.replace("        yield s;\n    }\n}\n", "        yield s;\n    }\n} finally {\n"
                          "    sql! { update feeds set done = 1 };\n}\n")
    )  # fmt: skip
    assert (
        "  EXCEPTION\n"
        "    WHEN OTHERS THEN\n"
        "      IF p_rows%ISOPEN THEN CLOSE p_rows; END IF;\n"
        "      pell_finally;\n"
        "      RAISE;\n"
        "  END priced;\n"
    ) in body_of(sql, "priced")


def test_the_verifier_leaves_a_labelled_loop_at_its_label() -> None:
    """`EXIT pell_fetch;` from the FOR over the batch ends the FETCH loop, and the statements
    after it run (the CLOSE, then RETURN), as in PL/SQL."""
    result = compile_source(PIPELINED, "feeds.pell", "23ai")
    subprogram = tree(result, "priced")
    module = interpreter.ProgramModule(("market", "feeds"), (), {"priced": subprogram}, (), frozenset())
    # EXIT WHEN COUNT = 0: no; the FOR runs; price IS NULL: no; sym = 'STOP': yes
    run = interpreter.Run(interpreter.Program([module]), {}, [1, 0, 1, 0])
    frame = interpreter.Frame(module, subprogram, 0)
    with pytest.raises(interpreter.ReturnSignal):
        run.statements(subprogram.body, frame)
    fetch_loop = subprogram.body[0]
    assert isinstance(fetch_loop, plsql.Loop) and fetch_loop.label == "pell_fetch"


FILLS = """module shop.fills;

pub fn fills(k: number) -> number {
    let first = [k, k + 1];
    var again: list<number> = [k];
    again = [k, k, k];
    var none: list<number>;
    var n: number = first.len() + again.len() + none.len();
    while n < 10 {
        let each = [n];
        n = n + each.len();
    }
    return n;
}

@retry(n = 3, on = [busy])
pub fn retried(k: number) -> number {
    let first = [k];
    sql! { update t set k = :k };
    return first.len();
}
"""


def test_a_fresh_list_is_filled_without_a_delete() -> None:
    """A local list is empty where the subprogram begins: its first fill, run once per call,
    needs no DELETE. A `let` in a loop runs again on each pass, an assignment may follow
    another, and a retried fn's attempts run the body again: those are emptied first."""
    fills = body_of(compiled_sql(FILLS), "fills")
    assert fills.count(".DELETE;") == 2, fills
    assert "    l_first(1) := p_k;\n    l_first(2) := p_k + 1;\n    l_again(1) := p_k;\n" in fills
    assert "    l_again.DELETE;\n    l_again(1) := p_k;\n" in fills
    assert "      l_each.DELETE;\n      l_each(1) := l_n;\n" in fills
    retried = body_of(compiled_sql(FILLS), "retried")
    assert "l_first.DELETE;\n" in retried
