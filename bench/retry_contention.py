"""Why backoff, jitter and caps matter: one contended workload on a real PostgreSQL, five retry
policies, side by side.

    .venv/bin/pip install -e '.[bench]'
    .venv/bin/python bench/retry_contention.py [--runs 3] [--workers 8] [--transfers 25]
        [--plot docs/retry_contention.png]

A throwaway cluster (tests/postgres_server.py: unix socket, fsync off, deadlock_timeout 50 ms)
holds four accounts; each worker makes transfers between random pairs, debiting one account,
pausing 5 ms, crediting the other, so that opposite orders deadlock. The transfer is a Pell fn
compiled by pellc for `--target postgres`, once per policy:

- no retry: the fn without @retry;
- naive: the doctrine's anti-pattern, in the client: retry forever on any error, a fixed 1 s
  sleep between tries;
- no backoff: @retry(n = 10), retried at once;
- reference: @retry(n = 5, backoff = 100, jitter = 50, exponential = true, cap = 2000), the
  reference case of spec/retry.md;
- exponential + jitter: @retry(n = 10, backoff = 20, jitter = true, exponential = true,
  cap = 500), a shorter base with multiplicative jitter.

For each: transfers completed, failures surfaced to the client, retries (attempts counted by a
sequence, which no rollback returns, less the calls), p50 and p99 latency of a call,
throughput; medians of `--runs` runs. Prints the Markdown table for docs/benchmarks.md and
writes the plot. Measured here, never asserted in a test.
"""

from __future__ import annotations

import argparse
import itertools
import platform
import random
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from postgres_server import binaries, running  # noqa: E402

from pell import compile_source  # noqa: E402

ACCOUNTS = 4

SOURCE = """
module bench;

{annotation}
pub fn transfer(from_id: number, to_id: number, amount: number) {{
    let attempt: number = sql! {{ select nextval('attempts') }}.one();
    sql! {{ update accounts set balance = balance - :amount where id = :from_id }};
    let slept: text = sql! {{ select pg_sleep(0.005)::text }}.one();
    sql! {{ update accounts set balance = balance + :amount where id = :to_id }};
}}
"""

POLICIES: dict[str, tuple[str, bool]] = {  # name -> (annotation, retried by the client)
    "no retry": ("", False),
    "naive (client, forever, 1 s)": ("", True),
    "no backoff (n=10)": ("@retry(n = 10)", False),
    "reference": ("@retry(n = 5, backoff = 100, jitter = 50, exponential = true, cap = 2000)", False),
    "exponential + jitter (n=10, 20 ms, cap 500)": (
        "@retry(n = 10, backoff = 20, jitter = true, exponential = true, cap = 500)",
        False,
    ),
}


@dataclass
class Outcome:
    completed: int
    failures: int
    retries: int
    p50_ms: float
    p99_ms: float
    throughput: float  # completed transfers per second of wall time


def prepare(conninfo: str, annotation: str) -> None:
    result = compile_source(SOURCE.format(annotation=annotation), "bench.pell", "postgres")
    if result.sql is None:
        raise SystemExit("\n".join(d.message for d in result.diagnostics))
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute(
            "drop schema if exists bench cascade; drop table if exists accounts;"
            "drop sequence if exists attempts; create sequence attempts;"
            "create table accounts (id numeric primary key, balance numeric not null);"
            f"insert into accounts select g, 1000 from generate_series(1, {ACCOUNTS}) g;"
        )
        connection.execute(result.sql)


