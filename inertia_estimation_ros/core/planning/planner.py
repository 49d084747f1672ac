"""The balancing trajectory planner for the free-flying tray (paper 004, Eq. 7; notes §4.2).

    min  sum_k dt/2 (|p_k - p_d|^2 + 0.1|dq_k|^2 + 0.01|ddq_k|^2 + 1e-3|u_k|^2)
         + w_s/2 sum_k sum_objects |r_k|^2                          (soft balancing, w_s = 100)
    s.t. x_{k+1} = A x_k + B u_k    (exact triple integrator)       x_0 given
         |dq|, |ddq|, |u| within limits, lambda in [0, 100] N, the workspace box
         p_N = p_d, dq_N = 0, ddq_N = 0                              (terminal, Eq. U-9)

r_k = (Y(x_k) theta_j - G lambda_{k,j}) / sqrt(6 n_obj): the frictionless Newton-Euler
residual of virtual object j (one per CoM-polytope vertex for "robust", Sec. IV-B), each
with its own contact normal forces (notes §3.5). Solved by 3 Gauss-Newton SQP
iterations from the resting state; each QP is sparse and solved by OSQP, warm-started
from the previous iterate. The tray's limits are hard: they are the team's limits, and
a goal they cannot reach in time T is an infeasible QP, reported as such.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import osqp
import scipy.sparse as sp

from .objects import BalancedObject
from .tray import NQ, NX, interpolate, regressors, rollout, step_matrices

METHODS = ("robust", "center", "top")
FD_STEP = 1e-7  # forward-difference step of the balancing Jacobian


class PlanningError(RuntimeError):
    """No trajectory: the message names the cause and what to change."""


@dataclass(frozen=True)
class PlannerSettings:
    """Horizon, limits and weights. Weights, dt, 3 SQP iterations, w_s = 100 and the jerk
    limits (base 20, arm 80) are the paper's (notes §4.0); the velocity, acceleration, tilt
    and workspace limits are ours, for a tray carried by a team."""

    duration: float = 4.0  # T [s]
    dt: float = 0.1  # node spacing [s]
    sqp_iterations: int = 3
    velocity_limit: tuple[float, ...] = (1.5, 1.5, 1.5, 2.0, 2.0, 2.0)  # m/s, rad/s
    acceleration_limit: tuple[float, ...] = (5.0, 5.0, 5.0, 10.0, 10.0, 10.0)
    jerk_limit: tuple[float, ...] = (20.0, 20.0, 20.0, 80.0, 80.0, 80.0)
    tilt_limit: float = np.deg2rad(40.0)  # |roll|, |pitch| [rad]
    workspace_lo: tuple[float, float, float] = (-10.0, -10.0, 0.0)
    workspace_hi: tuple[float, float, float] = (10.0, 10.0, 3.0)
    force_limit: float = 100.0  # normal force per contact [N] (m = 1 kg objects)
    position_weight: float = 1.0
    velocity_weight: float = 0.1
    acceleration_weight: float = 0.01
    jerk_weight: float = 1e-3
    slack_weight: float = 100.0  # w_s of the soft balancing equalities

    @property
    def nodes(self) -> int:
        return int(round(self.duration / self.dt))


@dataclass(frozen=True)
class VirtualObject:
    """One planning hypothesis: theta (m = 1) on an object's frictionless contacts."""

    theta: np.ndarray
    G: np.ndarray  # 6 x n_contacts normal grasp matrix


def virtual_objects(objects: list[BalancedObject], method: str) -> list[VirtualObject]:
    """Robust: one per CoM-polytope vertex (Sec. IV-B); center / top: the paper's baselines,
    CoM at the object's centroid or on its top face, on the axis."""
    if method not in METHODS:
        raise PlanningError(f"method {method!r} is not one of {METHODS}")
    out = []
    for obj in objects:
        axis = obj.shape.p_b_s
        coms = {
            "robust": obj.com_vertices,
            "center": axis[None, :],
            "top": np.array([[axis[0], axis[1], obj.height]]),
        }[method]
        out += [
            VirtualObject(theta, obj.contacts.normal_grasp_matrix)
            for theta in obj.parameters_at(coms)
        ]
    return out


