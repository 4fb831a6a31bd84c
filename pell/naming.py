"""PL/SQL names for Pell names: `p_` params, `l_` locals, `t_` record types, package names."""

from __future__ import annotations

# Locals the lowering itself declares; a Pell local that would collide gets a suffix.
RESERVED_LOCALS = frozenset({"l_pell_attempt"})


def local_name(name: str) -> str:
    return f"l_{name.lower()}"


def param_name(name: str) -> str:
    return f"p_{name.lower()}"


def record_type_name(name: str) -> str:
    return f"t_{name.lower()}"


def list_type_name(element: str) -> str:
    """`list<Order>` -> `t_order_list`, `list<number>` -> `t_number_list`."""
    return f"t_{element.lower()}_list"


def field_name(name: str) -> str:
    return name.lower()


def unique(name: str, taken: set[str]) -> str:
    """`name`, or `name_2`, `name_3`... the first not in `taken`; the result is added to it."""
    candidate = name
    counter = 2
    while candidate in taken:
        candidate = f"{name}_{counter}"
        counter += 1
    taken.add(candidate)
    return candidate


def package_name(module_path: tuple[str, ...]) -> tuple[str | None, str]:
    """`hr.employees` -> (`hr`, `employees`); `orders` -> (None, `orders`); `a.b.c` -> (`a`, `b_c`)."""
    if len(module_path) == 1:
        return None, module_path[0].lower()
    return module_path[0].lower(), "_".join(module_path[1:]).lower()
