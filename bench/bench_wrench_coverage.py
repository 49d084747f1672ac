"""Is the human wrench's stated sigma honest on damaged input (issue 14)?

A ground team (``sim.analytic``: three robots on a ring, 5 kg payload, 6-DoF multisine motion,
a hand pushing half the time) at 100 Hz; per case, RUNS runs of 3 s with the model (theta and
the non-reference grasps) drawn from its stated covariance and the declared sensor noise as
``SensorNoise``; then one damage the user did not declare:

* ``ft_noise_3x``: the F/T noise is 3x the declared level;
* ``ft_bias``: a constant F/T bias per robot (0.3 N m, 2 N std: a sensor not re-zeroed);
* ``quantized``: poses quantized (1 deg encoder angles, 1 mm), declared or not as
  ``SensorNoise.gravity_angle`` (the gravity each robot reads through its pose);
* ``tilted_bases``: each robot's base tilted (2 deg std: an uneven floor), so the gravity
  it reads is off, declared or not as ``SensorNoise.gravity_angle``;
* ``delayed``: one robot's sample is 20 ms old (2 periods: it lags, within max_spread);
* ``dropped``: one robot drops 4 of 5 samples (its newest sample held up to 40 ms);
* ``model_3sigma`` / ``model_10sigma``: theta off by 3 / 10 of its stated sigma (a frozen
  estimate from a short run);
* ``force_only``: robots that transmit no moment (only observable components claimed).

Printed per case: coverage of |e|/sigma <= 1 (68 % expected) and <= 2 (95 %) over the
observable components, the mean chi-square of the observable part over its degrees of
freedom (1 expected), the fraction of wrenches where the robots disagree beyond their
stated noise (``motion_consistency``: about the payload's acceleration;
``gravity_consistency``: about gravity in {s}) and the fraction of runs whose rest check
(``rest_check`` of a 1-s window at rest without the hand) flags the wrench as not zero
within its sigma or scattering beyond it.

    PYTHONPATH=$PWD .venv/bin/python bench/bench_wrench_coverage.py [--runs 8]
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.human_wrench import (
    PayloadModel,
    SensorNoise,
    external_wrench,
    gravity_consistency,
    motion_consistency,
    rest_check,
)
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.sim import analytic as an

RATE = 100.0
PUSH = an.HandPush(((1.0, 2.0),), force_w=(6.0, -4.0, 3.0), point_s=(0.2, 0.1, 0.05), ramp=0.2)
NOISE = an.NoiseModel(
    force_std=0.3, moment_std=0.03, angular_acceleration_std=0.2, linear_acceleration_std=0.1
)
DECLARED = SensorNoise(moment=0.03, force=0.3, angular_acceleration=0.2, linear_acceleration=0.1)
THETA_STD = np.array([0.05, 0.004, 0.004, 0.004, 0.01, 0.003, 0.003, 0.01, 0.003, 0.01])
GRASP_STD = np.full(6, 2e-3)
QUANTUM = (np.deg2rad(1.0), 1e-3)
TILT = np.deg2rad(2.0)

CASES = {
    "clean": {},
    "ft_noise_3x": {"noise": dict(force_std=0.9, moment_std=0.09)},
    "ft_bias": {"noise": dict(wrench_bias_std=(0.3, 2.0))},
    "quantized": {"noise": dict(angle_quantum=QUANTUM[0], position_quantum=QUANTUM[1])},
    "quantized_declared": {
        "noise": dict(angle_quantum=QUANTUM[0], position_quantum=QUANTUM[1]),
        "declared": dict(gravity_angle=QUANTUM[0] / np.sqrt(12)),
    },
    "tilted_bases": {"noise": dict(home_tilt_std=TILT)},
    "tilted_declared": {
        "noise": dict(home_tilt_std=TILT),
        "declared": dict(gravity_angle=TILT),
    },
    "delayed": {"lag": 2},
    "dropped": {"hold": 5},
    "model_3sigma": {"model_sigmas": 3.0},
    "model_10sigma": {"model_sigmas": 10.0},
    "force_only": {"force_only": True},
}


def payload_in(T_s_p: np.ndarray) -> InertialParameters:
    body = InertialParameters.from_mass_com_inertia(
        5.0, np.array([0.05, -0.03, 0.02]), np.diag([0.4, 0.6, 0.9])
    )
    return body.transformed(T_s_p)


def motion(rng: np.random.Generator) -> an.PayloadMotion:
    """Moving for 2.5 s, then held still (the rest check's window)."""
    return an.PayloadMotion(
        an.Multisine.random(rng, np.deg2rad([20, 15, 15]), (0.2, 0.8)),
        an.Multisine.random(rng, [0.2, 0.2, 0.1], (0.2, 0.8)),
    )


def truth_about_com(t, sim_motion, payload) -> np.ndarray:
    T_w_s, V_s, dV_s = sim_motion.evaluate(t)
    F_s = PUSH(t, T_w_s, an.net_wrench(payload, V_s, dV_s, np.zeros((len(t), 3))))
    return F_s @ sp.adjoint(sp.transform(np.eye(3), payload.com))


def drawn_model(team, payload, rng, sigmas: float) -> PayloadModel:
    """theta off by ``sigmas`` times a draw of its stated sigma (1: drawn from it), grasps
    drawn from theirs."""
    grasps = {
        r: T if r == team.reference_id else sp.exp6(rng.normal(0, GRASP_STD)) @ T
        for r, T in team.T_s_i.items()
    }
    return PayloadModel(
        team.reference_id,
        payload.vec + sigmas * rng.normal(0, THETA_STD),
        np.diag(THETA_STD**2),
        grasps,
        {r: np.diag(GRASP_STD**2) for r in team.robot_ids},
        True,
        True,
        True,
    )


def damaged_sets(series: dict, lag: int, hold: int) -> list[dict]:
    """One sample per robot per instant; the last robot's sample ``lag`` steps old or held
    over ``hold`` steps."""
    sets = an.synchronized_sets(series)
    last = list(series)[-1]
    for k in range(len(sets)):
        source = max(k - lag, 0) if lag else (k - k % hold if hold else k)
        sets[k][last] = series[last].sample(source)
    return sets


def run_case(spec: dict, rng: np.random.Generator) -> dict:
    team, T_s_p = an.ring_team(3, rng, moment_capable=not spec.get("force_only", False))
    payload = payload_in(T_s_p)
    m = motion(rng)
    t = np.arange(0.0, 3.0, 1.0 / RATE)
    noise = dataclasses.replace(NOISE, **spec.get("noise", {}))
    declared = dataclasses.replace(DECLARED, **spec.get("declared", {}))
    errors = noise.draw_errors(team.robot_ids, rng, team.reference_id)  # the same in both
    sim = an.simulate(team, payload, m, t, external=PUSH, noise=noise, errors=errors, rng=rng)
    rest = an.simulate(team, payload, an.still(), t[:100], noise=noise, errors=errors, rng=rng)
    model = drawn_model(team, payload, rng, spec.get("model_sigmas", 1.0))
    truth = truth_about_com(t, m, payload)
    z, chi, flags = [], [], []
    for k, samples in enumerate(
        damaged_sets(sim.measured, spec.get("lag", 0), spec.get("hold", 0))
    ):
        estimate = external_wrench(samples, model, declared)
        keep = estimate.observable
        z.append(((truth[k] - estimate.wrench) / estimate.std)[keep])
        chi.append(estimate.chi2(truth[k]) / keep.sum())
        checks = (motion_consistency, gravity_consistency)
        flags.append(not all(c(samples, model, declared).consistent for c in checks))
    at_rest = [
        external_wrench(s, model, declared)
        for s in damaged_sets(rest.measured, spec.get("lag", 0), spec.get("hold", 0))
    ]
    return dict(
        z=np.concatenate(z),
        chi=np.array(chi),
        flags=np.array(flags),
        rest=not _passes(rest_check(at_rest)),
    )


def _passes(check) -> bool:
    return check.zero and check.noise_within


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="runs of 3 s per case")
    args = parser.parse_args()
    print(f"{args.runs} runs of 3 s at {RATE:g} Hz per case (N = 3; a push from 1 to 2 s)")
    print()
    print(
        "| case | coverage 1 sigma | coverage 2 sigma | chi2 / dof | robots disagree "
        "| rest flagged |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, spec in CASES.items():
        rng = np.random.default_rng(7)
        runs = [run_case(spec, rng) for _ in range(args.runs)]
        z = np.abs(np.concatenate([r["z"] for r in runs]))
        chi = np.concatenate([r["chi"] for r in runs])
        flags = np.concatenate([r["flags"] for r in runs])
        rest = np.mean([r["rest"] for r in runs])
        print(
            f"| {name} | {np.mean(z <= 1):.2f} | {np.mean(z <= 2):.2f} | {chi.mean():.2f} | "
            f"{flags.mean():.2f} | {rest:.2f} |"
        )
    print()
    print("Expected on honest sigma: 0.68, 0.95, 1.00; flags near 0 on clean data.")


if __name__ == "__main__":
    from doc_page import benchmark_page  # the figures into docs/benchmarks/wrench_coverage.md

    with benchmark_page("wrench_coverage"):
        main()
