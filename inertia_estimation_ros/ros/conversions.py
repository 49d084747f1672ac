"""geometry_msgs <-> core arrays: the only place where ROS's linear-first order meets the core.

ROS messages list linear parts first (Twist.linear, Wrench.force, covariance rows
x, y, z, rx, ry, rz); the core (``core.spatial``) is angular first. Every message
field crosses that boundary through a function here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import (
    Accel,
    Inertia,
    Point,
    Pose,
    Quaternion,
    Transform,
    Twist,
    Vector3,
    Wrench,
)

from ..core.inertial import InertialParameters
from ..core.samples import GraspBatch, GraspSample
from ..core.spatial import quaternion, transform
from ..msg import ExternalWrench, GraspFrame, GraspState, GraspStateArray, PayloadEstimate

if TYPE_CHECKING:  # annotations only: the collaboration's module is not on the estimate's path
    from ..core.collaboration.human_wrench import ExternalWrenchEstimate
    from ..core.cooperative.estimate import TeamEstimate

# Permutation between linear-first (ROS) and angular-first (core) 6-vectors; its own inverse.
SWAP_AXES = np.array([3, 4, 5, 0, 1, 2])  # core (angular first) <-> ROS (linear first)


def vector3(v: Vector3 | Point) -> np.ndarray:
    return np.array([v.x, v.y, v.z])


def to_vector3(x: np.ndarray) -> Vector3:
    return Vector3(x=float(x[0]), y=float(x[1]), z=float(x[2]))


def rotation(q: Quaternion) -> np.ndarray:
    """R from a geometry_msgs quaternion (x, y, z, w); normalizes it. ValueError if it is
    zero; NaN stays NaN (the pipeline refuses non-finite values)."""
    norm = np.sqrt(q.x**2 + q.y**2 + q.z**2 + q.w**2)
    if norm == 0.0:
        raise ValueError("the orientation quaternion is zero")
    x, y, z, w = np.array([q.x, q.y, q.z, q.w]) / norm
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def to_quaternion(R: np.ndarray) -> Quaternion:
    x, y, z, w = quaternion(R)
    return Quaternion(x=x, y=y, z=z, w=w)


def pose_matrix(pose: Pose) -> np.ndarray:
    """T (4x4) of a geometry_msgs/Pose."""
    return transform(rotation(pose.orientation), vector3(pose.position))


def to_pose(T: np.ndarray) -> Pose:
    p = T[:3, 3]
    return Pose(
        position=Point(x=float(p[0]), y=float(p[1]), z=float(p[2])),
        orientation=to_quaternion(T[:3, :3]),
    )


def transform_matrix(tf: Transform) -> np.ndarray:
    """T (4x4) of a geometry_msgs/Transform."""
    return transform(rotation(tf.rotation), vector3(tf.translation))


def to_transform(T: np.ndarray) -> Transform:
    return Transform(translation=to_vector3(T[:3, 3]), rotation=to_quaternion(T[:3, :3]))


def twist_vector(twist: Twist | Accel) -> np.ndarray:
    """Core twist (omega, v) of a Twist, or (alpha, a) of an Accel."""
    return np.concatenate([vector3(twist.angular), vector3(twist.linear)])


def to_twist(V: np.ndarray) -> Twist:
    return Twist(linear=to_vector3(V[3:]), angular=to_vector3(V[:3]))


def to_accel(dV: np.ndarray) -> Accel:
    return Accel(linear=to_vector3(dV[3:]), angular=to_vector3(dV[:3]))


def wrench_vector(wrench: Wrench) -> np.ndarray:
    """Core wrench (m, f) of a geometry_msgs/Wrench."""
    return np.concatenate([vector3(wrench.torque), vector3(wrench.force)])


def to_wrench(F: np.ndarray) -> Wrench:
    return Wrench(force=to_vector3(F[3:]), torque=to_vector3(F[:3]))


def covariance_matrix(flat: np.ndarray) -> np.ndarray | None:
    """Core (angular-first) 6x6 covariance of a ROS covariance (36 values, linear first); None
    if it is empty or all zeros (unknown). ValueError for any other length."""
    C = np.asarray(flat, dtype=float)
    if C.size not in (0, 36):
        raise ValueError(f"a covariance has 36 values (or none: unknown), got {C.size}")
    if not C.any():
        return None
    return C.reshape(6, 6)[np.ix_(SWAP_AXES, SWAP_AXES)]


def to_covariance(C: np.ndarray | None) -> np.ndarray:
    """ROS float64[36] (linear first) of a core 6x6 covariance; zeros for None."""
    if C is None:
        return np.zeros(36)
    return np.asarray(C, dtype=float)[np.ix_(SWAP_AXES, SWAP_AXES)].reshape(36)


def seconds(stamp: Time) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def sec_nanosec(t: float) -> tuple[int, int]:
    """builtin_interfaces/Time's (sec, nanosec) of t seconds (t >= 0), rounded to the
    nanosecond."""
    return divmod(int(round(t * 1e9)), 1_000_000_000)


def to_time(t: float) -> Time:
    """builtin_interfaces/Time of t seconds (t >= 0), rounded to the nanosecond."""
    sec, nanosec = sec_nanosec(t)
    return Time(sec=sec, nanosec=nanosec)


def inertial_parameters(msg: Inertia) -> InertialParameters:
    """geometry_msgs/Inertia (m, com, inertia about the CoM) as the project's parameters."""
    I_c = np.array(
        [[msg.ixx, msg.ixy, msg.ixz], [msg.ixy, msg.iyy, msg.iyz], [msg.ixz, msg.iyz, msg.izz]]
    )
    return InertialParameters.from_mass_com_inertia(msg.m, vector3(msg.com), I_c)


