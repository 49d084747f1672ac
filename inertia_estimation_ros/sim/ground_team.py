"""Ground team: N robots (2 to 16) rigidly grasp one free-floating payload, in MuJoCo.

Model (checked facts: ``/work/shared/notes/simulation-tips.md``). Each robot is a
serial chain from its fixed home frame {i0}: three slide joints (a 3-DoF
translational mechanism; the Delta's parallel linkage is replaced by a Cartesian
one with the same task-space behaviour), then a three-axis wrist (hinges about x,
y, z, intersecting at the grasp frame's origin), then a massless flange body whose
site is the grasp frame {i}. A ``weld`` equality joins each flange site to the
matching site on the payload. The flange's force and torque sensors read the
wrench the wrist exerts on the flange, which, the flange being massless, is the
wrench F_i the robot applies on the payload (paper 000's sign). Robot kinds:

* ``delta_gimbal``: slides under position control, a passive, damped gimbal wrist
  (it transmits forces but no moments), like paper 000's Omnid;
* ``wrist_6dof``: all six joints actuated (impedance control: joint-space PD set-points
  with stiff gains when tracking, compliant gains when a human guides).

Physics: ``implicitfast`` integration, weld ``solref`` time constant at least twice
the timestep. Ground truth (payload mass, CoM, inertia, grasp frames) comes from the
compiled model. Raw streams are recorded at the pre-step state of ``mj_step``, at
which MuJoCo's ``sensordata`` and ``qacc`` are consistent with ``qpos``/``qvel``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from ..core.robot_kinematics import RobotKinematics
from ..core.samples import GraspSeries
from ..core.signals import three_point_derivative
from ..core.spatial import inverse, transform, wrench_to
from .excitation import (
    HumanGuided,
    PhasePlan,
    PlanContext,
    Program,
    read_program,
    smoothstep,
)
from .ground_truth import (
    body_inertial_parameters,
    body_pose_in_parent,
    site_pose_in_body,
)
from .payload import Primitive, read_payload
from .quaternion import matrix_from_wxyz, wxyz_from_matrix
from .scenario import (
    GroundTruth,
    ImuStream,
    JointStream,
    Phase,
    RobotRecord,
    ScenarioError,
    Section,
    SimulationResult,
    WrenchStream,
    scenario_type,
)
from .scenario_file import _merge
from .sensors import RobotSensors, SensorConfig, check_rate
from .urdf import chain_urdf

ROBOT_KINDS = ("delta_gimbal", "wrist_6dof")
JOINTS = ("x", "y", "z", "roll", "pitch", "yaw")  # slides, then wrist hinges
LINEAR = np.array([True, True, True, False, False, False])
TEAM_SIZE = (2, 16)
_ROBOT_ID = re.compile(r"^[a-z][a-z0-9_]*$")
_WELD_SOLIMP = "0.99 0.999 0.001"
WARM_UP = 1.0  # [s] of unrecorded settling under the payload's weight; recording starts then


class SimulationError(RuntimeError):
    """The physics diverged; the message says which settings to change."""


@dataclass(frozen=True)
class Gains:
    """Joint-space PD gains: (kp, kv) of the slides [N/m, N s/m] and wrist [N m/rad, N m s/rad]."""

    translation: tuple[float, float]
    rotation: tuple[float, float]


STIFF = Gains((2.0e4, 4.0e2), (2.0e2, 5.0))
COMPLIANT = Gains((3.0e2, 1.0e2), (5.0, 0.5))


@dataclass(frozen=True)
class RobotSpec:
    robot_id: str
    kind: str
    T_P_i: np.ndarray  # grasp frame in the payload frame {P}
    T_i0_i_start: np.ndarray | None  # grasp frame in the home frame at the start; None: auto
    wrist_offset: np.ndarray  # wrist centre in the last slide's frame at zero joints
    link_mass: float  # each slide carriage [kg]
    wrist_mass: float  # each wrist link [kg]
    wrist_inertia: float  # each wrist link's moments about its centre [kg m^2]
    wrist_damping: float  # passive wrist joint damping [N m s/rad]
    stiff: Gains = STIFF
    compliant: Gains = COMPLIANT
    sensors: SensorConfig = field(default_factory=SensorConfig)

    @property
    def joint_names(self) -> list[str]:
        return [f"{self.robot_id}_{j}" for j in JOINTS]

    @property
    def actuated(self) -> np.ndarray:
        return np.array([True] * 3 + [self.kind == "wrist_6dof"] * 3)

    @property
    def home_frame(self) -> str:
        return f"{self.robot_id}/home"

    @property
    def grasp_frame(self) -> str:
        return f"{self.robot_id}/grasp"


@dataclass(frozen=True)
class Physics:
    timestep: float = 0.001
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    weld_time_constant: float = 0.002


def joint_positions(T_i0_i: np.ndarray, wrist_offset: np.ndarray) -> np.ndarray:
    """Inverse kinematics of the chain, (K, 4, 4) -> (K, 6): slides, then XYZ wrist angles."""
    T_i0_i = np.asarray(T_i0_i).reshape(-1, 4, 4)
    angles = Rotation.from_matrix(T_i0_i[:, :3, :3]).as_euler("XYZ")
    return np.hstack([T_i0_i[:, :3, 3] - wrist_offset, angles])


def _level_home(T_w_i: np.ndarray, wrist_offset: np.ndarray) -> np.ndarray:
    """T_w_i0: a level frame (z up) with the grasp's heading, placed so the slides start at 0."""
    x = T_w_i[:3, 0] if abs(T_w_i[2, 0]) < 0.9 else T_w_i[:3, 1]
    R = Rotation.from_euler("z", math.atan2(x[1], x[0])).as_matrix()
    return transform(R, T_w_i[:3, 3] - R @ wrist_offset)


def _numbers(x: np.ndarray) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(x))


def _quat(R: np.ndarray) -> str:
    return _numbers(wxyz_from_matrix(R))


