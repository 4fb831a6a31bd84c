"""Directory builds: every `.pell` under the inputs to `.sql` in an output tree, incremental
(a content-hash manifest) and atomic (temporary file, then rename), plus `pell_runtime.sql`."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pell import CompileResult, __version__, compile_source
from pell.checker.retry_facts import ModuleFacts
from pell.checker.retry_safety import project_findings
from pell.diagnostics import Diagnostic, SourceFile
from pell.error_codes import CATEGORY_RANGES, DeclaredError, declared_errors
from pell.project import Config, Project, ProjectFile, file_identity, project_file
from pell.records import field, record
from pell.resources import compiler_fingerprint
from pell.runtime import project_runtime, references_runtime

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

    from pell.checker.imports import ModuleIndex
    from pell.engine import Engine

MANIFEST = ".pellc-manifest.json"
_UMASK = os.umask(0)
os.umask(_UMASK)
RUNTIME_FILE = "pell_runtime.sql"
# write_atomically's temporary file for NAME: `.NAME.<8 of mkstemp's [a-z0-9_]>.tmp`, beside it.
_TEMPORARY = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")


class InputError(Exception):
    """What the user must fix around the sources rather than in them: a file pellc cannot
    read or write, or inputs holding no `.pell` file. `pellc` says `pellc: error: ...`, exit 2."""


class FileError(InputError):
    """A file system operation that failed: `cannot read PATH: REASON` (or write, remove)."""

    def __init__(self, action: str, path: Path | str, error: OSError) -> None:
        self.path = path
        self.reason = error.strerror or str(error)
        super().__init__(f"cannot {action} {path}: {self.reason}")


def sha256(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def read_source(path: Path) -> bytes:
    """The bytes of a `.pell` file; FileError when it cannot be read (missing, a directory,
    a dangling or looping symlink, no permission)."""
    try:
        return path.read_bytes()
    except OSError as error:
        raise FileError("read", path, error) from error


def _make_directory(path: Path) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError as error:  # a file where the directory should be
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(path)) from error


def write_atomically(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file.
    FileError when it cannot be written; the temporary file is removed then. What is no
    regular file (`-o /dev/null`, `/dev/stdout` on a terminal or pipe, a FIFO) is written
    through, as any Unix tool writes it: renaming over it would replace the device node
    itself. A symlink stays one: the file it names is written (made, when it names none)."""
    try:
        kind = os.stat(path).st_mode  # through symlinks
    except OSError:
        kind = None  # not there yet (or a dangling symlink): made by the rename
    if kind is not None and not stat.S_ISREG(kind) and not stat.S_ISDIR(kind):
        _write_through(path, text)
        return
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        _make_directory(path.parent)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise FileError("write", path, error) from error
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.chmod(temporary, 0o666 & ~_UMASK)  # mkstemp makes 0600; outputs are ordinary files
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise FileError("write", path, error) from error
        raise


