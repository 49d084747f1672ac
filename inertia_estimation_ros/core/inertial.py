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

Other orderings appear only in the named converters below (``PARAMETER_ORDERS``,
``InertialParameters.from_vector`` / ``to_vector``) and in
``inertia_estimation_ros.ros.conversions`` (geometry_msgs/Inertia).

**One tolerance rule** decides every consistency check of the package
(``is_consistent``, the SDPs' certificates, shapes' ``can_realize``): a condition
"J >= B" holds when ``J - B + rtol m diag(r^2, r^2, r^2, 1) >= 0``, with
``rtol = CONSISTENCY_RTOL`` (1e-8, the accuracy of the interior-point solvers), m the
mass and r the body's RMS radius about the origin (r^2 = tr(Sigma) / m). The slack is
thus a relative 1e-8 of each block of J in its own units (kg, kg m, kg m^2), so the
rule means the same for a 9 g ruler and a 20 kg box.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spatial import skew, transform

INERTIA_INDEX = {"xx": (0, 0), "xy": (0, 1), "xz": (0, 2), "yy": (1, 1), "yz": (1, 2), "zz": (2, 2)}
PARAMETER_NAMES = ("m", "hx", "hy", "hz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
_UPPER = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)]
CONSISTENCY_RTOL = 1e-8

# The parameter orders users meet, as the names of their entries (m, h = m c, and the
# rotational inertia about the frame origin as matrix entries, Ixy = -integral(x y rho)).
PARAMETER_ORDERS: dict[str, tuple[str, ...]] = {
    # Paper 003 Eq. 2, Atkeson, An and Hollerbach 1986, rigeo's InertialParameters.vec,
    # and this package: the upper triangle of I row by row.
    "paper": PARAMETER_NAMES,
    "atkeson": PARAMETER_NAMES,
    "rigeo": PARAMETER_NAMES,
    # pin.Inertia.toDynamicParameters() and Pinocchio's joint torque regressor.
    "pinocchio": ("m", "hx", "hy", "hz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz"),
    # Lee, Wensing and Park (T-RO 2020), their Geometric-Robot-DynID code
    # (inertiaVecToPinertia.m): diagonal first.
    "lee_wensing_park": ("m", "hx", "hy", "hz", "Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Ixz"),
}


def _order_index(order: str) -> np.ndarray:
    """theta index of each entry of a vector in ``order`` (a key of PARAMETER_ORDERS)."""
    if order not in PARAMETER_ORDERS:
        raise ValueError(f"unknown parameter order {order!r}; known: {sorted(PARAMETER_ORDERS)}")
    return np.array([PARAMETER_NAMES.index(name) for name in PARAMETER_ORDERS[order]])


def consistency_slack(J: np.ndarray, rtol: float = CONSISTENCY_RTOL) -> np.ndarray:
    """rtol m diag(r^2, r^2, r^2, 1), r^2 = tr(Sigma)/m: the tolerance of the one rule.

    ``J`` is a 4x4 pseudo-inertia; a check "J >= B" passes when J - B + slack >= 0.
    """
    m = max(float(J[3, 3]), 0.0)
    r2 = float(np.trace(J[:3, :3])) / m if m > 0 else 0.0
    return rtol * m * np.diag([max(r2, 0.0)] * 3 + [1.0])


def meets_bound(
    J: np.ndarray, bound: np.ndarray | float = 0.0, rtol: float = CONSISTENCY_RTOL
) -> bool:
    """Whether J >= bound (a scalar times 1, or a 4x4 matrix) under the one tolerance rule."""
    J = 0.5 * (np.asarray(J, dtype=float) + np.asarray(J, dtype=float).T)
    B = bound * np.eye(4) if np.ndim(bound) == 0 else np.asarray(bound, dtype=float)
    return bool(np.linalg.eigvalsh(J - B + consistency_slack(J, rtol))[0] >= 0.0)


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
    def from_vector(cls, values: np.ndarray, order: str) -> InertialParameters:
        """From 10 values in a named order (``PARAMETER_ORDERS``: "paper", "atkeson",
        "rigeo", "pinocchio", "lee_wensing_park")."""
        values = np.asarray(values, dtype=float)
        if values.shape != (10,):
            raise ValueError(f"a parameter vector has 10 entries, got shape {values.shape}")
        vec = np.empty(10)
        vec[_order_index(order)] = values
        return cls(vec)

    @classmethod
    def from_pinocchio(cls, dynamic_parameters: np.ndarray) -> InertialParameters:
        """From ``pin.Inertia.toDynamicParameters()``: [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]."""
        return cls.from_vector(dynamic_parameters, "pinocchio")

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

    def to_vector(self, order: str) -> np.ndarray:
        """The 10 values in a named order (``PARAMETER_ORDERS``), inverse of ``from_vector``."""
        return self.vec[_order_index(order)].copy()

    def to_pinocchio(self) -> np.ndarray:
        """Pinocchio's dynamic parameters [m, mc, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]."""
        return self.to_vector("pinocchio")

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

    def is_consistent(self, margin: float = 0.0, rtol: float = CONSISTENCY_RTOL) -> bool:
        """m > 0 and J(theta) >= margin 1 under the one tolerance rule (module docstring).

        Paper 003, Thm. 3: J > 0 iff m > 0, CoM inertia > 0 and the triangle inequalities
        hold. Within the tolerance, degenerate bodies (rods, plates: realizable as
        measures) count as consistent; ask ``margin > 0`` for a strictly positive J.
        """
        return self.mass > 0 and meets_bound(self.pseudo_inertia, margin, rtol)

    def satisfies_triangle_inequalities(self, tol: float = 0.0) -> bool:
        """J1 + J2 >= J3 and permutations for the principal moments (paper 003, Eq. 9)."""
        J = np.linalg.eigvalsh(self.inertia_about_com)
        return bool(J[0] + J[1] >= J[2] - tol)
