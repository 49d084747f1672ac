"""The coordinator's external wrench output, without DDS (issues 14 and 16).

A ring team of N robots (``sim.analytic``, 6-DoF motion, a pushing hand, instrumented noise)
at RATE Hz, a model with the covariances of a real estimate (theta and grasps uncertain,
the residual-RMS sensor noise), through:

* ``wrench``: ``human_wrench.external_wrench`` on one synchronized set per wrench;
* ``message``: the same and ``conversions.to_external_wrench`` (the ExternalWrench with its
  covariance and contact flag);
* ``output``: ``ExternalWrenchOutput.on_samples`` with every robot's converted messages of K
  samples (``GraspBatch``, as ``ingest.convert`` gives them) in turns, publishing at 100 Hz
  to a publisher that drops the message: the output's whole path per message.

Printed per case: CPU time (``time.process_time``) per wrench (and per sample for the
output), best of ``--repeat`` runs, single-threaded BLAS as the coordinator runs it.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_external_wrench.py [--cases 100:3,1000:16]
        [--duration 2] [--repeat 3] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from types import SimpleNamespace

import numpy as np
from threadpoolctl import threadpool_limits

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.human_wrench import (
    PayloadModel,
    SensorNoise,
    external_wrench,
)
from inertia_estimation_ros.core.samples import GraspBatch
from inertia_estimation_ros.ros.conversions import to_external_wrench
from inertia_estimation_ros.ros.external_wrench_output import ExternalWrenchOutput
from inertia_estimation_ros.sim import analytic as an

WRENCH_RATE = 100.0
PUSH = an.HandPush(((0.5, 1.5),), force_w=(6.0, -4.0, 3.0), point_s=(0.2, 0.1, 0.05), ramp=0.2)


def case(n: int, rate: float, duration: float) -> tuple[an.Team, dict, PayloadModel, SensorNoise]:
    """(team, measured series, a model with uncertain theta and grasps, sensor noise)."""
    rng = np.random.default_rng(n)
    team = an.ring_team(n, rng)[0] if n != 3 else an.paper_team()
    payload = an.paper_payload()
    t = np.arange(0.0, duration, 1.0 / rate)
    sim = an.simulate(
        team,
        payload,
        an.paper_inertia_motion(rng),
        t,
        external=PUSH,
        noise=an.instrumented_noise(),
        rng=rng,
    )
    theta_std = np.array([0.05, 0.004, 0.004, 0.004, 0.01, 0.003, 0.003, 0.01, 0.003, 0.01])
    grasp_std = np.full(6, 2e-3)
    A = rng.normal(size=(10, 10)) * theta_std
    model = PayloadModel(
        team.reference_id,
        payload.vec + rng.normal(0, theta_std),
        A @ A.T / 10,
        {
            r: T if r == team.reference_id else T @ sp.exp6(rng.normal(0, grasp_std))
            for r, T in team.T_s_i.items()
        },
        {r: np.diag(grasp_std**2) for r in team.robot_ids},
        True,
        True,
        True,
    )
    noise = SensorNoise(moment=0.05 / np.sqrt(n), force=0.5 / np.sqrt(n))
    return team, sim.measured, model, noise


def time_wrenches(sets: list, model: PayloadModel, noise: SensorNoise, message: bool) -> float:
    """CPU seconds per wrench over ``sets``."""
    start = time.process_time()
    for samples in sets:
        estimate = external_wrench(samples, model, noise)
        if message:
            to_external_wrench(estimate, "robot_1/grasp")
    return (time.process_time() - start) / len(sets)


def time_output(team: an.Team, series: dict, model: PayloadModel, noise: SensorNoise, k: int):
    """(CPU seconds per sample, per published wrench) of ExternalWrenchOutput.on_samples."""
    published = []
    publisher = SimpleNamespace(publish=published.append)
    params = SimpleNamespace(
        external_wrench_rate=WRENCH_RATE,
        external_wrench_max_spread=0.05,
        acceleration_vibration_gain=1.0,  # the node's defaults: the vibration measured
        acceleration_vibration_cutoff=4.0,
    )
    node = SimpleNamespace(create_publisher=lambda *args: publisher, params=params)
    output = ExternalWrenchOutput(node, lambda r: f"{r}/grasp", team.robot_ids, team.reference_id)
    output._inputs = SimpleNamespace(estimate=None, model=model, noise=noise, offsets={})
    q = len(next(iter(series.values())))
    messages = [
        (r, GraspBatch.from_samples([series[r].sample(j) for j in range(start, start + k)]))
        for start in range(0, q - k + 1, k)
        for r in team.robot_ids
    ]
    start = time.process_time()
    for rid, batch in messages:
        output.on_samples(rid, batch)
    cpu = time.process_time() - start
    return cpu / (len(messages) * k), cpu / max(len(published), 1), len(published)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="100:3,1000:16", help="rate:N,... [Hz:robots]")
    parser.add_argument("--duration", type=float, default=2.0, help="[s] of samples per case")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (best kept)")
    parser.add_argument("--profile", action="store_true", help="cProfile the wrenches")
    args = parser.parse_args()
    print(
        "| rate [Hz] | N | K | wrench [us] | + message [us] | output [us/sample] | "
        "output [us/wrench] | wrenches |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for spec in args.cases.split(","):
        rate, n = float(spec.split(":")[0]), int(spec.split(":")[1])
        k = max(int(round(rate / 100.0)), 1)
        team, series, model, noise = case(n, rate, args.duration)
        sets = an.synchronized_sets(series)[:: max(int(round(rate / WRENCH_RATE)), 1)]
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(time_wrenches, sets, model, noise, True)
            pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
        runs = [
            (
                time_wrenches(sets, model, noise, False),
                time_wrenches(sets, model, noise, True),
                *time_output(team, series, model, noise, k),
            )
            for _ in range(args.repeat)
        ]
        best = np.min(np.array(runs), axis=0)
        print(
            f"| {rate:g} | {n} | {k} | {best[0] * 1e6:.0f} | {best[1] * 1e6:.0f} | "
            f"{best[2] * 1e6:.1f} | {best[3] * 1e6:.0f} | {int(best[4])} |"
        )


if __name__ == "__main__":
    from doc_page import benchmark_page  # the figures into docs/benchmarks/external_wrench.md

    with benchmark_page("external_wrench"), threadpool_limits(1):
        main()
