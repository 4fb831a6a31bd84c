"""`pellc deploy`: install compiled modules into Oracle with python-oracledb (thin mode), and
report Oracle's compile errors against the `.pell` line that caused them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from pell.build import RUNTIME_FILE
from pell.records import record

_CREATE = re.compile(
    r"^\s*CREATE\s+OR\s+REPLACE\s+(PACKAGE\s+BODY|PACKAGE|TYPE\s+BODY|TYPE|FUNCTION)\s+"
    r"(?:(\w+)\.)?(\w+)",
    re.IGNORECASE,
)


@record
class Statement:
    """One statement of a script: its text (without the `/` line) and the line it starts on."""

    text: str
    line: int  # 1-based line of the script where `text` begins
    # as USER_ERRORS names it: PACKAGE, PACKAGE BODY, TYPE, TYPE BODY, FUNCTION (an aggregate)
    object_type: str
    object_name: str  # upper case, without the schema
    schema: str | None


class ScriptError(ValueError):
    """A script that does not split into CREATE OR REPLACE statements, at a line of it."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


def split_script(script: str) -> list[Statement]:
    """Statements of a SQL*Plus-style script: each ends at a line holding only `/`.
    Comment and blank lines before a statement are not part of it. ScriptError when a part
    is not a CREATE OR REPLACE statement (as when a `/` line ends a body early)."""
    statements: list[Statement] = []
    current: list[str] = []
    start = 0
    slash = 0  # the line of the last `/`
    for number, line in enumerate(script.splitlines(), start=1):
        if line.strip() == "/":
            _close(statements, current, start, slash)
            current = []
            slash = number
            continue
        if not current and (not line.strip() or line.lstrip().startswith("--")):
            continue
        if not current:
            start = number
        current.append(line)
    _close(statements, current, start, slash)
    return statements


def _close(statements: list[Statement], lines: list[str], start: int, slash: int) -> None:
    if not lines:
        return
    text = "\n".join(lines)
    match = _CREATE.match(text)
    if match is None:
        what = f"not a CREATE OR REPLACE statement: {lines[0].strip()[:60]}"
        if statements and statements[-1].line < slash:
            raise ScriptError(
                slash,
                f"a line holding only `/` ends the statement of line {statements[-1].line} "
                f"early; line {start} that follows is {what}",
            )
        raise ScriptError(start, what)
    kind = " ".join(match.group(1).upper().split())
    statements.append(Statement(text, start, kind, match.group(3).upper(), match.group(2)))


@record
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


@record
class CompileError:
    """A row of USER_ERRORS."""

    line: int
    position: int
    text: str
    attribute: str  # ERROR or WARNING


@record
class MappedError:
    """An Oracle compile error at the place it comes from: the `.pell` line, or the SQL
    file's line when the line has no Pell origin."""

    path: Path
    line: int
    column: int
    severity: str  # error or warning
    message: str

    def render(self) -> str:
        """`file.pell:line:col: error: PLS-00201: ...  [oracle]`"""
        return f"{self.path}:{self.line}:{self.column}: {self.severity}: {self.message}  [oracle]"


def place(
    script: Script, sql_line: int, column: int, shown: Path | None = None
) -> tuple[Path, int, int]:
    """(file.pell, line, col) of a line of the script through its source map, or (file.sql,
    line, col) (the script as `shown`, by default its path) when it has no Pell origin."""
    lines = (script.source_map or {}).get("lines", {})
    origin = lines.get(str(sql_line)) if isinstance(lines, dict) else None
    if origin is not None and script.pell_path is not None:
        line, pell_column = origin
        return script.pell_path, line, pell_column
    return shown or script.path, sql_line, column


def map_error(error: CompileError, statement: Statement, script: Script) -> MappedError:
    """A USER_ERRORS row at its `.pell` line through the source map, or at the SQL file's line
    when the line has no Pell origin."""
    severity = "error" if error.attribute.upper() == "ERROR" else "warning"
    path, line, column = place(script, statement.line + error.line - 1, error.position)
    return MappedError(path, line, column, severity, " ".join(error.text.split()))


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


def deployment_steps(
    plan: Iterable[tuple[Script, list[Statement]]],
) -> list[tuple[Script, Statement]]:
    """The statements of `plan` (scripts in deployment_order) in the order they must run:
    pell_runtime, then every package and type spec, then every body. A body needs its own spec
    (ORA-04041: "package specification must be created first before creating package body")
    and compiles against the specs of the packages it calls: a body created before one of
    them is created with compilation errors (Database Development Guide, "Schema Object
    Dependency": a dependent object is compiled against its referenced objects). With every
    spec first, modules that call each other in a cycle deploy too."""
    runtime: list[tuple[Script, Statement]] = []
    specs: list[tuple[Script, Statement]] = []
    bodies: list[tuple[Script, Statement]] = []
    for script, statements in plan:
        for statement in statements:
            if script.path.name == RUNTIME_FILE:
                runtime.append((script, statement))
            elif statement.object_type.endswith("BODY"):
                bodies.append((script, statement))
            else:
                specs.append((script, statement))
    return runtime + specs + bodies


def run_scripts(
    cursor: Cursor,
    steps: Iterable[tuple[Script, Statement]],
    refused: tuple[type[Exception], ...] = (),
) -> Iterator[tuple[Script, Statement, list[MappedError]]]:
    """Run each statement (deployment_steps' order); yield each with its mapped compile
    errors (empty when it compiled). A statement the database refuses to run with one of the
    `refused` errors (ORA-02303: a changed type a table depends on, docs/language.md "Object
    types") is yielded with that error at its first line, and nothing after it runs."""
    for script, statement in steps:
        try:
            cursor.execute(statement.text)
        except refused as error:
            message = str(error).splitlines()[0] if str(error) else type(error).__name__
            row = CompileError(1, 1, message, "ERROR")
            yield script, statement, [map_error(row, statement, script)]
            return
        errors = fetch_errors(cursor, statement)
        yield script, statement, [map_error(e, statement, script) for e in errors]
