"""Payload identification in flight from cable tensions (core/aerial/identification.py)."""

from __future__ import annotations

import numpy as np
import pytest

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
    identification = InFlightIdentification(RHO_L, direction_floor=0.0)  # the noise as stated
    for sample in _samples(rng, 400, rotate=True):
        identification.add(*sample)
    result = identification.solve()
    z = (result.params.vec - TRUTH.vec) / result.std
    print("z", z.round(2), "mass", result.params.mass, "com", result.params.com.round(4))
    assert np.all(np.abs(z) < 4.0)
    assert 0.5 < np.sqrt(np.mean(z**2)) < 1.5
    assert result.samples == 400


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
