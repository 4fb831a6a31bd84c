"""A generated project of N modules that import and call each other, for bench/engine.py and
tests/test_engine.py: module `app::mI` imports `app::m(I // 2)` (a binary tree of imports,
about log2(N) deep) and its retried fn calls that module's fn, so retry facts flow through calls
from the leaves to the root."""

from __future__ import annotations

from pathlib import Path

ROOT_MODULE = """module app::m0;

pub record Row {{ id: number, amount: number }}

pub fn touch(id: number) -> number {{
    sql! {{ update rows_0 set amount = amount + 1 where id = :id }};
    return id;
}}
"""

MODULE = """module app::m{index};

import app::m{parent};

pub record Row {{ id: number, amount: number }}

pub fn touch(id: number) -> number {{
    sql! {{ update rows_{index} set amount = amount + 1 where id = :id }};
    return m{parent}::touch(id);
}}

@retry(n = 3, backoff = 50)
pub fn retried(id: number) -> number {{
    let r: Row = sql! {{ select id, amount from rows_{index} where id = :id for update }}.one();
    return touch(r.id);
}}

pub fn report(limit: number) -> text {{
    var acc: text = "report {index}";
    for r in sql! {{ select id, amount from rows_{index} where amount < :limit }} {{
        if r.amount > 10 {{
            acc = "{{acc}} big {{r.id}}";
        }} else {{
            acc = "{{acc}} small {{r.id}}";
        }}
    }}
    return acc;
}}
"""


def module_text(index: int) -> str:
    return ROOT_MODULE.format() if index == 0 else MODULE.format(index=index, parent=index // 2)


def write_project(directory: Path, modules: int) -> list[Path]:
    """The project's files, written under `directory` (with a pell.toml): app/mI.pell."""
    (directory / "app").mkdir(parents=True, exist_ok=True)
    (directory / "pell.toml").write_text('allow = ["retry-deadlock-scope"]\n', "utf-8")
    paths = []
    for index in range(modules):
        path = directory / "app" / f"m{index}.pell"
        path.write_text(module_text(index), "utf-8")
        paths.append(path)
    return paths
