"""The longest pause a printed sleep expression can give: the verifier reads the expression the
lowering wrote (not the policy it came from), so a wrong backoff, cap or jitter shows."""

from __future__ import annotations

import ast
import functools
from decimal import Decimal

from pell.naming import ATTEMPT_VARIABLE


class UnreadableSleep(Exception):
    """An expression outside what the retry lowering writes."""


@functools.lru_cache(maxsize=4096)  # the same few expressions, on every schedule
def longest_sleep(expression: str, attempt: int) -> Decimal:
    """The most seconds `expression` can give with the attempt variable at `attempt`:
    DBMS_RANDOM.VALUE, or PostgreSQL's random(), at its top (every expression the lowering
    writes grows with it)."""
    try:
        tree = ast.parse(expression, mode="eval")
    except SyntaxError as error:
        raise UnreadableSleep(expression) from error
    return _value(tree.body, attempt)


def _value(node: ast.expr, attempt: int) -> Decimal:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return Decimal(str(node.value))
    if isinstance(node, ast.Name) and node.id == ATTEMPT_VARIABLE:
        return Decimal(attempt)
    if isinstance(node, ast.Attribute) and _dotted(node) == "DBMS_RANDOM.VALUE":
        return Decimal(1)  # VALUE alone: [0, 1)
    if isinstance(node, ast.BinOp):
        left, right = _value(node.left, attempt), _value(node.right, attempt)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            return left / right
    if isinstance(node, ast.Call) and not node.keywords:
        # PostgreSQL's least/greatest/power are Oracle's; random() is VALUE: [0, 1)
        name = _dotted(node.func).upper()
        args = [_value(arg, attempt) for arg in node.args]
        if name == "LEAST" and args:
            return min(args)
        if name == "GREATEST" and args:
            return max(args)
        if name == "POWER" and len(args) == 2:
            return Decimal(args[0]) ** int(args[1])
        if name == "DBMS_RANDOM.VALUE" and len(args) == 2:
            return args[1]  # VALUE(low, high): [low, high)
        if name == "RANDOM" and not args:
            return Decimal(1)
    raise UnreadableSleep(ast.unparse(node))


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""
