"""Shared test helpers: single-file snapshots (.sql and .txt) and the parseora gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import parseora
import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

TESTS = Path(__file__).parent
ROOT = TESTS.parent
CASES = TESTS / "cases"
EXAMPLES = ROOT / "examples"


class SqlSnapshot(SingleFileSnapshotExtension):
    """Each snapshot is a real .sql file a reviewer reads in a diff."""

    file_extension = "sql"
    _file_extension = "sql"  # syrupy < 5 spelling
    _write_mode = WriteMode.TEXT


class TextSnapshot(SingleFileSnapshotExtension):
    """Rendered diagnostics, as a user sees them."""

    file_extension = "txt"
    _file_extension = "txt"
    _write_mode = WriteMode.TEXT


@pytest.fixture
def snapshot_sql(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(SqlSnapshot)


@pytest.fixture
def snapshot_text(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(TextSnapshot)


# What a generated file may contain; anything else parseora finds is a problem too.
EXPECTED_STATEMENTS = {"CreatePackage", "CreatePackageBody", "CreateType", "CreateTypeBody"}


def oracle_parse_errors(sql: str) -> list[str]:
    """Every error and warning parseora (an independent Oracle PL/SQL parser) reports, and any
    statement that is not a CREATE of a package or type, as `line:col: message`."""
    problems: list[str] = []
    statements: list[dict[str, Any]] = parseora.parse(sql)
    for statement in statements:
        for problem in statement["errors"] + statement["warnings"]:
            problems.append(f"{problem['line']}:{problem['col']}: {problem['message']}")
        if statement["statement"] not in EXPECTED_STATEMENTS:
            problems.append(f"{statement['line']}:1: unexpected {statement['statement']} statement")
    if not statements:
        problems.append("parseora found no statement")
    return problems


def assert_oracle_accepts(sql: str) -> None:
    """Fail the test if parseora reports any error in `sql`."""
    problems = oracle_parse_errors(sql)
    assert not problems, "parseora rejects the generated SQL:\n" + "\n".join(problems)
