"""The coordinator worker's CPU per cycle, without DDS (issue 16: the per-cycle cost).

A ring team of N robots (``sim.analytic``, as ``bench_ingestion.py``) at RATE Hz sends K =
rate / 100 samples per message (``GraspStateArray``; ``GraspState`` for K = 1), recorded as
the CDR bytes the coordinator's callbacks queue. The stream is replayed in one process in
worker cycles of ``--cycle`` seconds of stamps (the node's ``update_period``): per cycle
``ingest.push_raw`` of its messages, then ``TeamPipeline.process`` (checks, alignment,
estimator updates; no solve), as the worker's ``_step`` runs them. Printed per case: the
CPU time (``time.thread_time``) of each cycle after ``--warmup`` seconds of stamps, p50 /
p99 / max over the cycles, and the CPU per sample, best of ``--repeat`` replays of the
same bytes, on single-threaded BLAS as the coordinator runs it. Deterministic input, no
timing assertion; ``--profile`` prints cProfile's top functions of one replay per case.

    .venv/bin/python bench/bench_worker_cycle.py [--cases 100:3,500:8,1000:16] [--repeat 5]
        [--duration 4] [--warmup 1] [--cycle 0.01] [--profile 25] [--fit]
"""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_ingestion
from bench_ingestion import parse_cases, print_header, replay_parser, replayed_cases

from inertia_estimation_ros.core.team_pipeline import PipelineSettings, TeamPipeline
from inertia_estimation_ros.ros.ingest import RawReader, push_raw

CASES = ((100.0, 3), (500.0, 8), (1000.0, 16))


def replay(ids: tuple, cycles: list, rate: float, fit_at: int | None = None) -> np.ndarray:
    """CPU seconds of each cycle (push_raw, then process) of one replay into a new pipeline;
    ``fit_at``: solve once (not counted) before that cycle, as the node's solves do, so that
    the cycles after it take the fit's residuals and robust weights."""
    settings = PipelineSettings.from_parameters({"sample_rate_hz": rate})
    pipeline = TeamPipeline(ids, ids[0], settings, clock=time.monotonic)
    reader = RawReader()
    cpu = np.empty(len(cycles))
    for j, messages in enumerate(cycles):
        if j == fit_at:
            pipeline.full.estimator.estimate()
        start = time.thread_time()
        push_raw(pipeline, messages, reader)
        pipeline.process()
        cpu[j] = time.thread_time() - start
    return cpu


def profile(ids: tuple, cycles: list, rate: float, top: int, fit_at: int | None) -> None:
    """cProfile's ``top`` functions by cumulative and by own time over one replay."""
    profiler = cProfile.Profile()
    profiler.runcall(replay, ids, cycles, rate, fit_at)
    stats = pstats.Stats(profiler, stream=sys.stdout).strip_dirs()
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = replay_parser(
        __doc__.split("\n\n")[0], 4.0, 5, "[s] of stamps per worker cycle (update_period)"
    )
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's top N")
    parser.add_argument(
        "--fit", action="store_true", help="solve once after the warm-up (the node's steady state)"
    )
    args = parser.parse_args()
    cases = parse_cases(args.cases, CASES)
    print(
        f"worker cycle (push_raw + process) of {1e3 * args.cycle:g} ms of stamps, "
        f"{args.duration:g} s of samples, the first {args.warmup:g} s not counted"
        f"{' (then one solve, not counted)' if args.fit else ''}; CPU time, "
        f"best of {args.repeat}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    header = (
        f"{'rate [Hz]':>9} {'N':>3} {'K':>3} {'cycles':>6} {'p50 [ms]':>9} {'p99 [ms]':>9} "
        f"{'max [ms]':>9} {'mean [ms]':>10} {'per sample [us]':>16}"
    )
    print_header(header)
    for rate, n, k, ids, cycles, skip in replayed_cases(
        cases, args.duration, args.cycle, args.warmup
    ):
        samples = k * sum(len(c) for c in cycles[skip:])
        fit_at = skip if args.fit else None
        runs = [replay(ids, cycles, rate, fit_at)[skip:] for _ in range(args.repeat)]
        p50 = min(np.percentile(r, 50) for r in runs)
        p99 = min(np.percentile(r, 99) for r in runs)
        worst = min(r.max() for r in runs)
        total = min(r.sum() for r in runs)
        print(
            f"{rate:9.0f} {n:3d} {k:3d} {len(cycles) - skip:6d} {1e3 * p50:9.3f} "
            f"{1e3 * p99:9.3f} {1e3 * worst:9.3f} {1e3 * total / (len(cycles) - skip):10.3f} "
            f"{1e6 * total / samples:16.1f}",
            flush=True,
        )
        if args.profile:
            profile(ids, cycles, rate, args.profile, fit_at)


if __name__ == "__main__":
    from doc_page import benchmark_page  # the table into docs/benchmarks/worker_cycle.md

    with benchmark_page("worker_cycle"), threadpool_limits(limits=1, user_api="blas"):
        main()  # single-threaded BLAS: the coordinator's setting
