"""Every AST class has its check and its lowering: the dispatch tables cover the unions; and
every text and list method of the method table is typed and lowered.

(A table keyed by class replaced `getattr(self, name + "_sql")`, which hid a missing case, such
as list literals in codegen, until a user's program crashed on it.)
"""

from __future__ import annotations

from typing import get_args

import pytest

from pell import ast, compile_source, naming
from pell.checker.bodies import STATEMENT_CHECKS
from pell.checker.expressions import EXPRESSION_CHECKS
from pell.checker.methods import BYTES_METHODS, LIST_METHODS, METHODS, TEXT_METHODS, Method
from pell.codegen.expressions import EXPRESSION_SQL
from pell.codegen.subprograms import STATEMENT_SQL
from pell.diagnostics import render_all
from pell.precedence import ATOM

EXPRESSIONS = set(get_args(ast.Expr))
STATEMENTS = set(get_args(ast.Stmt))


def test_unions_are_what_the_tables_are_checked_against() -> None:
    assert ast.Match in EXPRESSIONS and ast.JqBlock in EXPRESSIONS and ast.Yield in STATEMENTS
    assert len(EXPRESSIONS) == 19


def test_every_expression_is_lowered() -> None:
    assert set(EXPRESSION_SQL) == EXPRESSIONS


def test_every_statement_is_lowered() -> None:
    assert set(STATEMENT_SQL) == STATEMENTS


def test_every_statement_and_expression_is_checked() -> None:
    assert set(STATEMENT_CHECKS) == STATEMENTS
    # `expr` handles these two itself, before the table: `?` and sql! { } chains
    assert set(EXPRESSION_CHECKS) | {ast.Propagate, ast.SqlBlock} == EXPRESSIONS


# `.at(i)` and `.append(x)` take their types from the list's element (and `.append` is a
# statement): tests/cases/everyday.pell has them.
TYPED_BY_THE_TABLE = [m for m in METHODS if m.name not in ("at", "append")]


@pytest.mark.parametrize("method", TYPED_BY_THE_TABLE, ids=lambda m: f"{m.receiver}.{m.name}")
def test_every_method_is_typed_and_lowered(method: Method) -> None:
    """A call of each text, list and bytes method type-checks as its table entry says (its
    arguments and its result), and lowers to its template."""
    receiver = {"list": "list<int>", "text": "text", "bytes": "bytes"}[method.receiver]
    params = "".join(f", a{i}: {param}" for i, param in enumerate(method.params))
    args = ", ".join(f"a{i}" for i in range(len(method.params)))
    source = (
        f"module methods;\n\npub fn f(r: {receiver}{params}) -> {method.result} {{\n"
        f"    return r.{method.name}({args});\n}}\n"
    )
    result = compile_source(source, "methods.pell")
    assert result.sql is not None, render_all(result.diagnostics, result.source)
    lowered, _ = method.lower(
        (naming.param_name("r"), ATOM),
        [naming.param_name(f"a{i}") for i in range(len(method.params))],
    )
    assert f"RETURN {lowered};" in result.sql


def test_the_method_table_has_one_entry_per_receiver_and_name() -> None:
    assert len(TEXT_METHODS) + len(LIST_METHODS) + len(BYTES_METHODS) == len(METHODS)
