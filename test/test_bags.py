"""rosbag2 writing and reading with rosbags: round trips, embedded definitions, simulator bags."""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import yaml
from geometry_msgs.msg import Vector3
from rosbags.rosbag2 import Reader
from sensor_msgs.msg import JointState

from inertia_estimation_ros import bags
from inertia_estimation_ros.cli import main
from inertia_estimation_ros.msg import GraspState
from inertia_estimation_ros.sim.scenario import load_scenario, run_scenario
from inertia_estimation_ros.sim.topics import (
    message_count,
    simulation_streams,
    write_simulation_bag,
)

SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"
JOINTS = "sensor_msgs/msg/JointState"


def tiny_scenario() -> dict:
    """Two 6-DoF wrists with every sensor model, 1.4 s of scripted motion at 200 Hz."""
    data = yaml.safe_load((SCENARIOS / "test_two_wrists.yaml").read_text())
    data["excitation"] = [
        {
            "program": "scripted",
            "settle": 0.2,
            "waypoints": [{"t": 0.0}, {"t": 0.6, "rotvec_deg": [3.0, 2.0, -4.0]}, {"t": 1.2}],
        }
    ]
    return data


@pytest.fixture(scope="module")
def run():
    return run_scenario(tiny_scenario())


def mixed_messages() -> list[tuple[str, str, int, object]]:
    """rosbags objects, rclpy objects and raw CDR, on three topics, in time order."""
    store = bags.typestore()
    Point = store.types["geometry_msgs/msg/Point"]
    items = []
    for k in range(5):
        t = 1_000_000_000 + 10_000_000 * k
        point = Point(x=float(k), y=-1.5 * k, z=0.25)
        state = GraspState(robot_id=f"robot_{k}", has_force=bool(k % 2))
        state.wrench.force.x = 0.1 * k
        joints = JointState(name=["a", "b"], position=[0.1 * k, 0.2], effort=[1.0, -2.0])
        items += [
            ("/point", "geometry_msgs/msg/Point", t, point),
            ("/grasp_state", "inertia_estimation_ros/msg/GraspState", t + 1, state),
            ("/joints", "sensor_msgs/msg/JointState", t + 2, bags.serialize(joints, JOINTS)),
        ]
    return items


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_round_trip_of_any_known_topics(tmp_path, storage):
    items = mixed_messages()
    bags.write_bag(tmp_path / "bag", [iter(items)], storage)
    assert bags.bag_topics(tmp_path / "bag") == {topic: kind for topic, kind, _, _ in items[:3]}
    raw = list(bags.read_bag(tmp_path / "bag", deserialize="raw"))
    assert [(m.topic, m.msgtype, m.timestamp) for m in raw] == [i[:3] for i in items]
    for message, (_, kind, _, original) in zip(raw, items, strict=True):
        assert message.message == bags.serialize(original, kind)
    rclpy_messages = [m.message for m in bags.read_bag(tmp_path / "bag", deserialize="rclpy")]
    assert rclpy_messages[1].robot_id == "robot_0" and rclpy_messages[4].has_force
    assert rclpy_messages[2] == JointState(name=["a", "b"], position=[0.0, 0.2], effort=[1.0, -2.0])
    points = list(bags.read_bag(tmp_path / "bag", topics=["/point"]))
    assert [p.message.y for p in points] == [-1.5 * k for k in range(5)]


def test_definitions_and_type_hashes_are_embedded(tmp_path):
    bags.write_bag(tmp_path / "bag", [iter(mixed_messages())])
    share = Path(sys.prefix) / "share" / "inertia_estimation_ros" / "msg" / "GraspState.json"
    rosidl_hash = json.loads(share.read_text())["type_hashes"][0]["hash_string"]
    with Reader(tmp_path / "bag") as reader:
        connections = {c.topic: c for c in reader.connections}
    grasp = connections["/grasp_state"]
    assert grasp.digest == rosidl_hash  # what `ros2 bag play` checks against the installed type
    assert "geometry_msgs/Wrench wrench" in grasp.msgdef.data
    assert "MSG: geometry_msgs/Wrench" in grasp.msgdef.data  # dependencies travel with it
    assert connections["/joints"].digest.startswith("RIHS01_")


def test_bad_writes_and_reads_say_what_is_wrong(tmp_path):
    with pytest.raises(bags.BagError, match="not one of"):
        bags.BagWriter(tmp_path / "bag", storage="rosbag1")
    with bags.BagWriter(tmp_path / "bag") as writer:
        writer.write("/v", "geometry_msgs/msg/Vector3", 1, Vector3(x=1.0))
        with pytest.raises(bags.BagError, match="carries geometry_msgs/msg/Vector3"):
            writer.write("/v", "geometry_msgs/msg/Point", 2, Vector3())
        with pytest.raises(bags.BagError, match="cannot be written as"):
            writer.write("/w", "geometry_msgs/msg/Point", 3, Vector3())
        with pytest.raises(bags.BagError, match="unknown message type"):
            writer.write("/u", "nobody_msgs/msg/Nothing", 4, b"")
    with pytest.raises(bags.BagError, match="exists"):
        bags.BagWriter(tmp_path / "bag")
    with pytest.raises(bags.BagError, match="no topics"):
        list(bags.read_bag(tmp_path / "bag", topics=["/missing"]))
    with pytest.raises(bags.BagError, match="not one of"):
        list(bags.read_bag(tmp_path / "bag", deserialize="json"))


