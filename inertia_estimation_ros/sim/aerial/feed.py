"""Feed a simulated aerial run (``AerialResult``) to the team estimator in stamp order, as the
bag and the coordinator would: payload mocap, then per robot pose, twist and rotor speeds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...core.aerial.rotors import RPM_PER_RAD_S
from ...core.aerial.team_estimation import AerialTeamEstimate, AerialTeamEstimator
from .runner import AerialResult

Damage = Callable[[int, str, int, np.ndarray], np.ndarray | None]  # (q, kind, k, value)


def feed(
    estimator: AerialTeamEstimator,
    r: AerialResult,
    damage: Damage | None = None,
    each: Callable[[AerialTeamEstimate], None] | None = None,
) -> list[AerialTeamEstimate]:
    """One estimate per sample of the run ``r``. ``damage(q, kind, k, value)`` may replace a
    robot's message (kind 'pose', 'twist', 'rotors'; None drops it); ``each`` sees every
    estimate as it is made."""

    def damaged(q: int, kind: str, k: int, value: np.ndarray) -> np.ndarray | None:
        return value if damage is None else damage(q, kind, k, value)

    out = []
    for q, t in enumerate(r.time):
        R_L = r.mocap_payload_R[q]
        estimator.payload_pose(t, r.mocap_payload_x[q], R_L)
        estimator.payload_twist(t, r.mocap_payload_v[q], R_L @ r.mocap_payload_Omega[q])
        for k, rid in enumerate(r.robot_ids):
            R = r.mocap_robot_R[q, k]
            pose = damaged(q, "pose", k, r.mocap_robot_x[q, k])
            if pose is not None:
                estimator.robot_pose(rid, t, pose, R)
            twist = damaged(q, "twist", k, r.mocap_robot_v[q, k])
            if twist is not None:
                estimator.robot_twist(rid, t, twist, R @ r.mocap_robot_Omega[q, k])
            rotors = damaged(q, "rotors", k, r.rotor_rpm[q, k] / RPM_PER_RAD_S)
            if rotors is not None:
                estimator.rotor_speeds(rid, t, rotors)
        out.append(estimator.estimate(t))
        if each is not None:
            each(out[-1])
    return out
