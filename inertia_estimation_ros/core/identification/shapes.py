"""Bounding shapes: containment, CoM regions, density realizability, and voxel grids.

A body is *realizable* on a shape S if some density rho >= 0 supported in S has its
mass moments (paper 003, Def. 3). Every moment up to order two is in the
pseudo-inertia J, so each condition below is a constraint on J:

* ``Ellipsoid``: J > 0 and Tr(J Q) >= 0, exact (paper 003, Thm. 4 and Eq. 23);
* ``Box``, ``Cylinder``, ``ConvexPolyhedron``: the order-2 moment relaxation (Lasserre;
  Heins and Schoellig, Sec. VI-B, Eq. 13; notes robust-balancing.md): the moments up to
  order four must form a PSD moment matrix M_2, and every polynomial p >= 0 that
  describes S gives a PSD localizing matrix M_1(p y). Necessary, not sufficient. The
  cheaper "quadratic" relaxation keeps only the conditions on J itself, Tr(Q_p J) >= 0;
* ``ShapeUnion``: the body splits into parts, one realizable per shape (paper 003, Cor. 2);
* ``VoxelShape``: a triangle mesh or a segmented point cloud, voxelized and covered by a
  few axis-aligned boxes: a ``ShapeUnion`` of ``Box`` parts, so non-convex objects (an
  L-shaped tool) get the same constraints as a union of boxes.

Each shape maps body coordinates x to canonical coordinates u (unit ball, cube
[-1, 1]^3, unit cylinder; [u; 1] = A [x; 1]) where it is described by a few
polynomials p(u) >= 0, each a quadratic form [u; 1]^T Q [u; 1]. In these coordinates
every moment is at most the mass, which keeps the SDPs well scaled.

Constraint builders take J, a symmetric 4x4 cvxpy expression in the body frame, and
return lists of cvxpy constraints that compose with ``core.consistency``.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

import cvxpy as cp
import numpy as np
from scipy import ndimage
from scipy.spatial import ConvexHull, Delaunay, QhullError

from ..consistency import solve_with_fallback
from ..inertial import InertialParameters

# ----- moments up to order four of a measure, in homogeneous coordinates z = [u; 1] -----
# T[a, b, c, d] = integral z_a z_b z_c z_d dmu is symmetric: 35 distinct entries y.
_QUARTICS = list(itertools.combinations_with_replacement(range(4), 4))
_QUARTIC_INDEX = {t: k for k, t in enumerate(_QUARTICS)}
_PAIRS = list(itertools.combinations_with_replacement(range(4), 2))  # monomials of degree <= 2
_UPPER4 = np.array([4 * a + b for a, b in _PAIRS])  # upper-triangle entries of a flat 4x4


def _moment_map(indices: list[tuple[int, int, int, int]]) -> np.ndarray:
    """The 0/1 matrix picking T[a, b, c, d] out of y for each index tuple."""
    out = np.zeros((len(indices), len(_QUARTICS)))
    for row, t in enumerate(indices):
        out[row, _QUARTIC_INDEX[tuple(sorted(t))]] = 1.0
    return out


Relaxation = Literal["moment", "quadratic"]

_GRID4 = [(c, d) for c in range(4) for d in range(4)]
_J_MAP = _moment_map([(a, b, 3, 3) for a, b in _GRID4])  # J = L(z z^T), 16 x 35
_M2_MAP = _moment_map([(*p, *q) for p in _PAIRS for q in _PAIRS])  # moment matrix, 100 x 35
_Z4_MAPS = np.stack([_moment_map([(a, b, c, d) for c, d in _GRID4]) for a, b in _GRID4])


def _localizer_map(Q: np.ndarray) -> np.ndarray:
    """M_1(p y) = L(p z z^T) for p(u) = z^T Q z, as a 16 x 35 map of y."""
    return np.tensordot(Q.reshape(16), _Z4_MAPS, axes=1)


def _square(expression: cp.Expression, n: int) -> cp.Expression:
    return cp.reshape(expression, (n, n), order="C")


# ----- canonical polynomials p(u) >= 0 -----------------------------------------------
@dataclass(frozen=True)
class _Halfspace:
    """g . [u; 1] >= 0."""

    g: np.ndarray

    @property
    def Q(self) -> np.ndarray:
        e = np.eye(4)[3]
        return 0.5 * (np.outer(self.g, e) + np.outer(e, self.g))

    def value(self, u: np.ndarray) -> np.ndarray:
        return u @ self.g[:3] + self.g[3]

    def product(self, other: _Halfspace) -> np.ndarray:
        """Q of the quadratic p q (nonnegative where both are)."""
        return 0.5 * (np.outer(self.g, other.g) + np.outer(other.g, self.g))

    def com_constraint(self, h_u: cp.Expression, m: cp.Expression) -> cp.Constraint:
        return self.g[:3] @ h_u + self.g[3] * m >= 0


@dataclass(frozen=True)
class _UnitBall:
    """1 - sum of u_i^2 over some axes >= 0 (ball, disk or slab)."""

    axes: tuple[int, ...]

    @property
    def Q(self) -> np.ndarray:
        Q = np.zeros((4, 4))
        Q[self.axes, self.axes] = -1.0
        Q[3, 3] = 1.0
        return Q

    def value(self, u: np.ndarray) -> np.ndarray:
        return 1.0 - np.sum(u[:, self.axes] ** 2, axis=1)

    def com_constraint(self, h_u: cp.Expression, m: cp.Expression) -> cp.Constraint:
        return cp.norm(h_u[list(self.axes)]) <= m


# ----- shapes --------------------------------------------------------------------------
class _Realizable(ABC):
    """Numeric realizability checks shared by shapes and unions of shapes."""

    @abstractmethod
    def _margin_constraints(self, J: cp.Expression, t: cp.Variable) -> list[cp.Constraint]:
        """The realizability conditions of J, each required to hold with margin t."""

    @abstractmethod
    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        """(lowest, highest) corner of the axis-aligned bounding box in the body frame."""

    @abstractmethod
    def contains(self, points: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Whether each point (rows, in the body frame) lies in the shape."""

    def realizability_margin(self, params: InertialParameters) -> float:
        """The largest t with every realizability condition of ``params`` >= t [kg].

        t >= 0 means the conditions hold (for an ellipsoid: iff realizable, given J > 0).
        Raises ConsistencyError if no solver returns a certified optimum.
        """
        t = cp.Variable()
        constraints = self._margin_constraints(cp.Constant(params.pseudo_inertia), t)
        problem = cp.Problem(cp.Maximize(t), constraints)
        solve_with_fallback(problem, lambda: None if problem.status == cp.OPTIMAL else "inaccurate")
        return float(t.value)

    def can_realize(self, params: InertialParameters, tol: float = 1e-5) -> bool:
        """Consistent (``is_consistent``: the one tolerance rule of ``core.inertial``) and the
        realizability conditions hold to within tol of the mass: a margin computed by a
        solver is only known to the solver's accuracy (point masses on the boundary make
        the LMIs singular), which tol covers; SDP results are certified to 1e-6."""
        if not params.is_consistent():
            return False
        return self.realizability_margin(params) >= -tol * params.mass

    def grid(self, pitch: float) -> np.ndarray:
        """Voxel centres inside the shape, for point-mass discretization (paper 001, Sec. V)."""
        return voxel_centres(self, pitch)


