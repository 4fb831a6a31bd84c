"""The project held in memory: each module's compile kept with what it read, and computed again
only when that changed (the model is salsa's memoised queries, with mypy's fine-grained
dependencies and an early cut-off: what an importer reads of a module is compared by value).

Stages, each kept until what it read changes:
- a module's text: the editor's buffer (an overlay) or the file on disk;
- its compile (pell.compile_source against the project's index): reads its own text, whether
  another file declares the same module, and the interface of every project module it
  imports at any depth (Project.imported_by's loose reading, and `log`/`logger`, which any
  module may name without an import): the parsed tree without fn bodies, compared without
  spans and offsets (_same). So an edit to a comment, the layout or a fn body compiles that
  module again, and no other; one to a signature, a record, an error, also its importers;
- the project-wide retry findings (project_findings): each module's are found again when the
  retry facts of a module its calls reach, at any depth, changed (a body edit that adds a
  COMMIT reaches the retried callers of its callers);
- the error codes (project_runtime): read every module's parsed tree and the code file.

`pellc check`, `verify`, `explain`, `build`, `runtime`, `deploy` and the language server ask an
Engine. A directory build (pell.build.build_tree) takes its project, texts and project-wide
findings from one; it keeps its manifest (an unchanged module's facts are read from it, not
compiled again) and, unless the engine is held between builds (`build --watch`: the engine
compiles), hands the modules it compiles to worker processes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pell import CompileResult, ast, compile_source, decode_source
from pell.build import (
    FileError,
    SourceUnit,
    is_project_of,
    project_paths,
    project_wide_findings,
    read_source,
)
from pell.diagnostics import Diagnostic, has_errors
from pell.project import (
    CONFIG_FILES,
    Project,
    ProjectFile,
    _key,
    _parsed_stub,
    _stub_files,
    file_identity,
    import_keys,
    project_file,
)
from pell.records import fields, record, replace

if TYPE_CHECKING:
    from pell.build import Compiled
    from pell.checker.model import CheckedModule
    from pell.checker.retry_facts import ModuleFacts, RetryGraph
    from pell.runtime import ProjectRuntime

# Modules any module may name without an import or a `::` in its text (pell.checker.imports:
# its own logger unless the project has a module of that name).
_ALWAYS_READ = (("log",), ("logger",))


@record(frozen=False)
class _Module:
    """One `.pell` file of the project and what the engine keeps of it."""

    path: Path
    disk: str | None  # its text on disk; None when it is not UTF-8
    failure: CompileResult | None  # then: the `encoding` diagnostic
    overlay: str | None = None  # an editor's buffer, read instead of the disk
    file: ProjectFile | None = None  # the project's copy of its current text
    read: tuple[object, ...] | None = None  # what its compile read (Engine._inputs)
    result: CompileResult | None = None  # that compile
    revision: int = -1  # the engine's revision in which `read` was last compared

    @property
    def text(self) -> str | None:
        return self.overlay if self.overlay is not None else self.disk


class Engine:
    """A project in memory. Results are computed when first asked and kept; an update
    (set_overlay, files_changed) recomputes what it invalidated among the results already
    computed and says whose diagnostics changed."""

    def __init__(self, root: Path, *, target: str | None = None) -> None:
        """root: a project directory (pell.toml or not) or a single .pell file; reads config like
        build does."""
        self._start([root], target)

    @classmethod
    def of_inputs(
        cls,
        inputs: list[Path],
        *,
        target: str | None = None,
        sources: tuple[list[SourceUnit], list[FileError]] | None = None,
    ) -> Engine:
        """The engine of a command's inputs (several files and directories): every `.pell`
        under the nearest project root above the first input, with the inputs themselves
        (pell.build.project_paths). `sources`: what find_sources(inputs) found, when the
        caller has listed them already."""
        engine = cls.__new__(cls)
        engine._start(list(inputs), target, sources)
        return engine

    def _start(
        self,
        inputs: list[Path],
        target: str | None,
        sources: tuple[list[SourceUnit], list[FileError]] | None = None,
    ) -> None:
        self.inputs = inputs
        self._target = target  # as given
        config, paths, unlisted = project_paths(inputs, sources)
        self.config = config
        self.target: str = target or config.target or "23ai"
        self._listed = not unlisted  # every directory could be listed
        self._walked(paths)
        self._modules: dict[Path, _Module] = {}
        self._unreadable: set[Path] = set()  # listed, but they cannot be read
        self._read_errors: dict[Path, FileError] = {}  # why each listed file could not be read
        for path in paths:
            self._read(path)
        # a listed path that is not there (an input named by mistake) leaves the project
        # incomplete too, as one that cannot be read: an import of its module is no error
        self._unreadable.update(self._read_errors)
        self.recomputed: list[Path] = []  # modules whose compile ran in the last update
        self._findings: dict[str, list[Diagnostic]] = {}
        self._findings_read: list[ModuleFacts] | None = None  # None: not computed
        self._findings_revision = -1
        # each module's findings through calls, with the facts of the modules they read
        self._by_module: dict[str, tuple[tuple[ModuleFacts, ...], list[Diagnostic]]] = {}
        self._runtime: ProjectRuntime | None = None
        self._runtime_read: tuple[object, ...] | None = None
        self._runtime_revision = -1
        self._shown: dict[Path, tuple[Diagnostic, ...]] = {}  # what diagnostics() returned
        self._interfaces: dict[Path, tuple[ProjectFile, ast.Module | None]] = {}
        self._absolute: dict[Path, str] = {}  # each path's os.path.abspath, asked once
        self._closures: dict[Path, tuple[tuple[Path, ast.Module | None], ...]] = {}
        self._declared: dict[tuple[str, ...], list[Path]] = {}  # the index, as paths
        self._for_build: dict[Path, tuple[CompileResult, bool, Compiled]] = {}
        self._revision = 0
        self._project()

    # ---- the modules and their texts -------------------------------------------------

    def _read(self, path: Path) -> None:
        """(Re)read `path` from disk: a module, or gone when it cannot be read."""
        try:
            data = read_source(path)
        except FileError as error:
            self._read_errors[path] = error
            old = self._modules.get(path)
            if old is not None and old.overlay is not None:
                old.disk, old.failure = None, None  # gone under an open buffer: the buffer
            else:
                self._modules.pop(path, None)
            if os.path.lexists(path):
                self._unreadable.add(path)  # there, but unreadable: the project is incomplete
            else:
                self._unreadable.discard(path)
            return
        self._unreadable.discard(path)
        self._read_errors.pop(path, None)
        text, failure = decode_source(data, path.name)
        module = self._modules.get(path)
        if module is None:
            self._modules[path] = _Module(path, text, failure)
        else:
            module.disk, module.failure = text, failure

    def _project(self) -> None:
        """The project of the current texts; each unchanged file keeps its parse, and each
        module the closure of imports it had, unless a file of it changed."""
        absolute = {p: self._absolute.get(p) or os.path.abspath(p) for p in self._modules}
        self._absolute = absolute
        self._modules = {p: self._modules[p] for p in sorted(self._modules, key=absolute.__getitem__)}
        files = []
        changed: set[Path] = set()
        for module in self._modules.values():
            text, before = module.text, module.file
            if text is None:
                module.file = None
            elif module.file is None or module.file.source.text != text:
                module.file = project_file(module.path, text)
            if module.file is not before:
                changed.add(module.path)
            if module.file is not None:
                files.append(module.file)
        complete = self._listed and not self._unreadable and len(files) == len(self._modules)
        self.project = Project(files, is_project_of(self.inputs, self.config), self.config, complete)
        declared = {key: [f.path for f in found] for key, found in self.project.index.files.items()}
        if declared != self._declared:  # a module added, removed, renamed: imports resolve anew
            self._closures = {}
        else:
            self._closures = {
                path: closure
                for path, closure in self._closures.items()
                if path not in changed and not any(p in changed for p, _ in closure)
            }
        self._declared = declared
        # Every change of text makes a new revision: a stage compares what it read once per
        # revision (salsa's "verified at").
        self._revision += 1
        self._by_name = {name: path for path, name in absolute.items()}

    def _walked(self, paths: list[Path]) -> None:
        """The order a build finds the modules in (project_paths): the order of the facts the
        project-wide findings join, as a build joins them (which of two clashing names is
        reported depends on it)."""
        self._walk = {os.path.abspath(path): number for number, path in enumerate(paths)}

    def covers(self, paths: Iterable[Path]) -> bool:
        """Whether `paths` are every module of the project."""
        own = {self._own(path) for path in paths}
        return None not in own and own == set(self._modules)

    def _own(self, path: Path) -> Path | None:
        """The engine's name of `path` (given however: relative, absolute, through a symlink)."""
        if path in self._modules:
            return path
        found = self._by_name.get(os.path.abspath(path))
        if found is None:
            identity = file_identity(path)
            found = next((p for p in self._modules if file_identity(p) == identity), None)
        return found

    def source(self, path: Path) -> tuple[str | None, CompileResult | None]:
        """The text of the file at `path` as the engine read it, or (None, a result holding
        its `encoding` diagnostic) when it is not UTF-8 (pell.decode_source); FileError when
        it could not be read. A file listed since the engine last looked is read now."""
        error = self._read_errors.get(path)
        if error is not None:
            raise error
        own = self._own(path)
        if own is None:
            return decode_source(read_source(path), path.name)
        module = self._modules[own]
        return (module.text, None) if module.overlay is not None else (module.disk, module.failure)

    def paths(self) -> list[Path]:
        """Every .pell module of the project, sorted."""
        return list(self._modules)

    # ---- updates -------------------------------------------------------------------

    def set_overlay(self, path: Path, text: str | None) -> list[Path]:
        """An editor buffer's text for `path` (None: drop it, read the disk again). Returns
        the modules whose diagnostics may have changed (the module and exactly those its
        change affects), sorted."""
        own = self._own(path)
        if own is None:
            if text is None or path.suffix != ".pell":
                return []
            own = path  # a new buffer: a module of the project from now on
            self._modules[own] = _Module(own, None, None)
            self._unreadable.discard(own)
        self._modules[own].overlay = text
        if text is None:
            self._read(own)  # gone from the project if there is no such file
        return self._update({own})

    def files_changed(self, paths: Iterable[Path]) -> list[Path]:
        """Files created/changed/deleted on disk (from watch). Returns affected modules, as
        set_overlay."""
        changed: set[Path] = set()
        listing = False
        codes = self.config.error_codes_path
        for path in paths:
            # the settings, or the error code file the runtime numbers errors by
            if path.name in CONFIG_FILES or (
                codes is not None and os.path.abspath(path) == os.path.abspath(codes)
            ):
                return self._restart()
            own = self._own(path)
            if own is not None:
                self._read(own)
                changed.add(own)
            elif path.suffix == ".pell" or path.is_dir() or not path.exists():
                listing = True  # a new file, or a directory made or removed
        if listing:
            _, found, unlisted = project_paths(self.inputs)
            self._listed = not unlisted
            self._walked(found)
            known = {os.path.abspath(p) for p in self._modules}
            for path in found:
                if os.path.abspath(path) not in known:
                    self._read(path)
                    changed.add(path)
            listed = {os.path.abspath(p) for p in found}
            for path in list(self._modules):
                if os.path.abspath(path) not in listed and self._modules[path].overlay is None:
                    del self._modules[path]
                    changed.add(path)
        return self._update(changed)

    def _restart(self) -> list[Path]:
        """The settings changed: everything is read again."""
        before = set(self._modules)
        overlays = {p: m.overlay for p, m in self._modules.items() if m.overlay is not None}
        self._start(self.inputs, self._target)
        for path, text in overlays.items():
            if path in self._modules:
                self._modules[path].overlay = text
        self._project()
        self.recomputed = []
        return sorted(before | set(self._modules), key=_order)

    def _update(self, changed: set[Path]) -> list[Path]:
        """Recompute what the change invalidated among what was computed, and say which
        modules' diagnostics changed."""
        self._project()
        self.recomputed = []
        # the project-wide findings as they were, when they were computed: a caller's may
        # change with a callee's facts though the caller is not compiled again
        findings_before = dict(self._findings) if self._findings_read is not None else None
        # likewise the error-code problems (a clash of exception names) a module is shown
        problems_before = _problems(self._runtime) if self._runtime_read is not None else None
        for module in list(self._modules.values()):
            if module.result is not None:
                self._compile(module)  # compiled again only if what it read changed
        # What diagnostics() returned before is compared below; a module never shown whose
        # compile or findings changed may say something else now: it is affected too.
        affected = set(changed) | {p for p in self.recomputed if p not in self._shown}
        if findings_before is not None:
            findings_after = self.project_findings()
            for path, module in self._modules.items():
                facts = module.result.retry_facts if module.result is not None else None
                if path in self._shown or facts is None:
                    continue
                if findings_before.get(facts.name) != findings_after.get(facts.name):
                    affected.add(path)
        if problems_before is not None:
            problems_after = _problems(self.runtime())
            for path in problems_before.keys() | problems_after.keys():
                if path in self._shown or path not in self._modules:
                    continue
                if problems_before.get(path) != problems_after.get(path):
                    affected.add(path)
        for path, shown in list(self._shown.items()):
            if path not in self._modules:
                del self._shown[path]
                affected.add(path)
            elif tuple(self.diagnostics(path)) != shown:
                affected.add(path)
        return sorted(affected, key=_order)

    # ---- the stages ----------------------------------------------------------------

    def _closure(self, path: Path) -> tuple[tuple[Path, ast.Module | None], ...]:
        """The project modules `path`'s module reads, at any depth, with their parsed trees."""
        found = self._closures.get(path)
        if found is not None:
            return found
        reached: dict[Path, ProjectFile] = {}
        seen: set[tuple[str, ...]] = set()
        pending = [path]
        while pending:
            module = self._modules[pending.pop()]
            text = module.file.source.text if module.file is not None else ""
            for key in (*import_keys(text), *_ALWAYS_READ):
                key = self.project.import_key(key)
                if key in seen:
                    continue
                seen.add(key)
                for file in self.project.index.files.get(key, []):
                    if file.path not in reached:
                        reached[file.path] = file
                        pending.append(file.path)
        ordered = sorted(reached, key=lambda p: self._absolute.get(p) or os.path.abspath(p))
        closure = tuple((p, self._interface(reached[p])) for p in ordered)
        self._closures[path] = closure
        return closure

    def _interface(self, file: ProjectFile) -> ast.Module | None:
        """What an importer's compile reads of a module: its parsed tree but for the bodies of
        its fns (the checker declares another module's items without its bodies, and lowers
        none of them; pell.checker.checker.declare). An aggregate's and an object's are kept.
        On PostgreSQL the bodies are read too: whether a callee commits decides whether the
        caller is a PROCEDURE and CALLs it (pell.postgres.names.Commits)."""
        kept = self._interfaces.get(file.path)
        if kept is not None and kept[0] is file:
            return kept[1]
        module = file.module
        if module is not None and self.target != "postgres":
            items = tuple(
                replace(item, body=_NO_BODY, finally_body=None)
                if isinstance(item, ast.Fn)
                else item
                for item in module.items
            )
            module = replace(module, items=items)
        if kept is not None and kept[1] is not None and _same(kept[1], module):
            module = kept[1]  # the same interface: its importers compare it by identity
        self._interfaces[file.path] = (file, module)
        return module

    def _inputs(self, module: _Module) -> tuple[object, ...]:
        """What the compile of `module` reads (compared by value; see the module's doc)."""
        return (module.text, self.project.duplicate_of(module.path), self._closure(module.path))

    def _compile(self, module: _Module) -> CompileResult:
        """The module's own compile, without the findings only the project sees."""
        text = module.text
        if text is None:
            assert module.failure is not None
            return module.failure
        if module.result is not None and module.revision == self._revision:
            return module.result
        read = self._inputs(module)
        if module.result is None or module.read is None or not _same(module.read, read):
            path = module.path
            result = compile_source(text, path.name, self.target, self.project.index, path)
            duplicate = self.project.duplicate_of(path)
            if duplicate is not None:
                result = result.failed_with(duplicate)
            module.result, module.read = result, read
            self.recomputed.append(path)
        module.revision = self._revision  # (not when the compile raised: asked again, it runs)
        return module.result

    def _module(self, path: Path) -> _Module:
        own = self._own(path)
        if own is None:
            raise KeyError(f"{path} is no module of this project")
        return self._modules[own]

    def project_findings(self) -> dict[str, list[Diagnostic]]:
        """The retry findings only the whole project sees, by module name (what a directory
        build of the project adds to each module's diagnostics): project_findings, with each
        module's kept while the facts of the modules its calls reach are the same."""
        from pell.checker.retry_facts import RetryGraph
        from pell.checker.retry_safety import for_target, retry_findings, schema_clashes

        if self._findings_revision == self._revision:
            return self._findings
        self._findings_revision = self._revision
        last = len(self._walk)  # a new buffer's module: after the others
        walked = sorted(self._modules, key=lambda p: self._walk.get(self._absolute[p], last))
        facts = [
            result.retry_facts
            for path in walked
            if (result := self._compile(self._modules[path])).retry_facts is not None
        ]
        if self._findings_read == facts:
            return self._findings
        graph = RetryGraph(facts)
        kept = self._by_module
        self._by_module = {}
        found: dict[str, list[Diagnostic]] = {}
        for module in facts:
            reached = _reached(graph, module)
            read = tuple(graph.modules[name] for name in reached)
            previous = kept.get(module.name)
            if previous is not None and previous[0] == read:
                extra = previous[1]
            elif any(name != module.name for name in reached):
                # what it finds through the other modules: the findings it has on its own less
                alone = set(retry_findings(RetryGraph([module]), module.name, self.target))
                extra = [
                    d for d in retry_findings(graph, module.name, self.target) if d not in alone
                ]
                extra = for_target(extra, self.target)
            else:
                extra = []  # no call leaves the module: it found all of its findings itself
            self._by_module[module.name] = (read, extra)
            if extra:
                found[module.name] = list(extra)
        for name, clashes in schema_clashes(facts).items():
            found.setdefault(name, []).extend(clashes)
        self._findings = {name: self.config.settle(d) for name, d in found.items()}
        self._findings_read = facts
        return self._findings

    def findings_for(
        self, paths: list[Path], facts: list[ModuleFacts]
    ) -> dict[str, list[Diagnostic]]:
        """The project-wide findings of the modules at `paths` (the facts of those that
        parsed: `facts`) as a command given those files sees them: project_wide_findings."""
        return project_wide_findings(self.project, paths, facts, self.target)

    def runtime(self) -> ProjectRuntime | None:
        """The project's error codes (pell_runtime), made again when a module's parsed tree
        changed; None when the code file cannot be used (a build says why)."""
        from pell.error_codes import CodeFileError
        from pell.runtime import project_runtime

        if self._runtime_revision == self._revision:
            return self._runtime
        self._runtime_revision = self._revision
        read = (
            tuple((f.path, f.module) for f in self.project.files),
            self.project.complete,
            _code_book(self.project),
        )
        if self._runtime_read != read:
            try:
                self._runtime = project_runtime(self.project)
            except CodeFileError:
                self._runtime = None
            self._runtime_read = read
        return self._runtime

    # ---- queries -------------------------------------------------------------------

    def compiled_alone(self, path: Path) -> CompileResult:
        """The module's own compile, without the project-wide findings (what a command
        checking some files joins with findings_for)."""
        module = self._module(path)
        if path != module.path and module.text is not None:
            # Another name of the file (a symlink elsewhere): its output header, and whether
            # it sits in a `stubs` folder, are that name's. Compiled as named, not kept.
            result = compile_source(module.text, path.name, self.target, self.project.index, path)
            duplicate = self.project.duplicate_of(module.path)
            return result if duplicate is None else result.failed_with(duplicate)
        return self._compile(module)

    def for_build(self, path: Path, source_maps: bool) -> Compiled:
        """What a directory build keeps of the module's compile (pell.build.Compiled), made
        again only when the module was compiled again."""
        from pell.build import Compiled

        result = self.compiled_alone(path)
        kept = self._for_build.get(path)
        if kept is not None and kept[0] is result and kept[1] == source_maps:
            return kept[2]
        compiled = Compiled.of(result, source_maps)
        self._for_build[path] = (result, source_maps, compiled)
        return compiled

    def compiled(self, path: Path) -> CompileResult:
        """The module's result as a build of the whole project has it: its own diagnostics,
        then the project-wide findings; no SQL when any of them is an error."""
        result = self._compile(self._module(path))
        if result.retry_facts is None:
            return result
        found = self.project_findings().get(result.retry_facts.name, [])
        if not found:
            return result
        diagnostics = (*result.diagnostics, *found)
        return replace(
            result, diagnostics=diagnostics, sql=None if has_errors(diagnostics) else result.sql
        )

    def diagnostics(self, path: Path) -> list[Diagnostic]:
        """Everything a build of the project reports for that file: its compile's, the
        project-wide findings, and the error-code problems at its declarations; none for a
        path that is no module (any more: deleted, a closed buffer): what clears an editor's."""
        own = self._own(path)
        if own is None:
            return []
        module = self._modules[own]
        shown = list(self.compiled(module.path).diagnostics)
        runtime = self.runtime()
        if runtime is not None:
            shown += [d for file, d in runtime.problems if file.path == module.path]
        self._shown[module.path] = tuple(shown)
        return shown

    def all_diagnostics(self) -> dict[Path, list[Diagnostic]]:
        """diagnostics() of every module."""
        return {path: self.diagnostics(path) for path in self._modules}

    def module(self, path: Path) -> ast.Module | None:
        """The module's parsed (located) tree; a shipped stub's too."""
        own = self._own(path)
        if own is None:
            stub = next((p for p in _stub_files().values() if p == path), None)
            if stub is not None:
                return _parsed_stub(stub)
            raise KeyError(f"{path} is no module of this project")
        file = self._modules[own].file
        return file.module if file is not None else None

    def checked(self, path: Path) -> CheckedModule | None:
        """The checked module (for hover and the like); None when it did not parse."""
        return self._compile(self._module(path)).checked

    def module_path_of(self, name: tuple[str, ...]) -> Path | None:
        """`a::b` -> the file that declares it (the project's first, else pellc's stub)."""
        key = self.project.import_key(_key(name))
        files = self.project.index.files.get(key)
        if files:
            return files[0].path
        return _stub_files().get(key)

    def importers(self, path: Path) -> list[Path]:
        """The modules importing (or naming) the module at `path` directly."""
        own = self._own(path)
        if own is None:
            return []
        found = []
        for module in self._modules.values():
            if module.file is None or module.path == own:
                continue
            for key in import_keys(module.file.source.text):
                files = self.project.index.files.get(self.project.import_key(key), [])
                if any(file.path == own for file in files):
                    found.append(module.path)
                    break
        return found


