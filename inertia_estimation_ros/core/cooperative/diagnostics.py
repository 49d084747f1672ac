"""Excitation and observability: condition numbers, unexcited directions, and advice.

Every quantity the team estimates needs a particular motion:
* grasp rotations: angular velocity about at least two axes;
* grasp positions: angular velocity about three axes (the position along a fixed
  rotation axis is not seen);
* mass: gravity or acceleration;
* CoM: gravity seen from two orientations that differ about a non-vertical axis
  (static holds), or accelerations;
* inertia: angular acceleration about all three axes.

These functions turn information matrices and signal second moments into numbers
(Jacobi-scaled condition numbers, unexcited axes) and into sentences that say what to
do, e.g. "rotation about the z axis of robot_1's grasp frame is not excited: rotate
about it". An estimate whose uncertainty exceeds its threshold is refused, with a
sentence naming it, instead of being reported as a number.
"""

from __future__ import annotations

import numpy as np

AXIS_NAMES = ("x", "y", "z")
UNOBSERVABLE_VARIANCE = 1e12  # stands for "infinite" (in the units of the parameters)


def covariance_from_information(information: np.ndarray, rcond: float = 1e-10) -> np.ndarray:
    """The inverse of an information matrix, honest about directions it does not determine.

    Eigen-directions of the Jacobi-scaled matrix below rcond times its largest eigenvalue
    carry no information: they get the variance ``UNOBSERVABLE_VARIANCE`` instead of the
    zero a pseudo-inverse would claim, so thresholds on standard deviations refuse them.
    """
    information = 0.5 * (information + information.T)
    d = np.sqrt(np.clip(np.diag(information), 0.0, None))
    d = np.where(d > 0, d, 1.0)
    lam, U = np.linalg.eigh(information / np.outer(d, d))
    known = lam > rcond * max(lam[-1], 1e-300)
    covariance = (U[:, known] / lam[known]) @ U[:, known].T / np.outer(d, d)
    null = U[:, ~known] / d[:, None]
    null = null / np.linalg.norm(null, axis=0)
    return covariance + UNOBSERVABLE_VARIANCE * null @ null.T


def scaled_condition_number(information: np.ndarray) -> float:
    """Condition number of the Jacobi-scaled regressor behind an information matrix.

    0 when there is no data; inf when some direction has no information at all.
    """
    information = np.asarray(information, dtype=float)
    d = np.sqrt(np.clip(np.diag(information), 0.0, None))
    if not np.any(d > 0):
        return 0.0
    if np.any(d == 0):
        return float("inf")
    lam = np.linalg.eigvalsh(information / np.outer(d, d))
    return float(np.sqrt(lam[-1] / lam[0])) if lam[0] > 0 else float("inf")


def frame_phrase(robot_id: str) -> str:
    return f"{robot_id}'s grasp frame"


def axis_phrase(axis: np.ndarray, frame: str) -> str:
    """'the z axis of <frame>' when one component dominates, else the axis' components."""
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    k = int(np.argmax(np.abs(axis)))
    if abs(axis[k]) > 0.9:
        return f"the {AXIS_NAMES[k]} axis of {frame}"
    axis = axis if axis[k] > 0 else -axis
    return f"the axis ({axis[0]:.2f}, {axis[1]:.2f}, {axis[2]:.2f}) of {frame}"


def weak_axes(second_moment: np.ndarray, ratio: float) -> list[np.ndarray]:
    """Eigen-directions of a 3x3 second moment below ratio times its largest eigenvalue."""
    lam, U = np.linalg.eigh(0.5 * (second_moment + second_moment.T))
    top = max(lam[-1], 0.0)
    return [U[:, k] for k in range(3) if top == 0.0 or lam[k] < ratio * top]


def rotation_advice(omega_moment: np.ndarray, frame: str, ratio: float) -> list[str]:
    """Advice for grasp kinematics from sum omega omega^T (angular velocity in ``frame``)."""
    return [
        f"rotation about {axis_phrase(a, frame)} is not excited: rotate about it"
        for a in weak_axes(omega_moment, ratio)
    ]


def acceleration_advice(alpha_moment: np.ndarray, frame: str, ratio: float) -> list[str]:
    """Advice for the inertia from sum alpha alpha^T (angular acceleration in ``frame``)."""
    return [
        f"angular acceleration about {axis_phrase(a, frame)} is not excited: "
        "swing the payload back and forth about it"
        for a in weak_axes(alpha_moment, ratio)
    ]


def tilt_advice(gravity_moment: np.ndarray, static_samples: int, frame: str) -> list[str]:
    """Advice for the CoM from sum g g^T / |g|^2 over static holds (gravity in ``frame``)."""
    if static_samples == 0:
        return ["no static hold yet: hold the payload still for a second"]
    lam = np.linalg.eigvalsh(gravity_moment / static_samples)
    if lam[1] < 1e-4:  # all holds within about 0.6 deg of one orientation
        return [
            f"the CoM along gravity is not determined from {frame}: hold the payload still "
            "at another orientation, tilted about a horizontal axis"
        ]
    return []


def grasp_refusals(
    robot_ids: list[str],
    covariances: dict[str, np.ndarray],
    max_rotation_std: float,
    max_position_std: float,
) -> list[str]:
    """Sentences for the grasps whose rotation or position std exceeds its threshold."""
    out = []
    for rid in robot_ids:
        C = covariances[rid]
        rot = float(np.sqrt(max(np.linalg.eigvalsh(C[:3, :3])[-1], 0.0)))
        pos = float(np.sqrt(max(np.linalg.eigvalsh(C[3:, 3:])[-1], 0.0)))
        if rot > max_rotation_std or pos > max_position_std or not np.isfinite(rot + pos):
            out.append(
                f"the grasp of {rid} is not determined yet (rotation std "
                f"{np.rad2deg(rot):.2g} deg, position std {100 * pos:.2g} cm): keep rotating "
                "the payload about different axes"
            )
    return out
