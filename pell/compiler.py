"""The compile, stage by stage: text -> AST -> checked module -> PL/SQL and its source map.

`compile` only chains the stages; each limit (file size, nesting) and the source map is a
helper of its own. `pell.compile_source` runs it with the interpreter set up for a compile.
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from pell import ast
from pell.diagnostics import Diagnostic, SourceFile, has_errors
from pell.records import field, record

if TYPE_CHECKING:
    from pathlib import Path

    from pell.checker.imports import ModuleIndex
    from pell.checker.model import CheckedModule
    from pell.checker.retry_facts import ModuleFacts
    from pell.codegen import LoweredModule
    from pell.postgres import PgModule

# Limits that keep every input answered with diagnostics rather than a crash.
MAX_SOURCE_CHARS = 10_000_000  # about 25 times the largest module of the benchmark
MAX_NESTING = 200  # AST levels; real code stays far below

_LONE_CR = re.compile(r"\r(?!\n)")


@record
class CompileResult:
    """The SQL of one module (None when it has errors) and every diagnostic found."""

    source: SourceFile
    sql: str | None
    diagnostics: tuple[Diagnostic, ...]
    module: ast.Module | None = None  # the parsed module, when it parsed
    source_map: dict[str, object] | None = None  # SQL line -> Pell line and column
    # What its fns commit and call: a build joins these to check retries across modules. Kept
    # when the module has errors too (a stub's: its `@commits` marks), so that the modules that
    # call it are still checked against what it commits.
    retry_facts: ModuleFacts | None = None
    # The module as PL/SQL (or PL/pgSQL) statement trees: what `pell.verify` runs.
    lowered: LoweredModule | PgModule | None = None
    # The checked module, when the checker ran: what an editor asks of names (pell.engine).
    checked: CheckedModule | None = field(default=None, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.sql is not None

    def failed_with(self, error: Diagnostic) -> CompileResult:
        """This result with one more error (found beyond the file): no output, nothing to
        join into project-wide checks."""
        return CompileResult(
            self.source, None, (*self.diagnostics, error), self.module, checked=self.checked
        )

    @property
    def ok_stub(self) -> bool:
        """A `@stub` module without errors: checked, and nothing generated for it."""
        return (
            self.sql is None
            and self.module is not None
            and self.module.is_stub
            and not any(d.is_error for d in self.diagnostics)
        )


def compile(
    text: str,
    filename: str,
    target: str,
    version: str,
    index: ModuleIndex | None = None,
    path: Path | str | None = None,
) -> CompileResult:
    """Source text -> PL/SQL: read, parse, check, lower, print; no SQL when any stage found
    errors. `index` holds the modules it may import (default: pellc's stubs only); `path`,
    where the file is (a module in a `stubs` folder is a stub), if it is a file."""
    from pell.checker import check
    from pell.codegen import header, lower, print_module, print_script
    from pell.project import as_located
    from pell.syntax import parse

    text = readable_text(text)
    source = SourceFile(filename, text)
    settle = index.settle if index is not None else list
    diagnostics = size_limit(text)
    if diagnostics:
        return CompileResult(source, None, tuple(diagnostics))
    parsed, diagnostics = parse(text)
    module = as_located(parsed, path)
    diagnostics = settle(diagnostics)
    if module is None:
        return CompileResult(source, None, tuple(diagnostics))
    sql_blocks: list[ast.SqlBlock] = []  # gathered by the nesting walk for the checker
    too_deep = nesting_limit(module, sql_blocks)
    if too_deep:
        return CompileResult(source, None, tuple(diagnostics + too_deep), module)
    # A module parsed with recovered syntax errors is checked too: every error of a file
    if module.is_stub:
        # a stub declares an Oracle package: it is checked, and nothing is generated for it
        checked, check_diagnostics = check(module, target, index)
        diagnostics += settle(check_diagnostics)
        return CompileResult(
            source, None, tuple(diagnostics), module, None, checked.retry_facts, checked=checked
        )
    checked, check_diagnostics = check(module, target, index, sql_blocks=sql_blocks)
    diagnostics += settle(check_diagnostics)
    if has_errors(diagnostics):
        return CompileResult(
            source, None, tuple(diagnostics), module, None, checked.retry_facts, checked=checked
        )
    if target == "postgres":
        from pell.postgres import lower_module, lower_script

        lower_pg = lower_script if module.script else lower_module
        pg, problems = lower_pg(checked, pg_header(filename, text, version))
        if pg is None:
            diagnostics += settle(problems)
            return CompileResult(
                source, None, tuple(diagnostics), module, None, checked.retry_facts, checked=checked
            )
        pg_lines = None if pg.origins is None else source_map(source, pg.sql, pg.origins)
        return CompileResult(
            source, pg.sql, tuple(diagnostics), module, pg_lines, checked.retry_facts, pg, checked
        )
    lowered = lower(checked, target)
    printer = print_script if module.script else print_module
    sql, origins = printer(lowered, header(filename, text, version, target))
    lines = source_map(source, sql, origins)
    return CompileResult(
        source, sql, tuple(diagnostics), module, lines, checked.retry_facts, lowered, checked
    )


def pg_header(source_name: str, source_text: str, version: str) -> str:
    digest = hashlib.sha256(source_text.encode("utf-8")).hexdigest()
    return (
        f"-- Generated by pellc {version} from {source_name}; do not edit.\n"
        f"-- Source SHA-256: {digest}\n"
        "-- Target: PostgreSQL 15"
    )


def readable_text(text: str) -> str:
    """A byte-order mark is not source; a lone CR (old Mac line ends) is a line break: as LF it
    ends `//` comments too, and every offset stays where it was."""
    return _LONE_CR.sub("\n", text.removeprefix("\ufeff"))


def size_limit(text: str) -> list[Diagnostic]:
    if len(text) <= MAX_SOURCE_CHARS:
        return []
    message = (
        f"the file is {len(text) / 1e6:.1f} million characters; pellc compiles files of "
        f"up to {MAX_SOURCE_CHARS // 1_000_000} million (split the module)"
    )
    return [Diagnostic.of("too-large", message, ast.Span(0, 0))]


def nesting_limit(
    module: ast.Module, sql_blocks: list[ast.SqlBlock] | None = None
) -> list[Diagnostic]:
    """The checker and code generation recurse once per level: deeper code is refused.
    `sql_blocks`, when given, gets every SqlBlock of the module (see ast.deepest)."""
    depth, node = ast.deepest(module, sql_blocks)
    if depth <= MAX_NESTING:
        return []
    message = (
        f"this is nested {depth} levels deep; pellc takes up to {MAX_NESTING} "
        "(split the expression or the block)"
    )
    return [Diagnostic.of("too-deep", message, node.span)]


def source_map(source: SourceFile, sql: str, origins: dict[int, int]) -> dict[str, object]:
    """SQL line -> [Pell line, column], with the hashes of both texts."""
    ordered = sorted(origins.items())
    places = source.line_cols(offset for _, offset in ordered)
    lines = {str(sql_line): list(place) for (sql_line, _), place in zip(ordered, places, strict=True)}
    return {
        "source": source.name,
        "source_sha256": hashlib.sha256(source.text.encode("utf-8")).hexdigest(),
        "sql_sha256": hashlib.sha256(sql.encode("utf-8")).hexdigest(),
        "lines": lines,
    }
