"""The `pell_runtime` package: one Oracle exception and code constant per Pell `error`, numbered
project-wide, plus the JSON helpers raised errors use for their payload."""

from __future__ import annotations

from dataclasses import dataclass

from pell import ast
from pell.naming import RUNTIME_PACKAGE, TRANSACTION_OPEN, exception_name

# Category -> (first code, last code); codes are handed out from the first, downwards.
# -20399, the last panic code, is pellc's own: a transaction-scoped @retry called with a
# transaction already open.
CATEGORY_RANGES: dict[str, tuple[int, int]] = {
    "propagate": (-20100, -20199),
    "skip": (-20200, -20299),
    "panic": (-20300, -20398),
}
TRANSACTION_OPEN_CODE = -20399


def error_category(error: ast.ErrorDecl) -> str:
    names = [a.name for a in error.annotations if a.name in CATEGORY_RANGES]
    return names[0] if names else "propagate"


@dataclass(frozen=True, slots=True)
class NumberedError:
    """One error of the project with the code it was given."""

    module: str  # dotted module name
    name: str
    category: str
    exception: str  # the exception's name in pell_runtime
    code: int


@dataclass(frozen=True, slots=True)
class CodeOverflow:
    category: str
    count: int
    capacity: int
    first_extra: tuple[str, ast.ErrorDecl]  # (module, declaration) of the 101st error


def number_errors(
    modules: list[ast.Module],
) -> tuple[list[NumberedError], list[CodeOverflow]]:
    """Codes for every error: modules by name, then declaration order, per category range."""
    next_code = {category: first for category, (first, _) in CATEGORY_RANGES.items()}
    numbered: list[NumberedError] = []
    overflows: dict[str, CodeOverflow] = {}
    for module in sorted(modules, key=lambda m: m.dotted_name):
        for item in module.items:
            if not isinstance(item, ast.ErrorDecl):
                continue
            category = error_category(item)
            code = next_code[category]
            last = CATEGORY_RANGES[category][1]
            next_code[category] = code - 1
            if code < last:
                count = CATEGORY_RANGES[category][0] - code + 1
                first = overflows.get(category)
                capacity = CATEGORY_RANGES[category][0] - last + 1
                overflows[category] = CodeOverflow(
                    category,
                    count,
                    capacity,
                    first.first_extra if first else (module.dotted_name, item),
                )
                continue
            numbered.append(
                NumberedError(
                    module.dotted_name,
                    item.name,
                    category,
                    exception_name(module.path, item.name),
                    code,
                )
            )
    return numbered, list(overflows.values())


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
