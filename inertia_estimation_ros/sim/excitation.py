"""Excitation programs: how the payload is moved during each phase of a scenario.

A program turns into a ``PhasePlan``: at every physics step, the desired rigid
displacement ``D_w`` of the payload (world frame; the payload's pose is
``D_w T_w_P0``), a label for the samples, and how the robots behave:

* ``human_guided``: a human drags the payload along a random, smooth 6-DoF path
  (each component a sum of 3 sines with random frequencies and phases, paper 000
  Sec. IV-A) through a spring-damper; the robots float (paper 000's float mode):
  each keeps the force it held when the phase began, plus a soft spring;
* ``static_holds``: the robots carry the payload to K orientations (about a pivot)
  and hold each still (paper 000 Sec. IV-B, four tilted holds);
* ``sphere``: one robot is locked (its translation stiff, its wrist passive) and the
  others move their grasps periodically on spheres about its wrist centre (paper 000
  Sec. IV-C);
* ``scripted``: the user's trajectory, from YAML waypoints or a Python function;
* ``collaborate``: the robots hold the payload, or follow the commands they are sent
  (``GroundTeamStepper.command``; only in this phase: the others are the protocol's), while
  a person pulls a handle along a path (``sim.person``; issue 14: a person moves the payload
  with the team).

Every plan starts with ``settle`` seconds at rest (label ``settle``), during which
the runner blends the robots' set-points from where the previous phase left them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.spatial.transform import Rotation

from .person import Person, smooth_path
from .scenario import ScenarioError, Section

PROGRAMS = ("human_guided", "static_holds", "sphere", "scripted", "collaborate")


@dataclass(frozen=True)
class PlanContext:
    """What programs may use: the physics step, the robots and the payload's home geometry."""

    timestep: float
    robots: tuple[str, ...]
    T_w_P0: np.ndarray  # the payload frame {P} at its home pose
    p_w_grasp: dict[str, np.ndarray]  # grasp origins in the world at the payload's home pose
    p_w_com: np.ndarray  # the payload CoM in the world at its home pose

    def pivot(self, p_P: tuple[float, float, float] | None) -> np.ndarray:
        """A pivot given in the payload frame {P}, in the world; None: the CoM."""
        if p_P is None:
            return self.p_w_com
        return self.T_w_P0[:3, :3] @ np.asarray(p_P, dtype=float) + self.T_w_P0[:3, 3]


@dataclass(frozen=True)
class HumanGuide:
    """A spring-damper pulling the payload's CoM frame to the planned pose (world frame),
    tuned on the payload: stiffness m w^2 and I w^2, damping 2 zeta m w and 2 zeta I w,
    w = 2 pi bandwidth, I the largest principal moment about the CoM."""

    bandwidth_hz: float
    damping_ratio: float


@dataclass
class PhasePlan:
    program: str
    D_w: np.ndarray  # (K, 4, 4) desired displacement at each physics step
    labels: np.ndarray  # (K,) sample labels
    settle_steps: int
    guide: HumanGuide | None = None  # None: the robots track D_w
    passive_wrists: tuple[str, ...] = ()  # robots whose wrist actuators are switched off
    person: Person | None = None  # a person pulling a handle (time from the end of the settle)
    follows_commands: bool = False  # robots follow the commands they are sent (else the plan)

    @property
    def steps(self) -> int:
        return len(self.D_w)


def displacement(rotvec: np.ndarray, translation: np.ndarray, pivot: np.ndarray) -> np.ndarray:
    """D (K, 4, 4): rotate by ``rotvec`` (K, 3) about the world point ``pivot``, then translate."""
    R = Rotation.from_rotvec(rotvec).as_matrix()
    D = np.tile(np.eye(4), (len(R), 1, 1))
    D[:, :3, :3] = R
    D[:, :3, 3] = pivot - R @ pivot + translation
    return D


def smoothstep(s: np.ndarray) -> np.ndarray:
    """Minimum-jerk ramp from 0 to 1 on s in [0, 1] (clipped outside)."""
    s = np.clip(s, 0.0, 1.0)
    return s**3 * (10.0 - 15.0 * s + 6.0 * s**2)


