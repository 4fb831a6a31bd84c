"""The `pellc` command line: argument parsing, files and exit codes; the work is in pell/."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
ISSUES_URL = "https://github.com/pellc/pellc/issues"


class UsageError(Exception):
    """Bad arguments or an unreadable input: exit code 2."""


def _parser() -> argparse.ArgumentParser:
    from pell import __version__
    from pell.naming import TARGETS

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--target",
        choices=TARGETS,
        default="23ai",
        help="Oracle version to generate for (default 23ai)",
    )
    common.add_argument(
        "--pretty", action="store_true", help="show the source line and hints under each diagnostic"
    )
    parser = argparse.ArgumentParser(
        prog="pellc", description="Compile Pell modules to Oracle PL/SQL packages."
    )
    parser.add_argument("--version", action="version", version=f"pellc {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build = commands.add_parser(
        "build",
        parents=[common],
        help="compile .pell files to .sql",
        description="Compile .pell files to .sql.",
    )
    build.add_argument("files", nargs="+", metavar="FILE|DIR", type=Path)
    build.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 listing every output that is missing or stale",
    )
    build.add_argument(
        "--map", action="store_true", help="also write NAME.sql.map.json (SQL line -> Pell line)"
    )
    output = build.add_mutually_exclusive_group()
    output.add_argument(
        "-o", "--output", type=Path, metavar="OUT.sql", help="write the SQL here (one FILE)"
    )
    output.add_argument(
        "-d", "--out-dir", type=Path, metavar="OUTDIR", help="write NAME.sql for each FILE here"
    )
    runtime = commands.add_parser(
        "runtime",
        help="write the pell_runtime package for every error of a project",
        description="Write the pell_runtime package: one exception and code per Pell error "
        "found in the .pell files under each DIR (codes numbered by module name, then "
        "declaration order).",
    )
    runtime.add_argument("dirs", nargs="+", metavar="DIR", type=Path)
    runtime.add_argument("-o", "--output", type=Path, metavar="FILE.sql", help="write it here")
    runtime.add_argument(
        "--pretty", action="store_true", help="show source lines under diagnostics"
    )
    explain = commands.add_parser(
        "explain",
        parents=[common],
        help="show what each @retry fn does: attempts, sleeps, scope, retried errors",
        description="For each retried fn: the attempts with the min/max sleep before each, "
        "the worst-case total sleep, the scope, and which errors are retried.",
    )
    explain.add_argument("file", metavar="FILE", type=Path)
    explain.add_argument("fn", nargs="?", metavar="FN", help="only this fn")
    explain.add_argument("--json", action="store_true", help="JSON for tools")
    deploy = commands.add_parser(
        "deploy",
        parents=[common],
        help="compile and install into Oracle; compile errors reported at their .pell line",
        description="Compile every module under the inputs, then run pell_runtime and each "
        "module's spec and body against Oracle (python-oracledb, thin mode), reporting "
        "USER_ERRORS through the source maps.",
    )
    deploy.add_argument("files", nargs="+", metavar="FILE|DIR", type=Path)
    deploy.add_argument(
        "--dsn", help="user/password@host:port/service (default: $PELL_DSN); never printed whole"
    )
    deploy.add_argument("--dry-run", action="store_true", help="print the plan; do not connect")
    check = commands.add_parser(
        "check",
        parents=[common],
        help="report diagnostics only",
        description="Report diagnostics; write nothing.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", type=Path)
    return parser


def _read_source(path: Path, pretty: bool) -> str | None:
    """The file's text; None, after printing an `encoding` diagnostic, when it is not UTF-8."""
    from pell import decode_source
    from pell.diagnostics import render_all

    try:
        data = path.read_bytes()
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from error
    text, failure = decode_source(data, str(path))
    if failure is not None:
        sys.stderr.write(render_all(failure.diagnostics, failure.source, pretty))
    return text