def run_once(conninfo: str, client_retry: bool, workers: int, transfers: int, seed: int) -> Outcome:
    latencies: list[float] = []
    failures = 0
    lock = threading.Lock()

    def worker(index: int) -> None:
        nonlocal failures
        rng = random.Random(seed * 1000 + index)
        with psycopg.connect(conninfo, autocommit=True) as connection:
            for _ in range(transfers):
                from_id, to_id = rng.sample(range(1, ACCOUNTS + 1), 2)
                started = time.perf_counter()
                while True:
                    try:
                        connection.execute(
                            "select bench.transfer(%s, %s, 1)", (from_id, to_id)
                        )
                        with lock:
                            latencies.append(time.perf_counter() - started)
                        break
                    except psycopg.Error:
                        if not client_retry:
                            with lock:
                                failures += 1
                            break
                        time.sleep(1.0)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    with psycopg.connect(conninfo, autocommit=True) as connection:
        row = connection.execute("select last_value, is_called from attempts").fetchone()
        total = connection.execute("select sum(balance) from accounts").fetchone()
    assert row is not None and total is not None
    assert total[0] == 1000 * ACCOUNTS, "balances must be conserved"
    attempts = int(row[0]) if row[1] else 0
    calls = workers * transfers
    ordered = sorted(latencies) or [0.0]
    return Outcome(
        completed=len(latencies),
        failures=failures,
        retries=attempts - calls,  # each try, the client's too, takes one number
        p50_ms=1000 * ordered[len(ordered) // 2],
        p99_ms=1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        throughput=len(latencies) / wall,
    )


def median(outcomes: list[Outcome]) -> Outcome:
    return Outcome(
        completed=int(statistics.median(o.completed for o in outcomes)),
        failures=int(statistics.median(o.failures for o in outcomes)),
        retries=int(statistics.median(o.retries for o in outcomes)),
        p50_ms=statistics.median(o.p50_ms for o in outcomes),
        p99_ms=statistics.median(o.p99_ms for o in outcomes),
        throughput=statistics.median(o.throughput for o in outcomes),
    )


def plot(results: dict[str, Outcome], path: Path, calls: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    short = [n.split(" (")[0] for n in names]
    figure, axes = plt.subplots(1, 4, figsize=(16, 4))
    panels = (
        ("completed transfers", [results[n].completed for n in names], f"of {calls}"),
        ("failures surfaced", [results[n].failures for n in names], "to the client"),
        ("p99 latency (ms)", [results[n].p99_ms for n in names], "per call"),
        ("throughput (transfers/s)", [results[n].throughput for n in names], ""),
    )
    for axis, (title, values, note) in zip(axes, panels, strict=True):
        axis.bar(range(len(names)), values, color="#4a7ebb")
        axis.set_xticks(range(len(names)))
        axis.set_xticklabels(short, rotation=30, ha="right")
        axis.set_title(f"{title}\n{note}" if note else title)
    figure.suptitle("Retry policies under deadlocks on PostgreSQL 15 (median of runs)")
    figure.tight_layout()
    figure.savefig(path, dpi=100, metadata={"Software": None})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--transfers", type=int, default=25)
    parser.add_argument("--plot", type=Path, default=ROOT / "docs" / "retry_contention.png")
    args = parser.parse_args()
    bindir = binaries()
    if bindir is None:
        raise SystemExit("no PostgreSQL binaries (pg_config --bindir)")
    results: dict[str, Outcome] = {}
    with running(bindir, port=54331) as server:
        conninfo = server.conninfo()
        runs: dict[str, list[Outcome]] = {name: [] for name in POLICIES}
        # alternate the policies run by run, so drift over time touches each alike
        for run, (name, (annotation, client_retry)) in itertools.product(
            range(args.runs), POLICIES.items()
        ):
            prepare(conninfo, annotation)
            runs[name].append(run_once(conninfo, client_retry, args.workers, args.transfers, run))
            print(f"run {run + 1}: {name}: {runs[name][-1]}", file=sys.stderr)
        results = {name: median(outcomes) for name, outcomes in runs.items()}
    calls = args.workers * args.transfers
    print(f"Machine: {platform.machine()}, Python {platform.python_version()}; "
          f"{args.workers} workers x {args.transfers} transfers = {calls} calls over "
          f"{ACCOUNTS} accounts; median of {args.runs} runs\n")  # fmt: skip
    print("| policy | completed | failures surfaced | retries | p50 (ms) | p99 (ms) | transfers/s |")
    print("|---|---|---|---|---|---|---|")
    for name, o in results.items():
        print(f"| {name} | {o.completed} | {o.failures} | {o.retries} | {o.p50_ms:.0f} | "
              f"{o.p99_ms:.0f} | {o.throughput:.1f} |")  # fmt: skip
    plot(results, args.plot, calls)
    print(f"\nplot: {args.plot.relative_to(ROOT) if args.plot.is_relative_to(ROOT) else args.plot}")


if __name__ == "__main__":
    main()
