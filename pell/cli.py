"""The `pellc` command line: argument parsing, files and exit codes; the work is in pell/."""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from pell.records import replace
from pell.resources import pip_install

if TYPE_CHECKING:
    from pell import CompileResult
    from pell.build import BuildResult
    from pell.engine import Engine

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_STDOUT_CLOSED = 141  # 128 + SIGPIPE: what a shell reports for a tool whose pipe was closed
ISSUES_URL = "https://github.com/pellc/pellc/issues"
EXIT_CODES = """\
exit codes:
  0    success (warnings allowed)
  1    compile errors; with build --check, an output missing or stale
  2    usage and file errors, each said as `pellc: error: ...`: bad arguments, inputs
       with no .pell file, an input file not named .pell, a file that cannot be read
       or written (a directory build still builds the rest)
  3    internal compiler error: a bug in pellc, please report it
  141  standard output was closed early (`pellc build x.pell | head`): pellc stops quietly
"""


class UsageError(Exception):
    """Bad arguments, or a standard output that cannot be written: exit code 2. (Files that
    cannot be read or written are pell.build.FileError, said and counted the same way.)"""


class StdoutClosed(Exception):
    """The reader of standard output went away (`| head`): stop quietly."""


def _stdout(text: str) -> None:
    try:
        _write_whole(sys.stdout, text)
    except BrokenPipeError as error:
        raise StdoutClosed from error
    except UnicodeEncodeError as error:  # PYTHONIOENCODING=ascii, LANG=C on an old Python
        raise UsageError(
            f"standard output ({error.encoding}) cannot encode U+{ord(error.object[error.start]):04X}: "
            "write to a file with -o, or set PYTHONIOENCODING=utf-8"
        ) from error
    except OSError as error:
        raise UsageError(f"cannot write standard output: {error.strerror or error}") from error


def _write_whole(stream: TextIO, text: str) -> None:
    """`stream.write(text)`, all of it or an error. Under PYTHONUNBUFFERED (python -u) the
    standard output's text layer writes straight to the unbuffered file and ignores a short
    count: when the reader of a pipe goes away during a large write (`| head -1`), the kernel
    writes part, the rest is dropped without an error, and pellc would exit 0. Through the raw
    file, the next write after a short one fails with EPIPE: BrokenPipeError, exit 141."""
    raw = getattr(stream, "buffer", None)
    if not isinstance(raw, io.RawIOBase):
        stream.write(text)  # a buffered writer writes all or raises; a test's capture
        return
    stream.flush()
    # what the text layer does: its encoding, and "\n" as os.linesep (Windows' "\r\n")
    encoded = text.replace("\n", os.linesep).encode(stream.encoding, stream.errors or "strict")
    data = memoryview(encoded)
    while data:
        written = raw.write(data)  # None: a non-blocking file that is full; try again
        data = data[written or 0 :]


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError as error:
        raise StdoutClosed from error
    except OSError as error:
        raise UsageError(f"cannot write standard output: {error.strerror or error}") from error


def _report(error: Exception) -> None:
    """`pellc: error: ...`, or an error line under --format json (pell.report)."""
    from pell import report
    from pell.build import FileError

    path = getattr(error, "path", None)
    category = "file" if isinstance(error, FileError) else "usage"
    sys.stderr.write(report.error(str(error), category, path or None))


def _note(path: Path, message: str) -> None:
    """A note about a file that is no diagnostic of its source: `path: message`, or a note
    line under --format json."""
    from pell import report

    sys.stderr.write(report.note(message, path))


# check and verify say how far they are once a run has taken this long (seconds)
PROGRESS_AFTER = 1.0


