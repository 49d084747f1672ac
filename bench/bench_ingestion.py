"""Coordinator ingestion in the core, without DDS (issue 16: <= 20 us per sample amortized).

A ring team of N robots (``sim.analytic``, 6-DoF motion, instrumented noise) at RATE Hz for
DURATION seconds, as messages of K samples per robot (``GraspStateArray``; ``GraspState``
for K = 1 on the raw path, as ``robot_node`` sends them), goes through the pipeline (checks,
alignment, estimator updates; no solve) two ways: ``raw``, the coordinator node's path (the
messages' CDR bytes, every robot's of one worker cycle, ``--cycle`` seconds of stamps as the
node's ``update_period``, read at once by ``ros.ingest.push_raw``, then
``TeamPipeline.process`` with the node's clock), and ``per message``
(``ros.ingest.push_message`` of each rclpy message object: bags with odd messages, tests;
``process`` every 10 ms of stamps). Printed per case: the CPU time (``time.process_time``)
per sample of each path and of the estimator's updates alone (the aligned sets fed again
to a fresh ``TeamEstimator``, one ``update`` per set and as one block, ``update_block``),
best of ``--repeat`` runs, on single-threaded BLAS as the coordinator runs it.

With ``--bag`` (e.g. the paper000 preset's: ``inertia_estimation simulate paper000_mocobots
--out runs/paper000``) it also times ``inertia_estimation estimate`` on it (``estimate_bag``,
solves every ``--period`` s of bag time and the final one from scratch): CPU and wall time,
and the bag's duration over each (issue 16: >= 100x real time).

    .venv/bin/python bench/bench_ingestion.py [--cases 1000:16,100:3] [--repeat 3] [--cycle 0.01]
        [--bag runs/paper000/bag [--period 5]]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the source tree, as the tests

from inertia_estimation_ros.core.cooperative import TeamEstimator  # noqa: E402
from inertia_estimation_ros.core.samples import SetBlock  # noqa: E402
from inertia_estimation_ros.core.team_pipeline import PipelineSettings, TeamPipeline  # noqa: E402
from inertia_estimation_ros.ros.conversions import (  # noqa: E402
    grasp_samples,
    to_grasp_state,
    to_grasp_state_array,
)
from inertia_estimation_ros.ros.ingest import RawReader, push_message, push_raw  # noqa: E402
from inertia_estimation_ros.sim import analytic as an  # noqa: E402

CASES = ((100.0, 3), (1000.0, 3), (1000.0, 16))
TARGET_US = 20.0
OFFLINE_TARGET = 100.0  # x real time, by CPU, of the estimate command on a bag


def parse_cases(text: str, default: tuple) -> list[tuple[float, int]]:
    """``--cases`` ("rate:N,...") as (rate, N) pairs; ``default`` if empty."""
    if not text:
        return list(default)
    return [(float(c.split(":")[0]), int(c.split(":")[1])) for c in text.split(",")]


def team_batches(n: int, rate: float, duration: float, k: int) -> tuple[tuple, list]:
    """(robot ids, per batch instant the (robot, GraspStateArray) pairs)."""
    rng = np.random.default_rng(n)
    team = an.ring_team(n, rng)[0] if n != 3 else an.paper_team()
    motion = an.paper_kinematics_motion(rng)
    t = np.arange(0.0, duration, 1.0 / rate)
    sim = an.simulate(team, an.paper_payload(), motion, t, noise=an.instrumented_noise(), rng=rng)
    ids = team.robot_ids
    instants = [
        [
            (
                r,
                to_grasp_state_array(
                    [sim.measured[r].sample(j) for j in range(start, start + k)],
                    f"{r}/grasp",
                    f"{r}/home",
                ),
            )
            for r in ids
        ]
        for start in range(0, len(t) - k + 1, k)
    ]
    return ids, instants


def replay_parser(
    description: str, duration: float, repeat: int, cycle_help: str
) -> argparse.ArgumentParser:
    """The options of the benchmarks that replay ``replayed_cases``: --cases, --duration,
    --warmup, --repeat, --cycle."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cases", default="", help="rate:N,... (default 100:3,500:8,1000:16)")
    parser.add_argument("--duration", type=float, default=duration, help="[s] of samples per case")
    parser.add_argument("--warmup", type=float, default=1.0, help="[s] of stamps not counted")
    parser.add_argument("--repeat", type=int, default=repeat, help="replays per case (best kept)")
    parser.add_argument("--cycle", type=float, default=0.01, help=cycle_help)
    return parser


