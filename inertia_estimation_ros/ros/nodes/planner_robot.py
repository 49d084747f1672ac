"""planner_node with the paper's 9-DoF Ridgeback + UR10 (``robot: ridgeback_ur10``).

The plan is joint motion: it goes out as ``trajectory_msgs/JointTrajectory`` (positions,
velocities and accelerations of the 9 joints, the base's in the world frame) on
``~/joint_trajectory``; the markers show the tray path by forward kinematics. Plans start at
the paper's home pose, then where the last certified plan ended.
"""

from __future__ import annotations

import numpy as np
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ...core.planning.planner import PlannerSettings, TrayPlan
from ...core.planning.session import robot_model

JOINT_TOPIC = "~/joint_trajectory"


def first_start(robot: str, start_pose: list[float]) -> np.ndarray:
    """The first plan's start: the tray pose parameter, or the robot's home pose."""
    if robot == "tray":
        return np.asarray(start_pose, dtype=float)
    from ...core.planning.robot import HOME

    return HOME.copy()


def next_start(plan: TrayPlan, goal: np.ndarray) -> np.ndarray:
    """Where the next plan starts: the goal with the final tray angles, or the final joints."""
    if plan.robot == "tray":
        return np.concatenate([goal, plan.X[-1, 3:6]])
    return plan.X[-1, : plan.nq].copy()


def tray_positions(plan: TrayPlan, states: np.ndarray) -> np.ndarray:
    """Tray positions (n, 3) of states (n, 3 nq) of the plan's model."""
    model = robot_model(plan.robot, PlannerSettings())
    return model.positions(states[:, : plan.nq])[0]


def joint_trajectory(plan: TrayPlan, frame_id: str, stamp: object) -> JointTrajectory:
    """The plan's nodes as a JointTrajectory of the robot's joints."""
    model = robot_model(plan.robot, PlannerSettings())
    names = [model.model.names[j] for j in range(1, model.model.njoints)]
    msg = JointTrajectory(joint_names=names)
    msg.header.frame_id, msg.header.stamp = frame_id, stamp
    nq = plan.nq
    for t, x in zip(plan.times, plan.X, strict=True):
        point = JointTrajectoryPoint(
            positions=x[:nq].tolist(),
            velocities=x[nq : 2 * nq].tolist(),
            accelerations=x[2 * nq :].tolist(),
        )
        point.time_from_start.sec = int(t)
        point.time_from_start.nanosec = int(round((t - int(t)) * 1e9))
        msg.points.append(point)
    return msg
