"""The per-robot cable-tension UKF (paper 002, eqs. 31-37) against filterpy's UKF, and its
consistency (NEES) over Monte Carlo runs of its own model."""

from __future__ import annotations

import numpy as np
import pytest
from filterpy.kalman import MerweScaledSigmaPoints, UnscentedKalmanFilter
from scipy.spatial.transform import Rotation
from scipy.stats import chi2

from inertia_estimation_ros.core.aerial import ukf_kernels as kernels
from inertia_estimation_ros.core.aerial.allocation import GRAVITY
from inertia_estimation_ros.core.aerial.ukf import (
    ATTITUDE,
    HANGING,
    STATE_DIM,
    TENSION,
    CableTensionUKF,
    CableUKFNoise,
    RobotCableModel,
    SigmaPoints,
)
from inertia_estimation_ros.core.spatial import exp3, log3

DT = 0.01
MODEL = RobotCableModel(0.25, np.diag([0.000601, 0.000589, 0.001076]), 1.0)  # Dragonfly
NOISE = CableUKFNoise()
HOVER_TENSION = 0.278 * GRAVITY / 3  # RotorTM payload on three robots


def hover_state(yaw: float = 0.3) -> np.ndarray:
    s = np.zeros(STATE_DIM)
    s[:3] = [0.1, -0.2, 2.0]
    s[ATTITUDE] = [0.02, -0.01, yaw]
    s[12:15] = [0.05, 0.0, -1.0] / np.linalg.norm([0.05, 0.0, -1.0])
    s[TENSION] = HOVER_TENSION
    return s


def initial_covariance() -> np.ndarray:
    stds = [1e-2] * 3 + [0.05] * 3 + [0.02] * 3 + [0.1] * 3 + [0.01] * 3 + [0.05] * 3 + [0.2]
    return np.diag(np.square(stds))


def rotor_input(k: int) -> np.ndarray:
    f = MODEL.mass * GRAVITY + HOVER_TENSION + 0.2 * np.sin(0.3 * k)
    return np.array([f, 1e-4 * np.cos(0.2 * k), -1e-4, 5e-5])


def measurement(rng: np.random.Generator, s: np.ndarray) -> dict[str, np.ndarray]:
    """Noisy mocap of the state s, with the noise the filter assumes."""

    def noisy(block: np.ndarray, std: float) -> np.ndarray:
        return block + std * rng.standard_normal(len(block))

    R = exp3(s[ATTITUDE]) @ exp3(NOISE.attitude * rng.standard_normal(3))
    return {
        "p": noisy(s[:3], NOISE.position),
        "R": R,
        "v": noisy(s[3:6], NOISE.velocity),
        "Omega": noisy(s[9:12], NOISE.rate),
        "xi": noisy(s[12:15], NOISE.cable),
        "xi_dot": noisy(s[15:18], NOISE.cable_rate),
    }


def retract(s: np.ndarray, d: np.ndarray) -> np.ndarray:
    """s [+] d on the manifold (right perturbation of the attitude), in scipy's rotations."""
    out = s + d
    out[ATTITUDE] = (
        Rotation.from_rotvec(s[ATTITUDE]) * Rotation.from_rotvec(d[ATTITUDE])
    ).as_rotvec()
    return out


def local(s: np.ndarray, s0: np.ndarray) -> np.ndarray:
    """s [-] s0: the inverse of ``retract``."""
    out = s - s0
    out[ATTITUDE] = (
        Rotation.from_rotvec(s0[ATTITUDE]).inv() * Rotation.from_rotvec(s[ATTITUDE])
    ).as_rotvec()
    return out


def _filterpy_oracle(x0, P0, points) -> UnscentedKalmanFilter:
    ukf = UnscentedKalmanFilter(
        dim_x=STATE_DIM, dim_z=6, dt=DT, hx=lambda s: s[:6], fx=None, points=points
    )
    ukf.x, ukf.P, ukf.Q = x0.copy(), P0.copy(), NOISE.Q * DT
    return ukf


FILTERPY_UPDATES = {  # (indices of the state measured, measurement keys, stds)
    "pose": (np.r_[0:3, 6:9], ["p", "R"], [NOISE.position, NOISE.attitude]),
    "twist": (np.r_[3:6, 9:12], ["v", "Omega"], [NOISE.velocity, NOISE.rate]),
    "cable": (np.r_[12:18], ["xi", "xi_dot"], [NOISE.cable, NOISE.cable_rate]),
}