@scenario_type("ground_team")
@dataclass(frozen=True)
class GroundTeamScenario:
    """N robots rigidly grasping one payload; see the module docstring and the README."""

    name: str
    T_w_P0: np.ndarray  # the payload frame {P} at the start
    payload: tuple[Primitive, ...]
    robots: tuple[RobotSpec, ...]
    excitation: tuple[Program, ...]
    reference_robot: str
    physics: Physics = field(default_factory=Physics)
    seed: int = 0
    description: str = ""
    config: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._validate()

    # ----- configuration ---------------------------------------------------------------------
    @classmethod
    def from_config(cls, section: Section) -> GroundTeamScenario:
        """From a parsed scenario mapping (``type: ground_team``)."""
        config = dict(section.data)
        physics_section = section.section("physics", {})
        timestep = physics_section.number("timestep", 0.001, positive=True, high=0.01)
        physics = Physics(
            timestep=timestep,
            gravity=tuple(physics_section.vector("gravity", 3, [0.0, 0.0, -9.81])),
            weld_time_constant=physics_section.number(
                "weld_time_constant", 2.0 * timestep, positive=True
            ),
        )
        physics_section.done()
        payload_section = section.section("payload")
        T_w_P0 = payload_section.pose("initial_pose", None)
        payload = tuple(read_payload(payload_section))
        payload_section.done()
        defaults = section.section("robot_defaults", {}).data
        robots = tuple(
            _read_robot(
                Section(
                    _merge(defaults, entry) if isinstance(entry, dict) else entry,
                    f"{section.path}.robots[{k}]",
                )
            )
            for k, entry in enumerate(section.items("robots"))
        )
        ids = tuple(r.robot_id for r in robots)
        excitation = tuple(
            read_program(Section(entry, f"{section.path}.excitation[{k}]"), ids)
            for k, entry in enumerate(section.items("excitation"))
        )
        scenario = cls(
            name=section.string("name"),
            description=section.string("description", "") if section.has("description") else "",
            seed=section.integer("seed", 0, low=0),
            physics=physics,
            T_w_P0=T_w_P0,
            payload=payload,
            robots=robots,
            excitation=excitation,
            reference_robot=section.string("reference_robot", ids[0] if ids else "robot_1"),
            config=config,
        )
        section.string("type")
        section.done()
        return scenario

    def _validate(self) -> None:
        ids = [r.robot_id for r in self.robots]
        if not TEAM_SIZE[0] <= len(ids) <= TEAM_SIZE[1]:
            raise ScenarioError(
                f"{self.name}: a ground team has {TEAM_SIZE[0]} to {TEAM_SIZE[1]} robots, "
                f"got {len(ids)}"
            )
        if len(set(ids)) != len(ids):
            raise ScenarioError(f"{self.name}: robot ids must be unique, got {ids}")
        if self.reference_robot not in ids:
            raise ScenarioError(
                f"{self.name}: reference_robot {self.reference_robot!r} is not one of {ids}"
            )
        if not self.excitation:
            raise ScenarioError(f"{self.name}: give at least one excitation program")
        dt = self.physics.timestep
        if self.physics.weld_time_constant < 2.0 * dt - 1e-12:
            raise ScenarioError(
                f"{self.name}: physics.weld_time_constant must be at least twice the timestep "
                f"({2 * dt} s), got {self.physics.weld_time_constant}"
            )
        for robot in self.robots:
            check_rate(robot.sensors.rate_hz, dt, f"{robot.robot_id}.sensors.rate_hz")
            _check_explicit_damping(robot, dt)
        for program in self.excitation:
            guided = isinstance(program, HumanGuided)
            if guided and 4 * np.pi * program.bandwidth_hz * program.damping_ratio * dt > 1:
                raise ScenarioError(
                    f"{self.name}: {program.name} bandwidth_hz {program.bandwidth_hz} is too high "
                    f"for a {dt} s step (explicit damping): lower it or the timestep"
                )
        self._check_held()
        for robot, T_w_i0 in self.home_frames().items():
            if abs(T_w_i0[2, 2] - 1.0) > 1e-9:
                raise ScenarioError(
                    f"{robot}: its home frame is not level (z axis {T_w_i0[:3, 2].round(3)}); the "
                    "robot nodes assume gravity along -z of {i0}: drop `home` to get a level one"
                )
        for robot, q in self.initial_joint_positions().items():
            if abs(q[4]) > np.deg2rad(60.0):
                raise ScenarioError(
                    f"{robot}: the wrist starts {np.rad2deg(q[4]):.0f} deg from level in pitch, "
                    "close to gimbal lock at 90 deg: choose a grasp frame closer to level"
                )

    def _check_held(self) -> None:
        """Passive-gimbal grasps on one line leave the payload free to rotate about it."""
        if any(r.kind == "wrist_6dof" for r in self.robots):
            return
        points = np.array([r.T_P_i[:3, 3] for r in self.robots])
        spread = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
        if len(points) < 3 or spread[1] < 1e-3 * max(spread[0], 1e-9):
            raise ScenarioError(
                f"{self.name}: {len(points)} passive-gimbal grasps on one line cannot hold the "
                "payload (it rotates freely about that line): add a robot off the line or use a "
                "wrist_6dof robot"
            )

    # ----- geometry -------------------------------------------------------------------------
    def T_w_i_start(self, robot: RobotSpec) -> np.ndarray:
        return self.T_w_P0 @ robot.T_P_i

    def home_frames(self) -> dict[str, np.ndarray]:
        """T_w_i0 of every robot."""
        out = {}
        for robot in self.robots:
            T_w_i = self.T_w_i_start(robot)
            if robot.T_i0_i_start is None:
                out[robot.robot_id] = _level_home(T_w_i, robot.wrist_offset)
            else:
                out[robot.robot_id] = T_w_i @ inverse(robot.T_i0_i_start)
        return out

    def initial_joint_positions(self) -> dict[str, np.ndarray]:
        homes = self.home_frames()
        return {
            r.robot_id: joint_positions(
                inverse(homes[r.robot_id]) @ self.T_w_i_start(r), r.wrist_offset
            )[0]
            for r in self.robots
        }

    @property
    def duration(self) -> float:
        """Total simulated time [s], every phase's settling included."""
        return sum(p.settle + p.duration for p in self.excitation)

    # ----- MuJoCo model ---------------------------------------------------------------------
    def mjcf(self) -> str:
        """The MJCF model of the team and the payload."""
        homes = self.home_frames()
        q0 = self.initial_joint_positions()
        robots = "".join(_robot_body(r, homes[r.robot_id]) for r in self.robots)
        geoms = "".join(p.mjcf(f"payload/{k}") for k, p in enumerate(self.payload))
        sites = "".join(
            f'<site name="payload/{r.robot_id}" pos="{_numbers(r.T_P_i[:3, 3])}" '
            f'quat="{_quat(r.T_P_i[:3, :3])}"/>'
            for r in self.robots
        )
        tc = self.physics.weld_time_constant
        welds = "".join(
            f'<weld name="{r.robot_id}/grasp" site1="{r.grasp_frame}" '
            f'site2="payload/{r.robot_id}" solref="{tc!r} 1" solimp="{_WELD_SOLIMP}"/>'
            for r in self.robots
        )
        actuators = "".join(_robot_actuators(r) for r in self.robots)
        sensors = "".join(
            f'<torque name="{r.robot_id}/torque" site="{r.grasp_frame}"/>'
            f'<force name="{r.robot_id}/force" site="{r.grasp_frame}"/>'
            f'<gyro name="{r.robot_id}/gyro" site="{r.grasp_frame}"/>'
            f'<accelerometer name="{r.robot_id}/accel" site="{r.grasp_frame}"/>'
            for r in self.robots
        )
        P = self.T_w_P0
        key = np.concatenate(
            [*(q0[r.robot_id] for r in self.robots), P[:3, 3], _quat_array(P[:3, :3])]
        )
        return (
            f'<mujoco model="{self.name}">'
            '<compiler angle="radian"/>'
            f'<option timestep="{self.physics.timestep!r}" integrator="Euler" '
            f'gravity="{_numbers(self.physics.gravity)}"><flag eulerdamp="disable"/></option>'
            '<default><geom contype="0" conaffinity="0" rgba="0.7 0.7 0.75 1"/></default>'
            f"<worldbody>{robots}"
            f'<body name="payload" pos="{_numbers(P[:3, 3])}" quat="{_quat(P[:3, :3])}">'
            f'<freejoint name="payload"/>{geoms}{sites}</body></worldbody>'
            f"<equality>{welds}</equality><actuator>{actuators}</actuator>"
            f"<sensor>{sensors}</sensor>"
            f'<keyframe><key name="start" qpos="{_numbers(key)}"/></keyframe></mujoco>'
        )

    def compile(self) -> mujoco.MjModel:
        return mujoco.MjModel.from_xml_string(self.mjcf())

    def urdf(self, model: mujoco.MjModel, robot_id: str) -> str:
        """The URDF of one robot's chain {i0} -> {i} (joint names as in its JointState)."""
        return chain_urdf(model, f"{robot_id}/home", f"{robot_id}/grasp", robot_id)

    # ----- running ----------------------------------------------------------------------------
    def stepper(self, seed: int | None = None) -> GroundTeamStepper:
        """A run that advances on demand (what the simulation node publishes from)."""
        return GroundTeamStepper(self, seed)

    def run(
        self, seed: int | None = None, progress: Callable[[float], None] | None = None
    ) -> SimulationResult:
        """Simulate every excitation phase, then apply the sensor models (see the module doc)."""
        started = time.perf_counter()
        result = self.stepper(seed).advance(progress=progress)
        result.wall_time = time.perf_counter() - started
        return result


