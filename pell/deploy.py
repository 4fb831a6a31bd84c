"""`pellc deploy`: install compiled modules into Oracle with python-oracledb (thin mode), and
report Oracle's compile errors against the `.pell` line that caused them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pell.build import RUNTIME_FILE

_CREATE = re.compile(
    r"^\s*CREATE\s+OR\s+REPLACE\s+(PACKAGE\s+BODY|PACKAGE|TYPE\s+BODY|TYPE)\s+"
    r"(?:(\w+)\.)?(\w+)",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Statement:
    """One statement of a script: its text (without the `/` line) and the line it starts on."""

    text: str
    line: int  # 1-based line of the script where `text` begins
    object_type: str  # as USER_ERRORS names it: PACKAGE, PACKAGE BODY, TYPE, TYPE BODY
    object_name: str  # upper case, without the schema
    schema: str | None


def split_script(script: str) -> list[Statement]:
    """Statements of a SQL*Plus-style script: each ends at a line holding only `/`.
    Comment and blank lines before a statement are not part of it."""
    statements: list[Statement] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(script.splitlines(), start=1):
        if line.strip() == "/":
            _close(statements, current, start)
            current = []
            continue
        if not current and (not line.strip() or line.lstrip().startswith("--")):
            continue
        if not current:
            start = number
        current.append(line)
    _close(statements, current, start)
    return statements


def _close(statements: list[Statement], lines: list[str], start: int) -> None:
    if not lines:
        return
    text = "\n".join(lines)
    match = _CREATE.match(text)
    if match is None:
        raise ValueError(f"line {start}: not a CREATE OR REPLACE statement: {lines[0][:60]}")
    kind = " ".join(match.group(1).upper().split())
    statements.append(Statement(text, start, kind, match.group(3).upper(), match.group(2)))


@dataclass(frozen=True, slots=True)
class Script:
    """A `.sql` file to run, with its source map if one was written beside it."""

    path: Path
    source_map: dict[str, Any] | None
    pell_path: Path | None  # the .pell file its map points at


def deployment_order(out_dir: Path) -> list[Path]:
    """pell_runtime first (the modules raise through it), then every module in path order."""
    scripts = sorted(p for p in out_dir.rglob("*.sql") if p.name != RUNTIME_FILE)
    runtime = out_dir / RUNTIME_FILE
    return ([runtime] if runtime.exists() else []) + scripts


@dataclass(frozen=True, slots=True)
class CompileError:
    """A row of USER_ERRORS."""

    line: int
    position: int
    text: str
    attribute: str  # ERROR or WARNING


def map_error(error: CompileError, statement: Statement, script: Script) -> str:
    """`file.pell:line:col: error: PLS-00201: ...` through the source map, or the SQL file's
    line when the line has no Pell origin."""
    severity = "error" if error.attribute.upper() == "ERROR" else "warning"
    sql_line = statement.line + error.line - 1
    lines = (script.source_map or {}).get("lines", {})
    origin = lines.get(str(sql_line)) if isinstance(lines, dict) else None
    message = " ".join(error.text.split())
    if origin is not None and script.pell_path is not None:
        line, column = origin
        return f"{script.pell_path}:{line}:{column}: {severity}: {message}  [oracle]"
    return f"{script.path}:{sql_line}:{error.position}: {severity}: {message}  [oracle]"


def redact(dsn: str) -> str:
    """A DSN to show: never its password."""
    if "@" in dsn:
        credentials, where = dsn.rsplit("@", 1)
        return f"{credentials.split('/', 1)[0]}@{where}"
    return dsn


def credentials(dsn: str) -> dict[str, str]:
    """`user/password@host:port/service` -> oracledb.connect keyword arguments."""
    if "@" not in dsn or "/" not in dsn.split("@", 1)[0]:
        raise ValueError("the DSN is user/password@host:port/service")
    login, where = dsn.rsplit("@", 1)
    user, password = login.split("/", 1)
    return {"user": user, "password": password, "dsn": where}


class Cursor(Protocol):
    def execute(self, statement: str, parameters: Any = ...) -> Any: ...
    def fetchall(self) -> list[Any]: ...


def fetch_errors(cursor: Cursor, statement: Statement) -> list[CompileError]:
    cursor.execute(
        "select line, position, text, attribute from all_errors "
        "where owner = nvl(:owner, user) and name = :name and type = :type order by sequence",
        {
            "owner": statement.schema.upper() if statement.schema else None,
            "name": statement.object_name,
            "type": statement.object_type,
        },
    )
    return [CompileError(int(r[0]), int(r[1]), str(r[2]), str(r[3])) for r in cursor.fetchall()]


def run_scripts(
    cursor: Cursor, scripts: Iterable[Script]
) -> Iterator[tuple[Script, Statement, list[str]]]:
    """Run each statement; yield it with its mapped compile errors (empty when it compiled)."""
    for script in scripts:
        for statement in split_script(script.path.read_text(encoding="utf-8")):
            cursor.execute(statement.text)
            errors = fetch_errors(cursor, statement)
            yield script, statement, [map_error(e, statement, script) for e in errors]
