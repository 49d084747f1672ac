"""The human-wrench estimator (paper 002, eqs. 38-39) against known applied wrenches."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from scipy.stats import chi2
from test_aerial_ukf import DT, MODEL, NOISE, initial_covariance, measurement

from inertia_estimation_ros.core.aerial.allocation import E3, GRAVITY, CableAllocation
from inertia_estimation_ros.core.aerial.cables import RigidBodyState, cable_states
from inertia_estimation_ros.core.aerial.human_wrench import (
    HumanWrenchEstimator,
    UnobservableWrenchError,
)
from inertia_estimation_ros.core.aerial.ukf import (
    ATTITUDE,
    STATE_DIM,
    TENSION,
    CableTensionUKF,
    RobotCableModel,
)
from inertia_estimation_ros.core.spatial import exp3, log3
from inertia_estimation_ros.sim.aerial.config import QUADROTORS
from inertia_estimation_ros.sim.scenario import load_scenario

RHO_L = np.array([[-0.1540, -0.267, 0.01125], [0.3083, 0.0, 0.01125], [-0.1540, 0.267, 0.01125]])
MASS, INERTIA = 0.278, np.diag([0.00625019392, 0.00625019392, 0.01245978846])  # RotorTM
R_L = exp3([0.05, -0.03, 0.4])
HUMAN = np.array([0.3, -0.2, 0.4, 0.02, -0.01, 0.015])  # [F_H (I); M_H (L)]
MOTION = {  # payload acceleration (I), body rate and angular acceleration (L)
    "accel": np.array([0.2, -0.1, 0.3]),
    "Omega": np.array([0.1, -0.2, 0.3]),
    "Omega_dot": np.array([0.5, 0.2, -0.4]),
}
CABLE_STD, TENSION_STD = 5e-3, 0.05  # per robot: xi (each axis), mu [N]
CABLE_COVARIANCES = np.tile(np.diag([CABLE_STD**2] * 3 + [TENSION_STD**2]), (3, 1, 1))


def cable_tensions(human: np.ndarray, accel, Omega, Omega_dot) -> tuple[np.ndarray, np.ndarray]:
    """(mu (n,), xi (n, 3)) of taut cables that, with the human wrench, produce the motion:
    P mu_vec = [m_L (x_ddot + g e3); J Omega_dot + Omega x J Omega] - w_H (eqs. 3, 5)."""
    inertial = np.concatenate(
        [MASS * (accel + GRAVITY * E3), INERTIA @ Omega_dot + np.cross(Omega, INERTIA @ Omega)]
    )
    vectors = CableAllocation(RHO_L).solve(R_L, inertial - human).reshape(-1, 3)
    assert np.all(vectors[:, 2] > 0.5), "every cable pulls the payload up (taut)"
    tension = np.linalg.norm(vectors, axis=1)
    return tension, -vectors / tension[:, None]


ESTIMATOR = HumanWrenchEstimator(RHO_L, MASS, INERTIA)


def test_noise_free_recovery_quasi_static_at_rest_and_dynamic_in_motion():
    still = {key: np.zeros(3) for key in MOTION}
    tension, xi = cable_tensions(HUMAN, **still)
    static = ESTIMATOR.quasi_static(R_L, tension, xi, CABLE_COVARIANCES)
    np.testing.assert_allclose(static.wrench, HUMAN, atol=1e-12)
    tension, xi = cable_tensions(HUMAN, **MOTION)
    dynamic = ESTIMATOR.dynamic(R_L, tension, xi, CABLE_COVARIANCES, **MOTION)
    np.testing.assert_allclose(dynamic.wrench, HUMAN, atol=1e-12)
    static = ESTIMATOR.quasi_static(R_L, tension, xi, CABLE_COVARIANCES)
    assert np.abs(static.wrench - HUMAN)[:3].max() > 0.05  # the inertia read as human force


def test_no_human_reads_zero():
    tension, xi = cable_tensions(np.zeros(6), **{key: np.zeros(3) for key in MOTION})
    static = ESTIMATOR.quasi_static(R_L, tension, xi, CABLE_COVARIANCES)
    np.testing.assert_allclose(static.wrench, 0.0, atol=1e-12)


@pytest.mark.parametrize("dynamic", [False, True])
def test_estimate_error_within_its_covariance_chi_square(dynamic):
    """1000 draws of noisy (xi_k, mu_k) (and payload accelerations for the dynamic form):
    the mean of e^T Sigma^-1 e lies in the 95 % chi-square band of 6 x 1000 degrees of
    freedom, and each axis's |error|/sigma has unit RMS within 10 %."""
    rng = np.random.default_rng(5)
    motion = MOTION if dynamic else {key: np.zeros(3) for key in MOTION}
    tension, xi = cable_tensions(HUMAN, **motion)
    accel_cov = np.diag([0.05**2] * 3 + [0.2**2] * 3)
    draws, nees, z = 1000, [], []
    for _ in range(draws):
        mu_noisy = tension + TENSION_STD * rng.standard_normal(3)
        xi_noisy = xi + CABLE_STD * rng.standard_normal((3, 3))
        if dynamic:
            measured = np.concatenate([motion["accel"], motion["Omega_dot"]])
            measured += np.sqrt(np.diag(accel_cov)) * rng.standard_normal(6)
            estimate = ESTIMATOR.dynamic(
                R_L,
                mu_noisy,
                xi_noisy,
                CABLE_COVARIANCES,
                measured[:3],
                motion["Omega"],
                measured[3:],
                accel_cov,
            )
        else:
            estimate = ESTIMATOR.quasi_static(R_L, mu_noisy, xi_noisy, CABLE_COVARIANCES)
        error = estimate.wrench - HUMAN
        nees.append(error @ np.linalg.solve(estimate.covariance, error))
        z.append(error / estimate.std)
    low, high = chi2.ppf([0.025, 0.975], 6 * draws) / draws
    print(f"mean NEES {np.mean(nees):.3f} in [{low:.3f}, {high:.3f}]")
    assert low < np.mean(nees) < high
    np.testing.assert_allclose(np.sqrt(np.mean(np.square(z), axis=0)), 1.0, atol=0.1)