def _check_explicit_damping(robot: RobotSpec, dt: float) -> None:
    """Semi-implicit Euler treats damping explicitly: dt * damping / inertia must stay below 1
    (2 is the stability limit) for the lightest body each joint moves, and so must
    dt * sqrt(stiffness / inertia)."""
    lightest = {
        "slide": (robot.link_mass + 3 * robot.wrist_mass, "link_mass"),
        "wrist": (robot.wrist_inertia, "wrist_inertia"),
    }
    dampers = [
        ("slide", "stiff.translation", robot.stiff.translation[1]),
        ("slide", "compliant.translation", robot.compliant.translation[1]),
        ("wrist", "wrist_damping", robot.wrist_damping if robot.kind == "delta_gimbal" else 0.0),
    ]
    if robot.kind == "wrist_6dof":
        dampers += [
            ("wrist", "stiff.rotation", robot.stiff.rotation[1]),
            ("wrist", "compliant.rotation", robot.compliant.rotation[1]),
        ]
    springs = [
        ("slide", "stiff.translation", robot.stiff.translation[0]),
        ("wrist", "stiff.rotation", robot.stiff.rotation[0] if robot.kind == "wrist_6dof" else 0),
    ]
    for joint, name, stiffness in springs:
        inertia, inertia_key = lightest[joint]
        if dt * np.sqrt(stiffness / inertia) > 1.0:
            raise ScenarioError(
                f"{robot.robot_id}: stiffness {name} = {stiffness} is unstable with "
                f"{inertia_key} {inertia} at a {dt} s step (needs dt * sqrt(k / inertia) < 1): "
                f"lower it, raise {inertia_key}, or shorten physics.timestep"
            )
    for joint, name, damping in dampers:
        inertia, inertia_key = lightest[joint]
        if dt * damping / inertia > 1.0:
            raise ScenarioError(
                f"{robot.robot_id}: damping {name} = {damping} is unstable with {inertia_key} "
                f"{inertia} at a {dt} s step (needs dt * damping / inertia < 1): lower the "
                f"damping, raise {inertia_key}, or shorten physics.timestep"
            )


def _quat_array(R: np.ndarray) -> np.ndarray:
    return wxyz_from_matrix(R)


def _read_gains(section: Section, key: str, default: Gains) -> Gains:
    gains = section.section(key, {})
    out = Gains(
        tuple(gains.vector("translation", 2, list(default.translation))),
        tuple(gains.vector("rotation", 2, list(default.rotation))),
    )
    gains.done()
    if min(out.translation + out.rotation) < 0:
        raise ScenarioError(f"{gains.path}: gains must be >= 0")
    return out


