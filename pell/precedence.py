"""PL/SQL operator precedence. A lowered expression carries it, so parentheses are written only
where PL/SQL would otherwise group differently.

It sits below codegen and the checker's method table, which both lower with it.
"""

from __future__ import annotations

# PL/SQL precedence, loosest first. `||` binds like `+` and `-` in PL/SQL.
OR, AND, NOT, COMPARISON, ADDITIVE, MULTIPLICATIVE, UNARY, ATOM = range(1, 9)

Lowered = tuple[str, int]  # (PL/SQL text, precedence)


def wrap(lowered: Lowered, minimum: int) -> str:
    """The text of `lowered`, in parentheses if it binds looser than `minimum`."""
    text, precedence = lowered
    return text if precedence >= minimum else f"({text})"
