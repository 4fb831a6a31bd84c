"""Where pellc's time goes: each step of a build's imports, then each stage on the synthetic module.

    python bench/phases.py [--fns 2000] [--runs 5]

Imports are timed in a fresh interpreter each, in the order a build needs them. The stages
are timed in this process after a warm-up compile, with the cycle collector paused as
`compile_source` pauses it, as medians of `--runs`: pellc's parser (pell/lalr.py) shifting and
reducing with callbacks that build nothing, the same building the AST, the nesting check, the
checker and code generation. Measured here, never asserted in a timed test.

Run it with a Python that has pellc installed by pip, as users have it: from an editable
install, with PYTHONDONTWRITEBYTECODE set, every start compiles pellc's modules afresh.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import module

# What a build imports, in order; each line's time excludes what the lines above imported.
IMPORTS = (
    ("interpreter start-up", "pass"),
    ("pell (records, AST, diagnostics)", "import pell, pell.ast"),
    ("the parser and its cached tables", "from pell import syntax; syntax.parse('module m;')"),
    ("pellc's checker and codegen", "import pell.checker.checker, pell.codegen"),
    (
        "jinja2 and the templates",
        "from pell.resources import template_environment; "
        "template_environment().get_template('package.sql.j2')",
    ),
)


def import_times(runs: int) -> list[tuple[str, float]]:
    """Median seconds each step of IMPORTS adds, each run in a fresh interpreter."""
    cumulative: list[float] = []
    for index in range(len(IMPORTS)):
        code = "; ".join(statement for _, statement in IMPORTS[: index + 1])
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            samples.append(time.perf_counter() - start)
        cumulative.append(statistics.median(samples))
    previous = [0.0, *cumulative[:-1]]
    return [
        (name, now - before)
        for (name, _), now, before in zip(IMPORTS, cumulative, previous, strict=True)
    ]


def median_seconds(step: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fns", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    import pell
    from pell import syntax
    from pell.checker import check
    from pell.codegen import header, lower, print_module
    from pell.compiler import nesting_limit

    print("| import | seconds |")
    print("|---|---|")
    for name, seconds in import_times(args.runs):
        print(f"| {name} | {seconds:.3f} |")

    text = module(args.fns)
    pell.compile_source(text, "bench.pell")  # warm-up: imports, tables, templates
    tables = syntax._fast_parser()
    assert tables is not None, "no parse tables: pellc parses with lark"
    gc.disable()

    def build_nothing(children: list[object]) -> None:
        return None

    nothing = [build_nothing] * len(tables.rules)
    parsed, _ = syntax.parse(text)
    assert parsed is not None
    checked, _ = check(parsed, "23ai")
    stages = {
        "pell.lalr: lexing, shifts and reductions, no AST": median_seconds(
            lambda: tables.parse(text, nothing), args.runs
        ),
        "parse: the same building the AST": median_seconds(lambda: syntax.parse(text), args.runs),
        "nesting check": median_seconds(lambda: nesting_limit(parsed), args.runs),
        "checker": median_seconds(lambda: check(parsed, "23ai"), args.runs),
        "code generation": median_seconds(
            lambda: print_module(
                lower(checked, "23ai"), header("bench.pell", text, pell.__version__, "23ai")
            ),
            args.runs,
        ),
        "compile_source (all of the above, and the source map)": median_seconds(
            lambda: pell.compile_source(text, "bench.pell"), args.runs
        ),
    }
    gc.enable()
    print()
    print(f"{args.fns} fns ({len(text.encode()) / 1000:.0f} KB), median of {args.runs} runs:")
    print()
    print("| stage | seconds |")
    print("|---|---|")
    for name, seconds in stages.items():
        print(f"| {name} | {seconds:.3f} |")


if __name__ == "__main__":
    main()