class _Progress:
    """`checked 120/401 modules` on stderr, redrawn in place, once the run has taken longer than
    PROGRESS_AFTER: only on a terminal (a log or a tool reading stderr gets diagnostics only)
    and not under --format json (nothing but JSON lines). Each line is drawn with the cursor
    left at its start, so a diagnostic printed meanwhile writes over it."""

    def __init__(self) -> None:
        from pell.diagnostics import output_format

        self.started = time.monotonic()
        self.shown = False
        self.enabled = sys.stderr.isatty() and output_format.get() != "json"

    def step(self, verb: str, done: int, total: int, noun: str) -> None:
        if self.enabled and time.monotonic() - self.started > PROGRESS_AFTER:
            sys.stderr.write(f"\x1b[K{verb} {done}/{total} {noun}\r")
            sys.stderr.flush()
            self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\x1b[K")
            self.shown = False


def _apply_settings(args: argparse.Namespace) -> None:
    """The project's `target` when `--target` is not given (the project of the first input:
    `[tool.pellc]` or pell.toml at or above it)."""
    from pell.project import find_config

    args.target_given = getattr(args, "target", None) is not None  # watch, _deploy_target
    if getattr(args, "target", "") is None:
        inputs = (
            getattr(args, "files", None)
            or getattr(args, "dirs", None)
            or [getattr(args, "file", Path("."))]
        )
        args.target = find_config(inputs[0]).target or "23ai"


def _refuse_non_pell_inputs(args: argparse.Namespace) -> None:
    """A `.sql` (or any file not named `.pell`) given as an input is a usage error, said in one
    line before anything is read or written: it would otherwise be read as a Pell script."""
    from pell.build import refuse_non_pell

    if args.command == "sql":  # its input is a SQL script
        return
    inputs = getattr(args, "files", None) or [getattr(args, "file", None)]
    refuse_non_pell([path for path in inputs if path is not None])


def _exit_code(file_errors: bool, failed: bool) -> int:
    return EXIT_USAGE if file_errors else EXIT_ERRORS if failed else EXIT_OK


def _jobs(value: str) -> int:
    """-j's N: a whole number, 1 or more."""
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of 1 or more, not {value!r}")
    return jobs


class _Parser(argparse.ArgumentParser):
    """argparse, whose usage errors are an error line when the arguments ask for
    `--format json` (_requested_format); its subcommand parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        from pell import report

        if report.is_json():
            sys.stderr.write(report.error(f"{self.prog}: {message}", "usage"))
            self.exit(EXIT_USAGE)
        super().error(message)


def _requested_format(argv: Sequence[str]) -> str:
    """The output format the arguments name, read before argparse so that its usage errors
    follow it: the last `--format json|text` or `--format=...` before any `--` (argparse's
    abbreviations such as `--form` are not recognised here: such a run's usage errors are
    text)."""
    requested = "text"
    for index, arg in enumerate(argv):
        if arg == "--":
            break
        value = argv[index + 1] if arg == "--format" and index + 1 < len(argv) else None
        if arg.startswith("--format="):
            value = arg.removeprefix("--format=")
        if value in ("text", "json"):
            requested = value
    return requested


def _parser() -> argparse.ArgumentParser:
    from pell import __version__
    from pell.naming import TARGETS

    common = _Parser(add_help=False)
    common.add_argument(
        "--target",
        choices=TARGETS,
        default=None,
        help="Oracle version, or postgres, to generate for (default: the project's `target`, "
        "else 23ai)",
    )
    common.add_argument(
        "--pretty", action="store_true", help="show the source line and hints under each diagnostic"
    )
    common.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="diagnostics and reports as text, or as JSON objects, one per line, on stdout and "
        "stderr alike (docs/json.md)",
    )
    parser = _Parser(
        prog="pellc",
        description="Compile Pell modules to Oracle PL/SQL packages.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        help="write nothing; exit 1 listing every output that is missing or stale, and the "
        "outputs of deleted modules and temporary files a build would remove",
    )
    build.add_argument(
        "--map", action="store_true", help="also write NAME.sql.map.json (SQL line -> Pell line)"
    )
    build.add_argument(
        "-j",
        "--jobs",
        type=_jobs,
        default=None,
        metavar="N",
        help="directory builds: compile N modules at once, in N processes; the outputs are "
        "those of -j 1 (default: the number of cores)",
    )
    build.add_argument(
        "--watch",
        action="store_true",
        help="directory builds: build, then build again on every save, one line each (what "
        "changed, modules compiled again, outputs written, the time), until Ctrl-C; needs "
        "watchfiles (the extra `watch`)",
    )
    output = build.add_mutually_exclusive_group()
    output.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="OUT.sql",
        help="write the SQL here (one FILE; `-`: standard output)",
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
        "--target",
        choices=TARGETS,
        default=None,
        help="Oracle version, or postgres (default: the project's `target`, else 23ai)",
    )
    runtime.add_argument(
        "--pretty", action="store_true", help="show source lines under diagnostics"
    )
    runtime.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="diagnostics and reports as text or JSON lines (docs/json.md)",
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
        help="compile and install into Oracle (or PostgreSQL: --target postgres); compile "
        "errors reported at their .pell line",
        description="Compile every module under the inputs, then run pell_runtime and each "
        "module's spec and body against Oracle (python-oracledb, thin mode), reporting "
        "USER_ERRORS through the source maps.",
    )
    deploy.add_argument("files", nargs="+", metavar="FILE|DIR", type=Path)
    deploy.add_argument(
        "--dsn",
        help="user/password@host:port/service (default: $PELL_DSN, else $PELL_DB_URL); never "
        "printed whole. A postgresql:// URL deploys to PostgreSQL (--target postgres; with no "
        "URL: the embedded server, `pellc db`)",
    )
    deploy.add_argument("--dry-run", action="store_true", help="print the plan; do not connect")
    check = commands.add_parser(
        "check",
        parents=[common],
        help="report diagnostics only",
        description="Report diagnostics; write nothing.",
    )
    check.add_argument("files", nargs="+", metavar="FILE|DIR", type=Path)
    check.add_argument(
        "--no-verify",
        action="store_true",
        help="skip `pellc verify`'s fault schedules (they run when every file compiles)",
    )
    verify = commands.add_parser(
        "verify",
        parents=[common],
        help="run each @retry fn, and each fn that calls one, under injected faults",
        description="Compile the modules together, then run every @retry fn and every fn "
        "that calls one against a model of Oracle transactions, failing each statement and "
        "call on each attempt with each kind of error its policy tells apart "
        "(docs/verify.md). Prints the schedules explored per fn and each finding with the "
        "schedule that shows it; exit 1 on an error finding.",
    )
    verify.add_argument("files", nargs="+", metavar="FILE|DIR", type=Path)
    lsp = commands.add_parser(
        "lsp",
        help="run the language server (LSP over stdio) for editors",
        description="Serve the Language Server Protocol on standard input and output: "
        "diagnostics as you type, hover, go to definition, references, symbols, completion "
        "and quick fixes (docs/editors.md). Needs pygls (the extra `lsp`). The "
        "project's `target` setting decides the target.",
    )
    # editors' generic clients often start a server with `--stdio`: the only transport here
    lsp.add_argument("--stdio", action="store_true", help="accepted; stdio is the default")
    lsp.set_defaults(format="text")  # its diagnostics go to the editor, not to stderr
    from pell.run import add_parsers

    add_parsers(commands, TARGETS)  # exec, sql, db, repl
    return parser


def _read_source(path: Path, pretty: bool) -> str | None:
    """The file's text; None, after printing an `encoding` diagnostic, when it is not UTF-8.
    FileError (exit 2) when it cannot be read."""
    from pell import decode_source
    from pell.build import read_source
    from pell.diagnostics import render_all

    text, failure = decode_source(read_source(path), str(path))
    if failure is not None:
        sys.stderr.write(render_all(failure.diagnostics, failure.source, pretty))
    return text


class InternalError(Exception):
    """A compiler bug (exit 3), with the file being compiled when it happened, if known."""

    def __init__(self, path: Path | None, error: Exception) -> None:
        super().__init__(str(error))
        self.path = path
        self.error = error

    def describe(self) -> str:
        import traceback  # only when pellc has a bug

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
        subject = "pellc" if self.path is None else str(self.path)
        return (
            f"{subject}: internal compiler error: {type(self.error).__name__} at {where}: "
            f"{self.error}\nThis is a bug in pellc; please report it with the file at {ISSUES_URL}"
        )


@contextmanager
def _compiling(path: Path) -> Iterator[None]:
    """An exception inside is a bug met while compiling `path` (exit 3), except what the user
    must fix (InputError, UsageError) and a closed standard output."""
    from pell.build import InputError
    from pell.project import ConfigError

    try:
        yield
    except (InputError, ConfigError, UsageError, StdoutClosed):
        raise
    except Exception as error:
        raise InternalError(path, error) from error


def _compile_file(path: Path, pretty: bool, engine: Engine) -> tuple[str, CompileResult] | None:
    """Compile one file of the engine's project: its text and result, or None, after printing
    an `encoding` diagnostic, when it is not UTF-8."""
    text = _read_source(path, pretty)
    if text is None:
        return None
    with _compiling(path):
        result = engine.compiled_alone(path)
    return text, result


def _with_project_findings(
    compiled: list[tuple[Path, str, CompileResult]], engine: Engine
) -> list[tuple[Path, str, CompileResult]]:
    """Each file's result with the retry-safety findings of its project added (its calls into
    the other files given and into the project modules they import: project_wide_findings);
    a file with an error among them has no output (nothing of it is written or deployed)."""
    from pell.diagnostics import has_errors

    with _compiling(compiled[0][0] if compiled else Path(".")):
        facts = [r.retry_facts for _, _, r in compiled if r.retry_facts is not None]
        across = engine.findings_for([path for path, _, _ in compiled], facts)
    joined = []
    for path, text, result in compiled:
        found = across.get(result.retry_facts.name, []) if result.retry_facts is not None else []
        if found:
            diagnostics = (*result.diagnostics, *found)
            sql = None if has_errors(list(diagnostics)) else result.sql
            result = replace(result, diagnostics=diagnostics, sql=sql)
        joined.append((path, text, result))
    return joined


def _build(args: argparse.Namespace) -> int:
    from pell import report
    from pell.build import FileError, write_atomically
    from pell.diagnostics import SourceFile, render_all
    from pell.engine import Engine

    files: list[Path] = args.files
    if len(files) > 1 and args.output is not None:
        raise UsageError("-o names one output file; use -d OUTDIR for several inputs")
    if args.watch:
        if args.check:
            raise UsageError("--watch writes its outputs: it does not go with --check")
        if args.out_dir is None:
            raise UsageError("--watch builds into a directory: give -d OUTDIR")
        return _watch(args)
    if args.check or args.map or args.out_dir is not None or any(p.is_dir() for p in files):
        if args.out_dir is None:
            raise UsageError("directory builds, --check and --map need -d OUTDIR")
        return _build_tree(args)
    output: Path | None = None if args.output == Path("-") else args.output  # `-`: stdout
    failed = unreadable = False
    engine = Engine.of_inputs(files, target=args.target)
    compiled: list[tuple[Path, str, CompileResult]] = []
    for path in files:
        try:
            read = _compile_file(path, args.pretty, engine)
        except FileError as error:
            _report(error)
            unreadable = True
            continue
        if read is None:
            failed = True
        else:
            compiled.append((path, *read))
    # Nothing is written before the project-wide checks have passed for it.
    for path, text, result in _with_project_findings(compiled, engine):
        sys.stderr.write(render_all(result.diagnostics, SourceFile(str(path), text), args.pretty))
        if result.ok_stub:
            _note(path, "a @stub module declares an Oracle package: nothing to generate")
        elif result.sql is None:
            failed = True
        elif output is not None:
            write_atomically(output, result.sql)
            _note_runtime_needed(path, output, result.sql, engine.config.root)
        else:
            _stdout(report.sql(result.sql, path))
    return _exit_code(unreadable, failed)


def _note_runtime_needed(source: Path, output: Path, sql: str, root: Path | None) -> None:
    """After `build -o`: when the SQL raises or catches through pell_runtime, which a one-file
    build does not write, the exact command that writes it beside the output."""
    import shlex

    from pell.runtime import references_runtime

    if not references_runtime(sql) or not output.is_file():
        return  # (`-o /dev/null`: no runtime to write beside it, in /dev)
    # the runtime is the whole project's (README, Errors and the runtime package)
    folder = root or source.parent
    runtime = output.parent / "pell_runtime.sql"
    command = f"pellc runtime {shlex.quote(str(folder))} -o {shlex.quote(str(runtime))}"
    _note(output, f"uses the pell_runtime package: write it with `{command}` and load it first")


def _run_build(
    args: argparse.Namespace,
    out_dir: Path,
    check_only: bool,
    source_maps: bool,
    engine: Engine | None = None,
) -> BuildResult:
    """build_tree with a progress line on a terminal; prints every diagnostic and file error.
    `engine`: the project held in memory, which compiles the modules (`build --watch`)."""
    from pell import report
    from pell.build import InputError, SourceUnit, build_tree

    # under json every directory build of more than 20 modules shows its progress: a tool
    # reads it through a pipe, never a terminal
    terminal = sys.stderr.isatty() and not report.is_json()
    current: list[Path | None] = [None]

    def progress(index: int, total: int, unit: SourceUnit) -> None:
        current[0] = unit.path
        if total > 20 and report.is_json():
            sys.stderr.write(report.progress(index, total, unit.path))
        elif terminal and total > 20:
            sys.stderr.write(f"\r\x1b[Kbuilding {index}/{total} {unit.path}")
            sys.stderr.flush()

    from pell.project import ConfigError

    try:
        result = build_tree(
            args.files,
            out_dir,
            args.target,
            check_only,
            source_maps,
            progress,
            jobs=getattr(args, "jobs", 1),  # `deploy` has no -j: it compiles in this process
            engine=engine,
        )
    except (InputError, ConfigError):
        raise
    except Exception as error:
        raise InternalError(current[0], error) from error
    if terminal and len(result.outcomes) > 20:
        sys.stderr.write("\r\x1b[K")
    _note_nested_projects(result.nested_projects)
    sys.stderr.write(result.rendered_diagnostics(args.pretty))
    for problem in result.file_errors:
        _report(problem)
    return result


def _note_nested_projects(settings_files: list[Path]) -> None:
    """Each subfolder a directory walk left out because it has settings of its own."""
    for settings in settings_files:
        _note(settings, "its folder is another project, left out (give it to pellc on its own)")


def _build_tree(args: argparse.Namespace) -> int:
    from pell import report

    out_dir: Path = args.out_dir
    result = _run_build(args, out_dir, args.check, args.map)
    if args.check:
        problems = [
            (o.status, out_dir / o.unit.output)
            for o in result.outcomes
            if o.status in ("missing", "stale")
        ]
        if result.runtime in ("missing", "stale"):
            problems.append((str(result.runtime), out_dir / "pell_runtime.sql"))
        if result.code_file in ("missing", "stale") and result.code_file_path is not None:
            problems.append((str(result.code_file), result.code_file_path))
        problems += [("stale", out_dir / path) for path in result.leftovers]
        for status, path in problems:
            sys.stderr.write(report.output_status(path, status))
        checked: dict[str, object] = {"checked": len(result.outcomes)}
        checked |= {"fresh": result.count("fresh"), "stale_or_missing": len(problems)}
        checked["failed"] = result.count("failed")
        shown = (
            f"checked {checked['checked']}: fresh {checked['fresh']}, "
            f"stale or missing {checked['stale_or_missing']}, failed {checked['failed']}"
        )
        sys.stderr.write(report.summary("build --check", shown, checked))
        if problems:
            sys.stderr.write(report.note(f"to bring them up to date, run: {_update_command(args)}"))
        failed = bool(problems) or result.failed or result.runtime == "failed"
        return _exit_code(bool(result.file_errors), failed)
    sys.stderr.write(_build_summary(result))
    return _exit_code(bool(result.file_errors), result.failed or result.runtime == "failed")


def _build_summary(result: BuildResult) -> str:
    """A directory build's closing counts, as text or a summary line."""
    from pell import report

    counts: dict[str, object] = {s: result.count(s) for s in ("built", "unchanged", "failed")}
    counts |= {"removed": len(result.leftovers), "runtime": result.runtime}
    counts["code_file"] = result.code_file
    return report.summary("build", result.summary(), counts)


