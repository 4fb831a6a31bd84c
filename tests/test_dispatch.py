"""Every AST class has its check and its lowering: the dispatch tables cover the unions.

(A table keyed by class replaced `getattr(self, name + "_sql")`, which hid a missing case, such
as list literals in codegen, until a user's program crashed on it.)
"""

from __future__ import annotations

from typing import get_args

from pell import ast
from pell.checker.bodies import EXPRESSION_CHECKS, STATEMENT_CHECKS
from pell.codegen.expressions import EXPRESSION_SQL
from pell.codegen.subprograms import STATEMENT_SQL

EXPRESSIONS = set(get_args(ast.Expr))
STATEMENTS = set(get_args(ast.Stmt))


def test_unions_are_what_the_tables_are_checked_against() -> None:
    assert ast.ListLit in EXPRESSIONS and ast.Yield in STATEMENTS and len(EXPRESSIONS) == 16


def test_every_expression_is_lowered() -> None:
    assert set(EXPRESSION_SQL) == EXPRESSIONS


def test_every_statement_is_lowered() -> None:
    assert set(STATEMENT_SQL) == STATEMENTS


def test_every_statement_and_expression_is_checked() -> None:
    assert set(STATEMENT_CHECKS) == STATEMENTS
    # `expr` handles these two itself, before the table: `?` and sql! { } chains
    assert set(EXPRESSION_CHECKS) | {ast.Propagate, ast.SqlBlock} == EXPRESSIONS
