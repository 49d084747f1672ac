"""How fast the command line answers a bad argument (issue 18: under 0.5 s, because arguments
are parsed and checked before the numerics load), and ``simulate --list`` (the README's first
command; durations read from the YAML files, no simulator loaded). Each case runs the tool in
a fresh Python process, as a user's shell would, ``--repeat`` times; the table has the median
and the worst wall time.

    .venv/bin/python bench/bench_cli.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.5  # [s]
CASES = {
    "--help": ["--help"],
    "unknown command": ["estimat", "bag"],
    "simulate: unknown scenario": ["simulate", "no_such_scenario", "--out", "/tmp/x"],
    "simulate: no scenario": ["simulate"],
    "simulate --list": ["simulate", "--list"],
    "estimate: missing bag": ["estimate", "/no/such/bag"],
    "estimate: bad --period": ["estimate", "bag", "--period", "-1"],
    "report: missing bag": ["report", "/no/such/bag", "--out", "/tmp/x"],
    "plan: missing file": ["plan", "/no/such/plan.yaml", "--out", "/tmp/x.npz"],
    "verify: missing plan": ["verify", "/no/such/plan.npz"],
}


def wall_time(arguments: list[str]) -> tuple[float, float, int]:
    """Wall and CPU seconds (user + system) of one run of ``inertia_estimation <arguments>``,
    and its exit code. On a loaded machine the CPU time is what a quiet one would wait."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "inertia_estimation_ros.cli", *arguments],
        cwd=ROOT,
        capture_output=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    baseline = [wall_time_python() for _ in range(args.repeat)]
    print(f"bad arguments: wall time per run [s], {args.repeat} runs each, target < {TARGET} s")
    print(f"(an empty Python start-up takes {statistics.median(baseline):.3f} s here)")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'case':<30}{'exit':>5}{'wall median':>12}{'worst':>8}{'CPU median':>12}  target")
    print("-" * 80)
    for name, arguments in CASES.items():
        runs = [wall_time(arguments) for _ in range(args.repeat)]
        walls = [w for w, _, _ in runs]
        median, cpu = statistics.median(walls), statistics.median(c for _, c, _ in runs)
        verdict = "met" if median < TARGET else ("met in CPU" if cpu < TARGET else "MISSED")
        print(f"{name:<30}{runs[0][2]:>5}{median:>12.3f}{max(walls):>8.3f}{cpu:>12.3f}  {verdict}")


def wall_time_python() -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/cli.md

    with benchmark_page("cli"):
        main()
