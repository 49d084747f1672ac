"""sim_node and its engine: the scenario stepper gives the batch run's samples in any chunks;
the node publishes them over DDS, faster than real time on /clock; bags carry the latched
robot descriptions, so a recorded bag replays through the robot-side pipeline."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile

from inertia_estimation_ros import bags
from inertia_estimation_ros.core.grasp_signals import GraspSignals, GraspSignalSettings
from inertia_estimation_ros.ros.conversions import seconds, vector3, wrench_vector
from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
from inertia_estimation_ros.ros.nodes.sim_node import SimNode
from inertia_estimation_ros.ros.parameters import ParameterError
from inertia_estimation_ros.ros.spin import spin_until
from inertia_estimation_ros.sim.scenario import load_scenario, read_scenario_yaml, run_scenario
from inertia_estimation_ros.sim.topics import latched_topics, topic_types, write_simulation_bag

SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"


def short_wrists() -> dict:
    """Two 6-DoF wrists with every sensor error (noise, bias, jitter, drift, 2 % drop-outs)."""
    data = read_scenario_yaml(SCENARIOS / "test_two_wrists.yaml")
    data["excitation"] = data["excitation"][:2]
    return data


def concatenated(chunks: list, field) -> np.ndarray:
    return np.concatenate([field(chunk) for chunk in chunks])


def no_message_for(seconds: float, received: dict[str, list]) -> Callable[[], bool]:
    """A condition that holds once no new message has arrived in received for seconds."""
    last = {"count": -1, "at": time.monotonic()}

    def quiet() -> bool:
        count = sum(map(len, received.values()))
        if count != last["count"]:
            last.update(count=count, at=time.monotonic())
        return time.monotonic() - last["at"] >= seconds

    return quiet


def test_a_run_advanced_in_chunks_gives_the_batch_run_bit_for_bit():
    """The simulation node steps the scenario as the wall clock goes: any chunking gives the
    very samples of ``run_scenario`` (noise drawn per kind of draw, so chunk sizes do not
    matter; measured grasp samples held back one sample for their central differences)."""
    scenario = load_scenario(short_wrists())
    batch = scenario.run()
    stepper = scenario.stepper()
    rng = np.random.default_rng(0)
    until, chunks = stepper.start_time, []
    while not stepper.done:
        until += rng.choice([0.0, 0.001, 0.004, 0.013, 0.2])
        chunks.append(stepper.advance(until))
    assert len(chunks) > 100 and stepper.time == pytest.approx(batch.phases[-1].end)
    assert [p.name for p in chunks[-1].phases] == [p.name for p in batch.phases]
    for rid, record in batch.robots.items():
        fields = {
            "stamp": lambda r: r.stamp,
            "time": lambda r: r.time,
            "position": lambda r: r.joints.position,
            "velocity": lambda r: r.joints.velocity,
            "effort": lambda r: r.joints.effort,
            "ft": lambda r: r.wrench.wrench,
            "gyro": lambda r: r.imu.angular_velocity,
            "grasp t": lambda r: r.grasp.t,
            "grasp T": lambda r: r.grasp.T_i0_i,
            "grasp dV": lambda r: r.grasp.dV_i,
            "grasp F": lambda r: r.grasp.F_i,
            "grasp time": lambda r: r.grasp.meta["time"],
        }
        for name, field in fields.items():
            got = concatenated(chunks, lambda c, field=field, rid=rid: field(c.robots[rid]))
            np.testing.assert_array_equal(got, field(record), err_msg=name)
        truth = concatenated(chunks, lambda c, rid=rid: c.ground_truth.grasps[rid].dV_i)
        np.testing.assert_array_equal(truth, batch.ground_truth.grasps[rid].dV_i)
    np.testing.assert_array_equal(
        concatenated(chunks, lambda c: c.ground_truth.T_w_s), batch.ground_truth.T_w_s
    )


def test_a_bag_replays_through_the_robot_pipeline(tmp_path):
    """The bag holds each robot's URDF on a latched robot_description topic: its raw topics
    alone give the robot-side pipeline what it needs, and the result is the run's own."""
    result = run_scenario(SCENARIOS / "test_graph.yaml")
    write_simulation_bag(result, tmp_path / "bag")
    assert bags.latched_topics(tmp_path / "bag") == set(latched_topics(result))
    rid = "robot_3"
    topics = [f"/{rid}/{name}" for name in ("robot_description", "joint_states", "ft_sensor")]
    settings = GraspSignalSettings(
        rid, f"{rid}/grasp", f"{rid}/home", cutoff_hz=0.0, has_torque=False
    )
    signals, out = GraspSignals(settings), []
    for m in bags.read_bag(tmp_path / "bag", topics, deserialize="rclpy"):
        msg = m.message
        if m.topic.endswith("robot_description"):
            assert msg.data == result.robots[rid].urdf
            signals.set_urdf(msg.data)
        elif m.topic.endswith("joint_states"):
            stamp = seconds(msg.header.stamp)
            out += signals.add_joint_state(
                stamp,
                list(msg.name),
                np.array(msg.position),
                np.array(msg.velocity),
                np.array(msg.effort),
            )
        else:
            out += signals.add_wrench(
                seconds(msg.header.stamp), msg.header.frame_id, wrench_vector(msg.wrench)
            )
    truth = result.ground_truth.grasps[rid]
    assert len(out) == len(truth.t) - 2 and not signals.rejected
    np.testing.assert_allclose([s.V_i for s in out], truth.V_i[1:-1], atol=1e-9)
    np.testing.assert_allclose([s.F_i[3:] for s in out], truth.F_i[1:-1, 3:], atol=1e-9)


