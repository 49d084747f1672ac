"""Payload identification in flight from cable tensions (core/aerial/identification.py)."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core.aerial.allocation import E3
from inertia_estimation_ros.core.aerial.identification import InFlightIdentification
from inertia_estimation_ros.core.identification import ExcitationError
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor
from inertia_estimation_ros.core.spatial import exp3

RHO_L = np.array([[-0.1540, -0.267, 0.01125], [0.3083, 0.0, 0.01125], [-0.1540, 0.267, 0.01125]])
TRUTH = InertialParameters.from_mass_com_inertia(
    0.278,
    np.array([0.012, -0.008, 0.004]),
    np.array([[0.0063, 0.0004, 0.0], [0.0004, 0.0061, -0.0002], [0.0, -0.0002, 0.0125]]),
)
TENSION_STD, CABLE_STD = 0.02, 2e-3
CABLE_COVARIANCES = np.tile(np.diag([CABLE_STD**2] * 3 + [TENSION_STD**2]), (3, 1, 1))


def _sample(rng, R, Omega, Omega_dot, v, accel):
    """The team's noisy measurements of the payload in this motion, no human touching it."""
    v_b = R.T @ v
    V = np.concatenate([Omega, v_b])
    dV = np.concatenate([Omega_dot, R.T @ accel - np.cross(Omega, v_b)])
    wrench = body_regressor(V, dV, R.T @ [0.0, 0.0, -9.81]) @ TRUTH.vec
    mu_L = (np.linalg.pinv(InFlightIdentification(RHO_L)._map) @ wrench).reshape(3, 3)
    mu = mu_L @ R.T  # the tension vectors on the payload, in I
    tension = np.linalg.norm(mu, axis=1)
    xi = -mu / tension[:, None]
    noisy_tension = tension + TENSION_STD * rng.standard_normal(3)
    noisy_xi = xi + CABLE_STD * rng.standard_normal((3, 3))
    return R, noisy_tension, noisy_xi, CABLE_COVARIANCES, v, accel, Omega, Omega_dot


def _samples(rng, count: int, rotate: bool):
    """Samples of a payload moving with (rotate) or without angular motion."""
    for _ in range(count):
        R = exp3(rng.normal(scale=[0.2, 0.2, 1.0]) if rotate else [0.0, 0.0, 0.3])
        Omega = rng.normal(scale=1.0, size=3) if rotate else np.zeros(3)
        Omega_dot = rng.normal(scale=3.0, size=3) if rotate else np.zeros(3)
        v, accel = rng.normal(scale=0.3, size=3), rng.normal(scale=1.0, size=3)
        yield _sample(rng, R, Omega, Omega_dot, v, accel)


def test_rotating_flight_identifies_mass_com_and_inertia_within_their_sigma():
    """400 samples of a payload turning about all three axes (tension noise 0.02 N, cable
    direction 2e-3): every one of the 10 parameters within 4 sigma of the truth, and the
    pooled |error|/sigma RMS between 0.5 and 1.5 (the stated covariance is a claim)."""
    rng = np.random.default_rng(4)
    # the noise as stated, no tension bias
    identification = InFlightIdentification(RHO_L, direction_floor=0.0, tension_bias=0.0)
    for sample in _samples(rng, 400, rotate=True):
        identification.add(*sample)
    result = identification.solve()
    z = (result.params.vec - TRUTH.vec) / result.std
    print("z", z.round(2), "mass", result.params.mass, "com", result.params.com.round(4))
    assert np.all(np.abs(z) < 4.0)
    assert 0.5 < np.sqrt(np.mean(z**2)) < 1.5
    assert result.samples == 400


def test_merged_clusters_keep_the_estimate_and_bound_the_memory():
    """Beyond ``max_clusters`` neighbouring clusters merge (and clusters double): the data
    and so the estimate are unchanged, the memory bounded."""
    rng = np.random.default_rng(9)
    samples = list(_samples(rng, 200, rotate=True))
    few = InFlightIdentification(RHO_L, cluster_samples=5, max_clusters=8, outlier_ratio=np.inf)
    many = InFlightIdentification(RHO_L, cluster_samples=5, outlier_ratio=np.inf)
    for sample in samples:
        few.add(*sample)
        many.add(*sample)
    assert len(few._clusters) <= 8 and few.cluster_samples == 40 and len(many._clusters) == 40
    np.testing.assert_allclose(few.solve().params.vec, many.solve().params.vec, rtol=1e-6)


