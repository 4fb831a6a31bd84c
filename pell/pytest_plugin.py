"""`pytest --pell`: a project's Pell modules as tests (the `pellc` plugin of the `pytest11`
entry point group; the extra `pytest` brings pytest and syrupy).

With `--pell`, pytest collects the project whose `pell.toml` (or `pyproject.toml` with
`[tool.pellc]`) is at or above the `pell_project` directory (an ini setting, relative to the
rootdir; default the rootdir), as the file of those settings:

- one item per module, named by its path from the project's root: it compiles the module as
  `pellc build` does (the whole project's index, the retry checks across modules, the
  project's settings) and fails on any error diagnostic, then compares the module's SQL with
  its syrupy single-file snapshot, `__pell_snapshots__/<path>.sql` under the root, failing
  with a unified diff; `--snapshot-update` (syrupy's option) writes it. The project's error
  codes (pell_runtime: `duplicate-name`, `too-many-errors`) fail the modules that declare
  them, and an unusable error-code file fails an item of its own, as they fail a build;
- `verify`: runs `pell.verify` over the modules and fails on any finding (an `allow`ed
  warning code excepted);
- one item per snapshot that no module has any more: fails until `--snapshot-update`
  removes it.

The settings file is collected as any test file is: when pytest's paths reach it, when it is
named (`pytest pell.toml::verify`), and, since `testpaths` usually names only the Python
tests, whenever pytest runs without paths on its command line. Without `--pell` the plugin
does nothing, so installing it changes no other test run.
"""

from __future__ import annotations

import difflib
import functools
import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr, TracebackStyle
    from syrupy.extensions.single_file import SingleFileSnapshotExtension

    from pell.compiler import CompileResult
    from pell.diagnostics import SourceFile
    from pell.project import Config

