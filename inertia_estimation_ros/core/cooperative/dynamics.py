"""Inertia from moving data: paper 000, Sec. III-D (Eqs. 17-33), and the one-stage 10-parameter fit.

Paper method (stage C, after the CoM of ``statics``): Euler's equation about the CoM, in
the frame {b} at the CoM with the axes of {s},
    m_b = I_b alpha_b + [omega_b] I_b omega_b             (Eq. 17)
    m_b = sum_i [p_b_i] R_b_i f_i (+ R_b_i m_i)           (Eq. 18)
stacked as X I_reg = y (Eqs. 19-32), solved by least squares, then made positive
semidefinite by clipping eigenvalues (the paper's footnote), and diagonalized (Eq. 33).
The rows A_q + B_q of Eqs. 20 and 24/28 are the inertia columns of the moment rows of the
rigid-body regressor (``core.regressor``), which is where they are computed.

Project method, one stage: every sample, static or moving, gives the Newton-Euler
equation of the whole payload about the origin of {s}:
    sum_i Ad(T_i_s)^T F_i = Y(V_s, dV_s, g_s) theta          (core.regressor)
It is linear in the 10 parameters theta (mass, first moment, inertia about {s}), so
neither the static phase nor an earlier CoM estimate is needed, and grasp moments are
used when robots measure them. ``WrenchMoments`` accumulates it in information form.
The accumulated statistics do not depend on the grasp frames T_s_i: the wrench side is
kept as the tensors K_i = sum_k Y_k^T (x) F_i,k, so the current T_s_i can be applied at
solve time (``WrenchMoments.solve``), and a grasp estimate that keeps improving never
makes the accumulated data stale.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import spatial as sp
from ..inertial import InertialParameters, inertia_matrix
from ..regressor import body_regressor
from .diagnostics import covariance_from_information
from .grasp_kinematics import consensus_map, noise_precision, stacked_adjoint

ROWS = {"moment": slice(0, 3), "force": slice(3, 6)}


# ----- paper 000, Eqs. 17-33 ------------------------------------------------------------------
def inertia_rows(omega_b: np.ndarray, alpha_b: np.ndarray) -> np.ndarray:
    """X (3Q x 6): rows A_q + B_q (Eqs. 20, 24/28), (A_q + B_q) I_reg = I alpha + w x I w."""
    Q = len(omega_b)
    V = np.concatenate([omega_b, np.zeros((Q, 3))], axis=1)
    dV = np.concatenate([alpha_b, np.zeros((Q, 3))], axis=1)
    return body_regressor(V, dV)[:, :3, 4:].reshape(-1, 6)


def moment_about_com(
    wrenches: Mapping[str, np.ndarray], T_s_i: Mapping[str, np.ndarray], p_s_c: np.ndarray
) -> np.ndarray:
    """y (Q, 3): sum_i [p_b_i] R_b_i f_i + R_b_i m_i about the CoM, in {s} axes (Eq. 29)."""
    total = 0.0
    for rid, F in wrenches.items():
        F = np.asarray(F, dtype=float)
        R, p_b_i = T_s_i[rid][:3, :3], T_s_i[rid][:3, 3] - p_s_c
        f = F[:, 3:] @ R.T
        total = total + np.cross(p_b_i, f) + np.nan_to_num(F[:, :3], nan=0.0) @ R.T
    return total


def estimate_inertia_about_com(
    omega_b: np.ndarray, alpha_b: np.ndarray, moment_b: np.ndarray
) -> np.ndarray:
    """I_b (3x3) from X I_reg = y (Eqs. 30-32), projected onto the PSD cone as in the paper's
    footnote (negative eigenvalues set to zero)."""
    X = inertia_rows(omega_b, alpha_b)
    I_reg = np.linalg.lstsq(X, np.asarray(moment_b).reshape(-1), rcond=None)[0]
    lam, R = np.linalg.eigh(inertia_matrix(I_reg))
    return (R * np.clip(lam, 0.0, None)) @ R.T


def principal_axes(I_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(moments ascending, R_b_c with det +1): Eq. 33, I_c = R_b_c^T I_b R_b_c diagonal."""
    return InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), I_b).principal_axes()