def test_hover_is_refused_naming_the_inertia():
    rng = np.random.default_rng(5)
    identification = InFlightIdentification(RHO_L)
    for sample in _samples(rng, 100, rotate=False):
        identification.add(*sample)
    with pytest.raises(ExcitationError, match="do not determine.*Ixx.*rotate the payload"):
        identification.solve()


def test_the_identified_payload_feeds_the_human_wrench_estimator():
    """A team description 20 % light reads the payload's missing weight as a human pulling
    down (F_z ~ -0.55 N at rest); with the identified payload (mass, CoM, inertia) the
    no-contact wrench is zero within 3 sigma."""
    import yaml

    from inertia_estimation_ros.core.aerial.team_estimation import (
        AerialTeamEstimator,
        AerialTeamModel,
    )
    from inertia_estimation_ros.ros.graph import data_file

    document = yaml.safe_load(data_file("aerial_team_paper002.yaml", "config").read_text())
    document["payload"]["mass"] *= 0.8
    estimator = AerialTeamEstimator(AerialTeamModel.from_document(document))
    rng = np.random.default_rng(6)
    identification = InFlightIdentification(RHO_L)
    for sample in _samples(rng, 400, rotate=True):
        identification.add(*sample)
    rest = (exp3([0.05, -0.02, 0.3]), *np.zeros((4, 3)))
    R, tension, xi, covariances, *_ = _sample(rng, *rest)
    before = estimator.human.quasi_static(R, tension, xi, covariances)
    estimator.use_payload(identification.solve().params)
    after = estimator.human.quasi_static(R, tension, xi, covariances)
    print("F_z before", before.wrench[2], "after", after.wrench.round(4), "sigma", after.std)
    assert before.wrench[2] < -0.5
    assert np.all(np.abs(after.wrench) < 3 * after.std)


def _online(mass_scale: float, smoothing_lag: float = 0.0):
    """The coordinator's identification of a team whose description has the payload's mass
    times ``mass_scale`` (the truth's CoM-frame inertia, CoM at the origin), its samples'
    motion as given (smoothing_lag 0, a motion of no lag) or smoothed."""
    from inertia_estimation_ros.core.aerial.identification import OnlinePayloadIdentification
    from inertia_estimation_ros.core.aerial.team_estimation import AerialTeamModel
    from inertia_estimation_ros.core.aerial.ukf import RobotCableModel

    robot = RobotCableModel(0.25, np.array([6e-4, 6e-4, 1e-3]), 1.0)
    model = AerialTeamModel(
        ("robot_1", "robot_2", "robot_3"), (robot,) * 3, (None,) * 3, RHO_L,
        mass_scale * TRUTH.mass, TRUTH.inertia_about_com,
    )  # fmt: skip
    return OnlinePayloadIdentification(model, smoothing_lag=smoothing_lag)


def _feed(online, samples, degraded=lambda t: False, gated_share: float | None = None) -> None:
    """Offers the samples at 100 Hz, those with ``degraded(t)`` flagged degraded; with a
    ``gated_share`` each with the counters of 3 UKFs that gate that share of their updates."""
    from types import SimpleNamespace

    for t, (R, tension, xi, covariances, v, accel, Omega, Omega_dot) in enumerate(samples):
        estimate = SimpleNamespace(
            valid=True, degraded=degraded(t), stamp=0.01 * t, payload_R=R, tension=tension,
            xi=xi, cable_covariance=covariances,
        )  # fmt: skip
        linear = np.array([[np.zeros(3), v, accel]])  # (x, x_dot, x_ddot) per axis
        angular = np.array([[Omega, Omega_dot]])
        states = ((np.array([0.01 * t]), linear, np.zeros((1, 3, 3))),
                  (np.array([0.01 * t]), angular, np.zeros((1, 2, 2))))  # fmt: skip
        motion = SimpleNamespace(
            ready=True, time=0.01 * t, lag=(0.0, 0.0), states=lambda since, smooth, s=states: s
        )
        gated = None if gated_share is None else int(gated_share * t)
        counters = (
            None
            if gated is None
            else {  # t updates per UKF so far
                rid: {"mocap.accepted": t - gated, "mocap.gated": gated, "tension.clamped": 1}
                for rid in ("robot_1", "robot_2", "robot_3")
            }
        )
        assert online.add(estimate, motion, counters) != estimate.degraded


