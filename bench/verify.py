"""How long `pellc verify` takes: every example, and the 2,000-fn synthetic module.

    python bench/verify.py [--runs 5]

Runs the installed `pellc` of this interpreter (`python -m pell`) as a user would, the whole
command (start-up, compile, verify) and then, in process, the compile and the verification
apart; medians of `--runs`. Prints Markdown for docs/benchmarks.md. The goals (issue 12):
every example under 5 s in all, the 2,000-fn module under 20 s. Measured, never asserted.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import module

ROOT = Path(__file__).parent.parent


def command_seconds(arguments: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pell", "verify", *arguments], check=True,
                       stdout=subprocess.DEVNULL, cwd=ROOT)  # fmt: skip
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def in_process(text: str, runs: int) -> tuple[float, float, int, int]:
    """(compile s, verify s, fns verified, schedules), medians."""
    import pell
    from pell.verify import verify

    compiles, verifies = [], []
    fns = schedules = 0
    for _ in range(runs):
        start = time.perf_counter()
        result = pell.compile_source(text, "synthetic.pell")
        compiles.append(time.perf_counter() - start)
        start = time.perf_counter()
        report = verify([result])
        verifies.append(time.perf_counter() - start)
        fns = len(report.verdicts)
        schedules = sum(v.schedules for v in report.verdicts)
    return statistics.median(compiles), statistics.median(verifies), fns, schedules


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    examples = command_seconds(["examples"], runs)
    text = module(2000)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch, "synthetic.pell")
        path.write_text(text, encoding="utf-8")
        whole = command_seconds([str(path)], runs)
    compile_s, verify_s, fns, schedules = in_process(text, runs)
    print(f"Python {platform.python_version()}, {platform.machine()}, median of {runs} runs.\n")
    print(
        "| input | `pellc verify` (whole command) | compile | verify | fns verified | schedules |"
    )
    print("|---|---|---|---|---|---|")
    print(f"| every example (`examples/`) | {examples:.2f} s | | | | |")
    print(
        f"| 2,000-fn module (`bench/synthetic.py`) | {whole:.2f} s | {compile_s:.2f} s "
        f"| {verify_s:.2f} s | {fns} | {schedules:,} |"
    )


if __name__ == "__main__":
    main()
