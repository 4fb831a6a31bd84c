"""The JSON of a raised error's fields (issue 25, item 6): the module hands each value to
pell_runtime as it is, and the runtime has Oracle write the JSON with JSON_ARRAY, a PL/SQL
built-in since 12.2, instead of escaping text character by character."""

from __future__ import annotations

import re

from conftest import assert_oracle_accepts

from pell import compile_source
from pell.runtime import number_errors, runtime_sql

# A quote, a backslash, a tab, a newline, non-ASCII text and a character outside the BMP
NOTES = r"""module notes;

pub error Bad { reason: text, size: number, ok: bool }

pub fn check(n: number, why: text) -> Result<number, Bad> {
    if n > 2 {
        return Err(Bad { reason: why, size: n, ok: false });
    }
    if n > 1 {
        return Err(Bad { reason: "say \"hi\" \\ tab\there\nline é 😀", size: n / 2, ok: n > 2 });
    }
    return Ok(n);
}
"""


def _compiled() -> tuple[str, str]:
    result = compile_source(NOTES, "notes.pell")
    assert result.sql is not None and result.module is not None
    errors, _ = number_errors([result.module])
    return result.sql, runtime_sql(errors, "test")


def test_text_needing_escapes_reaches_the_runtime_as_written() -> None:
    """The module escapes nothing for JSON: the text is a PL/SQL literal (quote doubled when
    there is one, control characters as CHR) and pell_runtime.json_text writes its JSON."""
    sql, _ = _compiled()
    assert_oracle_accepts(sql)
    literal = "'say \"hi\" \\ tab' || CHR(9) || 'here' || CHR(10) || 'line é 😀'"
    assert (
        "SUBSTRB('notes.Bad: {\"reason\":' || pell_runtime.json_text(" + literal + ") || "
        "',\"size\":' || pell_runtime.json_number(p_n / 2) || "
        "',\"ok\":' || pell_runtime.json_bool(p_n > 2) || '}', 1, 2048)"
    ) in sql
    assert "pell_runtime.json_text(p_why)" in sql


def test_the_runtime_has_oracle_write_the_json() -> None:
    """json_text and json_number are JSON_ARRAY of the value with the brackets cut off: no
    character loop, no format model. The text is cut first to what JSON_ARRAY's VARCHAR2(4000)
    holds at the worst escaping, 12 bytes a character, plus the quotes and the brackets."""
    _, runtime = _compiled()
    assert_oracle_accepts(runtime)
    body = runtime[runtime.index("CREATE OR REPLACE PACKAGE BODY") :]
    assert "LOOP" not in body and "ASCII(" not in body and "TO_CHAR" not in body
    assert "RETURN SUBSTR(p_array, 2, LENGTH(p_array) - 2);" in body
    kept = re.search(r"RETURN json_element\(JSON_ARRAY\(SUBSTR\(p_value, 1, (\d+)\)\)\);", body)
    assert kept is not None, body
    assert int(kept.group(1)) * 12 + 4 <= 4000
    assert "RETURN json_element(JSON_ARRAY(p_value));" in body  # json_number