def _update_command(args: argparse.Namespace) -> str:
    """The build that writes what `build --check` found missing or stale (the pre-commit hook
    runs --check: its failure says what to run): the same inputs, output, maps and target."""
    import shlex

    from pell.project import find_config

    words = ["pellc", "build", *(str(path) for path in args.files), "-d", str(args.out_dir)]
    if args.map:
        words.append("--map")
    if args.target != (find_config(args.files[0]).target or "23ai"):
        words += ["--target", args.target]
    return shlex.join(words)


def _watch(args: argparse.Namespace) -> int:
    """`build --watch`: a directory build, then, on every save under the project, another
    through the engine (which compiles again only what the change can affect), each said in
    one line. Ctrl-C stops it: exit 0."""
    import time

    from pell import report
    from pell.build import InputError
    from pell.engine import Engine
    from pell.project import CONFIG_FILES, ConfigError

    try:
        from watchfiles import watch
    except ImportError as error:
        install = pip_install("watchfiles>=0.21")
        raise UsageError(f"build --watch needs watchfiles: {install}") from error
    out_dir: Path = args.out_dir
    # without --target, the project's: a pell.toml edit that changes it is followed
    engine = Engine.of_inputs(args.files, target=args.target if args.target_given else None)
    result = _run_build(args, out_dir, False, args.map, engine)
    sys.stderr.write(_build_summary(result))
    # main() turned the cycle collector off for a short run; a watch runs for hours, and each
    # rebuild leaves cycles (a checked module's imports refer back to it). What the first
    # build made stays: frozen, it is not scanned again by each collection.
    gc.collect()
    gc.freeze()
    gc.enable()
    root = engine.config.root
    roots = [root] if root is not None else [p if p.is_dir() else p.parent for p in args.files]
    sys.stderr.write(report.note(f"watching {', '.join(map(str, roots))} for changes (Ctrl-C stops)"))
    sys.stderr.flush()
    outputs = os.path.abspath(out_dir) + os.sep
    codes = engine.config.error_codes_path  # pell_runtime.sql numbers the errors by it

    def wanted(_: object, path: str) -> bool:  # sources and settings; not our own outputs
        named = path.endswith(".pell") or os.path.basename(path) in CONFIG_FILES
        named = named or (codes is not None and path == os.path.abspath(codes))
        return named and not path.startswith(outputs)

    def shown(names: Sequence[str]) -> str:
        return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")

    try:
        # step: the quiet (ms) that ends a batch of events; watchfiles waits 50 by default
        for changes in watch(*roots, watch_filter=wanted, step=10):
            start = time.perf_counter()
            changed = sorted({Path(path) for _, path in changes})
            known = _source_names(engine)  # before the change: a deleted file's name too
            try:
                # a file gone (perhaps half of a rename, whose other half may come in a later
                # batch): the project is listed again; a file appearing as it is built: below
                gone = [*roots] if any(not path.exists() for path in changed) else []
                engine.files_changed([*changed, *gone])
                recompiled = list(engine.recomputed)
                args.target = engine.target
                try:
                    result = _run_build(args, out_dir, False, args.map, engine)
                except KeyError:  # a module appeared since: list the project again, once
                    engine.files_changed(roots)
                    recompiled += [p for p in engine.recomputed if p not in recompiled]
                    result = _run_build(args, out_dir, False, args.map, engine)
            except (InputError, ConfigError) as error:  # a broken pell.toml: until it is fixed
                _report(error)
                sys.stderr.flush()
                continue
            recompiled += [p for p in engine.recomputed if p not in recompiled]
            known |= _source_names(engine)
            # sources named as their diagnostics name them, outputs from the output directory
            changed_names = [_source_name(path, known) for path in changed]
            recompiled_names = [_source_name(path, known) for path in recompiled]
            written = [str(o.unit.output) for o in result.outcomes if o.status == "built"]
            elapsed = (time.perf_counter() - start) * 1000
            parts = [
                f"{shown(changed_names)} changed: recompiled {len(recompiled)}"
                + (f" ({shown(recompiled_names)})" if recompiled else ""),
                f"wrote {len(written)}" + (f" ({shown(written)})" if written else ""),
            ]
            if result.failed:
                parts.append(f"failed {result.count('failed')}")
            if result.leftovers:
                parts.append(f"removed {len(result.leftovers)}")
            counts: dict[str, object] = {"changed": changed_names}
            counts |= {"recompiled": recompiled_names}
            counts["written"] = written
            counts |= {"failed": result.count("failed"), "removed": len(result.leftovers)}
            counts["ms"] = round(elapsed)
            sys.stderr.write(report.rebuild(", ".join(parts) + f", {elapsed:.0f} ms", counts))
            sys.stderr.flush()
    except KeyboardInterrupt:
        pass
    return EXIT_OK