def _read_robot(section: Section) -> RobotSpec:
    robot_id = section.string("id")
    if not _ROBOT_ID.match(robot_id):
        raise ScenarioError(
            f"{section.path}.id: {robot_id!r} must be lower case letters, digits and _, starting "
            "with a letter (it names topics and frames)"
        )
    kind = section.string("kind", "delta_gimbal", ROBOT_KINDS)
    light = kind == "delta_gimbal"  # a gimbal's links are light; a 6-DoF wrist's are not
    spec = RobotSpec(
        robot_id=robot_id,
        kind=kind,
        T_P_i=section.pose("grasp"),
        T_i0_i_start=section.pose("home") if section.has("home") else None,
        wrist_offset=section.vector("wrist_offset", 3, [0.0, 0.0, 0.0]),
        link_mass=section.number("link_mass", 0.5, positive=True),
        wrist_mass=section.number("wrist_mass", 0.05 if light else 0.5, positive=True),
        wrist_inertia=section.number("wrist_inertia", 5e-5 if light else 5e-3, positive=True),
        wrist_damping=section.number("wrist_damping", 0.02, low=0.0),
        stiff=_read_gains(section, "stiff", STIFF),
        compliant=_read_gains(section, "compliant", COMPLIANT),
        sensors=SensorConfig.from_config(section.section("sensors", {})),
    )
    section.done()
    return spec


def _robot_body(robot: RobotSpec, T_w_i0: np.ndarray) -> str:
    """The MJCF chain home -> 3 slides -> 3 wrist hinges -> massless flange with the grasp site."""
    rid = robot.robot_id
    m_l, m_w = robot.link_mass, robot.wrist_mass
    carriage = f'mass="{m_l!r}" diaginertia="{_numbers([m_l * 1e-3] * 3)}"'
    wrist = f'mass="{m_w!r}" diaginertia="{_numbers([robot.wrist_inertia] * 3)}"'
    damping = robot.wrist_damping if robot.kind == "delta_gimbal" else 0.0
    parts = [
        f'<body name="{rid}/home" pos="{_numbers(T_w_i0[:3, 3])}" quat="{_quat(T_w_i0[:3, :3])}">'
    ]
    for joint, axis in zip(JOINTS, np.eye(3).tolist() * 2, strict=True):
        linear = joint in ("x", "y", "z")
        pos = "0 0 0" if joint != "roll" else _numbers(robot.wrist_offset)
        kind = "slide" if linear else "hinge"
        extra = "" if linear else f' damping="{damping!r}"'
        parts.append(
            f'<body name="{rid}/link_{joint}" pos="{pos}">'
            f'<joint name="{rid}_{joint}" type="{kind}" axis="{_numbers(axis)}"{extra}/>'
            f'<inertial pos="0 0 0" {carriage if linear else wrist}/>'
        )
    parts.append(f'<body name="{rid}/grasp"><site name="{rid}/grasp"/></body>')
    parts.append("</body>" * (len(JOINTS) + 1))
    return "".join(parts)


def _robot_actuators(robot: RobotSpec) -> str:
    out = []
    for joint, actuated, linear in zip(robot.joint_names, robot.actuated, LINEAR, strict=True):
        if actuated:
            kp, kv = robot.stiff.translation if linear else robot.stiff.rotation
            out.append(
                f'<position name="{joint}" joint="{joint}" kp="{float(kp)!r}" kv="{float(kv)!r}"/>'
            )
    return "".join(out)


@dataclass
class _Recording:
    """Raw simulation data at the recording instants of one chunk (the pre-step state of
    ``mj_step``); ``first`` is the run-wide index of the chunk's first instant."""

    t: np.ndarray  # (n,)
    q: np.ndarray  # (n, N, 6) joint positions
    dq: np.ndarray
    ddq: np.ndarray
    tau: np.ndarray  # actuator efforts on each joint (0 for passive joints)
    ft: np.ndarray  # (n, N, 6) flange sensor: (moment, force) the wrist applies on the payload
    gyro: np.ndarray  # (n, N, 3)
    accel: np.ndarray  # (n, N, 3) specific force
    T_w_P: np.ndarray  # (n, 4, 4)
    p_w_com: np.ndarray  # (n, 3)
    F_human_w: np.ndarray  # (n, 6) (torque, force) on the payload, about its CoM, world axes
    labels: np.ndarray  # (n,) sample labels
    phase_index: np.ndarray  # (n,)
    first: int


# MuJoCo state vectors logged at each recording instant.
_LOGGED = ("t", "qpos", "qvel", "xfrc", "qacc", "qfrc_actuator", "sensordata")