# The compiler (and syrupy) are imported only when --pell asks for them: every pytest run
# where pellc is installed loads this plugin.
# Under the project's root. Not in syrupy's `__snapshots__` (its --snapshot-dirname): syrupy
# counts every file there that no test of its own used as unused, and --snapshot-update
# deletes them (syrupy 7 walks that folder beside each collected test module).
SNAPSHOTS = Path("__pell_snapshots__")
_SETTINGS = pytest.StashKey[Path]()  # the project's settings file, when --pell is on


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pellc")
    group.addoption(
        "--pell",
        action="store_true",
        default=False,
        help="test the Pell project: each module compiles and matches its .sql snapshot, "
        "and pellc's verifier finds nothing",
    )
    parser.addini(
        "pell_project",
        "the Pell project's directory, relative to the rootdir (default: the rootdir); its "
        "pell.toml, or pyproject.toml with [tool.pellc], is there or in a directory above",
        default=".",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("pell"):
        return
    from pell.project import ConfigError, find_config

    try:
        import syrupy  # noqa: F401  (its --snapshot-update writes the snapshots)
    except ImportError as error:
        import shlex
        import sys

        install = shlex.join([sys.executable, "-m", "pip", "install", "syrupy>=5"])
        raise pytest.UsageError(f"--pell needs syrupy: {install}") from error
    start = config.rootpath / str(config.getini("pell_project"))
    try:
        settings = find_config(start)
    except ConfigError as error:
        raise pytest.UsageError(str(error)) from error
    if settings.path is None:
        raise pytest.UsageError(
            f"--pell: no pell.toml, and no pyproject.toml with [tool.pellc], at or above {start}"
        )
    config.stash[_SETTINGS] = settings.path
    # `testpaths` (or the current directory) decided what to collect: the project is among it.
    # Paths on the command line decide alone, as for any test file.
    if config.args_source is not pytest.Config.ArgsSource.ARGS and not any(
        settings.path.is_relative_to(Path(config.invocation_params.dir, arg).absolute())
        for arg in config.args
    ):
        config.args.append(str(settings.path))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> PellProject | None:
    settings = parent.config.stash.get(_SETTINGS, None)
    if settings is None or file_path != settings:
        return None
    project: PellProject = PellProject.from_parent(parent, path=file_path)
    return project


class PellFailure(Exception):
    """An item's failure, shown as its text alone (no traceback)."""


@dataclass
class _Module:
    """One module of the project, as the items see it."""

    path: Path
    shown: str  # its path as diagnostics show it: from the rootdir
    text: str | None  # None: it could not be read or decoded
    result: CompileResult | None  # None: it could not be read (or is not compiled yet)
    problem: str  # why it could not be read, or ""


class PellProject(pytest.File):
    """The project of a settings file: an item per module, `verify`, and one per snapshot
    that no module writes any more."""

    _compiled: dict[Path, _Module] | None = None

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def settings(self) -> Config:
        from pell.project import read_config

        config = read_config(self.path)
        assert config is not None  # pytest_configure found it so
        return config

    def collect(self) -> Iterator[pytest.Item]:
        from pell.build import find_sources

        nested: list[Path] = []
        units, unlisted = find_sources([self.root], nested)
        if unlisted:
            raise PellFailure("\n".join(str(error) for error in unlisted))
        for settings in nested:  # as `pellc build` notes them
            where = os.path.relpath(settings, self.config.rootpath)
            message = f"{where}: its folder is another project, left out (test it on its own)"
            warnings.warn_explicit(message, PellWarning, str(settings), 1)
        code_file_problem = _code_file_problem(self.settings)
        if code_file_problem is not None:
            name = os.path.relpath(code_file_problem[0], self.root)
            yield PellCodeFile.from_parent(self, name=name, problem=code_file_problem[1])
        outputs = set()
        for unit in units:
            outputs.add(unit.output)
            name = unit.path.relative_to(self.root).as_posix()
            yield PellModule.from_parent(self, name=name, source=unit.path, output=unit.output)
        yield PellVerify.from_parent(self, name="verify")
        snapshots = self.root / SNAPSHOTS
        for path in sorted(snapshots.rglob("*.sql")):
            if path.relative_to(snapshots) not in outputs:
                name = path.relative_to(self.root).as_posix()
                yield PellUnusedSnapshot.from_parent(self, name=name, snapshot=path)

    def repr_failure(  # type: ignore[override]  # as pytest.Collector's
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, PellFailure):  # a folder of the project cannot be listed
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def compiled(self) -> dict[Path, _Module]:
        """Every module compiled once per session, together, as `pellc build` of the root
        compiles them: the project's modules to import, the retry-safety findings across
        them, its settings."""
        if self._compiled is None:
            self._compiled = _compile_project(self.root, self.config.rootpath, self.settings)
        return self._compiled

    def snapshot_path(self, output: Path) -> Path:
        return self.root / SNAPSHOTS / output


def _compile_project(root: Path, rootdir: Path, settings: Config) -> dict[Path, _Module]:
    """Each module as `pellc build` of the root reports it, through the same Engine: its own
    diagnostics, the retry findings across modules, and the problems of the project's error
    codes at its declarations (duplicate-name, too-many-errors); no SQL after an error."""
    from pell import decode_source
    from pell.build import FileError, find_sources, read_source
    from pell.diagnostics import has_errors
    from pell.engine import Engine
    from pell.records import replace

    engine = Engine(root, target=settings.target)
    units, _ = find_sources([root])
    modules: dict[Path, _Module] = {}
    for unit in units:
        shown = os.path.relpath(unit.path, rootdir)
        try:
            text, failure = decode_source(read_source(unit.path), shown)
        except FileError as error:
            modules[unit.path] = _Module(unit.path, shown, None, None, str(error))
            continue
        if failure is not None:  # not UTF-8: its `encoding` error
            modules[unit.path] = _Module(unit.path, shown, None, failure, "")
            continue
        result = engine.compiled(unit.path)
        diagnostics = engine.diagnostics(unit.path)
        if len(diagnostics) != len(result.diagnostics):  # the error codes' problems
            sql = None if has_errors(diagnostics) else result.sql
            result = replace(result, diagnostics=tuple(diagnostics), sql=sql)
        modules[unit.path] = _Module(unit.path, shown, text, result, "")
    return modules


def _code_file_problem(settings: Config) -> tuple[Path, str] | None:
    """The project's error-code file and why pellc cannot use it (`pellc build` and `pellc
    runtime` stop on it, exit 2); None when it is usable or there is none yet."""
    from pell.error_codes import CodeFileError, read_code_book

    path = settings.error_codes_path
    if path is None:
        return None
    try:
        read_code_book(path)
    except CodeFileError as error:
        return path, str(error)
    return None


def _diff_lines(diff: Iterator[str]) -> Iterator[str]:
    """unified_diff's lines, each ending its line: a last line without a newline is followed
    by `\\ No newline at end of file`, as diff and git say it."""
    for line in diff:
        if line.endswith("\n"):
            yield line
        else:
            yield line + "\n\\ No newline at end of file\n"


def _shown_source(module: _Module) -> SourceFile:
    from pell.diagnostics import SourceFile

    assert module.text is not None
    return SourceFile(module.shown, module.text)


class PellItem(pytest.Item):
    """An item whose failure is its message."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # What pytest's Function items have (no fixtures here). Other plugins' hooks read it
        # from every item: pytest-lsp 1.0's pytest_runtest_call wrapper returns without
        # yielding for an item without it, and pluggy then fails the item.
        self.funcargs: dict[str, object] = {}

    @property
    def project(self) -> PellProject:
        assert isinstance(self.parent, PellProject)
        return self.parent

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: TracebackStyle | None = None,
    ) -> str | TerminalRepr:
        if isinstance(excinfo.value, PellFailure | PellWarning):  # a warning made an error
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, self.name

    @property
    def updating(self) -> bool:
        return bool(self.config.getoption("update_snapshots", False))


class PellModule(PellItem):
    """One module: it compiles without errors, and its SQL is its snapshot's."""

    def __init__(self, *, source: Path, output: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source
        self.output = output

    def runtest(self) -> None:
        from pell.diagnostics import has_errors, render_all

        module = self.project.compiled()[self.source]
        if module.result is None:
            raise PellFailure(module.problem)
        diagnostics = module.result.diagnostics
        shown = module.result.source if module.text is None else _shown_source(module)
        if has_errors(diagnostics):
            raise PellFailure(render_all(diagnostics, shown).rstrip("\n"))
        for warning in diagnostics:  # in pytest's warnings summary, at the module's line
            line, _ = shown.line_col(warning.span.start)
            text = render_all([warning], shown).rstrip("\n")
            warnings.warn_explicit(text, PellWarning, str(self.source), line)
        snapshot = self.project.snapshot_path(self.output)
        sql = module.result.sql
        if sql is None:  # a @stub: nothing is generated for it
            if snapshot.exists():
                self._unused(snapshot, f"{module.shown} is a @stub and generates nothing")
            return
        self._compare(snapshot, sql, module.shown)

    def _compare(self, snapshot: Path, sql: str, shown: str) -> None:
        expected = _read_snapshot(snapshot)
        if expected == sql:
            return
        new_only = bool(self.config.getoption("update_new_snapshots_only", False))
        if self.updating or (new_only and expected is None):
            _write_snapshot(snapshot, sql)
            return
        where = os.path.relpath(snapshot, self.config.rootpath)
        if expected is None:
            raise PellFailure(f"{shown}: no snapshot {where}; `pytest --snapshot-update` writes it")
        diff = difflib.unified_diff(
            expected.splitlines(keepends=True),
            sql.splitlines(keepends=True),
            fromfile=f"{where} (snapshot)",
            tofile=f"{shown} (compiled now)",
        )
        raise PellFailure(
            f"{shown}: its SQL is not its snapshot's; `pytest --snapshot-update` accepts it\n"
            + "".join(_diff_lines(diff)).rstrip("\n")
        )

    def _unused(self, snapshot: Path, why: str) -> None:
        if self.updating:
            snapshot.unlink()
            return
        where = os.path.relpath(snapshot, self.config.rootpath)
        raise PellFailure(f"{why}: its snapshot {where} is unused; --snapshot-update removes it")


class PellVerify(PellItem):
    """`pellc verify` of the project: no finding in the modules that compile (those that do
    not fail their own items)."""

    def runtest(self) -> None:
        from pell.diagnostics import has_errors
        from pell.records import replace
        from pell.verify import verify

        results = [
            replace(m.result, source=_shown_source(m))
            for m in self.project.compiled().values()
            if m.result is not None
            and m.result.lowered is not None  # a stub generates nothing to run
            and not has_errors(m.result.diagnostics)
        ]
        if not results:
            return
        allowed = self.project.settings.allow
        findings = [f for f in verify(results).findings if f.code not in allowed]
        if findings:
            raise PellFailure("\n".join(finding.render() for finding in findings))


class PellUnusedSnapshot(PellItem):
    """A snapshot whose module is gone (removed, renamed): --snapshot-update removes it."""

    def __init__(self, *, snapshot: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.snapshot = snapshot

    def runtest(self) -> None:
        if self.updating:
            self.snapshot.unlink()
            return
        where = os.path.relpath(self.snapshot, self.config.rootpath)
        raise PellFailure(
            f"{where}: no module of the project writes it; --snapshot-update removes it"
        )


class PellCodeFile(PellItem):
    """The project's error-code file, when pellc cannot use it: `pellc build` stops on it."""

    def __init__(self, *, problem: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problem = problem

    def runtest(self) -> None:
        raise PellFailure(self.problem)


class PellWarning(UserWarning):
    """A warning pellc gives a module that compiles (`path:line:col: warning: ...`)."""


@functools.cache
def _sql_snapshots() -> SingleFileSnapshotExtension:
    """syrupy's single-file extension for `.sql` text: the snapshot is the SQL, byte for byte
    (imported when first used: without --pell the plugin needs no syrupy)."""
    from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

    class SqlSnapshot(SingleFileSnapshotExtension):
        file_extension = "sql"
        _write_mode = WriteMode.TEXT

    return SqlSnapshot()


def _read_snapshot(path: Path) -> str | None:
    data = _sql_snapshots().read_snapshot_data_from_location(
        snapshot_location=str(path), snapshot_name=path.stem, session_id="pellc"
    )
    return data if isinstance(data, str) else None


def _write_snapshot(path: Path, sql: str) -> None:
    from syrupy.data import Snapshot, SnapshotCollection

    path.parent.mkdir(parents=True, exist_ok=True)
    collection = SnapshotCollection(location=str(path))
    collection.add(Snapshot(name=path.stem, data=sql))
    _sql_snapshots().write_snapshot_collection(snapshot_collection=collection)