def _source_names(engine: Engine) -> dict[str, Path]:
    """The engine's modules by absolute path: watchfiles reports absolute paths, the engine
    (and so each diagnostic) names a file as the inputs given reach it."""
    return {os.path.abspath(path): path for path in engine.paths()}


def _source_name(path: Path, known: dict[str, Path]) -> str:
    """`path` as a diagnostic names it: the engine's name for a module; another file (the
    settings) from the working directory when it is under it, else in full."""
    found = known.get(os.path.abspath(path))
    if found is not None:
        return str(found)
    relative = os.path.relpath(os.path.abspath(path))
    return str(path) if relative.startswith("..") else relative


def _check(args: argparse.Namespace) -> int:
    from pell import report
    from pell.build import FileError, SourceUnit, distinct_units, find_sources, no_sources
    from pell.diagnostics import Severity, SourceFile, has_errors, render_all
    from pell.engine import Engine
    from pell.verify import verify

    # a directory named `x.pell` is a file argument that cannot be read, as for `build`
    trees = [p for p in args.files if p.is_dir() and p.suffix != ".pell"]
    nested: list[Path] = []
    units, file_errors = find_sources(trees, nested)
    _note_nested_projects(nested)
    units = distinct_units(units + [SourceUnit(p, p) for p in args.files if p not in trees])
    for problem in file_errors:
        _report(problem)
    if not units and not file_errors:
        raise no_sources(args.files)
    failed, unreadable = False, bool(file_errors)
    engine = Engine.of_inputs(args.files, target=args.target)
    progress = _Progress()
    compiled: list[tuple[Path, str, CompileResult]] = []
    for number, path in enumerate((unit.path for unit in units), start=1):
        try:
            read = _compile_file(path, args.pretty, engine)
        except FileError as error:
            _report(error)
            unreadable = True
            continue
        finally:
            progress.step("checked", number, len(units), "modules")
        if read is None:
            failed = True
        else:
            compiled.append((path, *read))
    progress.clear()
    # The files checked together are one build, with the project modules they import: the
    # retry checks follow calls between them.
    compiled = _with_project_findings(compiled, engine)
    for path, text, result in compiled:
        diagnostics = list(result.diagnostics)
        sys.stderr.write(render_all(diagnostics, SourceFile(str(path), text), args.pretty))
        failed = failed or has_errors(diagnostics)
    if not (failed or unreadable or args.no_verify):
        # The verifier's errors only: its warnings repeat side-effect-in-retry with a schedule,
        # which `pellc verify` prints.
        shown = [
            replace(result, source=SourceFile(str(path), text))
            for path, text, result in compiled
            if result.lowered is not None  # a stub generates nothing to verify
        ]
        with _compiling(args.files[0]):
            verified = verify(
                shown, lambda done, total: progress.step("verified", done, total, "fns")
            )
        progress.clear()
        errors = [f for f in verified.findings if f.severity is Severity.ERROR]
        sys.stderr.write(report.findings(errors))
        failed = bool(errors)
    return _exit_code(unreadable, failed)


