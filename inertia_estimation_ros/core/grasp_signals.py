"""One robot's grasp-frame signals, online: everything the robot node computes, ROS-free.

``GraspSignals`` turns one robot's raw streams into ``GraspSample``s (paper 000's data point
D_iq; its Sec. IV-B preprocessing made causal), one message at a time:

* kinematics from joint states (q, dq, and efforts tau for the wrench) and the robot's URDF,
  or from a grasp-pose stream T_i0_i;
* the wrench F_i the robot applies on the payload at {i}: from an F/T sensor, from the joint
  efforts, or none;
* gravity in {i}: ``R_i0_i^T g_i0`` from the home frame's gravity g_i0, from a wrist IMU, or
  none.

Every stream goes through these steps:

1. Validation. A message with non-finite values, an unknown frame id, joints missing from the
   URDF, or a stamp not after the stream's last one is rejected and counted by reason
   (``rejected``); nothing raises. A stamp more than ``clock_jump`` seconds before the last
   one (a bag that loops) or a gap longer than ``max_gap`` restarts every filter
   (``restarts``).
2. One causal Butterworth low-pass for every signal (``signals.CausalLowpass``), so that all
   share one phase lag: a 4th-order filter delays slow motion by about 2.6 / (2 pi f_c)
   (83 ms at 5 Hz). Each stream's rate is the median of its first ``RATE_INTERVALS`` steps.
3. Central differences (``signals.three_point_derivative``), which need the next sample: a
   sample leaves one sample period late, stamped with its own time. Joint states: ddq from
   the filtered dq, then Pinocchio (``RobotKinematics``): T_i0_i, V_i = J_b dq and
   dV_i = J_b ddq + dJ_b dq. Grasp pose: the half-step body twists log(T_k^-1 T_k+1) / h on
   SE(3) (exact for a constant twist), interpolated to t_k, and their difference quotient.
4. Wrench and gravity at the kinematic sample's stamp, interpolated between the filtered F/T
   and IMU samples around it; a sample waits at most ``sync_timeout`` for them (or until a
   stream that just started knows its rate), then goes without (``missing``). An F/T
   reading W in its sensor frame {f} (rigidly attached to {i} in the URDF) is, by default,
   the wrench the payload exerts on the robot (Gazebo's ``child_to_parent``):
   F_i = -Ad(T_f_i)^T W (``ft_measures = "wrench_on_payload"``: +).
   Joint efforts: F_i = (J_b^T)^+ (tau - RNEA(q, dq, ddq)) (``RobotKinematics``). An IMU
   at r = p_i_u reads the specific force f_u = R_u_i (a_u - g_i), with a_u = a_i + alpha x r
   + omega x (omega x r) and a_i = dv + omega x v the grasp origin's acceleration in {i}.
5. Decimation to ``output_rate_hz``: every n-th sample, n = round(input rate / output rate).
   The low-pass and the differencing window see every sample (their state is the history);
   the kinematics of step 3 (Pinocchio, the SE(3) logarithms) are computed only for the
   samples that are kept, when they leave.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from .robot_kinematics import RobotKinematics, RobotModelError
from .samples import GraspSample
from .signals import CausalLowpass, three_point_derivative
from .spatial import inverse, log6, transform, wrench_to

KINEMATICS_SOURCES = ("joint_states", "grasp_pose")
WRENCH_SOURCES = ("ft_sensor", "joint_efforts", "none")
FT_MEASURES = ("wrench_on_robot", "wrench_on_payload")
GRAVITY_SOURCES = ("home_frame", "imu", "none")
RATE_INTERVALS = 5  # a stream's rate is the median of its first steps
HELD_BEFORE_URDF = 2000  # messages kept while the URDF has not arrived (2 s at 1 kHz)


@dataclass(frozen=True)
class GraspSignalSettings:
    """How one robot's grasp signals are made (the robot node's parameters)."""

    robot_id: str
    grasp_frame: str
    home_frame: str
    kinematics_source: str = "joint_states"
    wrench_source: str = "ft_sensor"
    ft_measures: str = "wrench_on_robot"
    has_torque: bool = True  # false: the grasp transmits no moment (a passive gimbal)
    gravity_source: str = "home_frame"
    gravity_i0: tuple[float, float, float] = (0.0, 0.0, -9.81)  # gravity in {i0} [m/s^2]
    cutoff_hz: float = 5.0  # low-pass cutoff; 0: no filter
    filter_order: int = 4
    output_rate_hz: float = 100.0  # 0: every sample
    compensate_robot_dynamics: bool = True
    max_gap: float = 0.1  # [s] a longer gap between samples restarts the filters
    clock_jump: float = 0.5  # [s] a stamp this much before the last one restarts everything
    sync_timeout: float = 0.05  # [s] how long a sample waits for its F/T or IMU data
    # Prepended to URDF link names in frame ids (robot_state_publisher's frame_prefix):
    # messages name {i} ``frame_prefix + grasp_frame``; grasp_frame and home_frame stay links.
    frame_prefix: str = ""

    def frame_id(self, link: str) -> str:
        """The TF frame id of a URDF link."""
        return f"{self.frame_prefix}{link}"

    def __post_init__(self) -> None:
        for name, choices in (
            ("kinematics_source", KINEMATICS_SOURCES),
            ("wrench_source", WRENCH_SOURCES),
            ("ft_measures", FT_MEASURES),
            ("gravity_source", GRAVITY_SOURCES),
        ):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} {getattr(self, name)!r} is not one of {choices}")
        if self.wrench_source == "joint_efforts" and self.kinematics_source != "joint_states":
            raise ValueError(
                "wrench_source joint_efforts needs kinematics_source joint_states (the efforts "
                "map through the URDF's Jacobian): use an F/T sensor or joint states"
            )


class _BadInputError(Exception):
    """A message the pipeline refuses; ``reason`` is the counter key."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


