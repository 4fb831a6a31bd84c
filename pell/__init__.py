"""pellc: a compiler from Pell to Oracle PL/SQL.

The stages, each a public function: `parse` (text -> AST), `check` (AST -> checked
module), `compile_source` (text -> SQL and diagnostics), `compile_path` (a file).
"""

from __future__ import annotations

import codecs
import gc
import hashlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# The stages import lark, jinja2 and sqlglot when first used, so `pellc --version` and the
# library's import stay quick.
from pell import ast
from pell.diagnostics import (
    SUGGESTIONS_PER_COMPILE,
    Diagnostic,
    SourceFile,
    has_errors,
    suggestions_left,
)
from pell.naming import TARGETS

if TYPE_CHECKING:
    from pell.checker import CheckedModule
    from pell.checker.retry_facts import ModuleFacts

__version__ = "0.1.0"

# Limits that keep every input answered with diagnostics rather than a crash.
MAX_SOURCE_CHARS = 10_000_000  # about 25 times the largest module of the benchmark
MAX_NESTING = 200  # AST levels; real code stays far below

__all__ = [
    "CompileResult",
    "__version__",
    "build_tree",
    "check",
    "compile_path",
    "compile_source",
    "decode_source",
    "parse",
]


@dataclass(frozen=True, slots=True)
class CompileResult:
    """The SQL of one module (None when it has errors) and every diagnostic found."""

    source: SourceFile
    sql: str | None
    diagnostics: tuple[Diagnostic, ...]
    module: ast.Module | None = None  # the parsed module, when it parsed
    source_map: dict[str, object] | None = None  # SQL line -> Pell line and column
    # What its fns commit and call: a build joins these to check retries across modules.
    retry_facts: ModuleFacts | None = None

    @property
    def ok(self) -> bool:
        return self.sql is not None


def parse(text: str) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Source text -> AST (None if the text does not parse) and diagnostics."""
    from pell.syntax import parse as parse_text

    return parse_text(text)


def check(module: ast.Module, target: str = "23ai") -> tuple[CheckedModule, list[Diagnostic]]:
    """AST -> checked module and every diagnostic the checker finds (for an Oracle target)."""
    from pell.checker import check as check_module

    return check_module(module, target)


def compile_source(text: str, filename: str = "<source>", target: str = "23ai") -> CompileResult:
    """Compile Pell source text; `filename` is what the output header and diagnostics show."""
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    # The compiler makes millions of short-lived acyclic objects: the cycle collector only
    # costs time here (a third of it, measured), so it waits until the compile is done.
    collecting = gc.isenabled()
    gc.disable()
    # The checker and code generation recurse once per nesting level; MAX_NESTING bounds that.
    recursion_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(recursion_limit, 20 * MAX_NESTING + 1000))
    suggestions = suggestions_left.set(SUGGESTIONS_PER_COMPILE)
    try:
        return _compile(text, filename, target)
    finally:
        suggestions_left.reset(suggestions)
        sys.setrecursionlimit(recursion_limit)
        if collecting:
            gc.enable()


def _compile(text: str, filename: str, target: str) -> CompileResult:
    from pell.codegen import generate

    # A byte-order mark is not source; a lone CR (old Mac line ends) is a line break: as LF it
    # ends `//` comments too, and keeps every offset where it was.
    text = _LONE_CR.sub("\n", text.removeprefix("\ufeff"))

    source = SourceFile(filename, text)
    if len(text) > MAX_SOURCE_CHARS:
        message = (
            f"the file is {len(text) / 1e6:.1f} million characters; pellc compiles files of "
            f"up to {MAX_SOURCE_CHARS // 1_000_000} million (split the module)"
        )
        return CompileResult(source, None, (Diagnostic.of("too-large", message, ast.Span(0, 0)),))
    module, diagnostics = parse(text)
    if module is not None:
        depth, node = ast.deepest(module)
        if depth > MAX_NESTING:
            message = (
                f"this is nested {depth} levels deep; pellc takes up to {MAX_NESTING} "
                "(split the expression or the block)"
            )
            diagnostics.append(Diagnostic.of("too-deep", message, node.span))
            return CompileResult(source, None, tuple(diagnostics), module)
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
    return CompileResult(source, sql, tuple(diagnostics), module, source_map, checked.retry_facts)


_LONE_CR = re.compile(r"\r(?!\n)")


def decode_source(data: bytes, filename: str) -> tuple[str | None, CompileResult | None]:
    """UTF-8 text (without a byte-order mark), or (None, a result holding an `encoding`
    diagnostic at the first bad byte)."""
    data = data.removeprefix(codecs.BOM_UTF8)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as error:
        offset = len(data[: error.start].decode("utf-8"))
        source = SourceFile(filename, data.decode("utf-8", errors="replace"))
        diagnostic = Diagnostic.of(
            "encoding", "the file is not valid UTF-8", ast.Span(offset, offset + 1)
        )
        return None, CompileResult(source, None, (diagnostic,))


def compile_path(path: str | Path, target: str = "23ai") -> CompileResult:
    """Compile one `.pell` file; the output header names the file, not its directory."""
    path = Path(path)
    text, failure = decode_source(path.read_bytes(), path.name)
    if failure is not None:
        return failure
    assert text is not None
    return compile_source(text, path.name, target)


def __getattr__(name: str) -> object:
    # build_tree lives in pell.build, which imports this module: hand it out lazily
    if name == "build_tree":
        from pell.build import build_tree

        return build_tree
    raise AttributeError(f"module 'pell' has no attribute {name!r}")
