"""Error metrics for identified inertial parameters.

Paper 001 (Nadeau et al.) Eqs. 10-12 normalize errors by the object's size, so they
are comparable across masses and sizes and stay finite for zero-valued parameters:
the CoM error by the bounding-box edges a, the inertia error by the inertia of the
solid box of those edges and the true mass. The Riemannian (affine-invariant)
distance between pseudo-inertias (Lee, Wensing, Park) is frame independent.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import eigvalsh

from ..inertial import INERTIA_INDEX, InertialParameters


def mass_error(estimate: InertialParameters, truth: InertialParameters) -> float:
    """|m_hat - m| / m in % (paper 001, Eq. 10)."""
    return abs(estimate.mass - truth.mass) / truth.mass * 100.0


def com_errors(
    estimate: InertialParameters, truth: InertialParameters, box: np.ndarray
) -> np.ndarray:
    """|c_hat_i - c_i| / a_i in % for each axis i (paper 001, Eq. 11)."""
    return np.abs(estimate.com - truth.com) / np.asarray(box, dtype=float) * 100.0


def inertia_errors(
    estimate: InertialParameters,
    truth: InertialParameters,
    box: np.ndarray,
    about_com: bool = False,
) -> np.ndarray:
    """Errors of [Ixx, Ixy, Ixz, Iyy, Iyz, Izz] in % (paper 001, Eq. 12).

    Each is divided by the matching entry of (m/12)(|a|^2 1 - a a^T), the inertia of a
    solid box of edges a and the true mass. The inertia is taken about the frame origin
    (the sensor, as in paper 001's J_s), or about each body's own CoM.
    """
    a = np.asarray(box, dtype=float)
    scale = truth.mass / 12.0 * np.abs(np.sum(a**2) * np.eye(3) - np.outer(a, a))
    I_hat = estimate.inertia_about_com if about_com else estimate.inertia
    I = truth.inertia_about_com if about_com else truth.inertia
    return np.array([abs(I_hat[ij] - I[ij]) / scale[ij] * 100.0 for ij in INERTIA_INDEX.values()])


def riemannian_distance(estimate: InertialParameters, truth: InertialParameters) -> float:
    """sqrt(1/2 sum log^2 lambda_k(J_hat^-1 J)), the affine-invariant distance (Lee et al.).

    Raises ValueError unless both pseudo-inertias are positive definite.
    """
    if not (estimate.is_consistent() and truth.is_consistent()):
        raise ValueError("the Riemannian distance needs two physically consistent bodies (J > 0)")
    eig = eigvalsh(truth.pseudo_inertia, estimate.pseudo_inertia)
    return float(np.sqrt(0.5 * np.sum(np.log(eig) ** 2)))
