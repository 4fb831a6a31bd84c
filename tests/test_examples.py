"""Every example compiles, parseora accepts it, and its SQL matches its snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLES, assert_oracle_accepts
from syrupy.assertion import SnapshotAssertion

from pell import compile_path
from pell.diagnostics import render_all

FILES = sorted(EXAMPLES.glob("*.pell"))


@pytest.mark.parametrize("example", FILES, ids=[p.stem for p in FILES])
def test_example(example: Path, snapshot_sql: SnapshotAssertion) -> None:
    result = compile_path(example)
    assert result.diagnostics == (), render_all(result.diagnostics, result.source)
    assert result.sql is not None
    assert_oracle_accepts(result.sql)
    assert result.sql == snapshot_sql


def test_every_example_is_described_in_the_readme() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for example in FILES:
        assert f"`{example.name}`" in readme
