"""Scenarios: YAML loading with validation, a registry keyed by ``type``, and the result types.

A scenario file is a YAML mapping with a ``type`` (``ground_team``; later
``aerial_cable_team``, ``tray_balancing``) and the keys that type defines. An
optional ``include: other.yaml`` (relative to the including file) is merged
recursively first, so small test scenarios can override a preset.

Every scenario type is a class registered with ``@scenario_type("name")`` that has
``from_config(section)``, ``run(seed, progress) -> SimulationResult`` and
``stepper(seed) -> Stepper`` (the same run, advanced on demand, for the simulation node). The result
types below are shared by all types: per robot, the measured ``GraspSeries`` and
the raw sensor streams a hardware driver would publish; and the ground truth, taken
from the simulator's compiled model. A new scenario type adds a module, one entry in
``_BUILTIN_TYPES`` and, if its robots have new kinds of sensors, an optional
stream field on ``RobotRecord``.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from scipy.spatial.transform import Rotation

from ..core.inertial import InertialParameters
from ..core.samples import GraspSeries
from ..core.spatial import transform
from .scenario_file import ScenarioError, read_scenario_yaml

# Scenario types shipped with the package: type name -> module that registers it.
_BUILTIN_TYPES = {
    "ground_team": "inertia_estimation_ros.sim.ground_team",
    "aerial_cable_team": "inertia_estimation_ros.sim.aerial.scenario",
    "tray_balancing": "inertia_estimation_ros.sim.tray_balancing",
}
_REGISTRY: dict[str, type] = {}
_REQUIRED = object()


# ----- reading YAML with validation -------------------------------------------------------
class Section:
    """One YAML mapping being read. Every getter validates; ``done()`` rejects unknown keys."""

    def __init__(self, data: Any, path: str):
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{path}: expected a mapping, got {type(data).__name__}")
        self.data, self.path, self._read = dict(data), path, set()

    def has(self, key: str) -> bool:
        return key in self.data

    def _get(self, key: str, default: Any) -> Any:
        self._read.add(key)
        if key in self.data and self.data[key] is not None:
            return self.data[key]
        if default is _REQUIRED:
            raise ScenarioError(f"{self.path}.{key}: missing (required)")
        return default

    def number(
        self,
        key: str,
        default: Any = _REQUIRED,
        *,
        low: float | None = None,
        high: float | None = None,
        positive: bool = False,
    ) -> float | None:
        """A finite float, optionally bounded (low <= x <= high; positive: x > 0).

        With ``default=None`` a missing key gives None."""
        value = self._get(key, default)
        if value is None:
            return None
        where = f"{self.path}.{key}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ScenarioError(f"{where}: expected a number, got {value!r}")
        value = float(value)
        if not math.isfinite(value):
            raise ScenarioError(f"{where}: must be finite, got {value}")
        if positive and value <= 0:
            raise ScenarioError(f"{where}: must be > 0, got {value}")
        if low is not None and value < low:
            raise ScenarioError(f"{where}: must be >= {low}, got {value}")
        if high is not None and value > high:
            raise ScenarioError(f"{where}: must be <= {high}, got {value}")
        return value

    def integer(self, key: str, default: Any = _REQUIRED, *, low: int | None = None) -> int:
        value = self._get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{self.path}.{key}: expected an integer, got {value!r}")
        if low is not None and value < low:
            raise ScenarioError(f"{self.path}.{key}: must be >= {low}, got {value}")
        return value

    def boolean(self, key: str, default: Any = _REQUIRED) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise ScenarioError(f"{self.path}.{key}: expected true or false, got {value!r}")
        return value

    def string(self, key: str, default: Any = _REQUIRED, choices: tuple[str, ...] = ()) -> str:
        value = self._get(key, default)
        if not isinstance(value, str) or not value:
            raise ScenarioError(f"{self.path}.{key}: expected a non-empty string, got {value!r}")
        if choices and value not in choices:
            raise ScenarioError(f"{self.path}.{key}: {value!r} is not one of {list(choices)}")
        return value

    def vector(self, key: str, size: int, default: Any = _REQUIRED) -> np.ndarray:
        """A list of ``size`` finite numbers."""
        value = self._get(key, default)
        where = f"{self.path}.{key}"
        try:
            out = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ScenarioError(f"{where}: expected {size} numbers, got {value!r}") from None
        if out.shape != (size,):
            raise ScenarioError(f"{where}: expected {size} numbers, got {value!r}")
        if not np.all(np.isfinite(out)):
            raise ScenarioError(f"{where}: must be finite, got {value!r}")
        return out

    def items(self, key: str, default: Any = _REQUIRED) -> list[Any]:
        value = self._get(key, default)
        if not isinstance(value, list):
            raise ScenarioError(f"{self.path}.{key}: expected a list, got {value!r}")
        return value

    def section(self, key: str, default: Any = _REQUIRED) -> Section:
        return Section(self._get(key, default), f"{self.path}.{key}")

    def pose(self, key: str, default: Any = _REQUIRED) -> np.ndarray:
        """A 4x4 pose: ``{xyz: [..], rotvec_deg | rpy_deg: [..]}``."""
        return read_pose(self._get(key, default), f"{self.path}.{key}")

    def done(self) -> None:
        """Raise if the mapping has keys nobody read (usually a typo)."""
        unknown = sorted(set(self.data) - self._read)
        if unknown:
            raise ScenarioError(
                f"{self.path}: unknown keys {unknown}; allowed here: {sorted(self._read)}"
            )


def read_pose(data: Any, path: str) -> np.ndarray:
    """T (4x4) from ``{xyz, rotvec_deg}`` (axis-angle in degrees, paper 000's Table I form)
    or ``{xyz, rpy_deg}`` (fixed-axis roll, pitch, yaw as in URDF/SDF); missing parts are zero."""
    section = Section(data if data is not None else {}, path)
    xyz = section.vector("xyz", 3, [0.0, 0.0, 0.0])
    if section.has("rotvec_deg") and section.has("rpy_deg"):
        raise ScenarioError(f"{path}: give rotvec_deg or rpy_deg, not both")
    if section.has("rpy_deg"):
        R = Rotation.from_euler("xyz", section.vector("rpy_deg", 3), degrees=True).as_matrix()
    else:
        R = Rotation.from_rotvec(
            np.deg2rad(section.vector("rotvec_deg", 3, [0.0, 0.0, 0.0]))
        ).as_matrix()
    section.done()
    return transform(R, xyz)


def pose_to_yaml(T: np.ndarray) -> dict[str, list[float]]:
    """The ``{xyz, rotvec_deg}`` form of a pose, the inverse of ``read_pose``."""
    rotvec = np.rad2deg(Rotation.from_matrix(T[:3, :3]).as_rotvec())
    return {"xyz": [float(x) for x in T[:3, 3]], "rotvec_deg": [float(x) for x in rotvec]}


# ----- the registry -------------------------------------------------------------------------
class Stepper(Protocol):
    """A run that advances on demand (``Scenario.stepper``): what the simulation node drives.

    ``advance(until)`` simulates up to time ``until`` and returns the samples recorded
    meanwhile as a ``SimulationResult`` of those samples only; chunks concatenated in order
    equal ``Scenario.run``'s result."""

    start_time: float  # simulation time of the first recorded instant [s]
    time: float  # simulation time reached [s]
    sample_period: float  # simulation time between recording instants [s]
    done: bool

    def advance(
        self, until: float = math.inf, progress: Callable[[float], None] | None = None
    ) -> SimulationResult: ...

    def urdfs(self) -> dict[str, str]: ...


class Scenario(Protocol):
    """What every scenario type provides."""

    name: str
    seed: int

    def run(
        self, seed: int | None = None, progress: Callable[[float], None] | None = None
    ) -> SimulationResult: ...

    def stepper(self, seed: int | None = None) -> Stepper: ...


def scenario_type(name: str) -> Callable[[type], type]:
    """Class decorator: register a scenario type under its YAML ``type`` name."""

    def register(cls: type) -> type:
        cls.type_name = name
        _REGISTRY[name] = cls
        return cls

    return register


def scenario_types() -> list[str]:
    """Every known scenario type name."""
    return sorted(set(_REGISTRY) | set(_BUILTIN_TYPES))


def _scenario_class(name: str) -> type:
    if name not in _REGISTRY and name in _BUILTIN_TYPES:
        importlib.import_module(_BUILTIN_TYPES[name])
    if name not in _REGISTRY:
        raise ScenarioError(f"scenario type {name!r} is unknown; known types: {scenario_types()}")
    return _REGISTRY[name]


def load_scenario(source: str | Path | Mapping) -> Scenario:
    """A scenario object from a YAML file path or an already-parsed mapping."""
    if isinstance(source, Mapping):
        data, where = dict(source), "scenario"
    else:
        data, where = read_scenario_yaml(source), str(source)
    section = Section(data, where)
    cls = _scenario_class(section.string("type"))
    return cls.from_config(section)


def run_scenario(
    scenario: Scenario | str | Path | Mapping,
    seed: int | None = None,
    progress: Callable[[float], None] | None = None,
) -> SimulationResult:
    """Run a scenario (object, YAML path or mapping); ``progress`` gets the simulated fraction."""
    if isinstance(scenario, (str, Path, Mapping)):
        scenario = load_scenario(scenario)
    return scenario.run(seed=seed, progress=progress)


# ----- results -------------------------------------------------------------------------------
@dataclass
class JointStream:
    """sensor_msgs/JointState content: measured positions, velocities and efforts (Q, n)."""

    names: list[str]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


@dataclass
class WrenchStream:
    """An F/T sensor's readings (Q, 6), moment first, in its frame ``frame_id``.

    Sign: the wrench the payload exerts ON the robot at the sensor (Gazebo's
    ``child_to_parent``), i.e. minus the wrench F_i the robot applies on the payload.
    """

    frame_id: str
    wrench: np.ndarray


@dataclass
class ImuStream:
    """A wrist IMU in ``frame_id``: angular velocity [rad/s] and specific force a - g [m/s^2]."""

    frame_id: str
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray


@dataclass
class RobotRecord:
    """One robot's output: samples on its own clock, as its driver would report them.

    ``stamp`` is the robot's clock (offset, drift, jitter), ``time`` the simulation time
    at which each kept sample was taken; dropped samples are absent from every stream.
    In a chunk of a ``Stepper``, ``grasp`` may lag the raw streams by a sample (its
    ``meta["time"]`` gives its samples' simulation times).
    """

    robot_id: str
    kind: str
    home_frame_id: str
    grasp_frame_id: str
    time: np.ndarray
    stamp: np.ndarray
    grasp: GraspSeries
    joints: JointStream | None = None
    wrench: WrenchStream | None = None
    imu: ImuStream | None = None
    urdf: str | None = None
    sensor_errors: dict[str, Any] = field(default_factory=dict)


@dataclass
class Phase:
    """One excitation phase: its program name and its span of simulation time [s]."""

    name: str
    program: str
    start: float
    end: float


@dataclass
class GroundTruth:
    """Everything an evaluation compares against, from the simulator's compiled model.

    ``payload``: inertial parameters in {s}, the reference robot's grasp frame.
    ``T_s_i``: every grasp frame in {s}. ``grasps``: noise-free grasp signals at the
    true sample times. ``T_w_s``/``F_human_s``: the pose of {s} in the world and the
    human's wrench on the payload (about {s}'s origin, in {s}) on the ``time`` grid.
    """

    reference_robot: str
    payload: InertialParameters
    T_s_i: dict[str, np.ndarray]
    T_w_i0: dict[str, np.ndarray]
    clock_offsets: dict[str, float]
    grasps: dict[str, GraspSeries]
    time: np.ndarray
    T_w_s: np.ndarray
    F_human_s: np.ndarray
    gravity_w: np.ndarray


@dataclass
class SimulationResult:
    """What ``run_scenario`` returns."""

    scenario_name: str
    scenario_type: str
    seed: int
    timestep: float
    robots: dict[str, RobotRecord]
    ground_truth: GroundTruth
    phases: list[Phase]
    wall_time: float = 0.0
    physics_wall_time: float = 0.0

    @property
    def duration(self) -> float:
        """Simulated time [s] from the first phase's start to the last one's end."""
        return float(self.phases[-1].end - self.phases[0].start) if self.phases else 0.0

    def series(self) -> dict[str, GraspSeries]:
        """The measured GraspSeries of every robot."""
        return {rid: record.grasp for rid, record in self.robots.items()}

    def phase_samples(self, series: GraspSeries, *names: str) -> np.ndarray:
        """Indices of the samples of ``series`` whose phase label is one of ``names``."""
        return np.flatnonzero(np.isin(series.meta["phase"], names))

    def segments(self, label: str, truth: bool = False) -> list[dict[str, GraspSeries]]:
        """Every contiguous stretch of samples labelled ``label`` (e.g. each static hold), as
        one dict of GraspSeries per stretch: measured (default) or noise-free (``truth``)."""
        labels = self.ground_truth.grasps[self.ground_truth.reference_robot].meta["phase"]
        times = self.ground_truth.grasps[self.ground_truth.reference_robot].t
        inside = np.flatnonzero(labels == label)
        runs = np.split(inside, np.flatnonzero(np.diff(inside) > 1) + 1) if len(inside) else []
        out = []
        for run in runs:
            start, end = times[run[0]], times[run[-1]]
            stretch = {}
            for rid, record in self.robots.items():
                series = self.ground_truth.grasps[rid] if truth else record.grasp
                when = series.t if truth else series.meta["time"]
                stretch[rid] = series.select((when >= start) & (when <= end))
            out.append(stretch)
        return out