def multisine(
    rng: np.random.Generator,
    t: np.ndarray,
    components: int,
    band_hz: tuple[float, float],
    amplitude: float,
    ramp: float,
) -> np.ndarray:
    """(K, components): each a sum of 3 sines (random frequency in band, random phase),
    bounded by ``amplitude`` and faded in and out over ``ramp`` seconds."""
    freq = rng.uniform(*band_hz, size=(components, 3))
    phase = rng.uniform(0.0, 2.0 * np.pi, size=(components, 3))
    waves = np.sin(2.0 * np.pi * freq[None] * t[:, None, None] + phase[None]).sum(axis=2)
    window = smoothstep(t / ramp) * smoothstep((t[-1] - t) / ramp)
    return amplitude / 3.0 * waves * window[:, None]


def _settled(settle_steps: int, D_w: np.ndarray, labels: np.ndarray) -> tuple:
    """Prepend ``settle_steps`` of rest to a plan's displacement and labels."""
    rest = np.tile(np.eye(4), (settle_steps, 1, 1))
    return np.concatenate([rest, D_w]), np.concatenate([np.full(settle_steps, "settle"), labels])


@dataclass(frozen=True)
class HumanGuided:
    duration: float
    max_rotation_deg: float = 10.0
    max_translation: float = 0.05
    band_hz: tuple[float, float] = (0.2, 1.5)
    bandwidth_hz: float = 3.0
    damping_ratio: float = 0.7
    settle: float = 0.5
    name: str = "human_guided"

    def plan(self, context: PlanContext, rng: np.random.Generator) -> PhasePlan:
        t = _times(self.duration, context.timestep)
        ramp = min(1.0, self.duration / 4)
        rotvec = multisine(rng, t, 3, self.band_hz, np.deg2rad(self.max_rotation_deg), ramp)
        shift = multisine(rng, t, 3, self.band_hz, self.max_translation, ramp)
        D_w = displacement(rotvec, shift, context.p_w_com)
        settle = _steps(self.settle, context.timestep)
        D_w, labels = _settled(settle, D_w, np.full(len(t), self.name))
        guide = HumanGuide(self.bandwidth_hz, self.damping_ratio)
        return PhasePlan(self.name, D_w, labels, settle, guide)


@dataclass(frozen=True)
class StaticHolds:
    orientations_deg: tuple[tuple[float, float, float], ...]  # rotation vectors [deg]
    hold: float = 2.0
    transition: float = 1.5
    hold_settle: float = 0.5  # first part of each hold, labelled settle
    pivot: tuple[float, float, float] | None = None  # in {P}; default: the CoM
    settle: float = 0.5
    name: str = "static_holds"

    @property
    def duration(self) -> float:
        count = len(self.orientations_deg)
        return (count + 1) * self.transition + count * self.hold

    def plan(self, context: PlanContext, rng: np.random.Generator) -> PhasePlan:
        dt = context.timestep
        waypoints = [np.zeros(3), *np.deg2rad(np.asarray(self.orientations_deg)), np.zeros(3)]
        rotvecs, labels = [], []
        for k in range(len(waypoints) - 1):
            move = smoothstep(_times(self.transition, dt) / self.transition)[:, None]
            rotvecs.append(waypoints[k] + move * (waypoints[k + 1] - waypoints[k]))
            labels.append(np.full(len(move), "transition"))
            if k + 1 < len(waypoints) - 1:
                n_hold, n_settle = _steps(self.hold, dt), _steps(self.hold_settle, dt)
                rotvecs.append(np.tile(waypoints[k + 1], (n_hold, 1)))
                labels.append(np.where(np.arange(n_hold) < n_settle, "settle", "static"))
        rotvec = np.concatenate(rotvecs)
        pivot = context.pivot(self.pivot)
        D_w = displacement(rotvec, np.zeros_like(rotvec), pivot)
        settle = _steps(self.settle, dt)
        D_w, labels = _settled(settle, D_w, np.concatenate(labels))
        return PhasePlan(self.name, D_w, labels, settle)


