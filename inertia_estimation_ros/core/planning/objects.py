"""Objects on the tray, their CoM polytopes and the robust vertex constraints (paper 004, IV-B).

An object is known by its bounding shape K (a ``Box`` or ``Cylinder`` of
``core.identification.shapes``, in the tray frame {e}), its contact polygon, and a
polytope C of possible CoMs (its vertices). Paper Sec. IV-B: the contact wrench cone
is convex and w_GI = Y(xi, eta) theta is linear in theta, so balancing every "virtual
object" theta_k (nominal inertia, CoM at vertex k of C) balances every theta in
conv{theta_k}, which holds a body for each CoM in C. Without rotation the inertia drops
out and that covers every CoM in C exactly; with rotation the parallel-axis term is
quadratic in the CoM, and only the verification SDP (Eq. 13) covers all inertias. The
mass drops out for a single object (the cone is a cone), so m = 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cooperative.payload_properties import payload_properties
from ..identification.shapes import Box, Cylinder
from ..inertial import InertialParameters
from .contact import ContactPolygon

INSET = 0.015  # paper: the CoM box stays 1.5 cm inside the object's sides [m]


class PolytopeError(ValueError):
    """The CoM polytope is empty or the estimate that should define it is unusable."""


def box_vertices(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The 8 corners (rows) of the axis-aligned box [lo, hi] (fewer if it is flat)."""
    corners = np.array(
        [[(lo, hi)[b][i] for i, b in enumerate(bits)] for bits in np.ndindex(2, 2, 2)]
    )
    return np.unique(corners, axis=0)


@dataclass(frozen=True)
class BalancedObject:
    """One object resting on the tray, everything in {e}."""

    name: str
    shape: Box | Cylinder
    contacts: ContactPolygon
    com_lo: np.ndarray  # the CoM polytope C = [com_lo, com_hi] (axis-aligned box)
    com_hi: np.ndarray
    height: float

    @classmethod
    def box(
        cls,
        size: tuple[float, float, float],
        centre_xy: tuple[float, float] = (0.0, 0.0),
        mu: float = 0.2,
        name: str = "box",
    ) -> BalancedObject:
        """A box of size (l_x, l_y, h) standing on the tray, with the paper's default CoM
        polytope: the full height, 1.5 cm inside the sides (``uninformed_com_box``)."""
        lx, ly, h = (float(s) for s in size)
        centre = np.array([centre_xy[0], centre_xy[1], h / 2])
        shape = Box(np.array([lx, ly, h]) / 2, p_b_s=centre)
        contacts = ContactPolygon.rectangle(lx / 2, ly / 2, centre_xy, mu)
        return cls._with_default_polytope(name, shape, contacts, h)

    @classmethod
    def cylinder(
        cls,
        radius: float,
        height: float,
        centre_xy: tuple[float, float] = (0.0, 0.0),
        mu: float = 0.2,
        sides: int = 8,
        name: str = "cylinder",
    ) -> BalancedObject:
        """An upright cylinder; its base is an inscribed regular polygon of ``sides``."""
        centre = np.array([centre_xy[0], centre_xy[1], height / 2])
        shape = Cylinder(radius, height, p_b_s=centre)
        contacts = ContactPolygon.disk(radius, sides, centre_xy, mu)
        return cls._with_default_polytope(name, shape, contacts, float(height))

    @classmethod
    def _with_default_polytope(
        cls, name: str, shape: Box | Cylinder, contacts: ContactPolygon, height: float
    ) -> BalancedObject:
        lo, hi = uninformed_com_box(shape, height)
        return cls(name, shape, contacts, lo, hi, height)

    def with_com_box(self, lo: np.ndarray, hi: np.ndarray) -> BalancedObject:
        """The same object with the CoM polytope [lo, hi]; PolytopeError if it is empty or
        leaves the shape (a CoM outside the object is no CoM of it)."""
        lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
        if np.any(lo > hi) or not np.all(np.isfinite([lo, hi])):
            raise PolytopeError(f"{self.name}: the CoM polytope [{lo}, {hi}] is empty")
        if not np.all(self.shape.contains(box_vertices(lo, hi), tol=1e-9)):
            raise PolytopeError(f"{self.name}: the CoM polytope [{lo}, {hi}] leaves the object")
        return BalancedObject(self.name, self.shape, self.contacts, lo, hi, self.height)

    @property
    def com_vertices(self) -> np.ndarray:
        """The vertices of C (rows): Theorem 1's virtual objects."""
        return box_vertices(self.com_lo, self.com_hi)

    @property
    def nominal_inertia_about_com(self) -> np.ndarray:
        """The planner's inertia for every virtual object: uniform density in K, m = 1 (Sec. V)."""
        return self.shape.uniform_density_params(1.0).inertia_about_com

    def parameters_at(self, coms: np.ndarray) -> np.ndarray:
        """theta (rows, m = 1) of the nominal body moved to each CoM (virtual objects)."""
        I_c = self.nominal_inertia_about_com
        return np.array(
            [InertialParameters.from_mass_com_inertia(1.0, c, I_c).vec for c in np.atleast_2d(coms)]
        )


