"""Paper 002's control stack flying the team (Fig. 2 without the estimator and admittance):
payload controller -> nominal and human-aware distribution -> one robot controller per robot
(the rotor model of eq. 33 is ``core/aerial/rotors.py``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.aerial.allocation import CableAllocation
from ...core.aerial.cables import (
    RigidBodyState,
    attach_accelerations,
    attach_points,
    cable_states,
)
from ...core.aerial.distribution import (
    GradientDistribution,
    desired_robot_positions,
    nominal_distribution,
)
from ...core.aerial.optimization import OptimizationDistribution
from ...core.aerial.payload_controller import PayloadController, PayloadReference
from ...core.aerial.robot_controller import RobotController, attitude_moment
from .config import AerialConfig

SLACK_TOLERANCE = 0.02  # [m], 10 sigma of the mocap noise on a cable length


@dataclass(frozen=True)
class TeamCommand:
    mu_des: np.ndarray  # (n, 3) desired tension vectors on the payload
    x_des: np.ndarray  # (n, 3) the robot positions they ask for (eq. 16), from mocap
    force: np.ndarray  # (n, 3) u_k in I (eq. 28)
    R_des: np.ndarray  # (n, 3, 3)
    solved: bool  # the distribution met its constraints (always True for nominal/gradient)


class TeamController:
    """One control step of the whole team from (noisy) mocap."""

    def __init__(self, config: AerialConfig):
        c, q = config.control, config.quadrotor
        self.rho = config.payload.attach
        self.lengths = np.full(config.n, config.cable_length)
        self.allocation = CableAllocation(self.rho)
        self.payload = PayloadController(
            config.payload.mass, np.diag(config.payload.inertia), c.payload_gains
        )
        self.robots = [
            RobotController(q.mass, np.diag(q.inertia), config.cable_length, q.gains)
            for _ in range(config.n)
        ]
        self.method, self.min_vertical = c.method, c.min_vertical_tension
        self.gradient = GradientDistribution(
            self.allocation, self.lengths, c.gradient_a, c.gradient_b
        )
        self.optimization = OptimizationDistribution(self.allocation, self.lengths, c.optimization)
        self.dt = 1.0 / c.rate

    def update(
        self,
        payload: RigidBodyState,
        robots: list[RigidBodyState],
        reference: PayloadReference,
        head: np.ndarray | None,
    ) -> TeamCommand:
        command = self.payload.update(payload, reference, self.dt)
        R_L = payload.R
        mu_bar = nominal_distribution(self.allocation, R_L, command.wrench, self.min_vertical)
        attach = attach_points(payload, self.rho)
        robot_x = np.array([r.x for r in robots])
        mu, solved = mu_bar, True
        if self.method == "gradient":
            mu = self.gradient.update(R_L, attach, mu_bar, head, robot_x)
        elif self.method == "optimization":
            result = self.optimization.update(R_L, attach, mu_bar, head)
            mu, solved = result.mu_des, result.solved
        xi, xi_dot = cable_states(
            payload, self.rho, robot_x, np.array([r.v for r in robots]), self.lengths
        )
        # Omegadot_L is not measured; 0 as in RotorTM (notes pitfall 9).
        a_c = attach_accelerations(command.accel, R_L, payload.Omega, np.zeros(3), self.rho)
        mu = mu.reshape(-1, 3)
        # A cable measured shorter than its length by more than the mocap noise is slack.
        taut = np.linalg.norm(attach - robot_x, axis=1) > self.lengths - SLACK_TOLERANCE
        commands = [
            ctrl.update(state, xi[k], xi_dot[k], mu[k], a_c[k], taut=bool(taut[k]))
            for k, (ctrl, state) in enumerate(zip(self.robots, robots, strict=True))
        ]
        return TeamCommand(
            mu,
            desired_robot_positions(attach, mu, self.lengths),
            np.array([c.force for c in commands]),
            np.array([c.R_des for c in commands]),
            solved,
        )

    def attitude(
        self, k: int, state: RigidBodyState, force: np.ndarray, R_des: np.ndarray
    ) -> tuple[float, np.ndarray]:
        """The onboard loop: f = u . R e3 (eq. 29) and M (eq. 30) from the robot's own state."""
        ctrl = self.robots[k]
        thrust = float(force @ state.R[:, 2])
        return thrust, attitude_moment(ctrl.inertia, ctrl.gains, state, R_des)
