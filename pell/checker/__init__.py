"""The checker: declarations, annotations, names and types. AST -> CheckedModule + diagnostics.

`check`, `declare` and the rest are in pell.checker.checker, imported when first asked for: a
build that compiles nothing reads its modules' retry facts (pell.checker.retry_facts, and the
model and types below them) and none of the rest.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pell.checker.checker import (
        CheckedModule,
        TypeResolver,
        check,
        declare,
        private_item,
    )

__all__ = ["CheckedModule", "TypeResolver", "check", "declare", "private_item"]


def __getattr__(name: str) -> Any:
    # only the names above: `from pell.checker import types` asks here first, then imports
    # the submodule
    if name not in __all__:
        raise AttributeError(f"module 'pell.checker' has no attribute {name!r}")
    return getattr(importlib.import_module("pell.checker.checker"), name)
