"""A simulation run as ROS 2 topics, and its rosbag2: the simulator's only ROS-facing module.

Topics, per robot ``<id>`` (what a hardware driver or ``ros_gz_bridge`` publishes, stamped
on the robot's own clock):

* ``/<id>/joint_states`` (``sensor_msgs/JointState``): measured joint positions [m, rad],
  velocities and efforts (actuator force or torque; 0 for passive joints);
* ``/<id>/ft_sensor`` (``geometry_msgs/WrenchStamped``, robots with an F/T sensor): in the
  sensor frame ``<id>/grasp``, the wrench the payload exerts ON the robot (Gazebo's
  ``child_to_parent``), i.e. minus the wrench F_i the robot applies on the payload;
* ``/<id>/imu`` (``sensor_msgs/Imu``, if enabled): angular velocity and specific force in
  ``<id>/grasp``; no orientation (``orientation_covariance[0] = -1``);
* ``/<id>/grasp_state`` (``GraspState``): the ready-made grasp sample of ``RobotRecord.grasp``;
* ``/<id>/robot_description`` (``std_msgs/String``, latched): the robot's URDF, once, as
  ``robot_state_publisher`` publishes it, so that a bag replays through the robot nodes;

and ``/clock`` (simulation time, at every recording instant). Ground truth, for evaluation
only, on ``/ground_truth/...``: ``payload`` (``PayloadEstimate`` holding the true
parameters and grasp frames in {s}, once), ``payload_pose`` (``PoseStamped`` of {s} in
``world``), ``human_wrench`` (``WrenchStamped`` on the payload, about {s}, in {s}) and
``<id>/grasp_state`` (noise-free ``GraspState`` at the true sample times).

Bag log times are the simulation times at which the samples were taken; the latched topics
(``latched_topics``: the robot descriptions and ``/ground_truth/payload``) come once, at the first
instant, and are recorded as offered transient-local. All geometry_msgs conversions go
through ``ros.conversions``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Header, String

from ..bags import write_bag
from ..core.samples import GraspSeries
from ..msg import GraspFrame, PayloadEstimate
from ..ros.conversions import (
    to_grasp_state,
    to_inertia,
    to_pose,
    to_quaternion,
    to_time,
    to_transform,
    to_vector3,
    to_wrench,
)
from .scenario import RobotRecord, SimulationResult

Stream = Iterator[tuple[str, str, int, Any]]
GRASP_STATE = "inertia_estimation_ros/msg/GraspState"
# Per robot: topic /<id>/<name> and its type.
ROBOT_TOPICS = {
    "joint_states": "sensor_msgs/msg/JointState",
    "ft_sensor": "geometry_msgs/msg/WrenchStamped",
    "imu": "sensor_msgs/msg/Imu",
    "grasp_state": GRASP_STATE,
    "robot_description": "std_msgs/msg/String",
}
CLOCK = ("/clock", "rosgraph_msgs/msg/Clock")
PAYLOAD_TRUTH = "/ground_truth/payload"
GROUND_TRUTH_TOPICS = {
    PAYLOAD_TRUTH: "inertia_estimation_ros/msg/PayloadEstimate",
    "/ground_truth/payload_pose": "geometry_msgs/msg/PoseStamped",
    "/ground_truth/human_wrench": "geometry_msgs/msg/WrenchStamped",
}


def robot_topic(robot_id: str, name: str) -> tuple[str, str]:
    """(topic, type) of a per-robot topic, ``name`` a key of ROBOT_TOPICS."""
    return f"/{robot_id}/{name}", ROBOT_TOPICS[name]


def ground_truth_grasp_topic(robot_id: str) -> str:
    return f"/ground_truth/{robot_id}/grasp_state"


def robot_description_topic(robot_id: str) -> str:
    return robot_topic(robot_id, "robot_description")[0]


def topic_types(result: SimulationResult, ground_truth: bool = True) -> dict[str, str]:
    """Every topic that a run (or any chunk of it) publishes, and its message type."""
    types = dict([CLOCK])
    for rid, record in result.robots.items():
        names = ["grasp_state", "robot_description"]
        names += ["joint_states"] if record.joints is not None else []
        names += ["ft_sensor"] if record.wrench is not None else []
        names += ["imu"] if record.imu is not None else []
        types.update(robot_topic(rid, name) for name in names)
    if ground_truth:
        types.update(GROUND_TRUTH_TOPICS)
        types.update((ground_truth_grasp_topic(rid), GRASP_STATE) for rid in result.robots)
    return types


def latched_topics(result: SimulationResult) -> list[str]:
    """The latched topics of a run (transient-local: published once, kept for late joiners)."""
    return [robot_description_topic(rid) for rid in result.robots] + [PAYLOAD_TRUTH]


def _ns(t: float) -> int:
    return int(round(t * 1e9))


def _header(stamp: float, frame_id: str = "") -> Header:
    return Header(stamp=to_time(stamp), frame_id=frame_id)


def clock_stream(times: np.ndarray) -> Stream:
    for t in times:
        yield *CLOCK, _ns(t), Clock(clock=to_time(t))


def joint_state_stream(record: RobotRecord) -> Stream:
    joints = record.joints
    topic, kind = robot_topic(record.robot_id, "joint_states")
    for k, (t, stamp) in enumerate(zip(record.time, record.stamp, strict=True)):
        msg = JointState(
            header=_header(stamp),
            name=joints.names,
            position=joints.position[k].tolist(),
            velocity=joints.velocity[k].tolist(),
            effort=joints.effort[k].tolist(),
        )
        yield topic, kind, _ns(t), msg


def wrench_stream(record: RobotRecord) -> Stream:
    sensor = record.wrench
    topic, kind = robot_topic(record.robot_id, "ft_sensor")
    for t, stamp, W in zip(record.time, record.stamp, sensor.wrench, strict=True):
        msg = WrenchStamped(header=_header(stamp, sensor.frame_id), wrench=to_wrench(W))
        yield topic, kind, _ns(t), msg


def imu_stream(record: RobotRecord) -> Stream:
    imu = record.imu
    topic, kind = robot_topic(record.robot_id, "imu")
    no_orientation = [-1.0] + [0.0] * 8
    for t, stamp, w, a in zip(
        record.time, record.stamp, imu.angular_velocity, imu.linear_acceleration, strict=True
    ):
        msg = Imu(
            header=_header(stamp, imu.frame_id),
            orientation_covariance=no_orientation,
            angular_velocity=to_vector3(w),
            linear_acceleration=to_vector3(a),
        )
        yield topic, kind, _ns(t), msg


def grasp_state_stream(
    topic: str, series: GraspSeries, times: np.ndarray, frame_id: str, home_frame_id: str
) -> Stream:
    for k, t in enumerate(times):
        msg = to_grasp_state(series.sample(k), frame_id, home_frame_id)
        yield topic, GRASP_STATE, _ns(t), msg


def payload_truth(result: SimulationResult) -> PayloadEstimate:
    """The true payload and grasp frames as a ``PayloadEstimate`` in {s} (all flags valid)."""
    truth = result.ground_truth
    ref = truth.reference_robot
    params = truth.payload
    moments, R_s_c = params.principal_axes()
    msg = PayloadEstimate(
        header=_header(float(truth.time[0]), result.robots[ref].grasp_frame_id),
        reference_robot_id=ref,
        stage=PayloadEstimate.STAGE_DYNAMICS,
        grasps_valid=True,
        mass_valid=True,
        com_valid=True,
        inertia_valid=True,
        inertia=to_inertia(params),
        principal_axes=to_quaternion(R_s_c),
        principal_moments=to_vector3(moments),
        parameters=params.vec.tolist(),
        physically_consistent=params.is_consistent(),
        consistency_margin=params.consistency_margin(),
    )
    msg.grasps = [
        GraspFrame(
            robot_id=rid,
            child_frame_id=result.robots[rid].grasp_frame_id,
            transform=to_transform(T_s_i),
        )
        for rid, T_s_i in truth.T_s_i.items()
    ]
    return msg


def latched_streams(result: SimulationResult, ground_truth: bool = True) -> list[Stream]:
    """The latched topics of a run (every robot's URDF, the true payload), at its first instant."""
    t0 = _ns(float(result.ground_truth.time[0]))
    items = [
        (*robot_topic(rid, "robot_description"), t0, String(data=record.urdf))
        for rid, record in result.robots.items()
    ]
    if ground_truth:
        items.append((PAYLOAD_TRUTH, GROUND_TRUTH_TOPICS[PAYLOAD_TRUTH], t0, payload_truth(result)))
    return [iter([item]) for item in items]


def _everything(topic: str) -> bool:
    return True


def ground_truth_streams(
    result: SimulationResult, include: Callable[[str], bool] = _everything
) -> list[Stream]:
    """The ground-truth sample streams of the topics ``include`` accepts (the true payload
    itself is in ``latched_streams``)."""
    truth = result.ground_truth
    frame_s = result.robots[truth.reference_robot].grasp_frame_id

    def pose() -> Stream:
        for t, T in zip(truth.time, truth.T_w_s, strict=True):
            msg = PoseStamped(header=_header(t, "world"), pose=to_pose(T))
            topic = "/ground_truth/payload_pose"
            yield topic, GROUND_TRUTH_TOPICS[topic], _ns(t), msg

    def human() -> Stream:
        for t, F in zip(truth.time, truth.F_human_s, strict=True):
            msg = WrenchStamped(header=_header(t, frame_s), wrench=to_wrench(F))
            topic = "/ground_truth/human_wrench"
            yield topic, GROUND_TRUTH_TOPICS[topic], _ns(t), msg

    streams = [pose()] if include("/ground_truth/payload_pose") else []
    streams += [human()] if include("/ground_truth/human_wrench") else []
    for rid, series in truth.grasps.items():
        record = result.robots[rid]
        topic = ground_truth_grasp_topic(rid)
        if include(topic):
            frames = (record.grasp_frame_id, record.home_frame_id)
            streams.append(grasp_state_stream(topic, series, series.t, *frames))
    return streams


def robot_streams(
    record: RobotRecord, include: Callable[[str], bool] = _everything
) -> list[Stream]:
    """The raw driver topics and the GraspState of one robot (those ``include`` accepts)."""
    rid, streams = record.robot_id, []
    topic = robot_topic(rid, "grasp_state")[0]
    if include(topic):
        frames = (record.grasp_frame_id, record.home_frame_id)
        streams.append(grasp_state_stream(topic, record.grasp, record.grasp.meta["time"], *frames))
    for name, data, stream in (
        ("joint_states", record.joints, joint_state_stream),
        ("ft_sensor", record.wrench, wrench_stream),
        ("imu", record.imu, imu_stream),
    ):
        if data is not None and include(robot_topic(rid, name)[0]):
            streams.append(stream(record))
    return streams


def sample_streams(
    result: SimulationResult,
    ground_truth: bool = True,
    include: Callable[[str], bool] = _everything,
) -> list[Stream]:
    """Every sampled topic of a run (or of a chunk of one) that ``include`` accepts: /clock,
    each robot's streams and the ground-truth streams, as time-ordered (topic, type, log
    time [ns], message). Streams left out cost nothing."""
    streams = [clock_stream(result.ground_truth.time)] if include(CLOCK[0]) else []
    for record in result.robots.values():
        streams += robot_streams(record, include)
    if ground_truth:
        streams += ground_truth_streams(result, include)
    return streams


def simulation_streams(result: SimulationResult, ground_truth: bool = True) -> list[Stream]:
    """Every topic of a run: the latched ones at its start, then the sampled ones."""
    return latched_streams(result, ground_truth) + sample_streams(result, ground_truth)


def message_count(result: SimulationResult, ground_truth: bool = True) -> int:
    """How many messages ``simulation_streams`` yields (for progress bars)."""
    count = len(result.ground_truth.time) + len(result.robots)  # /clock, robot descriptions
    for record in result.robots.values():
        count += len(record.time) * (2 + (record.wrench is not None) + (record.imu is not None))
    if ground_truth:
        count += 1 + 2 * len(result.ground_truth.time)
        count += sum(len(s.t) for s in result.ground_truth.grasps.values())
    return count


def write_simulation_bag(
    result: SimulationResult,
    path: str | Path,
    storage: str = "mcap",
    ground_truth: bool = True,
    progress: Any = None,
) -> Path:
    """Write a run's topics to a rosbag2; ``progress(n)`` is called per written message."""
    streams = simulation_streams(result, ground_truth)
    if progress is not None:
        streams = [_counted(s, progress) for s in streams]
    return write_bag(path, streams, storage, latched_topics(result))


def _counted(stream: Stream, progress: Any) -> Stream:
    for item in stream:
        progress(1)
        yield item
