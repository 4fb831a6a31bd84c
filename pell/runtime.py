"""The `pell_runtime` package: one Oracle exception and code constant per Pell `error`, numbered
project-wide, plus the JSON helpers raised errors use for their payload."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pell import ast
from pell.diagnostics import Diagnostic
from pell.error_codes import (
    TRANSACTION_OPEN_CODE,
    CodeOverflow,
    DeclaredError,
    NumberedError,
    Numbering,
    assign_codes,
    declared_errors,
    error_category,
    read_code_book,
)
from pell.naming import RUNTIME_PACKAGE, TRANSACTION_OPEN

if TYPE_CHECKING:
    from pell.project import Project, ProjectFile

__all__ = ["describe_clash", "error_category", "name_clashes", "number_errors", "runtime_sql"]

# A module's SQL that names the runtime package: it raises or catches a Pell error, or a
# transaction-scoped retry raises pellc's own, or a payload uses the JSON helpers.
_REFERENCE = re.compile(rf"\b{RUNTIME_PACKAGE}\s*\.", re.IGNORECASE)


def references_runtime(sql: str) -> bool:
    return _REFERENCE.search(sql) is not None


@dataclass(slots=True)
class ProjectRuntime:
    """The runtime of a whole project, whatever subset a command builds."""

    numbering: Numbering
    # Why it cannot be written (a category out of codes, two exceptions of one name), each at
    # the declaration in its file.
    problems: list[tuple[ProjectFile, Diagnostic]]
    book_path: Path | None  # where the project records its codes; None: it does not
    book_text: str | None  # what that file holds now (None: missing)

    @property
    def errors(self) -> list[NumberedError]:
        return self.numbering.errors

    @property
    def new_book_text(self) -> str | None:
        """The code file as it should be, when the project records codes and has any."""
        book = self.numbering.book
        if self.book_path is None or (not book.codes and not book.retired):
            return self.book_text
        return book.to_text()

    def sql(self, version: str) -> str:
        return runtime_sql(self.errors, version)


def project_runtime(
    project: Project,
    elsewhere: Sequence[DeclaredError] = (),
    known: Mapping[Path, list[DeclaredError]] | None = None,
) -> ProjectRuntime:
    """Number every error of every module of `project` (its stubs have none) and `elsewhere`
    (modules of an output directory the project does not hold), keeping the codes of the
    project's code file. `known` holds the errors of files whose text a build has seen before
    (its manifest): those files are not parsed again, unless a problem must be shown at one of
    their declarations. CodeFileError when the file is unusable."""
    book_path = project.config.error_codes_path
    found = read_code_book(book_path) if book_path is not None else None
    book, book_text = found if found is not None else (None, None)
    declared: list[DeclaredError] = list(elsewhere)
    unknown: set[str] | None = None if not project.complete else set()
    files: dict[str, ProjectFile] = {}
    for file in project.files:
        if known is not None and file.path in known and file.declares is not None:
            files[".".join(file.declares)] = file
            declared += known[file.path]
            continue
        module = file.module
        if module is None or project.duplicate_of(file.path) is not None:
            if file.declares is None or unknown is None:
                unknown = None
            else:
                unknown.add(".".join(file.declares))
            continue
        if module.is_stub:
            continue
        files[module.dotted_name] = file
        declared += declared_errors(module)
    numbering = assign_codes(declared, book, None if unknown is None else frozenset(unknown))
    clashes = name_clashes(numbering.errors)
    unlocated = [o.first_extra for o in numbering.overflows] + [c for _, c in clashes]
    if known and any(e.decl is None and e.module in files for e in unlocated):
        return project_runtime(project, elsewhere)  # parse, to show where
    problems: list[tuple[ProjectFile, Diagnostic]] = []
    for overflow in numbering.overflows:
        extra = overflow.first_extra
        if extra.decl is not None:
            diagnostic = Diagnostic.of("too-many-errors", overflow.message, extra.decl.span)
            problems.append((files[extra.module], diagnostic))
    for earlier, clashing in clashes:
        if clashing.decl is not None:
            message = describe_clash(earlier, clashing)
            diagnostic = Diagnostic.of("duplicate-name", message, clashing.decl.span)
            problems.append((files[clashing.module], diagnostic))
    return ProjectRuntime(numbering, problems, book_path, book_text)

def number_errors(modules: list[ast.Module]) -> tuple[list[NumberedError], list[CodeOverflow]]:
    """Codes for the errors of `modules` alone, as a project without a code file numbers them:
    modules by name, then declaration order, from the first code of each category's range."""
    numbering = assign_codes([e for m in modules for e in declared_errors(m)], None)
    return numbering.errors, numbering.overflows


def name_clashes(errors: list[NumberedError]) -> list[tuple[NumberedError, NumberedError]]:
    """Pairs of errors of different modules whose exception names are one (module and error
    names are joined with `_`: `a.b_c` + `D` and `a.b` + `C_d` both give `a_b_c_d`)."""
    first: dict[str, NumberedError] = {TRANSACTION_OPEN: NumberedError("pellc", "", "", "", 0)}
    clashes = []
    for error in errors:
        earlier = first.setdefault(error.exception, error)
        if earlier is not error:
            clashes.append((earlier, error))
    return clashes


def describe_clash(earlier: NumberedError, error: NumberedError) -> str:
    what = (
        "pellc's own exception"
        if earlier.module == "pellc"
        else (f"error `{earlier.name}` of module `{earlier.module}`")
    )
    return (
        f"error `{error.name}` of module `{error.module}` and {what} would both be "
        f"`{RUNTIME_PACKAGE}.{error.exception}`"
    )


def runtime_sql(errors: list[NumberedError], version: str) -> str:
    """The pell_runtime package spec and body."""
    from pell.resources import template_environment

    template = template_environment().get_template("runtime.sql.j2")
    return template.render(
        version=version,
        package=RUNTIME_PACKAGE,
        errors=errors,
        constant=lambda e: f"c_{e.exception}",
        transaction_open=TRANSACTION_OPEN,
        transaction_open_code=TRANSACTION_OPEN_CODE,
    )
