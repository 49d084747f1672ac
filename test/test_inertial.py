"""core.inertial: the 10-vector type, against Pinocchio and analytic bodies."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.inertial import InertialParameters


def test_pinocchio_ordering_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(10):
        I = pin.Inertia.Random()
        body = InertialParameters.from_pinocchio(I.toDynamicParameters())
        assert np.isclose(body.mass, I.mass)
        assert np.allclose(body.com, I.lever)
        assert np.allclose(body.inertia_about_com, I.inertia)
        assert np.allclose(body.to_pinocchio(), I.toDynamicParameters())
        T = sp.exp6(rng.normal(size=6))
        moved = pin.SE3(T[:3, :3].copy(), T[:3, 3].copy()).act(I)
        assert np.allclose(body.transformed(T).to_pinocchio(), moved.toDynamicParameters())


def test_pseudo_inertia_matches_pinocchio():
    I = pin.Inertia.Random()
    body = InertialParameters.from_pinocchio(I.toDynamicParameters())
    J = pin.PseudoInertia.FromInertia(I).toMatrix()
    assert np.allclose(body.pseudo_inertia, J)
    assert np.allclose(InertialParameters.from_pseudo_inertia(J).vec, body.vec)


def test_solid_box_from_point_masses():
    """A dense grid of equal point masses in a box tends to the analytic box inertia."""
    a, b, c, m = 0.4, 0.2, 0.1, 3.0
    n = 40
    grid = np.stack(
        np.meshgrid(*[(np.arange(n) + 0.5) / n - 0.5 for _ in range(3)], indexing="ij"), -1
    ).reshape(-1, 3) * [a, b, c]
    body = InertialParameters.from_point_masses(np.full(len(grid), m / len(grid)), grid + 1.0)
    expected = m / 12 * np.diag([b**2 + c**2, a**2 + c**2, a**2 + b**2])
    assert np.isclose(body.mass, m) and np.allclose(body.com, 1.0)
    assert np.allclose(body.inertia_about_com, expected, rtol=2e-3)
    assert body.is_consistent()


def test_principal_axes_are_sorted_and_proper():
    R = sp.exp6([0.3, -1.0, 2.0, 0, 0, 0])[:3, :3]
    body = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), R @ np.diag([3, 1, 2]) @ R.T)
    moments, R_b_c = body.principal_axes()
    assert np.allclose(moments, [1, 2, 3]) and np.isclose(np.linalg.det(R_b_c), 1.0)
    assert np.allclose(R_b_c @ np.diag(moments) @ R_b_c.T, body.inertia_about_com)


def test_triangle_inequality_case_from_the_lmi_notes():
    """I_C = diag(1, 1, 3) is positive definite but violates J1 + J2 >= J3."""
    body = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
    assert body.is_semi_consistent()
    assert not body.satisfies_triangle_inequalities()
    assert not body.is_consistent()
