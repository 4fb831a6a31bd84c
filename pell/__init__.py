"""pellc: a compiler from Pell to Oracle PL/SQL.

The stages, each a public function: `parse` (text -> AST), `check` (AST -> checked
module), `compile_source` (text -> SQL and diagnostics), `compile_path` (a file).
"""

from __future__ import annotations

import codecs
import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# The stages import lark and jinja2 when first used, so `pellc --version` and the
# library's import stay quick.
from pell import ast, compiler
from pell.compiler import MAX_NESTING, CompileResult
from pell.diagnostics import (
    SUGGESTIONS_PER_COMPILE,
    Diagnostic,
    SourceFile,
    suggestions_left,
)
from pell.naming import TARGETS

if TYPE_CHECKING:
    from pell.checker import CheckedModule
    from pell.checker.imports import ModuleIndex

__version__ = "0.1.0"

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


def parse(text: str) -> tuple[ast.Module | None, list[Diagnostic]]:
    """Source text -> AST (None if the text does not parse) and diagnostics."""
    from pell.syntax import parse as parse_text

    return parse_text(text)


def check(
    module: ast.Module, target: str = "23ai", index: ModuleIndex | None = None
) -> tuple[CheckedModule, list[Diagnostic]]:
    """AST -> checked module and every diagnostic the checker finds (for an Oracle target).
    `index` holds the modules it may import (default: pellc's stubs of Oracle packages)."""
    from pell.checker import check as check_module

    return check_module(module, target, index)


def compile_source(
    text: str,
    filename: str = "<source>",
    target: str = "23ai",
    index: ModuleIndex | None = None,
    path: Path | str | None = None,
) -> CompileResult:
    """Compile Pell source text; `filename` is what the output header and diagnostics show.
    `index` holds the other modules of its project (`pell.project`); `path` is where the file
    is, when it is one (a module in a `stubs` folder is a stub)."""
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
        return compiler.compile(text, filename, target, __version__, index, path)
    finally:
        suggestions_left.reset(suggestions)
        sys.setrecursionlimit(recursion_limit)
        if collecting:
            gc.enable()


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
    return compile_source(text, path.name, target, path=path)


def __getattr__(name: str) -> object:
    # build_tree lives in pell.build, which imports this module: hand it out lazily
    if name == "build_tree":
        from pell.build import build_tree

        return build_tree
    raise AttributeError(f"module 'pell' has no attribute {name!r}")
