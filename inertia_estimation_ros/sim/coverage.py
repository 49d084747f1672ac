"""Coverage of stated uncertainty over Monte Carlo runs: z = error / stated std, pooled chi^2.

A covariance is a claim: over many independent runs the errors e (k per run) must have
e^T C^-1 e ~ chi^2_k. ``Coverage`` pools runs and tests the claim:
* ``chi2_interval``: the sum of the d^2 = e^T C^-1 e lies within the two-sided chi^2
  quantiles of the summed degrees of freedom, at a stated false-alarm rate;
* ``beyond(5)``: the count of |z| > 5 of single coordinates, which is about 6e-7 per
  coordinate for a right covariance: any count above 0 in a few thousand marks gross
  overconfidence, however good the average is;
* ``scale``: sqrt(mean d^2 / k), the factor by which the stated std is too small (> 1)
  or too large (< 1), with its resolution (``scale_resolution``).
Used by the calibration tests and by ``bench/bench_calibration.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation
from scipy.stats import chi2


@dataclass
class Coverage:
    """Errors and stated covariances of independent runs, pooled."""

    z: list[np.ndarray] = field(default_factory=list)  # per run: error / stated std
    d2: list[float] = field(default_factory=list)  # per run: e^T C^-1 e
    dof: list[int] = field(default_factory=list)  # per run: len(e)

    def add(self, error: np.ndarray, covariance: np.ndarray) -> None:
        """One run's error vector and the covariance it claims."""
        error = np.asarray(error, dtype=float)
        self.z.append(error / np.sqrt(np.diag(covariance)))
        self.d2.append(float(error @ np.linalg.solve(covariance, error)))
        self.dof.append(len(error))

    def scaled(self, factor: float) -> Coverage:
        """The same runs had every covariance been multiplied by factor."""
        return Coverage(
            [z / np.sqrt(factor) for z in self.z], [d2 / factor for d2 in self.d2], list(self.dof)
        )

    @property
    def runs(self) -> int:
        return len(self.d2)

    @property
    def total_dof(self) -> int:
        return int(sum(self.dof))

    @property
    def chi2(self) -> float:
        return float(sum(self.d2))

    @property
    def scale(self) -> float:
        """sqrt(chi^2 / dof): 1 when the stated std is right, 1.2 when it is 20 % too small."""
        return float(np.sqrt(self.chi2 / max(self.total_dof, 1)))

    def chi2_interval(self, false_alarm: float) -> tuple[float, float]:
        """Two-sided acceptance interval of the pooled chi^2 at the false-alarm rate."""
        return chi2_interval(self.total_dof, false_alarm)

    def accepts(self, false_alarm: float) -> bool:
        low, high = self.chi2_interval(false_alarm)
        return low <= self.chi2 <= high

    def p_value(self) -> float:
        """Two-sided p-value of the pooled chi^2."""
        cdf = chi2.cdf(self.chi2, self.total_dof)
        return float(2.0 * min(cdf, 1.0 - cdf))

    def beyond(self, threshold: float) -> int:
        """How many single coordinates lie more than threshold stated stds off."""
        return int(sum(np.sum(np.abs(z) > threshold) for z in self.z))

    def max_abs_z(self) -> float:
        return float(max((np.abs(z).max() for z in self.z), default=0.0))

    def fraction_within(self, threshold: float) -> float:
        """Share of single coordinates within threshold stated stds (1: 68.3 %, 2: 95.4 %)."""
        values = np.concatenate(self.z) if self.z else np.zeros(0)
        return float(np.mean(np.abs(values) <= threshold)) if len(values) else float("nan")


def chi2_interval(dof: int, false_alarm: float) -> tuple[float, float]:
    """Two-sided quantiles of chi^2_dof with false_alarm / 2 in each tail."""
    return float(chi2.ppf(false_alarm / 2, dof)), float(chi2.isf(false_alarm / 2, dof))


def scale_resolution(dof: int, false_alarm: float, power: float = 0.95) -> tuple[float, float]:
    """The smallest std errors (too small, too large) that the chi^2 test catches with the
    given power: a std stated s times too small multiplies the pooled chi^2 by s^2."""
    low, high = chi2_interval(dof, false_alarm)
    too_small = np.sqrt(high / chi2.ppf(1 - power, dof))
    too_large = np.sqrt(chi2.ppf(power, dof) / low)
    return float(too_small), float(too_large)


def grasp_errors(
    T_s_i: Mapping[str, np.ndarray], truth: Mapping[str, np.ndarray], reference_id: str
) -> np.ndarray:
    """(dphi, dp) per non-reference robot, in {s}, in the order of T_s_i: the order and
    the coordinates of ``GraspKinematics.covariance``."""
    errors = []
    for robot_id, T in T_s_i.items():
        if robot_id == reference_id:
            continue
        T_true = truth[robot_id]
        dphi = Rotation.from_matrix(T[:3, :3] @ T_true[:3, :3].T).as_rotvec()
        errors.append(np.r_[dphi, T[:3, 3] - T_true[:3, 3]])
    return np.concatenate(errors)
