"""Small conventions of public Pell (issue 26, point 10): `println`, any single value printed as
interpolation writes it, `.length()` on text, `.for_update().nowait()`; on both targets."""

from __future__ import annotations

from conftest import assert_oracle_accepts

from pell import compile_source

SOURCE = """module app.conventions;

pub record Stock { id: number, qty: number }

pub fn show(total: number, at: date, done: bool, name: text) {
    println(total);
    print(at);
    p(done);
    println(name.length());
}

pub fn take(stock_id: number) -> number {
    let row: Stock = sql! { select id, qty from stock where id = :stock_id }.for_update().nowait().one();
    return row.qty;
}
"""


def compiled(target: str) -> str:
    result = compile_source(SOURCE, "m.pell", target)
    assert result.sql is not None, [d.message for d in result.diagnostics]
    return result.sql


def test_oracle_prints_each_value_in_its_text_form_and_locks_without_waiting() -> None:
    sql = compiled("23ai")
    assert_oracle_accepts(sql)
    assert "dbms_output.put_line(pell_number_text(p_total));" in sql
    assert "dbms_output.put_line(TO_CHAR(p_at, 'YYYY-MM-DD HH24:MI:SS'));" in sql
    assert (
        "dbms_output.put_line(CASE WHEN p_done THEN 'true' WHEN NOT p_done THEN 'false' END);"
        in sql
    )
    assert "dbms_output.put_line(TO_CHAR(LENGTH(p_name)));" in sql
    assert "where id = p_stock_id FOR UPDATE NOWAIT;" in sql


def test_postgres_prints_each_value_in_its_text_form_and_locks_without_waiting() -> None:
    sql = compiled("postgres")
    assert "RAISE NOTICE '%', concat(trim_scale(p_total)::text);" in sql
    assert "RAISE NOTICE '%', concat(to_char(p_at, 'YYYY-MM-DD HH24:MI:SS'));" in sql
    assert "RAISE NOTICE '%', concat(p_done::text);" in sql
    assert "RAISE NOTICE '%', concat(length(p_name)::text);" in sql
    assert "where id = p_stock_id FOR UPDATE NOWAIT;" in sql


def test_nowait_needs_for_update_before_it() -> None:
    source = SOURCE.replace(".for_update().nowait()", ".nowait().for_update()")
    for target in ("23ai", "postgres"):
        result = compile_source(source, "m.pell", target)
        assert result.sql is None
        assert [(d.code, d.span.start) for d in result.diagnostics] == [
            ("sql-syntax", source.index("nowait()"))
        ]


BULK = """module app.bulk_counts;

pub fn purge(ids: list<number>) -> int {
    let mine: list<number> = [1, 2];
    forall id in mine {
        sql! { update t set n = n + 1 where id = :id };
    }
    println("first {bulk.rowcount(1)}");
    forall id in ids {
        sql! { delete from t where id = :id };
    }
    sql! { insert into audit (what) values ('purge') };
    return bulk.total();
}
"""


def test_bulk_counts_are_copied_right_after_each_forall_and_read_from_the_copy() -> None:
    result = compile_source(BULK, "m.pell", "23ai")
    assert result.sql is not None, [d.message for d in result.diagnostics]
    assert_oracle_accepts(result.sql)
    body = [line.strip() for line in result.sql.split("BEGIN", 1)[1].splitlines()]
    dense = body.index("FORALL l_pell_bulk IN 1 .. l_mine.COUNT")
    assert body[dense + 2 : dense + 7] == [
        "l_pell_bulk_total := SQL%ROWCOUNT;",
        "l_pell_bulk_rows.DELETE;",
        "FOR l_pell_i IN 1 .. l_mine.COUNT LOOP",
        "l_pell_bulk_rows(l_pell_i) := SQL%BULK_ROWCOUNT(l_pell_i);",
        "END LOOP;",
    ]
    # a caller's list: the FORALL's subscripts are the list's own, FIRST to NEXT
    sparse = body.index("FORALL l_pell_bulk IN INDICES OF p_ids")
    assert body[sparse + 2 : sparse + 9] == [
        "l_pell_bulk_total := SQL%ROWCOUNT;",
        "l_pell_bulk_rows.DELETE;",
        "l_pell_i := p_ids.FIRST;",
        "WHILE l_pell_i IS NOT NULL LOOP",
        "l_pell_bulk_rows(l_pell_i) := SQL%BULK_ROWCOUNT(l_pell_i);",
        "l_pell_i := p_ids.NEXT(l_pell_i);",
        "END LOOP;",
    ]
    assert "dbms_output.put_line('first ' || TO_CHAR(l_pell_bulk_rows(1)));" in body
    # the insert between the forall and `bulk.total()` does not change it
    assert body[body.index("RETURN l_pell_bulk_total;") - 1].startswith("insert into audit")
    assert "TYPE t_pell_bulk_counts IS TABLE OF PLS_INTEGER INDEX BY PLS_INTEGER;" in result.sql


def test_bulk_before_any_forall_is_a_located_error_and_postgres_has_none() -> None:
    early = BULK.replace("    let mine", "    let n = bulk.total();\n    let mine", 1)
    result = compile_source(early, "m.pell", "23ai")
    assert [(d.code, d.span.start) for d in result.diagnostics] == [
        ("unknown-name", early.index("bulk.total()"))
    ]
    postgres = compile_source(BULK, "m.pell", "postgres")
    assert [(d.code, d.span.start) for d in postgres.diagnostics] == [
        ("unsupported", BULK.index("bulk.rowcount(1)"))
    ]


def test_a_variable_named_bulk_is_its_own() -> None:
    source = "module m;\n\npub fn f(bulk: text) -> int {\n    return bulk.length();\n}\n"
    result = compile_source(source, "m.pell", "23ai")
    assert result.sql is not None
    assert "RETURN LENGTH(p_bulk);" in result.sql
