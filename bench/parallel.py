"""Parallel directory builds: `pellc build -j 1` against `-j N` on a project built from scratch.

    python bench/parallel.py [--modules 400] [--jobs 2] [--runs 3] [--sweep]

Writes a project of `--modules` modules of 5 fns (bench/synthetic.py `project_module`), builds
it into an empty directory with -j 1 and with -j N, alternating runs, and prints the medians,
the speed-up and whether both output trees are byte-identical. With --sweep, also times small
projects (4 to 48 modules, about 1,200 characters each) with the pool forced on
(pell.build.PARALLEL_THRESHOLD = 0), to see from how much source to compile a pool pays for its
start. Measured here, never asserted in a timed test.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import project_module

# pellc's command line with the pool's threshold set first: `THRESHOLD pellc-arguments...`
FORCED = (
    "import sys, pell.build; pell.build.PARALLEL_THRESHOLD = int(sys.argv[1]); "
    "from pell.cli import main; sys.exit(main(sys.argv[2:]))"
)


def build(source: Path, out: Path, jobs: int, threshold: int | None = None) -> float:
    """Wall seconds of one build of `source` into a new `out`."""
    subprocess.run(["rm", "-rf", str(out)], check=True)
    arguments = ["build", str(source), "-d", str(out), "-j", str(jobs)]
    if threshold is None:
        command = [str(Path(sys.executable).parent / "pellc"), *arguments]
    else:
        command = [sys.executable, "-c", FORCED, str(threshold), *arguments]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def project(directory: Path, modules: int) -> Path:
    directory.mkdir()
    for index in range(modules):
        (directory / f"m{index}.pell").write_text(project_module(index, 5), encoding="utf-8")
    return directory


def same_trees(left: Path, right: Path) -> bool:
    names = sorted(p.relative_to(left) for p in left.rglob("*") if p.is_file())
    if names != sorted(p.relative_to(right) for p in right.rglob("*") if p.is_file()):
        return False
    return all(filecmp.cmp(left / n, right / n, shallow=False) for n in names)


def compare(source: Path, work: Path, jobs: int, runs: int, threshold: int | None) -> list[float]:
    """Median seconds of -j 1 and -j `jobs`, alternating runs."""
    times: dict[int, list[float]] = {1: [], jobs: []}
    for _ in range(runs):
        for count in times:
            times[count].append(build(source, work / f"out-j{count}", count, threshold))
    return [statistics.median(times[count]) for count in times]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modules", type=int, default=400)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        source = project(work / "src", args.modules)
        build(source, work / "warm", 1)  # the OS's file cache, pellc's grammar cache
        serial, parallel = compare(source, work, args.jobs, args.runs, None)
        print(f"Machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
        print(f"{args.modules} modules from scratch, median of {args.runs} alternating runs:")
        print(f"  -j 1: {serial:.3f} s")
        print(f"  -j {args.jobs}: {parallel:.3f} s  ({serial / parallel:.2f}x)")
        identical = same_trees(work / "out-j1", work / f"out-j{args.jobs}")
        print(f"  outputs and manifest byte-identical: {identical}")
        if args.sweep:
            print(f"pool forced on, -j 1 vs -j {args.jobs}, median of {args.runs} runs:")
            for modules in (4, 8, 16, 24, 32, 48):
                small = project(work / f"src{modules}", modules)
                size = sum(len(p.read_text("utf-8")) for p in small.iterdir())
                serial, parallel = compare(small, work, args.jobs, args.runs, 0)
                print(
                    f"  {modules:3} modules ({size:6} characters): "
                    f"{serial:.3f} s vs {parallel:.3f} s ({1000 * (serial - parallel):+.0f} ms)"
                )


if __name__ == "__main__":
    main()
