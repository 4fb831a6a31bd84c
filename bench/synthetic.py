"""A synthetic Pell module of N fns in five shapes, in syntax both pellc and pell 0.1 accept."""

from __future__ import annotations

HEADER = """module bench.synthetic;

import dbms_output;

pub record Item { id: number, name: text, qty: number }
pub error ItemNotFound { id: number }
pub error TooMany { id: number, qty: number }
"""

SHAPES = (
    # 1. a retried procedure
    """
@retry(5, backoff_ms=100, cap_ms=2000, jitter=true)
pub fn retried_{i}(item_id: number) {{
    sql! {{ update items set qty = qty - 1 where id = :item_id }};
}}
""",
    # 2. a .one()? fetch into a record
    """
pub fn fetch_{i}(item_id: number) -> Result<Item, ItemNotFound> {{
    let it: Item = sql! {{ select id, name, qty from items where id = :item_id }}.one()?;
    return Ok(it);
}}
""",
    # 3. a cursor loop with interpolation and if/else
    """
pub fn report_{i}(limit: number) -> text {{
    var acc: text = "report {i}";
    for r in sql! {{ select id, name, qty from items where qty < :limit }} {{
        if r.qty > 10 {{
            acc = "{{acc}} big {{r.name}}";
        }} else {{
            acc = "{{acc}} small {{r.id}}";
        }}
    }}
    return acc;
}}
""",
    # 4. an Err return
    """
pub fn check_{i}(item_id: number, qty: number) -> Result<number, TooMany> {{
    if qty > 100 {{
        return Err(TooMany {{ id: item_id, qty: qty }});
    }}
    return Ok(qty);
}}
""",
    # 5. a cursor loop calling dbms_output::put_line
    """
pub fn dump_{i}(limit: number) {{
    for r in sql! {{ select id, name from items where id < :limit }} {{
        dbms_output::put_line("item {{r.id}} is {{r.name}}");
    }}
}}
""",
)


def module(fns: int) -> str:
    """A module of `fns` fns, cycling through the five shapes."""
    parts = [HEADER]
    for index in range(fns):
        parts.append(SHAPES[index % len(SHAPES)].format(i=index))
    return "".join(parts)


PROJECT_HEADER = """module bench.m{index};

import dbms_output;

pub record Item {{ id: number, name: text, qty: number }}
"""

PROJECT_ERRORS = """pub error ItemNotFound {{ id: number }}
pub error TooMany {{ id: number, qty: number }}
"""


def project_module(index: int, fns: int) -> str:
    """Module `index` of a project: `fns` fns cycling through the shapes. One module in eight
    declares the two errors (and has the shapes that raise them), so that a project of 400
    modules stays within the 100 codes of the default error category."""
    with_errors = index % 8 == 0
    shapes = SHAPES if with_errors else (SHAPES[0], SHAPES[2], SHAPES[4])
    parts = [PROJECT_HEADER.format(index=index)]
    if with_errors:
        parts.append(PROJECT_ERRORS.format())
    for fn in range(fns):
        parts.append(shapes[fn % len(shapes)].format(i=fn))
    return "".join(parts)
