"""Lists passed to or returned by another module's fn (language.md, "Lists between modules").

Each package declares its own list types (`TYPE t_text_list IS TABLE OF ... INDEX BY
PLS_INTEGER` in its spec or body), and PL/SQL assigns a collection only to a variable of the
same type: "You can assign a collection to a collection variable only if they have the same
data type. Having the same element type is not enough" (PL/SQL Language Reference 19c, 5.7.1
"Data Type Compatibility"). So a list crosses a package boundary copied element by element, at
its own indexes, into the other package's type (pell.codegen.list_copies). Each element is
assigned whole, which needs one PL/SQL type on both sides: a scalar (the same field type in
every package), a record (the one RECORD type of the package that declares it: "The two
variables have the same RECORD type", PL/SQL Language Reference 19c, "Assigning One Record
Variable to Another") or an object type (one schema-level type); a list holds nothing else
(pell.checker.checker). An `out`/`inout` list would need a copy back after the call: refused,
located."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from pell import ast, naming
from pell.checker import types as t
from pell.checker.model import FnInfo, ListCopy

if TYPE_CHECKING:
    from pell.checker.expressions import ExpressionChecker
    from pell.checker.imports import Foreign

# The smallest identifier limit of the Oracle targets (12.2: 30 bytes), for every target, so
# the copy functions' names do not depend on it.
_NAME_LIMIT = 30
CODE = "list-between-modules"


def check_call(
    checker: ExpressionChecker, expr: ast.Call, foreign: Foreign, name: str, fn: FnInfo
) -> None:
    """Record the copies a call of `foreign`'s fn `name` (`fn`: as the caller sees it) needs,
    or say why a list cannot cross."""
    declared = foreign.declared().fns[name]  # as the callee declares it: its own list types
    for param, own in zip(fn.params, declared.params, strict=True):
        if not isinstance(param.type, t.ListType):
            continue
        arg = _argument(expr, fn, param.decl.name)
        span = arg.span if arg is not None else expr.callee.span
        if param.decl.mode != "in":
            checker.error(
                CODE,
                f"`{expr.callee.text}` takes `{param.decl.name}` as an `{param.decl.mode}` list: "
                "another module's list is a type of its own, and pellc copies a list only into "
                "a call, not back out of it",
                span,
                "return the list instead, and assign it in the caller",
            )
            continue
        if arg is None:
            continue  # left out: the callee's default, of its own type
        # lists are invariant (`list<int>` is not a `list<number>`): the argument is of the
        # parameter's type, as the caller names it
        checker.analysis.list_arguments[id(arg)] = _copy(
            "pell_to_", param.type, f"{foreign.package}.{_list_type(own.type)}"
        )
    if isinstance(fn.returns, t.ListType):
        theirs = f"{foreign.package}.{_list_type(declared.returns)}"
        copy = _copy("pell_from_", fn.returns, theirs)
        # from the callee's type into the caller's own
        checker.analysis.list_results[id(expr)] = ListCopy(
            copy.function, theirs, _list_type(fn.returns), copy.element
        )


def _argument(expr: ast.Call, fn: FnInfo, param: str) -> ast.Expr | None:
    index = [p.decl.name for p in fn.params].index(param)
    if index < len(expr.args):
        return expr.args[index]
    return next((k.value for k in expr.keywords if k.name == param), None)


def _list_type(list_type: t.Type) -> str:
    """A list type's PL/SQL name (pell.codegen.types.plsql_type, which imports the checker)."""
    assert isinstance(list_type, t.ListType)
    return naming.list_type_name(str(list_type.element))


def _copy(prefix: str, source: t.ListType, target: str) -> ListCopy:
    """The copy of a list of `source`'s type into `target`, by a function named for the type
    it copies into (`pell_to_text_utils_t_text_list`), cut to fit with a hash of it."""
    function = prefix + target.replace(".", "_")
    if len(function) > _NAME_LIMIT:
        digest = hashlib.sha256(target.encode("utf-8")).hexdigest()[:6]
        function = f"{function[: _NAME_LIMIT - 7].rstrip('_')}_{digest}"
    return ListCopy(function, _list_type(source), target, str(source.element))
