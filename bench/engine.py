"""Edit-to-diagnostics through pell.engine, and edit-to-output with `pellc build --watch`, in a
generated project of N modules that import and call each other (bench/engine_project.py).

    python bench/engine.py [--modules 400] [--edits 15] [--no-watch]

Engine: the project is loaded and checked once; then each edit (a comment, a body change, a
signature change that its importers see, in turn, in modules spread over the tree) is given as
an editor's buffer, and the time runs until the diagnostics of every module the engine says
it affects are computed. Watch: `pellc build --watch` of the project; each edit is saved and
the time runs until the edited module's output holds it. Prints the median and the worst, in
ms, and how many modules each kind of edit compiled again. Measured here, never asserted in a
timed test.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from engine_project import module_text, write_project

from pell.engine import Engine

EDITS = {
    # every offset after it moves; nothing an importer reads changes
    "comment": lambda text, n: f"// edit {n}\n" + text,
    # the module's own SQL and facts change; its signature does not
    "body": lambda text, n: text.replace("amount + 1", f"amount + {n + 2}"),
    # its importers read it: they are compiled again
    "signature": lambda text, n: text.replace(
        "pub record Row { id: number, amount: number }",
        f"pub record Row {{ id: number, amount: number, extra{n}: number }}",
    ),
}


def engine_edits(root: Path, modules: int, edits: int) -> None:
    start = time.perf_counter()
    engine = Engine(root)
    engine.all_diagnostics()
    print(f"engine: load and check {modules} modules: {time.perf_counter() - start:.2f} s")
    # as a long-running server does (and `build --watch`): what the load made is not scanned
    # by every collection of the cycle collector
    gc.collect()
    gc.freeze()
    for kind, edit in EDITS.items():
        times, recompiled = [], []
        for n in range(edits):
            index = 1 + (n * 37) % (modules - 1)  # spread over the tree, leaves and inner
            path = root / "app" / f"m{index}.pell"
            start = time.perf_counter()
            affected = engine.set_overlay(path, edit(module_text(index), n))
            for each in affected:
                engine.diagnostics(each)
            times.append((time.perf_counter() - start) * 1000)
            recompiled.append(len(engine.recomputed))
            engine.set_overlay(path, None)  # back to the disk's text for the next edit
        print(
            f"engine: {kind} edit to diagnostics: median {statistics.median(times):.1f} ms, "
            f"worst {max(times):.1f} ms; modules compiled again: median "
            f"{statistics.median(recompiled):.0f}, most {max(recompiled)}"
        )


def watch_edits(root: Path, modules: int, edits: int) -> None:
    pellc = Path(sys.executable).parent / "pellc"
    out = root.parent / "out"
    process = subprocess.Popen(
        [str(pellc), "build", "--watch", str(root), "-d", str(out)],
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    try:
        start = time.perf_counter()
        while not process.stderr.readline().startswith("watching "):
            pass
        print(f"watch: first build of {modules} modules: {time.perf_counter() - start:.2f} s")
        time.sleep(0.5)  # the watcher starts just after its line
        times, rebuilds = [], []
        for n in range(edits):
            index = 1 + (n * 37) % (modules - 1)
            path = root / "app" / f"m{index}.pell"
            output = out / "app" / f"m{index}.sql"
            marker = f"amount + {n + 1000}"
            start = time.perf_counter()
            path.write_text(module_text(index).replace("amount + 1", marker), "utf-8")
            while marker not in output.read_text("utf-8"):
                time.sleep(0.002)
            times.append((time.perf_counter() - start) * 1000)
            line = process.stderr.readline()  # `... changed: ..., N ms`: the rebuild's time
            rebuilds.append(float(line.rsplit(", ", 1)[-1].removesuffix(" ms\n")))
        print(
            f"watch: save to output written: median {statistics.median(times):.0f} ms, "
            f"worst {max(times):.0f} ms, of which the rebuild (the line's time): median "
            f"{statistics.median(rebuilds):.0f} ms (watchfiles waits 10 ms of quiet first)"
        )
    finally:
        process.send_signal(2)
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--modules", type=int, default=400)
    parser.add_argument("--edits", type=int, default=15)
    parser.add_argument("--no-watch", action="store_true", help="the engine only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        root = Path(work) / "project"
        write_project(root, args.modules)
        print(f"{args.modules} modules; {os.cpu_count()} cores")
        engine_edits(root, args.modules, args.edits)
        if not args.no_watch:
            watch_edits(root, args.modules, args.edits)


if __name__ == "__main__":
    main()
