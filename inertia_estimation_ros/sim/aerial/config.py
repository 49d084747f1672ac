"""The keys of an ``aerial_cable_team`` scenario, their presets, and the checks that refuse a
team that cannot fly before any simulation starts."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...core.aerial.allocation import GRAVITY, AllocationError, CableAllocation
from ...core.aerial.distribution import nominal_distribution
from ...core.aerial.optimization import OptimizationSettings
from ...core.aerial.payload_controller import PayloadGains
from ...core.aerial.robot_controller import RobotGains
from ..scenario import ScenarioError, Section
from .human import read_human


@dataclass(frozen=True)
class Quadrotor:
    """A quadrotor model (RotorTM's parameter files, notes section 3.9; k_m/k_f suggested)."""

    mass: float  # [kg]
    inertia: np.ndarray  # diagonal [kg m^2]
    arm: float  # [m] rotor to centre
    k_f: float  # [N/rpm^2]
    rpm_min: float
    rpm_max: float
    gains: RobotGains
    k_m_over_k_f: float = 0.015  # [m]

    @property
    def max_thrust(self) -> float:
        return 4.0 * self.k_f * self.rpm_max**2

    @property
    def size(self) -> float:
        """[m] diameter over the rotors (propeller radius taken as half the arm)."""
        return 3.0 * self.arm


QUADROTORS = {
    "dragonfly": Quadrotor(
        0.25, np.array([0.000601, 0.000589, 0.001076]), 0.1075, 3.9408732e-9, 5500, 16400,
        RobotGains(),
    ),
    "hummingbird": Quadrotor(
        0.5, np.array([2.64e-3, 2.64e-3, 4.96e-3]), 0.17, 5.55e-8, 1500, 7500,
        RobotGains(K_R=np.array([1.5, 1.5, 1.0]), K_Omega=np.array([0.13, 0.13, 0.1])),
    ),
}  # fmt: skip

# RotorTM's triangular payload (notes section 3.9).
TRIANGLE = np.array([[-0.1540, -0.267, 0.01125], [0.3083, 0.0, 0.01125], [-0.1540, 0.267, 0.01125]])
TRIANGLE_INERTIA = np.array([0.00625019392, 0.00625019392, 0.01245978846])


@dataclass(frozen=True)
class Payload:
    mass: float
    inertia: np.ndarray  # diagonal, about the CoM [kg m^2]
    attach: np.ndarray  # (n, 3) rho_k in L


@dataclass(frozen=True)
class Sensors:
    """Mocap (sampled at the control rate) and ESC noise (notes section 6.3)."""

    position: float = 0.001  # [m]
    attitude: float = np.deg2rad(0.3)  # [rad]
    velocity: float = 0.008  # [m/s]
    body_rate: float = 0.02  # [rad/s]
    head: float = 0.01  # [m]
    rpm_noise: float = 0.015  # multiplicative
    rpm_step: float = 10.0  # [rpm] quantisation


@dataclass(frozen=True)
class Control:
    method: str = "nominal"  # nominal | gradient | optimization
    rate: float = 100.0  # [Hz] payload chain and cable loop
    attitude_rate: float = 250.0  # [Hz] onboard attitude loop (eq. 30)
    payload_gains: PayloadGains = field(default_factory=PayloadGains)
    gradient_a: float = 1.0
    gradient_b: float = 2.0
    optimization: OptimizationSettings = field(default_factory=OptimizationSettings)
    min_vertical_tension: float = 0.05  # [N], clamp of the nominal distribution


@dataclass(frozen=True)
class AerialConfig:
    name: str
    seed: int
    duration: float
    timestep: float
    quadrotor: Quadrotor
    quadrotor_name: str
    cable_length: float
    payload: Payload
    start: np.ndarray  # payload start position [m]
    waypoints: list[tuple[float, np.ndarray, np.ndarray]]  # (t, xyz, rpy_deg)
    human: dict
    sensors: Sensors
    control: Control

    @property
    def n(self) -> int:
        return len(self.payload.attach)


def polygon_attach_points(n: int, radius: float, height: float) -> np.ndarray:
    """Attach points on a regular n-gon of circumradius ``radius`` (the payload for n > 3)."""
    angles = 2 * np.pi * np.arange(n) / n
    return np.column_stack([radius * np.cos(angles), radius * np.sin(angles), np.full(n, height)])


def _payload(section: Section) -> Payload:
    shape = section.string("shape", "triangle", ("triangle", "polygon"))
    mass = section.number("mass", 0.278, positive=True)
    if shape == "triangle":
        attach = TRIANGLE
        inertia = section.vector("inertia", 3, TRIANGLE_INERTIA)
        section.number("radius", None)
        section.integer("robots", 3)
    else:
        n = section.integer("robots", low=1)
        radius = section.number("radius", 0.35, positive=True)
        attach = polygon_attach_points(n, radius, 0.01125)
        # a thin disc of the same radius by default
        default = mass * radius**2 * np.array([0.25, 0.25, 0.5])
        inertia = section.vector("inertia", 3, default)
    if section.has("attach_points"):
        attach = np.array([np.asarray(p, dtype=float) for p in section.items("attach_points")])
    section.done()
    return Payload(mass, inertia, attach)


def _waypoints(section: Section, start: np.ndarray) -> list:
    points = [(0.0, start, np.zeros(3))]
    for k, item in enumerate(section.items("waypoints", [])):
        point = Section(item, f"{section.path}.waypoints[{k}]")
        t = point.number("time", positive=True)
        if t <= points[-1][0]:
            raise ScenarioError(f"{point.path}.time: waypoint times must increase, got {t}")
        xyz = point.vector("xyz", 3)
        rpy = point.vector("rpy_deg", 3, [0.0, 0.0, 0.0])
        point.done()
        points.append((t, xyz, rpy))
    return points


def _control(section: Section) -> Control:
    default = Control()
    method = section.string("method", "nominal", ("nominal", "gradient", "optimization"))
    opt = OptimizationSettings(
        robot_distance=section.number("robot_distance", 0.75, positive=True),
        head_distance=section.number("head_distance", 0.75, positive=True),
    )
    control = Control(
        method=method,
        rate=section.number("rate", default.rate, positive=True),
        attitude_rate=section.number("attitude_rate", default.attitude_rate, positive=True),
        gradient_a=section.number("gradient_a", default.gradient_a, low=0.0),
        gradient_b=section.number("gradient_b", default.gradient_b, low=0.0),
        optimization=opt,
    )
    section.done()
    return control


def _sensors(section: Section) -> Sensors:
    d = Sensors()
    sensors = Sensors(
        position=section.number("position_noise", d.position, low=0.0),
        attitude=np.deg2rad(section.number("attitude_noise_deg", np.rad2deg(d.attitude), low=0)),
        velocity=section.number("velocity_noise", d.velocity, low=0.0),
        body_rate=section.number("body_rate_noise", d.body_rate, low=0.0),
        head=section.number("head_noise", d.head, low=0.0),
        rpm_noise=section.number("rpm_noise", d.rpm_noise, low=0.0),
        rpm_step=section.number("rpm_step", d.rpm_step, low=0.0),
    )
    section.done()
    return sensors


def read_config(section: Section) -> AerialConfig:
    """An ``AerialConfig`` from the scenario mapping, checked (``check_flyable``)."""
    quad_name = section.string("quadrotor", "dragonfly", tuple(QUADROTORS))
    start = section.vector("start", 3, [0.0, 0.0, 1.0])
    config = AerialConfig(
        name=section.string("name", "aerial_cable_team"),
        seed=section.integer("seed", 0),
        duration=section.number("duration", positive=True),
        timestep=section.number("timestep", 0.001, positive=True),
        quadrotor=QUADROTORS[quad_name],
        quadrotor_name=quad_name,
        cable_length=section.number("cable_length", 1.0, positive=True),
        payload=_payload(section.section("payload", {})),
        start=start,
        waypoints=_waypoints(section, start),
        human=dict(section.section("human", {}).data),
        sensors=_sensors(section.section("sensors", {})),
        control=_control(section.section("control", {})),
    )
    section.done()
    read_human(config.human, f"{section.path}.human", start)  # its errors now, not when flying
    check_flyable(config)
    return config


def check_flyable(config: AerialConfig) -> None:
    """Refuse, naming the cause, a team that cannot fly: rank P < 6 (n < 3 or collinear
    attach points), robots that would touch or cables too short for the required spacing,
    or a hover thrust beyond 90 % of the rotors' limit."""
    try:
        allocation = CableAllocation(config.payload.attach)
    except AllocationError as error:
        raise ScenarioError(f"payload: {error}") from None
    _check_spacing(config)
    _check_thrust(config, allocation)
    rate_ratio = 1.0 / (config.control.rate * config.timestep)
    if abs(rate_ratio - round(rate_ratio)) > 1e-6:
        raise ScenarioError(
            f"control.rate: {config.control.rate} Hz is not a whole number of timesteps "
            f"({config.timestep} s)"
        )


def _check_spacing(config: AerialConfig) -> None:
    attach, quad = config.payload.attach, config.quadrotor
    l_max_tilt = config.cable_length * np.sin(np.deg2rad(45.0))
    need = max(quad.size, config.control.optimization.robot_distance)
    if config.control.method != "optimization":
        need = quad.size
    for i in range(len(attach)):
        for j in range(i + 1, len(attach)):
            spacing = float(np.linalg.norm(attach[i, :2] - attach[j, :2]))
            reach = spacing + 2.0 * l_max_tilt
            if reach < need:
                raise ScenarioError(
                    f"cable_length: {config.cable_length} m cables keep robots {i + 1} and "
                    f"{j + 1} at most {reach:.3f} m apart (attach points {spacing:.3f} m apart, "
                    f"cables tilted 45 deg at most), but they need {need:.3f} m (robot size "
                    f"{quad.size:.3f} m, control.robot_distance); use longer cables"
                )
    if config.cable_length < quad.size:
        raise ScenarioError(
            f"cable_length: {config.cable_length} m is shorter than the robot ({quad.size:.3f} "
            "m over the rotors): the rotors would hit the payload; use longer cables"
        )


def _check_thrust(config: AerialConfig, allocation: CableAllocation) -> None:
    quad, payload = config.quadrotor, config.payload
    hover = np.r_[0.0, 0.0, payload.mass * GRAVITY, 0.0, 0.0, 0.0]
    tensions = np.linalg.norm(
        nominal_distribution(allocation, np.eye(3), hover).reshape(-1, 3), axis=1
    )
    needed = quad.mass * GRAVITY + tensions
    worst = int(np.argmax(needed))
    if needed[worst] > 0.9 * quad.max_thrust:
        raise ScenarioError(
            f"payload.mass: hovering the {payload.mass} kg payload needs {needed[worst]:.2f} N "
            f"of thrust from robot {worst + 1} ({quad.mass * GRAVITY:.2f} N weight + "
            f"{tensions[worst]:.2f} N cable), more than 90 % of the {quad.max_thrust:.2f} N "
            "its rotors give; use more or stronger robots or a lighter payload"
        )
