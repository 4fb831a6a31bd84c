"""Every `tests/cases/*.pell` compiles, parseora accepts its SQL, and the SQL matches its snapshot;
every `tests/cases/errors/*.pell` fails, and its rendered diagnostics match their snapshot.

A case may start with `// pellc: --target 12.2` to compile for another target.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CASES, assert_oracle_accepts
from syrupy.assertion import SnapshotAssertion

from pell import compile_source
from pell.diagnostics import render_all

GOOD = sorted(CASES.glob("*.pell"))
BAD = sorted((CASES / "errors").glob("*.pell"))


def _target(text: str) -> str:
    match = re.match(r"// pellc: --target (\S+)", text)
    return match.group(1) if match else "23ai"


@pytest.mark.parametrize("case", GOOD, ids=[p.stem for p in GOOD])
def test_case_compiles(case: Path, snapshot_sql: SnapshotAssertion) -> None:
    text = case.read_text(encoding="utf-8")
    result = compile_source(text, case.name, _target(text))
    rendered = render_all(result.diagnostics, result.source)
    assert result.sql is not None, rendered
    assert_oracle_accepts(result.sql)
    assert result.sql == snapshot_sql


@pytest.mark.parametrize("case", BAD, ids=[p.stem for p in BAD])
def test_error_case_is_reported(case: Path, snapshot_text: SnapshotAssertion) -> None:
    text = case.read_text(encoding="utf-8")
    result = compile_source(text, case.name, _target(text))
    assert result.sql is None, "an error case compiled"
    assert any(d.is_error for d in result.diagnostics)
    assert render_all(result.diagnostics, result.source, pretty=True) == snapshot_text


def test_warnings_of_good_cases(snapshot_text: SnapshotAssertion) -> None:
    """Warnings on cases that still compile, all in one file."""
    lines = []
    for case in GOOD:
        text = case.read_text(encoding="utf-8")
        result = compile_source(text, case.name, _target(text))
        lines.append(render_all(result.diagnostics, result.source))
    assert "".join(lines) == snapshot_text