def print_header(header: str) -> None:
    """A table's header line and its rule."""
    print(header)
    print("-" * len(header))


def replayed_cases(cases: list, duration: float, cycle: float, warmup: float) -> Iterator[tuple]:
    """Per (rate, N) case: rate, N, K (rate / 100: messages at 100 Hz), robot ids, the worker
    cycles of raw messages but the last (``raw_cycles``; it may be partial) and how many of
    them are the warm-up."""
    for rate, n in cases:
        k = max(1, round(rate / 100))
        ids, instants = team_batches(n, rate, duration, k)
        yield rate, n, k, ids, raw_cycles(instants, rate, k, cycle)[:-1], round(warmup / cycle)


def raw_cycles(instants: list, rate: float, k: int, cycle: float = 0.01) -> list[list[tuple]]:
    """Per worker cycle (``cycle`` seconds of stamps: the node's ``update_period``), its
    messages as the coordinator's callbacks queue them: (robot id, topic, CDR bytes, arrival
    time: the newest stamp plus 2 ms); GraspState for K = 1."""
    from rclpy.serialization import serialize_message

    every = max(1, round(cycle * rate / k))
    cycles, messages = [], []
    for j, instant in enumerate(instants):
        for rid, msg in instant:
            stamp = msg.sec[-1] + 1e-9 * msg.nanosec[-1]
            if k == 1:
                sample = grasp_samples(msg)[0]
                msg = to_grasp_state(sample, msg.header.frame_id, msg.home_frame_id)
            topic = "grasp_state" if k == 1 else "grasp_state_array"
            messages.append((rid, topic, serialize_message(msg), stamp + 0.002))
        if j % every == every - 1:
            cycles.append(messages)
            messages = []
    return cycles + [messages]


def raw_cpu(ids: tuple, cycles: list, rate: float) -> tuple[float, SetBlock]:
    """CPU seconds of the node's path (push_raw of a cycle's bytes, then process, with a
    clock for the update latencies) over every cycle; the aligned sets."""
    settings = PipelineSettings.from_parameters({"sample_rate_hz": rate})
    pipeline = TeamPipeline(ids, ids[0], settings, clock=time.monotonic)
    blocks = _recorded(pipeline)
    reader = RawReader()
    start = time.process_time()
    for messages in cycles:
        push_raw(pipeline, messages, reader)
        pipeline.process()
    return time.process_time() - start, SetBlock.concatenate(blocks)


def _recorded(pipeline: TeamPipeline) -> list[SetBlock]:
    """The blocks the pipeline's aligner hands to the estimator, recorded as they go."""
    blocks = []
    pop_block = pipeline.full.aligner.pop_block

    def keep() -> SetBlock:
        block = pop_block()
        blocks.append(block)
        return block

    pipeline.full.aligner.pop_block = keep
    return blocks


def pipeline_cpu(ids: tuple, instants: list, rate: float, k: int) -> tuple[float, SetBlock]:
    """CPU seconds of push_message + process over every message; the aligned sets."""
    settings = PipelineSettings.from_parameters({"sample_rate_hz": rate})
    pipeline = TeamPipeline(ids, ids[0], settings)
    blocks = _recorded(pipeline)
    every = max(1, round(0.01 * rate / k))
    start = time.process_time()
    for j, instant in enumerate(instants):
        for rid, msg in instant:
            push_message(pipeline, rid, msg)
        if j % every == every - 1:
            pipeline.process()
    pipeline.process()
    return time.process_time() - start, SetBlock.concatenate(blocks)


def estimator_cpu(ids: tuple, rate: float, sets: SetBlock, one_block: bool) -> float:
    """CPU seconds of a fresh estimator's updates on the same sets: one by one or as one
    block (the conversion to GraspSample sets not counted)."""
    settings = PipelineSettings.from_parameters({"sample_rate_hz": rate}).estimator
    estimator = TeamEstimator(ids, ids[0], settings)
    if one_block:
        start = time.process_time()
        estimator.update_block(sets)
        return time.process_time() - start
    singles = [sets.set_at(q) for q in range(len(sets))]
    start = time.process_time()
    for samples in singles:
        estimator.update(samples)
    return time.process_time() - start


