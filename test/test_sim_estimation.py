"""The estimation core (core.cooperative) recovers the ground truth of a noise-free MuJoCo run.

Three Delta-gimbal robots with ideal sensors at 500 Hz: human-guided motion, two static
holds, 12 s on spheres about robot_3's wrist. Where the remaining error comes from:

* integrator: semi-implicit Euler at 1 ms with welds of time constant 2 ms. The flanges,
  whose signals the robots report, move relative to the payload by ~1e-5 m and ~1e-5 rad,
  so rigid-body relations between grasps hold to ~1e-4 of the twist and Newton-Euler to
  <= 1e-3 of the wrench scale (test_sim_ground_team);
* filter: each robot's dV_i is a central difference of its joint velocities, truncation
  error (2 pi f h)^2 / 6 <= 4e-5 of the signal for f <= 1.5 Hz at h = 2 ms;
* model: the gimbals' damping moment (0.02 N m s/rad times <= 1 rad/s), which a passive
  gimbal's GraspSeries reports as unknown and the estimator takes as zero, is <= 0.5 % of the
  dynamic moments, the largest term; the holds see none of it.

Tolerances follow: grasp rotation 0.01 deg and position 0.5 mm (twist consistency 1e-4 on
~1 m baselines), mass 1e-4 relative, CoM 0.5 mm, principal moments 0.5 %.
The human's wrench on the payload during the guided phase is measured by no robot. The
estimators get every recording and find those samples themselves (core.cooperative.
external_wrench): they still serve the grasp kinematics, but not mass, CoM and inertia.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.cooperative import (
    EstimatorSettings,
    Recording,
    TeamEstimator,
    estimate_offline,
    paper_grasps,
    paper_inertia,
    paper_mass_com,
)
from inertia_estimation_ros.core.samples import GraspSeries
from inertia_estimation_ros.sim.analytic import synchronized_sets
from inertia_estimation_ros.sim.scenario import run_scenario
from inertia_estimation_ros.sim.scenario_file import read_scenario_yaml

SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"


@pytest.fixture(scope="module")
def run():
    data = yaml.safe_load((SCENARIOS / "test_three_gimbals.yaml").read_text())
    guided, holds, sphere = data["excitation"]
    guided["duration"] = 6.0
    sphere.update(duration=12.0, ramp=1.0)
    return run_scenario(data)


def joined(stretches: list[dict[str, GraspSeries]]) -> dict[str, GraspSeries]:
    """One GraspSeries per robot from consecutive stretches (for the paper's batch stages)."""
    out = {}
    for rid, first in stretches[0].items():
        parts = [s[rid] for s in stretches]
        arrays = {
            f: np.concatenate([getattr(p, f) for p in parts])
            for f in ("t", "T_i0_i", "V_i", "dV_i", "F_i", "g_i")
        }
        out[rid] = GraspSeries(
            rid, **arrays, has_force=first.has_force, has_torque=first.has_torque
        )
    return out


def rotation_error_deg(R_a: np.ndarray, R_b: np.ndarray) -> float:
    return float(np.rad2deg(np.linalg.norm(Rotation.from_matrix(R_a.T @ R_b).as_rotvec())))


def check_grasps(T_s_i: dict[str, np.ndarray], truth: dict[str, np.ndarray]) -> None:
    for rid, T in T_s_i.items():
        assert rotation_error_deg(T[:3, :3], truth[rid][:3, :3]) < 0.01, rid
        assert np.linalg.norm(T[:3, 3] - truth[rid][:3, 3]) < 5e-4, rid


def test_paper_pipeline_recovers_grasps_mass_com_and_inertia(run):
    truth = run.ground_truth
    ref = truth.reference_robot
    T_s_i = paper_grasps(joined(run.segments("human_guided")), ref)
    check_grasps(T_s_i, truth.T_s_i)
    mass, p_s_c = paper_mass_com(joined(run.segments("static")), T_s_i, ref)
    assert mass == pytest.approx(truth.payload.mass, rel=1e-4)
    assert np.linalg.norm(p_s_c - truth.payload.com) < 5e-4
    _, moments, R_s_c = paper_inertia(joined(run.segments("sphere")), T_s_i, p_s_c, ref)
    true_moments, true_R_s_c = truth.payload.principal_axes()
    np.testing.assert_allclose(moments, true_moments, rtol=5e-3)
    flips = [np.diag(d) for d in ([1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1])]
    assert min(rotation_error_deg(R_s_c @ D, true_R_s_c) for D in flips) < 1.0


def all_recordings(run) -> list[Recording]:
    recordings = [Recording(s, "moving") for s in run.segments("human_guided")]
    recordings += [Recording(s, "static") for s in run.segments("static")]
    return recordings + [Recording(s, "moving") for s in run.segments("sphere")]


def human_span(run) -> tuple[float, float, float]:
    """(first, last) time the human's force on the payload exceeds 1 N, and its RMS over
    the guided phase [N], from the simulator's ground truth."""
    truth = run.ground_truth
    force = np.linalg.norm(truth.F_human_s[:, 3:], axis=1)
    acting = truth.time[force > 1.0]
    guided = truth.grasps[truth.reference_robot].meta["phase"] == "human_guided"
    return acting[0], acting[-1], float(np.sqrt(np.mean(force[guided] ** 2)))


def check_payload(estimate, truth) -> None:
    assert estimate.grasps_valid and estimate.mass_valid and estimate.com_valid
    assert estimate.inertia_valid and estimate.physically_consistent
    check_grasps({g.robot_id: g.T_s_i for g in estimate.grasps}, truth.T_s_i)
    assert estimate.mass == pytest.approx(truth.payload.mass, rel=1e-4)
    assert np.linalg.norm(estimate.p_s_c - truth.payload.com) < 5e-4
    true_moments, _ = truth.payload.principal_axes()
    np.testing.assert_allclose(estimate.principal_moments, true_moments, rtol=5e-3)


def check_human_found(estimate, run) -> None:
    """One stretch set aside: where the human acted (to a segment, 1 s), of the human's size."""
    first, last, force = human_span(run)
    (span,) = estimate.external_wrench_spans
    assert first - 1.0 <= span.start <= first + 1.0 and last - 1.0 <= span.end <= last + 1.0
    assert span.force == pytest.approx(force, rel=0.25)
    assert any("(a human hand?)" in a for a in estimate.advice)


def test_offline_estimator_recovers_the_payload_from_all_recordings(run):
    truth = run.ground_truth
    settings = EstimatorSettings(500.0)
    estimate = estimate_offline(all_recordings(run), truth.reference_robot, settings)
    check_payload(estimate, truth)
    check_human_found(estimate, run)


def test_online_estimator_in_protocol_order_sets_the_guided_phase_aside(run):
    """The measured stream in time order (every 5th sample: 100 Hz), guidance first."""
    truth = run.ground_truth
    series = {r: s.select(np.arange(len(s)) % 5 == 0) for r, s in run.series().items()}
    estimator = TeamEstimator(list(series), truth.reference_robot, EstimatorSettings(100.0))
    for k, samples in enumerate(synchronized_sets(series)):
        estimator.update(samples)
        if k % 100 == 99:
            estimator.estimate()
    estimate = estimator.estimate_now()
    check_payload(estimate, truth)
    check_human_found(estimate, run)


def test_without_detection_the_human_biases_the_inertia(run):
    """The bias the detection removes: the human's wrench shifts the moments by up to 11%."""
    truth = run.ground_truth
    settings = EstimatorSettings(500.0, detect_external_wrench=False)
    estimate = estimate_offline(all_recordings(run), truth.reference_robot, settings)
    true_moments, _ = truth.payload.principal_axes()
    assert np.abs(estimate.principal_moments / true_moments - 1).max() > 0.05


def test_the_mass_during_guidance_is_refused_not_biased():
    """Issue 15's demo gap: during the demo's human-guided trials (paper 000's preset, here
    two 3-s trials at 100 Hz) the guided samples are set aside, but the guide still holds
    the payload in the 0.5-s settles around each trial (about 2 N, too short for the test),
    and the online mass from those alone was 1.8 % low and "valid" at 2.1-4.9 sigma. A
    constant wrench per segment cannot model the guide (it is what accelerates the payload:
    per-1-s means take 6 % of its power in the demo), so guided samples stay out, and so do
    those within HAND_GUARD_SECONDS of them: the mass is refused during guidance, with
    advice, instead of reported biased."""
    data = read_scenario_yaml(SCENARIOS / "paper000_mocobots.yaml")
    guided = {"program": "human_guided", "duration": 3.0, "max_rotation_deg": 10.0}
    run = run_scenario({**data, "excitation": [guided, guided]})
    truth = run.ground_truth
    series = run.series()
    estimator = TeamEstimator(list(series), truth.reference_robot, EstimatorSettings(100.0))
    for k, samples in enumerate(synchronized_sets(series)):
        estimator.update(samples)
        estimate = estimator.estimate() if k % 100 == 99 else None
        if estimate is not None and estimate.mass_valid:
            error = estimate.mass - truth.payload.mass
            assert abs(error) < 3 * np.sqrt(estimate.mass_variance), estimate.stamp
    final = estimator.estimate_now()
    assert not final.mass_valid and final.external_wrench_spans
    assert any("without a hand on it" in line for line in final.advice), final.advice