@dataclass
class TrayPlan:
    """Nodes of a planned trajectory and what the solver reported."""

    times: np.ndarray
    X: np.ndarray  # (N+1, 18) states [q, dq, ddq]
    U: np.ndarray  # (N, 6) jerks
    forces: np.ndarray  # (N+1, n_lambda) planned normal forces
    method: str
    balancing_rms: float  # RMS of the soft balancing residuals r at the nodes
    solve_time: float  # [s] wall time of the SQP
    cpu_time: float = 0.0  # [s] process time of the SQP (all threads)
    qp_status: list[str] = field(default_factory=list)

    def states(self, t: np.ndarray) -> np.ndarray:
        """States at times t, exact between nodes (constant jerk)."""
        return interpolate(self.times, self.X, self.U, t)

    def sample_times(self, period: float = 0.01) -> np.ndarray:
        return np.arange(0.0, self.times[-1] + 1e-9, period)


class TrayPlanner:
    """Builds and solves the OCP for one set of objects and one method."""

    def __init__(self, objects: list[BalancedObject], method: str, settings: PlannerSettings):
        self.settings = settings
        self.method = method
        self.virtual = virtual_objects(objects, method)
        self.N = settings.nodes
        self.n_lambda = [v.G.shape[1] for v in self.virtual]
        self.nl = int(sum(self.n_lambda))
        self.nz = (self.N + 1) * NX + self.N * NQ + (self.N + 1) * self.nl
        self._scale = 1.0 / np.sqrt(6.0 * len(self.virtual))
        self._rows, self._cols, self._lam_values = self._structure()
        self._diag = self._diagonal_weights()

    # ----- indices ------------------------------------------------------------------
    def _x(self, k: int) -> slice:
        return slice(k * NX, (k + 1) * NX)

    def _u(self, k: int) -> slice:
        start = (self.N + 1) * NX + k * NQ
        return slice(start, start + NQ)

    def _lam(self, k: int) -> slice:
        start = (self.N + 1) * NX + self.N * NQ + k * self.nl
        return slice(start, start + self.nl)

    # ----- problem pieces ------------------------------------------------------------
    def _linear_constraints(self, x0: np.ndarray, goal: np.ndarray) -> tuple:
        """(A, l, u): dynamics, initial and terminal states, bounds."""
        s, N = self.settings, self.N
        A_d, B_d = step_matrices(s.dt)
        rows, lo, hi = [], [], []
        shift = sp.eye(N, N + 1, k=1)
        dyn = sp.hstack(
            [
                sp.kron(sp.eye(N, N + 1), A_d) - sp.kron(shift, np.eye(NX)),
                sp.kron(sp.eye(N), B_d),
                sp.csr_matrix((N * NX, (N + 1) * self.nl)),
            ]
        )
        rows.append(dyn.tocsr())
        lo.append(np.zeros(N * NX))
        hi.append(np.zeros(N * NX))
        box_lo, box_hi = np.full(self.nz, -np.inf), np.full(self.nz, np.inf)
        tilt = [s.tilt_limit, s.tilt_limit, np.inf]
        v_max, a_max = np.array(s.velocity_limit), np.array(s.acceleration_limit)
        x_lo = np.concatenate([s.workspace_lo, -np.array(tilt), -v_max, -a_max])
        x_hi = np.concatenate([s.workspace_hi, tilt, v_max, a_max])
        for k in range(N + 1):
            box_lo[self._x(k)], box_hi[self._x(k)] = x_lo, x_hi
            box_lo[self._lam(k)], box_hi[self._lam(k)] = 0.0, s.force_limit
        for k in range(N):
            box_lo[self._u(k)], box_hi[self._u(k)] = -np.array(s.jerk_limit), s.jerk_limit
        box_lo[self._x(0)] = box_hi[self._x(0)] = x0
        terminal = np.concatenate([goal, np.full(3, -np.inf), np.zeros(2 * NQ)])
        terminal_hi = np.concatenate([goal, np.full(3, np.inf), np.zeros(2 * NQ)])
        box_lo[self._x(N)] = np.maximum(box_lo[self._x(N)], terminal)
        box_hi[self._x(N)] = np.minimum(box_hi[self._x(N)], terminal_hi)
        rows.append(sp.identity(self.nz, format="csr"))
        lo.append(box_lo)
        hi.append(box_hi)
        return sp.vstack(rows, format="csc"), np.concatenate(lo), np.concatenate(hi)

    def _balancing(self, X: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """r (N+1, n_obj, 6): scaled frictionless Newton-Euler residuals (notes §3.5)."""
        Y = regressors(X)
        out = []
        offset = 0
        for v, n in zip(self.virtual, self.n_lambda, strict=True):
            out.append(Y @ v.theta - lam[:, offset : offset + n] @ v.G.T)
            offset += n
        return self._scale * np.stack(out, axis=1)

    def _balancing_jacobian(self, X: np.ndarray, lam: np.ndarray, r: np.ndarray) -> np.ndarray:
        """d r / d x_k (N+1, n_obj, 6, 18) by forward differences, all nodes at once (each
        residual depends on its own node only); the position does not enter r."""
        jac = np.zeros((len(X), len(self.virtual), 6, NX))
        for i in range(3, NX):
            dx = np.zeros(NX)
            dx[i] = FD_STEP
            jac[..., i] = (self._balancing(X + dx, lam) - r) / FD_STEP
        return jac

    def _structure(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row and column indices of the balancing Jacobian's entries (fixed), and the
        constant lambda part of its values."""
        N, n_obj = self.N, len(self.virtual)
        rows, cols, lam_values = [], [], []
        offset = 0
        for j, (v, n) in enumerate(zip(self.virtual, self.n_lambda, strict=True)):
            rr = 6 * j + np.arange(6)
            rows.append(np.repeat(rr, NX)[None, :] + 6 * n_obj * np.arange(N + 1)[:, None])
            cols.append(np.tile(np.arange(NX), 6)[None, :] + NX * np.arange(N + 1)[:, None])
            rows.append(np.repeat(rr, n)[None, :] + 6 * n_obj * np.arange(N + 1)[:, None])
            lam_start = (N + 1) * NX + N * NQ + offset
            cols.append(
                np.tile(np.arange(n), 6)[None, :] + lam_start + self.nl * np.arange(N + 1)[:, None]
            )
            lam_values.append(np.broadcast_to(-self._scale * v.G.ravel(), (N + 1, 6 * n)))
            offset += n
        return np.hstack(rows).ravel(), np.hstack(cols).ravel(), np.hstack(lam_values)

    def _cost(self, z: np.ndarray) -> tuple[sp.csc_matrix, np.ndarray]:
        """Gauss-Newton (P, q) of 1/2 |R(z)|^2 linearized at z."""
        N, n_obj = self.N, len(self.virtual)
        X = z[: (N + 1) * NX].reshape(N + 1, NX)
        lam = z[(N + 1) * NX + N * NQ :].reshape(N + 1, self.nl)
        r = self._balancing(X, lam)
        dr = self._balancing_jacobian(X, lam, r)
        w = np.sqrt(self.settings.slack_weight)
        values = []
        lam_cols = np.split(
            self._lam_values, np.cumsum([6 * n for n in self.n_lambda])[:-1], axis=1
        )
        for j in range(n_obj):
            values += [dr[:, j].reshape(N + 1, -1), lam_cols[j]]
        J_bal = sp.csr_matrix(
            (w * np.hstack(values).ravel(), (self._rows, self._cols)),
            shape=((N + 1) * 6 * n_obj, self.nz),
        )
        r0 = w * r.ravel() - J_bal @ z
        P = (J_bal.T @ J_bal + sp.diags(self._diag)).tocsc()
        q = J_bal.T @ r0 - self._diag * self._target
        return sp.triu(P, format="csc"), q

    def _diagonal_weights(self) -> np.ndarray:
        """The tracking and regularization weights (diagonal Gauss-Newton terms), dt each."""
        s, N = self.settings, self.N
        node = np.concatenate(
            [
                np.full(3, s.position_weight),
                np.full(3, 1e-6),
                np.full(NQ, s.velocity_weight),
                np.full(NQ, s.acceleration_weight),
            ]
        )
        lam = np.full((N + 1) * self.nl, 1e-8)
        return np.concatenate(
            [np.tile(s.dt * node, N + 1), np.full(N * NQ, s.dt * s.jerk_weight), lam]
        )

    def plan(self, start: np.ndarray, goal: np.ndarray) -> TrayPlan:
        """Plan from the resting pose ``start`` (q, 6) to the position ``goal`` (3)."""
        s, N = self.settings, self.N
        start, goal = np.asarray(start, dtype=float), np.asarray(goal, dtype=float)
        self._check_reachable(start, goal)
        x0 = np.concatenate([start, np.zeros(2 * NQ)])
        self._target = np.zeros(self.nz)
        for k in range(N + 1):
            self._target[self._x(k).start : self._x(k).start + 3] = goal
            self._target[self._x(k).start + 3 : self._x(k).start + 6] = start[3:]
        A, lo, hi = self._linear_constraints(x0, goal)
        z = np.zeros(self.nz)
        for k in range(N + 1):
            z[self._x(k)] = x0
        statuses = []
        began, began_cpu = time.perf_counter(), time.process_time()
        for _ in range(s.sqp_iterations):
            P, q = self._cost(z)
            solver = osqp.OSQP()
            solver.setup(
                P,
                q,
                A,
                lo,
                hi,
                verbose=False,
                eps_abs=1e-4,
                eps_rel=1e-4,
                max_iter=20000,
                polishing=True,
            )
            solver.warm_start(x=z)
            result = solver.solve(raise_error=False)
            statuses.append(result.info.status)
            status = result.info.status
            if "infeasible" in status:
                raise PlanningError(
                    f"the planning QP is {status}: the goal cannot be reached within "
                    f"T = {s.duration} s under the limits; increase the duration or the limits"
                )
            if status not in ("solved", "solved inaccurate"):
                raise PlanningError(f"the QP solver stopped without a solution ({status})")
            z = result.x
        elapsed, cpu = time.perf_counter() - began, time.process_time() - began_cpu
        U = z[(N + 1) * NX : (N + 1) * NX + N * NQ].reshape(N, NQ)
        X = rollout(x0, U, s.dt)  # exactly the triple integrator, from exactly x0
        lam = z[(N + 1) * NX + N * NQ :].reshape(N + 1, self.nl)
        rms = float(np.sqrt(np.mean(self._balancing(X, lam) ** 2)))
        times = np.arange(N + 1) * s.dt
        return TrayPlan(times, X, U, lam, self.method, rms, elapsed, cpu, statuses)

    def _check_reachable(self, start: np.ndarray, goal: np.ndarray) -> None:
        s = self.settings
        if start.shape != (NQ,) or goal.shape != (3,):
            raise PlanningError("start must be a pose [x, y, z, roll, pitch, yaw], goal a position")
        if not (np.all(np.isfinite(start)) and np.all(np.isfinite(goal))):
            raise PlanningError("start and goal must be finite")
        for name, p in (("start", start[:3]), ("goal", goal)):
            if np.any(p < s.workspace_lo) or np.any(p > s.workspace_hi):
                raise PlanningError(
                    f"the {name} position {p} is outside the workspace "
                    f"[{s.workspace_lo}, {s.workspace_hi}]: it cannot be reached"
                )
        if np.any(np.abs(start[3:5]) > s.tilt_limit):
            raise PlanningError("the start tilt exceeds the tilt limit")
