"""Tray balancing in MuJoCo: a planned tray motion carries a box resting on it (paper 004, VII).

The tray is the planned payload pose of a carrying team: a body on three slides and
three hinges (yaw, pitch, roll: R_w_e = Rz Ry Rx, the planner's ``tray.rotation``)
whose joint positions and velocities follow the plan exactly at every physics step
(perfect tracking, notes §4.3 with the tray's own coordinates). A box of 15 cm x 15 cm x h
rests on it with friction mu = 0.2 (both geoms 0.2; MuJoCo takes the larger), its CoM
offset from the centroid and its diagonal inertia about the CoM set explicitly (notes
§4.5). Success: the box moved less than ``FAILURE_DISTANCE`` relative to the tray
(notes §7.6); we also report its largest tilt relative to the tray.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from ..core.planning.objects import BalancedObject
from ..core.planning.planner import PlannerSettings, TrayPlan, TrayPlanner
from ..core.planning.session import ROBOTS, robot_model
from ..core.planning.tray import NQ, euler_rate_map, rotation
from ..core.spatial import rotation_angle, transform
from .scenario import ScenarioError, Section, scenario_type

FAILURE_DISTANCE = 0.5  # [m], the authors' threshold (notes §7.6)
SETTLE = 0.5  # [s] of rest before the plan starts
TIMESTEP = 0.001  # [s] MuJoCo's
TRAY_HALF = (0.1425, 0.1425, 0.01)  # the paper's 28.5 cm x 28.5 cm x 2 cm tray [m]
# MuJoCo joint order (x, y, z, yaw, pitch, roll) as indices of the planner's q
JOINT_ORDER = np.array([0, 1, 2, 5, 4, 3])


def point_mass_inertia(size: np.ndarray, com_offset: np.ndarray) -> np.ndarray:
    """Diagonal inertia about the CoM of the point masses at the box's vertices with the
    largest smallest eigenvalue (notes §4.5, closed form): (y^2 - c_y^2) + (z^2 - c_z^2), ..."""
    half_sq = (np.asarray(size) / 2) ** 2 - np.asarray(com_offset) ** 2
    return np.array([half_sq[1] + half_sq[2], half_sq[0] + half_sq[2], half_sq[0] + half_sq[1]])


def _model_xml(size: np.ndarray, com_offset: np.ndarray, inertia: np.ndarray, mu: float) -> str:
    hx, hy, hz = np.asarray(size) / 2
    joints = "".join(
        f'<joint name="{name}" type="{kind}" axis="{axis}" damping="0"/>'
        for name, kind, axis in (
            ("x", "slide", "1 0 0"),
            ("y", "slide", "0 1 0"),
            ("z", "slide", "0 0 1"),
            ("yaw", "hinge", "0 0 1"),
            ("pitch", "hinge", "0 1 0"),
            ("roll", "hinge", "1 0 0"),
        )
    )
    tx, ty, tz = TRAY_HALF
    ox, oy, oz = com_offset
    ix, iy, iz = inertia
    return f"""
<mujoco model="tray_balancing">
  <option timestep="{TIMESTEP}" gravity="0 0 -9.81" integrator="implicitfast"/>
  <worldbody>
    <body name="tray">
      {joints}
      <geom name="tray" type="box" size="{tx} {ty} {tz}" pos="0 0 {-tz}" mass="5"
            friction="{mu} 0.005 0.0001"/>
    </body>
    <body name="object" pos="0 0 {hz}">
      <freejoint/>
      <inertial pos="{ox} {oy} {oz}" mass="1" diaginertia="{ix} {iy} {iz}"/>
      <geom name="object" type="box" size="{hx} {hy} {hz}" friction="{mu} 0.005 0.0001"
            mass="0"/>
    </body>
  </worldbody>
</mujoco>"""


@dataclass
class TrayRun:
    """What one replay recorded (every ``record_every`` physics steps)."""

    time: np.ndarray
    tray_pose: np.ndarray  # (n, 6) q of the tray
    object_position: np.ndarray  # (n, 3) box centroid in the world
    object_quaternion: np.ndarray  # (n, 4) w, x, y, z (MuJoCo order)
    in_contact: np.ndarray  # (n,) any box-tray contact
    displacement: np.ndarray  # (n,) relative to the tray, from its initial offset [m]
    tilt: np.ndarray  # (n,) rotation relative to the tray since the start [rad]
    wall_time: float = 0.0  # [s] planning and physics

    @property
    def max_displacement(self) -> float:
        return float(self.displacement.max())

    @property
    def success(self) -> bool:
        return self.max_displacement < FAILURE_DISTANCE


def tray_coordinates(plan: TrayPlan, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The tray's pose [x, y, z, roll, pitch, yaw] and its rate (n, 6 each) along the plan
    at times t: the plan's own states for the tray model, forward kinematics of the
    planned joint motion for the 9-DoF robot (perfect joint tracking)."""
    states = plan.states(t)
    if plan.robot == "tray":
        return states[:, :NQ], states[:, NQ : 2 * NQ]
    model = robot_model(plan.robot, PlannerSettings())
    R, p = model.poses(states[:, : plan.nq])
    yaw, pitch, roll = Rotation.from_matrix(R).as_euler("ZYX").T
    V, _, _ = model.body_motion(states)
    E = euler_rate_map(roll, pitch)[0]
    rates = np.linalg.solve(E, V[:, :3, None])[..., 0]
    q = np.column_stack([p, roll, np.unwrap(pitch), np.unwrap(yaw)])
    return q, np.column_stack([np.einsum("nij,nj->ni", R, V[:, 3:]), rates])


