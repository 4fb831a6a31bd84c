"""The reference case of retry.md section 1, statement for statement.

The expected function below is typed from the spec (whitespace normalised), with the two
liberties the spec allows: the record literal goes through a temporary record, and the SQL
keeps the spelling of the source.
"""

from __future__ import annotations

import re

from conftest import CASES

from pell import compile_source

EXPECTED = """
FUNCTION promote_to_paid(p_order_id IN NUMBER) RETURN t_order IS
  l_o t_order;
  l_pell_order t_order;
  l_pell_attempt PLS_INTEGER := 0;
BEGIN
  LOOP
    SAVEPOINT pell_attempt;
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
        IF pell_is_panic(SQLCODE) THEN RAISE; END IF;
        l_pell_attempt := l_pell_attempt + 1;
        ROLLBACK TO pell_attempt;
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
    assert _normalise(sql[start:end]) == _normalise(EXPECTED)


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
    listed = {int(code) for code in re.findall(r"^\s+(-\d+),?\s+--", panic, re.MULTILINE)}
    # The spec's list, typed from retry.md section 4.
    spec_codes = {
        -1476, -6502, -6592, -6500, -6501, -6504, -1410, -1483,
        -4068, -4061, -4065, -6508, -600, -7445,
        -1, -1400, -1407, -2290, -2291, -2292, -12899, -1722, -1422,
        -942, -904, -1031, -4030, -4031, -1013, -28, -40, -56735,
    }  # fmt: skip
    assert listed == spec_codes


def test_no_panic_function_without_retry() -> None:
    result = compile_source("module m;\npub fn f() -> number { return 1; }\n", "m.pell")
    assert result.sql is not None
    assert "pell_is_panic" not in result.sql