@pytest.mark.parametrize("alpha,beta,kappa", [(1.0, 0.0, 0.0), (0.5, 2.0, 0.0)])
def test_ukf_matches_filterpy_on_the_same_model_and_sigma_points(alpha, beta, kappa):
    """Vector parametrization of the attitude (manifold=False), so both filters run the same
    arithmetic: partial, asynchronous updates (pose every step, twist every 2nd, cable every
    3rd step, two predictions without any) over a scripted 30-step run. filterpy reuses the
    propagated sigma points in update(); ours are redrawn, so the oracle's are redrawn too."""
    rng = np.random.default_rng(1)
    x0, P0 = hover_state(), initial_covariance()
    ours = CableTensionUKF(
        MODEL,
        x0,
        P0,
        NOISE,
        manifold=False,
        sigma_points=SigmaPoints(alpha, beta, kappa),
        gate_probability=None,
    )
    points = MerweScaledSigmaPoints(STATE_DIM, alpha=alpha, beta=beta, kappa=kappa)
    oracle = _filterpy_oracle(x0, P0, points)
    truth = x0.copy()
    for k in range(30):
        u = rotor_input(k)
        truth = MODEL.propagate(truth, u, DT)
        ours.predict(u, DT)
        oracle.predict(dt=DT, fx=lambda s, dt, u=u: MODEL.propagate(s, u, dt))
        if k % 10 in (4, 5):
            continue
        z = measurement(rng, truth)
        for name, period in (("pose", 1), ("twist", 2), ("cable", 3)):
            if k % period:
                continue
            index, keys, stds = FILTERPY_UPDATES[name]
            value = np.concatenate([log3(z[key]) if key == "R" else z[key] for key in keys])
            getattr(ours, f"update_{name}")(*(z[key] for key in keys))
            oracle.sigmas_f = points.sigma_points(oracle.x, oracle.P)
            oracle.update(
                value, R=np.diag(np.repeat(np.square(stds), 3)), hx=lambda s, i=index: s[i]
            )
        np.testing.assert_allclose(ours.x, oracle.x, rtol=0, atol=1e-9)
        np.testing.assert_allclose(ours.P, oracle.P, rtol=0, atol=1e-9)
    assert ours.counters["pose.accepted"] == 24
    assert abs(ours.tension - HOVER_TENSION) < 3 * ours.tension_std


