"""The closed loop: MuJoCo physics at ``timestep``, the onboard attitude loops at
``attitude_rate``, mocap and the team controller at ``control.rate``; every control instant
is recorded (ground truth, sensors, commands) into an ``AerialResult``."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import mujoco
import numpy as np

from ...core.aerial.cables import RigidBodyState, cross3
from ...core.aerial.payload_controller import PayloadReference
from ...core.aerial.rotors import RotorModel
from ...core.spatial import exp3
from ..scenario import Phase
from .config import AerialConfig
from .human import read_human
from .model import compile_model, robot_name
from .reference import WaypointTrajectory
from .team import TeamController

# Recorded per control instant: name -> shape per sample (n = number of robots).
FIELDS = {
    "payload_x": (3,), "payload_R": (3, 3), "payload_v": (3,), "payload_Omega": (3,),
    "robot_x": ("n", 3), "robot_R": ("n", 3, 3), "robot_v": ("n", 3), "robot_Omega": ("n", 3),
    "tension": ("n",), "cable_length": ("n",), "attach_accel": ("n", 3),
    "human_wrench": (6,), "head": (3,),
    "mocap_payload_x": (3,), "mocap_payload_R": (3, 3), "mocap_payload_v": (3,),
    "mocap_payload_Omega": (3,), "mocap_robot_x": ("n", 3), "mocap_robot_R": ("n", 3, 3),
    "mocap_robot_v": ("n", 3), "mocap_robot_Omega": ("n", 3), "mocap_head": (3,),
    "rotor_rpm": ("n", 4), "thrust": ("n",), "moment": ("n", 3), "mu_des": ("n", 3),
    "x_des": ("n", 3),
    "reference_x": (3,), "reference_R": (3, 3), "solved": (),
}  # fmt: skip


@dataclass
class AerialResult:
    """A run (or a chunk of one): every field of ``FIELDS`` as an array over ``time``.

    Frames: positions and linear velocities in the world frame, rotations body-to-world,
    ``*_Omega`` in the body frame; ``human_wrench`` is [F_H (world); M_H (payload frame)]
    about the payload's CoM; ``tension`` the cable's force [N] (0 when slack), ``mu_des``
    the commanded tension vectors on the payload and ``x_des`` the robot positions they ask
    for (eq. 16, from mocap); ``head`` NaN without a head."""

    scenario_name: str
    seed: int
    robot_ids: list[str]
    time: np.ndarray
    data: dict[str, np.ndarray]
    cable_limit: float  # [m] every cable's length
    attach_points: np.ndarray  # (n, 3) rho_k in the payload frame
    wall_time: float = 0.0
    physics_wall_time: float = 0.0
    scenario_type: str = "aerial_cable_team"
    meta: dict = field(default_factory=dict)

    def __getattr__(self, name: str) -> np.ndarray:
        data = self.__dict__.get("data", {})
        if name in data:
            return data[name]
        raise AttributeError(name)

    @property
    def duration(self) -> float:
        return float(self.time[-1] - self.time[0]) if len(self.time) > 1 else 0.0

    @property
    def phases(self) -> list[Phase]:
        """One phase, ``flight``, over the recorded span (what ``sim_node`` reports)."""
        end = float(self.time[-1]) if len(self.time) else 0.0
        start = float(self.time[0]) if len(self.time) else 0.0
        return [Phase("flight", "aerial_cable_team", start, end)]

    def xi(self) -> np.ndarray:
        """(Q, n, 3) true cable directions, robot to attach point (eq. 41)."""
        attach = self.data["payload_x"][:, None] + np.einsum(
            "qij,kj->qki", self.data["payload_R"], self.attach_points
        )
        delta = attach - self.data["robot_x"]
        return delta / np.linalg.norm(delta, axis=2, keepdims=True)

    def slack(self, tolerance: float = 1e-3) -> np.ndarray:
        """(Q, n): a cable is slack when shorter than its length by ``tolerance`` [m]."""
        return self.data["cable_length"] < self.cable_limit - tolerance


def _noisy_rotation(R: np.ndarray, sigma: float, rng: np.random.Generator) -> np.ndarray:
    return R @ exp3(rng.normal(scale=sigma, size=3))


class AerialRun:
    """A scenario run advanced on demand (the ``Stepper`` of ``sim/scenario.py``)."""

    def __init__(self, config: AerialConfig, seed: int):
        self.config, self.seed = config, seed
        self.model, self.index = compile_model(config)
        self.data = mujoco.MjData(self.model)
        self.rng = np.random.default_rng(seed)
        self.team = TeamController(config)
        q = config.quadrotor
        self.rotors = RotorModel(q.arm, q.k_f, q.k_f * q.k_m_over_k_f, q.rpm_min, q.rpm_max)
        self.human = read_human(config.human, "human", config.start)
        self.trajectory = WaypointTrajectory(config.waypoints)
        self.reference_override: PayloadReference | None = None
        self.sample_period = 1.0 / config.control.rate
        self.substeps = round(self.sample_period / config.timestep)
        self.attitude_every = max(1, round(1.0 / (config.control.attitude_rate * config.timestep)))
        self.start_time = 0.0
        self.step_count = 0
        self.rpm = np.zeros((config.n, 4))  # rotor speeds last applied [rpm]
        self._hover()
        self.robot_ids = [robot_name(k) for k in range(config.n)]

    @property
    def time(self) -> float:
        return self.step_count * self.sample_period

    @property
    def done(self) -> bool:
        return self.time > self.config.duration + 1e-9

    def _hover(self) -> None:
        """Initial command: every robot holds its weight and its cable's nominal tension."""
        mujoco.mj_forward(self.model, self.data)
        payload, robots = self._truth_states()
        self.command = self.team.update(payload, robots, self.trajectory(0.0), None)
        self.team.payload.integral[:] = 0.0
        self._apply_rotors()

    # ----- state ------------------------------------------------------------------------
    def _body_state(self, body: int) -> RigidBodyState:
        """From the body's free joint: qvel holds the world-frame linear velocity of its
        origin (the CoM here) and the body-frame angular velocity."""
        d, adr = self.data, self.model.jnt_dofadr[self.model.body_jntadr[body]]
        R = d.xmat[body].reshape(3, 3).copy()
        return RigidBodyState(
            d.xpos[body].copy(), d.qvel[adr : adr + 3].copy(), R, d.qvel[adr + 3 : adr + 6].copy()
        )

    def _truth_states(self) -> tuple[RigidBodyState, list[RigidBodyState]]:
        payload = self._body_state(self.index.payload_body)
        return payload, [self._body_state(int(b)) for b in self.index.robot_bodies]

    def _grasp_point(self) -> tuple[np.ndarray, np.ndarray]:
        """The human's grasp point on the payload: world position and velocity."""
        payload = self._body_state(self.index.payload_body)
        r = payload.R @ self.human.grasp
        return payload.x + r, payload.v + payload.R @ cross3(payload.Omega, self.human.grasp)

    def _mocap(self, state: RigidBodyState) -> RigidBodyState:
        s, rng = self.config.sensors, self.rng
        return RigidBodyState(
            state.x + rng.normal(scale=s.position, size=3),
            state.v + rng.normal(scale=s.velocity, size=3),
            _noisy_rotation(state.R, s.attitude, rng),
            state.Omega + rng.normal(scale=s.body_rate, size=3),
        )

    # ----- the loop ---------------------------------------------------------------------
    def reference(self, t: float) -> PayloadReference:
        return self.reference_override or self.trajectory(t)

    def set_reference(self, reference: PayloadReference | None) -> None:
        """Steer the payload from outside (a planner through ``sim_node``): this reference
        replaces the scenario's waypoints from the next control step; None restores them."""
        self.reference_override = reference

    def advance(
        self, until: float = math.inf, progress: Callable[[float], None] | None = None
    ) -> AerialResult:
        """Simulate up to ``until`` (at most the scenario's end) and return what was recorded."""
        rows: list[dict] = []
        physics = 0.0
        start = time.perf_counter()
        while not self.done and self.time <= until + 1e-9:
            rows.append(self._control_step())
            tic = time.perf_counter()
            self._physics_steps()
            physics += time.perf_counter() - tic
            if progress is not None:
                progress(min(self.time / self.config.duration, 1.0))
        wall = time.perf_counter() - start
        return self._result(rows, wall, physics)

    def _control_step(self) -> dict:
        t = self.time
        mujoco.mj_forward(self.model, self.data)  # sensors and tendons at this very state
        payload, robots = self._truth_states()
        head = self.human.step_head(t, self.sample_period, payload.x)
        self.human.place_hand(t, *self._grasp_point())
        m_payload = self._mocap(payload)
        m_robots = [self._mocap(r) for r in robots]
        m_head = (
            None if head is None else head + self.rng.normal(scale=self.config.sensors.head, size=3)
        )
        reference = self.reference(t)
        row = self._record(t, payload, robots, (m_payload, m_robots, m_head), head, reference)
        self.command = self.team.update(m_payload, m_robots, reference, m_head)
        row["mu_des"], row["x_des"] = self.command.mu_des, self.command.x_des
        row["solved"] = float(self.command.solved)
        return row

    def _physics_steps(self) -> None:
        d, body = self.data, self.index.payload_body
        for step in range(self.substeps):
            t = self.time + step * self.config.timestep
            if step % self.attitude_every == 0:
                self._apply_rotors()
            R_L = d.xmat[body].reshape(3, 3)
            wrench = self.human.wrench(t, R_L, *self._grasp_point())
            d.xfrc_applied[body, :3] = wrench[:3]  # world frame, at the CoM
            d.xfrc_applied[body, 3:] = R_L @ wrench[3:]
            mujoco.mj_step(self.model, d)
        self.step_count += 1

    def _apply_rotors(self) -> None:
        _, robots = self._truth_states()
        for k, state in enumerate(robots):
            f, M = self.team.attitude(k, state, self.command.force[k], self.command.R_des[k])
            self.rpm[k] = self.rotors.speeds(f, M)
            f, M = self.rotors.wrench(self.rpm[k])
            self.data.ctrl[4 * k] = f
            self.data.ctrl[4 * k + 1 : 4 * k + 4] = M

    def _record(
        self,
        t: float,
        payload: RigidBodyState,
        robots: list[RigidBodyState],
        mocap: tuple,
        head: np.ndarray | None,
        reference: PayloadReference,
    ) -> dict:
        """One recorded instant: truth, sensors (``mocap``: payload, robots, head) and the
        applied rotor wrench."""
        d, s = self.data, self.config.sensors
        m_payload, m_robots, m_head = mocap
        n = self.config.n
        rpm = self.rpm
        noisy_rpm = rpm * (1 + self.rng.normal(scale=s.rpm_noise, size=rpm.shape))
        if s.rpm_step > 0:
            noisy_rpm = np.round(noisy_rpm / s.rpm_step) * s.rpm_step
        # a_k = attach-point acceleration + g e3 (eq. 9): the accelerometer, in the world frame
        attach_accel = np.array(
            [
                d.site_xmat[site].reshape(3, 3) @ d.sensordata[a : a + 3]
                for site, a in zip(self.index.attach_sites, self.index.attach_accel, strict=True)
            ]
        )
        return {
            "time": t,
            "payload_x": payload.x, "payload_R": payload.R, "payload_v": payload.v,
            "payload_Omega": payload.Omega,
            "robot_x": [r.x for r in robots], "robot_R": [r.R for r in robots],
            "robot_v": [r.v for r in robots], "robot_Omega": [r.Omega for r in robots],
            "tension": d.sensordata[self.index.tension],
            "cable_length": d.ten_length[self.index.tendon],
            "attach_accel": attach_accel,
            "human_wrench": self.human.wrench(t, payload.R, *self._grasp_point()),
            "head": np.full(3, np.nan) if head is None else head.copy(),
            "mocap_payload_x": m_payload.x, "mocap_payload_R": m_payload.R,
            "mocap_payload_v": m_payload.v, "mocap_payload_Omega": m_payload.Omega,
            "mocap_robot_x": [r.x for r in m_robots], "mocap_robot_R": [r.R for r in m_robots],
            "mocap_robot_v": [r.v for r in m_robots],
            "mocap_robot_Omega": [r.Omega for r in m_robots],
            "mocap_head": np.full(3, np.nan) if m_head is None else m_head,
            "rotor_rpm": noisy_rpm,
            "thrust": d.ctrl[0::4][:n].copy(),
            "moment": d.ctrl.reshape(n, 4)[:, 1:].copy(),
            "reference_x": reference.x, "reference_R": reference.R,
        }  # fmt: skip

    def _result(self, rows: list[dict], wall: float, physics: float) -> AerialResult:
        data = {
            key: np.array([row[key] for row in rows], dtype=float).reshape(
                (len(rows), *[self.config.n if d == "n" else d for d in shape])
            )
            for key, shape in FIELDS.items()
        }
        return AerialResult(
            self.config.name,
            self.seed,
            self.robot_ids,
            np.array([row["time"] for row in rows]),
            data,
            self.config.cable_length,
            self.config.payload.attach,
            wall,
            physics,
        )
