"""The aerial team's estimate as messages: ``CableTensions``, ``ExternalWrench``,
``geometry_msgs/WrenchStamped`` and per-robot diagnostics (the core is
``core/aerial/team_estimation.py``; conversions from ``conversions.py``)."""

from __future__ import annotations

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
from scipy.linalg import block_diag
from std_msgs.msg import Header

from ..core.aerial.team_estimation import AerialTeamEstimate, OnboardCable
from ..msg import CableTensions, ExternalWrench
from .conversions import to_time, to_vector3, to_wrench, vector3
from .runtime import LEVELS


def payload_frame_covariance(estimate: AerialTeamEstimate) -> np.ndarray:
    """The 6x6 covariance of (F, M), both in the payload frame (the message's order)."""
    R = block_diag(estimate.payload_R.T, np.eye(3))
    return R @ estimate.wrench.covariance @ R.T


def to_cable_tensions(estimate: AerialTeamEstimate, world_frame: str) -> CableTensions:
    """Per robot the tension, its variance and the direction from the attach point to the
    robot (-xi_k) with its covariance."""
    header = Header(stamp=to_time(estimate.stamp), frame_id=world_frame)
    covariances = estimate.cable_covariance[:, :3, :3]
    return CableTensions(
        header=header,
        robot_ids=list(estimate.robot_ids),
        tensions=[float(t) for t in estimate.tension],
        directions=[to_vector3(-xi) for xi in estimate.xi],
        tension_variances=[float(s * s) for s in estimate.tension_std],
        direction_covariances=[float(c) for c in covariances.reshape(-1)],
    )


def onboard_cables(msg: CableTensions) -> dict[str, OnboardCable]:
    """Each robot's entry of a ``CableTensions`` (a robot's own, from its onboard UKF), as the
    estimator takes it: xi = -direction, the (xi, mu) covariance block-diagonal."""
    n = len(msg.robot_ids)
    lengths = {len(msg.tensions), len(msg.directions), len(msg.tension_variances)}
    if lengths != {n} or len(msg.direction_covariances) != 9 * n:
        raise ValueError(
            f"CableTensions with {n} robot ids needs {n} tensions, directions and variances and "
            f"{9 * n} direction covariances"
        )
    out = {}
    for k, rid in enumerate(msg.robot_ids):
        covariance = np.zeros((4, 4))
        covariance[:3, :3] = np.reshape(msg.direction_covariances[9 * k : 9 * k + 9], (3, 3))
        covariance[3, 3] = msg.tension_variances[k]
        std = float(np.sqrt(max(msg.tension_variances[k], 0.0)))
        out[rid] = OnboardCable(msg.tensions[k], std, -vector3(msg.directions[k]), covariance)
    return out


def to_human_wrench(
    estimate: AerialTeamEstimate, payload_frame: str, dead_band: tuple[float, float], method: str
) -> tuple[ExternalWrench, WrenchStamped]:
    """The full estimate, and the dead-banded wrench as a plain ``WrenchStamped`` (what an
    admittance controller consumes: zero with no contact), both in the payload frame."""
    header = Header(stamp=to_time(estimate.stamp), frame_id=payload_frame)
    raw = to_wrench(estimate.in_payload_frame(estimate.wrench.wrench))
    banded = to_wrench(estimate.in_payload_frame(estimate.dead_banded))
    full = ExternalWrench(
        header=header,  # the payload's frame is at its CoM: center is zero
        wrench=raw,
        covariance=payload_frame_covariance(estimate).reshape(-1).tolist(),
        observable=[True] * 6,
        dead_banded=banded,
        dead_band_force=float(dead_band[0]),
        dead_band_moment=float(dead_band[1]),
        contact=estimate.contact,
        method=method,
        degraded=estimate.degraded,
        degraded_reasons=list(estimate.reasons),
    )
    return full, WrenchStamped(header=header, wrench=banded)


def robot_statuses(
    node_name: str, estimate: AerialTeamEstimate, counters: dict[str, dict[str, int]]
) -> list[DiagnosticStatus]:
    """diagnostic_updater's naming: "<node>: <robot>", hardware_id the robot's id; the UKF's
    tension, its sigma, innovation statistic (NIS) and update/gating counts; WARN when the
    robot is named in a degraded reason."""
    statuses = []
    for k, rid in enumerate(estimate.robot_ids):
        mine = [r for r in estimate.reasons if r.startswith(f"{rid}:")]
        values = {
            "tension [N]": f"{estimate.tension[k]:.4f}",
            "tension sigma [N]": f"{estimate.tension_std[k]:.4f}",
            **{name: str(count) for name, count in sorted(counters[rid].items())},
        }
        statuses.append(
            DiagnosticStatus(
                level=LEVELS["WARN" if mine else "OK"],
                name=f"{node_name}: {rid}",
                message="; ".join(mine) or "tracking",
                hardware_id=rid,
                values=[KeyValue(key=key, value=value) for key, value in values.items()],
            )
        )
    return statuses