@dataclass(frozen=True)
class Sphere:
    locked_robot: str
    duration: float
    max_rotation_deg: float = 10.0
    band_hz: tuple[float, float] = (0.3, 1.0)
    ramp: float = 2.0
    settle: float = 0.5
    name: str = "sphere"

    def plan(self, context: PlanContext, rng: np.random.Generator) -> PhasePlan:
        if self.locked_robot not in context.robots:
            raise ScenarioError(
                f"sphere: locked_robot {self.locked_robot!r} is not in the team "
                f"{list(context.robots)}"
            )
        t = _times(self.duration, context.timestep)
        amplitude = np.deg2rad(self.max_rotation_deg)
        rotvec = multisine(rng, t, 3, self.band_hz, amplitude, min(self.ramp, self.duration / 4))
        pivot = context.p_w_grasp[self.locked_robot]
        D_w = displacement(rotvec, np.zeros_like(rotvec), pivot)
        settle = _steps(self.settle, context.timestep)
        D_w, labels = _settled(settle, D_w, np.full(len(t), self.name))
        return PhasePlan(self.name, D_w, labels, settle, passive_wrists=(self.locked_robot,))


@dataclass(frozen=True)
class Scripted:
    """A user trajectory: ``motion(t)`` (K,) -> (K, 6) gives the rotation vector [rad] about
    ``pivot`` (a point in the payload frame {P}; default the CoM) and the translation [m]."""

    duration: float
    motion: Callable[[np.ndarray], np.ndarray]
    pivot: tuple[float, float, float] | None = None
    settle: float = 0.5
    name: str = "scripted"

    @classmethod
    def from_waypoints(
        cls,
        times: np.ndarray,
        rotvecs_deg: np.ndarray,
        translations: np.ndarray,
        pivot: tuple[float, float, float] | None = None,
        settle: float = 0.5,
    ) -> Scripted:
        """A cubic spline (zero end velocities) through displacement waypoints."""
        times = np.asarray(times, dtype=float)
        if times[0] != 0.0 or np.any(np.diff(times) <= 0):
            raise ScenarioError(
                f"scripted: waypoint times must start at 0 and increase, got {times.tolist()}"
            )
        values = np.hstack([np.deg2rad(rotvecs_deg), np.asarray(translations, dtype=float)])
        return cls(float(times[-1]), CubicSpline(times, values, bc_type="clamped"), pivot, settle)

    def plan(self, context: PlanContext, rng: np.random.Generator) -> PhasePlan:
        t = _times(self.duration, context.timestep)
        motion = np.asarray(self.motion(t), dtype=float)
        if motion.shape != (len(t), 6) or not np.all(np.isfinite(motion)):
            raise ScenarioError(
                f"scripted: motion(t) must return finite (K, 6) values, got shape {motion.shape}"
            )
        pivot = context.pivot(self.pivot)
        D_w = displacement(motion[:, :3], motion[:, 3:], pivot)
        settle = _steps(self.settle, context.timestep)
        D_w, labels = _settled(settle, D_w, np.full(len(t), self.name))
        return PhasePlan(self.name, D_w, labels, settle)


@dataclass(frozen=True)
class Collaborate:
    """The robots hold the payload at its home pose (or follow their commands) while a person
    pulls the handle ``handle_xyz`` (in {P}) along ``shift`` [m, world axes] and ``yaw_deg``
    about the world's z in ``path_time`` seconds (a smoothstep), then holds it there."""

    duration: float
    shift: tuple[float, float, float] = (0.3, 0.1, 0.0)
    yaw_deg: float = 15.0
    path_time: float = 2.5
    handle_xyz: tuple[float, float, float] = (0.45, 0.0, 0.02)
    settle: float = 0.5
    name: str = "collaborate"

    def plan(self, context: PlanContext, rng: np.random.Generator) -> PhasePlan:
        t = _times(self.duration, context.timestep)
        settle = _steps(self.settle, context.timestep)
        D_w, labels = _settled(
            settle, np.tile(np.eye(4), (len(t), 1, 1)), np.full(len(t), self.name)
        )
        handle = np.asarray(self.handle_xyz, dtype=float)
        path = smooth_path(
            context.T_w_P0, handle, np.asarray(self.shift), np.deg2rad(self.yaw_deg), self.path_time
        )
        person = Person(path, handle)
        return PhasePlan(self.name, D_w, labels, settle, person=person, follows_commands=True)


