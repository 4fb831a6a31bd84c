"""Live deploy tests: they need an Oracle database and run only when PELL_TEST_DSN is set
(user/password@host:port/service, e.g. the Oracle Free container); otherwise they are skipped
with that reason. Nothing here fakes a database result."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DSN = os.environ.get("PELL_TEST_DSN")
pytestmark = pytest.mark.skipif(
    not DSN,
    reason="live Oracle tests: set PELL_TEST_DSN=user/password@host:port/service to run them",
)
EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture
def cursor():  # type: ignore[no-untyped-def]
    oracledb = pytest.importorskip("oracledb")
    from pell.deploy import credentials

    assert DSN is not None
    with oracledb.connect(**credentials(DSN)) as connection, connection.cursor() as cursor:
        yield cursor


def test_deploy_orders_and_call_the_retried_function(cursor) -> None:  # type: ignore[no-untyped-def]
    from pell.cli import main

    for statement in (
        "begin execute immediate 'drop table orders'; exception when others then null; end;",
        "create table orders (id number primary key, status varchar2(20))",
        "insert into orders values (1, 'pending')",
    ):
        cursor.execute(statement)
    cursor.connection.commit()
    assert main(["deploy", "--dsn", str(DSN), str(EXAMPLES / "orders.pell")]) == 0
    status = cursor.var(str)
    cursor.execute(
        "declare o orders.t_order; begin o := orders.promote_to_paid(1); :status := o.status; end;",
        status=status,
    )
    assert status.getvalue() == "paid"
    cursor.execute("select status from orders where id = 1")
    assert cursor.fetchall() == [("paid",)]


def test_compile_errors_are_reported_at_pell_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pell.cli import main

    module = tmp_path / "missing_table.pell"
    module.write_text(
        "module pellc_live_missing;\n"
        "pub fn count_rows() -> number {\n"
        "    let n: number = sql! { select count(*) from pellc_no_such_table }.one();\n"
        "    return n;\n"
        "}\n",
        "utf-8",
    )
    assert main(["deploy", "--dsn", str(DSN), str(module)]) == 1
    err = capsys.readouterr().err
    assert f"{module}:3:5: error:" in err
    assert "ORA-00942" in err