def test_two_robots_are_refused_the_wrench_is_not_observable():
    with pytest.raises(UnobservableWrenchError, match="not observable.*n >= 3"):
        HumanWrenchEstimator(RHO_L[:2], MASS, INERTIA)


def _hovering_robot_ukf(rng, mu: float, xi: np.ndarray, attach: np.ndarray) -> CableTensionUKF:
    """A robot hovering at rest on its cable (f R e3 = m g e3 - mu xi, eq. 6), tracked by its
    UKF from noisy 100 Hz mocap for 1 s; the UKF starts 0.3 N off in tension."""
    thrust = MODEL.mass * GRAVITY * E3 - mu * xi
    truth = np.zeros(STATE_DIM)
    truth[:3] = attach - MODEL.length * xi
    truth[ATTITUDE] = Rotation.align_vectors([thrust], [E3])[0].as_rotvec()
    truth[12:15], truth[TENSION] = xi, mu
    start = truth.copy()
    start[TENSION] += 0.3
    ukf = CableTensionUKF(MODEL, start, initial_covariance(), NOISE)
    u = np.array([np.linalg.norm(thrust), 0.0, 0.0, 0.0])
    for _ in range(100):
        truth = MODEL.propagate(truth, u, DT)
        ukf.predict(u, DT)
        ukf.update_mocap(**measurement(rng, truth))
    return ukf


def test_wrench_from_three_cable_ukfs_within_its_covariance():
    """The team chain: three UKFs estimate (xi_k, mu_k) from mocap and rotor thrust; the
    quasi-static wrench from their estimates and covariances covers the applied one."""
    rng = np.random.default_rng(11)
    tension, xi = cable_tensions(HUMAN, **{key: np.zeros(3) for key in MOTION})
    attach = np.array([0.0, 0.0, 1.0]) + RHO_L @ R_L.T
    ukfs = [_hovering_robot_ukf(rng, m, x, a) for m, x, a in zip(tension, xi, attach, strict=True)]
    estimate = ESTIMATOR.quasi_static(
        R_L,
        np.array([ukf.tension for ukf in ukfs]),
        np.array([ukf.cable_direction for ukf in ukfs]),
        np.array([ukf.cable_covariance for ukf in ukfs]),
    )
    error = estimate.wrench - HUMAN
    print("error / sigma", error / estimate.std, "sigma", estimate.std)
    assert error @ np.linalg.solve(estimate.covariance, error) < chi2.ppf(0.999, 6)
    assert estimate.std[:3].max() < 0.2  # [N] (from 0.87 at the start); set by the mu random walk


def test_inputs_of_the_wrong_size_are_refused_with_the_expected_shapes():
    tension, xi = cable_tensions(HUMAN, **{key: np.zeros(3) for key in MOTION})
    with pytest.raises(ValueError, match=r"tensions \(n,\).*got shapes"):
        ESTIMATOR.quasi_static(R_L, tension[:2], xi[:2], CABLE_COVARIANCES[:2])


