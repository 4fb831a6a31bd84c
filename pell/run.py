"""Run Pell where it is written: `pellc exec` (a script, a snippet or one call, compiled and run
with its output shown), `pellc sql` (a SQL script, statement by statement), `pellc db` (the
embedded PostgreSQL server) and `pellc deploy --target postgres`. The database is chosen by
pell.database; errors come back at the Pell line through the compile's source map."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pell.database import Database, DatabaseError
from pell.records import record
from pell.resources import pip_install

if TYPE_CHECKING:
    from pell import CompileResult
    from pell.diagnostics import Diagnostic
    from pell.project import Project

EXIT_OK, EXIT_ERRORS, EXIT_USAGE = 0, 1, 2
SNIPPET = "<-e>"  # the name a -e snippet's diagnostics show


def add_parsers(commands: Any, targets: tuple[str, ...]) -> None:
    """`exec`, `sql` and `db` as subcommands of `commands` (cli._parser's)."""
    database = argparse.ArgumentParser(add_help=False)
    database.add_argument(
        "--db",
        metavar="DSN",
        help="an Oracle user/password@host:port/service or a postgresql:// URL (default: "
        "$PELL_DB_URL; with --target postgres and neither, the embedded server)",
    )
    # its own name: cli._apply_settings would fill `target` before the DSN can decide it
    database.add_argument(
        "--target",
        dest="run_target",
        choices=targets,
        default=None,
        help="Oracle version, or postgres (default: postgres for a postgresql:// DSN, else the "
        "project's `target`)",
    )
    database.add_argument(
        "--pretty", action="store_true", help="show the source line under each diagnostic"
    )
    # accepted so that `--format json` is refused by name, not taken for a FILE
    database.add_argument("--format", type=_text_format, default="text", help=argparse.SUPPRESS)
    run = commands.add_parser(
        "exec",
        parents=[database],
        help="compile and run a script or a snippet; show its output",
        description="Compile a script (a file with no `module` line) or a -e snippet and run "
        "it: an anonymous block on Oracle (DBMS_OUTPUT shown), a DO block on PostgreSQL (RAISE "
        "NOTICE shown). The project modules it calls are deployed first. A snippet that is one "
        "expression with no `;` (`-e 'greet::hello(\"ada\")'`) prints its value.",
    )
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("file", nargs="?", type=Path, metavar="FILE", help="a .pell script")
    source.add_argument("-e", dest="snippet", metavar="SOURCE", help="Pell statements to run")
    sql = commands.add_parser(
        "sql",
        parents=[database],
        help="run a SQL script statement by statement, showing its output",
        description="Run a SQL script: statements end with `;`, PL/SQL blocks and units with a "
        "line holding only `/` on Oracle (as in SQL*Plus). Shows rows, DBMS_OUTPUT or notices; "
        "stops at the first failure with its file:line, exit 1.",
    )
    sql.add_argument("file", type=Path, metavar="FILE")
    db = commands.add_parser(
        "db",
        help="the embedded PostgreSQL server: status, stop, reset",
        description="pellc's embedded PostgreSQL server (the extra `pg`): started by "
        "the first command that needs it, data in $PELL_PG_DATA or the user's cache "
        "($XDG_CACHE_HOME/pellc/postgres, ~/.cache/pellc/postgres).",
    )
    from pell.repl import add_parser

    add_parser(commands, database)
    for command in (run, sql, db):
        command.set_defaults(format="text")  # their output is the database's: text only
    db.add_argument("--format", type=_text_format, default="text", help=argparse.SUPPRESS)
    db.add_argument(
        "action",
        choices=("status", "stop", "reset"),
        help="status: running?, where, version; stop: stop it; reset: stop it and remove its "
        "data (the next use makes a new one)",
    )


def _text_format(value: str) -> str:
    if value != "text":
        raise argparse.ArgumentTypeError(
            f"{value!r}: exec, sql, db and repl write text only (their output is the "
            "database's); --format json is for build, check, verify and the other compiler "
            "commands"
        )
    return value


# ---- output ---------------------------------------------------------------------------------


def _out(text: str) -> None:
    from pell.cli import _stdout

    _stdout(text)
    sys.stdout.flush()


def _error(path: Path | str, line: int, column: int, message: str, code: str) -> None:
    from pell import report

    sys.stderr.write(report.located_error(path, line, column, "error", message, code))


def _usage(message: str) -> Exception:
    from pell.cli import UsageError

    return UsageError(message)


@contextlib.contextmanager
def _database_errors() -> Iterator[None]:
    try:
        yield
    except DatabaseError as error:
        raise _usage(str(error)) from error


# ---- pellc exec -----------------------------------------------------------------------------


def exec_command(args: argparse.Namespace) -> int:
    path: Path | None = args.file
    if path is not None:
        from pell.cli import _read_source

        read = _read_source(path, args.pretty)
        if read is None:
            return EXIT_ERRORS
        text, name, start = read, str(path), path.parent
    else:
        text, name, start = args.snippet, SNIPPET, Path.cwd()
    session = Session.of(args, start)
    script_path = path if path is not None else start / SNIPPET
    try:
        return session.run(text, name, script_path, snippet=path is None)
    except KeyboardInterrupt:
        # one line, not a traceback; 128 + SIGINT, as a shell reports a command it interrupted
        sys.stderr.write("pellc: cancelled\n")
        return EXIT_CANCELLED


EXIT_CANCELLED = 130


class Session:
    """A database, a target and a project to run scripts in: one for `pellc exec`, one per
    `pellc repl` (which runs each cell through it)."""

    def __init__(self, database: Database, target: str, start: Path, pretty: bool) -> None:
        self.database = database
        self.target = target
        self.start = start  # where the project is looked for
        self.pretty = pretty
        self._installed: dict[Path, str] = {}  # each module deployed, with its text
        self._functions: dict[str, InstalledFunction] = {}  # their functions, by schema.name
        self.compiled = False  # whether the last script run compiled

    @classmethod
    def of(cls, args: argparse.Namespace, start: Path) -> Session:
        from pell.project import find_config

        config = find_config(start)
        with _database_errors():
            database = _choose(args, config.target)
        return cls(database, _target(args, database, config.target), start, args.pretty)

    def run(
        self,
        text: str,
        name: str,
        script_path: Path,
        snippet: bool,
        around: tuple[str, str] = ("", ""),
        imports: str = "",
    ) -> int:
        """Compile the script (between `around`'s parts: _compile_snippet), deploy the modules
        it calls (those changed since this session deployed them) and run it; its output on
        stdout, its errors on stderr. `imports`: more import lines that name the modules it
        calls, each on a line of its own."""
        from pell.diagnostics import SourceFile, has_errors, render_all

        project = _project(self.start, script_path, imports + "\n" + "".join(around) + text)
        result, compiled = _compile_snippet(
            text, name, self.target, project, script_path, snippet, around
        )
        # shown without the kept imports a repl puts before the cell on its first line, so
        # that the places are those of the cell as typed
        kept = len(around[0]) if compiled.startswith(around[0]) else 0
        diagnostics = [_shifted(d, kept) for d in result.diagnostics]
        shown = SourceFile(name, compiled[kept:])
        sys.stderr.write(render_all(diagnostics, shown, self.pretty))
        self.compiled = not has_errors(list(result.diagnostics)) and result.sql is not None
        if not self.compiled:
            return EXIT_ERRORS
        if result.module is not None and not result.module.script:
            raise _usage(
                f"{name} is a module (it has a `module` line): exec runs a script; call the "
                "module's fns from one, or from -e"
            )
        needed = [f for f in project.imported_by([script_path]) if f.declares is not None]
        if any(self._installed.get(f.path) != f.source.text for f in needed):
            import tempfile

            modules = [f.path for f in needed]
            with tempfile.TemporaryDirectory(prefix="pellc-exec-") as out:
                if not self._deploy(modules, project, Path(out)):
                    return EXIT_ERRORS
            self._installed.update({f.path: f.source.text for f in needed})
        if self.database.kind == "postgres":
            return _run_postgres_script(self.database, result, name, self._functions)
        return _run_oracle_script(self.database, result, name)

    def _deploy(self, modules: list[Path], project: Project, out_dir: Path) -> bool:
        """Build `modules` (with the runtime) and install them; False after reporting why not."""
        from pell import report
        from pell.cli import _run_build

        build = argparse.Namespace(files=modules, target=self.target, pretty=self.pretty, jobs=1)
        result = _run_build(build, out_dir, check_only=False, source_maps=True)
        if result.failed or result.runtime == "failed" or result.file_errors:
            sys.stderr.write(report.note("nothing run: fix the errors of the modules it calls"))
            return False
        if self.database.kind == "postgres":
            if not install_postgres(self.database, out_dir, result, project):
                return False
            self._functions |= installed_functions(out_dir, result.outcomes)
            return True
        return _install_oracle(self.database, out_dir, result)


def _shifted(diagnostic: Diagnostic, by: int) -> Diagnostic:
    """The diagnostic with its places `by` characters earlier."""
    from pell.ast import Span
    from pell.diagnostics import Fix, Note
    from pell.records import replace

    def at(span: Span) -> Span:
        return Span(max(span.start - by, 0), max(span.end - by, 0))

    if not by:
        return diagnostic
    notes = tuple(Note(note.message, at(note.span)) for note in diagnostic.notes)
    fixes = tuple(Fix(at(fix.span), fix.text) for fix in diagnostic.fixes)
    return replace(diagnostic, span=at(diagnostic.span), notes=notes, fixes=fixes)


def _choose(args: argparse.Namespace, project_target: str | None) -> Database:
    from pell.database import choose

    return choose(args.db, args.run_target, project_target)


def _target(args: argparse.Namespace, database: Database, project_target: str | None) -> str:
    if args.run_target is not None:
        return str(args.run_target)
    if database.kind == "postgres":
        return "postgres"
    return project_target if project_target not in (None, "postgres") else "23ai"


def _project(start: Path, script_path: Path, text: str) -> Project:
    """The project the script belongs to (the one whose config is at or above `start`, else
    the .pell files in `start` itself: a directory with no config, such as a home directory,
    is not walked), with the script in it, so that its imports are found."""
    from pell.build import project_of
    from pell.project import Project, file_identity, find_config, project_file

    config = find_config(start)
    inputs = [config.root] if config.root is not None else sorted(start.glob("*.pell"))
    project = project_of(inputs) if inputs else Project([], True, config)
    files = [f for f in project.files if file_identity(f.path) != file_identity(script_path)]
    return Project([*files, project_file(script_path, text)], True, config, project.complete)


def _compile_snippet(
    text: str,
    name: str,
    target: str,
    project: Project,
    path: Path,
    snippet: bool,
    around: tuple[str, str] = ("", ""),
) -> tuple[CompileResult, str]:
    """The script compiled, and the text compiled: `text` between `around`'s two parts (what
    a REPL keeps of earlier cells). A snippet that is one expression (no `;` or `}` at its
    end) is compiled as `let <value> = expression; println("{<value>}");` first (a value of
    any type the interpolation takes; a `println(x)` of a module's fn would take text only),
    and as written when the expression has no value (a call of a fn that returns nothing);
    when it has one, the errors of printing it are shown."""
    from pell import compile_source
    from pell.diagnostics import has_errors

    before, after = around
    stripped = text.rstrip()
    if snippet and stripped and not stripped.endswith((";", "}")):
        # the expression is what follows the last statement (`import a; a::f(1)`); the
        # line break before its `;` ends a `//` comment at its end
        start = _last_statement_end(stripped)
        head, expression = stripped[:start], stripped[start:].strip()
        kept = f"{before}{head}let {_SNIPPET_VALUE} = {expression}\n;"
        shown = f'{kept} println("{{{_SNIPPET_VALUE}}}");{after}'
        result = compile_source(shown, name, target, project.index, path)
        if result.sql is not None:
            return result, shown
        valued = compile_source(kept + after, name, target, project.index, path)
        if not has_errors(list(valued.diagnostics)):
            return result, shown  # it has a value, which cannot be printed: say why
        text = f"{head}{expression}\n;"
    whole = before + text + after
    return compile_source(whole, name, target, project.index, path), whole


# the local an expression snippet's value is printed from
_SNIPPET_VALUE = "snippet_value"


def _last_statement_end(text: str) -> int:
    """Where the text after its last top-level `;` or `}` starts (0 when it has none);
    strings and `//` comments skipped."""
    depth, index, end = 0, 0, 0
    while index < len(text):
        char = text[index]
        if char == '"':
            index += 1
            while index < len(text) and text[index] != '"':
                index += 2 if text[index] == "\\" else 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = len(text) if newline < 0 else newline
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if char == "}" and depth == 0:
                end = index + 1
        elif char == ";" and depth == 0:
            end = index + 1
        index += 1
    return end


# ---- PostgreSQL -----------------------------------------------------------------------------


def _connect_postgres(database: Database) -> Any:
    try:
        import psycopg
    except ImportError as error:
        raise _usage(f"PostgreSQL needs psycopg: {pip_install('psycopg[binary]>=3.1')}") from error
    try:
        return psycopg.connect(database.dsn, autocommit=True)
    except psycopg.Error as error:
        raise _usage(f"cannot connect to {database.shown}: {_first_line(error)}") from error


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def install_postgres(database: Database, out_dir: Path, result: Any, project: Project) -> bool:
    """Run pell_runtime.sql, then each module's script after the modules it imports, each
    only where it changed since it was installed (_install_changed; a changed record type is
    made again only where nothing outside its module uses it, else the deploy stops with an
    error naming what does). Each script is one transaction; the first failure is reported
    at the script's line and stops the rest."""
    from pell import report
    from pell.build import RUNTIME_FILE
    from pell.project import read_header

    # a script (no `module` line) is a block to run, not objects to create: not installed
    outcomes = [
        o for o in result.outcomes if o.source is None or read_header(o.source.text) is not None
    ]
    sources = {out_dir / o.unit.output: o.unit.path for o in outcomes}
    order = _import_order([o.unit.path for o in outcomes], project)
    scripts = [out_dir / RUNTIME_FILE] if (out_dir / RUNTIME_FILE).exists() else []
    by_source = {source: output for output, source in sources.items()}
    scripts += [by_source[p] for p in order if by_source[p].exists()]
    with _connect_postgres(database) as connection:
        import psycopg

        connection.execute("SET client_min_messages = warning")  # no "already exists" notices
        for script in scripts:
            try:
                with connection.transaction():
                    # one deploy at a time: two commands replacing the same function at once
                    # fail with "tuple concurrently updated" (parallel `pellc exec` runs)
                    connection.execute("SELECT pg_advisory_xact_lock(hashtext('pellc deploy'))")
                    _install_changed(connection, script.read_text("utf-8"))
            except psycopg.Error as error:
                # the script's line, said in the message; the Pell place of a function's line
                # through the module's source map, else the module's first line
                line = _statement_line(script.read_text("utf-8"), error)
                map_path = script.with_name(script.name + ".map.json")
                lines = json.loads(map_path.read_text("utf-8"))["lines"] if map_path.exists() else {}
                place = lines.get(str(line), [1, 1])
                shown = sources.get(script, script.relative_to(out_dir))
                message = f"{script.name} line {line}: {_postgres_message(error)}"
                said = report.located_error(shown, place[0], place[1], "error", message, "postgres")
                sys.stderr.write(said)
                return False
    return True


_SCHEMA = re.compile(r"^CREATE SCHEMA IF NOT EXISTS (\w+);", re.MULTILINE)

# what is installed, by schema: the SHA-256 of the script that made it
_DEPLOYED_TABLE = (
    "CREATE TABLE IF NOT EXISTS pell_runtime.deployed "
    "(schema_name text PRIMARY KEY, sha256 text NOT NULL)"
)


def _install_changed(connection: Any, script: str) -> None:
    """Run a module's (or the runtime's) script unless the same script is what made its
    schema, as pell_runtime.deployed says (read under the deploy lock, so a parallel run
    that installed it first is seen): a run of an unchanged module changes nothing that
    other sessions are running, and a `pellc exec` is not a redeploy."""
    found = _SCHEMA.search(script)
    schema = found.group(1) if found is not None else None
    digest = hashlib.sha256(script.encode("utf-8")).hexdigest()
    connection.execute("CREATE SCHEMA IF NOT EXISTS pell_runtime")
    connection.execute(_DEPLOYED_TABLE)
    if schema is not None:
        installed = connection.execute(
            "SELECT sha256 FROM pell_runtime.deployed d WHERE schema_name = %s "
            "AND to_regnamespace(schema_name) IS NOT NULL",
            [schema],
        ).fetchone()
        if installed is not None and installed[0] == digest and _all_made(connection, script):
            return
    _drop_changed_routines(connection, script)
    connection.execute(script)
    if schema is not None:
        connection.execute(
            "INSERT INTO pell_runtime.deployed VALUES (%s, %s) "
            "ON CONFLICT (schema_name) DO UPDATE SET sha256 = excluded.sha256",
            [schema, digest],
        )


_TYPE = re.compile(r"^\s*CREATE TYPE (\w+\.\w+) AS", re.MULTILINE)


def _all_made(connection: Any, script: str) -> bool:
    """Whether every routine and type the script makes is there: one dropped by hand (as a
    refused type change asks) makes the module's script run again."""
    routines = sorted({f"{m.group(2)}.{m.group(3)}".lower() for m in _ROUTINE.finditer(script)})
    types = sorted({m.group(1).lower() for m in _TYPE.finditer(script)})
    missing = connection.execute(
        "SELECT (SELECT count(*) FROM unnest(%s::text[]) AS r(name) WHERE NOT EXISTS ("
        "SELECT FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname || '.' || p.proname = r.name)) + "
        "(SELECT count(*) FROM unnest(%s::text[]) AS t(name) WHERE to_regtype(t.name) IS NULL)",
        [routines, types],
    ).fetchone()
    return missing is not None and missing[0] == 0


_ROUTINE = re.compile(
    r"^CREATE OR REPLACE (FUNCTION|PROCEDURE) (\w+)\.(\w+)\(", re.MULTILINE | re.IGNORECASE
)


def _drop_changed_routines(connection: Any, script: str) -> None:
    """Drop each routine of the script's names that is of the other kind: a fn is a FUNCTION or
    a PROCEDURE as its retry scope, its `transaction { }` blocks and its callees say, and
    CREATE OR REPLACE replaces no FUNCTION by a PROCEDURE of the same name and arguments, nor
    the other way round (42809 "cannot change routine kind"). No CASCADE: a view or default
    that uses the old one stops the deploy with PostgreSQL's own error."""
    made = {
        (m.group(2).lower(), m.group(3).lower()): "p" if m.group(1).upper() == "PROCEDURE" else "f"
        for m in _ROUTINE.finditer(script)
    }
    if not made:
        return
    found = connection.execute(
        "SELECT n.nspname, p.proname, p.prokind, p.oid::regprocedure::text FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ANY(%s)",
        [sorted({schema for schema, _ in made})],
    ).fetchall()
    for schema, name, kind, routine in found:
        if made.get((schema, name), kind) != kind:
            connection.execute(f"DROP ROUTINE {routine}")


def _import_order(paths: list[Path], project: Project) -> list[Path]:
    """`paths` with each after the ones of them it imports (in path order otherwise; a cycle
    is broken where it is met)."""
    from pell.project import file_identity

    chosen = {file_identity(p): p for p in paths}
    ordered: list[Path] = []
    seen: set[object] = set()

    def visit(path: Path) -> None:
        key = file_identity(path)
        if key in seen:
            return
        seen.add(key)
        for imported in project.imported_files(path):
            found = chosen.get(file_identity(imported.path))
            if found is not None:
                visit(found)
        ordered.append(path)

    for path in sorted(paths):
        visit(path)
    return ordered


def _statement_line(sql: str, error: Any) -> int:
    """The line of `sql` the error's position points at (1 when it has none)."""
    position = getattr(error.diag, "statement_position", None)
    if position is None:
        return 1
    return sql.count("\n", 0, max(int(position) - 1, 0)) + 1


def _postgres_message(error: Any) -> str:
    """A Pell error by its name and fields; any other error with its SQLSTATE."""
    message = error.diag.message_primary or _first_line(error)
    sqlstate = error.sqlstate or "?????"
    if sqlstate.startswith("PE"):
        return f"{pell_error(message)} (SQLSTATE {sqlstate})"
    return f"{message} (SQLSTATE {sqlstate})"


def pell_error(message: str) -> str:
    """`module.Name: {"f": 1}` (the message pellc raises a Pell error with) as
    `module.Name { f: 1 }`; any other message as it is."""
    name, colon, payload = message.partition(": ")
    if not colon:
        return message
    try:
        fields = json.loads(payload)
    except ValueError:
        return message
    if not isinstance(fields, dict):
        return message
    if not fields:
        return name
    shown = ", ".join(f"{key}: {json.dumps(value)}" for key, value in fields.items())
    return f"{name} {{ {shown} }}"


_INLINE_LINE = re.compile(r"PL/pgSQL function inline_code_block line (\d+)")
_FUNCTION = re.compile(r"PL/pgSQL function (\w+\.\w+)\([^)]*\) line (\d+)")
_CREATE_FUNCTION = re.compile(
    r"^CREATE OR REPLACE (?:FUNCTION|PROCEDURE) (\w+\.\w+)\(", re.MULTILINE | re.IGNORECASE
)


@record
class InstalledFunction:
    """A module's function as installed: where its Pell source is, the script line its
    `CREATE` is on, and the script's source map."""

    pell_path: Path
    create_line: int
    lines: dict[str, list[int]]


def installed_functions(out_dir: Path, outcomes: list[Any]) -> dict[str, InstalledFunction]:
    """The functions of the modules a build wrote to `out_dir`, by `schema.name`."""
    found: dict[str, InstalledFunction] = {}
    for outcome in outcomes:
        script = out_dir / outcome.unit.output
        map_path = script.with_name(script.name + ".map.json")
        if not (script.exists() and map_path.exists()):
            continue
        text = script.read_text("utf-8")
        lines = json.loads(map_path.read_text("utf-8")).get("lines", {})
        for match in _CREATE_FUNCTION.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found[match.group(1).lower()] = InstalledFunction(outcome.unit.path, line, lines)
    return found


def _run_postgres_script(
    database: Database,
    result: CompileResult,
    name: str,
    functions: dict[str, InstalledFunction] | None = None,
) -> int:
    import psycopg

    assert result.sql is not None
    with _connect_postgres(database) as connection:
        connection.add_notice_handler(lambda notice: _out(f"{notice.message_primary}\n"))
        try:
            connection.execute(result.sql)
        except psycopg.Error as error:
            context = error.diag.context or ""
            line, column = _pell_place_postgres(result, context)
            message = _postgres_message(error)
            called = _FUNCTION.search(context)  # the innermost frame: where it was raised
            if called is not None:
                message += f", raised in {_pell_fn(called.group(1))}"
            _error(name, line, column, message, "postgres")
            function = (functions or {}).get(called.group(1).lower()) if called else None
            if called is not None and function is not None:
                # PL/pgSQL counts a function's lines from the start of its body, the rest of
                # the `LANGUAGE plpgsql AS $pell$` line after the `CREATE` line
                place = _mapped_lines(function.lines, function.create_line + int(called.group(2)))
                if place is not None:
                    from pell import report

                    said = f"raised here, in {_pell_fn(called.group(1))}"
                    where = (_shown_path(function.pell_path), *place)
                    sys.stderr.write(report.located_error(*where, "note", said, "postgres"))
            return EXIT_ERRORS
    return EXIT_OK


def _pell_fn(routine: str) -> str:
    """`schema.fn` as the user wrote the fn: without the prefix of an @autonomous fn's body
    (`pell_autonomous_check`) or of a reserved word (`fn_add`, pell.naming.fn_name)."""
    from pell.naming import fn_name

    schema, _, name = routine.rpartition(".")
    if schema == "pell_runtime":
        return routine
    name = name.removeprefix("pell_autonomous_")
    if name.startswith("fn_") and fn_name(name[3:]) == name:
        name = name[3:]
    return f"{schema}.{name}"


def _pell_place_postgres(result: CompileResult, context: str) -> tuple[int, int]:
    """The Pell line and column of a DO block's error: its CONTEXT names the block's line
    (the last `inline_code_block line N`: the outermost frame, the script's own statement),
    counted from the block's first line, the rest of the `DO $pell$` line."""
    found = _INLINE_LINE.findall(context)
    assert result.sql is not None
    lines = result.sql.splitlines()
    do_line = next((i for i, text in enumerate(lines, 1) if text.startswith("DO ")), None)
    if not found or do_line is None:
        return 1, 1
    return _mapped(result, do_line + int(found[-1]) - 1)


def _mapped(result: CompileResult, sql_line: int) -> tuple[int, int]:
    """The Pell place of a line of the compiled SQL: its own, else that of the nearest
    mapped line above it (a continuation line)."""
    lines = (result.source_map or {}).get("lines", {})
    assert isinstance(lines, dict)
    return _mapped_lines(lines, sql_line) or (1, 1)


def _shown_path(path: Path) -> Path:
    """`path` relative to the current directory when it is under it."""
    try:
        return path.absolute().relative_to(Path.cwd())
    except ValueError:
        return path


def _mapped_lines(lines: dict[str, list[int]], sql_line: int) -> tuple[int, int] | None:
    for line in range(sql_line, 0, -1):
        place = lines.get(str(line))
        if place is not None:
            return int(place[0]), int(place[1])
    return None


# ---- Oracle ---------------------------------------------------------------------------------


def _connect_oracle(database: Database) -> Any:
    try:
        import oracledb
    except ImportError as error:
        raise _usage(f"Oracle needs python-oracledb: {pip_install('oracledb>=2')}") from error
    from pell.deploy import credentials

    try:
        return oracledb.connect(**credentials(database.dsn))
    except ValueError as error:
        raise _usage(str(error)) from error
    except oracledb.Error as error:
        raise _usage(f"cannot connect to {database.shown}: {_first_line(error)}") from error


def _install_oracle(database: Database, out_dir: Path, result: Any) -> bool:
    """As `pellc deploy` does: every spec, then every body, Oracle's compile errors reported
    at their Pell lines."""
    import oracledb

    from pell import deploy

    sources = {out_dir / o.unit.output: o.unit.path for o in result.outcomes}
    plan = []
    for path in deploy.deployment_order(out_dir):
        map_path = path.with_name(path.name + ".map.json")
        source_map = json.loads(map_path.read_text("utf-8")) if map_path.exists() else None
        script = deploy.Script(path, source_map, sources.get(path))
        plan.append((script, deploy.split_script(path.read_text("utf-8"))))
    failed = False
    with _connect_oracle(database) as connection, connection.cursor() as cursor:
        steps = deploy.deployment_steps(plan)
        for _, _, errors in deploy.run_scripts(cursor, steps, (oracledb.Error,)):
            for mapped in errors:
                _error(mapped.path, mapped.line, mapped.column, mapped.message, "oracle")
                failed = failed or mapped.severity == "error"
    return not failed


def _anonymous_block(sql: str) -> tuple[str, int]:
    """A script's block as Oracle is sent it (from its first line that is no comment to the
    line before its `/`), and the line of the script it starts on."""
    lines = sql.splitlines()
    first = next(i for i, text in enumerate(lines) if text.strip() and not text.startswith("--"))
    last = max(i for i, text in enumerate(lines) if text.strip() == "/")
    return "\n".join(lines[first:last]), first + 1


def _print_dbms_output(cursor: Any) -> None:
    """Every line DBMS_OUTPUT holds, read by DBMS_OUTPUT.GET_LINES 100 at a time: "numlines"
    is IN OUT, the lines asked for and those returned; fewer returned than asked means the
    buffer is empty (PL/SQL Packages and Types Reference, DBMS_OUTPUT, "GET_LINE and GET_LINES
    Procedures"). Not run here: no Oracle (tests/test_exec.py runs it with PELL_TEST_DSN)."""
    chunk = 100
    lines = cursor.arrayvar(str, chunk)
    count = cursor.var(int)
    while True:
        count.setvalue(0, chunk)
        cursor.callproc("dbms_output.get_lines", (lines, count))
        got = int(count.getvalue())
        for line in lines.getvalue()[:got]:
            _out(f"{line or ''}\n")
        if got < chunk:
            return


_ORA_AT_LINE = re.compile(r"ORA-06512: at line (\d+)")
_ORA_PELL = re.compile(r"ORA-(20\d\d\d): (.*)")


def _run_oracle_script(database: Database, result: CompileResult, name: str) -> int:
    """Run the script's block, then commit what it did, as the DO block on PostgreSQL is (it
    runs in autocommit); after a failure roll back what it left uncommitted, as PostgreSQL
    does: "If the statement raises an unhandled exception, the host environment determines
    what is rolled back" (PL/SQL Language Reference, ROLLBACK Statement, Usage Notes), and
    python-oracledb commits nothing unless told ("Managing Transactions"). What its
    `transaction { }` blocks committed stays on both."""
    import oracledb

    assert result.sql is not None
    block, first = _anonymous_block(result.sql)
    with _connect_oracle(database) as connection, connection.cursor() as cursor:
        # NULL: no limit on what it holds, what SQL*Plus's SET SERVEROUTPUT ON does (PL/SQL
        # Packages and Types Reference, DBMS_OUTPUT, "ENABLE Procedure")
        cursor.callproc("dbms_output.enable", (None,))
        try:
            cursor.execute(block)
        except oracledb.Error as error:
            _print_dbms_output(cursor)
            text = str(error)
            # the anonymous block's own line is the backtrace's last `at line N` (one with no
            # package name), taken as counted from the block's first line: not found in
            # Oracle's documentation nor run here (no Oracle); PELL_TEST_DSN's test checks it
            at = _ORA_AT_LINE.findall(text)
            line, column = _mapped(result, first + int(at[-1]) - 1) if at else (1, 1)
            own = _ORA_PELL.search(text)
            message = (
                f"{pell_error(own.group(2))} (ORA-{own.group(1)})" if own else _first_line(error)
            )
            _error(name, line, column, message, "oracle")
            connection.rollback()
            return EXIT_ERRORS
        _print_dbms_output(cursor)
        connection.commit()
    return EXIT_OK


# ---- pellc sql ------------------------------------------------------------------------------


def sql_command(args: argparse.Namespace) -> int:
    from pell.build import FileError, read_source
    from pell.project import find_config

    path: Path = args.file
    try:
        text = read_source(path).decode("utf-8")
    except FileError as error:
        raise _usage(str(error)) from error
    except UnicodeDecodeError as error:
        raise _usage(f"cannot read {path}: not UTF-8") from error
    with _database_errors():
        database = _choose(args, find_config(path.parent).target)
    statements = split_statements(text, database.kind)
    if database.kind == "postgres":
        return _sql_postgres(database, statements, path)
    return _sql_oracle(database, statements, path)


def _show_rows(cursor: Any) -> None:
    if cursor.description is None:
        return
    _out("\t".join(column.name for column in cursor.description) + "\n")
    for row in cursor.fetchall():
        _out("\t".join("" if value is None else str(value) for value in row) + "\n")


def _sql_postgres(database: Database, statements: list[tuple[str, int]], path: Path) -> int:
    import psycopg

    with _connect_postgres(database) as connection:
        connection.add_notice_handler(lambda notice: _out(f"{notice.message_primary}\n"))
        for statement, line in statements:
            try:
                cursor = connection.execute(statement)
                _show_rows(cursor)
            except psycopg.Error as error:
                at = line + _statement_line(statement, error) - 1
                _error(path, at, 1, _postgres_message(error), "postgres")
                return EXIT_ERRORS
    return EXIT_OK


def _sql_oracle(database: Database, statements: list[tuple[str, int]], path: Path) -> int:
    import oracledb

    with _connect_oracle(database) as connection, connection.cursor() as cursor:
        # each statement committed when it completes, as on PostgreSQL (docs/postgres.md): a
        # failure stops the script and keeps what the statements before it did, as SQL*Plus
        # would keep it, committed on exit (SQL*Plus User's Guide and Reference, SET
        # EXITCOMMIT). python-oracledb: with `autocommit` True, DML statements "are committed
        # as they are executed" (User Guide, "Managing Transactions")
        connection.autocommit = True
        cursor.callproc("dbms_output.enable", (None,))
        for statement, line in statements:
            try:
                cursor.execute(statement)
                if cursor.description is not None:
                    _out("\t".join(str(d[0]) for d in cursor.description) + "\n")
                    for row in cursor.fetchall():
                        _out("\t".join("" if v is None else str(v) for v in row) + "\n")
            except oracledb.Error as error:
                _print_dbms_output(cursor)
                _error(path, line, 1, _first_line(error), "oracle")
                return EXIT_ERRORS
            _print_dbms_output(cursor)
            # a PL/SQL unit created with compilation errors raises nothing: python-oracledb
            # puts DPY-7000 in Cursor.warning, "database warnings (such as PL/SQL compilation
            # warnings) ... generated during the last call to execute()"
            warning = getattr(cursor, "warning", None)
            if warning is not None:
                _oracle_compile_errors(cursor, statement, line, path, str(warning))
                return EXIT_ERRORS
    return EXIT_OK


# the unit a CREATE statement makes, as USER_ERRORS names it (its type, schema and name)
_ORACLE_UNIT = re.compile(
    r"\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:(?:NON)?EDITIONABLE\s+)?"
    r"(PACKAGE\s+BODY|PACKAGE|TYPE\s+BODY|TYPE|FUNCTION|PROCEDURE|TRIGGER)\s+"
    r"(?:(\w+)\.)?(\w+)",
    re.IGNORECASE,
)


def _oracle_compile_errors(
    cursor: Any, statement: str, line: int, path: Path, warning: str
) -> None:
    """The unit's USER_ERRORS rows at their lines of the script (as `pellc deploy` reads
    them, pell.deploy.fetch_errors), else the warning itself at the statement's line."""
    import oracledb

    from pell import deploy

    made = _ORACLE_UNIT.match(statement)
    errors: list[deploy.CompileError] = []
    if made is not None:
        kind = " ".join(made.group(1).upper().split())
        unit = deploy.Statement(statement, line, kind, made.group(3).upper(), made.group(2))
        with contextlib.suppress(oracledb.Error):
            errors = [e for e in deploy.fetch_errors(cursor, unit) if e.attribute == "ERROR"]
    for found in errors:
        at = line + found.line - 1
        _error(path, at, found.position or 1, f"{found.text} ({warning})", "oracle")
    if not errors:
        _error(path, line, 1, warning, "oracle")


# A PL/SQL unit: SQL*Plus sends it whole, up to a line holding only `/`
_PLSQL_UNIT = re.compile(
    r"(DECLARE|BEGIN|CREATE\s+(OR\s+REPLACE\s+)?((NON)?EDITIONABLE\s+)?"
    r"(FUNCTION|PROCEDURE|PACKAGE|TRIGGER|TYPE|LIBRARY))\b",
    re.IGNORECASE,
)
_SLASH_LINE = re.compile(r"^[ \t]*/[ \t]*$", re.MULTILINE)
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")


def split_statements(text: str, kind: str) -> list[tuple[str, int]]:
    """The statements of a SQL script, each with the line it starts on. PostgreSQL: each
    ends at a `;` outside quotes ('', E'', "", $tag$ ... $tag$) and comments (`--`,
    nested `/* */`). Oracle: likewise (q'[...]' quotes, no dollar quotes), except that a PL/SQL
    block or unit ends at a line holding only `/`, and is sent with its last `;`. SQL*Plus's
    `/` "Executes the most recently executed SQL command or PL/SQL block which is stored in the
    SQL buffer" (SQL*Plus User's Guide and Reference, "/ (slash)"): after a statement ended by
    `;` it would run that statement again; here it runs nothing (a script's stray `/` after a
    CREATE TABLE would fail on the second run)."""
    statements: list[tuple[str, int]] = []
    index, line, size = 0, 1, len(text)
    start: int | None = None  # where the current statement begins
    start_line = 1
    oracle = kind != "postgres"

    def close(end: int) -> None:
        nonlocal start
        if start is not None:
            body = text[start:end].strip()
            if body:
                statements.append((body, start_line))
        start = None

    while index < size:
        char = text[index]
        at_line_start = index == 0 or text[index - 1] == "\n"
        if oracle and at_line_start:
            end_of_line = text.find("\n", index)
            end_of_line = size if end_of_line < 0 else end_of_line
            if text[index:end_of_line].strip() == "/":
                close(index)
                index = end_of_line
                continue
        if char == "\n":
            line += 1
            index += 1
            continue
        if char.isspace():
            index += 1
            continue
        if text.startswith("--", index):
            end = text.find("\n", index)
            index = size if end < 0 else end
            continue
        if text.startswith("/*", index):
            index, line = _skip_comment(text, index, line, nested=not oracle)
            continue
        if start is None:
            start, start_line = index, line
            if oracle and _PLSQL_UNIT.match(text, index):
                # to the `/` line: its `;`s are the unit's
                slash = _SLASH_LINE.search(text, index)
                stop = size if slash is None else slash.start()
                line += text.count("\n", index, stop)
                index = stop
                close(stop)
                continue
        if char == ";":
            close(index)
            index += 1
            continue
        index, line = _skip_token(text, index, line, oracle)
    close(size)
    return statements


def _skip_comment(text: str, index: int, line: int, nested: bool) -> tuple[int, int]:
    """Past a `/* */` comment: nested on PostgreSQL ("block comments nest, as specified in
    the SQL standard", 4.1.5 Comments); not on Oracle: "one multiline comment cannot contain
    another multiline comment" (PL/SQL Language Reference, "Comment")."""
    depth, index = 1, index + 2
    while index < len(text) and depth:
        if text.startswith("*/", index):
            depth -= 1
            index += 2
        elif nested and text.startswith("/*", index):
            depth += 1
            index += 2
        else:
            line += text[index] == "\n"
            index += 1
    return index, line


def _skip_token(text: str, index: int, line: int, oracle: bool) -> tuple[int, int]:
    """Past one quoted string, quoted identifier, dollar-quoted text or character."""
    char = text[index]
    quote_start = index + 1 if char in "nN" else index  # nq'...' as q'...'
    if oracle and text[quote_start : quote_start + 2].lower() == "q'":
        index = quote_start
        opener = text[index + 2 : index + 3]
        closer = {"[": "]", "{": "}", "(": ")", "<": ">"}.get(opener, opener)
        end = text.find(closer + "'", index + 3)
        stop = len(text) if end < 0 else end + 2
        return stop, line + text.count("\n", index, stop)
    if char in "'\"":
        escapes = (
            not oracle and char == "'" and index > 0 and text[index - 1] in "eE"
        )  # E'...': backslash escapes (4.1.2.2)
        position = index + 1
        while position < len(text):
            if escapes and text[position] == "\\":
                position += 2
                continue
            if text[position] == char:
                if text[position + 1 : position + 2] == char:  # '' inside: one quote
                    position += 2
                    continue
                break
            position += 1
        stop = min(position + 1, len(text))
        return stop, line + text.count("\n", index, stop)
    if not oracle and char == "$" and (index == 0 or not _identifier_char(text[index - 1])):
        tag = _DOLLAR_TAG.match(text, index)
        if tag is not None:
            end = text.find(tag.group(0), tag.end())
            stop = len(text) if end < 0 else end + len(tag.group(0))
            return stop, line + text.count("\n", index, stop)
    return index + 1, line


def _identifier_char(char: str) -> bool:
    return char.isalnum() or char in "_$"


# ---- pellc db -------------------------------------------------------------------------------


def db_command(args: argparse.Namespace) -> int:
    from pell import database

    data = database.data_dir()
    with _database_errors():
        if args.action == "stop":
            stopped = database.stop(data)
            _out(f"stopped ({data})\n" if stopped else f"not running ({data})\n")
        elif args.action == "reset":
            removed = database.reset(data)
            _out(f"removed {data}\n" if removed else f"nothing to remove ({data})\n")
        else:
            _status(data)
    return EXIT_OK


def _status(data: Path) -> None:
    from pell import database

    state = database.running(data)
    version = database.version(data)
    if state is None:
        made = (
            f"version {version}" if version else "none yet: the next command that needs it makes it"
        )
        _out(f"running: no\ndata: {data} ({made})\n")
        return
    shown = version or "unknown"
    with contextlib.suppress(Exception):  # the version the server says, when it answers
        import psycopg

        with psycopg.connect(database.url(state), autocommit=True) as connection:
            row = connection.execute("SHOW server_version").fetchone()
            shown = str(row[0]) if row else shown
    _out(
        f"running: yes (pid {state.pid})\nport: {state.port} (unix socket in "
        f"{state.socket_dir})\ndata: {data}\nversion: {shown}\n"
    )


# ---- pellc deploy --target postgres ---------------------------------------------------------


def deploy_postgres(args: argparse.Namespace, build: Callable[..., Any]) -> int:
    """`pellc deploy --target postgres`: build every module under the inputs, then install the
    runtime and each module (install_postgres) into --dsn, $PELL_DB_URL or the embedded
    server. `build` is cli._run_build."""
    import tempfile

    from pell import report
    from pell.build import project_of
    from pell.database import choose

    with _database_errors():
        dsn = (
            args.dsn if args.dsn and args.dsn.startswith(("postgresql://", "postgres://")) else None
        )
        if args.dsn and dsn is None:
            raise DatabaseError("the postgres target needs a postgresql:// URL as --dsn")
        database = None if args.dry_run else choose(dsn, "postgres", "postgres")
    with tempfile.TemporaryDirectory(prefix="pellc-deploy-") as name:
        out_dir = Path(name)
        result = build(args, out_dir, check_only=False, source_maps=True)
        if result.failed or result.runtime == "failed" or result.file_errors:
            sys.stderr.write(report.note("nothing deployed: fix the errors first"))
            return EXIT_USAGE if result.file_errors else EXIT_ERRORS
        if database is None:
            _out(report.note("deploy to postgres (dry run: nothing is sent)"))
            return EXIT_OK
        project = project_of(args.files)
        if not install_postgres(database, out_dir, result, project):
            return EXIT_ERRORS
        count = sum(1 for o in result.outcomes if (out_dir / o.unit.output).exists())
        _out(report.note(f"deployed {count} module(s) to {database.shown}"))
    return EXIT_OK
