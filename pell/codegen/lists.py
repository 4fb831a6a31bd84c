"""Which lists of a fn pellc filled itself, so that their indexes run 1 .. COUNT.

A `list<T>` is an associative array (`TABLE OF T INDEX BY PLS_INTEGER`) whose type is in the
package spec: a PL/SQL caller may pass one with any indexes, sparse or starting at 0 (PL/SQL
Language Reference, "Collection Types", Table 6-1: an associative array is dense or sparse,
"Either"). A loop over such a list walks its indexes with FIRST and NEXT (`FORALL ... INDICES
OF`); only a list pellc built itself, from index 1 up without gaps, may be walked from 1 to
COUNT. One table of sources decides (`dense_value`):

- a list literal `[a, b]`: `store_list` fills indexes 1, 2, ...;
- `sql! { ... }.collect()`: BULK COLLECT, "starting at index 1, ... inserts elements
  consecutively and overwrites any pre-existent elements" (Oracle9i PL/SQL User's Guide and
  Reference, "Using the BULK COLLECT Clause");
- `text.split(d)`: the package's own `pell_split` appends at COUNT + 1 from an empty list;
- a local whose every value is one of these (or another such local), and that no call gets as
  an `out` or `inout` argument. `xs.append(x)` keeps such a list dense (COUNT + 1 is LAST + 1).

Anything else is a caller's list: a parameter, a loop variable, a record's field, what a call
returns (another fn may return the list it was passed).
"""

from __future__ import annotations

from pell import ast
from pell.checker import types as t
from pell.checker.model import CheckedModule, FnAnalysis, FnInfo
from pell.checker.sql_typing import sql_chain


def unwrap_value(expr: ast.Expr) -> ast.Expr:
    """`Ok(e)`, `Some(e)` and `e?` are `e` once lowered."""
    while True:
        if isinstance(expr, ast.Wrap) and expr.kind in ("Ok", "Some") and expr.value is not None:
            expr = expr.value
        elif isinstance(expr, ast.Propagate):
            expr = expr.operand
        else:
            return expr


def dense_value(expr: ast.Expr, analysis: FnAnalysis, dense_locals: set[str]) -> bool:
    """Is `expr` a list indexed 1 .. COUNT without gaps, given the locals known to be so?"""
    expr = unwrap_value(expr)
    if isinstance(expr, ast.ListLit):
        return True
    chain = sql_chain(expr)
    if chain is not None:
        return bool(chain[1]) and chain[1][-1].name == "collect"
    if isinstance(expr, ast.MethodCall):
        return expr.name == "split" and t.is_text(analysis.types.get(id(expr.target), t.UNKNOWN))
    if isinstance(expr, ast.Name) and len(expr.path) == 1:
        symbol = analysis.names.get(id(expr))
        return symbol is not None and symbol.plsql in dense_locals
    return False


def dense_locals(checked: CheckedModule, fn: FnInfo, analysis: FnAnalysis) -> set[str]:
    """The PL/SQL names of the fn's local lists that only pellc's own code fills."""
    lists = {
        s.plsql for s in analysis.locals if s.kind == "local" and isinstance(s.type, t.ListType)
    }
    if not lists:
        return lists  # most fns: no walk of the body
    values: dict[str, list[ast.Expr]] = {name: [] for name in lists}
    bodies = [fn.decl.body] + ([fn.decl.finally_body] if fn.decl.finally_body else [])
    for body in bodies:
        for node in ast.walk(body):
            if isinstance(node, ast.Let) and node.value is not None:
                symbol = analysis.bindings.get(id(node))
                if symbol is not None and symbol.plsql in values:
                    values[symbol.plsql].append(node.value)
            elif isinstance(node, ast.Assign) and isinstance(node.target, ast.Name):
                symbol = analysis.names.get(id(node.target))
                if symbol is not None and symbol.plsql in values:
                    values[symbol.plsql].append(node.value)
            elif isinstance(node, ast.Call) and id(node) not in analysis.builtins:
                lists -= _written_arguments(checked, node, analysis)
    # The greatest set closed under its sources: a local fed only by dense values, or by
    # locals of the set (`let ys = xs;`), stays in it.
    changed = True
    while changed:
        changed = False
        for name in sorted(lists):
            if not all(dense_value(value, analysis, lists) for value in values[name]):
                lists.discard(name)
                changed = True
    return lists


def written_in(checked: CheckedModule, block: ast.Block, analysis: FnAnalysis) -> set[str]:
    """The PL/SQL names of the variables `block` may give a new value: those it assigns, and
    those a call in it gets as `out` or `inout` arguments."""
    written: set[str] = set()
    for node in ast.walk(block):
        if isinstance(node, ast.Assign) and isinstance(node.target, ast.Name):
            symbol = analysis.names.get(id(node.target))
            if symbol is not None:
                written.add(symbol.plsql)
        elif isinstance(node, ast.Call) and id(node) not in analysis.builtins:
            written |= _written_arguments(checked, node, analysis)
    return written


def _written_arguments(checked: CheckedModule, call: ast.Call, analysis: FnAnalysis) -> set[str]:
    """Locals a call may change: its `out` and `inout` arguments; every local passed, when the
    callee is not a fn pellc knows."""
    if id(call) in analysis.list_indexes:  # `xs(1)` reads `xs`, calls nothing
        return set()
    callee = _callee(checked, call)
    params = callee.params if callee is not None else ()
    # each argument, and whether the callee may write it (unknown: it may)
    passed: list[tuple[ast.Expr, bool]] = [
        (arg, index >= len(params) or params[index].decl.mode != "in")
        for index, arg in enumerate(call.args)
    ]
    for keyword in call.keywords:
        modes = [p.decl.mode for p in params if p.decl.name == keyword.name]
        passed.append((keyword.value, not modes or modes[0] != "in"))
    written: set[str] = set()
    for arg, writes in passed:
        if writes and isinstance(arg, ast.Name) and len(arg.path) == 1:
            symbol = analysis.names.get(id(arg))
            if symbol is not None:
                written.add(symbol.plsql)
    return written


def _callee(checked: CheckedModule, call: ast.Call) -> FnInfo | None:
    path = call.callee.path
    if len(path) == 1:
        return checked.fns.get(path[0])
    foreign = checked.imports.find(path[0]) if len(path) == 2 else None
    return foreign.fn(path[1]) if foreign is not None else None
