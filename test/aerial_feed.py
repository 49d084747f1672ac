"""Feed a simulated aerial run (``sim/aerial``) to the team estimator in stamp order, as the
bag and the coordinator would: payload mocap, then per robot pose, twist and rotor speeds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from inertia_estimation_ros.core.aerial.rotors import RPM_PER_RAD_S
from inertia_estimation_ros.core.aerial.team_estimation import (
    AerialTeamEstimate,
    AerialTeamEstimator,
    AerialTeamModel,
)
from inertia_estimation_ros.sim.scenario import load_scenario

Damage = Callable[[int, str, int, np.ndarray], np.ndarray | None]  # (q, kind, k, value)


def team_model(scenario, mass_scale: float = 1.0) -> AerialTeamModel:
    document = scenario.ground_truth_document()
    document["payload"]["mass"] *= mass_scale
    return AerialTeamModel.from_document(document)


def feed(
    estimator: AerialTeamEstimator,
    r,
    damage: Damage | None = None,
    each: Callable[[AerialTeamEstimate], None] | None = None,
) -> list[AerialTeamEstimate]:
    """One estimate per sample of the run ``r`` (an ``AerialResult``). ``damage(q, kind, k,
    value)`` may replace a robot's message (kind 'pose', 'twist', 'rotors'; None drops it);
    ``each`` sees every estimate as it is made."""

    def damaged(q: int, kind: str, k: int, value):
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


def run_scenario(overrides: dict):
    """(scenario, result) of an aerial_cable_team scenario (paper 002's team by default)."""
    base = {"type": "aerial_cable_team", "name": "estimation", "seed": 1, "duration": 4.0}
    scenario = load_scenario(base | overrides)
    return scenario, scenario.run()


def onboard_team(node, prefix: str, robots: list[str], vectors: np.ndarray, period: float = 0.02):
    """On ``node``'s timer every ``period``: the payload's mocap at rest at (0, 0, 1) m on
    ``prefix``/payload/mocap/* and each robot's own CableTensions (tension vectors
    ``vectors`` (n, 3), variance 0.01 N^2, direction 1e-6) on ``prefix``/<id>/cable_tension,
    stamped on a clock from 0 (as ``tension_source: onboard`` robots publish)."""
    from geometry_msgs.msg import PoseStamped, TwistStamped

    from inertia_estimation_ros.core.spatial import transform
    from inertia_estimation_ros.msg import CableTensions
    from inertia_estimation_ros.ros.conversions import to_pose, to_time, to_vector3
    from inertia_estimation_ros.ros.interface import SENSOR_QOS

    pose = node.create_publisher(PoseStamped, f"{prefix}/payload/mocap/pose", SENSOR_QOS)
    twist = node.create_publisher(TwistStamped, f"{prefix}/payload/mocap/twist", SENSOR_QOS)
    cables = [
        node.create_publisher(CableTensions, f"{prefix}/{rid}/cable_tension", SENSOR_QOS)
        for rid in robots
    ]
    clock = {"t": 0.0}

    def publish() -> None:
        clock["t"] += period
        stamp = to_time(clock["t"])
        msg = PoseStamped(pose=to_pose(transform(np.eye(3), [0.0, 0.0, 1.0])))
        msg.header.stamp = stamp
        pose.publish(msg)
        rest = TwistStamped()
        rest.header.stamp = stamp
        twist.publish(rest)
        for rid, publisher, vector in zip(robots, cables, vectors, strict=True):
            tension = float(np.linalg.norm(vector))
            cable = CableTensions(robot_ids=[rid], tensions=[tension])
            cable.header.stamp = stamp
            cable.directions = [to_vector3(vector / tension)]
            cable.tension_variances = [0.01]
            cable.direction_covariances = [1e-6, 0, 0, 0, 1e-6, 0, 0, 0, 1e-6]
            publisher.publish(cable)

    return node.create_timer(period, publish)
