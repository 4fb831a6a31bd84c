"""Error codes that never move: the code file a project commits (`pell-error-codes.json` at
its root, `error-codes` in `[tool.pellc]` names another) and the assignment it keeps.

A Pell error is raised under a code of Oracle's user range (ORA-21000: RAISE_APPLICATION_ERROR's
number "must be between -20000 and -20999, inclusive"); each category has a range of 100
(`CATEGORY_RANGES`); docs/error-codes.md says what to do when one runs out. An error keeps the code it was first given for as long
as it exists; a new error gets a code no error ever had; a removed error's code is retired and
never given again (a session or a log somewhere may still hold it). The file records both:

    {
      "format": 1,
      "codes": {"bank.accounts.NotFound": -20100, ...},
      "retired": {"-20101": "bank.accounts.Gone", ...}
    }
"""

from __future__ import annotations

import json
from pathlib import Path

from pell import ast
from pell.project import ConfigError
from pell.records import field, record

# Category -> (first code, last code); codes are handed out from the first, downwards.
# -20399, the last panic code, is pellc's own: a transaction-scoped @retry called with a
# transaction already open.
CATEGORY_RANGES: dict[str, tuple[int, int]] = {
    "propagate": (-20100, -20199),
    "skip": (-20200, -20299),
    "panic": (-20300, -20398),
}
TRANSACTION_OPEN_CODE = -20399
FORMAT = 1


class CodeFileError(ConfigError):
    """A code file pellc cannot read or use: one line naming it (exit 2)."""


def error_category(error: ast.ErrorDecl) -> str:
    names = [a.name for a in error.annotations if a.name in CATEGORY_RANGES]
    return names[0] if names else "propagate"


def category_of_code(code: int) -> str | None:
    for category, (first, last) in CATEGORY_RANGES.items():
        if last <= code <= first:
            return category
    return None


@record
class DeclaredError:
    """An error as the project declares it."""

    module: str  # dotted module name
    name: str
    category: str
    decl: ast.ErrorDecl | None = None  # None: known only from the code file

    @property
    def key(self) -> str:
        return f"{self.module}.{self.name}"


@record(frozen=False)
class CodeBook:
    """What the code file records: the code of every error, and the codes retired."""

    codes: dict[str, int] = field(default_factory=dict)  # "module.Error" -> code
    retired: dict[int, str] = field(default_factory=dict)  # code -> the error that had it

    def to_text(self) -> str:
        data = {
            "format": FORMAT,
            "codes": dict(sorted(self.codes.items(), key=lambda kv: (-kv[1], kv[0]))),
            "retired": {str(code): name for code, name in sorted(self.retired.items(), reverse=True)},
        }
        return json.dumps(data, indent=2) + "\n"