@dataclass(frozen=True)
class TrayMotion:
    """The tray's joint targets at every physics step of a replay (see ``tray_motion``)."""

    times: np.ndarray  # [s], negative during the settling before the plan
    q: np.ndarray  # (n, 6) [x, y, z, roll, pitch, yaw]
    v: np.ndarray  # (n, 6) their rates


def tray_motion(plan: TrayPlan, hold: float = 1.0) -> TrayMotion:
    """The tray's motion along ``plan`` at MuJoCo's time step, settling first and holding
    ``hold`` s after: the same for every object replayed on the plan, so a sweep computes
    it once per plan (for the 9-DoF robot it is forward kinematics at every step)."""
    steps = int(round((SETTLE + plan.times[-1] + hold) / TIMESTEP))
    times = np.arange(steps) * TIMESTEP - SETTLE
    q, v = tray_coordinates(plan, np.maximum(times, 0.0))
    v[times > plan.times[-1]] = 0.0  # held still (a plan without the terminal condition
    #   may end moving: the tray stops there, as the paper's tracking commands zero)
    return TrayMotion(times, q, v)


def replay(
    plan: TrayPlan,
    size: np.ndarray,
    com_offset: np.ndarray,
    inertia: np.ndarray,
    mu: float = 0.2,
    hold: float = 1.0,
    record_every: int = 10,
    motion: TrayMotion | None = None,
) -> TrayRun:
    """Carry the box (centred on the tray) along the plan, then hold still for ``hold`` s;
    ``motion``: ``tray_motion(plan, hold)`` if the caller has it already."""
    model = mujoco.MjModel.from_xml_string(_model_xml(size, com_offset, inertia, mu))
    data = mujoco.MjData(model)
    motion = tray_motion(plan, hold) if motion is None else motion
    times, tray_q, tray_v = motion.times, motion.q, motion.v
    start = tray_q[0]
    data.qpos[:NQ] = start[JOINT_ORDER]
    R0 = rotation(start)
    data.qpos[NQ : NQ + 3] = start[:3] + R0 @ np.array([0, 0, size[2] / 2 + 1e-4])
    data.qpos[NQ + 3 : NQ + 7] = _quaternion_wxyz(R0)
    tray_geom, object_geom = model.geom("tray").id, model.geom("object").id
    joint_q, joint_v = tray_q[:, JOINT_ORDER], tray_v[:, JOINT_ORDER]
    records = []
    for step, t in enumerate(times):
        data.qpos[:NQ], data.qvel[:NQ] = joint_q[step], joint_v[step]
        mujoco.mj_step(model, data)
        if step % record_every == 0 and t >= 0:
            touching = any(
                {c.geom1, c.geom2} == {tray_geom, object_geom} for c in data.contact[: data.ncon]
            )
            records.append((t, tray_q[step], data.qpos[NQ:].copy(), touching))
    return _measure(records)


def _quaternion_wxyz(R: np.ndarray) -> np.ndarray:
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, np.asarray(R, dtype=float).ravel())
    return q


def _measure(records: list) -> TrayRun:
    times = np.array([r[0] for r in records])
    tray = np.array([r[1] for r in records])
    free = np.array([r[2] for r in records])
    R_tray = rotation(tray)
    offsets = np.einsum("nji,nj->ni", R_tray, free[:, :3] - tray[:, :3])
    R_obj = _matrices(free[:, 3:7])
    relative = np.einsum("nji,njk->nik", R_tray, R_obj)
    tilt = np.array([rotation_angle(relative[0].T @ Rk) for Rk in relative])
    return TrayRun(
        time=times,
        tray_pose=tray,
        object_position=free[:, :3],
        object_quaternion=free[:, 3:7],
        in_contact=np.array([r[3] for r in records]),
        displacement=np.linalg.norm(offsets - offsets[0], axis=1),
        tilt=tilt,
    )


TRAY_TOPICS = {
    "/tray/pose": "geometry_msgs/msg/PoseStamped",
    "/tray/object_pose": "geometry_msgs/msg/PoseStamped",
    "/tray/object_in_contact": "std_msgs/msg/Bool",
}


