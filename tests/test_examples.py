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


SHOP = EXAMPLES / "shop"


def test_the_shop_project_builds_with_its_committed_error_codes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], snapshot_sql: SnapshotAssertion
) -> None:
    """Three modules that share records, call each other, retry one's error and propagate the
    others', with a stub (dbms_output) and Oracle functions; built from a copy, so the test
    never writes into the repository."""
    import re
    import shutil

    from pell.cli import main

    project = tmp_path / "shop"
    shutil.copytree(SHOP, project)
    out = tmp_path / "out"
    assert main(["build", str(project), "-d", str(out)]) == 0
    assert capsys.readouterr().err == "built 3, unchanged 0, failed 0, runtime built\n"
    # the committed code file is what the build wants: nothing to update
    codes = (SHOP / "pell-error-codes.json").read_text("utf-8")
    assert (project / "pell-error-codes.json").read_text("utf-8") == codes
    runtime = (out / "pell_runtime.sql").read_text("utf-8")
    assert_oracle_accepts(runtime)
    declared = dict(re.findall(r"^  c_(\w+) CONSTANT PLS_INTEGER := (-\d+);$", runtime, re.M))
    assert declared == {
        "shop_catalog_productnotfound": "-20100",
        "shop_stock_outofstock": "-20101",
        "shop_stock_counting": "-20102",
        "pell_transaction_open": "-20399",
    }
    orders = (out / "orders.sql").read_text("utf-8")
    # stock's Counting is retried; catalog's and stock's other errors reach the caller
    assert "WHEN e_pell_busy OR e_pell_deadlock OR pell_runtime.shop_stock_counting THEN" in orders
    assert "l_product := shop.catalog.find(p_sku);" in orders
    assert "dbms_output.put_line(" in orders
    for name in ("catalog", "stock", "orders"):
        sql = (out / f"{name}.sql").read_text("utf-8")
        assert_oracle_accepts(sql)
        assert sql == snapshot_sql(name=name)
