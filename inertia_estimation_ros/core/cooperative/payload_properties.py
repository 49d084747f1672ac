"""Mass, CoM, CoM inertia and principal axes of theta, with first-order covariances.

theta = [m, h, I_o] in {s} (``core.inertial``). The outputs are m, p_s_c = h / m,
I_c = I_o - m [c][c]^T (about the CoM, {s} axes), and the principal moments
(ascending) and axes R_s_c (det +1) of I_c (paper 000, Eq. 33). Covariances are
propagated with the Jacobian of these maps. The principal-axes rotation covariance is
of dphi in {s} with R_s_c = exp([dphi]) R_hat_s_c, from eigenvector perturbation theory:
with E = R^T dI R, the body rotation psi has psi_z = E_xy / (l_x - l_y),
psi_x = E_yz / (l_y - l_z), psi_y = E_zx / (l_z - l_x), and dphi = R psi.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from .. import spatial as sp
from ..inertial import InertialParameters, inertia_matrix, inertia_vector


@dataclass(frozen=True)
class PayloadProperties:
    """Physical properties of the payload in {s}, each with its covariance."""

    mass: float  # [kg]
    mass_variance: float
    p_s_c: np.ndarray  # CoM in {s} [m]
    p_s_c_covariance: np.ndarray  # 3x3
    inertia_about_com: np.ndarray  # 3x3 in {s} axes [kg m^2]
    inertia_about_com_covariance: np.ndarray  # 6x6 of [Ixx, Ixy, Ixz, Iyy, Iyz, Izz]
    principal_moments: np.ndarray  # ascending [kg m^2]
    principal_moments_covariance: np.ndarray  # 3x3
    R_s_c: np.ndarray  # principal axes, det +1
    R_s_c_covariance: np.ndarray  # 3x3 of dphi in {s}


def _mass_com_inertia(theta: np.ndarray) -> np.ndarray:
    """[m, p_s_c (3), I_c entries (6)] of theta."""
    body = InertialParameters(theta)
    return np.concatenate([[body.mass], body.com, inertia_vector(body.inertia_about_com)])


def principal_axes_jacobian(moments: np.ndarray, R: np.ndarray) -> np.ndarray:
    """d(moments, dphi) / d[Ixx, Ixy, Ixz, Iyy, Iyz, Izz] (6x6) at I = R diag(moments) R^T."""
    J = np.zeros((6, 6))
    for k, unit in enumerate(np.eye(6)):
        E = R.T @ inertia_matrix(unit) @ R
        l0, l1, l2 = moments
        psi = np.array(
            [
                E[2, 1] / (l1 - l2) if l1 != l2 else np.inf,
                E[0, 2] / (l2 - l0) if l2 != l0 else np.inf,
                E[1, 0] / (l0 - l1) if l0 != l1 else np.inf,
            ]
        )
        J[:3, k] = np.diag(E)
        J[3:, k] = R @ np.nan_to_num(psi, posinf=1e12, neginf=-1e12)
    return J


def forward_differences(f: Callable, x: np.ndarray, steps: np.ndarray) -> np.ndarray:
    """The Jacobian of f at x by forward differences, each step taken as (x_i + h_i) - x_i
    (exactly what was added): ``scipy.optimize.approx_fprime(x, f, steps)``'s numbers,
    without loading scipy.optimize (~0.5 s)."""
    f0 = np.atleast_1d(f(x))
    J = np.empty((len(x), f0.size))
    for i, h in enumerate(steps):
        shifted = x + np.where(np.arange(len(x)) == i, h, 0.0)
        J[i] = (np.atleast_1d(f(shifted)) - f0) / (shifted[i] - x[i])
    return J.T


def payload_properties(theta: np.ndarray, covariance: np.ndarray) -> PayloadProperties:
    """Mass, CoM, CoM inertia and principal axes of theta (in {s}), with covariances."""
    theta = np.asarray(theta, dtype=float)
    scale = np.maximum(np.abs(theta), 1e-6 * max(np.abs(theta).max(), 1e-12))
    J = forward_differences(_mass_com_inertia, theta, 1e-7 * scale)
    values = _mass_com_inertia(theta)
    C = J @ covariance @ J.T
    I_c = inertia_matrix(values[4:])
    moments, R = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), I_c).principal_axes()
    J_axes = principal_axes_jacobian(moments, R)
    C_axes = J_axes @ C[4:, 4:] @ J_axes.T
    return PayloadProperties(
        mass=float(values[0]),
        mass_variance=float(C[0, 0]),
        p_s_c=values[1:4],
        p_s_c_covariance=C[1:4, 1:4],
        inertia_about_com=I_c,
        inertia_about_com_covariance=C[4:, 4:],
        principal_moments=moments,
        principal_moments_covariance=C_axes[:3, :3],
        R_s_c=R,
        R_s_c_covariance=C_axes[3:, 3:],
    )


def com_frames(
    T_s_i: Mapping[str, np.ndarray], p_s_c: np.ndarray, R_s_c: np.ndarray
) -> dict[str, np.ndarray]:
    """T_i_c = T_s_i^-1 T_s_c for every robot: where its grasp sees the principal-axes frame."""
    T_s_c = sp.transform(R_s_c, p_s_c)
    return {r: sp.inverse(T) @ T_s_c for r, T in T_s_i.items()}
