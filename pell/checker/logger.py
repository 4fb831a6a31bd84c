"""pellc's own `std::logger`: `logger::info(x)` (and `warn`, `err`, `debug`, `trace`), the
public Pell library's logging module, which pellc provides without a package.

Public Pell code writes it three ways: `import std::logger;` then `logger::info(...)`,
`import std::log;` then `log::info(...)`, and `log::info(...)` with no import at all. Each
call is lowered in place, before the checker types the body, to the print call
`dbms_output::put_line("INFO:  {x}")`: the level's prefix, then the value as interpolation
writes it (pell.codegen.text_forms). So it is typed, lowered and seen by the retry checks
exactly as `println` is (no DML, no commit), becomes `dbms_output.put_line(...)` on Oracle and
`RAISE NOTICE` on PostgreSQL, and names no package LOG or LOGGER: nothing is deployed for
it, and the clash the public runtime's own logger.pell reports for a package named `log`
(PLS-00225, the name taken for Oracle's LOG function) has no name to arise on.

The project's own module wins: when `logger::` or `log::` names a module of the project (or
of the build's inputs, or a stub), the call goes to it as to any module (pell.checker.imports),
and `import std::logger;` names the project's `logger` as it names any `std::` module. For a
fn of that module (or stub) that takes one `text` parameter, public Pell code passes any
value (its compiler turns the argument into text): pellc does the same, for exactly that
case, with the conversion interpolation uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pell import ast, records
from pell.ast_builder import PRINT_CALL, as_text
from pell.checker import types as t
from pell.diagnostics import did_you_mean

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker
    from pell.checker.imports import Imports, ModuleIndex

# The aliases public Pell writes for its logging module.
ALIASES = ("logger", "log")
# The imports that name it: `import std::logger;`, `import std::log;`.
STD_PATHS = (("std", "logger"), ("std", "log"))
# Each level's fn and its upper-case label; the prefix is the label and a colon, padded to one
# width so the messages of all levels start in one column.
LEVELS = {"info": "INFO", "warn": "WARN", "err": "ERROR", "debug": "DEBUG", "trace": "TRACE"}
_WIDTH = max(len(label) for label in LEVELS.values()) + 2


def prefix(level: str) -> str:
    """The text a level's lines start with: `INFO:  `, `ERROR: `."""
    return f"{LEVELS[level]}:".ljust(_WIDTH)


def _logging_call(node: ast.Node) -> bool:
    return (
        type(node) is ast.Call
        and len(node.callee.path) == 2
        and node.callee.path[0] in ALIASES
    )


def well_formed(call: ast.Call) -> bool:
    """A call of a level with one value: the only form lowered (the checker reports the rest,
    pell.checker.expressions)."""
    return (
        call.callee.path[1] in LEVELS
        and len(call.args) == 1
        and not call.keywords
        and not call.type_args
    )


def inline_calls(module: ast.Module, index: ModuleIndex) -> ast.Module:
    """`module` with each call of the built-in logger replaced by its print call, and each
    argument of a one-`text`-parameter fn of the project's own logger module made text."""
    # the whole module: a call in any item's body (a fn's, a script's, a type's method's)
    calls = [node for node in ast.walk(module) if _logging_call(node)]
    if not calls:
        return module  # the common case: one walk, nothing rebuilt
    from pell.checker.imports import resolve_imports

    imports, _ = resolve_imports(module, index)
    replacements: dict[int, ast.Node] = {}
    for call in calls:
        assert isinstance(call, ast.Call)
        alias, name = call.callee.path
        if alias in imports.loggers:
            if well_formed(call):
                replacements[id(call)] = _print_call(call)
        elif _takes_text(imports, alias, name) and len(call.args) == 1 and not call.keywords:
            replacements[id(call)] = records.replace(call, args=(as_text(call.args[0]),))
    return ast.replaced(module, replacements) if replacements else module


def _print_call(call: ast.Call) -> ast.Call:
    """`log::info(x)` -> `dbms_output::put_line("INFO:  {x}")`, spans kept (a diagnostic about
    `x` points at `x`, one about the call at the call)."""
    label = prefix(call.callee.path[1])
    value = call.args[0]
    parts: tuple[str | ast.Expr, ...]
    if isinstance(value, ast.StringLit):  # a text literal or an interpolation: one text
        first, *rest = value.parts or ("",)
        parts = (label + first, *rest) if isinstance(first, str) else (label, first, *rest)
    else:
        parts = (label, value)
    callee = records.replace(call.callee, path=PRINT_CALL)
    return records.replace(call, callee=callee, args=(ast.StringLit(parts, span=value.span),))


def _takes_text(imports: Imports, alias: str, name: str) -> bool:
    """Does `alias::name` (`alias` is `logger` or `log`) name a fn of the project's own module
    or stub that takes one `in` `text` parameter? (An `out` or `inout` one is given the
    caller's variable, which a value made into text is not.)"""
    foreign = imports.find(alias)
    if foreign is None:
        return False
    fn = foreign.item(name)
    if not isinstance(fn, ast.Fn) or len(fn.params) != 1 or fn.params[0].mode != "in":
        return False
    written = fn.params[0].type
    return isinstance(written, ast.NamedType) and written.name == "text" and not written.args


def check_misuse(checker: ExpressionChecker, call: ast.Call) -> t.Type:
    """A call of the built-in logger that inline_calls left as it was: an unknown level, or
    not one value. Its arguments are typed, then the error is reported."""
    from pell.checker.expressions import call_values

    for value in call_values(call):
        checker.expr(value, None)
    alias, name = call.callee.path
    if name not in LEVELS:
        checker.error(
            "unknown-fn",
            f"`{alias}::` (pellc's logger) has no fn `{name}`{did_you_mean(name, tuple(LEVELS))}",
            call.callee.span,
            f"its fns are {', '.join(f'`{level}`' for level in LEVELS)}",
        )
    elif call.keywords and len(call.args) + len(call.keywords) == 1:
        checker.error(
            "keyword-argument",
            f"`{alias}::{name}` takes its value positionally",
            call.keywords[0].name_span,
            f"`{alias}::{name}(value)`",
        )
    else:
        given = len(call.args) + len(call.keywords)
        checker.error(
            "arity",
            f"`{alias}::{name}` takes one value, but {given} "
            f"{'was' if given == 1 else 'were'} given",
            call.span,
            f'log several values in one text: `{alias}::{name}("{{a}} {{b}}")`',
        )
    return t.UNKNOWN