def _compile_file(path: Path, target: str, pretty: bool) -> str | None:
    """Compile one file, print its diagnostics; the SQL, or None when it has errors."""
    from pell import compile_source
    from pell.diagnostics import SourceFile, render_all

    text = _read_source(path, pretty)
    if text is None:
        return None
    try:
        result = compile_source(text, path.name, target)
    except Exception as error:
        raise InternalError(path, error) from error
    shown = SourceFile(str(path), text)
    sys.stderr.write(render_all(result.diagnostics, shown, pretty))
    return result.sql


class InternalError(Exception):
    def __init__(self, path: Path, error: Exception) -> None:
        super().__init__(str(error))
        self.path = path
        self.error = error

    def describe(self) -> str:
        package = Path(__file__).resolve().parent
        frames = traceback.extract_tb(self.error.__traceback__)
        where = next(
            (
                f"{Path(f.filename).resolve().relative_to(package.parent).as_posix()}:{f.lineno}"
                for f in reversed(frames)
                if Path(f.filename).resolve().is_relative_to(package)
            ),
            "unknown",
        )
        return (
            f"{self.path}: internal compiler error: {type(self.error).__name__} at {where}: "
            f"{self.error}\nThis is a bug in pellc; please report it with the file at {ISSUES_URL}"
        )


def _build(args: argparse.Namespace) -> int:
    from pell.build import write_atomically

    files: list[Path] = args.files
    if len(files) > 1 and args.output is not None:
        raise UsageError("-o names one output file; use -d OUTDIR for several inputs")
    tree = args.check or args.map or any(path.is_dir() for path in files)
    if tree or args.out_dir is not None:
        if args.out_dir is None:
            raise UsageError("directory builds, --check and --map need -d OUTDIR")
        for path in files:
            if not path.exists():
                raise UsageError(f"cannot read {path}: No such file or directory")
        return _build_tree(args)
    failed = False
    for path in files:
        sql = _compile_file(path, args.target, args.pretty)
        if sql is None:
            failed = True
            continue
        if args.output is not None:
            write_atomically(args.output, sql)
        elif args.out_dir is not None:
            write_atomically(args.out_dir / (path.stem + ".sql"), sql)
        else:
            sys.stdout.write(sql)
    return EXIT_ERRORS if failed else EXIT_OK


def _build_tree(args: argparse.Namespace) -> int:
    from pell.build import SourceUnit, build_tree

    terminal = sys.stderr.isatty()
    current: list[Path] = [Path(".")]

    def progress(index: int, total: int, unit: SourceUnit) -> None:
        current[0] = unit.path
        if terminal and total > 20:
            sys.stderr.write(f"\r\x1b[Kbuilding {index}/{total} {unit.path}")
            sys.stderr.flush()

    try:
        result = build_tree(args.files, args.out_dir, args.target, args.check, args.map, progress)
    except Exception as error:
        raise InternalError(current[0], error) from error
    if terminal and len(result.outcomes) > 20:
        sys.stderr.write("\r\x1b[K")
    sys.stderr.write(result.rendered_diagnostics(args.pretty))
    if args.check:
        problems = [
            (o.status, args.out_dir / o.unit.output)
            for o in result.outcomes
            if o.status in ("missing", "stale")
        ]
        if result.runtime in ("missing", "stale"):
            problems.append((result.runtime, args.out_dir / "pell_runtime.sql"))
        for status, path in problems:
            sys.stderr.write(f"{path}: {status}\n")
        fresh = len(result.outcomes) - len(problems) - result.count("failed")
        sys.stderr.write(
            f"checked {len(result.outcomes)}: fresh {fresh}, stale or missing {len(problems)}, "
            f"failed {result.count('failed')}\n"
        )
        return EXIT_ERRORS if problems or result.failed else EXIT_OK
    if result.runtime_problem is not None:
        path = args.out_dir / "pell_runtime.sql"
        sys.stderr.write(f"{path}: error: {result.runtime_problem}  [too-many-errors]\n")
    sys.stderr.write(result.summary() + "\n")
    return EXIT_ERRORS if result.failed or result.runtime == "failed" else EXIT_OK