def test_mujoco_push_from_three_cable_ukfs_dynamic_within_covariance_quasi_static_biased():
    """MuJoCo closed loop (paper 002's team, sim/aerial): a [0.3, 0, 0.2] N push at the
    grasp from t = 1 s to 3.5 s. Each robot's UKF runs on its noisy mocap, eq. 41's cable
    states from the payload's mocap, and the applied thrust and moments; the estimators use
    the payload's mocap attitude. Dynamic (eq. 38) with the payload's acceleration (the
    differentiated true velocity): within its covariance at 99 % on >= 95 % of samples and
    F_x RMSE < 0.01 N during the push. Quasi-static (eq. 39) is as good at rest but reads the
    payload's acceleration during the push as human force (F_x RMSE > 0.05 N)."""
    push = {"kind": "step", "start": 1.0, "duration": 2.5, "force": [0.3, 0.0, 0.2]}
    scenario = {"type": "aerial_cable_team", "name": "wrench", "seed": 1, "duration": 4.0}
    r = load_scenario(scenario | {"human": {"grasp": list(RHO_L[1]), "profiles": [push]}}).run()
    robot = QUADROTORS["dragonfly"]
    model = RobotCableModel(robot.mass, robot.inertia, r.cable_limit)
    ukfs = []
    for k in range(3):
        start = np.zeros(STATE_DIM)
        start[:3], start[ATTITUDE] = r.mocap_robot_x[0, k], log3(r.mocap_robot_R[0, k])
        start[12:15], start[TENSION] = -E3, MASS * GRAVITY / 3
        ukfs.append(CableTensionUKF(model, start, initial_covariance()))
    accel = np.gradient(r.payload_v, r.time, axis=0)
    Omega_dot = np.gradient(r.payload_Omega, r.time, axis=0)
    lengths = np.full(3, r.cable_limit)
    errors = {"static": [], "dynamic": []}
    nees = {"static": [], "dynamic": []}
    for q in range(len(r.time)):
        payload = RigidBodyState(
            r.mocap_payload_x[q],
            r.mocap_payload_v[q],
            r.mocap_payload_R[q],
            r.mocap_payload_Omega[q],
        )
        xi, xi_dot = cable_states(
            payload, r.attach_points, r.mocap_robot_x[q], r.mocap_robot_v[q], lengths
        )
        for k, ukf in enumerate(ukfs):
            if q:
                u = np.concatenate([[r.thrust[q - 1, k]], r.moment[q - 1, k]])
                ukf.predict(u, r.time[q] - r.time[q - 1])
            mocap = (r.mocap_robot_x, r.mocap_robot_R, r.mocap_robot_v, r.mocap_robot_Omega)
            ukf.update_mocap(*(m[q, k] for m in mocap), xi[k], xi_dot[k])
        cables = (
            np.array([ukf.tension for ukf in ukfs]),
            np.array([ukf.cable_direction for ukf in ukfs]),
            np.array([ukf.cable_covariance for ukf in ukfs]),
        )
        R_L = r.mocap_payload_R[q]
        estimates = {
            "static": ESTIMATOR.quasi_static(R_L, *cables),
            "dynamic": ESTIMATOR.dynamic(R_L, *cables, accel[q], r.payload_Omega[q], Omega_dot[q]),
        }
        for name, estimate in estimates.items():
            error = estimate.wrench - r.human_wrench[q]
            errors[name].append(error)
            nees[name].append(error @ np.linalg.solve(estimate.covariance, error))
    rest = (r.time > 0.5) & (r.time < 1.0)
    pushing = (r.time > 1.5) & (r.time < 3.5)
    bound = chi2.ppf(0.99, 6)
    for name, window in (("static", rest), ("dynamic", rest), ("dynamic", pushing)):
        covered = np.mean(np.array(nees[name])[window] < bound)
        assert covered >= 0.95, (name, covered)
    rmse = {name: np.sqrt(np.mean(np.square(e)[pushing], axis=0)) for name, e in errors.items()}
    print("push RMSE static", rmse["static"].round(4), "dynamic", rmse["dynamic"].round(4))
    assert rmse["dynamic"][0] < 0.01 < 0.05 < rmse["static"][0]


def test_momentum_observer_converges_to_the_external_force_with_its_time_constant():
    """A robot under thrust, gravity and a constant cable pull F (eq. 6, integrated exactly):
    the observer's estimate is F (1 - exp(-K t)) (first order, time constant 1/K); the team's
    eq. 39 with the observed pulls recovers the human wrench of the cable_tensions case."""
    from inertia_estimation_ros.core.aerial.momentum_observer import (
        MomentumObserver,
        observer_wrench,
    )

    mass, gain, dt = 0.25, 10.0, 1e-4
    F = np.array([0.1, -0.2, -0.9])
    thrust = np.array([0.0, 0.3, 3.2])
    observer = MomentumObserver(mass, gain)
    accel = (thrust + F) / mass - GRAVITY * E3
    for k in range(10001):
        estimate = observer.update(k * dt, accel * k * dt, thrust)
    np.testing.assert_allclose(estimate, F * (1 - np.exp(-gain * 1.0)), atol=1e-3)
    tension, xi = cable_tensions(HUMAN, **{key: np.zeros(3) for key in MOTION})
    pulls = tension[:, None] * xi  # the force of each cable on its robot
    wrench = observer_wrench(CableAllocation(RHO_L), R_L, pulls, MASS)
    np.testing.assert_allclose(wrench, HUMAN, atol=1e-12)