Program = HumanGuided | StaticHolds | Sphere | Scripted | Collaborate


def _times(duration: float, dt: float) -> np.ndarray:
    return np.arange(_steps(duration, dt)) * dt


def _steps(duration: float, dt: float) -> int:
    return int(round(duration / dt))


def _band(section: Section, default: tuple[float, float]) -> tuple[float, float]:
    low, high = section.vector("band_hz", 2, list(default))
    if not 0 < low <= high:
        raise ScenarioError(f"{section.path}.band_hz: need 0 < low <= high, got {[low, high]}")
    return float(low), float(high)


def read_program(section: Section, context_robots: tuple[str, ...]) -> Program:
    """One ``excitation`` entry of a scenario file."""
    program = section.string("program", choices=PROGRAMS)
    settle = section.number("settle", 0.5, low=0.0)
    if program == "human_guided":
        out = HumanGuided(
            duration=section.number("duration", positive=True),
            max_rotation_deg=section.number("max_rotation_deg", 10.0, low=0.0, high=45.0),
            max_translation=section.number("max_translation", 0.05, low=0.0, high=0.5),
            band_hz=_band(section, (0.2, 1.5)),
            bandwidth_hz=section.number("bandwidth_hz", 3.0, positive=True, high=50.0),
            damping_ratio=section.number("damping_ratio", 0.7, positive=True, high=5.0),
            settle=settle,
        )
    elif program == "static_holds":
        orientations = section.items("orientations_deg")
        rotvecs = [
            tuple(Section({"v": o}, f"{section.path}.orientations_deg[{k}]").vector("v", 3))
            for k, o in enumerate(orientations)
        ]
        if not rotvecs:
            raise ScenarioError(f"{section.path}.orientations_deg: give at least one orientation")
        pivot = section.vector("pivot", 3, None) if section.has("pivot") else None
        out = StaticHolds(
            orientations_deg=tuple(rotvecs),
            hold=section.number("hold", 2.0, positive=True),
            transition=section.number("transition", 1.5, positive=True),
            hold_settle=section.number("hold_settle", 0.5, low=0.0),
            pivot=None if pivot is None else tuple(pivot),
            settle=settle,
        )
    elif program == "sphere":
        locked = section.string("locked_robot")
        if locked not in context_robots:
            raise ScenarioError(
                f"{section.path}.locked_robot: {locked!r} is not one of {list(context_robots)}"
            )
        out = Sphere(
            locked_robot=locked,
            duration=section.number("duration", positive=True),
            max_rotation_deg=section.number("max_rotation_deg", 10.0, low=0.0, high=45.0),
            band_hz=_band(section, (0.3, 1.0)),
            ramp=section.number("ramp", 2.0, low=0.0),
            settle=settle,
        )
    elif program == "collaborate":
        out = Collaborate(
            duration=section.number("duration", positive=True),
            shift=tuple(section.vector("shift", 3, [0.3, 0.1, 0.0])),
            yaw_deg=section.number("yaw_deg", 15.0, low=-90.0, high=90.0),
            path_time=section.number("path_time", 2.5, positive=True),
            handle_xyz=tuple(section.vector("handle_xyz", 3, [0.45, 0.0, 0.02])),
            settle=settle,
        )
    else:
        rows = [
            Section(w, f"{section.path}.waypoints[{k}]")
            for k, w in enumerate(section.items("waypoints"))
        ]
        if len(rows) < 2:
            raise ScenarioError(f"{section.path}.waypoints: give at least two waypoints")
        times = np.array([row.number("t", low=0.0) for row in rows])
        rotvecs = np.array([row.vector("rotvec_deg", 3, [0.0, 0.0, 0.0]) for row in rows])
        shifts = np.array([row.vector("xyz", 3, [0.0, 0.0, 0.0]) for row in rows])
        for row in rows:
            row.done()
        pivot = tuple(section.vector("pivot", 3)) if section.has("pivot") else None
        out = Scripted.from_waypoints(times, rotvecs, shifts, pivot, settle)
    section.done()
    return out
