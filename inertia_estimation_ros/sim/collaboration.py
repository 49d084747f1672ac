"""A person moves a ground team's payload through the estimated model, in MuJoCo (issue 14).

The ground team of a ``ground_team`` scenario (``sim.ground_team``) holds the payload with
stiff position-controlled slides (gimbal wrists pass no moment). A person with an intention
pulls a handle on the payload toward a moving target (a spring-damper, force and torsion)
through ``xfrc_applied``. Every control period the loop closes through the core only:
the robots' flange wrenches -> ``human_wrench.external_wrench`` with the model ->
``AdmittanceSupervisor`` -> ``following.grasp_commands`` -> each robot's slide set-points:
the commanded grasp pose by inverse kinematics (``ground_team``), offset by its
feed-forward force share over the slide stiffness, so that the robots carry the model's
weight.
The payload's twist comes from MuJoCo and its derivative by a finite difference over the
control period; without the inertial part, the payload's own m a would read as a human
wrench against the motion and make the felt mass m_virtual - m negative (unstable).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from ..core import spatial as sp
from ..core.collaboration.following import grasp_commands
from ..core.collaboration.human_wrench import PayloadModel, external_wrench
from ..core.collaboration.supervisor import AdmittanceSupervisor, ModelSummary
from ..core.samples import GraspSample
from .ground_team import STIFF, GroundTeamScenario, GroundTeamStepper, joint_positions
from .ground_truth import body_inertial_parameters, site_pose_in_world


@dataclass(frozen=True)
class Person:
    """A spring-damper from a handle on the payload (``handle_P``, in the payload frame {P})
    to the target ``target(t) -> (position in {w}, rotation in {w})`` of that handle."""

    target: Callable[[float], tuple[np.ndarray, np.ndarray]]
    handle_P: np.ndarray
    stiffness: float = 150.0  # [N/m]
    damping: float = 40.0  # [N s/m]
    torsion: float = 30.0  # [N m/rad]
    torsion_damping: float = 8.0  # [N m s/rad]


def moving_person(
    T_w_P0: np.ndarray,
    handle_P: np.ndarray,
    shift_w: tuple[float, float, float] = (0.3, 0.1, 0.0),
    yaw_deg: float = 15.0,
    seconds: float = 2.5,
) -> Person:
    """A person who moves the handle by ``shift_w`` (in {w}) and turns it by ``yaw_deg`` about
    the world's z over ``seconds`` (smoothstep) from the payload's home pose ``T_w_P0``, then
    holds it there."""
    h0 = (T_w_P0 @ np.r_[handle_P, 1.0])[:3]

    def target(t: float) -> tuple[np.ndarray, np.ndarray]:
        s = min(t / seconds, 1.0)
        s = s * s * (3 - 2 * s)
        R = Rotation.from_euler("z", yaw_deg * s, degrees=True).as_matrix() @ T_w_P0[:3, :3]
        return h0 + np.asarray(shift_w) * s, R

    return Person(target, handle_P)


@dataclass(frozen=True)
class CollaborationRun:
    t: np.ndarray  # (K,) [s]
    handle: np.ndarray  # (K, 3) the handle's position in {w}
    target: np.ndarray  # (K, 3) its target
    force: np.ndarray  # (K, 6) the person's (moment about the CoM, force) in {w}
    estimate: np.ndarray  # (K, 6) the estimated external wrench about the CoM, axes of {s}
    R_w_s: np.ndarray  # (K, 3, 3) the payload's {s} in {w}
    reference_p: np.ndarray  # (K, 3) the reference's origin of {s} in {w}

    @property
    def yaw(self) -> np.ndarray:
        """(K,) the rotation of {s} about the world's z since the start [rad]."""
        R = np.einsum("ji,kjl->kil", self.R_w_s[0], self.R_w_s)
        return np.arctan2(R[:, 1, 0], R[:, 0, 0])