def test_a_simulator_bag_reads_back_identical(tmp_path, run):
    """Every message of a run, serialized in memory, equals what rosbags reads from the bag."""
    write_simulation_bag(run, tmp_path / "bag")
    expected = defaultdict(list)
    for stream in simulation_streams(run):
        for topic, kind, stamp, msg in stream:
            expected[topic].append((stamp, kind, bags.serialize(msg, kind)))
    got = defaultdict(list)
    last = 0
    for m in bags.read_bag(tmp_path / "bag", deserialize="raw"):
        got[m.topic].append((m.timestamp, m.msgtype, m.message))
        assert m.timestamp >= last
        last = m.timestamp
    assert got == expected
    assert sum(len(v) for v in got.values()) == message_count(run)


def test_simulator_topics_carry_the_recorded_streams(tmp_path, run):
    write_simulation_bag(run, tmp_path / "bag", storage="sqlite3")
    record = run.robots["robot_2"]
    topics = [
        "/robot_2/joint_states",
        "/robot_2/ft_sensor",
        "/robot_2/imu",
        "/ground_truth/payload",
    ]
    by_topic = defaultdict(list)
    for m in bags.read_bag(tmp_path / "bag", topics=topics):
        by_topic[m.topic].append(m.message)
    joints = by_topic["/robot_2/joint_states"]
    np.testing.assert_array_equal([j.position for j in joints], record.joints.position)
    np.testing.assert_array_equal([j.effort for j in joints], record.joints.effort)
    stamps = [j.header.stamp.sec + 1e-9 * j.header.stamp.nanosec for j in joints]
    np.testing.assert_allclose(stamps, record.stamp, atol=1e-9)
    ft = by_topic["/robot_2/ft_sensor"]
    force = [[w.wrench.force.x, w.wrench.force.y, w.wrench.force.z] for w in ft]
    np.testing.assert_array_equal(force, record.wrench.wrench[:, 3:])
    assert {w.header.frame_id for w in ft} == {"robot_2/grasp"}
    gyro = [
        [i.angular_velocity.x, i.angular_velocity.y, i.angular_velocity.z]
        for i in by_topic["/robot_2/imu"]
    ]
    np.testing.assert_array_equal(gyro, record.imu.angular_velocity)
    (truth,) = by_topic["/ground_truth/payload"]
    assert truth.inertia.m == pytest.approx(run.ground_truth.payload.mass, rel=1e-15)
    np.testing.assert_array_equal(truth.parameters, run.ground_truth.payload.vec)
    assert [g.robot_id for g in truth.grasps] == ["robot_1", "robot_2"]


def test_simulate_command_writes_bag_ground_truth_and_urdfs(tmp_path, capsys):
    scenario_file = tmp_path / "tiny.yaml"
    scenario_file.write_text(yaml.safe_dump(tiny_scenario()))
    out = tmp_path / "out"
    assert main(["simulate", str(scenario_file), "--out", str(out), "--seed", "5"]) == 0
    assert "real-time factor" in capsys.readouterr().out
    assert "/ground_truth/payload" in bags.bag_topics(out / "bag")
    truth = yaml.safe_load((out / "ground_truth.yaml").read_text())
    assert truth["seed"] == 5 and truth["clock_offsets"]["robot_2"] == 0.0123
    again = load_scenario(out / "scenario.yaml")
    assert again.seed == 5 and again.name == "test_two_wrists"
    assert (out / "urdf" / "robot_1.urdf").read_text().startswith("<robot")
    assert main(["simulate", str(scenario_file), "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().out


def test_simulate_command_without_ground_truth_and_with_bad_input(tmp_path, capsys):
    scenario_file = tmp_path / "tiny.yaml"
    scenario_file.write_text(yaml.safe_dump(tiny_scenario()))
    out = tmp_path / "blind"
    assert main(["simulate", str(scenario_file), "--out", str(out), "--no-ground-truth"]) == 0
    assert not any(t.startswith("/ground_truth") for t in bags.bag_topics(out / "bag"))
    broken = tmp_path / "broken.yaml"
    broken.write_text("type: ground_team\nname: x\n")
    assert main(["simulate", str(broken)]) == 2
    assert "payload: missing" in capsys.readouterr().out
