"""pellc against the public pell 0.1.0 on the same synthetic modules and projects.

    python bench/compare.py [--runs 5] [--modules 400]

Installs pell==0.1.0 and this working tree's pellc into two temporary venvs (both by pip, so
both run from compiled bytecode, as users run them), writes modules of N fns in five shapes both
compilers accept (bench/synthetic.py), and times both on each, alternating runs, reporting
medians, the ratio and peak memory (max RSS of the compiler process); then the scaling table
(N = 250, 1000, 4000, 8000) and the start-up time on a one-fn file; then a project of
`--modules` modules of 5 fns (bench/synthetic.py `project_module`) built into an empty
directory, and built again after one module changed (pell 0.1 has no incremental build, so
it compiles every module again). Prints Markdown for docs/benchmarks.md. Measured here, never
asserted in a timed test.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import module, project_module


def run(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one run of `command`. Its stderr goes to a file: a
    pipe nobody reads until the end fills up on a build's warnings and stops the compiler."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status) != 0:
            errors.seek(0)
            raise SystemExit(f"{command} failed: {errors.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss


def measure(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, int]]:
    """Median seconds and max peak RSS per command, the commands alternating run by run."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    memory: dict[str, int] = {name: 0 for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            seconds, rss = run(command)
            times[name].append(seconds)
            memory[name] = max(memory[name], rss)
    return {name: (statistics.median(times[name]), memory[name]) for name in commands}


def install(environment: Path, requirement: str) -> Path:
    """A new venv at `environment` with `requirement` installed by pip; its bin directory."""
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", requirement], check=True)
    return environment / "bin"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--modules", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        pell = install(work / "pell01", "pell==0.1.0") / "pell"
        pellc = install(work / "pellc", str(Path(__file__).resolve().parent.parent)) / "pellc"

        def commands(size: int) -> dict[str, list[str]]:
            source = work / f"m{size}.pell"
            if not source.exists():
                source.write_text(module(size), encoding="utf-8")
            return {
                "pellc": [str(pellc), "build", str(source), "-o", str(work / f"pellc{size}.sql")],
                "pell 0.1": [str(pell), "build", str(source), "-o", str(work / f"pell{size}.sql")],
            }

        measure(commands(1), 1)  # warm-up: pellc's grammar cache, the OS's file cache
        main_size = 2000
        result = measure(commands(main_size), args.runs)
        size_kb = (work / f"m{main_size}.pell").stat().st_size / 1000
        print(
            f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        )
        print()
        print(f"### {main_size} fns ({size_kb:.0f} KB), median of {args.runs} alternating runs")
        print()
        print("| compiler | time (s) | peak memory (MB) |")
        print("|---|---|---|")
        for name, (seconds, rss) in result.items():
            print(f"| {name} | {seconds:.3f} | {rss / 1024:.0f} |")
        ratio = result["pell 0.1"][0] / result["pellc"][0]
        print()
        print(f"pellc / pell 0.1 speed: {ratio:.2f}x ({'faster' if ratio >= 1 else 'slower'})")
        print()
        print(f"### Scaling (median of {max(1, args.runs - 2)} runs)")
        print()
        print("| fns | pellc (s) | pellc ms/fn | pell 0.1 (s) | pell 0.1 ms/fn |")
        print("|---|---|---|---|---|")
        for size in (250, 1000, 4000, 8000):
            row = measure(commands(size), max(1, args.runs - 2))
            print(
                f"| {size} | {row['pellc'][0]:.3f} | {1000 * row['pellc'][0] / size:.3f} | "
                f"{row['pell 0.1'][0]:.3f} | {1000 * row['pell 0.1'][0] / size:.3f} |"
            )
        startup = measure(commands(1), 10)
        print()
        print("### Start-up: a one-fn file, median of 10 runs")
        print()
        print("| compiler | time (s) |")
        print("|---|---|")
        for name, (seconds, _) in startup.items():
            print(f"| {name} | {seconds:.3f} |")
        project_shapes(work, pellc, pell, args.modules, args.runs)


def project_shapes(work: Path, pellc: Path, pell: Path, modules: int, runs: int) -> None:
    """A project built from scratch, and built again after one module changed."""
    source = work / "project"
    source.mkdir()
    for index in range(modules):
        (source / f"m{index}.pell").write_text(project_module(index, 5), encoding="utf-8")
    outputs = {"pellc": work / "out-pellc", "pell 0.1": work / "out-pell"}
    builds = {
        "pellc": f"{pellc} build {source} -d {outputs['pellc']}",
        "pell 0.1": f"{pell} build {source} -d {outputs['pell 0.1']}",
    }
    scratch = {
        name: ["sh", "-c", f"rm -rf {outputs[name]} && {build} > /dev/null 2>&1"]
        for name, build in builds.items()
    }
    result = measure(scratch, runs)
    print()
    print(f"### A project of {modules} modules (5 fns each), median of {runs} alternating runs")
    print()
    print("| compiler | from scratch (s) | peak memory (MB) |")
    print("|---|---|---|")
    for name, (seconds, rss) in result.items():
        print(f"| {name} | {seconds:.3f} | {rss / 1024:.0f} |")
    ratio = result["pell 0.1"][0] / result["pellc"][0]
    print()
    print(f"from scratch: pellc / pell 0.1 speed: {ratio:.2f}x")
    # one module changed before each build: a comment appended, so its text (and hash) moves
    changed = source / f"m{modules // 2}.pell"
    again = {
        name: ["sh", "-c", f"echo '// edit' >> {changed} && {build} > /dev/null 2>&1"]
        for name, build in builds.items()
    }
    for command in again.values():
        run(command)  # both output directories complete and current
    result = measure(again, runs)
    print()
    print("| compiler | rebuilt after one module changed (s) |")
    print("|---|---|")
    for name, (seconds, _) in result.items():
        print(f"| {name} | {seconds:.3f} |")
    ratio = result["pell 0.1"][0] / result["pellc"][0]
    print()
    print(f"one module changed: pellc / pell 0.1 speed: {ratio:.2f}x")


if __name__ == "__main__":
    main()