def to_inertia(params: InertialParameters) -> Inertia:
    """geometry_msgs/Inertia: mass, CoM, and the inertia about the CoM (same axes)."""
    I_c = params.inertia_about_com
    c = params.com
    return Inertia(
        m=params.mass,
        com=Vector3(x=float(c[0]), y=float(c[1]), z=float(c[2])),
        ixx=float(I_c[0, 0]),
        ixy=float(I_c[0, 1]),
        ixz=float(I_c[0, 2]),
        iyy=float(I_c[1, 1]),
        iyz=float(I_c[1, 2]),
        izz=float(I_c[2, 2]),
    )


def grasp_sample(msg: GraspState) -> GraspSample:
    """GraspState -> GraspSample. Fields flagged invalid become NaN (or None for gravity)."""
    nan6 = np.full(6, np.nan)
    F = wrench_vector(msg.wrench)
    if not msg.has_torque:
        F[:3] = np.nan
    if not msg.has_force:
        F[3:] = np.nan
    return GraspSample(
        robot_id=msg.robot_id,
        stamp=seconds(msg.header.stamp),
        T_i0_i=pose_matrix(msg.pose) if msg.has_pose else np.full((4, 4), np.nan),
        V_i=twist_vector(msg.twist) if msg.has_twist else nan6,
        dV_i=twist_vector(msg.twist_derivative) if msg.has_twist_derivative else nan6,
        F_i=F,
        g_i=vector3(msg.gravity) if msg.has_gravity else None,
        has_force=msg.has_force,
        has_torque=msg.has_torque,
        V_cov=covariance_matrix(msg.twist_covariance),
        dV_cov=covariance_matrix(msg.twist_derivative_covariance),
        F_cov=covariance_matrix(msg.wrench_covariance),
    )