def _verify(args: argparse.Namespace) -> int:
    from pell import report
    from pell.build import FileError, find_sources, no_sources
    from pell.diagnostics import SourceFile, has_errors, render_all
    from pell.engine import Engine
    from pell.verify import verify

    nested: list[Path] = []
    units, file_errors = find_sources(args.files, nested)
    _note_nested_projects(nested)
    for error in file_errors:
        _report(error)
    if not units and not file_errors:
        raise no_sources(args.files)
    unreadable, failed = bool(file_errors), False
    engine = Engine.of_inputs(args.files, target=args.target)
    progress = _Progress()
    read: list[tuple[Path, str, CompileResult]] = []
    for number, unit in enumerate(units, start=1):
        try:
            compiled_file = _compile_file(unit.path, args.pretty, engine)
        except FileError as error:
            _report(error)
            unreadable = True
            continue
        finally:
            progress.step("compiled", number, len(units), "modules")
        if compiled_file is None:
            failed = True
        else:
            read.append((unit.path, *compiled_file))
    progress.clear()
    compiled: list[CompileResult] = []
    for path, text, result in _with_project_findings(read, engine):
        shown = SourceFile(str(path), text)
        if result.ok_stub:
            continue  # an Oracle package's signatures: nothing to verify
        if has_errors(list(result.diagnostics)):
            sys.stderr.write(render_all(list(result.diagnostics), shown, args.pretty))
            failed = True
            continue
        compiled.append(replace(result, source=shown))
    with _compiling(units[0].path if units else Path(".")):
        verified = verify(
            compiled, lambda done, total: progress.step("verified", done, total, "fns")
        )
    progress.clear()
    _stdout(report.verified_fns(verified))
    if not verified.verdicts and not (failed or unreadable):
        _stdout(
            report.note(
                "no @retry fn, no fn that controls the transaction (COMMIT, ROLLBACK, "
                "SAVEPOINT, `transaction { }`), and no fn that calls one, to verify"
            )
        )
    _stdout(report.findings(verified.findings))
    return _exit_code(unreadable, failed or verified.has_errors)


