"""Stated uncertainty under damage (issue 15, items 4 and 5): a Monte Carlo of the damage
classes of ``test/damage.py`` applied to robot_2's grasp_state of the ``test_graph``
simulator bag (seeds 0..N-1), through ``estimate`` (the coordinator's pipeline).

Printed per damage class: the runs, the quantities reported valid (of 25 per run), the
fraction of those with |error|/sigma < 3 against the ground truth (target: 99 %), the
largest |error|/sigma and where. The undamaged row is the reference: what the damage adds
to it is the damage's share.

Run: .venv/bin/python bench/bench_damage.py [--seeds 3]
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
from inertia_estimation_ros.commands.report import comparison_rows  # noqa: E402
from inertia_estimation_ros.sim.scenario import run_scenario  # noqa: E402
from inertia_estimation_ros.sim.topics import write_simulation_bag  # noqa: E402

SCENARIO = ROOT / "config" / "scenarios" / "test_graph.yaml"


def ratios(bag: Path) -> list[tuple[float, str]]:
    """(|error|/sigma, name) of every quantity the final estimate reports valid."""
    result = estimate_bag(bag)
    rows = comparison_rows(result.final, result.truth)
    return [
        (abs(r.value - r.truth) / r.sigma if r.sigma > 0 else np.inf, r.name)
        for r in rows
        if r.sigma is not None and r.truth is not None
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    table: dict[str, list] = {"(none)": []} | {name: [] for name in DAMAGE}
    with tempfile.TemporaryDirectory() as scratch:
        for seed in range(args.seeds):
            clean = Path(scratch) / f"clean{seed}"
            write_simulation_bag(run_scenario(SCENARIO, seed=seed), clean)
            table["(none)"].append(ratios(clean))
            for k, name in enumerate(DAMAGE):
                bag = damaged_copy(clean, Path(scratch) / f"d{seed}_{k}", "robot_2", name, seed)
                table[name].append(ratios(bag))
    header = f"{'damage to robot_2':34s} runs  valid  |err|/sigma<3  worst |err|/sigma (quantity)"
    print(header)
    print("-" * len(header))
    for name, runs in table.items():
        values = [v for run in runs for v in run]
        within = np.mean([r < 3 for r, _ in values]) if values else float("nan")
        worst = max(values) if values else (float("nan"), "-")
        print(
            f"{name:34s} {len(runs):4d}  {len(values):5d}  {100 * within:12.1f} %"
            f"  {worst[0]:8.1f} ({worst[1]})"
        )


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/damage.md

    with benchmark_page("damage"):
        main()