def to_grasp_state(sample: GraspSample, frame_id: str, home_frame_id: str) -> GraspState:
    """GraspSample -> GraspState; non-finite fields are sent with their has_* flag false."""

    def finite(x: np.ndarray | None) -> bool:
        return x is not None and bool(np.all(np.isfinite(x)))

    msg = GraspState(robot_id=sample.robot_id, home_frame_id=home_frame_id)
    msg.header.frame_id = frame_id
    msg.header.stamp = to_time(sample.stamp)
    msg.has_pose = finite(sample.T_i0_i)
    if msg.has_pose:
        msg.pose = to_pose(sample.T_i0_i)
    msg.has_twist = finite(sample.V_i)
    if msg.has_twist:
        msg.twist = to_twist(sample.V_i)
    msg.has_twist_derivative = finite(sample.dV_i)
    if msg.has_twist_derivative:
        msg.twist_derivative = to_accel(sample.dV_i)
    msg.has_force = sample.has_force and finite(sample.F_i[3:])
    msg.has_torque = sample.has_torque and finite(sample.F_i[:3])
    F = np.where(np.isfinite(sample.F_i), sample.F_i, 0.0)
    msg.wrench = to_wrench(F)
    msg.has_gravity = finite(sample.g_i)
    if msg.has_gravity:
        msg.gravity = to_vector3(sample.g_i)
    msg.twist_covariance = _optional_covariance(sample.V_cov)
    msg.twist_derivative_covariance = _optional_covariance(sample.dV_cov)
    msg.wrench_covariance = _optional_covariance(sample.F_cov)
    return msg


# Flat indices (4 a + b into the 4x4 products q_a q_b) of what each entry of R needs, as in
# ``rotation``: R = 2 (q_a q_b + sign q_c q_d), and 1 - that on the diagonal (entries 0, 4, 8).
_PAIRS = np.array([5, 1, 2, 1, 0, 6, 2, 6, 0, 10, 11, 7, 11, 10, 3, 7, 3, 5])
_SIGN = np.array([1.0, -1.0, 1.0, 1.0, 1.0, -1.0, -1.0, 1.0, 1.0])


def rotations(q: np.ndarray) -> np.ndarray:
    """(K, 3, 3) rotations of (K, 4) quaternions (x, y, z, w), as ``rotation`` one by one (the
    same operations, so the same bits: a + (-b) is a - b exactly, x**2 is x * x); a zero
    quaternion gives NaN (refused downstream). In place where it can: a message's K is small,
    and each array operation costs more than its arithmetic."""
    q = np.asarray(q, dtype=float)
    squares = q * q
    norms = np.sqrt(squares[:, 0] + squares[:, 1] + squares[:, 2] + squares[:, 3])
    with np.errstate(invalid="ignore", divide="ignore"):
        q = q / norms[:, None]
    pairs = (q[:, :, None] * q[:, None, :]).reshape(-1, 16).take(_PAIRS, axis=1)
    R = pairs[:, 9:]
    R *= _SIGN
    R += pairs[:, :9]
    R *= 2
    diagonal = R[:, ::4]
    np.subtract(1, diagonal, out=diagonal)
    return R.reshape(-1, 3, 3)


def _values(values: object, dtype: type) -> np.ndarray:
    """A message's array field as numpy without a copy where it is an ``array.array`` of that
    type (what rclpy gives), else converted."""
    try:
        array = np.frombuffer(values, dtype=dtype)
    except (TypeError, ValueError):
        return np.asarray(values, dtype=dtype)
    return array if array.size == len(values) else np.asarray(values, dtype=dtype)


def _swap_halves(x: np.ndarray) -> np.ndarray:
    """(K, 6) linear-first rows as the core's angular-first ones (and back)."""
    return np.concatenate([x[:, 3:], x[:, :3]], axis=1)