def _runtime(args: argparse.Namespace) -> int:
    from pell import __version__, parse, report
    from pell.build import FileError, find_sources, no_sources, write_atomically
    from pell.diagnostics import SourceFile, has_errors, render_all
    from pell.engine import Engine
    from pell.runtime import project_runtime

    for directory in args.dirs:
        if not directory.is_dir():
            reason = "Not a directory" if directory.exists() else "No such file or directory"
            raise UsageError(f"cannot read {directory}: {reason}")
    nested: list[Path] = []
    units, file_errors = find_sources(args.dirs, nested)
    _note_nested_projects(nested)
    for problem in file_errors:
        _report(problem)
    if not units and not file_errors:
        raise no_sources(args.dirs)  # as build says: there is nothing to number
    engine = Engine.of_inputs(args.dirs, target=args.target, sources=(units, file_errors))
    project = engine.project
    texts: dict[Path, str | None] = {}
    failed = False
    unreadable = bool(file_errors)
    for path in (unit.path for unit in units):
        try:
            texts[path], failure = engine.source(path)
        except FileError as error:
            _report(error)
            unreadable = True
            continue
        if failure is not None:  # not UTF-8: its `encoding` diagnostic, at the path as given
            where = SourceFile(str(path), failure.source.text)
            sys.stderr.write(render_all(failure.diagnostics, where, args.pretty))
            failed = True
    for path, text in texts.items():
        if text is None:
            continue
        with _compiling(path):
            _, diagnostics = parse(text)
        duplicate = project.duplicate_of(path)
        if duplicate is not None:
            diagnostics.append(duplicate)
        sys.stderr.write(render_all(diagnostics, SourceFile(str(path), text), args.pretty))
        failed = failed or has_errors(diagnostics)
    with _compiling(units[0].path if units else Path(".")):
        runtime = project_runtime(project)
    for file, diagnostic in runtime.problems:
        sys.stderr.write(render_all([diagnostic], file.source, args.pretty))
        failed = True
    if failed or unreadable:
        return _exit_code(unreadable, failed)
    book = runtime.new_book_text
    if runtime.book_path is not None and book is not None and book != runtime.book_text:
        write_atomically(runtime.book_path, book)
    sql = runtime.sql(__version__, args.target)
    if args.output is not None:
        write_atomically(args.output, sql)
    else:
        _stdout(report.sql(sql))
    return EXIT_OK