def test_online_identification_of_a_hover_gives_the_mass_and_keeps_the_described_inertia():
    """Hovering (no rotation), from a description 20 % light: the mass is valid and within
    3 sigma of the truth; the inertia is flagged not determined (zeros in the estimate, the
    advice names it) and the human-wrench estimator keeps the description's."""
    online = _online(0.8)
    _feed(online, _samples(np.random.default_rng(7), 200, rotate=False))
    estimate, use = online.solve()
    print("mass", estimate.mass, "+-", np.sqrt(estimate.mass_variance), estimate.advice)
    assert estimate.mass_valid and not estimate.inertia_valid
    assert abs(estimate.mass - TRUTH.mass) < 3 * np.sqrt(estimate.mass_variance)
    assert np.all(estimate.inertia_about_com == 0.0)
    assert any("Ixx" in a and "rotate" in a for a in estimate.advice)
    assert use.mass == pytest.approx(estimate.mass)
    np.testing.assert_allclose(use.inertia_about_com, TRUTH.inertia_about_com, atol=1e-12)
    assert estimate.samples_dynamic == 200 and len(estimate.grasps) == 3


def test_online_identification_of_a_rotating_flight_identifies_everything_within_sigma():
    online = _online(0.8)
    _feed(online, _samples(np.random.default_rng(8), 400, rotate=True))
    estimate, use = online.solve()
    assert estimate.mass_valid and estimate.com_valid and estimate.inertia_valid
    assert not estimate.advice and estimate.physically_consistent
    z = (estimate.theta - TRUTH.vec) / np.sqrt(np.diag(estimate.theta_covariance))
    print("z", z.round(2))
    assert np.all(np.abs(z) < 4.0)
    np.testing.assert_allclose(use.vec, estimate.theta, atol=1e-9)


@pytest.mark.parametrize(
    ("degraded_share", "gated_share", "advice"),
    [(0.7, 0.05, "degraded (70% of 400 estimates"), (0.0, 0.5, "gated 50% of 1197"),
     (1.0, 0.5, "degraded (100% of 400")],
)  # fmt: skip
def test_online_identification_refuses_when_most_tension_estimates_are_degraded(
    degraded_share, gated_share, advice
):
    """A rotating flight (identified within sigma when clean) whose estimates were mostly
    degraded, or whose UKFs gated half their mocap updates (tripled ESC noise on MuJoCo: the
    tensions left biased, the CoM 87 mm low): mass, CoM and inertia refused, the advice
    names the shares and what to check, the human-wrench estimator keeps the description."""
    online = _online(0.8)
    samples = _samples(np.random.default_rng(8), 400, rotate=True)
    _feed(online, samples, lambda t: t % 10 < 10 * degraded_share, gated_share)
    estimate, use = online.solve()
    print(estimate.advice)
    assert not (estimate.mass_valid or estimate.com_valid or estimate.inertia_valid)
    assert estimate.mass == 0.0 and estimate.stage.name == "KINEMATICS"
    assert any(advice in a and "rotor-speed noise" in a for a in estimate.advice)
    np.testing.assert_allclose(use.vec, online.nominal.vec, atol=1e-15)


def test_online_identification_counts_degraded_estimates_and_keeps_them_out():
    """10 % of the estimates degraded, 5 % of the UKFs' updates gated (under both limits):
    the same identification as of the undegraded samples alone, offered without counters."""
    kept = [s for t, s in enumerate(_samples(np.random.default_rng(8), 400, True)) if t % 10]
    clean = _online(0.8)
    _feed(clean, kept)
    counted = _online(0.8)
    _feed(counted, _samples(np.random.default_rng(8), 400, True), lambda t: t % 10 == 0, 0.05)
    assert (counted.offered, counted.degraded, counted.samples) == (400, 40, 360)
    assert counted.damage_refusal() is None and counted.updates.tolist() == [1140, 57]
    (estimate, _), (reference, _) = counted.solve(), clean.solve()
    assert estimate.mass_valid and estimate.com_valid and estimate.inertia_valid
    np.testing.assert_allclose(estimate.theta, reference.theta, rtol=1e-12, atol=1e-15)
    assert estimate.advice == reference.advice == ()