def uninformed_com_box(shape: Box | Cylinder, height: float) -> tuple[np.ndarray, np.ndarray]:
    """The paper's default C: full height, ``INSET`` inside the sides (Sec. VII). For a
    cylinder, the square inscribed in the inset disk."""
    if isinstance(shape, Box):
        half = shape.half_extents[:2] - INSET
    else:
        half = np.full(2, (shape.radius - INSET) / np.sqrt(2.0))
    if np.any(half < 0):
        raise PolytopeError(f"the object is narrower than twice the {INSET} m inset")
    centre = shape.p_b_s[:2]
    return np.append(centre - half, 0.0), np.append(centre + half, height)


def robust_constraint_values(H: np.ndarray, Y: np.ndarray, thetas: np.ndarray) -> np.ndarray:
    """h_i^T Y theta_k for every row of H and virtual object k, shape (..., n_k, n_h) (Eq. 8).

    Y: (..., 6, 10) regressors [tau; f] in {e}; all <= 0 iff every virtual object balances.
    """
    return np.einsum("hw,...wp,kp->...kh", H, Y, thetas)


@dataclass(frozen=True)
class ComEstimate:
    """An estimated CoM in {e} with its covariance, and whether the estimator vouches for it."""

    p_e_c: np.ndarray
    covariance: np.ndarray
    valid: bool

    @classmethod
    def from_parameters(
        cls, theta: np.ndarray, covariance: np.ndarray, valid: bool, T_e_s: np.ndarray | None
    ) -> ComEstimate:
        """From theta = [m, h, ...] in the estimator's frame {s} and its 10x10 covariance
        (``payload_properties``: c = h/m at first order), moved into {e} by T_e_s."""
        theta, covariance = np.asarray(theta, dtype=float), np.asarray(covariance, dtype=float)
        T = np.eye(4) if T_e_s is None else np.asarray(T_e_s, dtype=float)
        if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(covariance))):
            raise PolytopeError("the estimate has non-finite parameters or covariance: re-estimate")
        if not valid:
            return cls(T[:3, 3], np.zeros((3, 3)), False)
        if not theta[0] > 0:
            raise PolytopeError(f"the estimate's mass {theta[0]} is not positive")
        props = payload_properties(theta, covariance)
        R = T[:3, :3]
        return cls(R @ props.p_s_c + T[:3, 3], R @ props.p_s_c_covariance @ R.T, True)


def informed_com_box(
    obj: BalancedObject, estimate: ComEstimate, k_sigma: float = 3.0
) -> tuple[BalancedObject, bool]:
    """(object with C from the estimate, informed?): C = (c +- k sigma per axis) clipped to the
    paper's inset full-height box; the uninformed box itself while the estimate is not valid.

    PolytopeError if the covariance is not a finite PSD matrix or C is empty after clipping
    (the estimate puts the CoM outside the inset object).
    """
    cov = np.asarray(estimate.covariance, dtype=float)
    if not (np.all(np.isfinite(cov)) and np.all(np.isfinite(estimate.p_e_c))):
        raise PolytopeError("the CoM estimate or its covariance is not finite: re-estimate")
    if not estimate.valid:
        return obj, False
    if np.linalg.eigvalsh(0.5 * (cov + cov.T))[0] < -1e-12:
        raise PolytopeError("the CoM covariance is not positive semidefinite")
    sigma = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    default_lo, default_hi = uninformed_com_box(obj.shape, obj.height)
    lo = np.maximum(estimate.p_e_c - k_sigma * sigma, default_lo)
    hi = np.minimum(estimate.p_e_c + k_sigma * sigma, default_hi)
    if np.any(lo > hi):
        raise PolytopeError(
            f"{obj.name}: the CoM estimate {np.round(estimate.p_e_c, 4)} +- {k_sigma} sigma lies "
            f"outside the object inset by {INSET} m: check the tray frame or the object size"
        )
    return obj.with_com_box(lo, hi), True
