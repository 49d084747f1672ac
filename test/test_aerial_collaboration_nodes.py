"""The aerial loop through the nodes over DDS (issue 14): sim_node flies paper 002's team with a
person pulling the payload (``human.person``), aerial_coordinator_node estimates the person's
wrench from the cable UKFs, planner_node's admittance (the ground teams' one) turns it into the
payload reference that sim_node's payload controller tracks (``config/sim_aerial_collaborate
.yaml`` wires the same graph)."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from inertia_estimation_ros.ros.conversions import pose_matrix
from inertia_estimation_ros.ros.interface import RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.nodes.aerial_coordinator_node import AerialCoordinatorNode
from inertia_estimation_ros.ros.nodes.planner_node import PlannerNode
from inertia_estimation_ros.ros.nodes.sim_node import SimNode
from inertia_estimation_ros.ros.spin import spin_until

HANDLE_L = [0.3083, 0.0, 0.01125]
SHIFT = np.array([0.3, 0.15, 0.0])
# The aerial admittance of sim/aerial/collaboration.py (ADMITTANCE) as planner parameters.
PLANNER = {
    "admittance_wrench_topic": "/human_wrench_estimate",
    "admittance_pose_topic": "/payload/mocap/pose",
    "admittance_mass_fraction": 1.0,
    "admittance_time_constant": 1.0,
    "admittance_force_dead_band": 0.05,
    "admittance_moment_dead_band": 0.02,
    "admittance_cutoff_hz": 5.0,
    "admittance_input_timeout": 0.75,
    "admittance_rate": 25.0,
    "use_sim_time": True,
}
REMAPS = ["--ros-args"] + [
    arg
    for name in ("pose", "twist")
    for arg in ("-r", f"/planner_node/reference/{name}:=/payload/reference/{name}")
]


@pytest.mark.timeout(600)
def test_the_planners_admittance_steers_the_aerial_team_after_the_person(ros_context, tmp_path):
    """The person's target moves (0.3, 0.15, 0) m in 2.5 s from t = 1.5 s and holds to 5 s;
    the coordinator (``identification: off``) gives the planner the team description's
    payload as the model, and the admittance is enabled from 1 s (the cable UKFs converge). The
    payload ends within 5 cm of where the path puts it and the planner's reference went at
    least 30 % of the way: the admittance moved it too, not only the person's pull against
    the payload controller. In this one process (4 nodes, one executor, 0.25 of real time)
    the planner runs at 25 Hz: a reference step is at most one control period, so at 100 Hz
    the starved executor's sparse ticks slowed the reference (28-93 % of the way measured;
    at 25 Hz 103-152 %, the wrench's lag overshooting it). The input timeout is 0.75 s: on
    this saturated executor a queue's backlog stays once formed (one message per queue and
    turn), so the planner's payload pose (50-deep sensor queue) runs up to 0.5 s behind
    /clock (measured 0.48-0.49 s at load 17), the coordinator's wrench (5-deep input queues)
    up to 0.1 s (0.53 s with 50-deep ones)."""
    scenario = tmp_path / "aerial_person.yaml"
    person = {"shift": SHIFT.tolist(), "yaw_deg": 0.0, "path_time": 2.5, "start": 1.5}
    document = {
        "type": "aerial_cable_team",
        "name": "aerial_person",
        "duration": 5.0,
        "human": {"grasp": HANDLE_L, "person": person},
    }
    scenario.write_text(yaml.safe_dump(document))
    sim = SimNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("scenario", value=str(scenario)),
            Parameter("real_time_factor", value=0.25),
            Parameter("wait_for_subscribers", value=True),
        ],
        use_global_arguments=False,
    )
    coordinator = AerialCoordinatorNode(
        context=ros_context,
        parameter_overrides=[
            Parameter("robots", value=["robot_1", "robot_2", "robot_3"]),
            Parameter("team_description", value="aerial_team_paper002.yaml"),
            Parameter("identification", value="off"),
        ],
        use_global_arguments=False,
    )
    planner = PlannerNode(
        context=ros_context,
        parameter_overrides=[Parameter(k, value=v) for k, v in PLANNER.items()],
        cli_args=REMAPS,
        use_global_arguments=False,
    )
    team = Node("team", context=ros_context)
    truth: list[PoseStamped] = []
    references: list[PoseStamped] = []
    team.create_subscription(PoseStamped, "/ground_truth/payload_pose", truth.append, SENSOR_QOS)
    team.create_subscription(
        PoseStamped, "/payload/reference/pose", references.append, RELIABLE_QOS
    )
    executor = SingleThreadedExecutor(context=ros_context)
    nodes = [sim, coordinator, planner, team]
    for node in nodes:
        executor.add_node(node)
    mode = planner.admittance
    answers: list[str] = ["not tried: /clock below 1 s"]

    def enabled() -> bool:
        if planner.get_clock().now().nanoseconds < 1e9:  # the cable UKFs converge first
            return False
        with mode._lock:
            if mode.supervisor.active:
                return True
            ok, message = mode.modes.admittance()
        answers.append(message)
        return ok

    try:
        assert spin_until(executor, enabled, timeout=300), answers[-3:]
        assert spin_until(executor, lambda: sim.stepper.done, timeout=300)
        spin_until(executor, lambda: False, timeout=0.5)
    finally:
        executor.shutdown()
        for node in nodes:
            node.destroy_node()
    start, end = (pose_matrix(truth[k].pose)[:3, 3] for k in (0, -1))
    expected = np.array([0.0, 0.0, 1.0]) + SHIFT
    moved = pose_matrix(references[-1].pose)[:3, 3] - pose_matrix(references[0].pose)[:3, 3]
    print(
        f"admittance on ({answers[-1]}); payload {np.round(start, 3)} -> {np.round(end, 3)} "
        f"(path end {expected}); reference moved {np.round(moved, 3)}"
    )
    assert np.linalg.norm(end - expected) < 0.05
    assert moved @ SHIFT / (SHIFT @ SHIFT) > 0.3
