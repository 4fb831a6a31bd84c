"""STAND-IN for the project engine (issue 27 item 1): the API the language server is written
against, done the naive way. Every change recompiles the whole project as `pellc check` does
(pell.build.project_of, pell.compile_source, pell.build.project_wide_findings); nothing is
kept between changes but the buffers' texts. The real engine replaces this file whole: put
nothing here that `pell.lsp` needs beyond this API.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pell import CompileResult, ast, check, compile_source
from pell.build import project_of, project_wide_findings
from pell.checker.model import CheckedModule
from pell.diagnostics import Diagnostic, has_errors
from pell.project import Project, find_config
from pell.records import replace


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path))


class Engine:
    """STAND-IN: the modules of one project (a directory, or the project of one `.pell` file)
    with the editor's unsaved texts in place of the files'."""

    def __init__(self, root: Path, *, target: str | None = None) -> None:
        self.root = _absolute(root)
        self.target = target or find_config(self.root).target or "23ai"
        self._overlays: dict[Path, str] = {}
        self._recompute()

    def _recompute(self) -> None:
        inputs = [self.root, *(p for p in self._overlays if not p.is_relative_to(self.root))]
        self._project: Project = project_of(inputs, dict(self._overlays))
        self._results: dict[Path, CompileResult] = {}
        self._checked: dict[Path, CheckedModule | None] = {}
        for file in self._project.files:
            path = _absolute(file.path)
            result = compile_source(
                file.source.text, str(path), self.target, self._project.index, path
            )
            duplicate = self._project.duplicate_of(file.path)
            self._results[path] = result.failed_with(duplicate) if duplicate else result
        facts = [r.retry_facts for r in self._results.values() if r.retry_facts is not None]
        across = project_wide_findings(self._project, list(self._results), facts, self.target)
        for path, result in self._results.items():
            found = across.get(result.retry_facts.name, []) if result.retry_facts else []
            if found:
                diagnostics = (*result.diagnostics, *found)
                sql = None if has_errors(diagnostics) else result.sql
                self._results[path] = replace(result, diagnostics=diagnostics, sql=sql)

    def paths(self) -> list[Path]:
        return sorted(self._results)

    def set_overlay(self, path: Path, text: str | None) -> list[Path]:
        path = _absolute(path)
        if text is None:
            self._overlays.pop(path, None)
        else:
            self._overlays[path] = text
        self._recompute()
        return [path, *self.importers(path)]

    def files_changed(self, paths: Iterable[Path]) -> list[Path]:
        changed = [_absolute(p) for p in paths]
        self._recompute()
        affected = {p for path in changed for p in [path, *self.importers(path)]}
        return sorted(p for p in affected if p in self._results)

    def diagnostics(self, path: Path) -> list[Diagnostic]:
        result = self._results.get(_absolute(path))
        return list(result.diagnostics) if result is not None else []

    def compiled(self, path: Path) -> CompileResult:
        return self._results[_absolute(path)]

    def module(self, path: Path) -> ast.Module | None:
        result = self._results.get(_absolute(path))
        return result.module if result is not None else None

    def checked(self, path: Path) -> CheckedModule | None:
        path = _absolute(path)
        if path not in self._checked:
            module = self.module(path)
            self._checked[path] = (
                None if module is None else check(module, self.target, self._project.index)[0]
            )
        return self._checked[path]

    def module_path_of(self, name: tuple[str, ...]) -> Path | None:
        key = tuple(part.lower() for part in name)
        files = self._project.index.files.get(key)
        return _absolute(files[0].path) if files else None

    def importers(self, path: Path) -> list[Path]:
        """The modules that import the module at `path`, at any depth."""
        path = _absolute(path)
        return [
            other
            for other in self.paths()
            if other != path
            and any(_absolute(f.path) == path for f in self._project.imported_files(other))
        ]