FLIGHT_STEP, FLIGHT_SAMPLES = 0.01, 400  # 4 s at 100 Hz
ACCEL_STD, ANGULAR_ACCEL_STD = 0.05, 0.1  # the motion filter's errors [m/s^2], [rad/s^2]


def _correlated(rng, shape: tuple, time_constant: float, std: float) -> np.ndarray:
    """(FLIGHT_SAMPLES, *shape) errors of standard deviation ``std``: white at time constant
    0, else a first-order Gauss-Markov process (a filter's estimate errs like that)."""
    rho = np.exp(-FLIGHT_STEP / time_constant) if time_constant > 0 else 0.0
    white = std * rng.standard_normal((FLIGHT_SAMPLES, *shape))
    out = np.empty_like(white)
    out[0] = white[0]
    for k in range(1, FLIGHT_SAMPLES):
        out[k] = rho * out[k - 1] + np.sqrt(1 - rho**2) * white[k]
    return out


def _flight(seed: int, time_constant: float, damage: str = ""):
    """(identified payload, the covariance of independent samples) of a smooth 4 s flight
    turning about all axes, with tension, direction and motion errors as stated but
    correlated over ``time_constant`` [s]; ``damage``: 'gust' (robot 1's tension 0.5 N off
    for 0.2 s from 2 s, unflagged), 'reacquired' (its tension errors 3 times larger for 1 s
    from 2 s, as after a mocap gap)."""
    rng = np.random.default_rng(seed)
    phase = rng.uniform(0.0, 2 * np.pi, 12)
    identification = InFlightIdentification(RHO_L, direction_floor=0.0, linearization=TRUTH)
    errors = [
        _correlated(rng, shape, time_constant, std)
        for shape, std in [((3,), TENSION_STD), ((3, 3), CABLE_STD), ((3,), ACCEL_STD)]
        + [((3,), ANGULAR_ACCEL_STD)]
    ]
    damaged = slice(200, 220 if damage == "gust" else 300)
    if damage == "gust":
        errors[0][damaged, 0] += 0.5
    elif damage == "reacquired":
        errors[0][damaged, 0] *= 3.0
    motion_covariance = np.diag([ACCEL_STD**2] * 3 + [ANGULAR_ACCEL_STD**2] * 3)
    to_tensions = np.linalg.pinv(identification._map)
    for k in range(FLIGHT_SAMPLES):
        t = k * FLIGHT_STEP
        R = exp3(np.array([0.3, 0.3, 1.5]) * np.sin(np.array([1.3, 0.9, 0.4]) * t + phase[:3]))
        rates = np.array([2.1, 1.7, 1.1])
        Omega = 2 * np.sin(rates * t + phase[3:6])
        Omega_dot = 2 * rates * np.cos(rates * t + phase[3:6])
        v = 0.3 * np.sin(np.array([0.7, 0.8, 0.6]) * t + phase[6:9])
        accel = np.sin(np.array([1.5, 1.2, 0.9]) * t + phase[9:12])
        v_b = R.T @ v
        dV = np.concatenate([Omega_dot, R.T @ accel - np.cross(Omega, v_b)])
        wrench = body_regressor(np.r_[Omega, v_b], dV, R.T @ [0.0, 0.0, -9.81]) @ TRUTH.vec
        mu = (to_tensions @ wrench).reshape(3, 3) @ R.T
        tension = np.linalg.norm(mu, axis=1)
        e_tension, e_xi, e_accel, e_angular = (e[k] for e in errors)
        identification.add(
            R, tension + e_tension, -mu / tension[:, None] + e_xi, CABLE_COVARIANCES, v,
            accel + e_accel, Omega, Omega_dot + e_angular, motion_covariance,
        )  # fmt: skip
    result = identification.solve()
    if damage == "gust":
        assert identification.rejected >= 20  # the gust's clusters left out
    return result, np.linalg.inv(identification.data.information)


