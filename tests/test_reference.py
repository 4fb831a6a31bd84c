"""The reference case of retry.md section 1, statement for statement.

The expected function below is typed from the spec (whitespace normalised), with the
liberties the spec allows: the record literal goes through a temporary record, the SQL keeps
the spelling of the source, and `<sp>` is the fn's own savepoint name (section 1a).
"""

from __future__ import annotations

import re

from conftest import CASES

from pell import compile_source
from pell.naming import savepoint_name

EXPECTED = """
FUNCTION promote_to_paid(p_order_id IN NUMBER) RETURN t_order IS
  l_o t_order;
  l_pell_order t_order;
  l_pell_attempt PLS_INTEGER := 0;
BEGIN
  LOOP
    SAVEPOINT <sp>;
    BEGIN
      select id, status INTO l_o.id, l_o.status from orders where id = p_order_id for update;
      IF l_o.status <> 'pending' THEN
        RETURN l_o;
      END IF;
      update orders set status = 'paid' where id = p_order_id;
      l_pell_order.id := p_order_id;
      l_pell_order.status := 'paid';
      RETURN l_pell_order;
    EXCEPTION
      WHEN OTHERS THEN
        IF pell_is_panic(SQLCODE) THEN ROLLBACK TO <sp>; RAISE; END IF;
        l_pell_attempt := l_pell_attempt + 1;
        ROLLBACK TO <sp>;
        IF l_pell_attempt >= 5 THEN RAISE; END IF;
        DBMS_SESSION.SLEEP(
          LEAST(0.1 * POWER(2, l_pell_attempt - 1) + DBMS_RANDOM.VALUE(0, 0.05),
                2.0)
        );
    END;
  END LOOP;
END promote_to_paid;
"""


def _normalise(sql: str) -> str:
    sql = re.sub(r"\s+", " ", sql).strip()
    return re.sub(r"\( ", "(", re.sub(r" \)", ")", sql))


def _compiled() -> str:
    text = (CASES / "retry_reference.pell").read_text(encoding="utf-8")
    result = compile_source(text, "retry_reference.pell")
    assert result.sql is not None
    return result.sql


def test_reference_function_matches_the_spec_statement_for_statement() -> None:
    sql = _compiled()
    start = sql.index("FUNCTION promote_to_paid(p_order_id IN NUMBER) RETURN t_order IS")
    end = sql.index("END promote_to_paid;") + len("END promote_to_paid;")
    savepoint = savepoint_name(("orders",), "promote_to_paid", 128)
    assert _normalise(sql[start:end]) == _normalise(EXPECTED.replace("<sp>", savepoint))


def test_savepoint_names_are_the_fns_own() -> None:
    """Section 1a: derived from schema, package and fn; apart where the readable part is not;
    within the target's identifier limit."""
    name = savepoint_name(("orders",), "promote_to_paid", 128)
    assert re.fullmatch(r"sp_orders_promote_to_paid_[0-9a-f]{8}", name)
    assert name != "pell_attempt"
    # the same readable text from different modules and fns, and names differing in case
    pairs = [
        ((("a", "b_c"), "d"), (("a", "b"), "c_d")),
        ((("x", "orders"), "f"), (("y", "orders"), "f")),
        ((("orders",), "F"), (("orders",), "f")),
    ]
    for (path_1, fn_1), (path_2, fn_2) in pairs:
        assert savepoint_name(path_1, fn_1, 128) != savepoint_name(path_2, fn_2, 128)
    long = savepoint_name(("warehouse", "inventory_reservations"), "reserve_everything", 30)
    assert len(long) <= 30 and re.fullmatch(r"sp_[a-z_]+_[0-9a-f]{8}", long), long
    assert savepoint_name(("orders",), "promote_to_paid", 128) == name  # stable


def test_reference_sleep_is_exactly_the_spec_expression() -> None:
    expected = (
        "DBMS_SESSION.SLEEP(LEAST(0.1 * POWER(2, l_pell_attempt - 1)"
        " + DBMS_RANDOM.VALUE(0, 0.05), 2.0));"
    )
    assert expected in _compiled()


def test_panic_function_is_emitted_once_and_before_its_use() -> None:
    sql = _compiled()
    assert sql.count("FUNCTION pell_is_panic(p_code IN NUMBER) RETURN BOOLEAN IS") == 1
    body = sql[sql.index("CREATE OR REPLACE PACKAGE BODY") :]
    assert body.index("FUNCTION pell_is_panic") < body.index("FUNCTION promote_to_paid(")
    spec = sql[: sql.index("CREATE OR REPLACE PACKAGE BODY")]
    assert "pell_is_panic" not in spec, "pell_is_panic is private to the body"


def test_every_never_retry_code_is_in_the_panic_function() -> None:
    sql = _compiled()
    panic = sql[sql.index("FUNCTION pell_is_panic") : sql.index("END pell_is_panic;")]
    assert "p_code BETWEEN -20399 AND -20300" in panic
    listed = {int(code) for code in re.findall(r"^\s+(-?\d+),?\s+--", panic, re.MULTILINE)}
    # The spec's list, typed from retry.md section 4.
    spec_codes = {
        -1476, -6502, -6592, -6500, -6501, -6504, -6511, -1001,
        -6530, -6531, -6532, -6533, -1410, -1483,
        -4068, -4061, -4065, -6508, -600, -7445,
        -1, -1400, -1407, -2290, -2291, -2292, -2091, -12899, -1438, -1722,
        -1830, -1840, -1843, -1858, -1861, -1422, -1427, 100,
        -942, -904, -1031, -4091, -4092, -14551, -14552, -1086,
        -4030, -4031, -1013, -28, -40, -56735,
    }  # fmt: skip
    # Added by issue 24 (deterministic, each cited in docs/retry.md): numeric overflow, a unit
    # with errors, a function that ended without RETURN, a user-defined exception (SQLCODE +1).
    spec_codes |= {-1426, -4063, -6503, 1}
    assert listed == spec_codes


def test_no_panic_function_without_retry() -> None:
    result = compile_source("module m;\npub fn f() -> number { return 1; }\n", "m.pell")
    assert result.sql is not None
    assert "pell_is_panic" not in result.sql