def offline(bag: str, period: float) -> None:
    """Time ``estimate_bag`` on a bag (CPU and wall), as the estimate command runs it, with
    the CPU time of each of its phases (``BagRun.cpu_seconds``) and the ratio to real time."""
    from inertia_estimation_ros.bags import bag_duration
    from inertia_estimation_ros.commands.estimate import bag_folder, estimate_bag

    path = bag_folder(Path(bag))
    duration = bag_duration(path)
    cpu, wall = time.process_time(), time.perf_counter()
    run = estimate_bag(path, {}, period)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    samples = sum(run.pipeline.accepted.values())
    print(f"\noffline: inertia_estimation estimate {bag} (solves every {period:g} s of bag time)")
    header = (
        f"{'bag [s]':>8} {'samples':>8} {'CPU [s]':>8} {'wall [s]':>9} {'CPU/sample [us]':>16} "
        f"{'x real time (CPU)':>18} {'x real time (wall)':>19} {'target':>7}"
    )
    print_header(header)
    print(
        f"{duration:8.1f} {samples:8d} {cpu:8.2f} {wall:9.2f} {1e6 * cpu / samples:16.1f} "
        f"{duration / cpu:18.1f} {duration / wall:19.1f} {OFFLINE_TARGET:7.0f}"
    )
    print("\nwhere the CPU time goes (estimate_bag's phases; x real time if it were alone)")
    header = f"{'phase':<16} {'CPU [s]':>8} {'share [%]':>10} {'x real time':>12}"
    print_header(header)
    for phase, seconds in run.cpu_seconds.items():
        ratio = duration / max(seconds, 1e-9)
        print(f"{phase:<16} {seconds:8.2f} {100 * seconds / cpu:10.1f} {ratio:12.1f}")
    rest = cpu - run.cpu_seconds["history solves"]
    print(f"{'all but history':<16} {rest:8.2f} {100 * rest / cpu:10.1f} {duration / rest:12.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="", help="rate:N,... (default 100:3,1000:3,1000:16)")
    parser.add_argument("--duration", type=float, default=2.0, help="seconds of samples")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (best is kept)")
    parser.add_argument(
        "--cycle", type=float, default=0.01, help="[s] of stamps per worker cycle (update_period)"
    )
    parser.add_argument("--bag", default="", help="also time the estimate command on this bag")
    parser.add_argument("--period", type=float, default=5.0, help="[s] between history solves")
    args = parser.parse_args()
    cases = parse_cases(args.cases, CASES)
    print(
        f"core ingestion, {args.duration:g} s of samples per case, raw path in cycles of "
        f"{1e3 * args.cycle:g} ms, CPU time per sample "
        f"(best of {args.repeat}), target <= {TARGET_US:g} us; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    )
    header = (
        f"{'rate [Hz]':>9} {'N':>3} {'K':>3} {'samples':>8} {'raw path [us]':>14} "
        f"{'per message [us]':>17} "
        f"{'estimator per set [us]':>23} {'estimator one block [us]':>25}"
    )
    print_header(header)
    for rate, n in cases:
        k = max(1, round(rate / 100))
        ids, instants = team_batches(n, rate, args.duration, k)
        cycles = raw_cycles(instants, rate, k, args.cycle)
        samples = n * k * len(instants)
        raw, whole, per_set, block = [], [], [], []
        for _ in range(args.repeat):
            cpu, sets = raw_cpu(ids, cycles, rate)
            raw.append(cpu)
            cpu, _ = pipeline_cpu(ids, instants, rate, k)
            whole.append(cpu)
            per_set.append(estimator_cpu(ids, rate, sets, one_block=False))
            block.append(estimator_cpu(ids, rate, sets, one_block=True))
        print(
            f"{rate:9.0f} {n:3d} {k:3d} {samples:8d} {1e6 * min(raw) / samples:14.1f} "
            f"{1e6 * min(whole) / samples:17.1f} "
            f"{1e6 * min(per_set) / samples:23.1f} {1e6 * min(block) / samples:25.1f}",
            flush=True,
        )
    if args.bag:
        offline(args.bag, args.period)


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/ingestion.md

    with benchmark_page("ingestion"), threadpool_limits(limits=1, user_api="blas"):
        main()  # single-threaded BLAS: the coordinator's setting
