"""core.spatial against Pinocchio's SE3 (an independent implementation) and its own algebra."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import spatial as sp

vec6 = arrays(float, 6, elements=st.floats(-3.0, 3.0, allow_nan=False))


def random_pose(rng: np.random.Generator) -> np.ndarray:
    return sp.exp6(rng.normal(size=6))


def pin_se3(T: np.ndarray) -> pin.SE3:
    return pin.SE3(T[:3, :3].copy(), T[:3, 3].copy())


def test_skew_is_the_cross_product():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(2, 3))
    assert np.allclose(sp.skew(x) @ y, np.cross(x, y))
    assert np.allclose(sp.unskew(sp.skew(x)), x)
    stacked = rng.normal(size=(4, 3))
    assert np.allclose(sp.skew(stacked)[2], sp.skew(stacked[2]))


def test_adjoint_matches_pinocchio_motion_action():
    rng = np.random.default_rng(2)
    for _ in range(20):
        T, V = random_pose(rng), rng.normal(size=6)
        expected = pin_se3(T).act(pin.Motion(V[3:], V[:3]))
        assert np.allclose(sp.twist_to(T, V), np.r_[expected.angular, expected.linear])


def test_wrench_transform_matches_pinocchio_force_action():
    """F_a = Ad(T_b_a)^T F_b equals Pinocchio's T_a_b.act(F_b)."""
    rng = np.random.default_rng(3)
    for _ in range(20):
        T_a_b, F_b = random_pose(rng), rng.normal(size=6)
        expected = pin_se3(T_a_b).act(pin.Force(F_b[3:], F_b[:3]))
        F_a = sp.wrench_to(sp.inverse(T_a_b), F_b)
        assert np.allclose(F_a, np.r_[expected.angular, expected.linear])


def test_exp_log_match_pinocchio():
    rng = np.random.default_rng(4)
    for _ in range(20):
        xi = rng.normal(size=6)
        T = sp.exp6(xi)
        assert np.allclose(T, pin.exp6(pin.Motion(xi[3:], xi[:3])).homogeneous)
        assert np.allclose(sp.log6(T), xi)


def test_rotation_exp_log_match_pinocchio_from_zero_to_pi():
    """Rodrigues and its inverse (closed form, scipy within 1e-3 of pi) on both sides of
    each branch's threshold."""
    rng = np.random.default_rng(5)
    angles = [0.0, 1e-9, 9.9e-7, 1.01e-6, 1e-3, 0.5, 2.0, np.pi - 1.01e-3, np.pi - 0.99e-3]
    for angle in angles + [np.pi - 1e-7]:
        axis = rng.normal(size=3)
        phi = angle * axis / np.linalg.norm(axis)
        R = sp.exp3(phi)
        np.testing.assert_allclose(R, pin.exp3(phi), atol=1e-14)
        np.testing.assert_allclose(sp.rotation_angle(R), angle, atol=1e-12)
        if angle in angles:  # at pi - 1e-7, pinocchio's log3 loses half the digits
            np.testing.assert_allclose(sp.log3(R), pin.log3(R), atol=1e-12)
            np.testing.assert_allclose(sp.log3(R), phi, atol=1e-12)
        else:
            np.testing.assert_allclose(np.abs(sp.log3(R)), np.abs(phi), atol=1e-9)


@given(vec6, vec6, vec6)
def test_power_is_frame_independent(xi, V_b, F_b):
    """F_b . V_b = F_a . V_a: the defining property of the adjoint/co-adjoint pair."""
    T_a_b = sp.exp6(xi)
    V_a = sp.twist_to(T_a_b, V_b)
    F_a = sp.wrench_to(sp.inverse(T_a_b), F_b)
    assert np.isclose(F_a @ V_a, F_b @ V_b, atol=1e-9 * (1 + np.abs(F_b).sum() * np.abs(V_b).sum()))


@given(vec6, vec6)
def test_adjoint_is_a_homomorphism(x1, x2):
    T1, T2 = sp.exp6(x1), sp.exp6(x2)
    assert np.allclose(sp.adjoint(T1 @ T2), sp.adjoint(T1) @ sp.adjoint(T2), atol=1e-9)
    assert np.allclose(sp.adjoint(sp.inverse(T1)), np.linalg.inv(sp.adjoint(T1)), atol=1e-8)


def test_body_twist_from_pose_derivative():
    """[V_b] = T^-1 dT/dt for T(t) = T0 exp([V] t), checked by finite differences."""
    rng = np.random.default_rng(5)
    T0, V = random_pose(rng), rng.normal(size=6)
    dt = 1e-6
    dT = (T0 @ sp.exp6(V * dt) - T0 @ sp.exp6(-V * dt)) / (2 * dt)
    assert np.allclose(sp.vee(sp.inverse(T0) @ dT), V, atol=1e-6)
    assert np.allclose(sp.ad(V) @ V, 0.0)


def test_quaternion_is_scipys_bit_for_bit():
    """Random rotations, products of two (orthonormal to round-off), the half turns and the
    identity (every branch of the method); scipy's own path for the rest."""
    rotations = Rotation.random(20000, random_state=3).as_matrix()
    products = rotations[:10000] @ rotations[10000:]
    half_turns = [np.diag(d) for d in ([1.0, -1, -1], [-1.0, 1, -1], [-1.0, -1, 1])]
    for R in [*rotations, *products, *half_turns, np.eye(3)]:
        assert sp.quaternion(R) == tuple(Rotation.from_matrix(R).as_quat().tolist())
    skewed = rotations[0] + 1e-6  # scipy orthonormalizes it first (SVD)
    assert sp.quaternion(skewed) == tuple(Rotation.from_matrix(skewed).as_quat().tolist())
    # det < 0: scipy >= 1.12 refuses it, scipy 1.11 (Ubuntu 24.04's) takes a rotation near it
    assert _or_error(sp.quaternion, -np.eye(3)) == _or_error(_scipys_quaternion, -np.eye(3))


def _scipys_quaternion(R: np.ndarray) -> tuple[float, ...]:
    return tuple(Rotation.from_matrix(R).as_quat().tolist())


def _or_error(f, R: np.ndarray) -> object:
    """f(R), or the type of the ValueError it raised."""
    try:
        return f(R)
    except ValueError as error:
        return type(error)
