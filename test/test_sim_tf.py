"""The simulation graph's TF over DDS: one tree under ``world`` (REP-105), each robot's links as
robot_state_publisher gives them (fixed joints latched on /tf_static, moving ones on /tf), and
each robot's grasp frame where the simulator put it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from tf2_msgs.msg import TFMessage

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.ros.conversions import seconds, transform_matrix
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS
from inertia_estimation_ros.ros.nodes.sim_node import SimNode
from inertia_estimation_ros.ros.spin import spin_until
from inertia_estimation_ros.sim.scenario import run_scenario

SCENARIO = "test_graph.yaml"
SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"


def arrived(moving: dict, prefix: str, stamp: float) -> bool:
    """Whether a /tf message of a frame under ``prefix`` stamped ``stamp`` or later came."""
    return any(
        seconds(ts[-1].header.stamp) >= stamp
        for child, ts in moving.items()
        if child.startswith(prefix)
    )


@pytest.mark.timeout(120)
def test_the_simulation_publishes_one_tf_tree_under_world(ros_context):
    listener = Node("tf_listener", context=ros_context)
    static, moving = {}, {}

    def keep(into: dict):
        def callback(msg: TFMessage) -> None:
            for t in msg.transforms:
                into.setdefault(t.child_frame_id, []).append(t)

        return callback

    listener.create_subscription(TFMessage, "/tf_static", keep(static), LATCHED_QOS)
    listener.create_subscription(TFMessage, "/tf", keep(moving), RELIABLE_QOS)
    overrides = {"scenario": SCENARIO, "real_time_factor": 0.0, "exit_when_done": True}
    sim = SimNode(
        context=ros_context,
        parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()],
        use_global_arguments=False,
    )
    batch = run_scenario(SCENARIOS / SCENARIO)
    executor = SingleThreadedExecutor(context=ros_context)
    for node in (listener, sim):
        executor.add_node(node)
    try:
        assert spin_until(executor, sim.finished.is_set, timeout=90)
        # the last /tf (reliable) may still be in flight: wait for each robot's last stamp
        ends = {f"{rid}/": r.stamp[-1] - 1e-6 for rid, r in batch.robots.items()}
        spin_until(executor, lambda: all(arrived(moving, k, t) for k, t in ends.items()), 30)
    finally:
        executor.shutdown()
        sim.destroy_node()
        listener.destroy_node()
    parents = {child: ts[-1].header.frame_id for child, ts in (static | moving).items()}
    assert not set(static) & set(moving)
    for child, transforms in (static | moving).items():
        assert {t.header.frame_id for t in transforms} == {parents[child]}, child
    robots = batch.robots
    for rid, record in robots.items():
        chain, frame = [], record.grasp_frame_id
        while frame in parents:
            chain.append(frame)
            frame = parents[frame]
        assert frame == "world" and chain[-1] == record.home_frame_id, rid
        # world -> grasp at the last joint state is where the simulator had the grasp frame
        T_w_i = np.eye(4)
        for link in reversed(chain):
            T_w_i = T_w_i @ transform_matrix((static.get(link) or moving[link])[-1].transform)
        last = moving[chain[0]][-1] if chain[0] in moving else moving[chain[1]][-1]
        assert seconds(last.header.stamp) == pytest.approx(record.stamp[-1])
        truth = batch.ground_truth
        T_w_i_true = truth.T_w_s[-1] @ truth.T_s_i[rid]
        np.testing.assert_allclose(T_w_i[:3, 3], T_w_i_true[:3, 3], atol=2e-3)
        assert sp.rotation_angle(T_w_i[:3, :3].T @ T_w_i_true[:3, :3]) < 2e-3
