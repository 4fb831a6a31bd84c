"""`pellc build --watch` edit-to-output against pell 0.1's full rebuild, on one project.

    python bench/watch_vs_pell01.py [--modules 400] [--edits 15] [--runs 3] [--pell PATH]

The project is `--modules` modules of 5 fns (bench/synthetic.py `project_module`, syntax both
compilers accept). pell 0.1 has no incremental or watch mode: after an edit its user builds
the whole project again, so its figure is the median wall time of `pell build DIR -d OUT`
(`--runs` runs; pell==0.1.0 is installed from PyPI into a temporary venv unless `--pell` names
its `pell`). pellc's is the time from saving an edit (one fn body of one module, spread over
the project) to the edited module's output holding it, with `pellc build --watch` running.
Measured here, never asserted in a timed test; the figures go to docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from compare import install, run
from synthetic import project_module

FNS = 5


def pell01_rebuilds(pell: str, source: Path, out: Path, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        seconds, _ = run([pell, "build", str(source), "-d", str(out)])
        times.append(seconds * 1000)
    return times


def watch_edits(source: Path, out: Path, modules: int, edits: int) -> list[float]:
    pellc = Path(sys.executable).parent / "pellc"
    process = subprocess.Popen(
        [str(pellc), "build", "--watch", str(source), "-d", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        while not process.stderr.readline().startswith("watching "):
            pass
        time.sleep(0.5)  # the watcher starts just after its line
        times = []
        for n in range(edits):
            index = 1 + (n * 37) % (modules - 1)
            path = source / f"m{index}.pell"
            output = out / f"m{index}.sql"
            marker = f"qty - {n + 1000}"
            text = project_module(index, FNS).replace("qty - 1", marker, 1)
            start = time.perf_counter()
            path.write_text(text, "utf-8")
            while marker not in output.read_text("utf-8"):
                time.sleep(0.002)
            times.append((time.perf_counter() - start) * 1000)
            process.stderr.readline()  # the rebuild's line
        return times
    finally:
        process.send_signal(2)
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modules", type=int, default=400)
    parser.add_argument("--edits", type=int, default=15)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--pell", help="pell 0.1's `pell` (default: installed from PyPI)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        work = Path(name)
        pell = args.pell or str(install(work / "pell01", "pell==0.1.0") / "pell")
        source = work / "project"
        source.mkdir()
        (source / "pell.toml").write_text("", "utf-8")
        for index in range(args.modules):
            (source / f"m{index}.pell").write_text(project_module(index, FNS), "utf-8")
        full = pell01_rebuilds(pell, source, work / "out-pell01", args.runs)
        edited = watch_edits(source, work / "out-pellc", args.modules, args.edits)
    print(f"{args.modules} modules of {FNS} fns; {os.cpu_count()} cores")
    print(f"pell 0.1 full rebuild: median {statistics.median(full):.0f} ms ({args.runs} runs)")
    print(
        f"pellc --watch save to output: median {statistics.median(edited):.0f} ms, "
        f"worst {max(edited):.0f} ms ({args.edits} edits)"
    )
    print(f"ratio: {statistics.median(full) / statistics.median(edited):.1f}x")


if __name__ == "__main__":
    main()
