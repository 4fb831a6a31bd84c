"""The functions that copy a list into or out of another package's list type
(pell.checker.list_crossings says why a copy is needed)."""

from __future__ import annotations

from pell.checker.model import ListCopy


def list_copy_function(copy: ListCopy) -> str:
    """The function, indented for a package body or a block. It walks the list from FIRST by
    NEXT and assigns each element at its own index, so a sparse list stays as it was (PL/SQL
    Language Reference 19c, "Collection Methods": FIRST "Returns first index in collection",
    NEXT "Returns index that succeeds specified index"); an empty list is copied as an empty
    one (FIRST is NULL)."""
    return (
        f"  -- a list<{copy.element}> copied element by element: another package's list type is\n"
        f"  -- a type of its own, and a collection is assigned only to one of the same type.\n"
        f"  FUNCTION {copy.function}(p_list IN {copy.source}) RETURN {copy.target} IS\n"
        f"    l_copy {copy.target};\n"
        f"    l_at PLS_INTEGER := p_list.FIRST;\n"
        f"  BEGIN\n"
        f"    WHILE l_at IS NOT NULL LOOP\n"
        f"      l_copy(l_at) := p_list(l_at);\n"
        f"      l_at := p_list.NEXT(l_at);\n"
        f"    END LOOP;\n"
        f"    RETURN l_copy;\n"
        f"  END {copy.function};"
    )