def _write_through(path: Path, text: str) -> None:
    """Write `text` into the existing non-regular file at `path` (a device, a FIFO)."""
    try:
        with open(path, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as error:
        raise FileError("write", path, error) from error


@record
class SourceUnit:
    """One `.pell` file and the output path it maps to, relative to the output directory."""

    path: Path
    output: Path  # e.g. billing/payments.sql


def no_sources(inputs: list[Path]) -> InputError:
    """What every command says of inputs that hold no `.pell` file."""
    return InputError(f"no .pell file found in {', '.join(str(p) for p in inputs)}")


def refuse_non_pell(inputs: list[Path]) -> None:
    """InputError for the first input that is neither a directory nor a `.pell` file: a `.sql`
    given by mistake is not read as a Pell script (nor anything built or written)."""
    for entry in inputs:
        if entry.suffix != ".pell" and not entry.is_dir():
            try:
                os.stat(entry)
            except OSError as error:  # a mistyped folder: what the system says of it
                raise FileError("read", entry, error) from error
            raise InputError(
                f"{entry} is not a .pell file: inputs are .pell files and directories of them"
            )


def find_sources(
    inputs: list[Path], nested: list[Path] | None = None
) -> tuple[list[SourceUnit], list[FileError]]:
    """Every `.pell` under each input directory (mirroring relative paths), or the input files
    themselves, each file once (distinct_units); and the directories that could not be listed.
    An entry that is not a readable file (a directory named `x.pell`, a dangling symlink) is a
    unit too: reading it fails. InputError for an input file that is not a `.pell` file.
    Subdirectories with settings of their own are other projects, left out: their settings
    files are added to `nested`, if given. So are, silently, those no project's sources are
    in (_not_sources): hidden folders (`.git`, `.venv`, `.tox`) and virtualenvs."""
    refuse_non_pell(inputs)
    units: list[SourceUnit] = []
    errors: list[FileError] = []

    def unlisted(error: OSError) -> None:
        errors.append(FileError("read", error.filename, error))

    for entry in inputs:
        if not entry.is_dir():
            units.append(SourceUnit(entry, Path(entry.name).with_suffix(".sql")))
            continue
        found: list[Path] = []
        for directory, subdirectories, files in os.walk(entry, onerror=unlisted):
            # a directory with settings of its own is another project's root: not this one's
            subdirectories[:] = [n for n in subdirectories if not _not_sources(Path(directory, n))]
            roots = {
                n: settings
                for n in subdirectories
                if not n.endswith(".pell") and (settings := _settings_file(Path(directory, n)))
            }
            if nested is not None:
                nested += (roots[n] for n in sorted(roots))
            subdirectories[:] = [n for n in subdirectories if n not in roots]
            found += (Path(directory, n) for n in subdirectories + files if n.endswith(".pell"))
        units += (SourceUnit(p, p.relative_to(entry).with_suffix(".sql")) for p in sorted(found))
    return distinct_units(units), errors


def _not_sources(directory: Path) -> bool:
    """Whether a directory walk leaves `directory` out: a hidden one (its name starts with
    `.`: `.git`, `.venv`, `.tox`, an editor's) or a Python virtualenv (it holds `pyvenv.cfg`,
    whatever its name), whose site-packages holds other packages' files, pellc's own stubs
    among them. Named as an input, such a directory is walked all the same."""
    return directory.name.startswith(".") or (directory / "pyvenv.cfg").is_file()


def distinct_units(units: list[SourceUnit]) -> list[SourceUnit]:
    """`units` with each file once: one reached by two names (two inputs, a path through `..`,
    a symlink) is one module, not two that declare the same one. The name kept is the first,
    unless it is a symlink and a later one is not (`alias.pell -> orders.pell` beside it in a
    tree builds orders.sql)."""
    kept: dict[tuple[int, int] | str, SourceUnit] = {}
    for unit in units:
        identity = file_identity(unit.path)
        first = kept.get(identity)
        if first is None or (first.path.is_symlink() and not unit.path.is_symlink()):
            kept[identity] = unit
    chosen = {id(unit) for unit in kept.values()}
    return [unit for unit in units if id(unit) in chosen]


def _settings_file(directory: Path) -> Path | None:
    """What makes `directory` a project root: its pell.toml, or its pyproject.toml with
    `[tool.pellc]`; None when it is none."""
    from pell.project import CONFIG_FILES, ConfigError, read_config

    for name in CONFIG_FILES:
        path = directory / name
        if path.is_file():
            try:
                if read_config(path) is not None:
                    return path
            except ConfigError:
                return path  # its own commands report it
    return None


def project_of(inputs: list[Path]) -> Project:
    """The project of a command's inputs, as an Engine (pell.engine) holds it: every `.pell`
    under the directory whose `pyproject.toml` has `[tool.pellc]` (or whose `pell.toml`) is
    nearest above the first input, with the inputs themselves; without one, the trees and
    files given. A file that cannot be read or is not UTF-8 is left out (its own command
    reports it) and makes the project incomplete."""
    from pell.engine import Engine

    return Engine.of_inputs(inputs).project


def is_project_of(inputs: list[Path], config: Config) -> bool:
    """Whether `inputs` are a project (an import naming no module of it is an error) rather
    than one text compiled on its own."""
    return config.root is not None or len(inputs) > 1 or any(p.is_dir() for p in inputs)


def project_paths(
    inputs: list[Path], sources: tuple[list[SourceUnit], list[FileError]] | None = None
) -> tuple[Config, list[Path], list[FileError]]:
    """The settings of the project of `inputs`, the paths of its `.pell` files
    (those under the inputs first, in find_sources' order: a build's), and the directories
    that could not be listed."""
    from pell.project import find_config

    config = find_config(inputs[0] if inputs else Path("."))
    units, unlisted = sources if sources is not None else find_sources(inputs)
    unlisted = list(unlisted)
    # Each file once, as the command names it (relative where it was): the root's walk finds
    # the inputs again, by other names when they were given through `..` or a symlink.
    found = {file_identity(unit.path): unit.path for unit in units}
    if config.root is not None:
        more, unlisted_more = find_sources([config.root])
        unlisted += unlisted_more
        for unit in more:
            found.setdefault(file_identity(unit.path), unit.path)
    return config, list(found.values()), unlisted


def project_wide_findings(
    project: Project, inputs: list[Path], facts: list[ModuleFacts], target: str
) -> dict[str, list[Diagnostic]]:
    """The retry-safety findings that only the whole project can see (project_findings), by
    module name, with the project's settings applied: those of the modules at `inputs` (whose
    facts, for those that parsed, are `facts`) through their calls into any module, joined
    with the facts of the project modules they import, at any depth, of those whose packages
    their SQL statements call a fn of (and what these import), and of the project's stubs
    (both called without an import), that are not among the inputs. Whole-project facts stay
    whole-project whatever subset is built, checked or deployed (language.md section 11): one
    file, or one directory of a project, is checked as a directory build of the whole project
    would check it."""
    from pell import check
    from pell.checker.retry_facts import sql_packages
    from pell.checker.stubs import stub_facts

    given = {path.absolute() for path in inputs}
    joined = list(facts)
    seen: set[Path] = set()
    named = project.package_files(sql_packages(facts))  # SQL calls them with no import
    imported = project.imported_by([*inputs, *(file.path for file in named)])
    for file in [*imported, *named, *project.stub_files()]:
        where = file.path.absolute()
        if where in given or where in seen:
            continue  # an input: its facts are among `facts` if it parsed
        seen.add(where)
        module = file.module
        if module is None:
            continue  # one that does not parse is reported by its own build
        if module.is_stub:
            joined.append(stub_facts(module))  # its marks: nothing to check
            continue
        # only the checker: the facts come from the checked bodies, nothing is lowered
        checked, _ = check(module, target, project.index)
        if checked.retry_facts is not None:
            joined.append(checked.retry_facts)
    across = project_findings(joined, target)
    own = {module.name for module in facts}
    return {
        name: project.config.settle(found) for name, found in across.items() if name in own
    }


@record(frozen=False)
class ModuleOutcome:
    unit: SourceUnit
    status: str  # "built", "unchanged", "failed", "stale", "missing", "fresh"
    source: SourceFile | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    source_map: dict[str, object] | None = None


@record(frozen=False)
class BuildResult:
    outcomes: list[ModuleOutcome] = field(default_factory=list)
    runtime: str | None = None  # the runtime's status, as for modules; None: no errors declared
    # Outputs of modules that no longer exist (with their source maps) and temporary files of
    # interrupted writes, relative to the output directory: removed by a build, stale to --check.
    leftovers: list[Path] = field(default_factory=list)
    # Files that could not be read, written or removed; the rest of the build went on.
    file_errors: list[FileError] = field(default_factory=list)
    # Why the runtime could not be written, at the declarations (the project's, built or not).
    runtime_diagnostics: list[tuple[ProjectFile, Diagnostic]] = field(default_factory=list)
    code_file: str | None = None  # the code file's status, as for modules; None: not recorded
    code_file_path: Path | None = None
    # The settings files of subdirectories of the inputs: other projects, not built.
    nested_projects: list[Path] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> bool:
        return self.count("failed") > 0

    def rendered_diagnostics(self, pretty: bool = False) -> str:
        """Every module's diagnostics, each shown with the path of its `.pell` file."""
        from pell.diagnostics import render_all

        return "".join(
            render_all(o.diagnostics, SourceFile(str(o.unit.path), o.source.text), pretty)
            for o in self.outcomes
            if o.source is not None and o.diagnostics
        ) + "".join(
            render_all([diagnostic], file.source, pretty)
            for file, diagnostic in self.runtime_diagnostics
        )

    def summary(self) -> str:
        parts = [f"built {self.count('built')}", f"unchanged {self.count('unchanged')}"]
        parts.append(f"failed {self.count('failed')}")
        if self.leftovers:
            parts.append(f"removed {len(self.leftovers)}")
        if self.runtime is not None:
            parts.append(f"runtime {self.runtime}")
        if self.code_file == "built" and self.code_file_path is not None:
            parts.append(f"{self.code_file_path.name} updated")
        return ", ".join(parts)


def _recorded_errors(entry: dict[str, object]) -> list[list[str]]:
    """A manifest entry's errors: [name, category] each."""
    errors = entry.get("errors", [])
    if not isinstance(errors, list):
        return []
    return [
        e
        for e in errors
        if isinstance(e, list) and len(e) == 2 and e[1] in CATEGORY_RANGES and isinstance(e[0], str)
    ]


def _references_runtime(entry: dict[str, object]) -> bool:
    """Whether a manifest entry's module names pell_runtime (an entry written before the flag
    was recorded: whether it declared errors)."""
    return bool(entry.get("runtime", entry.get("errors")))


def _cached_facts(entry: dict[str, object]) -> ModuleFacts | None:
    """A manifest entry's retry facts; None (the module is compiled again) if they are missing
    or damaged."""
    data = entry.get("retry_facts")
    if not isinstance(data, dict):
        return None
    try:
        return ModuleFacts.from_json(data)
    except (KeyError, TypeError, ValueError, IndexError, AssertionError):
        return None


def _load_manifest(out_dir: Path) -> dict[str, object]:
    try:
        data = json.loads((out_dir / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _file_hash(path: Path) -> str | None:
    """The SHA-256 of the file's text as read in text mode (universal newlines); None when it
    cannot be read or is not UTF-8. (Read as bytes: a build hashes every output it keeps.)"""
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if "\r" in text:  # what text mode would have read
        return sha256(text.replace("\r\n", "\n").replace("\r", "\n"))
    return hashlib.sha256(data).hexdigest()


def _freshness(path: Path, text: str) -> str:
    """`fresh` when `path` holds `text`, else `stale`, or `missing`."""
    current = _file_hash(path)
    return "missing" if current is None else "fresh" if current == sha256(text) else "stale"


def _source_ref(source: Path, base: str) -> str:
    """Where a module's source is, seen from the output directory `base` (absolute), as the
    manifest keeps it. (os.path, not pathlib: a build asks this of every module.)"""
    try:
        ref = os.path.relpath(source, base)
    except ValueError:  # another drive
        return source.absolute().as_posix()
    return ref if os.sep == "/" else Path(ref).as_posix()


def _is_output(name: str) -> bool:
    return name == MANIFEST or name.endswith((".sql", ".sql.map.json"))


# A pool of worker processes is started only when the modules left to compile (the first one
# is compiled in this process in any case) hold this many characters of source, or more: about
# 25 modules of 5 fns, 0.17 s of compiling on one core. Starting two workers (importing
# concurrent.futures, forking, each worker's first compile in a copied heap) costs about
# 0.06 s; with less source than this a pool saved less than that, or lost time, on 2 cores
# (bench/parallel.py --sweep: -54 ms at 16 modules, -5 to +16 ms at 24, +13 to +58 at 32).
PARALLEL_THRESHOLD = 30_000
# Where workers cannot be forked, each starts afresh: it imports pellc, makes the project again
# and loads the grammar, about 0.5 s here. Two such workers lost time even on 400 modules
# (470,000 characters): 2.96 s against 2.71 s in one process.
SPAWNED_THRESHOLD = 1_000_000


def default_jobs() -> int:
    """The processes a build compiles with unless told: the cores this process may use."""
    count = getattr(os, "process_cpu_count", os.cpu_count)()
    return count if isinstance(count, int) and count > 0 else 1


def _job_count(jobs: int | None) -> int:
    if jobs is None:
        return default_jobs()
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, not {jobs}")
    return jobs


@record
class Compiled:
    """What a build keeps of one module's compile; small and picklable, so that a worker
    process can hand it back (not the syntax tree, nor the lowered module)."""

    source: SourceFile
    diagnostics: tuple[Diagnostic, ...]
    sql: str | None
    runtime: bool  # whether the SQL names pell_runtime
    module: str | None  # its dotted name; None when it did not parse
    ok_stub: bool  # a @stub module without errors: nothing is generated for it
    errors: tuple[DeclaredError, ...] | None  # None when it did not parse, or is a stub
    retry_facts: ModuleFacts | None
    source_map: dict[str, object] | None  # only when the build writes source maps

    @classmethod
    def of(cls, compiled: CompileResult, source_maps: bool) -> Compiled:
        module = compiled.module
        return cls(
            compiled.source,
            compiled.diagnostics,
            compiled.sql,
            compiled.sql is not None and references_runtime(compiled.sql),
            None if module is None else module.dotted_name,
            compiled.ok_stub,
            None if module is None or module.is_stub else tuple(declared_errors(module)),
            compiled.retry_facts,
            compiled.source_map if source_maps else None,
        )


def compile_module(
    text: str,
    filename: str,
    target: str,
    index: ModuleIndex,
    duplicate: Diagnostic | None,
    source_maps: bool,
    path: Path | None = None,
) -> Compiled:
    """One module of a build compiled, here or in a worker process: `filename` is what its
    output header and diagnostics show, `path` where the file is."""
    compiled = compile_source(text, filename, target, index, path)
    if duplicate is not None:
        compiled = compiled.failed_with(duplicate)
    return Compiled.of(compiled, source_maps)


# A worker process's project: set once, when the worker starts.
_worker_project: Project | None = None


@record
class _ProjectCopy:
    """What a worker started afresh (not forked) needs to make the project again."""

    files: tuple[tuple[Path, str, str], ...]  # path, name shown, text
    is_project: bool
    config: Config
    complete: bool

    @classmethod
    def of(cls, project: Project) -> _ProjectCopy:
        files = tuple((f.path, f.source.name, f.source.text) for f in project.files)
        return cls(files, project.index.is_project, project.config, project.complete)

    def project(self) -> Project:
        files = [project_file(path, text, shown) for path, shown, text in self.files]
        return Project(files, self.is_project, self.config, self.complete)


def _start_worker(project: Project | _ProjectCopy) -> None:
    global _worker_project
    import signal  # only worker processes need it

    # Ctrl-C is the parent's to handle: it stops handing out modules and writes nothing.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_project = project.project() if isinstance(project, _ProjectCopy) else project


def _compile_in_worker(
    text: str, path: Path, target: str, duplicate: Diagnostic | None, source_maps: bool
) -> Compiled:
    assert _worker_project is not None
    return compile_module(
        text, path.name, target, _worker_project.index, duplicate, source_maps, path
    )


class _Compilations:
    """The compiles of a build's modules, handed out in the build's order.

    The first module to compile is compiled here (it loads the grammar and the templates,
    which forked workers then share). When `jobs` > 1 and the rest hold PARALLEL_THRESHOLD
    characters of source or more, they all go at once to a pool of `jobs` worker processes,
    and `result` waits for each in turn. Everything else of a build (the manifest, the
    runtime, the writes, the diagnostics, the progress) stays in this process, in order: a
    parallel build writes and says what a serial one does. A module whose worker raised (a
    compiler bug, a worker that died) is compiled again here: a bug raises here as in a
    serial build, at the same module, with the same traceback. A pool that cannot start
    leaves every module to this process."""

    def __init__(
        self,
        project: Project,
        target: str,
        source_maps: bool,
        jobs: int,
        work: dict[int, tuple[str, Path, Diagnostic | None]],  # text, file, duplicate
        engine: Engine | None = None,
    ) -> None:
        self.engine = engine  # when given, it compiles (and keeps) every module
        self.project = project
        self.target = target
        self.source_maps = source_maps
        self.jobs = jobs
        self.work = work
        self.started = False
        self.pool: ProcessPoolExecutor | None = None
        self.futures: dict[int, Future[Compiled]] = {}

    def result(self, number: int) -> Compiled:
        future = self.futures.pop(number, None)
        if future is not None:
            try:
                return future.result()
            except Exception:
                pass  # compiled again here: a bug raises here as in a serial build
        text, path, duplicate = self.work[number]
        if self.engine is not None:
            return self.engine.for_build(path, self.source_maps)
        compiled = compile_module(
            text, path.name, self.target, self.project.index, duplicate, self.source_maps, path
        )
        if not self.started:
            self.started = True
            self._start([later for later in self.work if later > number])
        return compiled

    def _start(self, numbers: list[int]) -> None:
        workers = min(self.jobs, len(numbers))
        forking = _can_fork()
        threshold = PARALLEL_THRESHOLD if forking else SPAWNED_THRESHOLD
        if workers < 2 or sum(len(self.work[n][0]) for n in numbers) < threshold:
            return
        try:
            self.pool = _pool(workers, self.project, forking)
            for number in numbers:
                text, path, duplicate = self.work[number]
                self.futures[number] = self.pool.submit(
                    _compile_in_worker, text, path, self.target, duplicate, self.source_maps
                )
        except Exception:  # no /dev/shm, no more processes...: this process compiles them
            self.close()

    def close(self) -> None:
        """Stop the workers: a module being compiled is finished, the rest are not started."""
        for future in self.futures.values():
            future.cancel()
        self.futures.clear()
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def _can_fork() -> bool:
    """Whether workers are forked: on Linux, from a process without other threads (a thread
    holding a lock while forking would leave it held in the worker)."""
    return sys.platform == "linux" and threading.active_count() == 1


def _pool(workers: int, project: Project, forking: bool) -> ProcessPoolExecutor:
    """A pool of `workers` processes, each holding `project`. A forked worker starts at once
    with the project, the grammar and the templates already loaded; otherwise each worker
    starts afresh, imports pellc and makes the project again."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("fork" if forking else "spawn")
    given: Project | _ProjectCopy = project if forking else _ProjectCopy.of(project)
    return ProcessPoolExecutor(
        workers, mp_context=context, initializer=_start_worker, initargs=(given,)
    )


def build_tree(
    inputs: list[Path],
    out_dir: Path,
    target: str = "23ai",
    check_only: bool = False,
    source_maps: bool = False,
    progress: Callable[[int, int, SourceUnit], None] | None = None,
    jobs: int | None = 1,
    engine: Engine | None = None,
) -> BuildResult:
    """Compile every module under `inputs` into `out_dir`.

    Unchanged modules (same source, compiler version and target, output intact) are not
    rewritten. A module with errors does not stop the others; nor does a file that cannot be
    read or written (it is in `file_errors`). Neither keeps the output an earlier build wrote
    for it (_remove_failed_outputs). Outputs an earlier build wrote for modules that no longer
    exist, and temporary files of interrupted writes, are removed too (`leftovers`). With `check_only`, nothing is written or removed: each output
    is reported `fresh`, `stale` or `missing` (or `failed`), by compiling and comparing bytes,
    and `leftovers` lists what a build would remove. InputError when the inputs hold no
    `.pell` file or the output directory cannot be made.

    `jobs` (None: the machine's cores) is how many processes compile modules at once; any
    number gives the same outputs, manifest and diagnostics as 1 (see `_Compilations`).
    The project (its modules, their texts, the import graph) and the findings only the whole
    project sees are an Engine's (pell.engine). `engine`, the project held in memory between
    builds (`build --watch`), compiles the modules too: it compiles again only what changed
    since it last did. Without one, the build makes its own, and compiles what the manifest
    cannot keep in worker processes (`jobs`).
    """
    from pell.engine import Engine

    processes = _job_count(jobs)
    nested: list[Path] = []
    units, unlisted = find_sources(inputs, nested)
    if not units and not unlisted:
        raise no_sources(inputs)
    if not check_only:
        try:
            _make_directory(out_dir)
        except OSError as error:
            raise FileError("write", out_dir, error) from error
    manifest = _load_manifest(out_dir)
    compiler = compiler_fingerprint()
    same_compiler = manifest.get("version") == compiler and manifest.get("target") == target
    modules = manifest.get("modules")
    recorded: dict[str, object] = modules if isinstance(modules, dict) else {}
    old_entries = recorded if same_compiler else {}
    entries: dict[str, dict[str, object]] = {}
    result = BuildResult(file_errors=list(unlisted), nested_projects=nested)

    # Outputs are written only once every module is compiled: the retry checks that follow
    # calls into other modules can still fail a module that compiled on its own.
    pending: list[tuple[ModuleOutcome, Compiled, dict[str, object]]] = []
    facts: list[tuple[ModuleOutcome, ModuleFacts]] = []
    known: dict[Path, list[DeclaredError]] = {}  # each module's errors, when already seen
    held = engine is not None  # between builds: the engine compiles, and keeps, every module
    if engine is None:
        engine = Engine.of_inputs(inputs, target=target, sources=(units, unlisted))
    project = engine.project
    # Every source is read first: the modules are one project, each may import the others.
    texts: dict[Path, tuple[str | None, CompileResult | None]] = {}
    for unit in units:
        try:
            texts[unit.path] = engine.source(unit.path)
        except FileError as error:
            result.file_errors.append(error)
            texts[unit.path] = (None, None)
    # What each readable module is, and whether its recorded output can be kept: decided
    # before compiling, so that the modules to compile can all be handed out at once.
    plans: dict[int, tuple[str, str, Diagnostic | None, ModuleFacts | None]] = {}
    for number, unit in enumerate(units):
        text = texts[unit.path][0]
        if text is None:
            continue
        old = old_entries.get(unit.output.as_posix())
        source_hash = sha256(text)
        depends = project.dependencies_hash(unit.path)
        duplicate = project.duplicate_of(unit.path)
        reused = None
        if (
            not check_only
            and duplicate is None
            and isinstance(old, dict)
            and old.get("source") == source_hash
            and old.get("depends") == depends
            and (cached_facts := _cached_facts(old)) is not None
            and old.get("output") == _file_hash(out_dir / unit.output)
            and (not source_maps or (out_dir / f"{unit.output.as_posix()}.map.json").exists())
        ):
            reused = cached_facts  # its output is kept
        plans[number] = (source_hash, depends, duplicate, reused)
    work: dict[int, tuple[str, Path, Diagnostic | None]] = {}
    for number, (_, _, duplicate, reused) in plans.items():
        text = texts[units[number].path][0]
        if reused is None and text is not None:
            work[number] = (text, units[number].path, duplicate)
    compilations = _Compilations(
        project, target, source_maps, processes, work, engine if held else None
    )
    base = os.path.abspath(out_dir)
    refs = [_source_ref(unit.path, base) for unit in units]
    try:
        for number, unit in enumerate(units):
            if progress is not None:
                progress(number + 1, len(units), unit)
            key = unit.output.as_posix()
            ref = refs[number]
            old = old_entries.get(key)
            source_hash = depends = ""
            # for an undecodable file, `failure` holds its diagnostic
            text, failure = texts[unit.path]
            compiled = None if failure is None else Compiled.of(failure, source_maps)
            if number in plans:
                source_hash, depends, _, cached_facts = plans[number]
                if cached_facts is not None:
                    assert isinstance(old, dict) and text is not None
                    entries[key] = {**old, "path": ref}
                    known[unit.path] = [
                        DeclaredError(str(old.get("module")), name, category)
                        for name, category in _recorded_errors(old)
                    ]
                    outcome = ModuleOutcome(unit, "unchanged", SourceFile(unit.path.name, text))
                    result.outcomes.append(outcome)
                    facts.append((outcome, cached_facts))
                    continue
                compiled = compilations.result(number)
            outcome = ModuleOutcome(unit, "failed")
            if compiled is not None:
                outcome.source, outcome.diagnostics = compiled.source, compiled.diagnostics
            result.outcomes.append(outcome)
            if compiled is not None and compiled.errors is not None:
                known[unit.path] = list(compiled.errors)  # parsed already: not again
            if compiled is not None and compiled.retry_facts is not None:
                # A module with errors, or a stub, still tells what it commits: the modules
                # that call it are refused for it as they would be if it compiled.
                facts.append((outcome, compiled.retry_facts))
            if compiled is not None and compiled.ok_stub:
                outcome.status = "stub"  # checked; an Oracle package is not generated
                continue
            if compiled is None or compiled.sql is None or compiled.module is None:
                continue  # failed: its recorded output is removed (_remove_failed_outputs)
            entry: dict[str, object] = {
                "source": source_hash,
                "output": sha256(compiled.sql),
                "module": compiled.module,
                "errors": [[e.name, e.category] for e in compiled.errors or ()],
                "runtime": compiled.runtime,
                "path": ref,
                "depends": depends,
            }
            if compiled.retry_facts is not None:
                entry["retry_facts"] = compiled.retry_facts.to_json()
            pending.append((outcome, compiled, entry))
            if isinstance(old, dict):
                entries[key] = {**old, "path": ref}  # until this module's new output is written
            outcome.status = "compiled"
    finally:
        compilations.close()

    if held and engine.covers([unit.path for unit in units]):
        across = engine.project_findings()  # the same, kept between builds
    else:  # from the facts compiled or kept in the manifest: none is compiled again for them
        across = engine.findings_for(
            [unit.path for unit in units], [module_facts for _, module_facts in facts]
        )
    for outcome, module_facts in facts:
        found = across.get(module_facts.name, [])
        if not found:
            continue
        outcome.diagnostics = (*outcome.diagnostics, *found)
        if any(d.is_error for d in found):
            outcome.status = "failed"

    for outcome, compiled, entry in pending:
        assert compiled.sql is not None
        key = outcome.unit.output.as_posix()
        output = out_dir / outcome.unit.output
        if outcome.status != "failed" and check_only:
            outcome.status = _freshness(output, compiled.sql)
            continue
        old = old_entries.get(key)
        if (
            held
            and outcome.status != "failed"
            and isinstance(old, dict)
            and old.get("output") == entry["output"] == _file_hash(output)
            and (not source_maps or (out_dir / f"{key}.map.json").exists())
        ):
            # Held in memory, a module whose imports changed costs no compile; when its SQL
            # is what the output holds, its file is kept too (watch: `wrote` is what changed).
            outcome.status = "unchanged"
            entries[key] = entry
            continue
        if outcome.status != "failed":
            try:
                write_atomically(output, compiled.sql)
                if source_maps and compiled.source_map is not None:
                    source_map = json.dumps(compiled.source_map, indent=1) + "\n"
                    write_atomically(out_dir / f"{key}.map.json", source_map)
            except FileError as error:
                result.file_errors.append(error)
                outcome.status = "failed"
            else:
                outcome.status = "built"
                entries[key] = entry
    _remove_failed_outputs(result, recorded, entries, out_dir, check_only)

    # The output directory holds every module the manifest records, built now or before.
    orphans, carried = _recorded_elsewhere(base, units, refs, recorded, not unlisted)
    for key, entry in carried.items():
        entries[key] = entry
    # The runtime is the whole project's, whatever subset is built; it is written when any
    # module declares an error or any output names pell_runtime.
    # Modules of the output directory that the project does not hold (built before, from
    # inputs outside it) keep their errors in the runtime too.
    in_project = {".".join(file.declares).lower() for file in project.files if file.declares}
    elsewhere = [
        DeclaredError(str(entry.get("module")), str(error[0]), str(error[1]))
        for entry in entries.values()
        if str(entry.get("module")).lower() not in in_project
        for error in _recorded_errors(entry)
    ]
    runtime = project_runtime(project, elsewhere, known)
    needs_runtime = bool(runtime.errors) or any(_references_runtime(e) for e in entries.values())
    stale = [out_dir / name for key in orphans for name in (key, f"{key}.map.json")]
    runtime_path = out_dir / RUNTIME_FILE
    if manifest.get("runtime_errors") and not needs_runtime:
        stale.append(runtime_path)  # written for errors that no module declares any more
    stale += [
        path
        for path in sorted(out_dir.rglob(".*.tmp"))
        if (match := _TEMPORARY.fullmatch(path.name)) and _is_output(match["name"])
    ]
    for path in stale:
        if not _remove(path, out_dir, check_only, result):
            key = path.relative_to(out_dir).as_posix().removesuffix(".map.json")
            if key in orphans:
                entries[key] = orphans[key]  # to try again next time

    runtime_hash: str | None = None  # of the runtime this build wrote, or found current
    # What the runtime's text is made from. When the manifest records the same, and the file
    # still holds what was written then, the runtime is not made again (nor Jinja imported).
    numbered = [(e.module, e.name, e.category, e.exception, e.code) for e in runtime.errors]
    runtime_inputs = sha256(repr((compiler, target, numbered)))
    recorded_runtime = manifest.get("runtime_errors")
    if needs_runtime and runtime.problems:
        result.runtime = "failed"
        result.runtime_diagnostics = runtime.problems
    elif (
        needs_runtime
        and manifest.get("runtime_inputs") == runtime_inputs
        and isinstance(recorded_runtime, str)
        and _file_hash(runtime_path) == recorded_runtime
    ):
        result.runtime = "fresh" if check_only else "unchanged"
        runtime_hash = recorded_runtime
    elif needs_runtime:
        runtime_sql_text = runtime.sql(__version__, target)
        try:
            result.runtime = _write_or_check(runtime_path, runtime_sql_text, check_only)
        except FileError as error:
            result.runtime = "failed"
            result.file_errors.append(error)
        else:
            runtime_hash = sha256(runtime_sql_text)
    book_text = runtime.new_book_text
    if runtime.book_path is not None and book_text is not None and not runtime.problems:
        try:
            result.code_file = _write_or_check(runtime.book_path, book_text, check_only)
        except FileError as error:
            result.file_errors.append(error)
        result.code_file_path = runtime.book_path
    if not check_only:
        new_manifest = {
            "version": compiler,
            "target": target,
            "modules": dict(sorted(entries.items())),
            "runtime_errors": runtime_hash
            if runtime_hash is not None
            else recorded_runtime
            if runtime_path.exists()
            else None,
            "runtime_inputs": runtime_inputs if runtime_hash is not None else None,
        }
        try:
            # compact: json's C encoder writes it (with `indent`, its Python one: 10x slower)
            manifest_text = json.dumps(new_manifest, separators=(",", ":")) + "\n"
            write_atomically(out_dir / MANIFEST, manifest_text)
        except FileError as error:
            result.file_errors.append(error)
    return result


def _remove_failed_outputs(
    result: BuildResult,
    recorded: dict[str, object],  # the manifest's modules, by output
    entries: dict[str, dict[str, object]],  # the new manifest's, so far
    out_dir: Path,
    check_only: bool,
) -> None:
    """A module that failed keeps no output, as make's .DELETE_ON_ERROR deletes a target whose
    recipe failed: its last `.sql` no longer matches its source, and a deploy or a CI step
    shipping the output directory would ship it. Nor does one that is now a @stub (nothing is
    generated for it). Removed only when the manifest records it as pellc's output (a file
    pellc did not write stays), with its source map and its manifest entry; in `leftovers`
    (the summary's `removed N`). `--check` lists what a stub leaves; a failed module is
    reported by its errors. An output that cannot be removed keeps its entry: tried again
    next time."""
    written = {
        o.unit.output.as_posix() for o in result.outcomes if o.status not in ("failed", "stub")
    }
    for outcome in result.outcomes:
        key = outcome.unit.output.as_posix()
        previous = recorded.get(key)
        if (
            outcome.status not in ("failed", "stub")
            or not isinstance(previous, dict)
            or key in written  # by another input's module of the same output path
            or (check_only and outcome.status == "failed")
        ):
            continue
        removed = [
            _remove(out_dir / name, out_dir, check_only, result)
            for name in (key, f"{key}.map.json")
        ]
        if all(removed):
            entries.pop(key, None)
        else:
            entries[key] = {
                **previous,
                "path": _source_ref(outcome.unit.path, os.path.abspath(out_dir)),
            }


def _recorded_elsewhere(
    base: str,  # the output directory, absolute
    units: list[SourceUnit],
    refs: list[str],  # each unit's _source_ref
    recorded: dict[str, object],
    complete: bool,
) -> tuple[dict[str, dict[str, object]], dict[str, dict[str, object]]]:
    """The manifest's modules that are not among `units`: those whose source is gone (deleted,
    renamed, or now mapped to another output), and those outside this build's inputs whose
    source still exists. When the sources could not all be listed (`complete` false), none
    counts as gone."""
    current_keys = {unit.output.as_posix() for unit in units}
    current_refs = set(refs)
    orphans: dict[str, dict[str, object]] = {}
    carried: dict[str, dict[str, object]] = {}
    for key, entry in sorted(recorded.items()):
        relative = Path(key)
        if key in current_keys or not isinstance(entry, dict):
            continue
        if relative.is_absolute() or ".." in relative.parts or relative.suffix != ".sql":
            continue  # not an output a build writes: leave it alone
        ref = entry.get("path")
        gone = isinstance(ref, str) and (
            ref in current_refs or not os.path.exists(os.path.normpath(os.path.join(base, ref)))
        )
        # a manifest entry without a path was written before paths were recorded: kept
        (orphans if gone and complete else carried)[key] = entry
    return orphans, carried


def _remove(path: Path, out_dir: Path, check_only: bool, result: BuildResult) -> bool:
    """Remove a left-over file (and the directories it leaves empty) and list it in
    `result.leftovers`; checking, only list it. False when it could not be removed."""
    if not (path.is_file() or path.is_symlink()):
        return True
    if not check_only:
        try:
            path.unlink()
        except OSError as error:
            result.file_errors.append(FileError("remove", path, error))
            return False
        for parent in path.parents:
            if parent == out_dir or not parent.is_relative_to(out_dir):
                break
            try:
                parent.rmdir()
            except OSError:  # not empty
                break
    result.leftovers.append(path.relative_to(out_dir))
    return True


def _write_or_check(path: Path, text: str, check_only: bool) -> str:
    """Write `text` to `path` unless it holds it already: `built` or `unchanged`; checking,
    `fresh`, `stale` or `missing`."""
    if check_only:
        return _freshness(path, text)
    if _file_hash(path) == sha256(text):
        return "unchanged"
    write_atomically(path, text)
    return "built"
