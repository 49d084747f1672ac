"""identification.point_masses: paper 001's PMD (Problem 1, Eqs. 4, 8, 9)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.identification import (
    PointMassDiscretization,
    composite_object,
    dynamism,
    full_model_weight,
    point_mass_basis,
)
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor

PITCH = (1.0 / 0.04) ** (1.0 / 3.0) * 1e-2  # 0.04 points per cm^3 (paper 001, Sec. VI)


def test_basis_columns_are_unit_point_masses():
    points = np.random.default_rng(0).normal(size=(5, 3))
    masses = np.array([0.1, 0.5, 0.2, 1.0, 0.3])
    expected = InertialParameters.from_point_masses(masses, points).vec
    assert np.allclose(point_mass_basis(points) @ masses, expected)


def test_dynamism_and_weight_follow_eqs_4_and_9():
    """nu = |a|^2 + |alpha|^2 + (|omega| / 0.5)^2; a includes omega x v (paper 001, Eq. 4)."""
    V = np.array([[0.0, 0.0, 1.0, 1.0, 0.0, 0.0]])  # omega = z, v = x: omega x v = (0, 1, 0)
    dV = np.array([[0.0, 2.0, 0.0, 0.0, 0.0, 3.0]])
    nu = dynamism(V, dV)
    assert np.isclose(nu[0], (1.0 + 9.0) + 4.0 + 4.0)
    assert np.isclose(full_model_weight(nu, 300.0)[0], np.tanh(3 * 18.0 / 300.0))
    assert np.isclose(full_model_weight(100.0, 100.0), np.tanh(3.0))  # 99.5 % (paper 001)


def _static_poses(n, rng):
    """Stop-and-go data: the object held still in random orientations."""
    gravity = Rotation.random(n, random_state=rng).apply([0.0, 0.0, -9.81])
    return np.zeros((n, 6)), np.zeros((n, 6)), gravity


def test_stop_and_go_recovers_mass_and_com():
    """Paper 001, Sec. VI: with zero velocity and acceleration, mass and CoM errors < 0.1 %."""
    obj = composite_object("Hammer")
    points = obj.shape.grid(PITCH)
    truth = obj.params
    V, dV, g = _static_poses(40, np.random.default_rng(1))
    F = body_regressor(V, dV, g) @ truth.vec
    pmd = PointMassDiscretization(points, regularization=1e-4)
    pmd.add(V, dV, g, F)
    estimate = pmd.solve()
    assert abs(estimate.mass - truth.mass) / truth.mass < 1e-3
    assert np.all(np.abs(estimate.com - truth.com) / obj.bounding_box < 1e-3)
    assert estimate.is_consistent() and np.all(pmd.masses >= 0)
    assert np.all(obj.shape.contains(points))


def test_exact_point_mass_body_is_recovered_by_the_full_model():
    """If the truth is made of the grid's own point masses and the motion is dynamic
    (w = 1), the full model recovers all ten parameters."""
    rng = np.random.default_rng(2)
    points = composite_object("Empty").shape.grid(2 * PITCH)
    truth = InertialParameters(point_mass_basis(points) @ rng.uniform(0.01, 0.1, len(points)))
    V, dV = rng.normal(size=(2, 60, 6)) * 20.0
    g = np.tile([0.0, 0.0, -9.81], (60, 1))
    pmd = PointMassDiscretization(points, regularization=1e-6)
    pmd.add(V, dV, g, body_regressor(V, dV, g) @ truth.vec)
    assert np.allclose(pmd.solve().vec, truth.vec, rtol=1e-3, atol=1e-6)


def test_streaming_equals_batch():
    rng = np.random.default_rng(3)
    points = composite_object("Tee").shape.grid(PITCH)
    truth = composite_object("Tee").params
    V, dV = rng.normal(size=(2, 30, 6))
    g = np.tile([0.0, -9.81, 0.0], (30, 1))
    F = body_regressor(V, dV, g) @ truth.vec + rng.normal(size=(30, 6)) * 0.01
    batch, stream = PointMassDiscretization(points), PointMassDiscretization(points)
    batch.add(V, dV, g, F)
    for k in range(0, 30, 7):
        stream.add(V[k : k + 7], dV[k : k + 7], g[k : k + 7], F[k : k + 7])
    assert np.allclose(batch.solve().vec, stream.solve().vec, atol=1e-6)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="non-coplanar"):
        PointMassDiscretization(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]))
    pmd = PointMassDiscretization(composite_object("Empty").shape.grid(PITCH))
    with pytest.raises(ValueError, match="no data"):
        pmd.solve()
    with pytest.raises(ValueError, match="NaN"):
        pmd.add(np.full((1, 6), np.nan), np.zeros((1, 6)), [[0, 0, -9.81]], np.zeros((1, 6)))
    pmd.add(np.zeros((2, 6)), np.zeros((2, 6)), [[0, 0, -9.81]] * 2, [[0, 0, 0, 0, 0, -5.0]] * 2)
    with pytest.raises(ValueError, match="ON the object"):
        pmd.solve()
