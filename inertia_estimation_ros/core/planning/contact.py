"""Contact model of objects resting on a tray: friction pyramids and the contact wrench cone.

Heins and Schoellig (paper 004), Sec. IV-A and VI-A; notes robust-balancing.md §3.3, §3.6.
Everything is in the tray frame {e} (origin on the tray's top surface), wrenches moment
first, w = [tau; f] about the origin of {e} (``core.spatial``'s convention).

* ``friction_pyramid`` (U-5): the span form n +- mu t1, n +- mu t2 of the "diamond"
  pyramid |f_t1| + |f_t2| <= mu f_n, inscribed in the Coulomb cone (conservative);
* ``ContactPolygon.grasp_matrix`` (U-6): G = [G_1 ... G_n], G_i = [[r_i]; 1];
* ``ContactPolygon.face_form`` (U-12): H with W_C = {w : H w <= 0}, by double description
  (cdd), each row scaled so that its normal-force coefficient is -1 (the notes' scaling,
  in which Table I and §8.3 are given).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import cdd
import numpy as np

from ..spatial import skew


class ContactError(ValueError):
    """A contact description the cone cannot be built from."""


def tangents(normal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit tangents t1, t2 with (t1, t2, n) right-handed; t1 along x for n = e_z."""
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    seed = np.array([1.0, 0.0, 0.0]) if abs(n[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = seed - (seed @ n) * n
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(n, t1)


def friction_pyramid(normal: np.ndarray, mu: float) -> np.ndarray:
    """The 4 extreme rays (columns, 3x4) n + mu t1, n - mu t1, n + mu t2, n - mu t2 (U-5)."""
    n = np.asarray(normal, dtype=float) / np.linalg.norm(normal)
    t1, t2 = tangents(n)
    return np.stack([n + s * mu * t for t in (t1, t2) for s in (1.0, -1.0)], axis=1)


def _cone_inequalities(generators: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """(A, equality rows) with cone(generators columns) = {y : A y <= 0, A[eq] y = 0} (cdd).

    Supports pycddlib 3 (``matrix_from_array``) and 2.x (``Matrix``); rigeo, our test oracle,
    still needs 2.x, which is what requirements pin.
    """
    rows = np.hstack([np.zeros((generators.shape[1], 1)), generators.T]).tolist()
    if hasattr(cdd, "matrix_from_array"):  # pycddlib >= 3
        mat = cdd.matrix_from_array(rows, rep_type=cdd.RepType.GENERATOR)
        ineq = cdd.copy_inequalities(cdd.polyhedron_from_matrix(mat))
        M, lin = np.array(ineq.array, dtype=float), sorted(ineq.lin_set)
    else:
        mat = cdd.Matrix(rows, number_type="float")
        mat.rep_type = cdd.RepType.GENERATOR
        ineq = cdd.Polyhedron(mat).get_inequalities()
        M = np.array([ineq[i] for i in range(ineq.row_size)], dtype=float)
        lin = sorted(ineq.lin_set)
    return -M[:, 1:], lin  # cdd rows [b, -A]: b - A y >= 0 with b = 0


@dataclass(frozen=True)
class ContactPolygon:
    """Contact points r_i (rows, in {e}) sharing one normal and friction coefficient mu."""

    points: np.ndarray
    normal: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    mu: float = 0.2

    def __post_init__(self) -> None:
        points = np.atleast_2d(np.asarray(self.points, dtype=float))
        normal = np.asarray(self.normal, dtype=float)
        if points.shape[1] != 3 or len(points) < 1 or not np.all(np.isfinite(points)):
            raise ContactError(f"contact points must be a finite (n, 3) array, got {points.shape}")
        if normal.shape != (3,) or not np.linalg.norm(normal) > 0:
            raise ContactError(f"the contact normal must be a nonzero 3-vector, got {normal}")
        if not (np.isfinite(self.mu) and self.mu >= 0):
            raise ContactError(f"mu must be finite and >= 0, got {self.mu}")
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "normal", normal / np.linalg.norm(normal))

    @classmethod
    def rectangle(
        cls, half_x: float, half_y: float, centre: tuple[float, float] = (0.0, 0.0), mu: float = 0.2
    ) -> ContactPolygon:
        """The 4 corners of a rectangular footprint on the tray surface z = 0 (Fig. 2)."""
        corners = [(sx * half_x, sy * half_y) for sx in (1, -1) for sy in (1, -1)]
        return cls(np.array([[centre[0] + x, centre[1] + y, 0.0] for x, y in corners]), mu=mu)

    @classmethod
    def disk(
        cls,
        radius: float,
        sides: int = 8,
        centre: tuple[float, float] = (0.0, 0.0),
        mu: float = 0.2,
    ) -> ContactPolygon:
        """A regular polygon inscribed in a circular footprint (a cylinder's base): an inner
        approximation of the support, hence conservative."""
        angles = 2 * np.pi * np.arange(sides) / sides
        xy = radius * np.stack([np.cos(angles), np.sin(angles)], axis=1) + np.asarray(centre)
        return cls(np.hstack([xy, np.zeros((sides, 1))]), mu=mu)

    @property
    def grasp_matrix(self) -> np.ndarray:
        """G (6 x 3n) with w = G [f_1; ...; f_n], w = [tau; f] about the origin (U-6)."""
        return np.hstack([np.vstack([skew(r), np.eye(3)]) for r in self.points])

    @property
    def normal_grasp_matrix(self) -> np.ndarray:
        """G (6 x n) of frictionless contacts: w = G lambda, f_i = lambda_i n (paper Sec. V)."""
        return np.stack(
            [np.concatenate([np.cross(r, self.normal), self.normal]) for r in self.points], axis=1
        )

    def span_form(self) -> np.ndarray:
        """G F^S (6 x 4n): the contact wrench cone W_C is the cone of these columns (U-7)."""
        pyramid = friction_pyramid(self.normal, self.mu)
        return np.hstack([np.vstack([skew(r) @ pyramid, pyramid]) for r in self.points])

    def face_form(self) -> np.ndarray:
        """H (n_h x 6) with W_C = {w : H w <= 0} (U-12); equalities appear as two opposite rows.

        Rows with a normal-force coefficient are scaled to make it -1 (notes §3.6, §8.2);
        the others (only with mu = 0) to unit norm.
        """
        A, lin = _cone_inequalities(self.span_form())
        keep = [i for i in range(len(A)) if i not in lin]
        H = np.vstack([A[keep], A[lin], -A[lin]])
        normal_coefficient = -(H[:, 3:] @ self.normal)
        scale = np.where(
            normal_coefficient > 1e-9 * np.linalg.norm(H, axis=1),
            normal_coefficient,
            np.linalg.norm(H, axis=1),
        )
        return H / scale[:, None]
