"""The coordinator's human-wrench output's CPU per message and per wrench, without DDS
(issue 16: its share of the node's GIL).

A ring team of N robots (``sim.analytic``, as ``bench_ingestion.py``) at RATE Hz sends K =
rate / 100 samples per message (``GraspStateArray``; ``GraspState`` for K = 1), recorded as
the CDR bytes the coordinator's callbacks receive. The stream is replayed in one process
into ``ExternalWrenchOutput.on_raw`` (a model of the team's grasps, the default
``external_wrench_rate`` 100 Hz, the publisher a list), as the executor's callbacks call it,
and every ``--cycle`` seconds of stamps ``WrenchChecks.check_pending(most=1)``, as the
worker's ``follow`` does. Printed per case, after ``--warmup`` seconds of stamps, CPU time
best of ``--repeat`` replays: the median wall time (``perf_counter``) per message that
publishes nothing, per message that publishes a wrench (its ``on_raw`` whole: the message,
the wrench's samples, ``team_wrench``, the bytes) and per worker cycle's check (most cycles
check nothing: a check is ~20 times a second), and the cores (``time.thread_time`` of the
replay) all of it takes at the case's rate. Deterministic input, no timing assertion.

    .venv/bin/python bench/bench_wrench_output.py [--cases 100:3,500:8,1000:16] [--repeat 3]
        [--duration 3] [--warmup 1] [--cycle 0.01]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench_ingestion
from bench_ingestion import parse_cases, print_header, replay_parser, replayed_cases

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.human_wrench import PayloadModel, SensorNoise
from inertia_estimation_ros.ros.external_wrench_output import ExternalWrenchOutput

CASES = ((100.0, 3), (500.0, 8), (1000.0, 16))


def model_of(ids: tuple, rng: np.random.Generator) -> PayloadModel:
    """A valid model of the team (the wrench's cost does not depend on its values)."""
    theta = np.array([5.0, 0.1, 0.2, 0.05, 0.4, 0.5, 0.6, 0.01, 0.02, 0.03])
    A = rng.normal(size=(10, 10))
    T_s_i = {r: sp.transform(np.eye(3), rng.normal(0.0, 0.5, 3)) for r in ids}
    return PayloadModel(
        ids[0], theta, 1e-4 * (A @ A.T), T_s_i, {r: 1e-6 * np.eye(6) for r in ids}, True, True, True
    )


def output_of(ids: tuple, rate: float) -> ExternalWrenchOutput:
    params = SimpleNamespace(
        external_wrench_rate=100.0,
        external_wrench_max_spread=0.05,
        acceleration_vibration_gain=1.0,
        acceleration_vibration_cutoff=4.0,
        external_wrench_delay=0.0,
    )
    node = SimpleNamespace(
        params=params, create_publisher=lambda *a: SimpleNamespace(publish=lambda raw: None)
    )
    output = ExternalWrenchOutput(node, lambda r: f"{r}/grasp", ids, ids[0])
    noise = SensorNoise(0.1, 0.5, 0.2, 0.1, 1e-3)
    model = model_of(ids, np.random.default_rng(0))
    output._inputs = SimpleNamespace(estimate=None, model=model, noise=noise, offsets={})
    return output


def replay(ids: tuple, cycles: list, rate: float, skip: int) -> tuple[list, list, list, float]:
    """Wall time (``perf_counter``: cheap, where the thread's CPU clock costs tens of us a
    call) of each on_raw without a wrench, of each with one, of each cycle's check; the CPU
    time of the whole replay after ``skip`` cycles."""
    output = output_of(ids, rate)
    plain, wrench, checks, cpu = [], [], [], 0.0
    clock = time.perf_counter
    for j, messages in enumerate(cycles):
        if j == skip:
            cpu = time.thread_time()
        for rid, topic, raw, _ in messages:
            start = clock()
            published = output.on_raw(rid, topic, raw)
            spent = clock() - start
            if j >= skip:
                (plain if published is None else wrench).append(spent)
        start = clock()
        output.checks.check_pending(most=1)
        if j >= skip:
            checks.append(clock() - start)
    return plain, wrench, checks, time.thread_time() - cpu


def main() -> None:
    parser = replay_parser(__doc__.split("\n\n")[0], 3.0, 3, "[s] of stamps per check")
    args = parser.parse_args()
    cases = parse_cases(args.cases, CASES)
    print(
        f"ExternalWrenchOutput.on_raw and check_pending, {args.duration:g} s of samples, the "
        f"first {args.warmup:g} s not counted; medians, best of {args.repeat}; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    header = (
        f"{'rate [Hz]':>9} {'N':>3} {'K':>3} {'messages':>8} {'wrenches':>8} "
        f"{'per message [us]':>16} {'per wrench [us]':>15} {'check [us]':>10} {'cores':>6}"
    )
    print_header(header)
    for rate, n, k, ids, cycles, skip in replayed_cases(
        cases, args.duration, args.cycle, args.warmup
    ):
        runs = [replay(ids, cycles, rate, skip) for _ in range(args.repeat)]
        plain = min(float(np.median(r[0])) for r in runs)
        wrench = min(float(np.median(r[1])) for r in runs) if runs[0][1] else float("nan")
        check = min(float(np.median(r[2])) for r in runs)
        seconds = (len(cycles) - skip) * args.cycle
        total = min(r[3] for r in runs)
        print(
            f"{rate:9.0f} {n:3d} {k:3d} {len(runs[0][0]) + len(runs[0][1]):8d} "
            f"{len(runs[0][1]):8d} {1e6 * plain:16.1f} {1e6 * wrench:15.1f} "
            f"{1e6 * check:10.1f} {total / seconds:6.3f}",
            flush=True,
        )


if __name__ == "__main__":
    from doc_page import benchmark_page  # the table into docs/benchmarks/wrench_output.md

    with benchmark_page("wrench_output"), threadpool_limits(limits=1, user_api="blas"):
        main()  # single-threaded BLAS: the coordinator's setting