@pytest.mark.parametrize("time_constant", [0.0, 0.1])
def test_in_flight_covariance_covers_the_error_when_the_samples_are_correlated(time_constant):
    """Coverage over 6 flights (60 z-scores): a filter's tensions and motion err smoothly
    in time (time constant 0.1 s), so that 400 samples carry far less information than 400
    independent ones. The covariance of independent samples is then overconfident (RMS
    |error|/sigma above 3); the stated one (Newey-West over 0.2 s clusters, CR1) covers the
    error (RMS 0.6-1.5), and it stays so on white errors, where both agree."""
    stated, independent = [], []
    for seed in range(6):
        result, naive = _flight(seed, time_constant)
        error = result.params.vec - TRUTH.vec
        stated.append(error / result.std)
        independent.append(error / np.sqrt(np.diag(naive)))
    rms = [float(np.sqrt(np.mean(np.square(z)))) for z in (stated, independent)]
    print(f"time constant {time_constant} s: RMS z stated {rms[0]:.2f}, independent {rms[1]:.2f}")
    assert 0.6 < rms[0] < 1.5
    assert np.abs(stated).max() < 4.5
    if time_constant > 0:
        assert rms[1] > 3.0


@pytest.mark.parametrize("damage", ["gust", "reacquired"])
def test_in_flight_covariance_covers_the_error_on_damaged_tensions(damage):
    """Coverage over 6 flights as above (errors correlated over 0.1 s), one robot's tension
    damaged without a flag: a gust (0.5 N off for 0.2 s, 25 stated sigmas: its clusters are
    left out as outliers) or 3 times noisier for 1 s (a UKF reacquiring after a mocap gap,
    kept): RMS |error|/sigma within 0.6-1.5 (1.47 and 1.41, largest 5.0 and 4.7 of 60; the
    clean flights' 1.35: the residuals' covariance, estimated from 4 s of errors correlated
    over 0.1 s, is a little optimistic; MuJoCo: bench_aerial_estimation.py --identify-seeds
    6 --damage ...)."""
    z = []
    for seed in range(6):
        result, _ = _flight(seed, 0.1, damage)
        z.append((result.params.vec - TRUTH.vec) / result.std)
    rms = float(np.sqrt(np.mean(np.square(z))))
    print(f"{damage}: RMS z {rms:.2f}, largest {np.abs(z).max():.2f}")
    assert 0.6 < rms < 1.5


W_LINEAR, W_ANGULAR = 2 * np.pi * np.array([1.0, 0.7, 0.5]), 2 * np.pi * np.array([0.6, 0.9, 1.0])


def _truth(t: float):
    """v, accel (in I), Omega, Omega_dot (in L) of 0.5-1 Hz sinusoids of amplitude 1."""
    return (
        np.cos(W_LINEAR * t) / W_LINEAR, -np.sin(W_LINEAR * t),
        np.sin(W_ANGULAR * t) / W_ANGULAR, np.cos(W_ANGULAR * t),
    )  # fmt: skip


def _paired_errors(online, rate: float, noise_seed: int | None = None):
    """(errors of (v, accel, Omega, Omega_dot) paired with each sample's tension (n, 4, 3),
    their stated accelerations' sigmas (n, 6)), but for the 0.5 s after the gap (where the
    filter's transient is in its covariance), of the sinusoids through the real motion
    filter, pose and twist at ``rate`` Hz with the filter's own noise levels if
    ``noise_seed``, a gap in the mocap at 8-8.3 s; a team estimate at each step after 4 s."""
    from types import SimpleNamespace

    from inertia_estimation_ros.core.aerial.payload_motion import PayloadMotionFilter

    motion, paired = PayloadMotionFilter(), []
    online.identification.add = lambda R, tension, xi, cov, *kinematics: paired.append(
        (tension[0], kinematics[:4], np.sqrt(np.diag(kinematics[4])))
    )
    rng, n = np.random.default_rng(noise_seed), motion.noise
    scale = 0.0 if noise_seed is None else 1.0
    for t in np.arange(0.0, 12.0, 1.0 / rate):
        v, _, Omega, _ = _truth(t)
        if not 8.0 < t < 8.3:
            position = np.sin(W_LINEAR * t) / W_LINEAR**2
            motion.update_pose(t, position + scale * n.position * rng.standard_normal(3))
            motion.update_twist(
                t, v + scale * n.velocity * rng.standard_normal(3),
                Omega + scale * n.rate * rng.standard_normal(3),
            )  # fmt: skip
        if t > 4.0:  # the filter at its steady state
            estimate = SimpleNamespace(
                valid=True, degraded=False, stamp=t, payload_R=np.eye(3), tension=np.full(3, t),
                xi=np.tile(-E3, (3, 1)), cable_covariance=CABLE_COVARIANCES,
            )  # fmt: skip
            assert online.add(estimate, motion)
    errors = np.array([np.subtract(got, _truth(t)) for t, got, _ in paired])
    settled = np.array([not 8.0 < t < 8.8 for t, *_ in paired])  # the gap and its transient
    return errors[settled], np.array([sigma for *_, sigma in paired])[settled]


