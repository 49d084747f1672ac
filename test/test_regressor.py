"""core.regressor against pin.bodyRegressor and against Newton-Euler with the spatial inertia."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor, gravity_regressor


def test_matches_pinocchio_body_regressor():
    rng = np.random.default_rng(0)
    for _ in range(50):
        I = pin.Inertia.Random()
        body = InertialParameters.from_pinocchio(I.toDynamicParameters())
        V, dV, g = rng.normal(size=(3, 6))
        g = g[:3]
        Y_pin = pin.bodyRegressor(pin.Motion(V[3:], V[:3]), pin.Motion(dV[3:] - g, dV[:3]))
        F_pin = Y_pin @ I.toDynamicParameters()
        assert np.allclose(body_regressor(V, dV, g) @ body.vec, np.r_[F_pin[3:], F_pin[:3]])


def test_stacks_and_matches_pinocchio_newton_euler():
    """Stacked samples against Pinocchio's Newton-Euler, F = I a + v x* (I v), with the
    spatial inertia built by Pinocchio from mass, CoM and rotational inertia."""
    rng = np.random.default_rng(1)
    mass, com = 2.0, np.array([0.1, 0.2, -0.1])
    R = Rotation.from_rotvec([0.4, -0.2, 0.9]).as_matrix()
    I_c = R @ np.diag([0.1, 0.2, 0.25]) @ R.T
    body = InertialParameters.from_mass_com_inertia(mass, com, I_c)
    inertia = pin.Inertia(mass, com, I_c)
    V, dV = rng.normal(size=(2, 7, 6))
    g = np.array([0.0, 0.0, -9.81])
    Y = body_regressor(V, dV, g)
    assert Y.shape == (7, 6, 10)
    for k in range(7):
        v, a = pin.Motion(V[k, 3:], V[k, :3]), pin.Motion(dV[k, 3:] - g, dV[k, :3])
        F = (inertia * a).vector + inertia.vxiv(v).vector  # linear first
        np.testing.assert_allclose(Y[k] @ body.vec, np.r_[F[3:], F[:3]], atol=1e-12)


def test_gravity_regressor_is_the_static_limit():
    g = np.array([0.5, -1.0, -9.7])
    body = InertialParameters.from_mass_com_inertia(1.5, [0.3, 0.0, 0.1], np.eye(3) * 0.01)
    static = body_regressor(np.zeros(6), np.zeros(6), g) @ body.vec
    assert np.allclose(gravity_regressor(g) @ body.vec[:4], static)
    assert np.allclose(static[3:], -body.mass * g)


def test_one_sample_is_bit_identical_to_the_stacked_path():
    """The single-sample fast path (a command's model wrench) gives the stacked path's bits,
    signed zeros included, on random samples of many scales, zeros and gravity or not."""
    rng = np.random.default_rng(14)
    n = 20000
    scale = 10.0 ** rng.uniform(-6, 3, size=(n, 1))
    V, dV, g = (scale * rng.standard_normal((n, k)) for k in (6, 6, 3))
    V[::7, :3] = 0.0  # pure translation
    dV[::5] = -0.0
    g[::3] = (0.0, 0.0, -9.81)
    stacked, stacked_free = body_regressor(V, dV, g), body_regressor(V, dV)
    for k in range(n):
        assert body_regressor(V[k], dV[k], g[k]).tobytes() == stacked[k].tobytes()
        assert body_regressor(V[k], dV[k]).tobytes() == stacked_free[k].tobytes()
    a_origin = 0.0 + np.cross(V[:, :3], V[:, 3:])  # dV = 0: a_origin = 0 + omega x v
    assert (
        a_origin.tobytes()
        == np.array([body_regressor(V[k], np.zeros(6))[3:, 0] for k in range(n)]).tobytes()
    )