# Offsets into a module's text that syntax trees compare, besides the spans they do not: an
# importer reads none of them (its diagnostics point into its own text; it lowers none of the
# imported module's SQL), so they do not make an imported module another one.
_NO_BODY = ast.Block((), span=ast.NO_SPAN)
_OFFSETS = frozenset({"text_start", "first_column"})
_COMPARED: dict[type, tuple[str, ...] | None] = {}


def _same(old: object, new: object) -> bool:
    """Equal as an importer reads it: records field by field as their `==` compares them,
    but for _OFFSETS."""
    if old is new:
        return True
    kind = type(old)
    if kind is not type(new):
        return False
    names = _COMPARED.get(kind, ())
    if names == ():
        try:
            declared = fields(kind)
        except TypeError:
            names = None
        else:
            names = tuple(f.name for f in declared if f.compare and f.name not in _OFFSETS)
        _COMPARED[kind] = names
    if names is not None:
        return all(_same(getattr(old, name), getattr(new, name)) for name in names)
    if kind is tuple or kind is list:
        assert isinstance(old, tuple | list) and isinstance(new, tuple | list)
        return len(old) == len(new) and all(map(_same, old, new))
    return old == new


def _reached(graph: RetryGraph, module: ModuleFacts) -> list[str]:
    """The modules whose fns `module`'s fns reach through calls (PL/SQL's and SQL's), at any
    depth, itself included, sorted: what retry_findings reads of the graph for it."""
    reached = {module.name}
    pending = [(module.name, fn) for fn in module.fns]
    seen = set(pending)
    while pending:
        key = pending.pop()
        for _, callee in (*graph.calls.get(key, ()), *graph.sql_calls.get(key, ())):
            if callee not in seen:
                seen.add(callee)
                reached.add(callee[0])
                pending.append(callee)
    return sorted(reached)


def _problems(runtime: ProjectRuntime | None) -> dict[Path, list[Diagnostic]]:
    """A runtime's problems, by the path of the module they are shown at."""
    found: dict[Path, list[Diagnostic]] = {}
    for file, diagnostic in runtime.problems if runtime is not None else []:
        found.setdefault(file.path, []).append(diagnostic)
    return found


def _order(path: Path) -> str:
    return os.path.abspath(path)


def _code_book(project: Project) -> str | None:
    """The text of the project's error-code file, if it has one (project_runtime reads it)."""
    book = project.config.error_codes_path
    if book is None:
        return None
    try:
        return book.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