def run_collaboration(
    scenario: GroundTeamScenario,
    person: Person | None,
    seconds: float,
    theta_error: np.ndarray | None = None,
    control_period: float = 0.01,
    **admittance: object,
) -> CollaborationRun:
    """Run the closed loop for ``seconds``; the model is the true payload (plus
    ``theta_error`` in {s}, to see what a wrong model costs)."""
    stepper = GroundTeamStepper(scenario)
    runner = stepper._runner  # the same physics and robots, driven by this loop
    m, d = runner.model, runner.data
    _stiffen(runner, scenario)
    robots = scenario.robots
    ref_id = scenario.reference_robot
    T_P = {r.robot_id: r.T_P_i for r in robots}
    T_s_i = {r: sp.inverse(T_P[ref_id]) @ T for r, T in T_P.items()}
    payload_P = body_inertial_parameters(m, "payload")
    payload_s = payload_P.transformed(sp.inverse(T_P[ref_id]))
    theta = payload_s.vec + (0.0 if theta_error is None else theta_error)
    model = PayloadModel(
        ref_id,
        theta,
        np.zeros((10, 10)),
        T_s_i,
        {r: np.zeros((6, 6)) for r in T_s_i},
        True,
        True,
        True,
    )
    p_s_c = theta[1:4] / theta[0]
    has_torque = {r.robot_id: r.kind == "wrist_6dof" for r in robots}
    supervisor = AdmittanceSupervisor(**{"input_timeout": 1.0, **admittance})
    I_c = payload_s.inertia_about_com
    supervisor.on_estimate(ModelSummary(True, float(theta[0]), p_s_c, I_c))
    mujoco.mj_forward(m, d)
    supervisor.on_pose(float(d.time), site_pose_in_world(d, f"{ref_id}/grasp"))
    ok, message = supervisor.start()
    if not ok:
        raise RuntimeError(message)
    steps = int(round(control_period / m.opt.timestep))
    g_w = np.asarray(m.opt.gravity, dtype=float)
    payload_id = m.body("payload").id
    log = {k: [] for k in ("t", "handle", "target", "force", "estimate", "R", "p")}
    previous = V_prev = None
    start = float(d.time)
    ft_adr = np.array(
        [
            np.r_[
                runner.sensor["torque"][k] + np.arange(3), runner.sensor["force"][k] + np.arange(3)
            ]
            for k in range(len(robots))
        ]
    )
    mean_ft = d.sensordata[ft_adr].copy()
    for _ in range(int(round(seconds / control_period))):
        now = float(d.time) - start
        V_s = _body_twist(m, d, f"{ref_id}/grasp")
        dV_s = np.zeros(6) if V_prev is None else (V_s - V_prev) / control_period
        V_prev = V_s
        samples = _samples(robots, d, g_w, now, T_s_i, V_s, dV_s, mean_ft)
        estimate = external_wrench(samples, model, max_spread=1.0)
        T_w_s = site_pose_in_world(d, f"{ref_id}/grasp")
        supervisor.on_pose(now, T_w_s)
        supervisor.on_wrench(now, estimate.wrench)
        reference = supervisor.tick(now, control_period)
        team = grasp_commands(
            reference.T_w_s, reference.V_s, np.zeros(6), theta, T_s_i, has_torque, g_w
        )
        _set_points(runner, robots, team.commands, d)
        wrench_w, handle, target = np.zeros(6), np.zeros(3), np.zeros(3)
        if person is not None:
            wrench_w, handle, target, previous = _person(person, d, payload_id, now, previous)
        d.xfrc_applied[payload_id] = np.r_[wrench_w[3:], wrench_w[:3]]
        mean_ft = np.zeros((len(robots), 6))
        for _ in range(steps):
            mujoco.mj_step(m, d)
            mean_ft += d.sensordata[ft_adr] / steps
        logged = (now, handle, target, wrench_w, estimate.wrench, T_w_s[:3, :3], reference.T_w_s)
        for key, value in zip(log, logged, strict=True):
            log[key].append(value)
    log["p"] = [T[:3, 3] for T in log["p"]]
    return CollaborationRun(*(np.array(log[k]) for k in log))


def _stiffen(runner: object, scenario: GroundTeamScenario) -> None:
    """Stiff position control of every actuated joint (the robots follow the reference)."""
    m = runner.model
    for a, linear in enumerate(runner.act_linear):
        p, v = STIFF.translation if linear else STIFF.rotation
        m.actuator_gainprm[a, 0] = p
        m.actuator_biasprm[a, 1:3] = (-p, -v)


def _body_twist(m: mujoco.MjModel, d: mujoco.MjData, site: str) -> np.ndarray:
    """The body twist (omega, v) of a site in its own frame."""
    V = np.zeros(6)
    mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, m.site(site).id, V, 1)
    return V


def _samples(
    robots: tuple,
    d: mujoco.MjData,
    g_w: np.ndarray,
    now: float,
    T_s_i: dict,
    V_s: np.ndarray,
    dV_s: np.ndarray,
    ft: np.ndarray,
) -> dict:
    """Each robot's flange wrench (mean over the control period: consistent with the finite-
    difference derivative, whatever the robots' fast vibrations), gravity in {i} and the
    payload's twist and its derivative mapped to {i}."""
    out = {}
    for k, robot in enumerate(robots):
        rid = robot.robot_id
        R_w_i = site_pose_in_world(d, robot.grasp_frame)[:3, :3]
        T_i_s = sp.inverse(T_s_i[rid])
        out[rid] = GraspSample(
            rid,
            now,
            np.eye(4),
            sp.twist_to(T_i_s, V_s),
            sp.twist_to(T_i_s, dV_s),
            ft[k],
            R_w_i.T @ g_w,
            has_torque=robot.kind == "wrist_6dof",
        )
    return out


def _set_points(runner: object, robots: tuple, commands: dict, d: mujoco.MjData) -> None:
    """Slide set-points: the commanded grasp pose by inverse kinematics, offset by the
    feed-forward force over the stiffness (the PD then applies that force at rest)."""
    kp = STIFF.translation[0]
    for k, robot in enumerate(robots):
        command = commands[robot.robot_id]
        T_i0_i = sp.inverse(runner.T_w_i0[k]) @ command.T_w_i
        q = joint_positions(T_i0_i, robot.wrist_offset)[0]
        q[:3] += T_i0_i[:3, :3] @ command.F_i[3:] / kp
        mine = runner.act_robot == k
        d.ctrl[mine] = q[runner.act_dof[mine]]


def _person(person: Person, d: mujoco.MjData, payload_id: int, now: float, previous):  # noqa: ANN001, ANN202
    """The person's wrench (moment about the CoM, force) in {w}, the handle and its target."""
    T_w_P = sp.transform(d.xmat[payload_id].reshape(3, 3), d.xpos[payload_id])
    handle = (T_w_P @ np.r_[person.handle_P, 1.0])[:3]
    target, R_target = person.target(now)
    velocity = np.zeros(3) if previous is None else (handle - previous[0]) / (now - previous[1])
    omega = np.zeros(3)
    if previous is not None:
        omega = sp.log3(T_w_P[:3, :3] @ previous[2].T) / (now - previous[1])
    force = person.stiffness * (target - handle) - person.damping * velocity
    torsion = person.torsion * sp.log3(R_target @ T_w_P[:3, :3].T) - person.torsion_damping * omega
    com = d.xipos[payload_id]
    moment = np.cross(handle - com, force) + torsion
    return np.r_[moment, force], handle, target, (handle, now, T_w_P[:3, :3].copy())
