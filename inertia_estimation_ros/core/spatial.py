"""Spatial algebra on SE(3): the one convention used everywhere in the core.

Convention (Modern Robotics, Lynch & Park 2017; paper 000's notation):

* ``T_a_b`` (4x4) is the pose of frame {b} in frame {a}; ``R_a_b`` its rotation
  and ``p_a_b`` the origin of {b} in {a}. ``T_a_c = T_a_b @ T_b_c``.
* Twists are **angular first**: ``V = (omega, v)``. A body twist of {b} is
  ``[V_b] = T_a_b^-1 dT_a_b/dt``: omega is the angular velocity of {b} and v the
  velocity of its origin, both expressed in {b}.
* Wrenches are **moment first**: ``F = (m, f)``, the moment about the frame's
  origin and the force, both expressed in that frame.
* Twists change frame with the adjoint, ``V_a = Ad(T_a_b) V_b``; wrenches with
  its transpose, ``F_b = Ad(T_a_b)^T F_a``, so that the power ``F.V`` is
  frame-independent.

geometry_msgs order their fields linear first. That conversion happens only at
the message boundary (``inertia_estimation_ros.ros.conversions``).
"""

from __future__ import annotations

import math

import numpy as np

ArrayLike = np.ndarray


def cross(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x cross y of stacked 3-vectors (..., 3): ``np.cross``'s products and differences (the
    same bits), without its per-call cost (tens of microseconds); two single vectors as floats."""
    if x.shape == y.shape == (3,):
        x0, x1, x2 = x.tolist()
        y0, y1, y2 = y.tolist()
        return np.array([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0])
    x0, x1, x2 = x[..., 0], x[..., 1], x[..., 2]
    y0, y1, y2 = y[..., 0], y[..., 1], y[..., 2]
    return np.stack([x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0], axis=-1)


def skew(x: ArrayLike) -> np.ndarray:
    """[x]: the 3x3 skew matrix with [x] y = x cross y (Modern Robotics Eq. 3.30).

    Accepts a single 3-vector or a stack of shape (..., 3).
    """
    x = np.asarray(x, dtype=float)
    if x.shape == (3,):  # one vector: 5x quicker than the stacked form, the same entries
        a, b, c = x.tolist()
        return np.array([[0.0, -c, b], [c, 0.0, -a], [-b, a, 0.0]])
    out = np.zeros(x.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -x[..., 2], x[..., 1]
    out[..., 1, 0], out[..., 1, 2] = x[..., 2], -x[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -x[..., 1], x[..., 0]
    return out


def unskew(S: ArrayLike) -> np.ndarray:
    """The vector x of a (possibly noisy) skew matrix, from its skew-symmetric part."""
    S = np.asarray(S, dtype=float)
    return 0.5 * np.stack(
        [S[..., 2, 1] - S[..., 1, 2], S[..., 0, 2] - S[..., 2, 0], S[..., 1, 0] - S[..., 0, 1]],
        axis=-1,
    )


def transform(R_a_b: ArrayLike, p_a_b: ArrayLike) -> np.ndarray:
    """T_a_b from its rotation and translation."""
    T = np.eye(4)
    T[:3, :3] = R_a_b
    T[:3, 3] = p_a_b
    return T


def inverse(T_a_b: ArrayLike) -> np.ndarray:
    """T_b_a = T_a_b^-1, using R^T (Modern Robotics Prop. 3.15)."""
    R, p = T_a_b[:3, :3], T_a_b[:3, 3]
    return transform(R.T, -R.T @ p)


def adjoint(T_a_b: ArrayLike) -> np.ndarray:
    """[Ad_T_a_b] (6x6), mapping twists in {b} to twists in {a} (Modern Robotics Def. 3.20)."""
    R, p = T_a_b[:3, :3], T_a_b[:3, 3]
    Ad = np.zeros((6, 6))
    Ad[:3, :3] = R
    Ad[3:, :3] = skew(p) @ R
    Ad[3:, 3:] = R
    return Ad


def ad(V: ArrayLike) -> np.ndarray:
    """[ad_V] (6x6), the Lie bracket of twists: [ad_V1] V2 = [V1, V2] (Modern Robotics Eq. 8.38)."""
    V = np.asarray(V, dtype=float)
    out = np.zeros((6, 6))
    out[:3, :3] = skew(V[:3])
    out[3:, :3] = skew(V[3:])
    out[3:, 3:] = skew(V[:3])
    return out


def wrench_to(T_b_a: ArrayLike, F_b: ArrayLike) -> np.ndarray:
    """F_a = Ad(T_b_a)^T F_b: the wrench F_b (about the origin of {b}, in {b}) seen in {a}."""
    return adjoint(T_b_a).T @ np.asarray(F_b, dtype=float)


def twist_to(T_a_b: ArrayLike, V_b: ArrayLike) -> np.ndarray:
    """V_a = Ad(T_a_b) V_b: the twist of a rigid body seen from {b} re-expressed in {a}."""
    return adjoint(T_a_b) @ np.asarray(V_b, dtype=float)


def hat(V: ArrayLike) -> np.ndarray:
    """[V] in se(3) (4x4) for a twist V = (omega, v) (Modern Robotics Eq. 3.70)."""
    V = np.asarray(V, dtype=float)
    out = np.zeros((4, 4))
    out[:3, :3] = skew(V[:3])
    out[:3, 3] = V[3:]
    return out


def vee(M: ArrayLike) -> np.ndarray:
    """The twist (omega, v) of a 4x4 matrix, projecting its rotation block onto so(3)."""
    M = np.asarray(M, dtype=float)
    return np.concatenate([unskew(M[:3, :3]), M[:3, 3]])


def _left_jacobian_so3(phi: np.ndarray) -> np.ndarray:
    """G(theta) of Modern Robotics Eq. 3.86 in rotation-vector form (the SO(3) left Jacobian)."""
    angle = float(np.sqrt(phi @ phi))
    K = skew(phi)
    if angle < 1e-6:
        return np.eye(3) + 0.5 * K + K @ K / 6.0
    return (
        np.eye(3)
        + (1.0 - np.cos(angle)) / angle**2 * K
        + (angle - np.sin(angle)) / angle**3 * K @ K
    )


def exp3(phi: ArrayLike) -> np.ndarray:
    """R = exp([phi]) for a rotation vector phi (Rodrigues, Modern Robotics Eq. 3.51)."""
    phi = np.asarray(phi, dtype=float)
    angle = math.sqrt(phi @ phi)
    K = skew(phi)
    if angle < 1e-6:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + np.sin(angle) / angle * K + (1.0 - np.cos(angle)) / angle**2 * K @ K


def quaternion(R: ArrayLike) -> tuple[float, float, float, float]:
    """The unit quaternion (x, y, z, w) of a rotation matrix, bit for bit what scipy's
    ``Rotation.from_matrix(R).as_quat()`` gives (its method for orthonormal matrices, Markley
    2008: from the first of the largest of the diagonal and the trace), without its per-call
    cost (~40x). A matrix that scipy would orthonormalize first (R R^T further than 1e-12 from
    I) or refuse (det <= 0, non-finite) goes to scipy."""
    (a, b, c), (d, e, f), (g, h, i) = np.asarray(R, dtype=float).tolist()
    # Well inside scipy's test (np.isclose(R R^T, I, atol=1e-12), so 1e-5 on the diagonal):
    # rounding differences in the product cannot change the path.
    orthonormal = (
        abs(a * d + b * e + c * f) < 5e-13
        and abs(a * g + b * h + c * i) < 5e-13
        and abs(d * g + e * h + f * i) < 5e-13
        and abs(a * a + b * b + c * c - 1.0) < 5e-6
        and abs(d * d + e * e + f * f - 1.0) < 5e-6
        and abs(g * g + h * h + i * i - 1.0) < 5e-6
    )
    if not (orthonormal and a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) > 0.5):
        from scipy.spatial.transform import Rotation  # rarely: loaded here

        x, y, z, w = Rotation.from_matrix(R).as_quat().tolist()
        return x, y, z, w
    trace = a + e + i
    largest, value = 0, a  # the first of the largest of (a, e, i, trace), as scipy picks
    for k, candidate in ((1, e), (2, i), (3, trace)):
        if candidate > value:
            largest, value = k, candidate
    if largest == 0:
        x, y, z, w = 1 - trace + 2 * a, d + b, g + c, h - f
    elif largest == 1:
        x, y, z, w = b + d, 1 - trace + 2 * e, h + f, c - g
    elif largest == 2:
        x, y, z, w = c + g, f + h, 1 - trace + 2 * i, d - b
    else:
        x, y, z, w = h - f, c - g, d - b, 1 + trace
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    return x / norm, y / norm, z / norm, w / norm


def log3(R: ArrayLike) -> np.ndarray:
    """The rotation vector phi of R, |phi| in [0, pi] (Modern Robotics Algorithm 3.1); a
    slightly non-orthogonal R counts by its nearest rotation. Closed form, except within 1e-3
    rad of pi, where the axis is better taken from the orthogonalized matrix (scipy)."""
    R = np.asarray(R, dtype=float)
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()
    w = np.array([r21 - r12, r02 - r20, r10 - r01])  # 2 sin(a) axis
    angle = math.acos(min(max(0.5 * (r00 + r11 + r22 - 1.0), -1.0), 1.0))  # NaN stays NaN
    if angle > np.pi - 1e-3:
        from scipy.spatial.transform import Rotation  # rarely: loaded here

        return Rotation.from_matrix(R).as_rotvec()
    if angle < 1e-6:
        return 0.5 * (1.0 + angle**2 / 6.0) * w
    return 0.5 * angle / math.sin(angle) * w


def exp6(V: ArrayLike) -> np.ndarray:
    """exp([V]) in SE(3) for an exponential-coordinate 6-vector (omega*theta, v*theta)."""
    V = np.asarray(V, dtype=float)
    return transform(exp3(V[:3]), _left_jacobian_so3(V[:3]) @ V[3:])


def log6(T: ArrayLike) -> np.ndarray:
    """The exponential coordinates (omega*theta, v*theta) of T, the inverse of exp6."""
    phi = log3(T[:3, :3])
    return np.concatenate([phi, np.linalg.solve(_left_jacobian_so3(phi), T[:3, 3])])


def log3_covariance(R: ArrayLike, C_phi: ArrayLike) -> np.ndarray:
    """Covariance of log3(R) for R = exp([dphi]) R_hat, dphi ~ N(0, C_phi) at first order:
    J^-1 C_phi J^-T with J the left Jacobian at log3(R_hat) (d log3 = J^-1 dphi)."""
    J_inv = np.linalg.inv(_left_jacobian_so3(log3(R)))
    return J_inv @ np.asarray(C_phi, dtype=float) @ J_inv.T


def rotation_angle(R: ArrayLike) -> float:
    """The angle [rad] of a rotation matrix, in [0, pi]."""
    return float(np.linalg.norm(log3(R)))