def _explain(args: argparse.Namespace) -> int:
    from pell import check, parse, report
    from pell.diagnostics import SourceFile, has_errors, render_all
    from pell.engine import Engine
    from pell.explain import explain, render_json
    from pell.project import as_located

    path: Path = args.file
    text = _read_source(path, args.pretty)
    if text is None:
        return EXIT_ERRORS
    source = SourceFile(str(path), text)
    with _compiling(path):
        module, diagnostics = parse(text)
        module = as_located(module, path)
        if module is not None:
            engine = Engine.of_inputs([path], target=args.target)
            # only the checker: explain shows the checked fns, nothing is lowered
            checked, more = check(module, args.target, engine.project.index)
            diagnostics += more
            # what a build of this file would refuse across modules is not explained either
            if checked.retry_facts is not None and not has_errors(diagnostics):
                across = engine.findings_for([path], [checked.retry_facts])
                diagnostics += across.get(checked.retry_facts.name, [])
    if module is None or has_errors(diagnostics):
        sys.stderr.write(render_all(diagnostics, source, args.pretty))
        return EXIT_ERRORS
    with _compiling(path):
        explanations = explain(checked, source, args.target)
        if args.fn is not None:
            explanations = [e for e in explanations if e.fn == args.fn]
        if args.json and not report.is_json():  # --format json: one line per fn instead
            shown = json.dumps(render_json(explanations, checked), indent=2) + "\n"
        else:
            shown = report.schedules(explanations, checked, str(path))
    if args.fn is not None and not explanations:
        raise UsageError(f"{path} has no fn `{args.fn}` with @retry")
    _stdout(shown)
    return EXIT_OK


def _deploy_target(args: argparse.Namespace) -> None:
    """The target of `deploy` as exec's (docs/postgres.md): --target, else postgres when the
    database (--dsn, else $PELL_DSN unless --target is postgres, else $PELL_DB_URL) is a
    postgresql:// URL, else the project's; a DSN of the other kind than --target is a usage
    error."""
    import os

    from pell.database import DB_ENV, is_postgres

    oracle_env = os.environ.get("PELL_DSN") if args.target != "postgres" else None
    given = args.dsn or oracle_env or os.environ.get(DB_ENV)
    if not given or is_postgres(given) == (args.target == "postgres"):
        return
    if getattr(args, "target_given", True) or not is_postgres(given):
        kind = "a PostgreSQL URL" if is_postgres(given) else "an Oracle DSN"
        raise UsageError(f"the database is {kind}, but the target is {args.target}")
    args.target = "postgres"


def _deploy(args: argparse.Namespace) -> int:
    _deploy_target(args)
    if args.target == "postgres":
        from pell.run import deploy_postgres

        return deploy_postgres(args, _run_build)
    import os
    import tempfile

    from pell import deploy, report
    from pell.build import FileError
    from pell.engine import Engine
    from pell.project import read_header

    dsn = args.dsn or os.environ.get("PELL_DSN") or os.environ.get("PELL_DB_URL")
    if not dsn and not args.dry_run:
        raise UsageError("no database: give --dsn or set PELL_DSN or PELL_DB_URL")
    try:
        temporary = tempfile.TemporaryDirectory(prefix="pellc-deploy-")
    except OSError as error:
        raise FileError("write", tempfile.gettempdir(), error) from error
    with temporary as name:
        out_dir = Path(name)
        engine = Engine.of_inputs(args.files, target=args.target)  # compiles in this process
        result = _run_build(args, out_dir, check_only=False, source_maps=True, engine=engine)
        if result.failed or result.runtime == "failed" or result.file_errors:
            sys.stderr.write(report.note("nothing deployed: fix the errors first"))
            return _exit_code(bool(result.file_errors), True)
        sources = {out_dir / o.unit.output: o.unit.path for o in result.outcomes}
        # A script (a file with no `module` line) is a block to run, not schema objects to
        # create: deploying must not run it. Its .sql is left for the user to run.
        scripts = {
            out_dir / o.unit.output
            for o in result.outcomes
            if o.source is not None and read_header(o.source.text) is None
        }
        for path in sorted(scripts):
            _note(sources[path], "a script: not deployed (run its .sql yourself)")
        plan: list[tuple[deploy.Script, list[deploy.Statement]]] = []
        broken = False
        for path in deploy.deployment_order(out_dir):
            if path in scripts:
                continue
            map_path = path.with_name(path.name + ".map.json")
            source_map = json.loads(map_path.read_text("utf-8")) if map_path.exists() else None
            script = deploy.Script(path, source_map, sources.get(path))
            try:
                plan.append((script, deploy.split_script(path.read_text("utf-8"))))
            except deploy.ScriptError as error:
                shown = path.relative_to(out_dir)
                at, line, column = deploy.place(script, error.line, 1, shown)
                message = f"{shown} {error}"
                sys.stderr.write(report.located_error(at, line, column, "error", message, "deploy"))
                broken = True
        if broken:
            sys.stderr.write(
                report.note("nothing deployed: a script does not split into statements")
            )
            return EXIT_ERRORS
        where = deploy.redact(dsn) if dsn else "(no database given)"
        steps = deploy.deployment_steps(plan)
        if args.dry_run:
            _stdout(report.note(f"deploy to {where} (dry run: nothing is sent)"))
            for number, (script, statement) in enumerate(steps, start=1):
                planned = script.path.relative_to(out_dir)
                type_, name = statement.object_type, statement.object_name
                _stdout(report.deploy_step(number, planned, type_, name, "planned"))
            return EXIT_OK
        try:
            import oracledb
        except ImportError as error:
            install = pip_install("oracledb>=2")
            raise UsageError(f"deploy needs python-oracledb: {install}") from error
        assert dsn is not None
        try:
            connection = oracledb.connect(**deploy.credentials(dsn))
        except ValueError as error:
            raise UsageError(str(error)) from error
        except oracledb.Error as error:
            reason = f"cannot connect to {where}: {str(error).splitlines()[0]}"
            # exit 1, not a usage error: text says it without `error:` (EXIT_CODES)
            said = report.error(reason, "database") if report.is_json() else f"pellc: {reason}\n"
            sys.stderr.write(said)
            return EXIT_ERRORS
        failed = False
        with connection, connection.cursor() as cursor:
            for number, (script, statement, errors) in enumerate(
                deploy.run_scripts(cursor, steps, (oracledb.Error,)), start=1
            ):
                ran = script.path.relative_to(out_dir)
                type_, name = statement.object_type, statement.object_name
                status = "failed" if errors else "ok"
                _stdout(report.deploy_step(number, ran, type_, name, status))
                for mapped in errors:
                    place = (mapped.path, mapped.line, mapped.column)
                    said = report.located_error(*place, mapped.severity, mapped.message, "oracle")
                    sys.stderr.write(said)
                    failed = failed or mapped.severity == "error"
        return EXIT_ERRORS if failed else EXIT_OK


