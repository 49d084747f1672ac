"""ros.bag_grasps: GraspState decoded in bulk from a bag's bytes gives the samples rclpy's
deserialization and ``grasp_sample`` give, bit for bit; messages the arrays cannot decode
(covariances, missing pose, another robot's id) come back as messages."""

from __future__ import annotations

import dataclasses

import numpy as np

from inertia_estimation_ros.bags import BagWriter
from inertia_estimation_ros.msg import GraspState
from inertia_estimation_ros.ros.bag_grasps import read_grasp_entries
from inertia_estimation_ros.ros.conversions import grasp_sample, to_grasp_state
from inertia_estimation_ros.sim import analytic as an

TYPE = "inertia_estimation_ros/msg/GraspState"


def messages() -> dict[str, list[GraspState]]:
    """Two robots' GraspState, with odd ones: no gravity, no torque, covariances, no pose,
    a foreign robot id."""
    rng = np.random.default_rng(0)
    team = an.paper_team()
    t = np.arange(0.0, 0.3, 0.01)
    sim = an.simulate(team, an.paper_payload(), an.paper_kinematics_motion(rng), t, rng=rng)
    out = {}
    for rid in ("robot_1", "robot_2"):
        out[rid] = [
            to_grasp_state(sim.measured[rid].sample(k), f"{rid}/grasp", f"{rid}/home")
            for k in range(len(t))
        ]
    odd = out["robot_2"]
    odd[3].has_gravity = False
    odd[4].has_torque = False
    odd[5].twist_covariance = list(np.eye(6).ravel())
    odd[6].has_pose = False
    odd[7].robot_id = "robot_9"
    odd[8].header.frame_id = "world"
    return out


def same(a, b) -> None:
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=field.name)
        else:
            assert x == y, field.name


def test_bulk_decoding_gives_rclpys_samples_bit_for_bit(tmp_path):
    sent = messages()
    with BagWriter(tmp_path / "bag") as writer:
        for k in range(len(sent["robot_1"])):
            for rid, msgs in sent.items():
                writer.write(f"/{rid}/grasp_state", TYPE, 10**9 + 10**7 * k + 1, msgs[k])
    entries = read_grasp_entries(tmp_path / "bag", [f"/{r}/grasp_state" for r in sent])
    assert [e.timestamp for e in entries] == sorted(e.timestamp for e in entries)
    mine = [e for e in entries if e.robot_id == "robot_2"]
    assert len(mine) == len(sent["robot_2"])
    as_messages = {k for k, e in enumerate(mine) if e.message is not None}
    assert as_messages == {5, 6, 7}  # covariances, no pose, robot_9 on robot_2's topic
    for k, (entry, msg) in enumerate(zip(mine, sent["robot_2"], strict=True)):
        if entry.message is not None:
            assert entry.message.robot_id == msg.robot_id
            continue
        assert entry.frame_id == msg.header.frame_id and len(entry.samples) == 1
        same(entry.samples[0], grasp_sample(msg))
        assert k != 3 or entry.samples[0].g_i is None