def grasp_samples(msg: GraspStateArray) -> GraspBatch:
    """GraspStateArray -> its K GraspSamples as one ``GraspBatch``, as ``grasp_sample`` gives
    for the same samples sent one by one (bit for bit). ValueError names an array of the
    wrong length."""
    k = len(msg.sec)
    lengths = {
        "nanosec": (msg.nanosec, 1),
        "position": (msg.position, 3),
        "orientation": (msg.orientation, 4),
        "twist": (msg.twist, 6),
        "twist_derivative": (msg.twist_derivative, 6),
        "wrench": (msg.wrench, 6),
        "gravity": (msg.gravity, 3 if msg.has_gravity else 0),
    }
    for name, (values, width) in lengths.items():
        if len(values) != width * k:
            raise ValueError(
                f"GraspStateArray.{name} has {len(values)} values, expected {width} per sample "
                f"x {k} samples (len(sec))"
            )
    stamps = _values(msg.sec, np.int32).astype(np.int64)
    stamps = stamps + 1e-9 * _values(msg.nanosec, np.uint32).astype(np.int64)
    T = np.zeros((k, 4, 4))
    T[:, :3, :3] = rotations(_values(msg.orientation, float).reshape(k, 4))
    T[:, :3, 3] = _values(msg.position, float).reshape(k, 3)
    T[:, 3, 3] = 1.0
    V = _swap_halves(_values(msg.twist, float).reshape(k, 6))
    dV = _swap_halves(_values(msg.twist_derivative, float).reshape(k, 6))
    F = _swap_halves(_values(msg.wrench, float).reshape(k, 6))
    if not msg.has_torque:
        F[:, :3] = np.nan
    if not msg.has_force:
        F[:, 3:] = np.nan
    g = np.full((k, 3), np.nan)
    if msg.has_gravity:
        g = _values(msg.gravity, float).reshape(k, 3).copy()
    return GraspBatch(
        msg.robot_id,
        stamps=stamps,
        T_i0_i=T,
        V_i=V,
        dV_i=dV,
        F_i=F,
        g_i=g,
        has_g=np.full(k, bool(msg.has_gravity)),
        has_force=np.full(k, bool(msg.has_force)),
        has_torque=np.full(k, bool(msg.has_torque)),
    )


def to_grasp_state_array(
    samples: list[GraspSample], frame_id: str, home_frame_id: str
) -> GraspStateArray:
    """Samples of one robot -> GraspStateArray; the first sample's has_force, has_torque and
    gravity (known or not) hold for all. Non-finite values are sent as they are: each such
    sample is refused by the coordinator on its own."""
    first = samples[0]
    msg = GraspStateArray(robot_id=first.robot_id, home_frame_id=home_frame_id)
    msg.header.frame_id = frame_id
    times = [to_time(s.stamp) for s in samples]
    msg.header.stamp = times[0]
    msg.sec = [t.sec for t in times]
    msg.nanosec = [t.nanosec for t in times]
    T = np.stack([s.T_i0_i for s in samples])
    msg.position = T[:, :3, 3].ravel().tolist()
    msg.orientation = _quaternions_or_nan(T).ravel().tolist()
    msg.twist = _swap_halves(np.stack([s.V_i for s in samples])).ravel().tolist()
    msg.twist_derivative = _swap_halves(np.stack([s.dV_i for s in samples])).ravel().tolist()
    F = np.stack([s.F_i for s in samples])
    msg.has_force, msg.has_torque = first.has_force, first.has_torque
    F[:, :3] = F[:, :3] if first.has_torque else 0.0
    F[:, 3:] = F[:, 3:] if first.has_force else 0.0
    msg.wrench = _swap_halves(F).ravel().tolist()
    msg.has_gravity = first.g_i is not None
    if msg.has_gravity:
        msg.gravity = np.stack([s.g_i for s in samples]).ravel().tolist()
    return msg


def _quaternions_or_nan(T: np.ndarray) -> np.ndarray:
    """(K, 4) quaternions of poses, NaN for a pose with a non-finite entry."""
    q = np.full((len(T), 4), np.nan)
    finite = np.isfinite(T).all(axis=(1, 2))
    if finite.any():
        from scipy.spatial.transform import Rotation  # not on the estimate's path

        q[finite] = Rotation.from_matrix(T[finite, :3, :3]).as_quat()
    return q


def _optional_covariance(C: np.ndarray | None) -> list[float]:
    """A GraspState covariance: 36 values, or none when unknown."""
    return [] if C is None else to_covariance(C).tolist()


