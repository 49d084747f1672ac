"""The fault matrix (issue 15): each damage class of ``damage.DAMAGE`` applied to robot_2's
grasp_state of a simulator bag, through ``estimate`` on the bag (the coordinator's
pipeline, ``core.team_pipeline``, which the coordinator node runs live over DDS), with the
outcome expected:

* ``estimated``: nothing refused; every quantity valid and within 3 sigma of the
  undamaged bag's estimate (the damage moves nothing beyond its stated uncertainty);
* ``refused``: the samples are refused and counted under the reason; no quantity valid;
  the advice names the robot, the count and the cause;
* ``invalid``: no quantity valid; the advice names the robot and the cause.

docs/reliability.md prints this matrix. The last tests: the final solve does
not depend on the schedule of the solves before it."""

from __future__ import annotations

import tempfile
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from damage import DAMAGE, damaged_copy, simulated_run

from inertia_estimation_ros.commands.estimate import estimate_bag, input_summary
from inertia_estimation_ros.commands.report import comparison_rows
from inertia_estimation_ros.sim.scenario import run_scenario
from inertia_estimation_ros.sim.topics import write_simulation_bag

ROBOT = "robot_2"
# damage -> (outcome, refusal reason or None, words the advice must hold)
EXPECTED = {
    "1 in 4 samples lost": ("estimated", None, ""),
    "NaN wrenches": ("refused", "non-finite or missing values", "force is not finite"),
    "stamps shuffled in blocks of 10": ("refused", "out-of-order stamp", "stamps out of order"),
    "arrival out of order": ("refused", "out-of-order stamp", "stamps out of order"),
    "wrong frame id": ("refused", "wrong frame id", "frame id 'world', expected 'robot_2/grasp'"),
    "zero quaternions": ("refused", "malformed message", "the orientation quaternion is zero"),
    "clock 1000 s ahead": ("invalid", None, "stamps are 1e+03 s ahead of the other robots'"),
}


@cache
def estimated(damage: str | None):
    """``estimate`` on the simulator bag, damaged by ``damage`` (None: undamaged), once."""
    bag = simulated_run() / "bag"
    if damage is not None:
        bag = damaged_copy(bag, Path(tempfile.mkdtemp(prefix="fault_")) / "bag", ROBOT, damage)
    return estimate_bag(bag)


@pytest.fixture(scope="module")
def clean():
    """The undamaged bag's final estimate: name -> row."""
    result = estimated(None)
    return {row.name: row for row in comparison_rows(result.final, result.truth)}


def test_every_damage_class_has_an_expected_outcome():
    assert set(EXPECTED) == set(DAMAGE)


@pytest.mark.parametrize("damage", list(EXPECTED))
def test_fault_matrix(damage, clean):
    outcome, reason, words = EXPECTED[damage]
    result = estimated(damage)
    rows = comparison_rows(result.final, result.truth)
    valid = [row for row in rows if row.sigma is not None]
    refused = {r: n for (rid, r), n in result.pipeline.rejected.items() if rid == ROBOT}
    advice = " | ".join(result.final.advice)
    if outcome == "estimated":
        assert not refused and len(valid) == len(rows) == len(clean)
        moved = [abs(row.value - clean[row.name].value) / row.sigma for row in valid]
        assert max(moved) < 3.0, max(zip(moved, [r.name for r in valid], strict=True))
        return
    assert not valid, [row.name for row in valid]
    assert words in advice and f"{ROBOT}" in advice
    if outcome == "refused":
        assert refused[reason] >= 0.05 * 390
        assert f"refused: {ROBOT}: {refused[reason]} samples refused, {reason}" in input_summary(
            result.pipeline
        )
        assert "no quantity is valid" in advice
    else:
        assert not refused
        assert not any(f"{r} is silent" in advice for r in ("robot_1", "robot_3"))
    assert np.isfinite(result.final.parameters).all()


