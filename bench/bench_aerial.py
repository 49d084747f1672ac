"""Aerial teams on cables (paper 002), part 1: distances, computation times, simulation speed.

    .venv/bin/python bench/bench_aerial.py [--quick]

1. Table III analogue (notes section 6.4, item 5): three Dragonflies carry RotorTM's triangle
   on 1 m cables; the person's head (1.7 m high) walks in from 2.8 m at 0.3 m/s and stops
   0.7 m from the payload centre, then walks along while the payload flies 1.5 m to its goal
   (a planned minimum-jerk move: the admittance loop that lets the person push is part 2).
   Robot-robot and robot-head distances of the flown robots, mean and std over the time the
   head is within 1.5 m of the payload, for the gradient (a = 1, b = 2) and the optimisation
   (r_r = h_r = 0.75 m) methods, beside the paper's. The paper's human trajectory, a and b are
   unreported: compare the pattern, not the digits (notes 6.4).
2. Time per call against n (attach points on a circle wide enough for 0.75 m robot spacing,
   the head 0.8 m outside it): payload controller, nominal distribution, one gradient step,
   SLSQP (warm and cold start). Median of repeated calls, wall clock on a shared 2-core
   machine (noisy). The paper reports no timings, only Table IV's complexity (gradient O(n),
   SLSQP O(n^3)).
3. Real-time factor of the closed-loop simulation for n = 3 and 8 (nominal distribution).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from inertia_estimation_ros.core.aerial.allocation import GRAVITY, CableAllocation
from inertia_estimation_ros.core.aerial.cables import RigidBodyState, attach_points
from inertia_estimation_ros.core.aerial.distribution import (
    GradientDistribution,
    nominal_distribution,
)
from inertia_estimation_ros.core.aerial.optimization import OptimizationDistribution
from inertia_estimation_ros.core.aerial.payload_controller import (
    PayloadController,
    PayloadReference,
)
from inertia_estimation_ros.sim.aerial.config import polygon_attach_points
from inertia_estimation_ros.sim.scenario import load_scenario

# Paper 002, Table III: (mean, std) [m].
PAPER_TABLE_III = {
    "gradient": {
        "1-2": (0.57978, 0.096378), "1-3": (0.79629, 0.084538), "2-3": (0.54679, 0.076384),
        "Head-1": (0.87464, 0.097718), "Head-2": (1.0433, 0.041136), "Head-3": (0.79129, 0.071813),
    },
    "optimization": {
        "1-2": (0.81366, 0.053177), "1-3": (1.2506, 0.10804), "2-3": (0.74762, 0.050086),
        "Head-1": (0.89176, 0.05772), "Head-2": (0.96053, 0.080423), "Head-3": (0.80493, 0.038652),
    },
}  # fmt: skip
TEAM_SIZES = (3, 4, 6, 8, 16, 32)


def transport(method: str) -> dict:
    return {
        "type": "aerial_cable_team",
        "name": f"table3_{method}",
        "seed": 3,
        "duration": 22.0,
        "waypoints": [
            {"time": 10.0, "xyz": [0.0, 0.0, 1.0]},
            {"time": 20.0, "xyz": [1.5, 0.0, 1.0]},
        ],
        "human": {
            "head": {"start": [-2.8, 0.0], "height": 1.7, "speed": 0.3, "stop_distance": 0.7}
        },
        "control": {"method": method, "gradient_a": 1.0, "gradient_b": 2.0},
    }


def table_three(quick: bool) -> None:
    print("\nTable III analogue: distances of the flown robots [m], mean / std (paper's beside)")
    header = f"{'method':<13}{'pair':<8}{'ours mean':>10}{'ours std':>10}"
    print(header + f"{'paper mean':>12}{'paper std':>11}")
    for method in ("gradient", "optimization"):
        config = transport(method)
        if quick:
            config["duration"] = 12.0
        result = load_scenario(config).run()
        near = np.linalg.norm(result.head[:, :2] - result.payload_x[:, :2], axis=1) < 1.5
        x, head = result.robot_x[near], result.head[near]
        rows = {
            f"{i + 1}-{j + 1}": np.linalg.norm(x[:, i] - x[:, j], axis=1)
            for i, j in ((0, 1), (0, 2), (1, 2))
        }
        rows |= {f"Head-{k + 1}": np.linalg.norm(x[:, k] - head, axis=1) for k in range(3)}
        for pair, d in rows.items():
            paper = PAPER_TABLE_III[method][pair]
            print(
                f"{method:<13}{pair:<8}{d.mean():>10.3f}{d.std():>10.3f}"
                f"{paper[0]:>12.3f}{paper[1]:>11.3f}"
            )
        pair_min = min(d.min() for p, d in rows.items() if not p.startswith("Head"))
        head_min = min(d.min() for p, d in rows.items() if p.startswith("Head"))
        rtf = result.duration / result.wall_time
        print(
            f"{'':<13}min pair {pair_min:.3f}, min head {head_min:.3f}, "
            f"{near.sum()} samples, RTF {rtf:.2f}"
        )


def _median_time(call, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        call()
        times.append(time.perf_counter() - tic)
    return float(np.median(times))


def _team_timings(n: int) -> tuple[float, ...]:
    """Median seconds per call for one team size, and whether every cold SLSQP solve succeeded."""
    radius = max(0.35, 0.75 / (2 * np.sin(np.pi / n)) - 0.3)
    rho = polygon_attach_points(n, radius, 0.0)
    mass = 0.1 * n
    alloc = CableAllocation(rho)
    lengths = np.ones(n)
    controller = PayloadController(mass, np.diag([1.0, 1.0, 2.0]) * mass * radius**2 / 4)
    state = RigidBodyState(np.array([0.01, -0.02, 1.0]), np.zeros(3), np.eye(3), np.zeros(3))
    reference = PayloadReference(x=np.array([0.0, 0.0, 1.0]))
    wrench = np.r_[0.0, 0.0, mass * GRAVITY, 0.0, 0.0, 0.0]
    attach = attach_points(state, rho)
    mu_bar = nominal_distribution(alloc, np.eye(3), wrench)
    head = np.array([radius + 0.8, 0.0, 1.7])
    gradient = GradientDistribution(alloc, lengths, 2.0, 2.0)
    optimization = OptimizationDistribution(alloc, lengths)
    repeats = 200 if n <= 8 else 50
    cold_ok = []

    def solve_cold() -> None:
        optimization.c = np.zeros(3 * n - 6)
        cold_ok.append(optimization.update(np.eye(3), attach, mu_bar, head).solved)

    return (
        _median_time(lambda: controller.update(state, reference, 0.01), repeats),
        _median_time(lambda: nominal_distribution(alloc, np.eye(3), wrench), repeats),
        _median_time(lambda: gradient.update(np.eye(3), attach, mu_bar, head), repeats),
        _median_time(solve_cold, 5 if n <= 8 else 2),
        _median_time(
            lambda: optimization.update(np.eye(3), attach, mu_bar, head), 10 if n <= 8 else 2
        ),
        all(cold_ok),
    )


def timings(quick: bool) -> None:
    print("\nTime per call [ms] against n (median; shared 2-core machine)")
    print(
        f"{'n':>4}{'payload ctrl':>14}{'nominal':>10}{'gradient':>10}{'SLSQP warm':>12}"
        f"{'SLSQP cold':>12}{'SLSQP ok':>10}"
    )
    for n in TEAM_SIZES if not quick else TEAM_SIZES[:4]:
        ctrl, nominal, grad, cold, warm, ok = _team_timings(n)
        print(
            f"{n:>4}{1e3 * ctrl:>14.3f}{1e3 * nominal:>10.3f}{1e3 * grad:>10.3f}"
            f"{1e3 * warm:>12.2f}{1e3 * cold:>12.1f}{str(ok):>10}"
        )


def real_time_factor(quick: bool) -> None:
    print("\nClosed-loop simulation speed (nominal distribution, physics 1 ms, control 100 Hz)")
    print(f"{'n':>4}{'sim s':>8}{'wall s':>9}{'RTF':>7}{'physics share':>15}")
    for n in (3, 8):
        payload = (
            {"shape": "triangle"}
            if n == 3
            else {"shape": "polygon", "robots": n, "radius": 0.6, "mass": 0.8}
        )
        config = {
            "type": "aerial_cable_team",
            "duration": 3.0 if quick else 5.0,
            "payload": payload,
        }
        result = load_scenario(config).run()
        rtf = result.duration / result.wall_time
        share = result.physics_wall_time / result.wall_time
        print(f"{n:>4}{result.duration:>8.1f}{result.wall_time:>9.2f}{rtf:>7.2f}{share:>15.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, n <= 8")
    args = parser.parse_args()
    table_three(args.quick)
    timings(args.quick)
    real_time_factor(args.quick)


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/aerial.md

    with benchmark_page("aerial"):
        main()
