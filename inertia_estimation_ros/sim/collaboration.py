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

from collections import deque
from dataclasses import dataclass

import mujoco
import numpy as np

from ..core import spatial as sp
from ..core.collaboration.following import grasp_commands
from ..core.collaboration.human_wrench import PayloadModel, external_wrench
from ..core.collaboration.supervisor import AdmittanceSupervisor, ModelSummary
from ..core.inertial import InertialParameters
from ..core.samples import GraspSample
from .ground_team import STIFF, GroundTeamScenario, GroundTeamStepper
from .ground_truth import body_inertial_parameters, site_pose_in_world
from .person import Person, path_person

__all__ = ["CollaborationRun", "Person", "run_collaboration"]


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
    return path_person(T_w_P0, handle_P, shift_w, yaw_deg, seconds)


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
    estimate: PayloadModel | None = None,
    wrench_delay: float = 0.0,
    hidden_delay: float = 0.0,
    **admittance: object,
) -> CollaborationRun:
    """Run the closed loop for ``seconds``; the model is the true payload (plus
    ``theta_error`` in {s}, to see what a wrong model costs), or ``estimate`` (an estimator's
    theta and grasp frames: ``PayloadModel.from_estimate``), which then also places the
    robots' commands. ``wrench_delay`` [s]: each estimated human wrench reaches the
    admittance that much later (with its stamp: a loaded computer, a slow network);
    ``hidden_delay`` [s]: that much later too, but stamped as if it were fresh (the robot
    nodes' causal low-pass, whose samples keep their own stamps, unless the coordinator's
    ``external_wrench_delay`` declares it: then pass it as ``wrench_delay``)."""
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
    model = estimate or PayloadModel(
        ref_id,
        theta,
        np.zeros((10, 10)),
        T_s_i,
        {r: np.zeros((6, 6)) for r in T_s_i},
        True,
        True,
        True,
    )
    theta, p_s_c = model.theta, model.p_s_c
    has_torque = {r.robot_id: r.kind == "wrist_6dof" for r in robots}
    supervisor = AdmittanceSupervisor(**{"input_timeout": 1.0, **admittance})
    # The virtual inertia: the estimate's, or the true one (a wrong mass and CoM alone).
    I_c = (InertialParameters(theta) if estimate else payload_s).inertia_about_com
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
    in_transit: deque[tuple[float, np.ndarray]] = deque()
    for _ in range(int(round(seconds / control_period))):
        now = float(d.time) - start
        V_s = _body_twist(m, d, f"{ref_id}/grasp")
        dV_s = np.zeros(6) if V_prev is None else (V_s - V_prev) / control_period
        V_prev = V_s
        samples = _samples(robots, d, g_w, now, T_s_i, V_s, dV_s, mean_ft)
        estimate = external_wrench(samples, model, max_spread=1.0)
        T_w_s = site_pose_in_world(d, f"{ref_id}/grasp")
        supervisor.on_pose(now, T_w_s)
        in_transit.append((now, estimate.wrench))
        while in_transit and in_transit[0][0] <= now - wrench_delay - hidden_delay + 1e-9:
            stamp, wrench = in_transit.popleft()
            supervisor.on_wrench(stamp + hidden_delay, wrench)
        reference = supervisor.tick(now, control_period)
        team = grasp_commands(
            reference.T_w_s, reference.V_s, np.zeros(6), theta, model.T_s_i, has_torque, g_w
        )
        for k, robot in enumerate(robots):
            command = team.commands[robot.robot_id]
            runner.follow(k, command.T_w_i, command.F_i)
        d.ctrl[runner.followed] = runner.follow_ctrl[runner.followed]
        wrench_w, handle, target = np.zeros(6), np.zeros(3), np.zeros(3)
        if person is not None:
            T_w_P = sp.transform(d.xmat[payload_id].reshape(3, 3), d.xpos[payload_id])
            wrench_w, handle, target, previous = person.wrench(
                now, T_w_P, d.xipos[payload_id], previous
            )
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
        runner.kp[a] = p


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