@pytest.mark.parametrize("smoothing_lag", [0.0, 0.2])
@pytest.mark.parametrize("rate", [100.0, 50.0])
def test_online_samples_pair_each_tension_with_the_motion_of_its_own_instant(rate, smoothing_lag):
    """The payload motion filter's accelerations lag the truth (about 51 ms for x_ddot and
    40 ms for Omega_dot at 100 Hz). Sinusoids of 0.5-1 Hz through the real filter, the
    tension of each team estimate stamping its instant: every identification sample pairs
    that tension with the acceleration, angular acceleration, velocity and rate of the same
    instant, within 3 % of the accelerations' amplitudes (taken as they stand the error is
    about 30 %), filtered and read ``lag`` later (smoothing_lag 0) or smoothed over 0.2 s.
    The samples with a gap of the mocap (8-8.3 s) between their instant and the end of
    their wait are dropped."""
    online = _online(1.0, smoothing_lag)
    errors, _ = _paired_errors(online, rate)
    assert 0.3 * rate <= online.dropped <= 0.55 * rate and len(errors) > 6.5 * rate
    worst = np.abs(errors).max(axis=0)
    print(f"{rate:g} Hz: largest errors v, a, Omega, Omega_dot", worst.max(axis=1).round(4))
    assert np.all(worst[[1, 3]] < 0.03)
    assert np.all(worst[[0, 2]] < 0.02)  # velocity and rate: the filters' own errors


def test_smoothed_accelerations_err_less_than_the_filtered_ones_and_their_sigma_covers_it():
    """With the mocap's noise (the filter's own levels, 100 Hz), the accelerations paired
    with the tensions err less smoothed over 0.2 s (RTS over the filter's posteriors) than
    filtered and read ``lag`` later, and the smoothed ones' stated sigma shrinks with them:
    RMS error/sigma as the filter's (both about 0.5, cautious, on sinusoids smoother than
    the white-jerk model), not overconfident."""
    rms, coverage = {}, {}
    for lag in (0.0, 0.2):
        errors, sigma = _paired_errors(_online(1.0, lag), 100.0, noise_seed=3)
        accelerations = np.hstack([errors[:, 1], errors[:, 3]])
        rms[lag] = np.sqrt(np.mean(accelerations**2, axis=0))
        coverage[lag] = np.sqrt(np.mean((accelerations / sigma) ** 2, axis=0))
        print(f"lag {lag}: RMS error {rms[lag].round(4)}, error/sigma {coverage[lag].round(2)}")
    assert np.all(rms[0.2] < 0.8 * rms[0.0])
    assert np.all((0.3 < coverage[0.2]) & (coverage[0.2] < 1.5))
    assert np.all(np.abs(coverage[0.2] / coverage[0.0] - 1.0) < 0.3)


