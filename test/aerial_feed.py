"""Feed a simulated aerial run (``sim/aerial``) to the team estimator in stamp order, as the
bag and the coordinator would: payload mocap, then per robot pose, twist and rotor speeds."""

from __future__ import annotations

import numpy as np

from inertia_estimation_ros.core.aerial.team_estimation import AerialTeamModel
from inertia_estimation_ros.sim.aerial.feed import feed
from inertia_estimation_ros.sim.scenario import load_scenario

__all__ = ["feed", "onboard_team", "run_scenario", "team_model"]


def team_model(scenario, mass_scale: float = 1.0) -> AerialTeamModel:
    document = scenario.ground_truth_document()
    document["payload"]["mass"] *= mass_scale
    return AerialTeamModel.from_document(document)


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