# ----- the payload's motion from all robots --------------------------------------------------
def payload_motion(
    twists: Mapping[str, np.ndarray],
    twist_derivatives: Mapping[str, np.ndarray],
    T_s_i: Mapping[str, np.ndarray],
    twist_noise: Mapping[str, tuple[float, float]],
) -> tuple[np.ndarray, np.ndarray]:
    """(V_s, dV_s), (Q, 6) each: the noise-weighted consensus of every robot's twist and
    twist derivative mapped to {s} (V_i = Ad(T_i_s) V_s); averaging N robots divides the
    noise variance in the regressor by about N."""
    ids = list(T_s_i)
    C = consensus_map(stacked_adjoint(T_s_i, ids), noise_precision(twist_noise, ids))
    V = np.concatenate([np.asarray(twists[r]) for r in ids], axis=1) @ C.T
    dV = np.concatenate([np.asarray(twist_derivatives[r]) for r in ids], axis=1) @ C.T
    return V, dV


def consensus_covariance(
    T_s_i: Mapping[str, np.ndarray],
    weighting: Mapping[str, tuple[float, float]],
    noise: Mapping[str, tuple[float, float]],
) -> np.ndarray:
    """Covariance (6x6) of the consensus C z of ``payload_motion`` (weights from the
    ``weighting`` noise levels) when z has per-robot (angular, linear) noise ``noise``."""
    ids = list(T_s_i)
    C = consensus_map(stacked_adjoint(T_s_i, ids), noise_precision(weighting, ids))
    return (C / noise_precision(noise, ids)) @ C.T


def payload_gravity(
    gravity: Mapping[str, np.ndarray], T_s_i: Mapping[str, np.ndarray]
) -> np.ndarray:
    """g_s (Q, 3): the mean of R_s_i g_i over the robots that report gravity."""
    return np.mean([np.asarray(g) @ T_s_i[r][:3, :3].T for r, g in gravity.items()], axis=0)


# ----- project method: one-stage information form --------------------------------------------
def wrench_rows(Y: np.ndarray, F: np.ndarray) -> np.ndarray:
    """X (Q, 60 + 6N): row k is [vec Y_k (row-major), F_k (N x 6, row-major)]."""
    return np.concatenate([Y.reshape(len(Y), -1), F.reshape(len(F), -1)], axis=1)