@pytest.mark.timeout(120)
def test_sim_node_publishes_every_topic_faster_than_real_time(ros_context):
    """The sim_node executable at 4x real time: a subscriber gets every topic of sim/topics.py
    at the robots' 100 Hz (sample stamps), the latched URDFs and true payload, and joint states
    equal to the batch run's."""
    scenario = SCENARIOS / "test_graph.yaml"
    batch = run_scenario(scenario)
    types = topic_types(batch)
    samples = len(batch.ground_truth.time)
    # The publisher's best effort, in a queue that holds the whole run: the Python listener takes
    # 14 streams at 400 Hz each and, on a loaded machine, falls behind the sender (a fresh-clone
    # CI's listener kept 364 of 390 grasp states in the 50 deep SENSOR_QOS queue).
    every_sample = QoSProfile(
        depth=samples, reliability=SENSOR_QOS.reliability, durability=SENSOR_QOS.durability
    )
    node = Node("listener", context=ros_context)
    received = defaultdict(list)
    for topic, kind in types.items():
        qos = LATCHED_QOS if topic in latched_topics(batch) else every_sample
        qos = RELIABLE_QOS if topic == "/clock" else qos
        node.create_subscription(bags.rclpy_class(kind), topic, received[topic].append, qos)
    executor = SingleThreadedExecutor(context=ros_context)
    executor.add_node(node)
    parameters = {
        "scenario": "test_graph.yaml",
        "real_time_factor": 4.0,
        "publish_grasp_state": True,
        "publish_true_grasps": True,
        "wait_for_subscribers": True,
        "exit_when_done": True,
    }
    command = [sys.executable, "-m", "inertia_estimation_ros.ros.nodes.sim_node", "--ros-args"]
    for name, value in parameters.items():
        command += ["-p", f"{name}:={str(value).lower() if isinstance(value, bool) else value}"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert spin_until(executor, lambda: process.poll() is not None, timeout=90)
        spin_until(executor, no_message_for(0.5, received), timeout=10)  # drain the queues
        output = process.stdout.read()
        assert process.returncode == 0, output
        assert "scenario over: 3.9 s simulated" in output and "Traceback" not in output
    finally:
        if process.poll() is None:
            process.kill()
        executor.shutdown()
        node.destroy_node()
    for topic in types:
        expected = 1 if topic in latched_topics(batch) else samples
        if topic != "/clock":  # clock subscribers need the newest only (rclpy keeps 1)
            assert 0.95 * expected <= len(received[topic]) <= expected, topic
    for rid, record in batch.robots.items():
        joints = received[f"/{rid}/joint_states"]
        stamps = np.array([seconds(m.header.stamp) for m in joints])
        assert np.median(np.diff(stamps)) == pytest.approx(0.01, abs=1e-9)  # 100 Hz
        index = np.abs(np.subtract.outer(stamps, record.stamp)).argmin(axis=1)
        np.testing.assert_array_equal([m.position for m in joints], record.joints.position[index])
        (urdf,) = received[f"/{rid}/robot_description"]
        assert urdf.data == record.urdf
        ft = received[f"/{rid}/ft_sensor"][-1]
        assert ft.header.frame_id == f"{rid}/grasp"
        np.testing.assert_array_equal(vector3(ft.wrench.force), record.wrench.wrench[-1, 3:])
    clock = [seconds(m.clock) for m in received["/clock"]]
    assert np.all(np.diff(clock) > 0)
    assert clock[-1] == pytest.approx(batch.ground_truth.time[-1])
    (truth,) = received["/ground_truth/payload"]
    assert truth.inertia.m == pytest.approx(batch.ground_truth.payload.mass, rel=1e-12)


def test_sim_node_reports_a_scenario_it_cannot_run(ros_context, tmp_path):
    def start(scenario: str) -> None:
        SimNode(
            context=ros_context,
            parameter_overrides=[Parameter("scenario", value=scenario)],
            use_global_arguments=False,
        )

    with pytest.raises(ParameterError, match=r"sim_node.scenario' = 'missing.yaml': no file"):
        start("missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("type: ground_team\nname: broken\n")
    with pytest.raises(ParameterError, match="payload: missing"):
        start(str(broken))
