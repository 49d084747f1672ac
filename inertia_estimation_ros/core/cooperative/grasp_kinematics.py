"""Grasp kinematics: where every robot holds the payload (paper 000, Sec. III-B, Eqs. 1-8).

Every robot holds one rigid body, so body twists satisfy V_i = Ad(T_i_j) V_j (Eq. 1), and
with fixed home frames the poses satisfy T_i0_i(t) = T_i0_s0 T_s0_s(t) T_s_i. Each
residual below is linear in a stacked measurement vector x_k (twists z_k, or poses y_k),
so the second moment S = sum_k w_k x_k x_k^T (``StackedMoments``) is a sufficient
statistic. The batch pipeline and the online estimator share it, and memory stays
constant however long the data are.

Paper method, per pair (i, j):
* ``relative_rotation`` solves Wahba's problem by Kabsch's SVD (Eqs. 3-5);
* ``relative_position`` solves Eq. 8 by least squares;
* ``pairwise_grasps`` chains the pairs to the reference robot;
* ``paper_refinement`` is the paper's BFGS refinement over all pairs.

Project method, joint maximum likelihood over all N robots (any N, any reference robot {s}):
* Only T_s_i (i != s) are parameters, so loop closure holds by construction.
* The payload's motion at each sample is a latent variable, eliminated in closed form
  (variable projection), so every robot's noise counts the same way:
  * ``refine_grasps`` (twists): the latent is the payload twist V_s;
  * ``refine_grasps_from_poses`` (poses, the more accurate one): the latent is the pose
    T_s0_s(t), and the home frames T_s0_i0 are extra parameters. Position data carry
    rotation information through the grasp lever arms, and there is no differentiation.
* Per-robot noise levels are re-estimated from the residuals by moment matching.
* Robust losses work by reweighting samples (``robust_weights``, ``fit_grasps``).
* Quantized poses (encoder steps) leave a bias that the residuals take for white noise;
  ``quantization_covariance`` adds it to the covariance from the declared resolution.

Covariances are 6x6 per grasp, of (dphi, dp): R_s_i = exp([dphi]) R_hat_s_i and
p_s_i = p_hat_s_i + dp, both in {s}. Note the order: the core is angular first, while
msg/GraspFrame lists dp first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from .. import spatial as sp
from .diagnostics import covariance_from_information

ROBUST_LOSSES = ("none", "huber", "cauchy")


# ----- sufficient statistics -------------------------------------------------------------------
@dataclass
class StackedMoments:
    """S = sum_k w_k x_k x_k^T of stacked per-sample vectors x_k (robot order ``robot_ids``)."""

    robot_ids: tuple[str, ...]
    S: np.ndarray
    weight: float = 0.0  # sum of sample weights
    samples: int = 0

    @classmethod
    def empty(cls, robot_ids: Sequence[str], dim: int) -> StackedMoments:
        return cls(tuple(robot_ids), np.zeros((dim, dim)))

    @classmethod
    def from_rows(
        cls, robot_ids: Sequence[str], X: np.ndarray, weights: np.ndarray | None = None
    ) -> StackedMoments:
        w = np.ones(len(X)) if weights is None else np.asarray(weights, dtype=float)
        return cls(tuple(robot_ids), (X * w[:, None]).T @ X, float(w.sum()), len(X))

    def add(self, x: np.ndarray, weight: float = 1.0) -> None:
        """Accumulate one stacked vector x."""
        wx = weight * x
        self.S += wx[:, None] * x[None, :]
        self.weight += weight
        self.samples += 1

    def add_rows(
        self,
        X: np.ndarray,
        weights: np.ndarray,
        weighted: np.ndarray | None = None,
        product: np.ndarray | None = None,
    ) -> None:
        """Accumulate stacked vectors X (Q, dim) with their weights (Q,): ``add`` per row;
        ``weighted``: X * weights[:, None], ``product``: weighted^T X, if the caller has it."""
        if product is None:
            product = (X * weights[:, None] if weighted is None else weighted).T @ X
        self.S += product
        self.weight += float(weights.sum())
        self.samples += len(X)

    def __add__(self, other: StackedMoments) -> StackedMoments:
        if other.robot_ids != self.robot_ids or other.S.shape != self.S.shape:
            raise ValueError("cannot pool moments of different robot sets or kinds")
        return StackedMoments(
            self.robot_ids,
            self.S + other.S,
            self.weight + other.weight,
            self.samples + other.samples,
        )

    def block(self, i: str, j: str, size: int = 6) -> np.ndarray:
        """sum_k x_i,k x_j,k^T for equal per-robot blocks of ``size`` (twists: 6)."""
        a, b = size * self.robot_ids.index(i), size * self.robot_ids.index(j)
        return self.S[a : a + size, b : b + size]


def twist_rows(twists: Mapping[str, np.ndarray], robot_ids: Sequence[str]) -> np.ndarray:
    """Z (Q, 6N): row k is z_k = [V_1,k; ...; V_N,k]."""
    return np.concatenate([np.asarray(twists[r], dtype=float) for r in robot_ids], axis=1)


def pose_rows(poses: Mapping[str, np.ndarray], robot_ids: Sequence[str]) -> np.ndarray:
    """Y (Q, 12N + 1): row k is [vec(R_1), p_1, ..., vec(R_N), p_N, 1] of T_i0_i (vec by rows)."""
    parts = []
    for r in robot_ids:
        T = np.asarray(poses[r], dtype=float).reshape(-1, 4, 4)
        parts += [T[:, :3, :3].reshape(-1, 9), T[:, :3, 3]]
    parts.append(np.ones((len(parts[0]), 1)))
    return np.concatenate(parts, axis=1)


def twist_moments(twists: Mapping[str, np.ndarray]) -> StackedMoments:
    """Moments of per-robot twist arrays (Q, 6) sampled at the same instants."""
    return StackedMoments.from_rows(tuple(twists), twist_rows(twists, tuple(twists)))


def pose_moments(poses: Mapping[str, np.ndarray]) -> StackedMoments:
    """Moments of per-robot pose arrays T_i0_i (Q, 4, 4) sampled at the same instants."""
    return StackedMoments.from_rows(tuple(poses), pose_rows(poses, tuple(poses)))


def gravity_units(T_i0_i: np.ndarray, g_i: np.ndarray) -> np.ndarray:
    """The unit vectors R_i0_i g_i / |g_i| (..., Q, 3) of stacked poses (..., Q, 4, 4) and
    gravity vectors (..., Q, 3), each stack's contiguous."""
    h = np.einsum("...kij,...kj->...ki", T_i0_i[..., :3, :3], g_i)
    return np.ascontiguousarray(h / np.linalg.norm(h, axis=-1, keepdims=True))


def sample_gravity_units(T_i0_i: np.ndarray, g_i: np.ndarray) -> np.ndarray:
    """``HomeGravity.add``'s unit vector (K, 3) of one sample of each of K robots, poses
    (K, 4, 4) and gravity vectors (K, 3), rounded as ``add`` rounds it (``_unit_rotated``)."""
    return _unit_rotated(T_i0_i[:, :3, :3], g_i)