def to_payload_estimate(estimate: TeamEstimate, frame_of: Callable[[str], str]) -> PayloadEstimate:
    """TeamEstimate -> PayloadEstimate; ``frame_of(robot_id)`` names each grasp frame ({s} is
    the reference robot's). Grasp covariances go from core (dphi, dp) to message (dp, dphi)."""
    msg = PayloadEstimate(
        reference_robot_id=estimate.reference_robot_id,
        stage=int(estimate.stage),
        grasps_valid=estimate.grasps_valid,
        mass_valid=estimate.mass_valid,
        com_valid=estimate.com_valid,
        inertia_valid=estimate.inertia_valid,
        principal_axes=to_quaternion(estimate.R_s_c),
        principal_moments=to_vector3(estimate.principal_moments),
        mass_variance=float(estimate.mass_variance),
        com_covariance=np.asarray(estimate.p_s_c_covariance, dtype=float).reshape(9),
        principal_moments_covariance=np.asarray(
            estimate.principal_moments_covariance, dtype=float
        ).reshape(9),
        parameters=np.asarray(estimate.theta, dtype=float),
        parameter_covariance=np.asarray(estimate.theta_covariance, dtype=float).reshape(100),
        physically_consistent=estimate.physically_consistent,
        consistency_margin=float(estimate.consistency_margin),
        kinematics_condition_number=float(estimate.kinematics_condition_number),
        statics_condition_number=float(estimate.statics_condition_number),
        dynamics_condition_number=float(estimate.dynamics_condition_number),
        advice=list(estimate.advice),
        residual_rms_angular_velocity=float(estimate.residual_rms_angular_velocity),
        residual_rms_force=float(estimate.residual_rms_force),
        residual_rms_moment=float(estimate.residual_rms_moment),
        samples_kinematics=int(estimate.samples_kinematics),
        samples_static=int(estimate.samples_static),
        samples_dynamic=int(estimate.samples_dynamic),
        samples_rejected=int(estimate.samples_rejected),
    )
    msg.header.stamp = to_time(max(estimate.stamp, 0.0))
    msg.header.frame_id = frame_of(estimate.reference_robot_id)
    msg.inertia = _inertia_message(estimate)
    msg.grasps = [
        GraspFrame(
            robot_id=g.robot_id,
            child_frame_id=frame_of(g.robot_id),
            transform=to_transform(g.T_s_i),
            covariance=to_covariance(g.covariance),
        )
        for g in estimate.grasps
    ]
    return msg


def _inertia_message(estimate: TeamEstimate) -> Inertia:
    """geometry_msgs/Inertia of an estimate; all zeros while its mass is unknown."""
    if estimate.mass <= 0:
        return Inertia()
    body = InertialParameters.from_mass_com_inertia(
        estimate.mass, estimate.p_s_c, estimate.inertia_about_com
    )
    return to_inertia(body)


def to_external_wrench(estimate: ExternalWrenchEstimate, frame_id: str) -> ExternalWrench:
    """core ExternalWrenchEstimate (angular first, about the CoM) -> msg/ExternalWrench. The
    values go into the message's own sub-messages (a Wrench given to the constructor is
    built on top of the default one it makes anyway: half the cost, 100 times a second)."""
    msg = ExternalWrench(
        covariance=to_covariance(estimate.covariance),
        observable=[bool(b) for b in np.asarray(estimate.observable)[SWAP_AXES]],
        contact=estimate.contact(),
        method="model",
    )
    msg.center.x, msg.center.y, msg.center.z = (float(x) for x in estimate.p_s_c)
    m, f = estimate.wrench[:3].tolist(), estimate.wrench[3:].tolist()
    for wrench in (msg.wrench, msg.dead_banded):  # no dead band: the admittance has its own
        wrench.torque.x, wrench.torque.y, wrench.torque.z = m
        wrench.force.x, wrench.force.y, wrench.force.z = f
    msg.header.stamp = to_time(max(estimate.stamp, 0.0))
    msg.header.frame_id = frame_id
    return msg


def external_wrench_values(
    msg: ExternalWrench,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(wrench (m, f) about the center, 6x6 covariance, center, observable), core order, of
    a msg/ExternalWrench; the covariance is zeros when the message has none."""
    C = covariance_matrix(msg.covariance)
    observable = np.asarray(msg.observable, dtype=bool)[SWAP_AXES]
    return (
        wrench_vector(msg.wrench),
        np.zeros((6, 6)) if C is None else C,
        vector3(msg.center),
        observable,
    )