def _lsp(args: argparse.Namespace) -> int:
    try:
        from pell.lsp import run
    except ImportError as error:
        if (error.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise  # not the missing extra: a bug
        raise UsageError(f"pellc lsp needs pygls: {pip_install('pygls>=2,<3')}") from error
    # main() turns the cycle collector off for a short run; a server runs for hours
    gc.enable()
    return run()
def _exec(args: argparse.Namespace) -> int:
    from pell.run import exec_command

    return exec_command(args)


def _sql(args: argparse.Namespace) -> int:
    from pell.run import sql_command

    return sql_command(args)


def _repl(args: argparse.Namespace) -> int:
    from pell.repl import repl_command

    return repl_command(args)


def _db(args: argparse.Namespace) -> int:
    from pell.run import db_command

    return db_command(args)


COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "build": _build,
    "check": _check,
    "db": _db,
    "deploy": _deploy,
    "exec": _exec,
    "explain": _explain,
    "lsp": _lsp,
    "repl": _repl,
    "runtime": _runtime,
    "sql": _sql,
    "verify": _verify,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run pellc; returns the exit code (EXIT_CODES: 0 ok, 1 compile errors, 2 usage and file
    errors, 3 internal error, 141 standard output closed)."""
    # A run is short and keeps most of what it makes (modules, classes, the parser, the
    # project's texts): the cycle collector spent 17-20 ms of each start-up and rebuild finding
    # next to nothing (measured; compile_source turns it off during each compile anyway).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _main(argv)
    finally:
        if collecting:
            gc.enable()


def _main(argv: Sequence[str] | None) -> int:
    from pell.diagnostics import output_format

    arguments = sys.argv[1:] if argv is None else list(argv)
    # the format holds until the run's last line, its usage or internal error included
    token = output_format.set(_requested_format(arguments))
    try:
        return _run(arguments)
    finally:
        output_format.reset(token)


def _run(argv: list[str]) -> int:
    from pell.diagnostics import output_format

    try:
        try:
            args = _parser().parse_args(argv)
        except SystemExit as exit_:
            code = int(exit_.code) if isinstance(exit_.code, int) else EXIT_USAGE
        else:
            output_format.set(args.format)
            _refuse_non_pell_inputs(args)
            _apply_settings(args)
            code = COMMANDS[args.command](args)
        _flush_stdout()
        return code
    except StdoutClosed:
        _silence_stdout()
        return EXIT_STDOUT_CLOSED
    except UsageError as error:
        _report(error)
        return EXIT_USAGE
    except InternalError as error:
        _internal(error)
        return EXIT_INTERNAL
    except Exception as error:
        from pell.build import InputError
        from pell.project import ConfigError

        if isinstance(error, InputError | ConfigError):
            _report(error)
            return EXIT_USAGE
        _internal(InternalError(None, error))
        return EXIT_INTERNAL


def _internal(error: InternalError) -> None:
    from pell import report

    if report.is_json():
        sys.stderr.write(report.error(error.describe(), "internal", error.path))
    else:
        sys.stderr.write(error.describe() + "\n")


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the flush at exit does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # not a real file (a test's capture): nothing to flush
        pass


def entry_point() -> None:
    sys.exit(main())
