"""Coverage of the stated uncertainty: grasp frames and payload, pooled over many seeds.

Run: .venv/bin/python bench/bench_calibration.py [--fits 1000] [--payload-runs 200] [--quick]
     [--rows poses]

Each seed draws a new team (3 robots on a 0.7 m ring, random yaws), a new motion (paper 000
kinematics protocol: 3 sines per axis, <= 10 deg, <= 5 cm, 4 s at 100 Hz) and new noise;
``--per-seed`` fits share a team and a motion. For every fit, z = error / stated std of each
coordinate and d^2 = e^T C^-1 e with the stated covariance C (``sim.coverage``). A right
covariance gives sum d^2 ~ chi^2 of the summed coordinates, and no |z| > 5 in thousands.

Rows:
* grasps, twists: ``refine_grasps`` on white twist noise (0.01 rad/s, 0.004 m/s);
* grasps, poses: ``fit_grasps`` on exact twists and encoder-like pose noise (white ZYX angles
  0.05 deg, positions 0.2 mm), no robust loss: the pose fit alone;
* grasps, offline path: ``fit_grasps`` as ``estimate_offline`` calls it (noisy twists, noisy
  poses, gravity, Huber loss), each home frame's gravity direction off by 1e-4 rad (base
  levelness: what ``EstimatorSettings.gravity_direction_floor`` claims);
* offline path, level bases: the same on perfectly level bases (exact gravity directions)
  with the floor at 1e-4 rad (the claim exceeds the error: scale < 1) and at 1e-7 rad;
* payload: ``estimate_offline`` on the dynamics test's protocol (paper team with F/T
  sensors, kinematics 5 s, four static holds, pivot 10 s), theta's 10 parameters.

Columns: runs, coordinates, scale = sqrt(sum d^2 / dof) (1: right; 1.2: std 20 % too
small), the chi^2 test's two-sided p-value and its verdict at a 1e-3 false-alarm rate,
shares within 1 and 2 stated stds (68.3 %, 95.4 % expected), counts of |z| > 3 (0.27 %
expected) and > 5 (6e-7 expected), max |z|.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np

from inertia_estimation_ros.core.cooperative import EstimatorSettings, Recording, estimate_offline
from inertia_estimation_ros.core.cooperative import grasp_kinematics as gk
from inertia_estimation_ros.sim import analytic as an
from inertia_estimation_ros.sim.coverage import Coverage, grasp_errors

RATE = 100.0
FALSE_ALARM = 1e-3
TWIST_NOISE = an.NoiseModel(angular_velocity_std=0.01, linear_velocity_std=0.004)
POSE_NOISE = an.NoiseModel(position_std=2e-4, angle_std=np.deg2rad(0.05))
BOTH_NOISE = dataclasses.replace(POSE_NOISE, angular_velocity_std=0.01, linear_velocity_std=0.004)


def grasp_fit(kind: str, sim: an.Simulation, reference_id: str, floor: float) -> gk.GraspKinematics:
    measured = {r: s.V_i for r, s in sim.measured.items()}
    poses = {r: s.T_i0_i for r, s in sim.measured.items()}
    if kind == "twists":
        return gk.refine_grasps(gk.twist_moments(measured), reference_id)
    if kind == "poses":
        exact = {r: s.V_i for r, s in sim.exact.items()}
        return gk.fit_grasps(exact, reference_id, poses=poses, loss="none")
    gravity = {r: s.g_i for r, s in sim.measured.items()}
    return gk.fit_grasps(
        measured, reference_id, poses=poses, gravity=gravity, loss="huber", gravity_floor=floor
    )


TILT = 1e-4  # [rad] base levelness: EstimatorSettings.gravity_direction_floor's default
TILTED = dataclasses.replace(BOTH_NOISE, home_tilt_std=TILT)
GRASP_ROWS = {  # name: (fit, noise, gravity floor)
    "grasps, twists": ("twists", TWIST_NOISE, TILT),
    "grasps, poses": ("poses", POSE_NOISE, TILT),
    "grasps, offline path (Huber, gravity, tilt 1e-4)": ("offline", TILTED, TILT),
    "offline path, level bases, floor 1e-4": ("offline", BOTH_NOISE, TILT),
    "offline path, level bases, floor 1e-7": ("offline", BOTH_NOISE, 1e-7),
}


def grasp_coverage(
    kind: str, noise: an.NoiseModel, floor: float, fits: int, per_seed: int
) -> Coverage:
    coverage = Coverage()
    t = np.arange(0, 4, 1 / RATE)
    for seed in range(int(np.ceil(fits / per_seed))):
        rng = np.random.default_rng(1000 + seed)
        team, payload, motion = an.ring_kinematics_case(rng)
        for _ in range(min(per_seed, fits - coverage.runs)):
            sim = an.simulate(team, payload, motion, t, noise=noise, rng=rng)
            fit = grasp_fit(kind, sim, team.reference_id, floor)
            coverage.add(grasp_errors(fit.T_s_i, team.T_s_i, team.reference_id), fit.covariance)
    return coverage


def payload_coverage(runs: int, per_seed: int) -> Coverage:
    """The dynamics test's Monte Carlo (test_cooperative_dynamics), over many motion seeds."""
    team, payload, noise = an.paper_calibration_case()
    settings = EstimatorSettings(residual_correlation_lags=0)
    coverage = Coverage()
    for seed in range(int(np.ceil(runs / per_seed))):
        rng = np.random.default_rng(2000 + seed)
        kin, pivot = an.paper_kinematics_motion(rng), an.paper_inertia_motion(rng)
        for _ in range(min(per_seed, runs - coverage.runs)):
            trials = an.paper_trials(team, payload, kin, pivot, RATE, noise=noise, rng=rng)
            recordings = [Recording(series, phase) for series, phase in trials]
            estimate = estimate_offline(recordings, "robot_1", settings)
            coverage.add(estimate.theta - payload.vec, estimate.theta_covariance)
    return coverage