class Shape(_Realizable):
    """A compact convex set given by canonical polynomials p(u) >= 0 with [u; 1] = A [x; 1]."""

    A: np.ndarray  # 4x4 affine map from body to canonical homogeneous coordinates
    polys: tuple  # canonical polynomials that describe the shape
    relaxation: Relaxation = "moment"
    _unit_second_moments: np.ndarray  # E[u u^T] (diagonal) of the uniform canonical shape

    def canonical(self, points: np.ndarray) -> np.ndarray:
        """Canonical coordinates u of points given in the body frame."""
        points = np.atleast_2d(np.asarray(points, dtype=float))
        return points @ self.A[:3, :3].T + self.A[:3, 3]

    def contains(self, points: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        u = self.canonical(points)
        return np.all([p.value(u) >= -tol for p in self.polys], axis=0)

    def _canonical_J(self, J: cp.Expression) -> cp.Expression:
        return self.A @ J @ self.A.T

    def com_constraints(self, J: cp.Expression) -> list[cp.Constraint]:
        """The CoM h/m lies in the shape (paper 003, Eq. 22 for an ellipsoid); needs m >= 0."""
        Jc = self._canonical_J(J)
        return [p.com_constraint(Jc[:3, 3], Jc[3, 3]) for p in self.polys]

    def realizability_constraints(self, J: cp.Expression) -> list[cp.Constraint]:
        """Necessary conditions for J to be realizable on the shape (``relaxation``):

        * "moment": the order-2 moment relaxation, M_2(y) >= 0 and M_1(p y) >= 0 for each
          polynomial p, with auxiliary moments y up to order four;
        * "quadratic": only what J itself fixes, J >= 0 and L(p) = Tr(Q_p J) >= 0
          (the ellipsoid condition of paper 003, Eq. 23, for each p); cheaper, looser.

        Both add L(p_i p_j) >= 0 for every pair of faces.
        """
        return self._margin_constraints(J, 0.0)

    def _margin_constraints(self, J: cp.Expression, t: cp.Expression) -> list[cp.Constraint]:
        Jc = self._canonical_J(J)
        faces = [p for p in self.polys if isinstance(p, _Halfspace)]
        constraints = [
            cp.trace(p.product(q) @ Jc) >= t for p, q in itertools.combinations(faces, 2)
        ]
        if self.relaxation == "quadratic":
            return [
                Jc >> t * np.eye(4),
                *[cp.trace(p.Q @ Jc) >= t for p in self.polys],
            ] + constraints
        y = cp.Variable(len(_QUARTICS))
        return [
            cp.vec(Jc, order="C")[_UPPER4] == (_J_MAP @ y)[_UPPER4],
            _square(_M2_MAP @ y, 10) >> t * np.eye(10),
            *[_square(_localizer_map(p.Q) @ y, 4) >> t * np.eye(4) for p in self.polys],
        ] + constraints

    def uniform_density_params(self, mass: float) -> InertialParameters:
        """The body of uniform density and the given mass filling the shape."""
        J_u = np.diag(np.append(self._unit_second_moments, 1.0))
        A_inv = np.linalg.inv(self.A)
        return InertialParameters.from_pseudo_inertia(mass * A_inv @ J_u @ A_inv.T)


def _affine(scales: np.ndarray, R_b_s: np.ndarray, p_b_s: np.ndarray) -> np.ndarray:
    """A with u = diag(1/scales) R_b_s^T (x - p_b_s)."""
    A = np.eye(4)
    A[:3, :3] = np.diag(1.0 / np.asarray(scales, dtype=float)) @ np.asarray(R_b_s).T
    A[:3, 3] = -A[:3, :3] @ np.asarray(p_b_s, dtype=float)
    return A


def _checked_relaxation(relaxation: str) -> Relaxation:
    if relaxation not in ("moment", "quadratic"):
        raise ValueError(f"relaxation must be 'moment' or 'quadratic', got {relaxation!r}")
    return relaxation


def _moved(T_a_b: np.ndarray, p_b: np.ndarray) -> np.ndarray:
    """Points (rows) given in {b}, expressed in {a}."""
    return np.asarray(p_b) @ T_a_b[:3, :3].T + T_a_b[:3, 3]


def _pose(R_b_s: np.ndarray | None, p_b_s: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) with R a rotation: any orthonormal basis is accepted, and one with det -1
    (as ``eigh`` returns half of the time) has its last axis flipped, which leaves these
    shapes, symmetric about their own axes, unchanged."""
    R = np.eye(3) if R_b_s is None else np.array(R_b_s, dtype=float)
    p = np.zeros(3) if p_b_s is None else np.asarray(p_b_s, dtype=float)
    if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9):
        raise ValueError("R_b_s must be an orthonormal 3x3 basis (columns: the shape's axes)")
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise ValueError(f"p_b_s must be a finite 3-vector, got {p}")
    if np.linalg.det(R) < 0:
        R[:, 2] *= -1.0
    return R, p


def _positive(values: np.ndarray, name: str) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"{name} must be positive and finite, got {values}")
    return values


class Ellipsoid(Shape):
    """{x : (x - p)^T R diag(1/a^2) R^T (x - p) <= 1} with semi-axes a (paper 003, Eq. 21)."""

    _unit_second_moments = np.full(3, 0.2)

    def __init__(
        self,
        semi_axes: np.ndarray,
        R_b_s: np.ndarray | None = None,
        p_b_s: np.ndarray | None = None,
    ) -> None:
        self.semi_axes = _positive(np.broadcast_to(semi_axes, (3,)), "semi_axes")
        self.R_b_s, self.p_b_s = _pose(R_b_s, p_b_s)
        self.A = _affine(self.semi_axes, self.R_b_s, self.p_b_s)
        self.polys = (_UnitBall((0, 1, 2)),)

    @classmethod
    def from_matrix(cls, Q: np.ndarray) -> Ellipsoid:
        """The ellipsoid {x : [x; 1]^T Q [x; 1] >= 0} of a 4x4 Q (paper 003, Thm. 4).

        Q is defined up to a positive factor; its 3x3 block must be negative definite
        and the set must have an interior.
        """
        Q = np.asarray(Q, dtype=float)
        if Q.shape != (4, 4) or not np.all(np.isfinite(Q)):
            raise ValueError(f"Q must be a finite 4x4 matrix, got shape {Q.shape}")
        Q = 0.5 * (Q + Q.T)
        A, q = -Q[:3, :3], Q[:3, 3]
        if np.linalg.eigvalsh(A)[0] <= 0:
            raise ValueError(
                "Q's 3x3 block must be negative definite: [x; 1]^T Q [x; 1] >= 0 inside,"
                " so Q = [[-P, P c], [c^T P, 1 - c^T P c]] up to a positive factor"
            )
        center = np.linalg.solve(A, q)
        factor = Q[3, 3] + center @ A @ center  # Q = factor [[-P, P c], [c^T P, 1 - c^T P c]]
        if not factor > 0:
            raise ValueError("Q describes an empty set or a point: [c; 1]^T Q [c; 1] <= 0")
        return cls.from_shape_matrix(center, np.linalg.inv(A / factor))

    @classmethod
    def from_shape_matrix(cls, center: np.ndarray, shape_matrix: np.ndarray) -> Ellipsoid:
        """{x : (x - c)^T Q_s^-1 (x - c) <= 1} for a positive definite Q_s (paper 003, Eq. 21)."""
        Qs = np.asarray(shape_matrix, dtype=float)
        if Qs.shape != (3, 3) or not np.all(np.isfinite(Qs)):
            raise ValueError(f"the shape matrix must be a finite 3x3 matrix, got {Qs.shape}")
        squares, R = np.linalg.eigh(0.5 * (Qs + Qs.T))
        if squares[0] <= 0:
            raise ValueError("the shape matrix must be positive definite")
        return cls(np.sqrt(squares), R, center)

    @property
    def Q(self) -> np.ndarray:
        """Q with [x; 1]^T Q [x; 1] >= 0 inside (paper 003, Thm. 4)."""
        return self.A.T @ self.polys[0].Q @ self.A

    @property
    def shape_matrix(self) -> np.ndarray:
        """Q_s = R diag(a^2) R^T of paper 003, Eq. 21."""
        return self.R_b_s @ np.diag(self.semi_axes**2) @ self.R_b_s.T

    def realizability_margin(self, params: InertialParameters) -> float:
        """min(lambda_min(J_u), Tr(J_u Q_u)) in canonical coordinates [kg], closed form."""
        Jc = self.A @ params.pseudo_inertia @ self.A.T
        return float(min(np.linalg.eigvalsh(Jc)[0], np.trace(self.polys[0].Q @ Jc)))

    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        half = np.sqrt((self.R_b_s**2) @ self.semi_axes**2)
        return self.p_b_s - half, self.p_b_s + half

    def transformed(self, T_a_b: np.ndarray) -> Ellipsoid:
        """The same ellipsoid expressed in {a}."""
        return Ellipsoid(self.semi_axes, T_a_b[:3, :3] @ self.R_b_s, _moved(T_a_b, self.p_b_s))

    def realizability_constraints(self, J: cp.Expression) -> list[cp.Constraint]:
        """Tr(J Q) >= 0: with J > 0 (``consistency_constraints``), exactly the bodies
        realizable inside (paper 003, Eq. 23)."""
        Qn = self.Q / np.abs(self.Q).max()
        return [cp.trace(Qn @ J) >= 0]

    def _margin_constraints(self, J: cp.Expression, t: cp.Variable) -> list[cp.Constraint]:
        Jc = self._canonical_J(J)
        return [Jc >> t * np.eye(4), cp.trace(self.polys[0].Q @ Jc) >= t]


class ConvexPolyhedron(Shape):
    """The convex hull of points (in the body frame), by its faces a_j . x <= b_j."""

    def __init__(self, vertices: np.ndarray, relaxation: Relaxation = "moment") -> None:
        self.relaxation = _checked_relaxation(relaxation)
        vertices = np.asarray(vertices, dtype=float)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or not np.all(np.isfinite(vertices)):
            raise ValueError("vertices must be a finite (n, 3) array")
        try:
            hull = ConvexHull(vertices)
        except QhullError as error:
            raise ValueError(
                "the vertices span no volume: give at least 4 non-coplanar points"
            ) from error
        self.vertices = vertices[hull.vertices]
        centre = self.vertices.mean(axis=0)
        scale = np.linalg.norm(self.vertices - centre, axis=1).max()
        self.A = _affine(np.full(3, scale), np.eye(3), centre)
        # Qhull triangulates faces: merge coplanar facets. Outward unit normal n, n.x + d <= 0.
        faces = np.unique(np.round(hull.equations, 9), axis=0)
        self.polys = tuple(
            _Halfspace(np.append(-n * scale, -(n @ centre + d)))
            for n, d in zip(faces[:, :3], faces[:, 3], strict=True)
        )
        self._tetrahedra = self.vertices[Delaunay(self.vertices).simplices]

    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        return self.vertices.min(axis=0), self.vertices.max(axis=0)

    def transformed(self, T_a_b: np.ndarray) -> ConvexPolyhedron:
        """The same polyhedron expressed in {a}."""
        return ConvexPolyhedron(_moved(T_a_b, self.vertices), self.relaxation)

    def uniform_density_params(self, mass: float) -> InertialParameters:
        """Uniform density, from the exact moments of a tetrahedral decomposition."""
        J = np.zeros((4, 4))
        for tet in self._tetrahedra:
            hom = np.hstack([tet, np.ones((4, 1))])
            s = hom.sum(
                axis=0
            )  # integral of z z^T over a tetrahedron: V/20 (sum z_i z_i^T + s s^T)
            J += _tetrahedron_volume(tet) / 20.0 * (hom.T @ hom + np.outer(s, s))
        return InertialParameters.from_pseudo_inertia(mass * J / J[3, 3])


def _tetrahedron_volume(tet: np.ndarray) -> float:
    return abs(np.linalg.det(tet[1:] - tet[0])) / 6.0


class Box(Shape):
    """A box with half extents along the axes of R_b_s, centred at p_b_s.

    Besides its six faces, the slabs 1 - u_i^2 >= 0 (products of opposite faces) tighten
    the moment relaxation.
    """

    _unit_second_moments = np.full(3, 1.0 / 3.0)

    def __init__(
        self,
        half_extents: np.ndarray,
        R_b_s: np.ndarray | None = None,
        p_b_s: np.ndarray | None = None,
        relaxation: Relaxation = "moment",
    ) -> None:
        self.relaxation = _checked_relaxation(relaxation)
        self.half_extents = _positive(np.broadcast_to(half_extents, (3,)), "half_extents")
        self.R_b_s, self.p_b_s = _pose(R_b_s, p_b_s)
        self.A = _affine(self.half_extents, self.R_b_s, self.p_b_s)
        faces = [_Halfspace(np.append(sign * e, 1.0)) for e in np.eye(3) for sign in (-1, 1)]
        self.polys = (*faces, *[_UnitBall((i,)) for i in range(3)])

    @classmethod
    def from_corners(
        cls, lowest: np.ndarray, highest: np.ndarray, relaxation: Relaxation = "moment"
    ) -> Box:
        """The axis-aligned box between two opposite corners."""
        lowest, highest = np.asarray(lowest, dtype=float), np.asarray(highest, dtype=float)
        return cls((highest - lowest) / 2, p_b_s=(highest + lowest) / 2, relaxation=relaxation)

    @property
    def vertices(self) -> np.ndarray:
        corners = np.array(list(itertools.product([-1.0, 1.0], repeat=3))) * self.half_extents
        return corners @ self.R_b_s.T + self.p_b_s

    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        return self.vertices.min(axis=0), self.vertices.max(axis=0)

    def transformed(self, T_a_b: np.ndarray) -> Box:
        """The same box expressed in {a}."""
        R_a_s = T_a_b[:3, :3] @ self.R_b_s
        return Box(self.half_extents, R_a_s, _moved(T_a_b, self.p_b_s), self.relaxation)


class Cylinder(Shape):
    """A solid cylinder of a radius and length, its axis along z of R_b_s, centred at p_b_s."""

    _unit_second_moments = np.array([0.25, 0.25, 1.0 / 3.0])

    def __init__(
        self,
        radius: float,
        length: float,
        R_b_s: np.ndarray | None = None,
        p_b_s: np.ndarray | None = None,
        relaxation: Relaxation = "moment",
    ) -> None:
        self.relaxation = _checked_relaxation(relaxation)
        self.radius, self.length = _positive([radius, length], "radius and length")
        self.R_b_s, self.p_b_s = _pose(R_b_s, p_b_s)
        self.A = _affine([self.radius, self.radius, self.length / 2], self.R_b_s, self.p_b_s)
        self.polys = (
            _UnitBall((0, 1)),
            _UnitBall((2,)),
            _Halfspace(np.array([0.0, 0.0, 1.0, 1.0])),
            _Halfspace(np.array([0.0, 0.0, -1.0, 1.0])),
        )

    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        axis = self.R_b_s[:, 2]
        half = np.abs(axis) * self.length / 2 + self.radius * np.sqrt(np.clip(1 - axis**2, 0, 1))
        return self.p_b_s - half, self.p_b_s + half

    def transformed(self, T_a_b: np.ndarray) -> Cylinder:
        """The same cylinder expressed in {a}."""
        R_a_s = T_a_b[:3, :3] @ self.R_b_s
        return Cylinder(self.radius, self.length, R_a_s, _moved(T_a_b, self.p_b_s), self.relaxation)


class ShapeUnion(_Realizable):
    """A union of shapes (paper 003, Cor. 2): realizable iff a split into parts is."""

    def __init__(self, parts: list[Shape]) -> None:
        if not parts:
            raise ValueError("a ShapeUnion needs at least one part")
        self.parts = list(parts)

    def contains(self, points: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        return np.any([part.contains(points, tol) for part in self.parts], axis=0)

    def aabb(self) -> tuple[np.ndarray, np.ndarray]:
        boxes = np.array([part.aabb() for part in self.parts])
        return boxes[:, 0].min(axis=0), boxes[:, 1].max(axis=0)

    def transformed(self, T_a_b: np.ndarray) -> ShapeUnion:
        """The same union expressed in {a}."""
        return ShapeUnion([part.transformed(T_a_b) for part in self.parts])

    def realizability_constraints(self, J: cp.Expression) -> list[cp.Constraint]:
        """J = sum_j J_j, each J_j >= 0 and realizable on part j (paper 003, Cor. 2)."""
        return self._margin_constraints(J, 0.0)

    def _margin_constraints(self, J: cp.Expression, t: cp.Expression) -> list[cp.Constraint]:
        pieces = [cp.Variable((4, 4), symmetric=True) for _ in self.parts]
        constraints = [cp.vec(J - sum(pieces), order="C")[_UPPER4] == 0]
        for piece, part in zip(pieces, self.parts, strict=True):
            constraints += part._margin_constraints(piece, t)  # each includes piece >= 0
        return constraints


class VoxelShape(ShapeUnion):
    """A solid known from its surface (a closed triangle mesh or a segmented point cloud):
    the voxels of edge ``pitch`` that the surface passes through, with the cavities they
    enclose filled (``contains``: the solid the shape prior fills), covered by axis-aligned
    boxes merged greedily, each clipped to the surface's bounding box (so a ruler thinner
    than a voxel keeps its thickness).
    ``closing`` voxels of morphological closing first seal the gaps of a sparse cloud.

    The boxes contain the solid (up to one voxel of padding at slanted faces), so the
    realizability constraints of the union stay necessary conditions. ``max_parts``
    bounds the SDP's size: the two boxes whose bounding box adds the least volume are
    replaced by it until at most that many remain (the cover only grows).
    """

    def __init__(
        self,
        surface_points: np.ndarray,
        pitch: float,
        relaxation: Relaxation = "quadratic",
        max_parts: int = 12,
        closing: int = 0,
    ) -> None:
        points = np.asarray(surface_points, dtype=float)
        if points.ndim != 2 or points.shape[1] != 3 or len(points) < 4:
            raise ValueError("the surface needs at least 4 points, as a (n, 3) array")
        if not np.all(np.isfinite(points)):
            raise ValueError("the surface points must be finite (drop the NaNs of the cloud)")
        if not pitch > 0:
            raise ValueError(f"pitch must be positive, got {pitch}")
        lo, hi = points.min(axis=0), points.max(axis=0)
        if np.all(hi - lo <= 0):
            raise ValueError("the surface points coincide: the object has no extent")
        self.pitch = float(pitch)
        self._voxels = _filled_voxels(points, lo, self.pitch, closing)
        boxes = _merged_boxes(self._voxels)
        self._offset = lo - (1 + closing) * self.pitch  # corner of voxel index 0
        thinnest = 0.1 * self.pitch  # a flat cloud (one side of a thin object) gets a slab
        self._clip = (lo, np.maximum(hi, lo + thinnest))
        low = np.array([np.maximum(self._offset + a * self.pitch, lo) for a, _ in boxes])
        high = np.array([np.minimum(self._offset + b * self.pitch, hi) for _, b in boxes])
        high = np.maximum(high, low + thinnest)
        parts = [
            Box.from_corners(*corners, relaxation=relaxation)
            for corners in zip(*_fewest_boxes(low, high, max_parts), strict=True)
        ]
        super().__init__(parts)

    def contains(self, points: np.ndarray, tol: float = 1e-9) -> np.ndarray:
        """Whether each point lies in a filled voxel (clipped to the surface's bounding box):
        the solid itself, which the prior's grid samples. The merged boxes (``parts``) that
        carry the realizability constraints contain it."""
        points = np.atleast_2d(np.asarray(points, dtype=float))
        index = np.ceil((points - self._offset) / self.pitch - 1e-9).astype(int) - 1
        inside = np.all((index >= 0) & (index < self._voxels.shape), axis=1)
        inside &= np.all((points >= self._clip[0] - tol) & (points <= self._clip[1] + tol), axis=1)
        filled = np.zeros(len(points), dtype=bool)
        filled[inside] = self._voxels[tuple(index[inside].T)]
        return filled

    @classmethod
    def from_mesh(
        cls,
        vertices: np.ndarray,
        faces: np.ndarray,
        pitch: float,
        relaxation: Relaxation = "quadratic",
        max_parts: int = 12,
    ) -> VoxelShape:
        """A closed triangle mesh (vertices (n, 3) in the body frame, faces (f, 3) indices;
        several closed meshes may overlap, e.g. the parts of a tool). The orientation of
        the faces does not matter."""
        vertices = np.asarray(vertices, dtype=float)
        faces = np.asarray(faces)
        if vertices.ndim != 2 or vertices.shape[1] != 3 or faces.ndim != 2 or faces.shape[1] != 3:
            raise ValueError("a mesh needs vertices (n, 3) and triangle faces (f, 3)")
        if faces.size == 0 or faces.min() < 0 or faces.max() >= len(vertices):
            raise ValueError("faces must index the vertices (0 .. n - 1)")
        return cls(surface_samples(vertices[faces], pitch / 4), pitch, relaxation, max_parts)

    @classmethod
    def from_points(
        cls,
        points: np.ndarray,
        pitch: float,
        relaxation: Relaxation = "quadratic",
        max_parts: int = 12,
        noise: float = 0.0,
    ) -> VoxelShape:
        """A segmented point cloud of the object (surface or volume samples, in the body
        frame). One voxel of closing seals gaps up to a voxel wide: ``pitch`` should be about
        the cloud's point spacing or more. ``noise``: the standard deviation of the points
        about the surface (e.g. the depth sensor's); the cloud's extent is then that of the
        surface, not that of its outermost noisy points (``_noise_trimmed``)."""
        points = _noise_trimmed(np.asarray(points, dtype=float), noise)
        return cls(points, pitch, relaxation, max_parts, closing=1)


def _noise_trimmed(points: np.ndarray, noise: float) -> np.ndarray:
    """The points clipped to the surface's estimated bounding box: each face of the
    cloud's box moved inwards by the expected outermost of the m Gaussian deviations that
    scatter about it (``_expected_maximum``), m being the points within 4 noise of that
    face. Without it a 0.5 mm noise makes a 1.5 mm plate about 5 mm thick and shifts the
    voxel grid, which starts at the cloud's corner. Overstating the noise shrinks the
    solid below the object's: when unsure, err low."""
    if not noise >= 0:
        raise ValueError(f"noise must be non-negative, got {noise}")
    if noise == 0 or points.ndim != 2 or len(points) == 0 or not np.all(np.isfinite(points)):
        return points
    lo, hi = points.min(axis=0), points.max(axis=0)
    inner_lo = lo + noise * _expected_maximum(np.sum(points <= lo + 4 * noise, axis=0))
    inner_hi = hi - noise * _expected_maximum(np.sum(points >= hi - 4 * noise, axis=0))
    middle = np.clip((inner_lo + inner_hi) / 2, lo, hi)  # a plate thinner than its noise
    return np.clip(points, np.minimum(inner_lo, middle), np.maximum(inner_hi, middle))


def _expected_maximum(m: np.ndarray) -> np.ndarray:
    """The expected largest of m standard normal samples, to first order in the
    extreme-value expansion: b - (ln ln m + ln 4 pi) / (2 b), b = sqrt(2 ln m) (m >= 3)."""
    m = np.maximum(np.asarray(m, dtype=float), 3.0)
    b = np.sqrt(2 * np.log(m))
    return np.maximum(b - (np.log(np.log(m)) + np.log(4 * np.pi)) / (2 * b), 0.0)


def surface_samples(triangles: np.ndarray, spacing: float) -> np.ndarray:
    """Points on each triangle (t, 3, 3) a, b, c: the barycentric grid a + u (b - a) +
    v (c - a), u + v <= 1, with steps at most ``spacing`` along both edges (vertices
    included), so that long thin triangles get no more points than their area needs."""
    out = []
    for a, b, c in np.asarray(triangles, dtype=float):
        n_b = max(1, int(np.ceil(np.linalg.norm(b - a) / spacing)))
        n_c = max(1, int(np.ceil(np.linalg.norm(c - a) / spacing)))
        u, v = np.meshgrid(np.arange(n_b + 1) / n_b, np.arange(n_c + 1) / n_c, indexing="ij")
        keep = u + v <= 1 + 1e-12
        out.append(a + np.outer(u[keep], b - a) + np.outer(v[keep], c - a))
    return np.vstack(out)


def _filled_voxels(points: np.ndarray, lo: np.ndarray, pitch: float, closing: int) -> np.ndarray:
    """Occupancy (with one empty voxel of padding on every side) of the voxels holding a
    point, with the enclosed cavities filled. Voxel i >= 1 spans (lo + (i - 1) pitch,
    lo + i pitch]: a face on a grid plane adds no voxel beyond it. ``closing`` iterations of
    a 3x3x3 closing seal gaps of the surface first."""
    pad = 1 + closing
    index = np.maximum(np.ceil((points - lo) / pitch - 1e-9).astype(int), 1) + pad - 1
    grid = np.zeros(index.max(axis=0) + 1 + pad, dtype=bool)
    grid[tuple(index.T)] = True
    if closing:
        grid = ndimage.binary_closing(grid, np.ones((3, 3, 3)), iterations=closing)
    return ndimage.binary_fill_holes(grid)


def _merged_boxes(occupancy: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Voxel index ranges [start, stop) of boxes covering the occupied voxels exactly, each
    grown greedily along the axes in turn; the axis order giving the fewest boxes wins."""
    best = None
    for order in itertools.permutations(range(3)):
        boxes = _greedy_boxes(np.transpose(occupancy, order))
        inverse = np.argsort(order)
        boxes = [(start[inverse], stop[inverse]) for start, stop in boxes]
        if best is None or len(boxes) < len(best):
            best = boxes
    return best


def _fewest_boxes(
    low: np.ndarray, high: np.ndarray, max_parts: int
) -> tuple[np.ndarray, np.ndarray]:
    """Corners of at most max_parts boxes covering the given ones: agglomerative merging,
    each step replacing the pair whose common bounding box adds the least volume."""
    if max_parts < 1:
        raise ValueError(f"max_parts must be at least 1, got {max_parts}")
    low, high = low.copy(), high.copy()
    while len(low) > max_parts:
        volume = np.prod(high - low, axis=1)
        joint = np.prod(
            np.maximum(high[:, None], high[None]) - np.minimum(low[:, None], low[None]), axis=2
        )
        added = joint - volume[:, None] - volume[None]
        np.fill_diagonal(added, np.inf)
        i, j = np.unravel_index(np.argmin(added), added.shape)
        low[i], high[i] = np.minimum(low[i], low[j]), np.maximum(high[i], high[j])
        low, high = np.delete(low, j, axis=0), np.delete(high, j, axis=0)
    return low, high


def _greedy_boxes(occupancy: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    left = occupancy.copy()
    shape = left.shape
    boxes = []
    for start in np.argwhere(occupancy):
        if not left[tuple(start)]:
            continue
        stop = start + 1
        for axis in range(3):
            while stop[axis] < shape[axis]:
                grown = [slice(a, b) for a, b in zip(start, stop, strict=True)]
                grown[axis] = slice(stop[axis], stop[axis] + 1)
                if not left[tuple(grown)].all():
                    break
                stop[axis] += 1
        left[tuple(slice(a, b) for a, b in zip(start, stop, strict=True))] = False
        boxes.append((start, stop))
    return boxes


def voxel_centres(shape: _Realizable, pitch: float) -> np.ndarray:
    """Centres of the voxels of the shape's bounding box that lie in the shape.

    Each axis gets max(2, round(extent / pitch)) cells, so that the points are not
    coplanar (paper 001, App. A needs rank [P; 1] = 4).
    """
    if not pitch > 0:
        raise ValueError(f"pitch must be positive, got {pitch}")
    lo, hi = shape.aabb()
    cells = np.maximum(2, np.round((hi - lo) / pitch)).astype(int)
    axes = [lo[i] + (np.arange(cells[i]) + 0.5) * (hi[i] - lo[i]) / cells[i] for i in range(3)]
    points = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    return points[shape.contains(points)]