def _unit_rotated(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """R v / |R v| for rotations (..., 3, 3) and vectors (..., 3) in elementwise operations
    only: the same bits for one vector as for each row of a stack, whatever the BLAS kernel
    (a BLAS dot of 3 numbers rounds by its operands' memory alignment)."""
    h = R[..., 0] * v[..., None, 0] + R[..., 1] * v[..., None, 1] + R[..., 2] * v[..., None, 2]
    norm = np.sqrt(h[..., 0] * h[..., 0] + h[..., 1] * h[..., 1] + h[..., 2] * h[..., 2])
    return h / norm[..., None]


@dataclass
class HomeGravity:
    """A robot's gravity direction in its fixed home frame: the mean of R_i0_i g_i / |g_i|.

    Constant memory: sums of the unit vectors and of their outer products.
    """

    total: np.ndarray
    outer: np.ndarray
    count: int = 0
    floor: float = 1e-4  # [rad] smallest direction std claimed (floor levelness, calibration)

    @classmethod
    def empty(cls, floor: float = 1e-4) -> HomeGravity:
        return cls(np.zeros(3), np.zeros((3, 3)), 0, floor)

    @classmethod
    def from_samples(cls, T_i0_i: np.ndarray, g_i: np.ndarray, floor: float = 1e-4) -> HomeGravity:
        h = np.einsum("kij,kj->ki", np.asarray(T_i0_i)[:, :3, :3], np.asarray(g_i))
        u = h / np.linalg.norm(h, axis=1, keepdims=True)
        return cls(u.sum(0), u.T @ u, len(u), floor)

    def add(self, T_i0_i: np.ndarray, g_i: np.ndarray) -> None:
        u = _unit_rotated(T_i0_i[:3, :3], g_i)
        self.total += u
        self.outer += np.outer(u, u)
        self.count += 1

    def add_batch(self, T_i0_i: np.ndarray, g_i: np.ndarray) -> None:
        """``add`` for stacked poses (Q, 4, 4) and gravity vectors (Q, 3)."""
        if len(T_i0_i) == 1:
            self.add(T_i0_i[0], g_i[0])
            return
        self.add_units(gravity_units(T_i0_i, g_i))

    def add_units(self, u: np.ndarray) -> None:
        """``add`` for the directions u (Q, 3) of ``gravity_units``."""
        self.add_sums(u.sum(axis=0), u.T @ u, len(u))

    def add_sums(self, total: np.ndarray, outer: np.ndarray, count: int) -> None:
        """``add_units`` of ``count`` directions given their sum and sum of outer products."""
        self.total += total
        self.outer += outer
        self.count += count

    @property
    def direction(self) -> np.ndarray:
        return self.total / np.linalg.norm(self.total)

    @property
    def direction_std(self) -> float:
        """Std [rad] of the mean direction, per perpendicular axis (at least ``floor``)."""
        n = max(self.count, 1)
        spread = max(1.0 - self.direction @ (self.outer / n) @ self.direction, 0.0)
        return max(float(np.sqrt(spread / 2.0 / n)), self.floor)


def _quadratic_minimizer(E0: np.ndarray, E: Sequence[np.ndarray], S: np.ndarray) -> np.ndarray:
    """argmin_x tr((E0 + sum_a x_a E_a) S (...)^T): least squares on residuals linear in z."""
    H = np.array([[np.trace(Ea @ S @ Eb.T) for Eb in E] for Ea in E])
    g = np.array([np.trace(Ea @ S @ E0.T) for Ea in E])
    return -np.linalg.lstsq(H, g, rcond=None)[0]


def _procrustes(M: np.ndarray) -> np.ndarray:
    """The rotation R maximizing tr(R^T M)."""
    U, _, Vt = np.linalg.svd(M)
    return U @ np.diag([1.0, 1.0, np.linalg.det(U @ Vt)]) @ Vt


# ----- paper 000, Eqs. 3-8: pairwise linear solutions -----------------------------------------
def relative_rotation(X_j_i: np.ndarray) -> np.ndarray:
    """R_i_j minimizing ||R_i_j omega_j* - omega_i*||_F (Eq. 4) by Kabsch's SVD (Eq. 5).

    X_j_i = omega_j* omega_i*^T = U Sigma V^T, R_i_j = V diag(1, 1, det(V U^T)) U^T.
    """
    return _procrustes(np.asarray(X_j_i).T)


def relative_position(moments: StackedMoments, i: str, j: str, R_i_j: np.ndarray) -> np.ndarray:
    """p_i_j minimizing ||[R_i_j omega_j] p - (R_i_j v_j - v_i)|| over all samples (Eqs. 7-8)."""
    a, b = 6 * moments.robot_ids.index(i), 6 * moments.robot_ids.index(j)
    n = moments.S.shape[0]
    E0 = np.zeros((3, n))
    E0[:, a + 3 : a + 6] = np.eye(3)
    E0[:, b + 3 : b + 6] = -R_i_j
    E = []
    for axis in np.eye(3):
        Ea = np.zeros((3, n))
        Ea[:, b : b + 3] = -sp.skew(axis) @ R_i_j
        E.append(Ea)
    return _quadratic_minimizer(E0, E, moments.S)


def pairwise_grasp(moments: StackedMoments, i: str, j: str) -> np.ndarray:
    """T_i_j from the pair's twists only: Eq. 5 for the rotation, then Eq. 8."""
    R_i_j = relative_rotation(moments.block(j, i)[:3, :3])
    return sp.transform(R_i_j, relative_position(moments, i, j, R_i_j))


def pairwise_grasps(moments: StackedMoments, reference_id: str) -> dict[str, np.ndarray]:
    """T_s_i of every robot from its pair with the reference robot {s} (paper, Sec. III-B)."""
    return {
        r: np.eye(4) if r == reference_id else pairwise_grasp(moments, reference_id, r)
        for r in moments.robot_ids
    }


# ----- parametrization: T_s_i only, so loop closure holds by construction -------------------
def others(robot_ids: Sequence[str], reference_id: str) -> list[str]:
    """The non-reference robots, in order."""
    return [r for r in robot_ids if r != reference_id]


def perturbed(T: Mapping[str, np.ndarray], reference_id: str, x: np.ndarray) -> dict:
    """Poses after the perturbation x = [(dphi, dp) per non-reference robot]:
    R = exp([dphi]) R_hat and p = p_hat + dp (left perturbation, in the outer frame)."""
    out = dict(T)
    for k, rid in enumerate(others(list(T), reference_id)):
        out[rid] = _perturb(T[rid], x[6 * k : 6 * k + 6])
    return out


def _perturb(T: np.ndarray, x: np.ndarray) -> np.ndarray:
    """(exp([dphi]) R, p + dp) for x = (dphi, dp)."""
    if not np.any(x):
        return T
    return sp.transform(sp.exp3(x[:3]) @ T[:3, :3], T[:3, 3] + x[3:])


# ----- project method: consensus by variable projection ---------------------------------------
def stacked_adjoint(T_s_i: Mapping[str, np.ndarray], robot_ids: Sequence[str]) -> np.ndarray:
    """A (6N x 6): z = A V_s for a rigid payload, A_i = Ad(T_i_s) (Eq. 1)."""
    return np.vstack([sp.adjoint(sp.inverse(T_s_i[r])) for r in robot_ids])


def consensus_map(A: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """C: the weighted least-squares latent l = C x of measurements x = A l + noise.

    precision: inverse noise variances of x's entries.
    """
    AtW = A.T * precision
    return np.linalg.solve(AtW @ A, AtW)


def mean_rotations(moments: StackedMoments) -> dict[str, np.ndarray]:
    """The chordal mean rotation of each robot's R_i0_i, from the first moments of pose rows."""
    first = moments.S[-1, :-1] / max(moments.weight, 1e-300)
    return {
        r: _procrustes(first[12 * k : 12 * k + 9].reshape(3, 3))
        for k, r in enumerate(moments.robot_ids)
    }


def _tangent_coordinates(R: np.ndarray) -> np.ndarray:
    """Pi (3 x 9): E -> unskew(R^T E), the rotation vector of a small E = [d] R (vec by rows)."""
    X = np.zeros((3, 3, 3, 3))  # [a, b]: R^T E for E = e_a e_b^T, entry 3 a + b of vec(E)
    for b in range(3):
        X[:, b, :, b] = R
    return sp.unskew(X).reshape(9, 3).T


def pose_constraints(
    T_s_i: Mapping[str, np.ndarray],
    T_s0_i0: Mapping[str, np.ndarray],
    R_bar: Mapping[str, np.ndarray],
    robot_ids: Sequence[str],
    reference_id: str,
) -> np.ndarray:
    """M (6(N-1) x (12N + 1)): M y = 0 for exact pose rows y of a rigid team.

    T_i0_i = T_s0_i0^-1 T_s0_s T_s_i gives, with X = T_s_i and Y = T_s0_i0, per robot i != s:
    rotation: Pi_i vec(R_i - R_Y^T R_s R_X) (tangent coordinates at robot i's mean rotation);
    position: p_i - R_Y^T (R_s p_X + p_s - p_Y).
    """
    n = 12 * len(robot_ids) + 1
    s = 12 * robot_ids.index(reference_id)
    blocks = [
        _pose_block(
            T_s_i[r], T_s0_i0[r], _tangent_coordinates(R_bar[r]), 12 * robot_ids.index(r), s, n
        )
        for r in others(robot_ids, reference_id)
    ]
    return np.vstack(blocks)


def _pose_block(
    T_X: np.ndarray, T_Y: np.ndarray, Pi: np.ndarray, i: int, s: int, n: int
) -> np.ndarray:
    """The 6 rows of ``pose_constraints`` of one robot (columns i: its pose, s: the reference)."""
    R_X, p_X, R_Y, p_Y = T_X[:3, :3], T_X[:3, 3], T_Y[:3, :3], T_Y[:3, 3]
    M = np.zeros((6, n))
    M[:3, i : i + 9] = Pi
    M[:3, s : s + 9] = -Pi @ np.kron(R_Y.T, R_X.T)
    M[3:, i + 9 : i + 12] = np.eye(3)
    M[3:, s : s + 9] = -R_Y.T @ np.kron(np.eye(3), p_X[None, :])
    M[3:, s + 9 : s + 12] = -R_Y.T
    M[3:, -1] = R_Y.T @ p_Y
    return M


def _pose_block_derivatives(T_X: np.ndarray, T_Y: np.ndarray, Pi: np.ndarray) -> np.ndarray:
    """D (12, 6, 13): d ``_pose_block`` / dx of the columns that move (the reference's 12
    and the last) along x = (dphi_X, dp_X, dphi_Y, dp_Y), the left perturbations of
    ``_perturb``: R -> exp([dphi]) R gives d(R^T) = -R^T [e_c], p -> p + dp gives e_c."""
    R_X, p_X, R_Y, p_Y = T_X[:3, :3], T_X[:3, 3], T_Y[:3, :3], T_Y[:3, 3]
    dRXt, dRYt = -R_X.T @ sp.skew(np.eye(3)), -R_Y.T @ sp.skew(np.eye(3))  # (3, 3, 3)
    D = np.zeros((12, 6, 13))
    D[0:3, :3, :9] = -Pi @ np.einsum("ab,ncd->nacbd", R_Y.T, dRXt).reshape(3, 9, 9)
    D[3:6, 3:, :9] = -np.einsum("ab,nd->nabd", R_Y.T, np.eye(3)).reshape(3, 3, 9)
    D[6:9, :3, :9] = -Pi @ np.einsum("nab,cd->nacbd", dRYt, R_X.T).reshape(3, 9, 9)
    D[6:9, 3:, :9] = -np.einsum("nab,d->nabd", dRYt, p_X).reshape(3, 3, 9)
    D[6:9, 3:, 9:12] = -dRYt
    D[6:9, 3:, 12] = dRYt @ p_Y
    D[9:12, 3:, 12] = R_Y
    return D


def rotation_moments(moments: StackedMoments) -> dict[str, np.ndarray]:
    """Each robot's 9x9 mean of vec(R_i0_i) vec(R_i0_i)^T (vec by rows), from pose moments."""
    weight = max(moments.weight, 1e-300)
    return {
        r: moments.S[12 * k : 12 * k + 9, 12 * k : 12 * k + 9] / weight
        for k, r in enumerate(moments.robot_ids)
    }


def pose_noise_covariance(
    rotations: Mapping[str, np.ndarray],
    robot_ids: Sequence[str],
    angle_std: float,
    position_std: float,
) -> np.ndarray:
    """Sigma of pose rows, averaged over the samples: rotation noise R = exp([d]) R_k with d
    isotropic, white positions. ``rotations``: per robot the mean of vec(R_k) vec(R_k)^T
    (``rotation_moments``); a single rotation R stands for vec(R) vec(R)^T.

    vec([e] R) = ([e] kron 1) vec(R), so the mean covariance of vec(R_k) is
    angle_std^2 sum_e ([e] kron 1) E[vec(R_k) vec(R_k)^T] ([e] kron 1)^T. Using the mean
    rotation instead would miss the part of the angle noise that the motion turns into
    every direction, e.g. along a grasp lever arm, where only position noise is expected.
    """
    n = 12 * len(robot_ids)
    Sigma = np.zeros((n + 1, n + 1))
    lifts = [np.kron(sp.skew(e), np.eye(3)) for e in np.eye(3)]
    for k, r in enumerate(robot_ids):
        second = np.asarray(rotations[r], dtype=float)
        if second.shape == (3, 3):
            second = np.outer(second.ravel(), second.ravel())
        block = sum(K @ second @ K.T for K in lifts)
        Sigma[12 * k : 12 * k + 9, 12 * k : 12 * k + 9] = angle_std**2 * block
        Sigma[12 * k + 9 : 12 * k + 12, 12 * k + 9 : 12 * k + 12] = position_std**2 * np.eye(3)
    return Sigma


def gls_residual_map(M: np.ndarray, Sigma: np.ndarray) -> np.ndarray:
    """P = C^-1/2 M with C = M Sigma M^T: ||P x||^2 is the first-order ML cost of M x = 0."""
    C = M @ Sigma @ M.T
    return np.linalg.solve(np.linalg.cholesky(0.5 * (C + C.T)), M)


def residual_map(A: np.ndarray, precision: np.ndarray) -> np.ndarray:
    """P: whitened residuals P z = W^1/2 (z - A C z) after the consensus l = C z."""
    return np.sqrt(precision)[:, None] * (np.eye(len(precision)) - A @ consensus_map(A, precision))


def _factor(S: np.ndarray) -> np.ndarray:
    """L with L L^T = S (symmetric square-root factor of a positive semidefinite S)."""
    lam, U = np.linalg.eigh(0.5 * (S + S.T))
    return U * np.sqrt(np.clip(lam, 0.0, None))


def noise_precision(
    noise: Mapping[str, tuple[float, float]], robot_ids: Sequence[str]
) -> np.ndarray:
    """(6N,) inverse twist-noise variances from per-robot (angular, linear) stds."""
    return np.concatenate([np.repeat(np.array(noise[r]) ** -2.0, 3) for r in robot_ids])


def _twist_noise(
    P: np.ndarray, moments: StackedMoments, noise: Mapping[str, tuple[float, float]]
) -> dict[str, tuple[float, float]]:
    """Moment matching: each robot's (angular, linear) variance times observed/expected power.

    P is the whitened residual map; pooled over robots when N = 2 (not identifiable).
    """
    ids = moments.robot_ids
    precision = noise_precision(noise, ids)
    observed = np.clip(np.einsum("ij,jk,ik->i", P, moments.S, P), 0.0, None)
    expected = np.einsum("ij,j,ij->i", P, 1.0 / precision, P) * moments.weight
    obs, exp = observed.reshape(-1, 2, 3).sum(2), expected.reshape(-1, 2, 3).sum(2)
    if len(ids) < 3:
        obs, exp = np.broadcast_to(obs.sum(0), obs.shape), np.broadcast_to(exp.sum(0), exp.shape)
    floor = 1e-9 * np.sqrt(np.diag(moments.S).reshape(-1, 2, 3).mean((0, 2)) / moments.weight)
    return {
        r: tuple(
            np.maximum(np.array(noise[r]) * np.sqrt(obs[k] / np.maximum(exp[k], 1e-300)), floor)
        )
        for k, r in enumerate(ids)
    }


def consensus_noise(
    moments: StackedMoments,
    T_s_i: Mapping[str, np.ndarray],
    noise: Mapping[str, tuple[float, float]] | None = None,
    iterations: int = 5,
) -> dict[str, tuple[float, float]]:
    """Per-robot (angular, linear) noise stds of twist-like rows (twists or their derivatives)
    from the robots' disagreement after the consensus, for known grasps T_s_i."""
    ids = moments.robot_ids
    noise = dict(noise) if noise is not None else {r: (1.0, 1.0) for r in ids}
    A = stacked_adjoint(T_s_i, ids)
    for _ in range(iterations):
        noise = _twist_noise(residual_map(A, noise_precision(noise, ids)), moments, noise)
    return noise


def _pose_noise(
    M: np.ndarray,
    moments: StackedMoments,
    level: tuple[float, float] | None = None,
    iterations: int = 30,
) -> tuple[float, float]:
    """Team-wide (angle [rad], position [m]) pose noise: maximum likelihood of M y = 0.

    The residuals r_k = M y_k have covariance C = a U_a + b U_b (a, b: the angle and
    position variances; U = M Sigma M^T of unit noise, ``pose_noise_covariance``). Fisher
    scoring solves the likelihood equations tr(C^-1 U_j C^-1 (S_r - C)) = 0 with the
    sample covariance S_r = M S M^T / weight. Every residual direction is weighed by its
    own precision: position noise is fixed by the directions angle noise cannot reach
    (along the lever arms), not by subtracting the angle part from the total power,
    which collapses the position noise when the angle part is slightly overestimated.
    The position part is kept at least 1% (in std) of the angle part of the position rows:
    when angle errors explain all of them (e.g. encoder offsets), a vanishing position
    noise would make the whitening singular and drown the rotation rows.
    """
    rotations = rotation_moments(moments)
    ids = moments.robot_ids
    units = [M @ pose_noise_covariance(rotations, ids, *unit) @ M.T for unit in ((1, 0), (0, 1))]
    S_r = M @ moments.S @ M.T / max(moments.weight, 1e-300)
    position_rows = np.tile(np.repeat([False, True], 3), len(M) // 6)
    angle_power = np.trace(units[0][position_rows][:, position_rows])
    scale = np.trace(S_r) / max(np.trace(units[0]) + np.trace(units[1]), 1e-300)
    theta = np.square(level) if level is not None else np.array([scale, scale])
    for _ in range(iterations):
        floor = np.array([1e-18, 1e-4 * theta[0] * angle_power / max(np.trace(units[1]), 1e-300)])
        C = theta[0] * units[0] + theta[1] * units[1]
        whitened = [np.linalg.solve(C, U) for U in units]
        fisher = np.array([[np.sum(Wa * Wb.T) for Wb in whitened] for Wa in whitened])
        target = np.array([np.sum(W * np.linalg.solve(C, S_r).T) for W in whitened])
        updated = np.maximum(np.linalg.solve(fisher, target), floor)
        converged = np.all(np.abs(updated - theta) <= 1e-10 * theta)
        theta = updated
        if converged:
            break
    position_scale = np.sqrt(np.diag(moments.S)[9:12].mean() / max(moments.weight, 1e-300))
    return max(np.sqrt(theta[0]), 1e-9), max(np.sqrt(theta[1]), 1e-9 * max(position_scale, 1.0))


@dataclass(frozen=True)
class GraspKinematics:
    """Estimated grasp frames T_s_i with their joint covariance and fit figures."""

    reference_id: str
    T_s_i: dict[str, np.ndarray]
    covariance: np.ndarray  # 6(N-1) square, (dphi, dp) per non-reference robot, robot order
    source: str  # "twists" or "poses"
    information: np.ndarray  # inverse of ``covariance``: J^T J of the whitened fit
    samples: int
    twist_noise: dict[str, tuple[float, float]]  # per robot (angular, linear) std
    pose_noise: tuple[float, float] | None = None  # (angle, position) std (pose fit)
    T_s0_i0: dict[str, np.ndarray] | None = None  # home frames in {s0} (pose fit)

    @property
    def robot_ids(self) -> tuple[str, ...]:
        return tuple(self.T_s_i)

    def grasp_covariance(self, robot_id: str) -> np.ndarray:
        """6x6 covariance of (dphi, dp) of T_s_i in {s}; zero for the reference robot."""
        if robot_id == self.reference_id:
            return np.zeros((6, 6))
        k = others(self.robot_ids, self.reference_id).index(robot_id)
        return self.covariance[6 * k : 6 * k + 6, 6 * k : 6 * k + 6].copy()

    def inflated(self, factor: float) -> GraspKinematics:
        """The same fit with its covariance multiplied by factor (e.g. for correlated noise)."""
        return replace(
            self, covariance=factor * self.covariance, information=self.information / factor
        )

    def with_added_covariance(self, extra: np.ndarray) -> GraspKinematics:
        """The same fit with ``extra`` (e.g. from uncertain clock offsets) in its covariance."""
        covariance = self.covariance + extra
        return replace(
            self, covariance=covariance, information=np.linalg.pinv(covariance, hermitian=True)
        )

    def T_i_j(self, i: str, j: str) -> np.ndarray:
        """T_i_j = T_s_i^-1 T_s_j."""
        return sp.inverse(self.T_s_i[i]) @ self.T_s_i[j]


Frames = list[dict[str, np.ndarray]]


def _fit_twist_frames(
    moments: StackedMoments,
    reference_id: str,
    T: dict[str, np.ndarray],
    noise: dict[str, tuple[float, float]],
    noise_iterations: int,
) -> tuple[dict[str, np.ndarray], dict[str, tuple[float, float]], np.ndarray]:
    """Least squares over perturbations of every non-reference T_s_i: the cost is
    sum_k ||P z_k||^2 = ||P L||_F^2 with L L^T = S, P the whitened residual map
    (``residual_map``), its Jacobian analytic (``twist_residual_jacobian``). Noise levels
    are re-estimated ``noise_iterations`` times. Returns the fitted frames, the noise
    levels, and J^T J at the fit."""
    ids = moments.robot_ids
    L = _factor(moments.S)

    def residual(x: np.ndarray, base: dict, level: dict) -> np.ndarray:
        A = stacked_adjoint(perturbed(base, reference_id, x), ids)
        return (residual_map(A, noise_precision(level, ids)) @ L).ravel()

    def jacobian(x: np.ndarray, base: dict, level: dict) -> np.ndarray:
        current = perturbed(base, reference_id, x)
        return twist_residual_jacobian(current, ids, reference_id, noise_precision(level, ids), L)

    x0 = np.zeros(6 * (len(ids) - 1))
    for iteration in range(noise_iterations + 1):
        fun = partial(residual, base=T, level=noise)
        step = _levenberg_marquardt(fun, partial(jacobian, base=T, level=noise), x0)
        T = perturbed(T, reference_id, step)
        if iteration < noise_iterations:
            P = residual_map(stacked_adjoint(T, ids), noise_precision(noise, ids))
            noise = _twist_noise(P, moments, noise)
    J = jacobian(x0, T, noise)
    return T, noise, J.T @ J


def twist_residual_jacobian(
    T_s_i: Mapping[str, np.ndarray],
    robot_ids: Sequence[str],
    reference_id: str,
    precision: np.ndarray,
    L: np.ndarray,
) -> np.ndarray:
    """d vec(P L) / dx (rows of P L, row-major; 6(N-1) columns), P = W^1/2 (1 - Pi) the
    whitened twist residual map (``residual_map``), Pi = A C the weighted projection onto
    the rigid motions (``consensus_map``), x the perturbations of ``perturbed``.

    A perturbation (dphi, dp) of T_s_i is the left twist xi = (dphi, dp + p x dphi), so
    robot i's block of A = Ad(T_i_s) moves by dA_i = -A_i ad(xi); with G = A^T W A,
    dPi = (1 - Pi) dA C + A G^-1 dA^T W (1 - Pi); dPi L is formed as (1 - Pi) (dA (C L))
    + (A G^-1) (dA^T (W (1 - Pi) L)), thin products only."""
    ids = tuple(robot_ids)
    A = stacked_adjoint(T_s_i, ids)
    AtW = A.T * precision
    G_inverse = np.linalg.inv(AtW @ A)
    C = G_inverse @ AtW
    Q = np.eye(len(A)) - A @ C
    root = np.sqrt(precision)[:, None]
    QL, AG = -root * Q, -root * (A @ G_inverse)  # the factors of -W^1/2 dPi L
    CL, WQL = C @ L, (precision[:, None] * Q) @ L
    columns = []
    for rid in others(list(T_s_i), reference_id):
        i, p = 6 * ids.index(rid), T_s_i[rid][:3, 3]
        xi = np.eye(6)  # rows: the twists of the six perturbations (dphi, dp + p x dphi)
        xi[:3, 3:] = np.cross(p, np.eye(3))
        dA_i = -A[i : i + 6] @ np.stack([sp.ad(x) for x in xi])  # (6, 6, 6): robot i's rows
        dPiL = QL[:, i : i + 6] @ (dA_i @ CL) + AG @ (np.swapaxes(dA_i, 1, 2) @ WQL[i : i + 6])
        columns.append(dPiL.reshape(6, -1))
    return np.concatenate(columns).T


def refine_grasps(
    moments: StackedMoments,
    reference_id: str,
    initial: Mapping[str, np.ndarray] | None = None,
    noise: Mapping[str, tuple[float, float]] | None = None,
    noise_iterations: int = 3,
) -> GraspKinematics:
    """Joint maximum-likelihood T_s_i of all robots from twist moments (latent V_s).

    Starts from ``initial`` (default: the paper's pairwise solutions). ``noise`` gives
    per-robot (angular, linear) twist noise stds, re-estimated ``noise_iterations`` times.
    """
    ids = moments.robot_ids
    _check_reference(ids, reference_id)
    T = dict(initial) if initial is not None else pairwise_grasps(moments, reference_id)
    T, noise, information = _fit_twist_frames(
        moments,
        reference_id,
        T,
        dict(noise) if noise is not None else {r: (1.0, 1.0) for r in ids},
        noise_iterations,
    )
    covariance = covariance_from_information(information)
    return GraspKinematics(
        reference_id, T, covariance, "twists", information, moments.samples, noise
    )


def initial_homes(
    moments: StackedMoments, reference_id: str, T_s_i: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """T_s0_i0 that best fits the pose moments given T_s_i (linear, for a starting point).

    R_Y maximizes sum_k tr(R_Y^T R_s,k R_X R_i,k^T); p_Y = mean(R_s p_X + p_s - R_Y p_i).
    """
    ids = moments.robot_ids
    first = moments.S[-1, :-1] / max(moments.weight, 1e-300)  # mean of each pose entry
    s = 12 * ids.index(reference_id)
    out = {}
    for r in ids:
        i = 12 * ids.index(r)
        R_X, p_X = T_s_i[r][:3, :3], T_s_i[r][:3, 3]
        cross = moments.S[s : s + 9, i : i + 9].reshape(3, 3, 3, 3)  # [a, c, b, d]
        R_Y = _procrustes(np.einsum("acbd,cd->ab", cross, R_X))
        mean_R_s = first[s : s + 9].reshape(3, 3)
        p_Y = mean_R_s @ p_X + first[s + 9 : s + 12] - R_Y @ first[i + 9 : i + 12]
        out[r] = np.eye(4) if r == reference_id else sp.transform(R_Y, p_Y)
    return out


def _levenberg_marquardt(
    residual: Callable[[np.ndarray], np.ndarray],
    jacobian: Callable[[np.ndarray], np.ndarray],
    x: np.ndarray,
    iterations: int = 8,
    tolerance: float = 1e-10,
    offset: float = 0.0,
) -> np.ndarray:
    """Levenberg-Marquardt on the normal equations. J is tall and J^T J small here, which
    is much faster than MINPACK's QR for large teams. Stops when a step shrinks the cost
    by less than ``tolerance`` of itself. ``offset``: a part of the cost that no step
    changes (left out of ``residual``), counted in the cost that the tolerance scales."""
    r = residual(x)
    cost, damping = float(r @ r) + offset, 1e-9
    for _ in range(iterations):
        J = jacobian(x)
        H, g = J.T @ J, J.T @ r
        scale = np.maximum(np.diag(H), 1e-300)
        gauss_newton = -np.linalg.lstsq(H, g, rcond=1e-14)[0]
        if -float(g @ gauss_newton) <= tolerance * max(cost, 1e-300):
            return x  # the best possible decrease is negligible: converged
        for _ in range(6):
            step = -np.linalg.solve(H + damping * np.diag(scale), g)
            r_new = residual(x + step)
            if float(r_new @ r_new) + offset <= cost:
                break
            damping *= 100.0
        else:
            return x
        x, r = x + step, r_new
        improvement, cost = cost - float(r @ r) - offset, float(r @ r) + offset
        damping = max(damping / 100.0, 1e-12)
        if improvement <= tolerance * max(cost, 1e-300):
            break
    return x


def _fit_pose_frames(
    moments: StackedMoments,
    reference_id: str,
    frames: Frames,
    R_bar: Mapping[str, np.ndarray],
    level: tuple[float, float],
    prior: Callable[[Frames], np.ndarray] | None,
    prior_jacobian: Callable[[Frames], np.ndarray] | None = None,
    outer_iterations: int = 3,
) -> tuple[Frames, np.ndarray]:
    """Gauss-Newton on ||C^-1/2 M(X, Y) L||^2 (+ prior) over every robot's X = T_s_i, Y = T_s0_i0.

    The whitening C = M Sigma M^T is held fixed within an outer iteration, so each robot's
    6 constraint rows depend on its own 12 parameters only: the Jacobian is built block
    by block, which keeps large teams fast. Only 13 columns of M move with the frames
    (``moving_columns``): the residual keeps the 13 columns of L that they reach
    (``split_factor``), the rest is a constant of the cost. Returns the frames and J^T J
    at the fit.
    """
    ids = moments.robot_ids
    movers = others(ids, reference_id)
    n_each, n = 6 * len(movers), 12 * len(ids) + 1
    s = 12 * ids.index(reference_id)
    L, rest = split_factor(_factor(moments.S), moving_columns(ids, reference_id))
    Sigma = pose_noise_covariance(rotation_moments(moments), ids, *level)
    Pi = {r: _tangent_coordinates(R_bar[r]) for r in movers}

    def apply(base: Frames, x: np.ndarray) -> Frames:
        return [
            perturbed(f, reference_id, x[k * n_each : (k + 1) * n_each]) for k, f in enumerate(base)
        ]

    def blocks(current: Frames) -> list[np.ndarray]:
        return [
            _pose_block(current[0][r], current[1][r], Pi[r], 12 * ids.index(r), s, n)
            for r in movers
        ]

    def residual(x: np.ndarray, base: Frames, Wh: np.ndarray) -> np.ndarray:
        current = apply(base, x)
        r = (Wh @ np.vstack(blocks(current)) @ L).ravel()
        return r if prior is None else np.concatenate([r, prior(current)])

    def jacobian(x: np.ndarray, base: Frames, Wh: np.ndarray) -> np.ndarray:
        """``_pose_jacobian``, and the prior's part from ``prior_jacobian``."""
        current = apply(base, x)
        columns = _pose_jacobian(current, Pi, Wh, L, ids, reference_id)
        if prior_jacobian is None:
            return columns
        extra = prior_jacobian(current)
        return np.vstack([columns, np.hstack([np.zeros((len(extra), n_each)), extra])])

    x0 = np.zeros(2 * n_each)
    for _ in range(outer_iterations):
        M = pose_constraints(*frames, R_bar, ids, reference_id)
        C = M @ Sigma @ M.T
        Wh = np.linalg.inv(np.linalg.cholesky(0.5 * (C + C.T)))
        offset = float(np.sum(np.square(Wh @ M @ rest)))  # the cost no step changes
        x = _levenberg_marquardt(
            partial(residual, base=frames, Wh=Wh),
            partial(jacobian, base=frames, Wh=Wh),
            x0,
            offset=offset,
        )
        frames = apply(frames, x)
        if np.abs(x).max() < 1e-10:
            break
    J = jacobian(x0, frames, Wh)
    return frames, J.T @ J


def moving_columns(robot_ids: Sequence[str], reference_id: str) -> np.ndarray:
    """The columns of ``pose_constraints`` that depend on the frames: the reference robot's
    12 and the last (every other entry is its tangent map Pi or an identity)."""
    s = 12 * list(robot_ids).index(reference_id)
    return np.r_[s : s + 12, 12 * len(robot_ids)]


def split_factor(L: np.ndarray, moving: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L1, L2): the columns of L Q, Q orthogonal, with L2's rows ``moving`` zero. Then
    ||W M L||_F^2 = ||W M L1||_F^2 + ||W M L2||_F^2 for any W and M, and a change of M's
    columns ``moving`` leaves the second term as it is: the pose fit's residual keeps
    ``len(moving)`` columns of L (of 12 N + 1) and the Jacobian's rows shrink as much."""
    m = len(moving)
    Q = np.linalg.qr(L[moving].T, mode="complete")[0]
    LQ = L @ Q
    LQ[moving, m:] = 0.0  # L[moving] Q2 = 0 up to rounding
    return LQ[:, :m], LQ[:, m:]


def _pose_jacobian(
    frames: Frames,
    Pi: Mapping[str, np.ndarray],
    Wh: np.ndarray,
    L: np.ndarray,
    robot_ids: Sequence[str],
    reference_id: str,
) -> np.ndarray:
    """d(Wh M(X, Y) L).ravel() / d(X, Y) for the perturbations of every non-reference robot's
    X = T_s_i, then its Y = T_s0_i0. Analytic: each robot's 6 constraint rows move with its
    own X and Y only (``_pose_block_derivatives``), which keeps large teams fast."""
    movers = others(robot_ids, reference_id)
    n_each = 6 * len(movers)
    moving = moving_columns(robot_ids, reference_id)
    rows = Wh.shape[0] * L.shape[1]
    columns = np.zeros((rows, 2 * n_each))
    L_moving = L[moving]
    for k, r in enumerate(movers):
        D = _pose_block_derivatives(frames[0][r], frames[1][r], Pi[r])
        dML = D @ L_moving  # (12, 6, m)
        block = np.einsum("rj,cjm->rmc", Wh[:, 6 * k : 6 * k + 6], dML).reshape(rows, 12)
        columns[:, 6 * k : 6 * k + 6] = block[:, :6]
        columns[:, n_each + 6 * k : n_each + 6 * k + 6] = block[:, 6:]
    return columns


def refine_grasps_from_poses(
    moments: StackedMoments,
    reference_id: str,
    initial: GraspKinematics,
    noise: tuple[float, float] | None = None,
    noise_iterations: int = 2,
    homes: Mapping[str, np.ndarray] | None = None,
    gravity: Mapping[str, HomeGravity] | None = None,
) -> GraspKinematics:
    """Joint first-order maximum-likelihood T_s_i from pose moments (``pose_constraints``).

    Needs fixed home frames {i0} (paper 000's stationary bases); the home frames T_s0_i0
    are fitted too and returned. ``initial`` is a twist fit (its twist noise is kept);
    ``noise`` is the team's (angle [rad], position [m]) pose noise, re-estimated.
    ``gravity``: each robot's gravity direction in its home frame. Gravity is one vector
    for the whole team, so R_s0_i0 g_i0 = g_s0: this fixes the relative tilt of the home
    frames, and with it the tilt part of every R_s_i, to the accuracy of the directions.
    """
    ids = moments.robot_ids
    _check_reference(ids, reference_id)
    R_bar = mean_rotations(moments)
    homes = dict(homes or initial_homes(moments, reference_id, initial.T_s_i))

    frames = [dict(initial.T_s_i), homes]
    level = noise
    if level is None:
        level = _pose_noise(pose_constraints(*frames, R_bar, ids, reference_id), moments)
    for iteration in range(noise_iterations + 1):
        frames, information = _fit_pose_frames(
            moments,
            reference_id,
            frames,
            R_bar,
            level,
            *(gravity_prior(gravity, ids, reference_id) if gravity else (None, None)),
        )
        if iteration < noise_iterations:
            level = _pose_noise(pose_constraints(*frames, R_bar, ids, reference_id), moments, level)
    T, homes = frames
    n = 6 * (len(ids) - 1)
    covariance = covariance_from_information(information)[:n, :n]
    return GraspKinematics(
        reference_id,
        T,
        covariance,
        "poses",
        np.linalg.pinv(covariance, hermitian=True),
        moments.samples,
        initial.twist_noise,
        level,
        homes,
    )


def gravity_prior(
    gravity: Mapping[str, HomeGravity], robot_ids: Sequence[str], reference_id: str
) -> tuple[Callable[[Frames], np.ndarray], Callable[[Frames], np.ndarray]]:
    """The pose fit's gravity prior R_s0_i0 g_i0 = g_s0 (``refine_grasps_from_poses``): its
    whitened residual of the frames, and that residual's Jacobian along the home frames'
    perturbations (dphi, dp) of the non-reference robots: d(exp([dphi]) R g) = -[R g] dphi."""
    movers = others(robot_ids, reference_id)
    g_s0 = gravity[reference_id].direction
    g_s0_std = gravity[reference_id].direction_std
    g_std = {r: np.hypot(gravity[r].direction_std, g_s0_std) for r in movers}

    def residual(frames: Frames) -> np.ndarray:
        return np.concatenate(
            [(frames[1][r][:3, :3] @ gravity[r].direction - g_s0) / g_std[r] for r in movers]
        )

    def jacobian(frames: Frames) -> np.ndarray:
        J = np.zeros((3 * len(movers), 6 * len(movers)))
        for k, r in enumerate(movers):
            g = frames[1][r][:3, :3] @ gravity[r].direction
            J[3 * k : 3 * k + 3, 6 * k : 6 * k + 3] = -sp.skew(g) / g_std[r]
        return J

    return residual, jacobian


def quantization_covariance(
    fit: GraspKinematics,
    resolution: tuple[float, float],
    moments: StackedMoments | None = None,
    still: Sequence[np.ndarray] = (),
    gravity: Mapping[str, HomeGravity] | None = None,
) -> np.ndarray:
    """The grasps' covariance from the quantization of the robots' reported poses, which the
    residuals take for white noise although much of it is a bias.

    ``resolution`` = (angle [rad], position [m]): the step of every robot's grasp pose T_i0_i
    about and along each axis, its encoder steps mapped through its kinematics (a 14-bit
    gimbal: 2 pi / 2^14 about each of its axes). A quantization error is uniform in one step,
    variance step^2 / 12, and a joint that moves less than a step keeps it: a bias, which no
    sample count averages out. Two parts, stacked like ``GraspKinematics.covariance``:

    * a constant error e_i = (phi_i, rho_i) in each robot's grasp frame (a slow or locked
      joint): the estimate exp(-e_s) T_s_i exp(e_i) moves by dphi = R phi_i - phi_s,
      dp = R rho_i - rho_s + [p] phi_s (``_perturb``'s coordinates, R, p of T_s_i): robot i's
      own step, and the reference robot's, shared by every grasp and acting on the lever arm;
    * one error per still stretch of a pose fit (``still``: per stretch the weighted sum of
      its pose rows, ``pose_rows``, whose last entry is the weight): such a stretch counts
      many samples with one error, which a hold at a pose the motion barely leaves (a tilt
      of a few degrees) turns into a grasp error larger than a step. It moves the fit's
      parameters by -(J^T J)^-1 J_b^T Wh M delta_b, J_b the Jacobian of the stretch's summed
      rows, delta_b its pose error (``pose_noise_covariance`` of the step's std).

    Zero for a zero resolution.
    """
    n = 6 * (len(fit.T_s_i) - 1)
    if not any(resolution):
        return np.zeros((n, n))
    std = np.asarray(resolution, dtype=float) / np.sqrt(12.0)
    Q = np.diag(np.repeat(std**2, 3))
    own, shared = constant_error_maps(fit.T_s_i, fit.reference_id)
    covariance = shared @ Q @ shared.T
    for k in range(0, n, 6):
        covariance[k : k + 6, k : k + 6] += own[k : k + 6] @ Q @ own[k : k + 6].T
    if fit.source == "poses" and moments is not None and len(still):
        covariance += _still_covariance(fit, moments, still, tuple(std), gravity)[:n, :n]
    return covariance


def constant_error_maps(
    T_s_i: Mapping[str, np.ndarray], reference_id: str
) -> tuple[np.ndarray, np.ndarray]:
    """(own, shared), each (6(N-1), 6): how constant pose errors e = (phi, rho) in the grasp
    frames move the grasps, stacked like ``GraspKinematics.covariance``. Robot i's own error
    moves its grasp by own_i e_i = (R phi, R rho); the reference robot's moves every grasp by
    shared_i e_s = (-phi, [p] phi - rho) (R, p of T_s_i; ``quantization_covariance``)."""
    movers = others(list(T_s_i), reference_id)
    own = np.zeros((6 * len(movers), 6))
    shared = np.zeros((6 * len(movers), 6))
    for k, rid in enumerate(movers):
        R, p = T_s_i[rid][:3, :3], T_s_i[rid][:3, 3]
        own[6 * k : 6 * k + 6] = np.kron(np.eye(2), R)
        shared[6 * k : 6 * k + 6] = np.block(
            [[-np.eye(3), np.zeros((3, 3))], [sp.skew(p), -np.eye(3)]]
        )
    return own, shared


def _still_covariance(
    fit: GraspKinematics,
    moments: StackedMoments,
    still: Sequence[np.ndarray],
    std: tuple[float, float],
    gravity: Mapping[str, HomeGravity] | None,
) -> np.ndarray:
    """Covariance of a pose fit's (X, Y) from one pose error of std ``std`` per still stretch
    (``quantization_covariance``)."""
    ids, reference_id = fit.robot_ids, fit.reference_id
    movers = others(ids, reference_id)
    frames = [fit.T_s_i, fit.T_s0_i0]
    R_bar = mean_rotations(moments)
    Pi = {r: _tangent_coordinates(R_bar[r]) for r in movers}
    M = pose_constraints(*frames, R_bar, ids, reference_id)
    C = M @ pose_noise_covariance(rotation_moments(moments), ids, *fit.pose_noise) @ M.T
    Wh = np.linalg.inv(np.linalg.cholesky(0.5 * (C + C.T)))
    J = _pose_jacobian(frames, Pi, Wh, _factor(moments.S), ids, reference_id)
    information = J.T @ J
    if gravity:
        prior = gravity_prior(gravity, ids, reference_id)[1](frames)
        information[6 * len(movers) :, 6 * len(movers) :] += prior.T @ prior
    covariance = covariance_from_information(information)
    WhM = Wh @ M
    out = np.zeros_like(covariance)
    for total in still:
        mean = total / max(total[-1], 1e-300)
        rotations = {r: mean[12 * k : 12 * k + 9].reshape(3, 3) for k, r in enumerate(ids)}
        J_b = _pose_jacobian(frames, Pi, Wh, total[:, None], ids, reference_id)
        G = covariance @ J_b.T @ WhM
        out += G @ pose_noise_covariance(rotations, ids, *std) @ G.T
    return out


def _check_reference(robot_ids: Sequence[str], reference_id: str) -> None:
    if reference_id not in robot_ids:
        raise ValueError(f"reference robot {reference_id!r} is not among {tuple(robot_ids)}")
    if len(robot_ids) < 2:
        raise ValueError("grasp kinematics needs at least two robots: add a robot")


def residual_map_of(
    kinematics: GraspKinematics, moments: StackedMoments | None = None
) -> np.ndarray:
    """The whitened residual map P of a fit (twist rows, or pose rows given pose moments)."""
    ids = kinematics.robot_ids
    if kinematics.source == "twists":
        return residual_map(
            stacked_adjoint(kinematics.T_s_i, ids), noise_precision(kinematics.twist_noise, ids)
        )
    R_bar = mean_rotations(moments)
    M = pose_constraints(kinematics.T_s_i, kinematics.T_s0_i0, R_bar, ids, kinematics.reference_id)
    Sigma = pose_noise_covariance(rotation_moments(moments), ids, *kinematics.pose_noise)
    return gls_residual_map(M, Sigma)


def robust_weights(norms: np.ndarray, typical: float, loss: str, scale: float) -> np.ndarray:
    """IRLS weights of whitened residual norms, u = norm / typical (about 1 for inliers).

    ``typical`` is the inlier norm: sqrt(dof) when the whitening is trusted (online), the
    median norm for a batch (robust to noise levels inflated by the outliers themselves).
    Huber: w = min(1, scale / u); Cauchy: w = 1 / (1 + (u / scale)^2); "none": w = 1.
    """
    u = np.asarray(norms, dtype=float) / max(typical, 1e-300)
    if loss == "none":
        return np.ones_like(u)
    if loss == "huber":
        return np.minimum(1.0, scale / np.maximum(u, 1e-300))
    if loss == "cauchy":
        return 1.0 / (1.0 + (u / scale) ** 2)
    raise ValueError(f"robust loss {loss!r} is not one of {ROBUST_LOSSES}")


def fit_grasps(
    twists: Mapping[str, np.ndarray],
    reference_id: str,
    poses: Mapping[str, np.ndarray] | None = None,
    gravity: Mapping[str, np.ndarray] | None = None,
    loss: str = "huber",
    scale: float = 3.0,
    robust_iterations: int = 2,
    gravity_floor: float = 1e-4,
) -> GraspKinematics:
    """Batch grasp kinematics: the twist fit, then (if poses are given) the pose fit, each
    inside robust reweighting passes. Arrays are per robot, sampled at the same instants:
    twists (Q, 6), poses T_i0_i (Q, 4, 4), gravity g_i (Q, 3) in {i} (used with poses).
    ``gravity_floor`` [rad]: the smallest std claimed for a home frame's gravity direction
    (``HomeGravity.floor``: the levelness of the robot's base)."""
    ids = tuple(twists)
    Z = twist_rows(twists, ids)
    fit = refine_grasps(StackedMoments.from_rows(ids, Z), reference_id)
    for _ in range(robust_iterations if loss != "none" else 0):
        norms = np.linalg.norm(Z @ residual_map_of(fit).T, axis=1)
        w = robust_weights(norms, float(np.median(norms)), loss, scale)
        fit = refine_grasps(
            StackedMoments.from_rows(ids, Z, w), reference_id, fit.T_s_i, fit.twist_noise, 1
        )
    if poses is None:
        return fit
    Y = pose_rows(poses, ids)
    moments = StackedMoments.from_rows(ids, Y)
    homes_g = None
    if gravity is not None:
        homes_g = {r: HomeGravity.from_samples(poses[r], gravity[r], gravity_floor) for r in ids}
    fit = refine_grasps_from_poses(moments, reference_id, fit, gravity=homes_g)
    for _ in range(robust_iterations if loss != "none" else 0):
        norms = np.linalg.norm(Y @ residual_map_of(fit, moments).T, axis=1)
        w = robust_weights(norms, float(np.median(norms)), loss, scale)
        moments = StackedMoments.from_rows(ids, Y, w)
        fit = refine_grasps_from_poses(
            moments, reference_id, fit, fit.pose_noise, 1, fit.T_s0_i0, homes_g
        )
    return fit


# ----- paper 000: BFGS refinement over all pairs (Sec. III-B, last paragraph) ---------------
def paper_refinement(
    moments: StackedMoments, reference_id: str, initial: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """Minimize sum over all pairs (i < j) of ||V_i - Ad(T_i_j) V_j||^2 with BFGS.

    Unit weights (the paper gives none), parameters T_s_i only, so every loop closes.
    """
    ids = moments.robot_ids
    pairs = [(a, b) for a in range(len(ids)) for b in range(a + 1, len(ids))]

    def cost(x: np.ndarray) -> float:
        T = perturbed(initial, reference_id, x)
        Q = np.zeros((6 * len(pairs), 6 * len(ids)))
        for k, (a, b) in enumerate(pairs):
            Q[6 * k : 6 * k + 6, 6 * a : 6 * a + 6] = np.eye(6)
            Q[6 * k : 6 * k + 6, 6 * b : 6 * b + 6] = -sp.adjoint(sp.inverse(T[ids[a]]) @ T[ids[b]])
        return float(np.trace(Q @ moments.S @ Q.T)) / max(moments.weight, 1e-300)

    from scipy.optimize import minimize  # loaded here: not on the estimators' path

    fit = minimize(cost, np.zeros(6 * (len(ids) - 1)), method="BFGS")
    return perturbed(initial, reference_id, fit.x)


def pose_rate_rows(T: np.ndarray, V: np.ndarray) -> np.ndarray:
    """d/dt of one robot's pose row [vec(R) (by rows), p] of T_i0_i, from its body twist
    V = (omega, v) in {i}: dR/dt = R [omega], dp/dt = R v. T (..., 4, 4), V (..., 6)."""
    R = T[..., :3, :3]
    dR = (R @ sp.skew(V[..., :3])).reshape(R.shape[:-2] + (9,))
    return np.concatenate([dR, (R @ V[..., 3:, None])[..., 0]], axis=-1)


def clock_sensitivity(
    moments: StackedMoments,
    rates: Mapping[str, np.ndarray],
    fit: GraspKinematics,
    gravity: Mapping[str, HomeGravity] | None = None,
    step: float = 1e-3,
) -> dict[str, np.ndarray]:
    """d(grasp estimate)/d(clock offset of robot i) [per s] of a pose fit, per robot i.

    ``rates[i]`` = sum_k w_k [y_k; ydot_i,k] ydot_i,k^T (12N+13 x 12), ydot_i the rate of
    robot i's pose row (``pose_rate_rows``). Shifting robot i's samples by d in time (to
    first order in the samples, y_k + d ydot_k) changes the moments by d (E + E^T) + d^2 G,
    E the first 12N+1 rows in robot i's columns, G the last 12 in its block: positive
    semi-definite, as moments must be. The fit is redone on moments so shifted by ``step``.
    The result is stacked like ``covariance``: (dphi, dp) of every non-reference robot, so
    an offset of std sigma_i adds sigma_i^2 J_i J_i^T to it.
    """
    ids = moments.robot_ids
    movers = others(ids, fit.reference_id)
    out = {}
    for rid, D in rates.items():
        E, G = np.zeros_like(moments.S), np.zeros_like(moments.S)
        a, n = 12 * ids.index(rid), len(moments.S)
        E[:, a : a + 12] = D[:n]
        G[a : a + 12, a : a + 12] = D[n:]
        shifted = replace(moments, S=moments.S + step * (E + E.T) + step**2 * G)
        moved = refine_grasps_from_poses(
            shifted, fit.reference_id, fit, fit.pose_noise, 0, fit.T_s0_i0, gravity
        )
        out[rid] = np.concatenate(
            [
                np.concatenate(
                    [
                        sp.log3(moved.T_s_i[r][:3, :3] @ fit.T_s_i[r][:3, :3].T),
                        moved.T_s_i[r][:3, 3] - fit.T_s_i[r][:3, 3],
                    ]
                )
                / step
                for r in movers
            ]
        )
    return out
