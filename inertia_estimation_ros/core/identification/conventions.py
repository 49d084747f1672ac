"""Which conventions do the user's data follow? Fit them under each and compare.

Data for ``body_regressor`` follow this package's conventions (docs/core-without-ros.md
draws each one):

* the wrench F is the one the sensor applies **on the object** (moment first); a
  sensor's own reading is the reaction, -F;
* twists and wrenches are **angular first**, V = (omega, v), F = (n, f);
* dV is the **spatial** (body-twist) derivative: its linear part is d/dt of v in {b},
  not the classical acceleration a = dv/dt + omega x v of the frame's origin;
* g is **gravity** (-9.81 m/s^2 along world z, in {b}), not an accelerometer's specific
  force, which points up;
* everything is expressed in the **sensor frame** {b}; with the sensor's orientations
  R_w_b given, data in world axes are recognised too.

Flipping a sign alone cannot be seen in a least-squares residual (Y theta = -F is fit
by -theta just as well), so each reading is judged by the best *physically consistent*
fit: the projection of its least-squares estimate onto J >= 0 in the data's metric
(paper 003, Thm. 3). Its residual, ||W (Y theta - F)||, is the evidence.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..consistency import ConsistencyError, project_to_consistent
from ..inertial import InertialParameters
from ..regressor import body_regressor
from .least_squares import ExcitationError, RegressionData, checked_samples, least_squares

CHOICES = {
    "wrench": ("on_object", "reaction"),
    "order": ("angular_first", "linear_first"),
    "acceleration": ("spatial", "classical"),
    "gravity": ("gravity", "specific_force"),
}


@dataclass(frozen=True)
class Convention:
    """One reading of the data (see the module docstring for the package's own)."""

    wrench: str = "on_object"
    order: str = "angular_first"
    acceleration: str = "spatial"
    gravity: str = "gravity"
    frame: str = "sensor"

    def to_package(
        self,
        V: np.ndarray,
        dV: np.ndarray,
        g: np.ndarray,
        F: np.ndarray,
        R_w_b: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(V, dV, g, F) in the package's conventions, read as this convention says
        (``R_w_b`` (K, 3, 3), the sensor's orientations, for frame="world")."""
        if self.frame == "world":
            if R_w_b is None:
                raise ValueError("frame='world' needs the sensor's orientations R_w_b")
            V, dV, F = (_rotated_pairs(R_w_b, x) for x in (V, dV, F))
            g = np.einsum("kji,kj->ki", R_w_b, g)
        if self.order == "linear_first":
            V, dV, F = (np.roll(x, 3, axis=-1) for x in (V, dV, F))
        if self.acceleration == "classical":  # a = dv/dt + omega x v
            dV = np.c_[dV[:, :3], dV[:, 3:] - np.cross(V[:, :3], V[:, 3:])]
        if self.gravity == "specific_force":
            g = -g
        if self.wrench == "reaction":
            F = -F
        return V, dV, g, F

    def __str__(self) -> str:
        return ", ".join(f"{key}={getattr(self, key)}" for key in (*CHOICES, "frame"))


def _rotated_pairs(R_w_b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Both 3-vector halves of each row, from world into sensor axes (R_w_b^T x)."""
    return np.concatenate(
        [np.einsum("kji,kj->ki", R_w_b, x[:, :3]), np.einsum("kji,kj->ki", R_w_b, x[:, 3:])],
        axis=1,
    )


@dataclass(frozen=True)
class ConventionFit:
    """The best consistent fit of the data read under one convention."""

    convention: Convention
    params: InertialParameters | None  # None when the data do not determine theta
    relative_residual: float  # ||W (Y theta - F)|| / ||W F|| of the consistent fit
    least_squares_consistent: bool  # the unconstrained fit already was consistent


@dataclass(frozen=True)
class ConventionDiagnosis:
    """Every reading's fit, best first; ``best`` is the one the data follow."""

    fits: list[ConventionFit]

    @property
    def best(self) -> Convention:
        return self.fits[0].convention

    @property
    def clear(self) -> bool:
        """The best fit explains the data at least twice as well as any other reading."""
        return len(self.fits) < 2 or self.fits[1].relative_residual > 2 * max(
            self.fits[0].relative_residual, 1e-12
        )

    def __str__(self) -> str:
        lines = [f"{'relative residual':>18}  consistent LS  convention"]
        for fit in self.fits:
            lines.append(
                f"{fit.relative_residual:18.3e}  {str(fit.least_squares_consistent):>13}"
                f"  {fit.convention}"
            )
        verdict = "clearly" if self.clear else "NOT clearly (excite the motion more)"
        lines.append(f"the data {verdict} follow: {self.best}")
        return "\n".join(lines)


def diagnose_conventions(
    V: np.ndarray,
    dV: np.ndarray,
    g: np.ndarray,
    F: np.ndarray,
    R_w_b: np.ndarray | None = None,
) -> ConventionDiagnosis:
    """Fit samples (K, 6), (K, 6), (K, 3), (K, 6) under every convention of ``CHOICES``,
    in sensor axes and, given the sensor's orientations ``R_w_b`` (K, 3, 3), in world axes.

    Raises ValueError for malformed samples. A reading whose data do not determine the
    parameters gets an infinite residual.
    """
    V, dV, g, F = checked_samples(V, dV, g, F)
    if R_w_b is not None:
        R_w_b = np.asarray(R_w_b, dtype=float)
        if R_w_b.shape != (len(V), 3, 3) or not np.all(np.isfinite(R_w_b)):
            raise ValueError(f"R_w_b must be finite ({len(V)}, 3, 3), got {R_w_b.shape}")
    frames = ("sensor",) if R_w_b is None else ("sensor", "world")
    fits = [
        _fit(Convention(*choice, frame=frame), V, dV, g, F, R_w_b)
        for choice in itertools.product(*CHOICES.values())
        for frame in frames
    ]
    return ConventionDiagnosis(sorted(fits, key=lambda fit: fit.relative_residual))


def _fit(
    convention: Convention,
    V: np.ndarray,
    dV: np.ndarray,
    g: np.ndarray,
    F: np.ndarray,
    R_w_b: np.ndarray | None,
) -> ConventionFit:
    V, dV, g, F = convention.to_package(V, dV, g, F, R_w_b)
    data = RegressionData.from_rows(body_regressor(V, dV, g), F)
    norm = max(float(np.linalg.norm(F)), 1e-300)
    try:
        estimate = least_squares(data)
        projection = project_to_consistent(estimate.vec, data.information, margin=0.0)
    except (ExcitationError, ConsistencyError):
        return ConventionFit(convention, None, float("inf"), False)
    residual = data.residual_norm(projection.params.vec) / norm
    return ConventionFit(convention, projection.params, residual, not projection.moved)
