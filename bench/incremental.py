"""Incremental directory builds: time a first and a second `pellc build` of 200 modules.

    python bench/incremental.py [--modules 200]

Prints both times, the ratio, and whether the second build left every output untouched.
Measured here, never asserted in a timed test.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = """module bench.m{index};

pub record Row {{ id: number, name: text, amount: number }}
{error}

@retry(n=5, backoff=100, jitter=50, exponential=true, cap=2000)
pub fn touch(id: number) -> {returns} {{
    let r: Row = sql! {{ select id, name, amount from rows_{index} where id = :id for update }}.one(){propagate};
    sql! {{ update rows_{index} set amount = amount + 1 where id = :id }};
    return r;
}}

pub fn describe(id: number) -> text {{
    var total: number = 0;
    for r in sql! {{ select id, name, amount from rows_{index} where id >= :id }} {{
        if r.amount > 10 {{
            total = total + r.amount;
        }} else {{
            total = total - 1;
        }}
    }}
    return "total {{total}} from {{id}}";
}}
"""


def build(pellc: str, source: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run([pellc, "build", str(source), "-d", str(out)], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modules", type=int, default=200)
    args = parser.parse_args()
    pellc = str(Path(sys.executable).parent / "pellc")
    with tempfile.TemporaryDirectory() as work:
        source, out = Path(work) / "src", Path(work) / "out"
        source.mkdir()
        for index in range(args.modules):
            # one module in four declares an error: the project stays within the code ranges
            declares = index % 4 == 0
            text = MODULE.format(
                index=index,
                error="pub error RowNotFound { id: number }" if declares else "",
                returns="Result<Row, RowNotFound>" if declares else "Row",
                propagate="?" if declares else "",
            )
            (source / f"m{index:04d}.pell").write_text(text, "utf-8")
        first = build(pellc, source, out)
        before = {p: p.stat().st_mtime_ns for p in out.rglob("*.sql")}
        second = build(pellc, source, out)
        after = {p: p.stat().st_mtime_ns for p in out.rglob("*.sql")}
    print(f"modules: {args.modules}")
    print(f"first build:  {first:.3f} s")
    print(f"second build: {second:.3f} s")
    print(f"ratio: the second build takes {second / first:.1%} of the first")
    print(f"outputs rewritten by the second build: {sum(before[p] != after[p] for p in before)}")


if __name__ == "__main__":
    main()