def _check(args: argparse.Namespace) -> int:
    from pell import CompileResult, compile_source
    from pell.checker.retry_safety import project_findings
    from pell.diagnostics import SourceFile, has_errors, render_all

    failed = False
    compiled: list[tuple[Path, str, CompileResult]] = []
    for path in args.files:
        text = _read_source(path, args.pretty)
        if text is None:
            failed = True
            continue
        try:
            compiled.append((path, text, compile_source(text, path.name, args.target)))
        except Exception as error:
            raise InternalError(path, error) from error
    # The files checked together are one build: the retry checks follow calls between them.
    facts = [result.retry_facts for _, _, result in compiled if result.retry_facts is not None]
    across = project_findings(facts) if len(facts) > 1 else {}
    for path, text, result in compiled:
        diagnostics = list(result.diagnostics)
        if result.retry_facts is not None:
            diagnostics += across.get(result.retry_facts.name, [])
        sys.stderr.write(render_all(diagnostics, SourceFile(str(path), text), args.pretty))
        failed = failed or has_errors(diagnostics)
    return EXIT_ERRORS if failed else EXIT_OK


def _runtime(args: argparse.Namespace) -> int:
    from pell import __version__, parse
    from pell.ast import Module
    from pell.diagnostics import Diagnostic, SourceFile, has_errors, render_all
    from pell.runtime import number_errors, runtime_sql

    files: list[Path] = []
    for directory in args.dirs:
        if not directory.is_dir():
            raise UsageError(f"{directory} is not a directory")
        files += sorted(directory.rglob("*.pell"))
    modules: list[Module] = []
    sources: dict[str, tuple[SourceFile, Module]] = {}
    failed = False
    for path in files:
        text = _read_source(path, args.pretty)
        if text is None:
            failed = True
            continue
        source = SourceFile(str(path), text)
        module, diagnostics = parse(text)
        if module is not None and module.dotted_name in sources:
            first_source, first = sources[module.dotted_name]
            line, col = first_source.line_col(first.span.start)
            diagnostics.append(
                Diagnostic.of(
                    "duplicate-name",
                    f"module `{module.dotted_name}` is also declared at "
                    f"{first_source.name}:{line}:{col}; error codes would clash",
                    module.span,
                )
            )
        sys.stderr.write(render_all(diagnostics, source, args.pretty))
        if module is None or has_errors(diagnostics):
            failed = True
            continue
        modules.append(module)
        sources[module.dotted_name] = (source, module)
    numbered, overflows = number_errors(modules)
    for overflow in overflows:
        module_name, decl = overflow.first_extra
        source = sources[module_name][0]
        diagnostic = Diagnostic.of(
            "too-many-errors",
            f"the project declares {overflow.count} {overflow.category} errors; their code "
            f"range holds {overflow.capacity}",
            decl.span,
        )
        sys.stderr.write(render_all([diagnostic], source, args.pretty))
        failed = True
    if failed:
        return EXIT_ERRORS
    from pell.build import write_atomically

    sql = runtime_sql(numbered, __version__)
    if args.output is not None:
        write_atomically(args.output, sql)
    else:
        sys.stdout.write(sql)
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    import json

    from pell import check, parse
    from pell.diagnostics import SourceFile, has_errors, render_all
    from pell.explain import explain, render_json, render_text

    path: Path = args.file
    text = _read_source(path, args.pretty)
    if text is None:
        return EXIT_ERRORS
    source = SourceFile(str(path), text)
    module, diagnostics = parse(text)
    if module is not None:
        checked, more = check(module, args.target)
        diagnostics += more
    if module is None or has_errors(diagnostics):
        sys.stderr.write(render_all(diagnostics, source, args.pretty))
        return EXIT_ERRORS
    explanations = explain(checked, source, args.target)
    if args.fn is not None:
        explanations = [e for e in explanations if e.fn == args.fn]
        if not explanations:
            raise UsageError(f"{path} has no fn `{args.fn}` with @retry")
    if args.json:
        sys.stdout.write(json.dumps(render_json(explanations, checked), indent=2) + "\n")
    else:
        sys.stdout.write(render_text(explanations, checked, str(path)))
    return EXIT_OK