def read_code_book(path: Path) -> tuple[CodeBook, str] | None:
    """The code file at `path` and its text; None when there is none yet. CodeFileError when
    it cannot be read or is not a code file pellc wrote (hand edits must keep its shape)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise CodeFileError(f"cannot read {path}: {getattr(error, 'strerror', None) or error}", path) from error
    try:
        data = json.loads(text)
    except ValueError as error:
        raise CodeFileError(f"{path}: not valid JSON: {error}", path) from error
    problem = _shape_problem(data)
    if problem is not None:
        raise CodeFileError(f"{path}: {problem}", path)
    codes = {str(k): int(v) for k, v in data["codes"].items()}
    retired = {int(k): str(v) for k, v in data.get("retired", {}).items()}
    return CodeBook(codes, retired), text


def _shape_problem(data: object) -> str | None:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return f"not a pellc error code file (expected an object with \"format\": {FORMAT})"
    codes, retired = data.get("codes"), data.get("retired", {})
    if not isinstance(codes, dict) or not isinstance(retired, dict):
        return "`codes` and `retired` are objects"
    seen: dict[int, str] = {}
    for key, code in codes.items():
        if not isinstance(code, int) or isinstance(code, bool) or category_of_code(code) is None:
            return f"`{key}` has code {code!r}, outside -20100 .. -20398"
        if code in seen:
            return f"`{key}` and `{seen[code]}` have one code, {code}"
        seen[code] = key
    for code, name in retired.items():
        if not (isinstance(name, str) and code.lstrip("-").isdigit()):
            return f"retired code `{code}` is not a code and an error name"
        if int(code) in seen:
            return f"code {code} is both retired and given to `{seen[int(code)]}`"
    return None


@record
class NumberedError:
    """One error of the project with the code it was given."""

    module: str  # dotted module name
    name: str
    category: str
    exception: str  # the exception's name in pell_runtime
    code: int
    decl: ast.ErrorDecl | None = None


@record
class CodeOverflow:
    """A category with no code left for a new error."""

    category: str
    count: int  # the errors of the category, with the codes retired from it
    capacity: int
    first_extra: DeclaredError  # the first error left without a code

    @property
    def message(self) -> str:
        first, last = CATEGORY_RANGES[self.category]
        return (
            f"the project declares {self.count} {self.category} errors; their code range "
            f"({first} .. {last}) holds {self.capacity}"
        )


@record(frozen=False)
class Numbering:
    errors: list[NumberedError]
    overflows: list[CodeOverflow]
    book: CodeBook  # the code file as it should now be


def assign_codes(
    declared: list[DeclaredError],
    book: CodeBook | None,
    unknown_modules: frozenset[str] | None = frozenset(),
) -> Numbering:
    """Codes for `declared` (modules by name, then declaration order): each keeps the code the
    book gives it, or gets back the code it had before it was removed, or takes the first code
    of its category's range that no error has or had. Errors of the book that `declared` lacks
    are retired, except those of `unknown_modules` (modules whose files could not be read or
    parsed: their entries stay, and stay in the runtime); `unknown_modules` None means some
    file's module is not even known, and nothing is retired."""
    from pell.naming import exception_name

    old = book or CodeBook()
    taken = set(old.codes.values()) | set(old.retired)
    by_name_retired = {name: code for code, name in old.retired.items()}
    new = CodeBook(retired=dict(old.retired))
    numbered: list[NumberedError] = []
    overflows: dict[str, CodeOverflow] = {}
    next_free = {category: first for category, (first, _) in CATEGORY_RANGES.items()}
    present = {error.key for error in declared}

    for key, code in old.codes.items():  # kept as the file says: a module we cannot see
        module = key.rsplit(".", 1)[0]
        if key not in present and (unknown_modules is None or module in unknown_modules):
            category = category_of_code(code)
            assert category is not None  # read_code_book checked it
            declared = [*declared, DeclaredError(module, key.rsplit(".", 1)[1], category)]

    for error in sorted(declared, key=lambda e: e.module):  # stable: declaration order kept
        first, last = CATEGORY_RANGES[error.category]
        kept = old.codes.get(error.key, by_name_retired.get(error.key))
        if kept is not None and category_of_code(kept) == error.category:
            code = kept
        else:  # new, or moved to another category: a code of the new range
            while next_free[error.category] >= last and next_free[error.category] in taken:
                next_free[error.category] -= 1
            if next_free[error.category] < last:
                used = sum(1 for c in taken if category_of_code(c) == error.category)
                if error.category not in overflows:
                    overflows[error.category] = CodeOverflow(
                        error.category, used + 1, first - last + 1, error
                    )
                else:
                    o = overflows[error.category]
                    overflows[error.category] = CodeOverflow(
                        o.category, o.count + 1, o.capacity, o.first_extra
                    )
                continue
            code = next_free[error.category]
        taken.add(code)
        new.retired.pop(code, None)
        new.codes[error.key] = code
        exception = exception_name(tuple(error.module.split(".")), error.name)
        numbered.append(
            NumberedError(error.module, error.name, error.category, exception, code, error.decl)
        )
    for key, code in old.codes.items():
        if new.codes.get(key) != code:  # removed, or moved to another category
            new.retired[code] = key
    return Numbering(numbered, list(overflows.values()), new)


def declared_errors(module: ast.Module) -> list[DeclaredError]:
    return [
        DeclaredError(module.dotted_name, item.name, error_category(item), item)
        for item in module.items
        if isinstance(item, ast.ErrorDecl)
    ]
