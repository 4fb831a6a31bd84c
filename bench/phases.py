"""Where pellc's time goes: each dependency's import, then each stage on the synthetic module.

    python bench/phases.py [--fns 2000] [--runs 5]

Imports are timed in a fresh interpreter each, in the order a build needs them. The stages
are timed in this process after a warm-up compile, with the cycle collector paused as
`compile_source` pauses it, as medians of `--runs`: pellc's lexer (pell/lexer.py) and lark's
LALR loop alone (no callbacks), the same with pellc's AST callbacks, lark's own contextual
lexer and the LALR loop, the LALR loop fed tokens lexed beforehand (what the first and the
third take beyond it is their lexers'), the nesting check, the checker and code generation.
Measured here, never asserted in a timed test.

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
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import module

# What a build imports, in order; each line's time excludes what the lines above imported.
IMPORTS = (
    ("interpreter start-up", "pass"),
    ("pell (AST, diagnostics)", "import pell, pell.ast"),
    ("lark", "import lark"),
    ("the cached grammar", "from pell import syntax; syntax.grammar_parser()"),
    ("jinja2", "import jinja2"),
    ("sqlglot (Oracle tokenizer)", "import sqlglot.dialects.oracle"),
    ("pellc's checker and codegen", "import pell.checker, pell.codegen"),
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
    from pell import ast, syntax
    from pell.checker import check
    from pell.codegen import header, lower, print_module

    print("| import | seconds |")
    print("|---|---|")
    for name, seconds in import_times(args.runs):
        print(f"| {name} | {seconds:.3f} |")

    text = module(args.fns)
    pell.compile_source(text, "bench.pell")  # warm-up: imports, grammar, templates
    lark_parser = syntax.grammar_parser()
    gc.disable()

    # pellc lexes with pell.lexer.FastLexer, lark's contextual lexer sped up; lark's own is
    # timed too, and the LALR loop alone, fed tokens lexed beforehand
    fast_lexer = lark_parser.parser.lexer
    contextual_lexer = getattr(fast_lexer, "contextual", fast_lexer)
    tokens: list[object] = []

    class Replay:
        def lex(self, lexer_state: object, parser_state: object) -> Iterator[object]:
            return iter(tokens)

    class Record:
        def lex(self, lexer_state: object, parser_state: object) -> Iterator[object]:
            for token in fast_lexer.lex(lexer_state, parser_state):
                tokens.append(token)
                yield token

    def lark_alone(lexer: object = fast_lexer) -> object:
        interactive = lark_parser.parse_interactive(text)
        interactive.parser_state.parse_conf.callbacks = {}  # shift and reduce, build nothing
        interactive.lexer_thread.lexer = lexer
        return interactive.resume_parse()

    lark_alone(Record())

    parsed, _ = syntax.parse(text)
    assert parsed is not None
    checked, _ = check(parsed, "23ai")
    stages = {
        "lark: lexer and LALR loop, no callbacks": median_seconds(lark_alone, args.runs),
        "parse: the same with pellc's AST callbacks": median_seconds(
            lambda: syntax.parse(text), args.runs
        ),
        "lark's own contextual lexer and LALR loop, no callbacks": median_seconds(
            lambda: lark_alone(contextual_lexer), args.runs
        ),
        "LALR loop alone, no callbacks (tokens lexed beforehand)": median_seconds(
            lambda: lark_alone(Replay()), args.runs
        ),
        "nesting check": median_seconds(lambda: ast.deepest(parsed), args.runs),
        "checker": median_seconds(lambda: check(parsed, "23ai"), args.runs),
        "code generation": median_seconds(
            lambda: print_module(
                lower(checked, "23ai"), header("bench.pell", text, pell.__version__, "23ai")
            ),
            args.runs,
        ),
        "compile_source (all of the above)": median_seconds(
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