class _Runner:
    """Steps one MuJoCo model through the excitation phases, planning each phase as it begins,
    and records the raw state at every recording instant."""

    def __init__(self, scenario: GroundTeamScenario, model: mujoco.MjModel, seed: int):
        self.scenario, self.model, self.data = scenario, model, mujoco.MjData(model)
        self.seed = seed
        m = model
        robots = scenario.robots
        self.qadr = np.array([[m.joint(j).qposadr[0] for j in r.joint_names] for r in robots])
        self.dadr = np.array([[m.joint(j).dofadr[0] for j in r.joint_names] for r in robots])
        self.sensor = {
            kind: np.array([m.sensor(f"{r.robot_id}/{kind}").adr[0] for r in robots])
            for kind in ("torque", "force", "gyro", "accel")
        }
        self.payload = m.body("payload").id
        self.payload_q = m.joint("payload").qposadr[0]
        self.payload_v = m.joint("payload").dofadr[0]
        self.com_P = m.body_ipos[self.payload].copy()
        self.payload_mass = float(m.body_mass[self.payload])
        self.payload_inertia = float(m.body_inertia[self.payload].max())
        # Per actuator: its robot, whether it moves a slide, and its joint's qpos address.
        self.act_robot, self.act_linear, self.act_qadr, self.act_dof = [], [], [], []
        for k, robot in enumerate(robots):
            for j, (actuated, linear) in enumerate(zip(robot.actuated, LINEAR, strict=True)):
                if actuated:
                    self.act_robot.append(k)
                    self.act_linear.append(linear)
                    self.act_qadr.append(self.qadr[k, j])
                    self.act_dof.append(j)
        self.act_robot = np.array(self.act_robot)
        self.act_linear = np.array(self.act_linear)
        self.act_qadr = np.array(self.act_qadr)
        self.act_dof = np.array(self.act_dof)
        self._warm_up()
        homes = scenario.home_frames()
        self.T_w_i0 = [homes[r.robot_id] for r in robots]
        self.T_w_i = [scenario.T_w_i_start(r) for r in robots]
        P = scenario.T_w_P0
        self.context = PlanContext(
            timestep=scenario.physics.timestep,
            robots=tuple(r.robot_id for r in robots),
            T_w_P0=P,
            p_w_grasp={r.robot_id: T[:3, 3] for r, T in zip(robots, self.T_w_i, strict=True)},
            p_w_com=P[:3, :3] @ self.com_P + P[:3, 3],
        )
        self.every = math.gcd(
            *(check_rate(r.sensors.rate_hz, m.opt.timestep, "") for r in scenario.robots)
        )
        self.start_time = float(self.data.time)
        self.phases: list[Phase] = []
        self.records = 0  # recording instants so far
        self.steps = 0  # physics steps since the first phase began
        self.finished = False
        self.physics_wall_time = 0.0
        self.kp = m.actuator_gainprm[:, 0].copy()
        self.followed = np.zeros(len(self.act_robot), dtype=bool)  # actuators under command
        self.follow_ctrl = np.zeros(len(self.act_robot))
        self._person_state: tuple | None = None
        self._begin_phase(0)

    def _warm_up(self) -> None:
        """Start at the keyframe and let the robots take the payload's weight.

        The robots hold their start set-points with stiff gains for ``WARM_UP`` seconds (not
        recorded), so the first phase starts from rest instead of a dropped payload; the
        recording starts at t = WARM_UP, which keeps every robot clock positive."""
        m, d = self.model, self.data
        mujoco.mj_resetDataKeyframe(m, d, m.key("start").id)
        d.ctrl[:] = d.qpos[self.act_qadr]
        for _ in range(int(round(WARM_UP / m.opt.timestep))):
            mujoco.mj_step(m, d)
        mujoco.mj_forward(m, d)

    def _set_gains(self, plan: PhasePlan) -> np.ndarray:
        """Set every actuator's (kp, kv) for a phase; returns the kp."""
        robots = self.scenario.robots
        kp = np.zeros(len(self.act_robot))
        for a, (k, linear) in enumerate(zip(self.act_robot, self.act_linear, strict=True)):
            robot = robots[k]
            gains = robot.compliant if plan.guide is not None else robot.stiff
            p, v = gains.translation if linear else gains.rotation
            if not linear and robot.robot_id in plan.passive_wrists:
                p, v = 0.0, robot.compliant.rotation[1]
            self.model.actuator_gainprm[a, 0] = p
            self.model.actuator_biasprm[a, 1:3] = (-p, -v)
            kp[a] = p
        return kp

    def _setpoints(self, plan: PhasePlan) -> np.ndarray:
        """(K, n_actuators) joint set-points tracking the plan's payload displacement."""
        ctrl = np.empty((plan.steps, len(self.act_robot)))
        for k, robot in enumerate(self.scenario.robots):
            T_i0_i = inverse(self.T_w_i0[k]) @ plan.D_w @ self.T_w_i[k]
            q = joint_positions(T_i0_i, robot.wrist_offset)
            mine = self.act_robot == k
            ctrl[:, mine] = q[:, self.act_dof[mine]]
        return ctrl

    def _blend(
        self, plan: PhasePlan, ctrl: np.ndarray, kp_old: np.ndarray, kp_new: np.ndarray
    ) -> None:
        """Start from set-points that keep every actuator's force, then blend into the plan.

        A guided phase keeps those set-points throughout (float mode: each robot holds its
        share of the weight and yields to the human through its soft spring)."""
        q = self.data.qpos[self.act_qadr]
        ratio = np.divide(kp_old, kp_new, out=np.zeros_like(kp_new), where=kp_new > 0)
        start = q + ratio * (self.data.ctrl - q)
        if plan.guide is not None:
            ctrl[:] = start
        elif plan.settle_steps:
            s = smoothstep(np.arange(plan.settle_steps) / plan.settle_steps)[:, None]
            ctrl[: plan.settle_steps] = start + s * (ctrl[: plan.settle_steps] - start)

    def _human_guide_targets(self, plan: PhasePlan) -> tuple[np.ndarray, np.ndarray]:
        """Target CoM positions (K, 3) and payload orientations (K, 4, w first) of a guide."""
        P = self.scenario.T_w_P0
        T = plan.D_w @ P
        c = T[:, :3, :3] @ self.com_P + T[:, :3, 3]
        return c, wxyz_from_matrix(T[:, :3, :3])

    def _begin_phase(self, index: int) -> None:
        """Plan excitation program ``index`` and blend the robots into it from where they are."""
        rng = np.random.default_rng([self.seed, 10_000 + index])
        plan = self.scenario.excitation[index].plan(self.context, rng)
        kp_new = self._set_gains(plan)
        self.ctrl = self._setpoints(plan)
        self._blend(plan, self.ctrl, self.kp, kp_new)
        self.kp = kp_new
        self.targets = self._human_guide_targets(plan) if plan.guide else None
        self.plan, self.phase, self.k = plan, index, 0
        self._person_state = None
        start = float(self.data.time)
        end = start + plan.steps * self.model.opt.timestep
        self.phases.append(Phase(f"{index + 1}:{plan.program}", plan.program, start, end))

    def _end_phase(self) -> None:
        self.data.xfrc_applied[self.payload] = 0.0
        if self.phase + 1 < len(self.scenario.excitation):
            self._begin_phase(self.phase + 1)
        else:
            self.finished = True

    def record_until(
        self, until: float, progress: Callable[[float], None] | None = None
    ) -> _Recording:
        """Step up to simulation time ``until`` (or the run's end); the states recorded on the
        way, at every instant t <= until."""
        m, d = self.model, self.data
        log = {key: [] for key in _LOGGED}
        labels, phase_index = [], []
        first = self.records
        limit = until + 0.5 * m.opt.timestep
        started = time.perf_counter()
        while not self.finished and d.time < limit:
            self._step_phase(limit, log, labels, phase_index, progress)
        self.physics_wall_time += time.perf_counter() - started
        diverged = d.warning[int(mujoco.mjtWarning.mjWARN_BADQACC)].number
        if diverged:
            raise SimulationError(
                f"{self.scenario.name}: the simulation diverged {diverged} times (MuJoCo reset "
                "it): lower the gains or the human-guide bandwidth, or shorten physics.timestep"
            )
        if progress is not None and self.finished:
            progress(1.0)
        return self._unpack(log, labels, phase_index, first)

    def _step_phase(
        self,
        limit: float,
        log: dict,
        labels: list[str],
        phase_index: list[int],
        progress: Callable[[float], None] | None,
    ) -> None:
        """Step the current phase until its end or time ``limit``, logging each recording
        instant (the hot loop: locals only)."""
        m, d, plan, ctrl, targets = self.model, self.data, self.plan, self.ctrl, self.targets
        k, steps, every, payload = self.k, self.steps, self.every, self.payload
        report = max(int(self.scenario.duration / m.opt.timestep) // 200, 1)
        recorded = len(labels)
        followed = self.followed if plan.follows_commands else np.zeros_like(self.followed)
        follow_ctrl = self.follow_ctrl
        while k < plan.steps and d.time < limit:
            d.ctrl[:] = ctrl[k]
            d.ctrl[followed] = follow_ctrl[followed]
            if targets is not None:
                self._apply_guide(plan, targets, k)
            if plan.person is not None and k >= plan.settle_steps:
                self._apply_person(plan, k)
            if steps % every:
                mujoco.mj_step(m, d)
            else:
                log["t"].append(d.time)
                log["qpos"].append(d.qpos.copy())
                log["qvel"].append(d.qvel.copy())
                log["xfrc"].append(d.xfrc_applied[payload].copy())
                labels.append(plan.labels[k])
                phase_index.append(self.phase)
                mujoco.mj_step(m, d)
                # After mj_step, qacc, efforts and sensordata still describe the pre-step state.
                log["qacc"].append(d.qacc.copy())
                log["qfrc_actuator"].append(d.qfrc_actuator.copy())
                log["sensordata"].append(d.sensordata.copy())
            k += 1
            steps += 1
            if progress is not None and steps % report == 0:
                progress(min(steps * m.opt.timestep / self.scenario.duration, 1.0))
        self.records += len(labels) - recorded
        self.k, self.steps = k, steps
        if k == plan.steps:
            self._end_phase()

    def _unpack(
        self, log: dict, labels: list[str], phase_index: list[int], first: int
    ) -> _Recording:
        """Per-robot arrays out of the logged MuJoCo state vectors."""
        m, s = self.model, self.sensor
        width = {"t": (), "qpos": (m.nq,), "qvel": (m.nv,), "xfrc": (6,), "qacc": (m.nv,)}
        width |= {"qfrc_actuator": (m.nv,), "sensordata": (m.nsensordata,)}
        a = {key: np.reshape(np.array(log[key], dtype=float), (-1, *width[key])) for key in log}
        qpos = a["qpos"]
        T_w_P = np.tile(np.eye(4), (len(qpos), 1, 1))
        if len(qpos):
            quat = qpos[:, self.payload_q + 3 : self.payload_q + 7]
            T_w_P[:, :3, :3] = matrix_from_wxyz(quat)
            T_w_P[:, :3, 3] = qpos[:, self.payload_q : self.payload_q + 3]

        def sensor(kind: str) -> np.ndarray:
            return a["sensordata"][:, s[kind][:, None] + np.arange(3)]

        return _Recording(
            t=a["t"],
            q=qpos[:, self.qadr],
            dq=a["qvel"][:, self.dadr],
            ddq=a["qacc"][:, self.dadr],
            tau=a["qfrc_actuator"][:, self.dadr],
            ft=np.concatenate([sensor("torque"), sensor("force")], axis=2),
            gyro=sensor("gyro"),
            accel=sensor("accel"),
            T_w_P=T_w_P,
            p_w_com=T_w_P[:, :3, :3] @ self.com_P + T_w_P[:, :3, 3],
            F_human_w=np.hstack([a["xfrc"][:, 3:], a["xfrc"][:, :3]]),
            labels=np.array(labels, dtype=str),
            phase_index=np.array(phase_index, dtype=int),
            first=first,
        )

    def follow(self, index: int, T_w_i: np.ndarray, F_i: np.ndarray) -> None:
        """Robot ``index`` follows a command from now on (in phases that follow commands): its
        grasp pose T_w_i (inverse kinematics) and the wrench F_i (moment, force) to apply on
        the payload in {i}: its slides' set-points are offset by the force over their
        stiffness, so that the PD applies that force at rest (gimbal wrists pass no moment)."""
        robot = self.scenario.robots[index]
        T_i0_i = inverse(self.T_w_i0[index]) @ T_w_i
        q = joint_positions(T_i0_i, robot.wrist_offset)[0]
        mine = self.act_robot == index
        kp = np.where(self.kp[mine] > 0, self.kp[mine], np.inf)
        force = np.zeros(6)
        force[:3] = T_i0_i[:3, :3] @ F_i[3:]
        self.follow_ctrl[mine] = q[self.act_dof[mine]] + force[self.act_dof[mine]] / kp
        self.followed[mine] = True

    def _apply_person(self, plan: PhasePlan, k: int) -> None:
        """The person's spring-damper wrench on the payload (world axes, about the CoM)."""
        d = self.data
        T_w_P = transform(d.xmat[self.payload].reshape(3, 3), d.xpos[self.payload])
        t = (k - plan.settle_steps) * self.model.opt.timestep
        wrench, _, _, self._person_state = plan.person.wrench(
            t, T_w_P, d.xipos[self.payload], self._person_state
        )
        d.xfrc_applied[self.payload] = np.r_[wrench[3:], wrench[:3]]

    def _apply_guide(self, plan: PhasePlan, targets: tuple, k: int) -> None:
        """The human's spring-damper wrench on the payload CoM (world axes), now."""
        d = self.data
        w = 2.0 * np.pi * plan.guide.bandwidth_hz
        zeta = plan.guide.damping_ratio
        kt, dt_ = self.payload_mass * w**2, 2.0 * zeta * self.payload_mass * w
        kr, dr = self.payload_inertia * w**2, 2.0 * zeta * self.payload_inertia * w
        quat = d.qpos[self.payload_q + 3 : self.payload_q + 7]
        R = np.empty(9)
        mujoco.mju_quat2Mat(R, quat)
        R = R.reshape(3, 3)
        r_com = R @ self.com_P
        c = d.qpos[self.payload_q : self.payload_q + 3] + r_com
        omega = R @ d.qvel[self.payload_v + 3 : self.payload_v + 6]
        v_c = d.qvel[self.payload_v : self.payload_v + 3] + _cross(omega, r_com)
        error = np.empty(3)
        mujoco.mju_subQuat(error, targets[1][k], quat)
        d.xfrc_applied[self.payload, :3] = kt * (targets[0][k] - c) - dt_ * v_c
        d.xfrc_applied[self.payload, 3:] = kr * (R @ error) - dr * omega


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a x b for two 3-vectors (numpy.cross costs ten times more per call)."""
    return np.array(
        [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
    )


def _grasp_series(
    kin: RobotKinematics,
    robot_id: str,
    t: np.ndarray,
    joints: tuple[np.ndarray, np.ndarray, np.ndarray],
    F_i: np.ndarray,
    g_i0: np.ndarray,
    has_torque: bool,
    meta: dict,
) -> GraspSeries:
    """Grasp pose, body twist and its derivative at joint states (q, dq, ddq), by Pinocchio on
    the robot's URDF, with the wrench F_i and gravity g_i0 (in {i0}) turned into {i}."""
    out = [kin.evaluate(*x) for x in zip(*joints, strict=True)]
    T = np.reshape([o.T_i0_i for o in out], (-1, 4, 4))
    return GraspSeries(
        robot_id=robot_id,
        t=t,
        T_i0_i=T,
        V_i=np.reshape([o.V_i for o in out], (-1, 6)),
        dV_i=np.reshape([o.dV_i for o in out], (-1, 6)),
        F_i=F_i,
        g_i=np.einsum("kji,j->ki", T[:, :3, :3], g_i0),
        has_force=True,
        has_torque=has_torque,
        meta=meta,
    )


def _velocity_derivative(t: np.ndarray, v: np.ndarray) -> np.ndarray:
    """dv/dt at every sample: central differences inside, one-sided at both ends (as
    ``numpy.gradient``); zero for a single sample."""
    out = np.zeros_like(v)
    if len(t) >= 2:
        out[0] = (v[1] - v[0]) / (t[1] - t[0])
        out[-1] = (v[-1] - v[-2]) / (t[-1] - t[-2])
        out[1:-1] = three_point_derivative(t, v)
    return out


class _RobotChannel:
    """One robot's sensors, clock and kinematics, applied to each recorded chunk.

    The raw streams of a chunk come out at once. Each measured grasp sample waits for the next
    one: its joint accelerations are central differences of the measured velocities (paper 000,
    Sec. IV-B), one-sided at the run's two ends."""

    def __init__(
        self,
        scenario: GroundTeamScenario,
        robot: RobotSpec,
        index: int,
        model: mujoco.MjModel,
        seed: int,
        every: int,
    ):
        self.robot, self.index = robot, index
        rid = robot.robot_id
        self.ratio = check_rate(robot.sensors.rate_hz, scenario.physics.timestep, rid) // every
        self.urdf = scenario.urdf(model, rid)
        self.kin = RobotKinematics(self.urdf, robot.grasp_frame, compensate_robot_dynamics=True)
        R_w_i0 = body_pose_in_parent(model, robot.home_frame)[:3, :3]
        self.g_i0 = R_w_i0.T @ np.asarray(scenario.physics.gravity)
        self.kin.model.gravity.linear = self.g_i0
        self.sensors = RobotSensors(robot.sensors, LINEAR, seed, index)
        self.has_torque = robot.kind == "wrist_6dof"
        self.joint_torque = robot.sensors.wrench.source == "joint_torque"
        self.held: dict[str, np.ndarray] | None = None  # measured samples not out yet
        self.last: tuple[float, np.ndarray] | None = None  # (stamp, dq) of the last one out

    def process(self, rec: _Recording, final: bool) -> tuple[RobotRecord, GraspSeries]:
        """This robot's record of a chunk (``final``: the run ends with it) and its noise-free
        grasp series."""
        robot, k, sensors = self.robot, self.index, self.sensors
        rid = robot.robot_id
        sel = np.flatnonzero((rec.first + np.arange(len(rec.t))) % self.ratio == 0)
        t, q, dq, ddq = rec.t[sel], rec.q[sel, k], rec.dq[sel, k], rec.ddq[sel, k]
        tau, ft = rec.tau[sel, k], rec.ft[sel, k]
        labels, phase_index = rec.labels[sel], rec.phase_index[sel]
        meta = {"phase": labels, "phase_index": phase_index}
        truth = _grasp_series(self.kin, rid, t, (q, dq, ddq), ft, self.g_i0, True, meta)

        kept = sensors.kept(len(t))
        t_m = t[kept]
        stamp = sensors.stamps(t_m)
        q_m, dq_m = sensors.joints(q[kept], dq[kept])
        if self.joint_torque:
            tau_m = sensors.wrench(tau[kept])
            tau_m[:, ~robot.actuated] = 0.0
            F_m = np.full((len(t_m), 6), np.nan)  # from the efforts, once ddq is known
            wrench = None
        else:
            tau_m = tau[kept]
            F_m = sensors.wrench(ft[kept])
            wrench = WrenchStream(robot.grasp_frame, -F_m)
        imu = None
        if robot.sensors.imu.enabled:
            gyro, accel = sensors.imu(rec.gyro[sel, k][kept], rec.accel[sel, k][kept])
            imu = ImuStream(robot.grasp_frame, gyro, accel)
        new = {"time": t_m, "stamp": stamp, "q": q_m, "dq": dq_m, "tau": tau_m, "F": F_m}
        new |= {"phase": labels[kept], "phase_index": phase_index[kept]}
        record = RobotRecord(
            robot_id=rid,
            kind=robot.kind,
            home_frame_id=robot.home_frame,
            grasp_frame_id=robot.grasp_frame,
            time=t_m,
            stamp=stamp,
            grasp=self._measured(new, final),
            joints=JointStream(robot.joint_names, q_m, dq_m, tau_m),
            wrench=wrench,
            imu=imu,
            urdf=self.urdf,
            sensor_errors=sensors.errors(),
        )
        return record, truth

    def _measured(self, new: dict[str, np.ndarray], final: bool) -> GraspSeries:
        """The measured grasp samples whose neighbours are known (all of them when ``final``)."""
        held = (
            new if self.held is None else {k: np.concatenate([self.held[k], new[k]]) for k in new}
        )
        count = len(held["stamp"]) if final else max(len(held["stamp"]) - 1, 0)
        out = {key: value[:count] for key, value in held.items()}
        self.held = {key: value[count:] for key, value in held.items()}
        before = [] if self.last is None else [self.last]
        t = np.concatenate([[b[0] for b in before], held["stamp"]])
        dq = np.concatenate([np.reshape([b[1] for b in before], (-1, 6)), held["dq"]])
        ddq = _velocity_derivative(t, dq)[len(before) : len(before) + count]
        if count:
            self.last = (out["stamp"][-1], out["dq"][-1])
        F = out["F"]
        if self.joint_torque:
            joints = zip(out["q"], out["dq"], ddq, out["tau"], strict=True)
            F = np.reshape([self.kin.applied_wrench(*x) for x in joints], (-1, 6))
        if not self.has_torque:
            F = F.copy()
            F[:, :3] = np.nan
        meta = {"phase": out["phase"], "phase_index": out["phase_index"], "time": out["time"]}
        joints = (out["q"], out["dq"], ddq)
        rid = self.robot.robot_id
        return _grasp_series(
            self.kin, rid, out["stamp"], joints, F, self.g_i0, self.has_torque, meta
        )


class GroundTeamStepper:
    """A ground-team run that advances on demand: the engine of ``run`` and of the simulation
    node.

    ``advance(until)`` steps the physics up to simulation time ``until`` and returns what was
    recorded meanwhile, as a ``SimulationResult`` of those samples only. Raw streams and ground
    truth come out at once; each robot's measured ``GraspSeries`` lags one sample behind (see
    ``_RobotChannel``), and the chunk that ends the run holds the rest. ``run`` is one
    ``advance`` to the end, so a run advanced in any chunks gives the same samples."""

    def __init__(self, scenario: GroundTeamScenario, seed: int | None = None):
        self.scenario = scenario
        self.seed = scenario.seed if seed is None else seed
        self.model = scenario.compile()
        self._runner = _Runner(scenario, self.model, self.seed)
        self._robots = [
            _RobotChannel(scenario, robot, index, self.model, self.seed, self._runner.every)
            for index, robot in enumerate(scenario.robots)
        ]
        self._truth = self._truth_constants()

    @property
    def time(self) -> float:
        """The simulation time reached [s]."""
        return float(self._runner.data.time)

    @property
    def start_time(self) -> float:
        """Simulation time of the first recorded instant [s] (after the warm-up)."""
        return self._runner.start_time

    @property
    def done(self) -> bool:
        """Every phase has run and every sample has come out."""
        return self._runner.finished

    @property
    def sample_period(self) -> float:
        """Simulation time between recording instants [s] (the fastest robot's period)."""
        return self._runner.every * self.scenario.physics.timestep

    def command(self, robot_id: str, T_w_i: np.ndarray, F_i: np.ndarray) -> None:
        """Robot ``robot_id`` follows this command from the next physics step on (in phases
        that follow commands, ``collaborate``; the others play the protocol): its grasp
        pose T_w_i in the world and the wrench F_i (moment, force) it applies on the payload,
        in {i} (a hardware driver's impedance target, ``core.collaboration.following``)."""
        ids = [r.robot_id for r in self.scenario.robots]
        if robot_id not in ids:
            raise ValueError(f"no robot {robot_id!r} in this scenario (robots: {ids})")
        self._runner.follow(ids.index(robot_id), T_w_i, np.asarray(F_i, dtype=float))

    def urdfs(self) -> dict[str, str]:
        """Every robot's URDF (its ``robot_description``)."""
        return {channel.robot.robot_id: channel.urdf for channel in self._robots}

    def advance(
        self, until: float = math.inf, progress: Callable[[float], None] | None = None
    ) -> SimulationResult:
        """Simulate up to time ``until`` (default: the end); the samples recorded meanwhile."""
        rec = self._runner.record_until(until, progress)
        final = self._runner.finished
        robots, truth = {}, {}
        for channel in self._robots:
            rid = channel.robot.robot_id
            robots[rid], truth[rid] = channel.process(rec, final)
        return SimulationResult(
            scenario_name=self.scenario.name,
            scenario_type=self.scenario.type_name,
            seed=self.seed,
            timestep=self.scenario.physics.timestep,
            robots=robots,
            ground_truth=self._ground_truth(rec, truth),
            phases=list(self._runner.phases),
            physics_wall_time=self._runner.physics_wall_time,
        )

    def _truth_constants(self) -> dict:
        model, scenario = self.model, self.scenario
        ref = scenario.reference_robot
        self._T_P_s = site_pose_in_body(model, f"payload/{ref}")
        T_s_P = inverse(self._T_P_s)
        return {
            "reference_robot": ref,
            "payload": body_inertial_parameters(model, "payload").transformed(T_s_P),
            "T_s_i": {
                r.robot_id: T_s_P @ site_pose_in_body(model, f"payload/{r.robot_id}")
                for r in scenario.robots
            },
            "T_w_i0": {
                r.robot_id: body_pose_in_parent(model, r.home_frame) for r in scenario.robots
            },
            "clock_offsets": {r.robot_id: r.sensors.clock.offset for r in scenario.robots},
            "gravity_w": np.array(scenario.physics.gravity),
        }

    def _ground_truth(self, rec: _Recording, grasps: dict[str, GraspSeries]) -> GroundTruth:
        T_w_s = rec.T_w_P @ self._T_P_s
        F_human_s = np.reshape(
            [
                wrench_to(inverse(transform(np.eye(3), c)) @ T, F)
                for c, T, F in zip(rec.p_w_com, T_w_s, rec.F_human_w, strict=True)
            ],
            (-1, 6),
        )
        return GroundTruth(
            **self._truth, grasps=grasps, time=rec.t, T_w_s=T_w_s, F_human_s=F_human_s
        )