def test_samples_still_waiting_when_the_estimates_stop_are_formed_at_the_next_solve():
    """A contact stops the estimates while the mocap goes on: the last 0.2 s of samples,
    still waiting for their smoothing lag, are formed by the next ``solve`` (if it comes
    within the motion filter's history, 2 s; else they are dropped and counted)."""
    from types import SimpleNamespace

    from inertia_estimation_ros.core.aerial.payload_motion import PayloadMotionFilter

    online, motion, formed = _online(1.0, 0.2), PayloadMotionFilter(), []
    online.identification.add = lambda *sample: formed.append(sample)
    online.identification.solve_with_prior = lambda *_: formed.append("solved") or 1 / 0
    for t in np.arange(0.0, 3.5, 0.01):  # mocap for 1.5 s more (within its history)
        v, _, Omega, _ = _truth(t)
        motion.update_pose(t, np.sin(W_LINEAR * t) / W_LINEAR**2)
        motion.update_twist(t, v, Omega)
        if 1.0 < t < 2.0:
            estimate = SimpleNamespace(
                valid=True, degraded=False, stamp=t, payload_R=np.eye(3), tension=np.ones(3),
                xi=np.tile(-E3, (3, 1)), cable_covariance=CABLE_COVARIANCES,
            )  # fmt: skip
            assert online.add(estimate, motion)
    waiting = len(formed)
    with pytest.raises(ZeroDivisionError):
        online.solve()
    assert 78 <= waiting <= 80 and len(formed) == 100 and formed[-1] == "solved"
    assert online.dropped == 0


def test_a_mujoco_flight_with_noisy_accelerations_keeps_the_com_height():
    """MuJoCo, paper002_aerial's 6 s waypoint flight (no person): samples from the
    simulator's tensions, cable directions and attitude, its acceleration (the derivative
    of its velocity) with white noise of 0.03 m/s^2 and 0.1 rad/s^2 (the smoothed motion's
    errors on such flights), stated as the UKFs and the motion filter state them (tension
    0.06 N, direction 1e-3 rad; 0.058 m/s^2, 0.21 rad/s^2). Weighted by the stated
    covariances, the acceleration noise (a force residual m da with no moment) pulls the
    CoM's height more than 5 mm low (the mechanism of the UKF runs' bias); weighted by the
    residuals' covariance (the estimator) it stays within 2 mm and 3 sigma of the truth."""
    import sys
    from pathlib import Path

    import yaml

    from inertia_estimation_ros.core.aerial.identification import prior_information
    from inertia_estimation_ros.core.cooperative.payload_properties import payload_properties
    from inertia_estimation_ros.ros.graph import data_file

    sys.path.insert(0, str(Path(__file__).parent))
    from aerial_feed import run_scenario

    config = yaml.safe_load(data_file("paper002_aerial.yaml", "config/scenarios").read_text())
    scenario, r = run_scenario(config | {"name": "identify", "duration": 6.0, "human": {}})
    payload = scenario.ground_truth_document()["payload"]
    nominal = InertialParameters.from_mass_com_inertia(
        0.8 * payload["mass"], np.zeros(3), np.diag(payload["inertia_diagonal"])
    )
    fits = {"stated": InFlightIdentification(RHO_L, linearization=nominal, min_samples=10**9)}
    fits["residuals"] = InFlightIdentification(RHO_L, linearization=nominal)
    rng = np.random.default_rng(1)
    accel = np.gradient(r.payload_v, r.time, axis=0) + 0.03 * rng.standard_normal((len(r.time), 3))
    Omega_dot = np.gradient(r.payload_Omega, r.time, axis=0)
    Omega_dot += 0.1 * rng.standard_normal(Omega_dot.shape)
    cables = np.tile(np.diag([1e-6] * 3 + [0.06**2]), (3, 1, 1))
    motion = np.diag([0.058**2] * 3 + [0.21**2] * 3)
    xi = r.xi()
    for q in range(100, len(r.time)):
        sample = (r.payload_R[q], r.tension[q], xi[q], cables, r.payload_v[q], accel[q])
        for fit in fits.values():
            fit.add(*sample, r.payload_Omega[q], Omega_dot[q], motion)
    height = {}
    for name, fit in fits.items():
        result = fit.solve_with_prior(nominal, prior_information(nominal))
        props = payload_properties(result.params.vec, result.covariance)
        height[name] = (props.p_s_c[2], np.sqrt(props.p_s_c_covariance[2, 2]))
        print(name, "CoM height [mm]", np.round(np.array(height[name]) * 1e3, 2))
    assert height["stated"][0] < -0.005
    assert abs(height["residuals"][0]) < 0.002
    assert abs(height["residuals"][0]) < 3 * height["residuals"][1]
