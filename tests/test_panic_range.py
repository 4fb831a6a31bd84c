"""The panic range, end to end, against the spec rather than pellc's constants: every code the
runtime gives a @panic error (and pellc's own panic) lies in it, and the generated
`pell_is_panic` is TRUE for exactly that range of Oracle's user codes.

Typed from the spec, not read from `pell.oracle_errors` or `pell.error_codes`: language.md
section 6 ("panic `-20300 .. -20399`"), retry.md section 4 ("the panic range `-20399 ..
-20300` (every `@panic` error)") and section 5 (a transaction-scoped retry entered with a
transaction open "raises a panic-range error"). A bound changed in one place and not in the
others (the runtime's numbering, the generated test, `explain`) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import assert_oracle_accepts

from pell import compile_source
from pell.cli import main

SPEC_PANIC = set(range(-20399, -20299))  # -20399 .. -20300, both ends in
USER_CODES = range(-20999, -19999)  # RAISE_APPLICATION_ERROR's range (ORA-21000)


def _panic_function(sql: str) -> str:
    start = sql.index("FUNCTION pell_is_panic(p_code IN NUMBER) RETURN BOOLEAN IS")
    return sql[start : sql.index("END pell_is_panic;", start)]


def is_panic(function: str, code: int) -> bool:
    """Run the generated `RETURN p_code BETWEEN a AND b OR p_code IN (...)` for `code`."""
    body = re.sub(r"--[^\n]*", "", function)  # the comments name each code
    match = re.search(
        r"RETURN\s+p_code\s+BETWEEN\s+(-?\d+)\s+AND\s+(-?\d+)\s+OR\s+p_code\s+IN\s*\(([^)]*)\)\s*;",
        body,
    )
    assert match, f"pell_is_panic is no longer BETWEEN ... OR IN (...): read it anew\n{function}"
    low, high = int(match.group(1)), int(match.group(2))
    listed = {int(code) for code in match.group(3).replace(",", " ").split()}
    return low <= code <= high or code in listed  # BETWEEN includes both ends


PANICS = """module ledger.checks;

@panic
pub error Corrupt;
@panic
pub error Impossible;
pub error Missing;
@skip
pub error Stale;

@retry(n = 3)
pub fn settle(id: number) {
    sql! { update ledger set settled = 1 where id = :id };
}
"""


def test_the_generated_test_is_the_spec_range_of_user_codes() -> None:
    result = compile_source(PANICS, "checks.pell")
    assert result.sql is not None
    function = _panic_function(result.sql)
    panics = {code for code in USER_CODES if is_panic(function, code)}
    assert panics == SPEC_PANIC
    # codes SQLCODE gives that are not negative are tested too: +1 (a user-defined exception
    # with no EXCEPTION_INIT) and +100 (NO_DATA_FOUND), both never retried (retry.md section 4)
    assert is_panic(function, 1) and is_panic(function, 100)
    # and what a retry is for is not a panic
    assert not any(is_panic(function, code) for code in (-60, -54, -8177, -30006, -1555, 0))


def _runtime_codes(text: str) -> dict[str, int]:
    found = re.findall(r"^  c_(\w+) CONSTANT PLS_INTEGER := (-?\d+);$", text, re.M)
    return {name: int(code) for name, code in found}


def test_every_panic_code_the_runtime_gives_is_one_the_generated_test_matches(
    tmp_path: Path,
) -> None:
    (tmp_path / "checks.pell").write_text(PANICS, "utf-8")
    runtime = tmp_path / "pell_runtime.sql"
    assert main(["runtime", str(tmp_path), "-o", str(runtime)]) == 0
    text = runtime.read_text("utf-8")
    assert_oracle_accepts(text)
    codes = _runtime_codes(text)
    function = _panic_function(compile_source(PANICS, "checks.pell").sql or "")
    # @panic errors and pellc's own panic (a transaction-scoped retry entered inside a
    # transaction): in the spec range, and matched by the generated test
    for name in ("ledger_checks_corrupt", "ledger_checks_impossible", "pell_transaction_open"):
        assert codes[name] in SPEC_PANIC, (name, codes[name])
        assert is_panic(function, codes[name]), name
    # the other categories: neither
    for name in ("ledger_checks_missing", "ledger_checks_stale"):
        assert codes[name] not in SPEC_PANIC and not is_panic(function, codes[name]), name
    assert len(set(codes.values())) == len(codes)  # no two errors share a code


@pytest.mark.parametrize("count", [99, 100])
def test_a_full_panic_range_stays_inside_the_spec_range(tmp_path: Path, count: int) -> None:
    """As many @panic errors as the range holds, and one more: each gets a code inside the
    range, apart from pellc's own, or the project is refused; never a code outside it."""
    errors = "\n".join(f"@panic\npub error P{i};" for i in range(count))
    (tmp_path / "many.pell").write_text(f"module many;\n\n{errors}\n", "utf-8")
    runtime = tmp_path / "pell_runtime.sql"
    if main(["runtime", str(tmp_path), "-o", str(runtime)]) != 0:
        return  # refused (too-many-errors): no code given outside the range
    codes = _runtime_codes(runtime.read_text("utf-8"))
    assert len(codes) == count + 1  # and pell_transaction_open
    assert set(codes.values()) <= SPEC_PANIC
    assert len(set(codes.values())) == len(codes)


def test_explain_states_the_spec_range(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = tmp_path / "checks.pell"
    source.write_text(PANICS, "utf-8")
    assert main(["explain", str(source)]) == 0
    assert "@panic errors (-20399 .. -20300)" in capsys.readouterr().out
