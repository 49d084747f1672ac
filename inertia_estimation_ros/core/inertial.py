"""Inertial parameters of a rigid body: the one 10-vector ordering of the project.

``theta = [m, hx, hy, hz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]`` (paper 003, Eq. 2):

* ``m`` the mass [kg];
* ``h = m c`` the first mass moment [kg m], c the CoM, in the body frame {b};
* ``I`` the rotational inertia about the **origin** of {b}, in {b} axes
  [kg m^2], as matrix entries (``Ixy = -integral(x y rho)``).

The same body has the 4x4 pseudo-inertia (paper 003, Def. 7)
``J = [[Sigma, h], [h^T, m]]`` with ``Sigma = tr(I)/2 1 - I``; it is linear in
theta, transforms as ``J_a = T_a_b J_b T_a_b^T``, and the body is physically
consistent iff ``J > 0`` (paper 003, Thm. 3).

Other orderings appear only in the explicit converters below (Pinocchio) and in
``inertia_estimation_ros.ros.conversions`` (geometry_msgs/Inertia).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spatial import skew, transform

INERTIA_INDEX = {"xx": (0, 0), "xy": (0, 1), "xz": (0, 2), "yy": (1, 1), "yz": (1, 2), "zz": (2, 2)}
PARAMETER_NAMES = ("m", "hx", "hy", "hz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
_UPPER = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
# theta index of Pinocchio's dynamic parameters [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz].
_PINOCCHIO_ORDER = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])


def inertia_vector(I: np.ndarray) -> np.ndarray:
    """[Ixx, Ixy, Ixz, Iyy, Iyz, Izz] of a symmetric 3x3 matrix."""
    return np.array([I[i, j] for i, j in _UPPER])


def inertia_matrix(v: np.ndarray) -> np.ndarray:
    """The symmetric 3x3 matrix of [Ixx, Ixy, Ixz, Iyy, Iyz, Izz]."""
    xx, xy, xz, yy, yz, zz = v
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def shift_term(m: float, c: np.ndarray) -> np.ndarray:
    """m [c][c]^T: the parallel-axis term of paper 003, Eq. 8."""
    S = skew(c)
    return m * S @ S.T


@dataclass(frozen=True)
class InertialParameters:
    """A rigid body's mass distribution up to second moments, in one body frame {b}."""

    vec: np.ndarray

    def __post_init__(self) -> None:
        vec = np.asarray(self.vec, dtype=float).reshape(10)
        object.__setattr__(self, "vec", vec)

    # ----- constructors -----------------------------------------------------
    @classmethod
    def from_mass_com_inertia(
        cls, mass: float, com: np.ndarray, inertia_about_com: np.ndarray
    ) -> InertialParameters:
        """From m, the CoM c in {b} and the inertia about the CoM (paper 003, Eq. 8)."""
        com = np.asarray(com, dtype=float)
        I_o = np.asarray(inertia_about_com, dtype=float) + shift_term(mass, com)
        return cls(np.concatenate([[mass], mass * com, inertia_vector(I_o)]))

    @classmethod
    def from_pseudo_inertia(cls, J: np.ndarray) -> InertialParameters:
        """From the 4x4 pseudo-inertia J = [[Sigma, h], [h^T, m]] (paper 003, Def. 7)."""
        J = 0.5 * (np.asarray(J, dtype=float) + np.asarray(J, dtype=float).T)
        Sigma = J[:3, :3]
        I = np.trace(Sigma) * np.eye(3) - Sigma
        return cls(np.concatenate([[J[3, 3]], J[:3, 3], inertia_vector(I)]))

    @classmethod
    def from_point_masses(cls, masses: np.ndarray, points: np.ndarray) -> InertialParameters:
        """The body made of point masses m_k at positions points[k] in {b}."""
        masses = np.asarray(masses, dtype=float)
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        Sigma = np.einsum("k,ki,kj->ij", masses, points, points)
        h = masses @ points
        J = np.block([[Sigma, h[:, None]], [h[None, :], np.array([[masses.sum()]])]])
        return cls.from_pseudo_inertia(J)

    @classmethod
    def from_pinocchio(cls, dynamic_parameters: np.ndarray) -> InertialParameters:
        """From ``pin.Inertia.toDynamicParameters()``: [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]."""
        vec = np.empty(10)
        vec[_PINOCCHIO_ORDER] = np.asarray(dynamic_parameters, dtype=float)
        return cls(vec)

    # ----- views ------------------------------------------------------------
    @property
    def mass(self) -> float:
        return float(self.vec[0])

    @property
    def h(self) -> np.ndarray:
        """First mass moment h = m c [kg m]."""
        return self.vec[1:4].copy()

    @property
    def com(self) -> np.ndarray:
        """Center of mass c = h / m in {b} [m]."""
        return self.vec[1:4] / self.vec[0]

    @property
    def inertia(self) -> np.ndarray:
        """Rotational inertia about the origin of {b} [kg m^2]."""
        return inertia_matrix(self.vec[4:])

    @property
    def inertia_about_com(self) -> np.ndarray:
        """Rotational inertia about the CoM, {b} axes [kg m^2] (paper 003, Eq. 8)."""
        return self.inertia - shift_term(self.mass, self.com)

    @property
    def pseudo_inertia(self) -> np.ndarray:
        """J = [[Sigma, h], [h^T, m]] with Sigma = tr(I)/2 1 - I (paper 003, Def. 7)."""
        I = self.inertia
        Sigma = 0.5 * np.trace(I) * np.eye(3) - I
        h = self.vec[1:4]
        return np.block([[Sigma, h[:, None]], [h[None, :], np.array([[self.vec[0]]])]])

    @property
    def spatial_inertia(self) -> np.ndarray:
        """6x6 spatial inertia G = [[I, [h]], [[h]^T, m 1]], angular first (paper 003, Eq. 3)."""
        S = skew(self.vec[1:4])
        return np.block([[self.inertia, S], [S.T, self.vec[0] * np.eye(3)]])

    def principal_axes(self) -> tuple[np.ndarray, np.ndarray]:
        """(moments ascending, R_b_c) of the CoM inertia; R_b_c has det +1 (paper 000, Eq. 33)."""
        moments, R = np.linalg.eigh(self.inertia_about_com)
        if np.linalg.det(R) < 0:
            R[:, 2] *= -1.0
        return moments, R

    def to_pinocchio(self) -> np.ndarray:
        """Pinocchio's dynamic parameters [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]."""
        return self.vec[_PINOCCHIO_ORDER].copy()

    def inertia_about(self, p_b_q: np.ndarray) -> np.ndarray:
        """Rotational inertia about the point q (given in {b}), {b} axes (paper 003, Eq. 8)."""
        return self.inertia_about_com + shift_term(self.mass, self.com - np.asarray(p_b_q))

    # ----- frames -----------------------------------------------------------
    def transformed(self, T_a_b: np.ndarray) -> InertialParameters:
        """The same body with parameters expressed in {a}, given these are in {b}."""
        return InertialParameters.from_pseudo_inertia(T_a_b @ self.pseudo_inertia @ T_a_b.T)

    def rotated(self, R_a_b: np.ndarray) -> InertialParameters:
        """The same body in a frame {a} with the same origin, rotated: I_a = R_a_b I_b R_a_b^T."""
        return self.transformed(transform(R_a_b, np.zeros(3)))

    def __add__(self, other: InertialParameters) -> InertialParameters:
        """The union of two bodies given in the same frame: mass moments add up."""
        return InertialParameters(self.vec + other.vec)

    # ----- consistency ------------------------------------------------------
    def is_semi_consistent(self, tol: float = 0.0) -> bool:
        """m > 0 and the CoM inertia is positive semidefinite (paper 003, Def. 4)."""
        if self.mass <= tol:
            return False
        return bool(np.linalg.eigvalsh(self.inertia_about_com)[0] >= -tol)

    def consistency_margin(self) -> float:
        """Smallest eigenvalue of the pseudo-inertia J [kg m^2]; > 0 iff fully consistent."""
        return float(np.linalg.eigvalsh(self.pseudo_inertia)[0])

    def is_consistent(self, margin: float = 0.0) -> bool:
        """J(theta) > margin (paper 003, Thm. 3): m > 0, CoM inertia > 0, triangle inequalities."""
        return self.consistency_margin() > margin

    def satisfies_triangle_inequalities(self, tol: float = 0.0) -> bool:
        """J1 + J2 >= J3 and permutations for the principal moments (paper 003, Eq. 9)."""
        J = np.linalg.eigvalsh(self.inertia_about_com)
        return bool(J[0] + J[1] >= J[2] - tol)
