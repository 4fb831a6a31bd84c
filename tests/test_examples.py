"""Every example compiles, parseora accepts it, and its SQL matches its snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, assert_oracle_accepts
from syrupy.assertion import SnapshotAssertion

from pell import compile_path
from pell.diagnostics import render_all

FILES = sorted(EXAMPLES.glob("*.pell"))
# The reference case stays as retry.md section 1 writes it, so it shows the warnings pellc
# gives every savepoint-scoped retry of deadlocks and every package named like its table;
# every other example follows the advice.
EXPECTED_WARNINGS = {"orders": ["retry-deadlock-scope", "package-clash"]}


@pytest.mark.parametrize("example", FILES, ids=[p.stem for p in FILES])
def test_example(example: Path, snapshot_sql: SnapshotAssertion) -> None:
    result = compile_path(example)
    codes = [d.code for d in result.diagnostics]
    expected = EXPECTED_WARNINGS.get(example.stem, [])
    assert codes == expected, render_all(result.diagnostics, result.source)
    assert result.sql is not None
    assert_oracle_accepts(result.sql)
    assert result.sql == snapshot_sql


def test_every_example_is_described_in_the_readme() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for example in FILES:
        assert f"`{example.name}`" in readme


def test_runtime_over_the_examples_declares_what_they_raise(
    tmp_path: Path, snapshot_sql: SnapshotAssertion
) -> None:
    import re

    from pell.cli import main

    output = tmp_path / "pell_runtime.sql"
    assert main(["runtime", str(EXAMPLES), "-o", str(output)]) == 0
    runtime = output.read_text(encoding="utf-8")
    assert_oracle_accepts(runtime)
    declared = set(re.findall(r"^  (c_\w+) CONSTANT PLS_INTEGER := -20\d\d\d;$", runtime, re.M))
    raised: set[str] = set()
    for example in FILES:
        sql = compile_path(example).sql
        assert sql is not None
        raised |= set(re.findall(r"pell_runtime\.(c_\w+)", sql))
    assert raised, "the examples raise no error"
    assert raised <= declared
    assert runtime == snapshot_sql