def row(name: str, coverage: Coverage, seconds: float) -> str:
    p = coverage.p_value()
    verdict = "pass" if coverage.accepts(FALSE_ALARM) else "FAIL"
    return (
        f"| {name} | {coverage.runs} | {coverage.total_dof} | {coverage.scale:.3f} | "
        f"{p:.3g} ({verdict}) | {100 * coverage.fraction_within(1):.1f} % | "
        f"{100 * coverage.fraction_within(2):.1f} % | {coverage.beyond(3)} | "
        f"{coverage.beyond(5)} | {coverage.max_abs_z():.2f} | {seconds:.0f} s |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fits", type=int, default=1000, help="grasp fits per row")
    parser.add_argument("--per-seed", type=int, default=10, help="fits per team and motion")
    parser.add_argument("--payload-runs", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="100 fits, 20 payload runs")
    parser.add_argument("--rows", default="", help="only the grasp rows whose name contains this")
    args = parser.parse_args()
    if args.quick:
        args.fits, args.payload_runs = 100, 20
    print(
        "| Estimate | runs | coordinates | scale | chi^2 p (1e-3) | within 1 sd | "
        "within 2 sd | abs z > 3 | abs z > 5 | max abs z | time |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, (kind, noise, floor) in GRASP_ROWS.items():
        if args.rows not in name:
            continue
        start = time.perf_counter()
        coverage = grasp_coverage(kind, noise, floor, args.fits, args.per_seed)
        print(row(name, coverage, time.perf_counter() - start), flush=True)
    if args.payload_runs:
        start = time.perf_counter()
        coverage = payload_coverage(args.payload_runs, args.per_seed)
        print(row("payload theta (offline)", coverage, time.perf_counter() - start), flush=True)
    print("expected: scale 1, within 1 sd 68.3 %, within 2 sd 95.4 %, abs z > 5: 0")


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/calibration.md

    with benchmark_page("calibration"):
        main()
