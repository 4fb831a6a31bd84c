"""pellc: a compiler from Pell to Oracle PL/SQL.

The stages, each a public function: `parse` (text -> AST), `check` (AST -> checked
module), `compile_source` (text -> SQL and diagnostics), `compile_path` (a file).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

__version__ = "0.1.0"

__all__ = [
    "CompileResult",
    "__version__",
    "build_tree",
    "check",
    "compile_path",
    "compile_source",
    "parse",
]

from pell import ast
from pell.check import CheckedModule
from pell.check import check as _check
from pell.diagnostics import Diagnostic, SourceFile, has_errors
from pell.syntax import parse as _parse


@dataclass(frozen=True, slots=True)
class CompileResult:
    """The SQL of one module (None when it has errors) and every diagnostic found."""

    source: SourceFile
    sql: str | None
    diagnostics: tuple[Diagnostic, ...]
    module: ast.Module | None = None  # the parsed module, when it parsed
    source_map: dict[str, object] | None = None  # SQL line -> Pell line and column

    @property
    def ok(self) -> bool:
        return self.sql is not None


def parse(text: str) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Source text -> AST (None if the text does not parse) and diagnostics."""
    return _parse(text)


def check(module: ast.Module, target: str = "23ai") -> tuple[CheckedModule, list[Diagnostic]]:
    """AST -> checked module and every diagnostic the checker finds (for an Oracle target)."""
    return _check(module, target)


def compile_source(text: str, filename: str = "<source>", target: str = "23ai") -> CompileResult:
    """Compile Pell source text; `filename` is what the output header and diagnostics show."""
    from pell.codegen import TARGETS, generate

    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    source = SourceFile(filename, text)
    module, diagnostics = parse(text)
    if module is None:
        return CompileResult(source, None, tuple(diagnostics))
    checked, check_diagnostics = check(module, target)
    diagnostics += check_diagnostics
    if has_errors(diagnostics):
        return CompileResult(source, None, tuple(diagnostics), module)
    sql, origins = generate(checked, filename, text, __version__, target)
    lines = {}
    for sql_line, offset in sorted(origins.items()):
        line, column = source.line_col(offset)
        lines[str(sql_line)] = [line, column]
    source_map: dict[str, object] = {
        "source": filename,
        "source_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "sql_sha256": hashlib.sha256(sql.encode("utf-8")).hexdigest(),
        "lines": lines,
    }
    return CompileResult(source, sql, tuple(diagnostics), module, source_map)


def compile_path(path: str | Path, target: str = "23ai") -> CompileResult:
    """Compile one `.pell` file; the output header names the file, not its directory."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    return compile_source(text, path.name, target)


def __getattr__(name: str) -> object:
    # build_tree lives in pell.build, which imports this module: hand it out lazily
    if name == "build_tree":
        from pell.build import build_tree

        return build_tree
    raise AttributeError(f"module 'pell' has no attribute {name!r}")
