"""`bytes` (RAW on Oracle, bytea on PostgreSQL): its PL/SQL types per place, its text (hex,
the same on both targets), `.len()`, and the utl_raw stub typed with it; on the PostgreSQL
server, a value bound in, fetched back, compared and written as text."""

from __future__ import annotations

import pytest

from pell import compile_source
from pell.postgres import runtime_sql
from pell.runtime import number_errors

SOURCE = """module vault.pg;

pub record Blob { id: int, digest: bytes }

pub fn describe(id: int) -> text {
    let d: bytes = sql! { select digest from blob_store where id = :id }.one();
    let b: Blob = sql! { select id, digest from blob_store where id = :id }.one();
    return "{d}/{d.len()}/{b.digest == d}/{b.digest.to_text()}";
}

pub fn put(id: int, d: bytes) {
    sql! { insert into blob_store (id, digest) values (:id, :d) };
}

pub error TooLong { digest: bytes }

pub fn reject(d: bytes) -> Result<(), TooLong> {
    if d.len() > 2 {
        return Err(TooLong { digest: d });
    }
    return Ok(());
}
"""


def _sql(source: str, target: str = "23ai") -> str:
    result = compile_source(source, "m.pell", target)
    assert result.sql is not None, [d.message for d in result.diagnostics]
    return result.sql


def test_bytes_is_raw_sized_per_place_and_hex_as_text() -> None:
    sql = _sql(SOURCE)
    assert "digest RAW(2000)" in sql  # a record field: a RAW column's size
    assert "l_d RAW(32767);" in sql  # a local: PL/SQL's maximum
    assert "p_d IN RAW)" in sql  # a parameter: no size
    assert "RAWTOHEX(l_d)" in sql and "UTL_RAW.LENGTH(l_d)" in sql
    # an error's payload writes the bytes as interpolation does, not by an implicit conversion
    assert "json_text(RAWTOHEX(p_d))" in sql


def test_utl_raw_stub_is_typed_with_bytes() -> None:
    source = """module m;

import utl_raw;

pub fn f() -> text {
    let r: bytes = utl_raw::cast_to_raw("hi");
    return utl_raw::cast_to_varchar2(utl_raw::substr(r, 1));
}

pub fn g() -> text {
    return utl_raw::cast_to_raw("hi");
}
"""
    result = compile_source(source, "m.pell")
    errors = [(d.code, d.message) for d in result.diagnostics if d.is_error]
    assert errors == [("return-type", "fn `g` returns `text`, not `bytes`")], errors


psycopg = pytest.importorskip("psycopg")


def test_bytes_round_trip_on_the_postgres_server(postgres_database: str) -> None:
    with psycopg.connect(postgres_database, autocommit=True) as connection:
        connection.execute("create table blob_store (id integer primary key, digest bytea)")
        result = compile_source(SOURCE, "m.pell", "postgres")
        assert result.sql is not None and result.module is not None
        numbered, _ = number_errors([result.module])
        connection.execute(runtime_sql([(e.exception, e.code) for e in numbered], "-- runtime"))
        connection.execute(result.sql)
        connection.execute("select vault_pg.put(1, %s)", (b"\xca\xfe\x01",))
        row = connection.execute("select vault_pg.describe(1)").fetchone()
        with pytest.raises(psycopg.Error) as raised:
            connection.execute("select vault_pg.reject(%s)", (b"\xca\xfe\x01",))
    assert row == ("CAFE01/3/true/CAFE01",)
    assert '"digest" : "CAFE01"' in str(raised.value), str(raised.value)