class _RestartError(Exception):
    """A stamp that restarts every stream (clock jump or gap); ``reason`` is the counter key."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class _Stream:
    """One input stream: its last stamp, its rate (median of its first steps) and its causal
    low-pass. Samples wait until the rate is known, then come out filtered, in order."""

    def __init__(self, name: str, settings: GraspSignalSettings):
        self.name, self.settings = name, settings
        self.reset()

    def reset(self) -> None:
        self.last: float | None = None
        self.rate_hz: float | None = None
        self.lowpass: CausalLowpass | None = None
        self.waiting: list[tuple[float, np.ndarray]] = []
        self.note = ""

    def check(self, stamp: float) -> None:
        """Raise _BadInputError for a stale stamp, _RestartError for a clock jump or a gap."""
        if not math.isfinite(stamp):
            raise _BadInputError("non_finite", f"{self.name}: stamp {stamp}")
        if self.last is None:
            return
        if stamp < self.last - self.settings.clock_jump:
            raise _RestartError("clock_jump")
        if stamp == self.last:
            raise _BadInputError("duplicate_stamp", f"{self.name}: stamp {stamp:.9f} seen already")
        if stamp < self.last:
            raise _BadInputError(
                "out_of_order", f"{self.name}: stamp {stamp:.9f} before the last {self.last:.9f}"
            )
        if stamp - self.last > self.settings.max_gap:
            raise _RestartError("gap")

    def push(self, stamp: float, x: np.ndarray) -> list[tuple[float, np.ndarray]]:
        """Accept one checked sample; returns the samples that come out filtered now."""
        self.last = stamp
        if self.rate_hz is None:
            self.waiting.append((stamp, x))
            if len(self.waiting) <= RATE_INTERVALS:
                return []
            self._design(np.median(np.diff([t for t, _ in self.waiting])))
            out, self.waiting = self.waiting, []
        else:
            out = [(stamp, x)]
        if self.lowpass is None:
            return out
        return [(t, self.lowpass(value)) for t, value in out]

    def _design(self, step: float) -> None:
        self.rate_hz = 1.0 / step
        cutoff = self.settings.cutoff_hz
        if cutoff <= 0:
            return
        if cutoff >= 0.5 * self.rate_hz:
            self.note = (
                f"{self.name}: cutoff_hz {cutoff:g} is not below the Nyquist rate of the "
                f"{self.rate_hz:.4g} Hz input, so it is not filtered: lower cutoff_hz"
            )
            return
        self.lowpass = CausalLowpass(self.rate_hz, cutoff, self.settings.filter_order)


class _Buffer:
    """Recent filtered samples of an auxiliary stream (F/T, IMU), interpolated at a stamp."""

    def __init__(self) -> None:
        self.samples: deque[tuple[float, np.ndarray]] = deque(maxlen=256)

    def clear(self) -> None:
        self.samples.clear()

    def add(self, t: float, x: np.ndarray) -> None:
        self.samples.append((t, x))

    def covers(self, t: float) -> bool:
        return bool(self.samples) and self.samples[-1][0] >= t

    def at(self, t: float, max_gap: float) -> np.ndarray | None:
        """Linear interpolation at t between the samples around it (searched from the newest,
        where t usually is); None if there are none, or they are more than max_gap apart."""
        later = None
        for stamp, x in reversed(self.samples):
            if stamp == t:
                return x
            if stamp < t:
                if later is None or later[0] - stamp > max_gap:
                    return None
                u = (t - stamp) / (later[0] - stamp)
                return (1.0 - u) * x + u * later[1]
            later = (stamp, x)
        return None


@dataclass(frozen=True)
class _Pending:
    """A kinematic sample waiting for its wrench and gravity: its stamp, and the differencing
    window it is the middle of (its kinematics are computed only if it is kept)."""

    t: float
    window: tuple[tuple[float, np.ndarray], ...]


@dataclass(frozen=True)
class _Kinematics:
    """A kinematic sample's grasp signals."""

    t: float
    T_i0_i: np.ndarray
    V_i: np.ndarray
    dV_i: np.ndarray
    F_i: np.ndarray | None  # from joint efforts