def _monte_carlo_run(rng: np.random.Generator, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """(error, covariance) at the end of one run of the filter on its own model: process noise
    injected on the manifold, 100 Hz mocap; the estimate starts off by a draw from P0."""
    P0 = initial_covariance()
    estimate = hover_state(yaw=np.pi - 0.01)  # yaw near +-pi: where Euler averaging breaks
    truth = retract(estimate, np.linalg.cholesky(P0) @ rng.standard_normal(STATE_DIM))
    ukf = CableTensionUKF(MODEL, estimate, P0, NOISE)
    L_Q = np.linalg.cholesky(NOISE.Q * DT)
    for k in range(steps):
        u = rotor_input(k)
        truth = retract(MODEL.propagate(truth, u, DT), L_Q @ rng.standard_normal(STATE_DIM))
        ukf.predict(u, DT)
        ukf.update_mocap(**measurement(rng, truth))
    return local(truth, ukf.x), ukf.P


def test_nees_within_the_95_percent_chi_square_band_over_50_monte_carlo_runs():
    """Manifold filter, yaw near pi, the tension observed only through the dynamics."""
    rng = np.random.default_rng(7)
    runs = 50
    nees, tension_z = [], []
    for _ in range(runs):
        error, P = _monte_carlo_run(rng, steps=20)
        nees.append(error @ np.linalg.solve(P, error))
        tension_z.append(error[TENSION] / np.sqrt(P[TENSION, TENSION]))
    low, high = chi2.ppf([0.025, 0.975], runs * STATE_DIM) / runs
    print(f"mean NEES {np.mean(nees):.2f} in [{low:.2f}, {high:.2f}] (19 states)")
    assert low < np.mean(nees) < high
    assert np.mean(np.square(tension_z)) < chi2.ppf(0.975, runs) / runs


def test_attitude_mean_on_the_manifold_has_no_wrap_around_artefact():
    """Sigma points straddling yaw = pi: the manifold mean stays at the propagated attitude,
    the vector (rotation-vector) mean of the same points lands 0.17 rad away."""
    x0, P0 = hover_state(yaw=np.pi - 0.01), initial_covariance()
    P0[ATTITUDE, ATTITUDE] = np.diag([1e-4, 1e-4, 0.05**2])
    u = rotor_input(0)
    expected = MODEL.propagate(x0, u, DT)[ATTITUDE]
    angles, noiseless = [], CableUKFNoise(process=(0.0,) * 7)
    for manifold in (True, False):
        ukf = CableTensionUKF(MODEL, x0, P0, noiseless, manifold=manifold)
        ukf.predict(u, DT)
        angles.append(np.linalg.norm(log3(exp3(expected).T @ exp3(ukf.x[ATTITUDE]))))
    assert angles[0] < 1e-9 and angles[1] > 0.1, angles


def _karcher_mean(rotations: Rotation, weights: np.ndarray) -> Rotation:
    """The weighted Karcher mean on SO(3), iterated to convergence in scipy's rotations."""
    mean = rotations[0]
    for _ in range(50):
        step = weights @ (mean.inv() * rotations).as_rotvec()
        mean = mean * Rotation.from_rotvec(step)
        if np.linalg.norm(step) < 1e-15:
            break
    return mean


@pytest.mark.parametrize("sigma_points", [SigmaPoints(), SigmaPoints(0.5, 2.0, 0.0)])
@pytest.mark.parametrize("attitude_std,tolerance", [(0.02, 1e-12), (0.3, 1e-7)])
def test_one_gauss_newton_step_gives_the_converged_karcher_mean(
    sigma_points, attitude_std, tolerance
):
    """The manifold's attitude mean (one Gauss-Newton step from the propagated centre point)
    and its residuals equal scipy's iterated Karcher mean of the propagated sigma points: to
    1e-12 rad at a 0.02 rad spread (0.1 rad/s rates), to 1e-7 rad at 0.3 rad (1.5 rad/s;
    1.2e-8 rad seen), far below any attitude noise."""
    rng = np.random.default_rng(5)
    (wm, _), scale = sigma_points.weights(STATE_DIM), sigma_points.scale(STATE_DIM)
    for k in range(10):
        x, P = hover_state(yaw=rng.uniform(-np.pi, np.pi)), initial_covariance()
        x[9:12] = rng.normal(0.0, 5 * attitude_std, 3)
        P[ATTITUDE, ATTITUDE] = np.eye(3) * attitude_std**2
        P[9:12, 9:12] = np.eye(3) * (5 * attitude_std) ** 2
        X, q, _ = kernels.sigma_points(x, np.linalg.cholesky(P), scale, True)
        X, q = kernels.propagate(X, q, MODEL.parameters, rotor_input(k), DT, np.array(HANGING))
        rotations = Rotation.from_quat(q[:, [1, 2, 3, 0]])
        mean, D = kernels.mean_and_residuals(X, q, wm, True)
        expected = _karcher_mean(rotations, wm)
        error = (expected.inv() * Rotation.from_rotvec(mean[ATTITUDE])).magnitude()
        residuals = (expected.inv() * rotations).as_rotvec()
        assert error < tolerance and np.abs(D[:, ATTITUDE] - residuals).max() < tolerance


def test_bad_measurements_are_gated_and_counted_and_coasting_grows_the_covariance():
    rng = np.random.default_rng(3)
    ukf = CableTensionUKF(MODEL, hover_state(), initial_covariance(), NOISE)
    truth = hover_state()
    z = measurement(rng, truth)
    assert ukf.update_pose(z["p"], z["R"])
    assert not ukf.update_pose(z["p"] + [0.5, 0.0, 0.0], z["R"])  # a mocap jump of 0.5 m
    assert ukf.last_nis["pose"] > chi2.ppf(0.9999, 6)
    assert not ukf.update_cable(np.full(3, np.nan), z["xi_dot"])
    assert not ukf.update_pose(z["p"], np.full((3, 3), np.nan))
    ukf.predict(rotor_input(0), DT)
    held = CableTensionUKF(MODEL, ukf.x, ukf.P, NOISE)
    ukf.predict(np.array([np.nan, 0.0, 0.0, 0.0]), DT)  # a NaN rotor speed: last input held
    held.predict(rotor_input(0), DT)
    np.testing.assert_array_equal(ukf.x, held.x)
    assert ukf.counters == {
        "pose.accepted": 1,
        "pose.gated": 1,
        "cable.nan": 1,
        "pose.nan": 1,
        "input.nan": 1,
    }
    stds = []
    for k in range(20):  # mocap lost: the filter coasts
        ukf.predict(rotor_input(k), DT)
        stds.append(np.sqrt(np.diag(ukf.P)))
    assert np.all(np.diff(np.array(stds)[:, [0, 3, 18]], axis=0) > 0)


def test_an_indefinite_covariance_is_repaired_and_counted():
    P = initial_covariance()
    P[0, 1] = P[1, 0] = 1.0  # far from positive definite
    ukf = CableTensionUKF(MODEL, hover_state(), P, NOISE)
    ukf.predict(rotor_input(0), DT)
    assert ukf.counters["covariance_repairs"] == 1
    assert np.all(np.linalg.eigvalsh(ukf.P) > 0)
    np.testing.assert_array_equal(ukf.P, ukf.P.T)


def test_a_slack_cable_keeps_the_tension_estimate_non_negative():
    """The robot hovers on its own thrust (f = m g): the cable is slack, mu = 0. The estimate
    starts at 0.05 N and is pulled below zero by noise: it is clamped and counted."""
    rng = np.random.default_rng(2)
    truth = hover_state()
    truth[ATTITUDE], truth[TENSION] = 0.0, 0.0
    start = truth.copy()
    start[TENSION] = 0.05
    ukf = CableTensionUKF(MODEL, start, initial_covariance(), NOISE)
    u = np.array([MODEL.mass * GRAVITY, 0.0, 0.0, 0.0])
    for _ in range(60):
        truth = MODEL.propagate(truth, u, DT)
        ukf.predict(u, DT)
        ukf.update_mocap(**measurement(rng, truth))
        assert ukf.tension >= 0.0
    assert ukf.counters["tension.clamped"] > 0
    assert ukf.tension < 3 * ukf.tension_std


def test_a_step_backwards_in_time_is_refused_with_the_cause():
    ukf = CableTensionUKF(MODEL, hover_state(), initial_covariance(), NOISE)
    with pytest.raises(ValueError, match="must not run backwards"):
        ukf.predict(rotor_input(0), -DT)


def test_attitude_measured_across_yaw_pi_is_a_small_residual_on_the_manifold():
    """Estimate at yaw pi - 0.01, mocap at yaw -pi + 0.005 (0.015 rad away): the manifold
    update accepts it and moves the yaw across pi; the vector residual (~2 pi) is gated."""
    x0 = hover_state(yaw=np.pi - 0.01)
    x0[ATTITUDE] = [0.0, 0.0, np.pi - 0.01]
    measured = exp3([0.0, 0.0, -np.pi + 0.005])
    P0 = initial_covariance()
    filters = [
        CableTensionUKF(MODEL, x0, P0, NOISE, manifold=manifold) for manifold in (True, False)
    ]
    assert [ukf.update_pose(x0[:3], measured) for ukf in filters] == [True, False]
    assert filters[1].counters["pose.gated"] == 1
    yaw = filters[0].euler_zyx[0]  # in (-pi, pi]: across pi, 1 mrad from the measurement
    assert -np.pi < yaw < -np.pi + 0.005 and abs(yaw - (-np.pi + 0.005)) < 2e-3


def test_a_robot_model_or_start_of_the_wrong_size_is_refused():
    np.testing.assert_array_equal(
        RobotCableModel(0.25, [1.0, 2.0, 3.0], 1.0).inertia, np.diag([1, 2, 3])
    )
    with pytest.raises(ValueError, match="mass > 0"):
        RobotCableModel(-0.25, np.eye(3), 1.0)
    with pytest.raises(ValueError, match="3x3 or diagonal"):
        RobotCableModel(0.25, np.eye(2), 1.0)
    with pytest.raises(ValueError, match="finite covariance"):
        CableTensionUKF(MODEL, hover_state(), np.eye(18))


@pytest.mark.parametrize("scale", [0.0, 1e-9, 1e-4, 0.5, 3.0])
def test_the_kernels_quaternion_helpers_equal_scipy(scale):
    """ukf_kernels' rotation helpers against scipy's Rotation: composition, round trip and
    the thrust direction, for angles from 0 to near pi."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((20, 3))
    a *= scale / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-300)
    b = rng.standard_normal((20, 3)) * 0.3
    expected = (Rotation.from_rotvec(a) * Rotation.from_rotvec(b)).as_rotvec()
    for a_i, b_i, composed, e3 in zip(
        a.tolist(), b.tolist(), expected, Rotation.from_rotvec(a).apply([0, 0, 1]), strict=True
    ):
        q_a = kernels.quaternion(*a_i)
        product = kernels.product(q_a, kernels.quaternion(*b_i))
        np.testing.assert_allclose(kernels.rotation_vector(*product), composed, atol=1e-12)
        np.testing.assert_allclose(kernels.rotation_vector(*q_a), a_i, atol=1e-12)
        np.testing.assert_allclose(kernels.thrust_direction(q_a), e3, atol=1e-12)


def _gap_run(reacquire_after: float | None, gust: float = 2.0) -> CableTensionUKF:
    """Mocap at 100 Hz for 0.5 s, a 2 s gap in which a gust the model does not know pushes
    the robot sideways (``gust`` [m/s^2], 4 m of drift at 2), then 0.5 s of mocap again."""
    rng = np.random.default_rng(11)
    truth = hover_state()
    ukf = CableTensionUKF(
        MODEL, truth, initial_covariance(), NOISE, reacquire_after=reacquire_after
    )
    for k in range(300):
        u = rotor_input(k)
        gap = 50 <= k < 250
        truth = MODEL.propagate(truth, u, DT)
        truth[:3] += 0.5 * gust * gap * DT**2 * np.array([1.0, 0.0, 0.0])
        truth[3:6] += gust * gap * DT * np.array([1.0, 0.0, 0.0])
        ukf.predict(u, DT)
        if not gap:
            z = measurement(rng, truth)
            ukf.update_pose(z["p"], z["R"])
            ukf.update_twist(z["v"], z["Omega"])
    ukf.truth = truth
    return ukf


def test_after_a_long_mocap_gap_the_filter_reacquires_instead_of_gating_for_good():
    """Without reacquisition the first pose after the gap passes (the position's covariance
    grew) but no twist does (the velocity is 4 m/s off), so that the poses are gated again
    from the next step: the filter is lost for good, 2.6 m off. With it the first twist
    after the gap inflates the covariance and is accepted (counted once) and the filter
    tracks again to the mocap's noise, consistently."""
    lost = _gap_run(reacquire_after=None)
    assert lost.counters["twist.gated"] == 50 and lost.counters["pose.gated"] == 49
    assert np.linalg.norm(lost.x[:3] - lost.truth[:3]) > 1.0
    found = _gap_run(reacquire_after=0.5)
    assert found.counters["twist.reacquired"] == 1 and found.counters["pose.reacquired"] == 0
    assert found.counters["pose.gated"] == found.counters["twist.gated"] == 0
    assert found.counters["pose.accepted"] == found.counters["twist.accepted"] == 100
    error = found.x[:3] - found.truth[:3]
    print("error after the gap", error, dict(found.counters))
    assert np.linalg.norm(error) < 5 * NOISE.position
    assert error @ np.linalg.solve(found.P[:3, :3], error) < chi2.ppf(0.999, 3)


def test_a_short_gap_keeps_the_gate_and_a_bad_reacquire_setting_is_refused():
    """A 0.5 m mocap jump right after a 0.2 s gap (below reacquire_after) is still gated."""
    ukf = CableTensionUKF(MODEL, hover_state(), initial_covariance(), NOISE)
    for k in range(20):
        ukf.predict(rotor_input(k), DT)
    assert not ukf.update_pose(hover_state()[:3] + [0.5, 0.0, 0.0], exp3(hover_state()[ATTITUDE]))
    assert ukf.counters["pose.gated"] == 1 and ukf.counters["pose.reacquired"] == 0
    with pytest.raises(ValueError, match="reacquire_after"):
        CableTensionUKF(MODEL, hover_state(), initial_covariance(), reacquire_after=0.0)


def _double(value: float) -> float:
    return 2.0 * value


def test_without_a_writable_cache_directory_the_kernels_compile_uncached(monkeypatch):
    """A read-only install without a writable user cache: numba finds no cache locator and
    raises when it decorates; the kernels' decorator then compiles without a cache (once per
    process) instead of failing the import."""
    import numba
    import numba.core.caching

    monkeypatch.setattr(numba.core.caching.CacheImpl, "_locator_classes", [])
    with pytest.raises(RuntimeError, match="no locator available"):
        numba.njit(cache=True)(_double)
    uncached = kernels._compiled(_double)
    assert uncached(1.5) == 3.0
    assert not uncached._cache.__class__.__name__ == "FunctionCache"


def test_inputs_of_the_wrong_size_are_refused_with_the_cause():
    ukf = CableTensionUKF(MODEL, hover_state(), initial_covariance(), NOISE)
    with pytest.raises(ValueError, match=r"u = \[f, M_x, M_y, M_z\] \(4,\)"):
        ukf.predict(np.zeros(3), DT)
    with pytest.raises(ValueError, match="attach-point acceleration"):
        ukf.predict(rotor_input(0), DT, attach_accel=np.zeros(2))
    with pytest.raises(ValueError, match="pose update: need 6 values"):
        ukf.update_pose(np.zeros(2), np.eye(3))
    assert not ukf.counters
