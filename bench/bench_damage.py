"""Stated uncertainty under damage (issue 15, items 4 and 5; issue 16's uncertainty honesty).

1. A Monte Carlo of the damage classes of ``test/damage.py`` applied to robot_2's
   grasp_state of the ``test_graph`` simulator bag (seeds 0..N-1), through ``estimate``
   (the coordinator's pipeline). Printed per damage class and kind of quantity (grasp
   frames, mass and CoM, inertia): the quantities reported valid, the fractions with
   |error|/sigma below 1, 2 and 3 (a Gaussian: 68.3, 95.4, 99.7 %; target >= 99 % below 3),
   the mean of (|error|/sigma)^2 (1 for an honest sigma) and the largest |error|/sigma.
   Damage classes whose samples are refused report nothing valid (0 rows).
2. With ``--demo``: the demo's run (``paper000_demo``, seed 0) solved every second; the
   coverage of the mass's stated 1 sigma band over time, per stage of the protocol.

Run: .venv/bin/python bench/bench_damage.py [--seeds 3] [--demo]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "test")]  # the source tree, as the tests

from damage import DAMAGE, damaged_copy  # noqa: E402

from inertia_estimation_ros.commands.estimate import estimate_bag  # noqa: E402
from inertia_estimation_ros.commands.report import comparison_rows, quantities  # noqa: E402
from inertia_estimation_ros.sim.scenario import run_scenario  # noqa: E402
from inertia_estimation_ros.sim.topics import write_simulation_bag  # noqa: E402

SCENARIOS = ROOT / "config" / "scenarios"
KINDS = {"grasps": ("T_s_",), "mass, CoM": ("mass", "CoM"), "inertia": ("I", "principal")}


def kind_of(name: str) -> str:
    return next(k for k, prefixes in KINDS.items() if name.startswith(prefixes))


def ratios(bag: Path) -> list[tuple[float, str]]:
    """(|error|/sigma, name) of every quantity the final estimate reports valid."""
    result = estimate_bag(bag)
    rows = comparison_rows(result.final, result.truth)
    return [
        (abs(r.value - r.truth) / r.sigma if r.sigma > 0 else np.inf, r.name)
        for r in rows
        if r.sigma is not None and r.truth is not None
    ]


def coverage_row(label: str, values: list[tuple[float, str]]) -> str:
    if not values:
        return f"{label:48s} {0:5d}"
    z = np.array([v for v, _ in values])
    within = [100 * np.mean(z < k) for k in (1, 2, 3)]
    worst = max(values)
    return (
        f"{label:48s} {len(z):5d}  {within[0]:5.1f} {within[1]:5.1f} {within[2]:5.1f} %"
        f"  {np.mean(z**2):7.2f}  {worst[0]:6.1f} ({worst[1]})"
    )


def damage_table(seeds: int) -> None:
    table: dict[str, list] = {"(none)": []} | {name: [] for name in DAMAGE}
    with tempfile.TemporaryDirectory() as scratch:
        for seed in range(seeds):
            clean = Path(scratch) / f"clean{seed}"
            write_simulation_bag(run_scenario(SCENARIOS / "test_graph.yaml", seed=seed), clean)
            table["(none)"] += ratios(clean)
            for k, name in enumerate(DAMAGE):
                bag = damaged_copy(clean, Path(scratch) / f"d{seed}_{k}", "robot_2", name, seed)
                table[name] += ratios(bag)
    header = (
        f"{'damage to robot_2 / quantities (' + str(seeds) + ' seeds)':48s} valid  "
        "<1s   <2s   <3s      mean z^2  worst |error|/sigma"
    )
    print(header)
    print("-" * len(header))
    for name, values in table.items():
        print(coverage_row(name, values))
        for kind in KINDS if values else ():
            print(coverage_row(f"  {kind}", [v for v in values if kind_of(v[1]) == kind]))


def demo_stages(phases: list) -> list[tuple[str, float, float]]:
    """The protocol's stages: each run of phases of one program, with its span [s]."""
    stages: list[tuple[str, float, float]] = []
    for phase in phases:
        if stages and stages[-1][0] == phase.program:
            stages[-1] = (phase.program, stages[-1][1], phase.end)
        else:
            stages.append((phase.program, phase.start, phase.end))
    return stages


def demo_table() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        bag = Path(scratch) / "demo"
        simulation = run_scenario(SCENARIOS / "paper000_demo.yaml", seed=0)
        write_simulation_bag(simulation, bag)
        result = estimate_bag(bag, period=1.0)
    truth = quantities(result.truth).mass[0]
    points = [(q.stamp, q.mass) for q in map(quantities, result.history) if q.mass]
    print(f"\ndemo (paper000_demo, seed 0): mass {truth:.4f} kg; the estimate every second")
    print(f"{'stage (simulated time)':30s} solves  mass range [kg]     within 1 sigma  mean z^2")
    for program, low, high in demo_stages(simulation.phases):
        part = [(m, s) for t, (m, s) in points if low < t <= high]
        label = f"{low:.1f}-{high:.1f} s ({program})"
        if not part:
            print(f"{label:30s} {0:6d}  (no valid mass yet)")
            continue
        z = np.array([(m - truth) / s for m, s in part])
        masses = [m for m, _ in part]
        print(
            f"{label:30s} {len(part):6d}  {min(masses):.3f}-{max(masses):.3f}   "
            f"{100 * np.mean(np.abs(z) < 1):10.1f} %  {np.mean(z**2):8.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--demo", action="store_true", help="also the demo's mass coverage")
    args = parser.parse_args()
    damage_table(args.seeds)
    if args.demo:
        demo_table()


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/damage.md

    with benchmark_page("damage"):
        main()