@pytest.mark.parametrize("period", [0.5, 2.0])
def test_the_final_solve_does_not_depend_on_the_solve_schedule(period):
    """Issue 15 item 3: solved every 0.5 s (the live node's default) instead of every 5 s,
    the statistics held regressors built through an early grasp estimate and the mass came
    out 30.35 +- 0.15 kg, 14 sigma off (truth 32.4). Issue 16: ``estimate`` without a report
    runs no history solves (``estimated(None)``), so its final solve must be the same as with
    any history: here to the last bit (a run short enough that no wrench segments merge).
    The bag is ingested in the same 0.5-s chunks whatever the history (they used to end at
    each solve: round-off of 3e-16 in the statistics, 4e-6 in the grasp sigma)."""
    result = estimate_bag(simulated_run() / "bag", period=period)
    final, alone = result.final, estimated(None).final
    assert len(result.history) > 1 and len(estimated(None).history) == 1
    np.testing.assert_array_equal(final.parameters, alone.parameters)
    np.testing.assert_array_equal(final.parameter_covariance, alone.parameter_covariance)
    for mine, other in zip(final.grasps, alone.grasps, strict=True):
        np.testing.assert_array_equal(mine.covariance, other.covariance)
        assert mine.transform == other.transform
    mass = next(r for r in comparison_rows(final, result.truth) if r.name == "mass [kg]")
    assert abs(mass.value - mass.truth) < 3 * mass.sigma


def grasp_ratios(result) -> np.ndarray:
    """|error| / sigma of every grasp component (positions, rotation vectors) against truth."""
    rows = comparison_rows(result.final, result.truth)
    return np.array([abs(r.value - r.truth) / r.sigma for r in rows if r.name.startswith("T_s_")])


def test_stated_grasp_sigma_covers_the_errors_on_clean_and_damaged_input():
    """Items 4/5: the grasp frames' stated sigma was 4-7x too small on this bag (the residual
    autocorrelation that inflates it was measured on the residuals of earlier fits, and
    there were none before the final solve: inflation 1 where batch means find ~14). Pooled
    over the undamaged bag and the one that lost 1 in 4 samples (24 components, nearly the
    same data twice): the mean of (|error|/sigma)^2 is 1 for an honest sigma; before the fix
    it was ~10, now 2.15 on this bag (seed 7) and 0.7-1.0 on seeds 0 and 1; the coverage
    over seeds is in bench/bench_damage.py."""
    lost = estimated("1 in 4 samples lost")
    z = np.concatenate([grasp_ratios(estimated(None)), grasp_ratios(lost)])
    assert np.mean(z**2) < 3.0, np.round(z, 2)
    assert z.max() < 4.0, np.round(z, 2)


def payload_ratios(result) -> np.ndarray:
    """|error| / sigma of the mass, CoM, inertia and principal moments against truth."""
    rows = comparison_rows(result.final, result.truth)
    return np.array(
        [
            abs(r.value - r.truth) / r.sigma
            for r in rows
            if r.sigma and not r.name.startswith("T_s_")
        ]
    )


def test_stated_payload_sigma_covers_the_errors_of_a_short_run():
    """Items 1/5, seed 1 of test_graph. Before: CoM y 6.0 sigma off and no valid inertia.
    (a) The moving samples fell in two 1-s wrench segments whose model error is smooth and
    shared by neighbouring samples; the segments' sandwich (rank 2) saw none of it. Scores
    of 0.2-s clusters with their neighbours' covariance (Newey-West) see it. (b) The
    second after the hand let go carried 1.5 N RMS of residual under the true parameters:
    the central-difference accelerations next to the release average the accelerations
    before and after it; the cluster next to a set-aside segment is left out. Now every
    quantity is valid and within 3 sigma (over seeds: bench/bench_damage.py)."""
    with tempfile.TemporaryDirectory() as scratch:
        bag = Path(scratch) / "bag"
        write_simulation_bag(run_scenario("config/scenarios/test_graph.yaml", seed=1), bag)
        result = estimate_bag(bag)
    z = payload_ratios(result)
    assert len(z) == 13 and z.max() < 3.0, np.round(z, 2)