def _deploy(args: argparse.Namespace) -> int:
    import os
    import tempfile

    from pell import deploy
    from pell.build import build_tree

    dsn = args.dsn or os.environ.get("PELL_DSN")
    if not dsn and not args.dry_run:
        raise UsageError("no database: give --dsn or set PELL_DSN")
    for path in args.files:
        if not path.exists():
            raise UsageError(f"cannot read {path}: No such file or directory")
    with tempfile.TemporaryDirectory(prefix="pellc-deploy-") as temporary:
        out_dir = Path(temporary)
        result = build_tree(args.files, out_dir, args.target, source_maps=True)
        sys.stderr.write(result.rendered_diagnostics(args.pretty))
        if result.failed or result.runtime == "failed":
            sys.stderr.write("nothing deployed: fix the compile errors first\n")
            return EXIT_ERRORS
        sources = {out_dir / o.unit.output: o.unit.path for o in result.outcomes}
        scripts = []
        for path in deploy.deployment_order(out_dir):
            map_path = path.with_name(path.name + ".map.json")
            source_map = json.loads(map_path.read_text("utf-8")) if map_path.exists() else None
            scripts.append(deploy.Script(path, source_map, sources.get(path)))
        where = deploy.redact(dsn) if dsn else "(no database given)"
        if args.dry_run:
            sys.stdout.write(f"deploy to {where} (dry run: nothing is sent)\n")
            for number, script in enumerate(scripts, start=1):
                objects = ", ".join(
                    f"{s.object_type} {s.object_name}"
                    for s in deploy.split_script(script.path.read_text("utf-8"))
                )
                sys.stdout.write(f"  {number}. {script.path.relative_to(out_dir)}: {objects}\n")
            return EXIT_OK
        try:
            import oracledb
        except ImportError as error:
            raise UsageError("deploy needs python-oracledb: pip install 'pellc[oracle]'") from error
        assert dsn is not None
        try:
            connection = oracledb.connect(**deploy.credentials(dsn))
        except ValueError as error:
            raise UsageError(str(error)) from error
        except oracledb.Error as error:
            sys.stderr.write(f"pellc: cannot connect to {where}: {str(error).splitlines()[0]}\n")
            return EXIT_ERRORS
        failed = False
        with connection, connection.cursor() as cursor:
            for script, statement, errors in deploy.run_scripts(cursor, scripts):
                label = f"{statement.object_type} {statement.object_name}"
                sys.stdout.write(
                    f"{script.path.relative_to(out_dir)}: {label}: {'FAILED' if errors else 'ok'}\n"
                )
                for line in errors:
                    sys.stderr.write(line + "\n")
                    failed = failed or ": error: " in line
        return EXIT_ERRORS if failed else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Run pellc; returns the exit code (0 ok, 1 compile errors, 2 usage, 3 internal error)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        if args.command == "build":
            return _build(args)
        if args.command == "runtime":
            return _runtime(args)
        if args.command == "explain":
            return _explain(args)
        if args.command == "deploy":
            return _deploy(args)
        return _check(args)
    except UsageError as error:
        sys.stderr.write(f"pellc: error: {error}\n")
        return EXIT_USAGE
    except InternalError as error:
        sys.stderr.write(error.describe() + "\n")
        return EXIT_INTERNAL


def entry_point() -> None:
    sys.exit(main())
