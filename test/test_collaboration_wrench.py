"""The human (external) wrench on a ground team's payload from the estimated model (issue 14,
item 1): exact on clean data, within its stated covariance on noisy data and a noisy model,
observability of force-only teams, refusals."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.stats import chi2

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.collaboration.human_wrench import (
    PayloadModel,
    SensorNoise,
    WrenchUnavailableError,
    external_wrench,
)
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.sim.analytic import (
    HandPush,
    Multisine,
    NoiseModel,
    PayloadMotion,
    Team,
    net_wrench,
    ring_team,
    simulate,
    synchronized_sets,
)

RATE = 100.0
PUSH = HandPush(((0.5, 2.5),), force_w=(6.0, -4.0, 3.0), point_s=(0.2, 0.1, 0.05), ramp=0.2)
PUSH_MOMENT = HandPush(((0.5, 2.5),), force_w=(6.0, -4.0, 3.0), moment_w=(0.5, 1.0, -0.8))


def _payload(T_s_p: np.ndarray) -> InertialParameters:
    I_p = np.diag([0.4, 0.6, 0.9])
    body = InertialParameters.from_mass_com_inertia(5.0, np.array([0.05, -0.03, 0.02]), I_p)
    R, p = T_s_p[:3, :3], T_s_p[:3, 3]
    com = R @ body.com + p
    return InertialParameters.from_mass_com_inertia(5.0, com, R @ body.inertia_about_com @ R.T)


def _motion(rng: np.random.Generator) -> PayloadMotion:
    return PayloadMotion(
        Multisine.random(rng, np.deg2rad([20, 15, 15]), (0.2, 0.8)),
        Multisine.random(rng, [0.2, 0.2, 0.1], (0.2, 0.8)),
    )


def _model(team: Team, payload: InertialParameters, **overrides: object) -> PayloadModel:
    values = dict(
        reference_id=team.reference_id,
        theta=payload.vec.copy(),
        theta_covariance=np.zeros((10, 10)),
        T_s_i=dict(team.T_s_i),
        grasp_covariance={r: np.zeros((6, 6)) for r in team.robot_ids},
        mass_valid=True,
        com_valid=True,
        inertia_valid=True,
    )
    values.update(overrides)
    return PayloadModel(**values)


def _truth(
    push: HandPush, motion: PayloadMotion, t: np.ndarray, payload: InertialParameters
) -> np.ndarray:
    """The applied wrench about the CoM, axes of {s}, at the times t."""
    T_w_s, V_s, dV_s = motion.evaluate(t)
    F_s = push(t, T_w_s, net_wrench(payload, V_s, dV_s, np.zeros((len(t), 3))))
    T_s_c = sp.transform(np.eye(3), payload.com)
    return F_s @ sp.adjoint(T_s_c)


@pytest.mark.parametrize("moment_capable", [True, False])
def test_exact_on_clean_data(moment_capable: bool) -> None:
    rng = np.random.default_rng(1)
    team, T_s_p = ring_team(3, rng, moment_capable=moment_capable)
    payload = _payload(T_s_p)
    push = PUSH_MOMENT if moment_capable else PUSH
    motion, t = _motion(rng), np.arange(0, 3, 1 / RATE)
    sim = simulate(team, payload, motion, t, external=push)
    model = _model(team, payload)
    truth = _truth(push, motion, t, payload)
    sets = synchronized_sets(sim.exact)
    for k in range(0, len(sets), 17):
        estimate = external_wrench(sets[k], model)
        np.testing.assert_allclose(estimate.wrench, truth[k], atol=1e-9)
        assert estimate.observable.all()
        assert len(estimate.unobservable_directions) == 0
        np.testing.assert_allclose(estimate.covariance, 0.0, atol=1e-12)


def test_two_gimbals_cannot_measure_the_moment_about_their_line() -> None:
    """Two force-only grasps: the moment about the line through them reaches no robot; the
    wrench is still exact (through the inertia), but observable only with a valid inertia."""
    rng = np.random.default_rng(2)
    T_s_2 = sp.transform(np.eye(3), [0.8, 0.0, 0.0])
    team = Team(("a", "b"), "a", {"a": np.eye(4), "b": T_s_2}, {"a": False, "b": False})
    payload = InertialParameters.from_mass_com_inertia(
        4.0, np.array([0.4, 0.0, 0.0]), np.diag([0.05, 0.3, 0.3])
    )

    def human(t: np.ndarray, T_w_s: np.ndarray, inertial_s: np.ndarray) -> np.ndarray:
        """The push, and the moment about the line that the gimbals cannot apply (so the
        prescribed motion is physical: the CoM is on that line, gravity has no moment)."""
        w = PUSH(t, T_w_s, inertial_s)
        w[:, 0] = inertial_s[:, 0]
        return w

    motion, t = _motion(rng), np.arange(0, 2, 1 / RATE)
    sim = simulate(team, payload, motion, t, external=human)
    sample = synchronized_sets(sim.exact)[100]
    truth = _truth(human, motion, t, payload)[100]
    valid = external_wrench(sample, _model(team, payload))
    np.testing.assert_allclose(valid.wrench, truth, atol=1e-9)
    assert valid.observable.all()
    np.testing.assert_allclose(np.abs(valid.unobservable_directions), [[1, 0, 0, 0, 0, 0]])
    without_inertia = external_wrench(sample, _model(team, payload, inertia_valid=False))
    assert list(without_inertia.observable) == [False, True, True, True, True, True]


def test_covariance_covers_the_error_on_noisy_data_and_model() -> None:
    """Sensor noise, a parameter vector and grasps drawn from their stated covariances: the
    chi-square of the error over runs matches 6 degrees of freedom, and ``contact`` (the
    published flag) rarely fires without a push and fires with one."""
    rng = np.random.default_rng(3)
    team, T_s_p = ring_team(3, rng, moment_capable=True)
    payload = _payload(T_s_p)
    noise = NoiseModel(
        force_std=0.3, moment_std=0.03, angular_acceleration_std=0.2, linear_acceleration_std=0.1
    )
    levels = SensorNoise(moment=0.03, force=0.3, angular_acceleration=0.2, linear_acceleration=0.1)
    theta_std = np.array([0.05, 0.004, 0.004, 0.004, 0.01, 0.003, 0.003, 0.01, 0.003, 0.01])
    grasp_std = np.r_[np.full(3, 2e-3), np.full(3, 2e-3)]
    statistics, contact = [], {False: [], True: []}
    for _ in range(24):
        motion, t = _motion(rng), np.arange(0.0, 3.0, 0.2)  # samples in and out of the push
        sim = simulate(team, payload, motion, t, external=PUSH, noise=noise, rng=rng)
        grasps = {
            r: sp.transform(
                sp.exp3(rng.normal(0, grasp_std[:3])) @ T[:3, :3],
                T[:3, 3] + rng.normal(0, grasp_std[3:]),
            )
            if r != team.reference_id
            else T
            for r, T in team.T_s_i.items()
        }
        model = _model(
            team,
            payload,
            theta=payload.vec + rng.normal(0, theta_std),
            theta_covariance=np.diag(theta_std**2),
            T_s_i=grasps,
            grasp_covariance={r: np.diag(grasp_std**2) for r in team.robot_ids},
        )
        truth = _truth(PUSH, motion, t, payload)
        sets = synchronized_sets(sim.measured)
        for k in range(len(sets)):
            estimate = external_wrench(sets[k], model, levels)
            statistics.append(estimate.chi2(truth[k]))
            contact[bool(np.any(truth[k]))].append(estimate.contact())
    statistics = np.array(statistics)
    rates = [np.mean(contact[False]), np.mean(contact[True])]
    print(f"contact: {rates[0]:.3f} without a push, {rates[1]:.3f} with")
    assert rates[0] < 0.05 and rates[1] > 0.9
    mean = statistics.mean()
    print(f"chi-square over {len(statistics)} samples: mean {mean:.2f} (6 expected)")
    assert 6 * 0.8 < mean < 6 * 1.25, mean
    assert np.mean(statistics < chi2.ppf(0.95, 6)) > 0.88


def test_refusals_name_the_cause() -> None:
    rng = np.random.default_rng(4)
    team, T_s_p = ring_team(3, rng)
    payload = _payload(T_s_p)
    sim = simulate(team, payload, _motion(rng), np.arange(0, 0.2, 1 / RATE))
    sample = synchronized_sets(sim.exact)[5]
    with pytest.raises(WrenchUnavailableError, match="no valid mass and CoM"):
        external_wrench(sample, _model(team, payload, mass_valid=False))
    late = dict(sample)
    late["robot_2"] = synchronized_sets(sim.exact)[15]["robot_2"]
    with pytest.raises(WrenchUnavailableError, match="apart"):
        external_wrench(late, _model(team, payload))
    with pytest.raises(WrenchUnavailableError, match="no sample from robot_3"):
        external_wrench({r: s for r, s in sample.items() if r != "robot_3"}, _model(team, payload))
    with pytest.raises(ValueError, match="finite and >= 0"):
        SensorNoise(force=-1.0)


@pytest.mark.parametrize(
    ("moment_capable", "angular", "linear"),
    [(True, 0.3, 0.2), (False, 0.3, 0.0), (False, 0.0, 0.24)],
)
def test_the_stated_covariance_of_the_twist_derivative_noise_is_its_spread(
    moment_capable: bool, angular: float, linear: float
) -> None:
    """Noise on the robots' twist derivatives alone (exact model, wrenches and twists): the
    spread of the wrench over 3000 draws is the stated covariance (whitened, its eigenvalues
    within sampling error of 1), for the linear noise (m a, and the moment of m a about the
    CoM) and the angular one (the inertia's I dw, and m dw x c through the consensus) each
    alone, and for force-only robots. Before 2026-11-26 the payload motion's consensus in the
    stated covariance mapped each robot with Ad(T_s_i) instead of Ad(T_i_s)."""
    rng = np.random.default_rng(9)
    team, T_s_p = ring_team(3, rng, moment_capable=moment_capable)
    payload = _payload(T_s_p)
    sim = simulate(team, payload, _motion(rng), np.arange(0, 0.5, 1 / RATE), external=PUSH)
    exact = synchronized_sets(sim.exact)[30]
    levels = SensorNoise(angular_acceleration=angular, linear_acceleration=linear)
    std = np.repeat([levels.angular_acceleration, levels.linear_acceleration], 3)
    model = _model(team, payload)
    stated = external_wrench(exact, model, levels).covariance
    wrenches = np.array(
        [
            external_wrench(
                {
                    r: dataclasses.replace(s, dV_i=s.dV_i + rng.normal(0.0, std))
                    for r, s in exact.items()
                },
                model,
                levels,
            ).wrench
            for _ in range(3000)
        ]
    )
    # the stated covariance is singular along what the noise does not reach (a linear noise
    # alone leaves the inertia's moment out): whitened within its range
    values, vectors = np.linalg.eigh(stated)
    reached = values > 1e-9 * values.max()
    whitening = (vectors[:, reached] / np.sqrt(values[reached])).T
    spread = whitening @ np.cov(wrenches.T) @ whitening.T
    eigenvalues = np.linalg.eigvalsh(spread)
    outside = vectors[:, ~reached].T @ (wrenches - wrenches.mean(axis=0)).T
    assert np.abs(outside).max(initial=0.0) < 1e-9 * np.sqrt(values.max())
    print(f"whitened spread's eigenvalues {eigenvalues.round(3)}")
    assert 0.85 < eigenvalues.min() and eigenvalues.max() < 1.15


def test_the_chi_square_bounds_are_scipys_chi2_isf_bit_for_bit() -> None:
    """The contact and consistency bounds take scipy.special's ``chdtri`` (what
    ``cooperative.external_wrench.significance`` uses; scipy.stats stays unloaded): equal to
    ``chi2.isf`` to the last bit, and to the former ``chi2.ppf(1 - a)`` within a few ulp (its
    1 - a rounds before the lower tail is inverted)."""
    from inertia_estimation_ros.core.collaboration.human_wrench import _chi_square_bound

    for false_alarm in (1e-3, 0.01, 0.05):
        for dof in (1, 2, 3, 6, 12, 600):
            bound = _chi_square_bound(false_alarm, dof)
            assert bound == float(chi2.isf(false_alarm, dof))
            former = float(chi2.ppf(1.0 - false_alarm, dof))
            assert abs(bound - former) <= 64 * np.spacing(former)


def test_the_wrench_is_stamped_with_the_instant_its_content_describes() -> None:
    """``delay``: the samples' content is that much older than their stamps (a robot node's
    causal low-pass): the wrench's stamp says so; the wrench itself is the same."""
    rng = np.random.default_rng(7)
    team, T_s_p = ring_team(3, rng)
    payload = _payload(T_s_p)
    sim = simulate(team, payload, _motion(rng), np.arange(0, 0.2, 1 / RATE), external=PUSH)
    samples, model = synchronized_sets(sim.exact)[5], _model(team, payload)
    fresh = external_wrench(samples, model)
    late = external_wrench(samples, model, delay=0.13)
    assert late.stamp == fresh.stamp - 0.13
    assert np.array_equal(late.wrench, fresh.wrench)
    assert np.array_equal(late.covariance, fresh.covariance)


def test_the_coordinators_output_states_the_declared_acceleration_noise() -> None:
    """``ExternalWrenchOutput``'s sensor noise: the residual RMS shared among the robots, the
    poses' quantization, and the declared ``acceleration_noise_*`` (the wrench checks'
    parameters), 0 for a parameter holder without them."""
    from types import SimpleNamespace

    from inertia_estimation_ros.ros.external_wrench_output import ExternalWrenchOutput

    estimate = SimpleNamespace(grasps=[0] * 4, residual_rms_moment=0.2, residual_rms_force=1.0)
    params = SimpleNamespace(
        pose_angle_resolution=1e-3, acceleration_noise_angular=0.5, acceleration_noise_linear=0.2
    )
    noise = ExternalWrenchOutput._noise(estimate, params)
    assert noise == SensorNoise(0.1, 0.5, 0.5, 0.2, 1e-3 / np.sqrt(12.0))
    bare = ExternalWrenchOutput._noise(estimate, SimpleNamespace())
    assert bare == SensorNoise(0.1, 0.5)