@dataclass
class WrenchMoments:
    """Information-form statistics of sum_i M_i F_i,k = Y_k theta, M_i = Ad(T_i_s)^T.

    YY[b, c] = sum_k Y_k[b]^T Y_k[c] (6 x 6 x 10 x 10, rows b, c of Y); K[i] = sum_k
    Y_k^T (x) F_i,k (10 x 6 x 6); FF = sum_k F_k F_k^T of the stacked robot wrenches
    (6N x 6N). All are independent of T_s_i; memory is constant.
    """

    robot_ids: tuple[str, ...]
    has_torque: tuple[bool, ...]
    YY: np.ndarray = field(default_factory=lambda: np.zeros((6, 6, 10, 10)))
    K: np.ndarray = field(default_factory=lambda: np.zeros(0))
    FF: np.ndarray = field(default_factory=lambda: np.zeros(0))
    samples: int = 0
    dV_covariance: np.ndarray | None = None  # noise of the dV_s used in Y (errors in variables)

    def __post_init__(self) -> None:
        n = len(self.robot_ids)
        if self.K.size == 0:
            self.K = np.zeros((n, 10, 6, 6))
        if self.FF.size == 0:
            self.FF = np.zeros((6 * n, 6 * n))

    @classmethod
    def empty(cls, robot_ids: Sequence[str], has_torque: Sequence[bool]) -> WrenchMoments:
        return cls(tuple(robot_ids), tuple(bool(h) for h in has_torque))

    def add(self, Y: np.ndarray, F: np.ndarray) -> None:
        """One sample: regressor Y (6x10) and robot wrenches F (N x 6), each in its {i},
        finite, moments of robots without torque sensing already zero (the fast path)."""
        self.YY += Y[:, None, :, None] * Y[None, :, None, :]
        self.K += Y.T[None, :, :, None] * F[:, None, None, :]
        flat = F.ravel()
        self.FF += flat[:, None] * flat[None, :]
        self.samples += 1

    def add_batch(self, Y: np.ndarray, F: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Q samples: Y (Q, 6, 10), F (Q, N, 6). Moments of robots without torque sensing,
        and any non-finite entries, count as zero (a passive gimbal transmits no moment)."""
        self.add_rows(wrench_rows(Y, self.clean(F)), weights)

    def clean(self, F: np.ndarray) -> np.ndarray:
        """A copy of robot wrenches (Q, N, 6) as the moments take them: non-finite entries
        and the moments of robots without torque sensing zero."""
        F = np.array(F, dtype=float)
        if not np.isfinite(F).all():
            F = np.nan_to_num(F, nan=0.0, posinf=0.0, neginf=0.0)
        F[:, ~np.array(self.has_torque), :3] = 0.0
        return F

    def add_rows(self, X: np.ndarray, weights: np.ndarray | None = None) -> None:
        """Q samples as rows x_k = [vec Y_k, F_k] (``wrench_rows``, wrenches ``clean``):
        YY, K and FF are blocks of one product sum_k w_k x_k x_k^T."""
        Xw = X if weights is None else X * np.asarray(weights, dtype=float)[:, None]
        self.add_product(Xw.T @ X, len(X))

    def add_product(self, S: np.ndarray, samples: int) -> None:
        """``add_rows`` of ``samples`` rows given their product S = sum_k w_k x_k x_k^T."""
        self.YY += S[:60, :60].reshape(6, 10, 6, 10).transpose(0, 2, 1, 3)
        self.K += S[:60, 60:].reshape(6, 10, len(self.robot_ids), 6).transpose(2, 1, 0, 3)
        self.FF += S[60:, 60:]
        self.samples += samples

    def __add__(self, other: WrenchMoments) -> WrenchMoments:
        return WrenchMoments(
            self.robot_ids,
            self.has_torque,
            self.YY + other.YY,
            self.K + other.K,
            self.FF + other.FF,
            self.samples + other.samples,
            _pooled_covariance(self, other),
        )

    def wrench_maps(self, T_s_i: Mapping[str, np.ndarray]) -> np.ndarray:
        """M (N, 6, 6): M_i = Ad(T_i_s)^T maps robot i's wrench to the payload about {s}."""
        return np.stack([sp.adjoint(sp.inverse(T_s_i[r])).T for r in self.robot_ids])

    def noise_structure(self, T_s_i: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(A_f, A_m): the net-wrench covariance is sigma_f^2 A_f + sigma_m^2 A_m for white
        force noise sigma_f and moment noise sigma_m (robots with torque sensing) per robot."""
        M = self.wrench_maps(T_s_i)
        A_f = np.einsum("iab,icb->ac", M[:, :, 3:], M[:, :, 3:])
        torque = np.array(self.has_torque, dtype=float)
        A_m = np.einsum("i,iab,icb->ac", torque, M[:, :, :3], M[:, :, :3])
        return A_f, A_m

    def normal_equations(
        self, T_s_i: Mapping[str, np.ndarray], W: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sum_k Y_k^T W Y_k, sum_k Y_k^T W F_s,k) for the net wrench F_s with grasps T_s_i.

        With ``dV_covariance`` the first term is bias-compensated: the expected contribution
        of the regressor noise, samples * E[dY^T W dY], is subtracted (errors-in-variables).
        """
        info, eta = stacked_normal_equations([self], self.wrench_maps(T_s_i), W)
        return info[0], eta[0]

    def residual_moment(self, T_s_i: Mapping[str, np.ndarray], theta: np.ndarray) -> np.ndarray:
        """sum_k r_k r_k^T (6x6) of the residuals r_k = F_s,k - Y_k theta."""
        M = self.wrench_maps(T_s_i)
        M_flat = np.concatenate(list(M), axis=1)
        FsFs = M_flat @ self.FF @ M_flat.T
        cross = np.einsum("a,iabd,icd->bc", theta, self.K, M)  # sum_k (Y theta)_k F_s,k^T
        fitted = np.einsum("a,bcad,d->bc", theta, self.YY, theta)
        return FsFs - cross - cross.T + fitted


def stacked_normal_equations(
    moments: Sequence[WrenchMoments], M: np.ndarray, W: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``WrenchMoments.normal_equations`` of many moments of one team at once, given the
    team's wrench maps M (``wrench_maps``) and the weight W: (info (K, 10, 10), eta (K, 10))."""
    info, _ = _corrected_information(moments, W)
    eta = np.einsum("bc,kiabd,icd->ka", W, np.stack([m.K for m in moments]), M)
    return info, eta


def _corrected_information(
    moments: Sequence[WrenchMoments], W: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(info (K, 10, 10), corrected (K,) bool): sum_k Y_k^T W Y_k of each moments, less the
    regressor noise's expected part where that keeps it positive semidefinite (``corrected``)."""
    info = np.einsum("bc,kbcad->kad", W, np.stack([m.YY for m in moments]))
    done = np.zeros(len(moments), dtype=bool)
    noisy = [k for k, m in enumerate(moments) if m.dV_covariance is not None]
    if noisy:
        power = regressor_noise_power(np.stack([moments[k].dV_covariance for k in noisy]), W)
        samples = np.array([moments[k].samples for k in noisy], dtype=float)
        corrected = info[noisy] - samples[:, None, None] * power
        scale = np.abs(info[noisy]).max(axis=(1, 2))
        keep = np.linalg.eigvalsh(corrected)[:, 0] >= -1e-9 * scale
        info[np.array(noisy)[keep]] = corrected[keep]
        done[np.array(noisy)[keep]] = True
    return info, done


def information_derivative(m: WrenchMoments, dW: np.ndarray, corrected: bool) -> np.ndarray:
    """d(sum_k Y_k^T W Y_k (less the regressor noise's part if ``corrected``)) for weights
    changing by dW (P, 6, 6): (P, 10, 10). The information is linear in W."""
    info = np.einsum("pbc,bcad->pad", dW, m.YY)
    if corrected:  # regressor_noise_power of each dW: dY = sum_j d_j G_j
        G = body_regressor(np.zeros((6, 6)), np.eye(6))
        power = np.einsum("jba,jl,pbc,lcd->pad", G, m.dV_covariance, dW, G, optimize=True)
        info -= m.samples * power
    return info


def wrench_map_derivatives(
    T_s_i: Mapping[str, np.ndarray], M: np.ndarray, robot_ids: Sequence[str], reference_id: str
) -> np.ndarray:
    """dM (P, N, 6, 6): the wrench maps M_i = Ad(T_i_s)^T (``wrench_maps``) along each of the
    P = 6(N-1) grasp perturbations x of ``grasp_kinematics.perturbed``. A perturbation
    (dphi, dp) of T_s_i is the left twist xi = (dphi, dp + p x dphi), so
    Ad(T_i_s) -> Ad(T_i_s) (1 - ad(xi)) and dM_i = -ad(xi)^T M_i. M is in the order of
    ``robot_ids``, the perturbations in that of ``T_s_i`` (as ``perturbed``)."""
    ids = tuple(robot_ids)
    movers = [r for r in T_s_i if r != reference_id]
    dM = np.zeros((6 * len(movers), len(ids), 6, 6))
    for k, rid in enumerate(movers):
        i, p = ids.index(rid), T_s_i[rid][:3, 3]
        for c, e in enumerate(np.eye(6)):
            xi = np.r_[e[:3], e[3:] + np.cross(p, e[:3])]
            dM[6 * k + c, i] = -sp.ad(xi).T @ M[i]
    return dM


def _pooled_covariance(a: WrenchMoments, b: WrenchMoments) -> np.ndarray | None:
    """Sample-weighted dV noise covariance of two pooled sets (None if neither has one)."""
    parts = [(m.samples, m.dV_covariance) for m in (a, b) if m.dV_covariance is not None]
    if not parts:
        return None
    return sum(n * C for n, C in parts) / max(sum(n for n, _ in parts), 1)


def regressor_noise_power(dV_covariance: np.ndarray, W: np.ndarray) -> np.ndarray:
    """E[dY^T W dY] (10x10) per sample for noise of covariance Sigma on dV_s (or a stack of
    them, (..., 6, 6)).

    Y is affine in dV (``core.regressor``): dY = sum_j d_j G_j with G_j = Y(0, e_j).
    """
    G = body_regressor(np.zeros((6, 6)), np.eye(6))  # (6 j, 6 rows, 10)
    WG = np.einsum("bc,lcd->lbd", W, G)
    return np.einsum("jba,...jbd->...ad", G, np.einsum("...jl,lbd->...jbd", dV_covariance, WG))


def regressor_noise_covariance(dV_covariance: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """E[dY theta theta^T dY^T] (6x6): the net-wrench residual that noise on dV_s causes."""
    B = regressor_noise_map(theta)
    return B @ dV_covariance @ B.T


def regressor_noise_map(theta: np.ndarray) -> np.ndarray:
    """B (6x6) with dY theta = B d(dV_s): the model wrench's change per error of the twist
    derivative (Y is linear in dV)."""
    return np.einsum("jba,a->bj", body_regressor(np.zeros((6, 6)), np.eye(6)), theta)


def stack_wrenches(wrenches: Mapping[str, np.ndarray], robot_ids: Sequence[str]) -> np.ndarray:
    """F (Q, N, 6) from per-robot (Q, 6) wrenches."""
    return np.stack([np.asarray(wrenches[r], dtype=float) for r in robot_ids], axis=1)


@dataclass(frozen=True)
class ParameterFit:
    """The one-stage generalized least-squares fit of theta (10) in {s}."""

    theta: np.ndarray
    covariance: np.ndarray  # data noise (inflated) plus the propagated grasp uncertainty
    information: np.ndarray  # sum over groups of Y^T W Y (inverse data covariance)
    noise: dict[str, tuple[float, float]]  # group -> (force [N], moment [N m]) per robot
    residual_rms: dict[str, float]  # "force" [N], "moment" [N m] of the net wrench
    samples: dict[str, int]
    group_information: dict[str, np.ndarray]  # each group's Y^T W Y


def _scaled_solve(information: np.ndarray, eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(theta, covariance): the Jacobi-scaled minimum-norm solution, so unexcited
    directions get zero rather than noise, and a covariance that calls them unknown."""
    return _scaled_inverse(information) @ eta, covariance_from_information(information)


def _scaled_inverse(information: np.ndarray) -> np.ndarray:
    """D (D H D)^+ D, D = diag(H)^-1/2 (zero where H's diagonal is): ``_scaled_solve``'s map."""
    d = np.sqrt(np.clip(np.diag(information), 0.0, None))
    d = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0)
    scaled = np.linalg.pinv(d[:, None] * information * d, rcond=1e-10, hermitian=True)
    return d[:, None] * scaled * d


def theta_grasp_jacobian(
    groups: Mapping[str, WrenchMoments],
    T_s_i: Mapping[str, np.ndarray],
    reference_id: str,
    noise: Mapping[str, tuple[float, float]],
    theta: np.ndarray,
    information: np.ndarray,
) -> np.ndarray:
    """d theta / d x (10 x 6(N-1)) of ``fit_parameters``' solve at fixed noise levels, x the
    grasp perturbations of ``grasp_kinematics.perturbed``: theta = H^+ eta, so
    d theta = H^+ (d eta - dH theta), with H = sum_g sum_k Y_k^T W_g Y_k (less the regressor
    noise's part), eta = sum_g sum_k Y_k^T W_g sum_i M_i F_i,k, and both W_g = C_g^-1 (the
    net wrench's noise, ``noise_structure``) and M_i moving with the grasps
    (``wrench_map_derivatives``): dW = -W dC W."""
    dH, deta = 0.0, 0.0
    for name, m in groups.items():
        M = m.wrench_maps(T_s_i)
        dM = wrench_map_derivatives(T_s_i, M, m.robot_ids, reference_id)
        sigma_f, sigma_m = noise[name]
        torque = np.array(m.has_torque, dtype=float)
        dA = sigma_f**2 * np.einsum("piab,icb->pac", dM[..., 3:], M[..., 3:])
        dA += sigma_m**2 * np.einsum("i,piab,icb->pac", torque, dM[..., :3], M[..., :3])
        dC = dA + np.swapaxes(dA, 1, 2)
        W = noise_weight(m.noise_structure(T_s_i), noise[name])
        dC += 1e-12 * np.trace(dC, axis1=1, axis2=2)[:, None, None] * np.eye(6)
        dW = -W @ dC @ W
        corrected = _corrected_information([m], W)[1][0]
        dH = dH + information_derivative(m, dW, corrected)
        deta = deta + np.einsum("pbc,iabd,icd->pa", dW, m.K, M)
        deta = deta + np.einsum("bc,iabd,picd->pa", W, m.K, dM)
    return _scaled_inverse(information) @ (deta - dH @ theta).T


def wrench_noise(R: np.ndarray, A_f: np.ndarray, A_m: np.ndarray, floor: float) -> tuple:
    """(sigma_f, sigma_m) fitting the mean residual moment R ~ sigma_f^2 A_f + sigma_m^2 A_m."""
    basis = [A_f] + ([A_m] if np.abs(A_m).max() > 0 else [])
    B = np.stack([b.ravel() for b in basis], axis=1)
    var = np.clip(np.linalg.lstsq(B, R.ravel(), rcond=None)[0], floor**2, None)
    return float(np.sqrt(var[0])), float(np.sqrt(var[1])) if len(var) > 1 else 0.0


def noise_weight(
    structure: tuple[np.ndarray, np.ndarray], level: tuple[float, float]
) -> np.ndarray:
    """W = C^-1 of the net wrench's noise C = sigma_f^2 A_f + sigma_m^2 A_m (a tiny ridge
    keeps it finite), ``structure`` = (A_f, A_m) (``WrenchMoments.noise_structure``)."""
    A_f, A_m = structure
    C = level[0] ** 2 * A_f + level[1] ** 2 * A_m
    return np.linalg.inv(C + 1e-12 * np.trace(C) * np.eye(6))


def solve_theta(
    groups: Mapping[str, WrenchMoments],
    T_s_i: Mapping[str, np.ndarray],
    noise: Mapping[str, tuple[float, float]],
    structure: Mapping[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """(theta, its data covariance, the information H, each group's information) of the
    generalized least squares over the groups at fixed noise levels (``fit_parameters``)."""
    structure = structure or {g: m.noise_structure(T_s_i) for g, m in groups.items()}
    parts = {
        g: m.normal_equations(T_s_i, noise_weight(structure[g], noise[g]))
        for g, m in groups.items()
    }
    info = sum(i for i, _ in parts.values())
    theta, pinv = _scaled_solve(info, sum(e for _, e in parts.values()))
    return theta, pinv, info, {g: i for g, (i, _) in parts.items()}


def fit_parameters(
    groups: Mapping[str, WrenchMoments],
    T_s_i: Mapping[str, np.ndarray],
    reference_id: str,
    grasp_covariance: np.ndarray | None = None,
    variance_inflation: float = 1.0,
    noise_iterations: int = 3,
) -> ParameterFit:
    """theta by generalized least squares over groups of samples (e.g. "static", "dynamic").

    Each group has its own per-robot force and moment noise (re-estimated
    ``noise_iterations`` times from the residuals); the net wrench of a sample then has
    the covariance sigma_f^2 A_f + sigma_m^2 A_m (``WrenchMoments.noise_structure``), whose
    inverse weights it. The covariance is variance_inflation * information^-1 plus J G J^T,
    G the grasp covariance (``GraspKinematics.covariance``), J = d theta / d grasps.
    """
    structure = {g: m.noise_structure(T_s_i) for g, m in groups.items()}
    noise = {g: (1.0, 1.0) for g in groups}
    for _ in range(noise_iterations):
        theta = solve_theta(groups, T_s_i, noise, structure)[0]
        for g, moments in groups.items():
            R = moments.residual_moment(T_s_i, theta) / max(moments.samples, 1)
            floor = 1e-9 * np.sqrt(np.trace(moments.FF) / max(moments.samples, 1) + 1e-300)
            noise[g] = wrench_noise(R, *structure[g], floor)
    theta, pinv, info, group_information = solve_theta(groups, T_s_i, noise, structure)
    covariance = variance_inflation * pinv
    if grasp_covariance is not None and grasp_covariance.size:
        J = theta_grasp_jacobian(groups, T_s_i, reference_id, noise, theta, info)
        covariance = covariance + J @ grasp_covariance @ J.T
    total = sum(m.residual_moment(T_s_i, theta) for m in groups.values())
    count = max(sum(m.samples for m in groups.values()), 1)
    residual_rms = {
        name: float(np.sqrt(max(np.trace(total[rows, rows]), 0.0) / (3 * count)))
        for name, rows in ROWS.items()
    }
    return ParameterFit(
        theta,
        0.5 * (covariance + covariance.T),
        info,
        noise,
        residual_rms,
        {g: m.samples for g, m in groups.items()},
        group_information,
    )


def segment_overdispersion(
    segments: Sequence[tuple[Sequence[WrenchMoments], tuple[float, float]]],
    T_s_i: Mapping[str, np.ndarray],
    theta: np.ndarray,
    information: np.ndarray,
    inflation: float = 1.0,
) -> np.ndarray:
    """Covariance of theta that the clusters' disagreement adds to the noise model's (10x10).

    ``segments``: per segment in use, its consecutive clusters of samples (oldest first) and
    its group's noise. Each cluster b has the score g_b = eta_b - I_b theta
    (``normal_equations``); ``score_overdispersion`` does the rest.
    """
    scored: list[list] = [[] for _ in segments]
    first = next((clusters[0] for clusters, _ in segments if clusters), None)
    if first is not None:  # clusters of one team: the same maps and noise structure
        M, structure = first.wrench_maps(T_s_i), first.noise_structure(T_s_i)
    for level in {tuple(level) for clusters, level in segments if clusters}:
        mine = [k for k, (clusters, lv) in enumerate(segments) if clusters and tuple(lv) == level]
        stacked = [c for k in mine for c in segments[k][0]]  # all at once: one weight
        info, eta = stacked_normal_equations(stacked, M, noise_weight(structure, level))
        scores = list(zip(eta - info @ theta, info, strict=True))
        ends = np.cumsum([len(segments[k][0]) for k in mine])
        for k, end in zip(mine, ends, strict=True):
            scored[k] = scores[end - len(segments[k][0]) : end]
    return score_overdispersion(scored, information, inflation)


def score_overdispersion(
    segments: Sequence[Sequence[tuple[np.ndarray, np.ndarray]]],
    information: np.ndarray,
    inflation: float = 1.0,
    fitted: float = 0.0,
) -> np.ndarray:
    """Covariance of theta that the clusters' disagreement adds to the noise model's.

    ``segments``: per segment, its consecutive clusters (oldest first) as (score g_b,
    information I_b) of the whitened rows, g_b = eta_b - I_b theta. Under the noise model
    Var(g_b) = inflation I_b; errors the model lacks (an unmeasured wrench, model errors
    smooth in time such as central-difference accelerations or a filter's correlated
    estimates) make the scores scatter more and neighbouring clusters' scores agree. The
    long-run covariance of the scores (Newey-West, lag 1 between neighbouring clusters of a
    segment, Bartlett weight 1/2) less the model's, mapped by H^+ on both sides, its
    positive part, is what they add (H = ``information``, with any prior's). ``fitted``: the
    parameters fitted to the same clusters (their effective number, under a prior), which
    pull the scores' sum toward zero; the scores' scatter is scaled by G / (G - fitted) for
    G clusters, at most by 2 (a small-sample correction of cluster-robust covariances; few
    clusters would make it unbounded).
    """
    n = len(information)
    B, expected = np.zeros((n, n)), np.zeros((n, n))
    for scores in segments:
        if not len(scores):
            continue
        g = np.array([score for score, _ in scores])  # (clusters, n), oldest first
        lagged = g[1:].T @ g[:-1]
        B += g.T @ g + 0.5 * (lagged + lagged.T)
        expected += inflation * np.sum([info for _, info in scores], axis=0)
    clusters = sum(len(scores) for scores in segments)
    if fitted:
        B *= min(clusters / max(clusters - fitted, 1e-9), 2.0)
    H_pinv = covariance_from_information(information)
    values, vectors = np.linalg.eigh(H_pinv @ (B - expected) @ H_pinv)
    return (vectors * np.clip(values, 0.0, None)) @ vectors.T