class GraspSignals:
    """One robot's online pipeline (see the module docstring). Feed messages with ``add_*``;
    each returns the samples it completed (usually zero or one)."""

    def __init__(self, settings: GraspSignalSettings, urdf: str | None = None):
        self.settings = settings
        self.kinematics: RobotKinematics | None = None
        self.rejected: Counter[str] = Counter()
        self.restarts: Counter[str] = Counter()
        self.missing: Counter[str] = Counter()
        self.accepted: Counter[str] = Counter()
        self.emitted = 0
        self.last_error = ""
        self._streams = {
            name: _Stream(name, settings)
            for name in ("joint_states", "grasp_pose", "ft_sensor", "imu")
        }
        self._ft, self._imu = _Buffer(), _Buffer()
        self._frames: dict[str, np.ndarray] = {}  # T_i_f of accepted sensor frames
        self._static: dict[str, tuple[str, np.ndarray]] = {}  # child -> (parent, T_parent_child)
        self._held: dict[str, np.ndarray] = {}  # joint -> (q, dq, tau) of secondary sources
        self._primary: set[str] = set()  # chain joints of the source that makes the samples
        self._last_names: tuple = (None, set(), None)  # _joint_order's
        self._g_i0 = np.asarray(settings.gravity_i0, dtype=float)
        self._before_urdf: deque[tuple[Callable[..., list[GraspSample]], tuple]] = deque()
        self._restart_state()
        if urdf is not None:
            self.set_urdf(urdf)

    # ----- set-up -------------------------------------------------------------------------
    def set_urdf(self, urdf: str) -> list[GraspSample]:
        """Load the robot's URDF (raises ``RobotModelError`` naming what is wrong) and restart.
        Returns the samples completed by the messages held while it was missing."""
        kinematics = RobotKinematics(
            urdf, self.settings.grasp_frame, self.settings.compensate_robot_dynamics
        )
        kinematics.model.gravity.linear = self._g_i0
        self.kinematics = kinematics
        self._frames, self._held, self._primary = {}, {}, set()
        self._last_names = (None, set(), None)
        self._restart_state()
        held, self._before_urdf = self._before_urdf, deque()
        return [sample for add, args in held for sample in add(*args)]

    def _hold_until_urdf(self, add: Callable[..., list[GraspSample]], *args: object) -> list:
        """Keep a message that needs the URDF (joint states, and the F/T and IMU samples that
        pair with them) until it arrives; beyond HELD_BEFORE_URDF the oldest is dropped."""
        if len(self._before_urdf) == HELD_BEFORE_URDF:
            self._before_urdf.popleft()
            self.rejected["no_urdf"] += 1
            self.last_error = (
                f"no_urdf: more than {HELD_BEFORE_URDF} messages before the robot's URDF "
                "(robot_description); the oldest are dropped"
            )
        copies = tuple(np.array(a) if isinstance(a, np.ndarray) else a for a in args)
        self._before_urdf.append((add, copies))
        return []

    @property
    def _waiting_for_urdf(self) -> bool:
        return self.kinematics is None and self.settings.kinematics_source == "joint_states"

    def _restart_state(self) -> None:
        for stream in self._streams.values():
            stream.reset()
        self._ft.clear()
        self._imu.clear()
        self._window: deque[tuple[float, np.ndarray]] = deque(maxlen=3)
        self._waiting: deque[_Pending] = deque()
        self._newest = -np.inf  # newest kinematic stamp
        self._count = 0  # kinematic samples completed since the restart (decimation)
        self._previous_quaternion: np.ndarray | None = None

    @property
    def notes(self) -> list[str]:
        """Problems found in the streams themselves: a cutoff above an input's Nyquist rate, or
        above the decimated output's."""
        notes = [s.note for s in self._streams.values() if s.note]
        rate = self._streams[self.settings.kinematics_source].rate_hz
        n, cutoff = self.decimation, self.settings.cutoff_hz
        if n > 1 and not 0 < cutoff < 0.5 * rate / n:
            notes.append(
                f"GraspState keeps every {n}th sample ({rate / n:.4g} Hz) but cutoff_hz "
                f"{cutoff:g} is not below its Nyquist rate: the output aliases; lower cutoff_hz "
                "or raise rate_hz"
            )
        return notes

    @property
    def rates_hz(self) -> dict[str, float]:
        """Each stream's measured rate [Hz] (streams whose rate is known)."""
        return {name: s.rate_hz for name, s in self._streams.items() if s.rate_hz}

    @property
    def decimation(self) -> int:
        """n: every n-th kinematic sample is emitted."""
        rate = self._streams[self.settings.kinematics_source].rate_hz
        if not rate or self.settings.output_rate_hz <= 0:
            return 1
        return max(1, round(rate / self.settings.output_rate_hz))

    # ----- inputs -------------------------------------------------------------------------
    def add_joint_state(
        self,
        stamp: float,
        names: list[str],
        position: np.ndarray,
        velocity: np.ndarray,
        effort: np.ndarray,
    ) -> list[GraspSample]:
        """A sensor_msgs/JointState: names, positions [m, rad], velocities, efforts.

        Several sources may share the stream (e.g. an arm driver and a lift controller): a
        message without the chain's last joint (the one nearest the grasp) and without any
        joint of the source that has it only updates the values held for its joints; one
        with it makes a sample, its missing joints taking their held values (so they must
        move slowly against the output rate). Anything else lacking joints is refused."""
        if self._waiting_for_urdf:
            return self._hold_until_urdf(
                self.add_joint_state, stamp, list(names), position, velocity, effort
            )
        if self._holds(names, position, velocity, effort):
            return []
        return self._guarded("joint_states", stamp, self._joints, names, position, velocity, effort)

    def _holds(
        self, names: list[str], position: np.ndarray, velocity: np.ndarray, effort: np.ndarray
    ) -> bool:
        """Keep a secondary source's joint values (see ``add_joint_state``); whether it was one."""
        chain = self.kinematics.joint_names if self.kinematics else []
        if not chain or chain[-1] in names or not set(chain) & set(names):
            return False
        if self._primary & set(names):  # the sample source lacking a joint: malformed
            return False
        for k, name in enumerate(names):
            values = [v[k] if k < len(v) else 0.0 for v in (position, velocity, effort)]
            if name in chain and np.all(np.isfinite(values)):
                self._held[name] = np.array(values, dtype=float)
        self.accepted["joint_states"] += 1
        return True

    def add_pose(self, stamp: float, frame_id: str, T_i0_i: np.ndarray) -> list[GraspSample]:
        """A grasp pose T_i0_i (e.g. geometry_msgs/PoseStamped in the home frame)."""
        return self._guarded("grasp_pose", stamp, self._pose, frame_id, T_i0_i)

    def add_wrench(self, stamp: float, frame_id: str, W_f: np.ndarray) -> list[GraspSample]:
        """An F/T reading (moment, force) in its sensor frame ``frame_id``."""
        if self._waiting_for_urdf:
            return self._hold_until_urdf(self.add_wrench, stamp, frame_id, W_f)
        return self._guarded("ft_sensor", stamp, self._wrench, frame_id, W_f)

    def add_imu(
        self, stamp: float, frame_id: str, angular_velocity: np.ndarray, specific_force: np.ndarray
    ) -> list[GraspSample]:
        """An IMU sample in ``frame_id``: gyro [rad/s] and accelerometer (a - g) [m/s^2]."""
        if self._waiting_for_urdf:
            return self._hold_until_urdf(
                self.add_imu, stamp, frame_id, angular_velocity, specific_force
            )
        return self._guarded(
            "imu", stamp, self._imu_sample, frame_id, angular_velocity, specific_force
        )

    def _guarded(
        self, stream: str, stamp: float, handler: Callable[..., np.ndarray], *args: object
    ) -> list[GraspSample]:
        """Run a stream's handler; rejected messages are counted, restarts done, never raised."""
        try:
            x = handler(*args)
            try:
                self._streams[stream].check(stamp)
            except _RestartError as restart:
                self.restarts[restart.reason] += 1
                self._restart_state()
            if stream == "grasp_pose":
                x = self._continuous_quaternion(x)
            self.accepted[stream] += 1
            for t, value in self._streams[stream].push(stamp, x):
                self._filtered(stream, t, value)
            return self._release()
        except _BadInputError as rejected:
            self.rejected[rejected.reason] += 1
            self.last_error = f"{rejected.reason}: {rejected}"
            return []

    # ----- validation: each returns the stream's signal vector ---------------------------
    def _joints(
        self, names: list[str], position: np.ndarray, velocity: np.ndarray, effort: np.ndarray
    ) -> np.ndarray:
        if self.settings.kinematics_source != "joint_states":
            raise _BadInputError(
                "unused_stream", "joint states arrive but kinematics_source is not joint_states"
            )
        use_effort = self.settings.wrench_source == "joint_efforts"
        sizes = [len(position), len(velocity)] + ([len(effort)] if use_effort else [])
        if any(size != len(names) for size in sizes):
            what = "positions, velocities" + (" and efforts" if use_effort else "")
            raise _BadInputError("malformed", f"{len(names)} joint names but {sizes} {what}")
        own, order = self._joint_order(names)
        if order is None:  # chain joints missing: the values held for them complete it
            names, position, velocity, effort = self._with_held(names, position, velocity, effort)
            try:
                order = self.kinematics.joint_order(list(names))
            except RobotModelError as error:
                raise _BadInputError("unknown_joints", str(error)) from None
        self._primary = own
        parts = [position, velocity] + ([effort] if use_effort else [])
        x = np.concatenate([np.asarray(p, dtype=float)[order] for p in parts])
        if not np.isfinite(x).all():
            raise _BadInputError("non_finite", "joint state with NaN or Inf values")
        return x

    def _joint_order(self, names: list[str]) -> tuple[set[str], np.ndarray | None]:
        """The chain joints a message names, and the index of each chain joint in it (None if
        it lacks one); kept for the last names (a source sends the same names every time)."""
        key = tuple(names)
        if self._last_names[0] != key:
            chain = self.kinematics.joint_names
            own = set(names) & set(chain)
            order = self.kinematics.joint_order(list(names)) if len(own) == len(chain) else None
            self._last_names = key, own, order
        return self._last_names[1], self._last_names[2]

    def _with_held(
        self, names: list[str], position: np.ndarray, velocity: np.ndarray, effort: np.ndarray
    ) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """The message completed by the values held for the chain joints it lacks."""
        held = [n for n in self.kinematics.joint_names if n not in names and n in self._held]
        if not held:
            return names, position, velocity, effort
        values = np.array([self._held[n] for n in held])
        effort = effort if len(effort) == len(names) else np.zeros(len(names))
        return (
            [*names, *held],
            np.r_[np.asarray(position, dtype=float), values[:, 0]],
            np.r_[np.asarray(velocity, dtype=float), values[:, 1]],
            np.r_[np.asarray(effort, dtype=float), values[:, 2]],
        )

    def _pose(self, frame_id: str, T_i0_i: np.ndarray) -> np.ndarray:
        if self.settings.kinematics_source != "grasp_pose":
            raise _BadInputError(
                "unused_stream", "a grasp pose arrives but kinematics_source is not grasp_pose"
            )
        home = self.settings.frame_id(self.settings.home_frame)
        if frame_id != home:
            raise _BadInputError(
                "wrong_frame", f"grasp pose in {frame_id!r}, expected the home frame {home!r}"
            )
        T = np.asarray(T_i0_i, dtype=float)
        if not np.all(np.isfinite(T)):
            raise _BadInputError("non_finite", "grasp pose with NaN or Inf values")
        return np.concatenate([T[:3, 3], Rotation.from_matrix(T[:3, :3]).as_quat()])

    def _continuous_quaternion(self, x: np.ndarray) -> np.ndarray:
        """Flip the pose's quaternion to the previous one's side: it must filter smoothly."""
        if self._previous_quaternion is not None and x[3:] @ self._previous_quaternion < 0:
            x = np.concatenate([x[:3], -x[3:]])
        self._previous_quaternion = x[3:]
        return x

    def _wrench(self, frame_id: str, W_f: np.ndarray) -> np.ndarray:
        if self.settings.wrench_source != "ft_sensor":
            raise _BadInputError(
                "unused_stream", "F/T readings arrive but wrench_source is not ft_sensor"
            )
        W = np.asarray(W_f, dtype=float)
        if not np.all(np.isfinite(W)):
            raise _BadInputError("non_finite", "F/T reading with NaN or Inf values")
        sign = -1.0 if self.settings.ft_measures == "wrench_on_robot" else 1.0
        return sign * wrench_to(inverse(self._sensor_frame(frame_id)), W)

    def _imu_sample(
        self, frame_id: str, angular_velocity: np.ndarray, specific_force: np.ndarray
    ) -> np.ndarray:
        if self.settings.gravity_source != "imu":
            raise _BadInputError(
                "unused_stream", "IMU samples arrive but gravity_source is not imu"
            )
        f = np.asarray(specific_force, dtype=float)
        if not np.all(np.isfinite(f)) or not np.all(np.isfinite(angular_velocity)):
            raise _BadInputError("non_finite", "IMU sample with NaN or Inf values")
        T_i_u = self._sensor_frame(frame_id)
        return np.concatenate([T_i_u[:3, :3] @ f, T_i_u[:3, 3]])

    def add_static_transform(self, parent: str, child: str, T_parent_child: np.ndarray) -> None:
        """A fixed transform from /tf_static (tf2: the pose of ``child`` in ``parent``), used
        for sensor frames the URDF does not have; the newest one per child counts."""
        self._static[child] = (parent, np.asarray(T_parent_child, dtype=float))
        self._frames = {}

    def _sensor_frame(self, frame_id: str) -> np.ndarray:
        """T_i_f of a sensor frame: the grasp frame itself, a URDF frame on the grasp link, or
        a frame that /tf_static attaches, through fixed transforms, to one of those."""
        if frame_id in self._frames:
            return self._frames[frame_id]
        T_parent_f, frame = np.eye(4), frame_id
        for _ in range(len(self._static) + 1):
            T = self._on_grasp_link(frame)
            if T is not None:
                self._frames[frame_id] = T @ T_parent_f
                return self._frames[frame_id]
            if frame not in self._static:
                break
            frame, T_parent = self._static[frame]
            T_parent_f = T_parent @ T_parent_f
        grasp = self.settings.frame_id(self.settings.grasp_frame)
        raise _BadInputError(
            "wrong_frame",
            f"sensor frame {frame_id!r} is neither the grasp frame {grasp!r} nor a URDF frame "
            "on its link, and /tf_static connects it to neither: publish its fixed offset on "
            "/tf_static or report in the grasp frame",
        )

    def _on_grasp_link(self, frame_id: str) -> np.ndarray | None:
        """T_i_f of the grasp frame or a URDF frame on the grasp link (by TF frame id)."""
        prefix = self.settings.frame_prefix
        if frame_id == self.settings.frame_id(self.settings.grasp_frame):
            return np.eye(4)
        if self.kinematics is None or not frame_id.startswith(prefix):
            return None
        try:
            return self.kinematics.frame_in_grasp(frame_id[len(prefix) :])
        except RobotModelError:
            return None

    # ----- processing -----------------------------------------------------------------------
    def _filtered(self, stream: str, t: float, x: np.ndarray) -> None:
        """One filtered sample of a stream: kinematics enter the differencing window, F/T and
        IMU samples their buffers."""
        if stream == "ft_sensor":
            self._ft.add(t, x)
            return
        if stream == "imu":
            self._imu.add(t, x)
            return
        self._window.append((t, x))
        self._newest = t
        if len(self._window) == 3:
            self._waiting.append(_Pending(self._window[1][0], tuple(self._window)))

    def _kinematics(self, pending: _Pending) -> _Kinematics:
        if self.settings.kinematics_source == "joint_states":
            return self._from_joints(pending.window)
        return self._from_poses(pending.window)

    def _from_joints(self, window: tuple[tuple[float, np.ndarray], ...]) -> _Kinematics:
        """Kinematics at the window's middle sample: ddq by central differences, then Pinocchio."""
        t = np.array([s[0] for s in window])
        x = np.array([s[1] for s in window])
        n = len(self.kinematics.joint_names)
        q, dq = x[1, :n], x[1, n : 2 * n]
        ddq = three_point_derivative(t, x[:, n : 2 * n])[0]
        tau = x[1, 2 * n :] if self.settings.wrench_source == "joint_efforts" else None
        k = self.kinematics.evaluate(q, dq, ddq, tau)
        return _Kinematics(t[1], k.T_i0_i, k.V_i, k.dV_i, k.F_i)

    def _from_poses(self, window: tuple[tuple[float, np.ndarray], ...]) -> _Kinematics:
        """Body twist and its derivative at the middle pose from the two half-step twists."""
        (t0, x0), (t1, x1), (t2, x2) = window
        T0, T1, T2 = (transform(Rotation.from_quat(x[3:]).as_matrix(), x[:3]) for x in (x0, x1, x2))
        h0, h1 = t1 - t0, t2 - t1
        V_before = log6(inverse(T0) @ T1) / h0  # at t1 - h0 / 2
        V_after = log6(inverse(T1) @ T2) / h1  # at t1 + h1 / 2
        V = (h1 * V_before + h0 * V_after) / (h0 + h1)
        dV = 2.0 * (V_after - V_before) / (h0 + h1)
        return _Kinematics(t1, T1, V, dV, None)

    def _awaits(self, stream: str, buffer: _Buffer, t: float) -> bool:
        """Whether a sample at t still waits for an auxiliary stream: it has no data up to t
        yet, and either t is within ``sync_timeout`` of the newest kinematics or the stream
        holds samples until its rate is known (they will come)."""
        if buffer.covers(t):
            return False
        overdue = self._newest - t > self.settings.sync_timeout
        return not overdue or bool(self._streams[stream].waiting)

    def _release(self) -> list[GraspSample]:
        """Complete the waiting kinematic samples whose F/T and IMU data are in (or overdue)."""
        out = []
        while self._waiting:
            k = self._waiting[0]
            needs_ft = self.settings.wrench_source == "ft_sensor"
            needs_imu = self.settings.gravity_source == "imu"
            if (needs_ft and self._awaits("ft_sensor", self._ft, k.t)) or (
                needs_imu and self._awaits("imu", self._imu, k.t)
            ):
                break
            self._waiting.popleft()
            ft, imu = self._auxiliary(k.t)
            self._count += 1
            if (self._count - 1) % self.decimation == 0:
                self.emitted += 1
                out.append(self._sample(self._kinematics(k), ft, imu))
        return out

    def _auxiliary(self, t: float) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The F/T and IMU samples at t (those the settings use), each missing one counted."""
        settings, ft, imu = self.settings, None, None
        if settings.wrench_source == "ft_sensor":
            ft = self._ft.at(t, settings.max_gap)
            if ft is None:
                self.missing["ft_sensor"] += 1
        if settings.gravity_source == "imu":
            imu = self._imu.at(t, settings.max_gap)
            if imu is None:
                self.missing["imu"] += 1
        return ft, imu

    def _sample(self, k: _Kinematics, ft: np.ndarray | None, imu: np.ndarray | None) -> GraspSample:
        settings = self.settings
        F = ft if settings.wrench_source == "ft_sensor" else k.F_i
        g = None
        if settings.gravity_source == "home_frame":
            g = k.T_i0_i[:3, :3].T @ self._g_i0
        elif imu is not None:
            g = self._imu_gravity(k, imu)
        has_force = F is not None
        F = np.full(6, np.nan) if F is None else np.array(F, dtype=float)
        if not settings.has_torque:
            F[:3] = np.nan
        return GraspSample(
            robot_id=settings.robot_id,
            stamp=k.t,
            T_i0_i=k.T_i0_i,
            V_i=k.V_i,
            dV_i=k.dV_i,
            F_i=F,
            g_i=g,
            has_force=has_force,
            has_torque=has_force and settings.has_torque,
        )

    def _imu_gravity(self, k: _Kinematics, imu: np.ndarray) -> np.ndarray:
        """g_i = a_u - R_i_u f_u, a_u the IMU origin's acceleration from the grasp kinematics
        (imu: the IMU's filtered (R_i_u f_u, p_i_u) at the sample's stamp)."""
        f_i, r = imu[:3], imu[3:]
        omega, v = k.V_i[:3], k.V_i[3:]
        alpha, dv = k.dV_i[:3], k.dV_i[3:]
        a_u = dv + np.cross(omega, v) + np.cross(alpha, r) + np.cross(omega, np.cross(omega, r))
        return a_u - f_i