def write_tray_bag(run: TrayRun, path: Path, storage: str = "mcap") -> Path:
    """The run as a rosbag2: tray pose, box pose (world frame "world") and contact state."""
    from geometry_msgs.msg import PoseStamped
    from std_msgs.msg import Bool

    from ..ros.conversions import to_pose, to_time

    def stamped(t: float, T: np.ndarray, frame: str) -> PoseStamped:
        msg = PoseStamped(pose=to_pose(T))
        msg.header.frame_id, msg.header.stamp = frame, to_time(t)
        return msg

    def streams():  # noqa: ANN202 - one generator per topic, time ordered
        R_tray, R_obj = rotation(run.tray_pose), _matrices(run.object_quaternion)
        yield [
            ("/tray/pose", TRAY_TOPICS["/tray/pose"], int(t * 1e9),
             stamped(t, transform(R, p), "world"))
            for t, R, p in zip(run.time, R_tray, run.tray_pose[:, :3], strict=True)
        ]  # fmt: skip
        yield [
            ("/tray/object_pose", TRAY_TOPICS["/tray/object_pose"], int(t * 1e9),
             stamped(t, transform(R, p), "world"))
            for t, R, p in zip(run.time, R_obj, run.object_position, strict=True)
        ]  # fmt: skip
        yield [
            ("/tray/object_in_contact", TRAY_TOPICS["/tray/object_in_contact"], int(t * 1e9),
             Bool(data=bool(c)))
            for t, c in zip(run.time, run.in_contact, strict=True)
        ]  # fmt: skip

    from ..bags import write_bag  # rosbags: only where a bag is written

    return write_bag(path, list(streams()), storage)


def _matrices(quaternions_wxyz: np.ndarray) -> np.ndarray:
    out = np.empty((len(quaternions_wxyz), 9))
    for k, quat in enumerate(quaternions_wxyz):
        mujoco.mju_quat2Mat(out[k], quat)
    return out.reshape(-1, 3, 3)


@scenario_type("tray_balancing")
class TrayBalancingScenario:
    """YAML: ``height``, ``com_offset`` (from the centroid), ``inertia_scale``, ``goal``
    (offset from the start), ``method`` (robust / center / top), ``duration``, ``mu``,
    ``robot``: ``tray`` (the free-flying tray) or ``ridgeback_ur10`` (the paper's 9-DoF
    robot from its home pose; the tray follows its forward kinematics)."""

    def __init__(
        self,
        name: str,
        height: float,
        com_offset: np.ndarray,
        inertia_scale: float,
        goal: np.ndarray,
        method: str,
        settings: PlannerSettings,
        mu: float,
        robot: str = "tray",
    ) -> None:
        self.name, self.height, self.com_offset = name, height, com_offset
        self.inertia_scale, self.goal, self.method = inertia_scale, goal, method
        self.settings, self.mu, self.seed, self.robot = settings, mu, 0, robot
        self.size = np.array([0.15, 0.15, height])
        self.config: dict = {}
        self.duration = settings.duration + 1.0  # plan, then the hold
        if np.any(np.abs(com_offset) > self.size / 2):
            raise ScenarioError(f"{name}: com_offset {com_offset} lies outside the box")

    @classmethod
    def from_config(cls, section: Section) -> TrayBalancingScenario:
        scenario = cls(
            name=section.string("name", "tray_balancing"),
            height=section.number("height", 0.6, low=0.05, high=1.0),
            com_offset=section.vector("com_offset", 3, [0.0, 0.0, 0.0]),
            inertia_scale=section.number("inertia_scale", 1.0, positive=True, high=1.0),
            goal=section.vector("goal", 3, [2.0, 0.0, -0.25]),
            method=section.string("method", "robust", choices=("robust", "center", "top")),
            settings=PlannerSettings(duration=section.number("duration", 5.0, positive=True)),
            mu=section.number("mu", 0.2, low=0.0),
            robot=section.string("robot", "tray", choices=ROBOTS),
        )
        section.done()
        scenario.config = dict(section.data)
        return scenario

    def plan(self) -> TrayPlan:
        obj = BalancedObject.box(tuple(self.size), mu=self.mu)
        model = robot_model(self.robot, self.settings)
        if self.robot == "tray":
            start = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
        else:
            from ..core.planning.robot import HOME

            start = HOME
        origin = model.positions(start)[0][0]
        return TrayPlanner([obj], self.method, self.settings, model).plan(start, origin + self.goal)

    def run(
        self, seed: int | None = None, progress: Callable[[float], None] | None = None
    ) -> TrayRun:
        """Plan (independent of the true CoM and inertia, as in the paper) and replay."""
        began = time.perf_counter()
        inertia = self.inertia_scale * point_mass_inertia(self.size, self.com_offset)
        run = replay(self.plan(), self.size, self.com_offset, inertia, self.mu)
        if progress is not None:
            progress(1.0)
        run.wall_time = time.perf_counter() - began
        return run

    def simulate_to(self, out: Path, storage: str = "mcap") -> str:
        """``inertia_estimation simulate``: run, write ``out/bag``, return a summary line."""
        run = self.run()
        write_tray_bag(run, out / "bag", storage)
        verdict = "success" if run.success else "FAILED"
        return (
            f"{self.method} plan: {verdict}, box moved {100 * run.max_displacement:.1f} cm and "
            f"tilted {np.rad2deg(run.tilt.max()):.1f} deg on the tray; wrote {out / 'bag'}"
        )

    def stepper(self, seed: int | None = None) -> None:
        raise ScenarioError(
            "tray_balancing runs whole plans (run()); the simulation node does not step it"
        )
