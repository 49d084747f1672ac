"""The balancing trajectory planner (paper 004, Eq. 7; notes §4.2), for two robot models:
the free-flying tray (``tray.TrayModel``) and the paper's 9-DoF Ridgeback + UR10
(``robot.MobileManipulator``), both triple integrators in their own coordinates q.

    min  sum_k dt/2 (|p(q_k) - p_d|^2 + 0.1|dq_k|^2 + 0.01|ddq_k|^2 + 1e-3|u_k|^2)
         + w_s/2 sum_k sum_objects |r_k|^2                          (soft balancing, w_s = 100)
    s.t. x_{k+1} = A x_k + B u_k    (exact triple integrator)       x_0 given
         q, dq, ddq, u within the model's limits, lambda in [0, 100] N
         p(q_N) = p_d, dq_N = 0, ddq_N = 0          (terminal, Eq. U-9; optional, notes §3.5)

r_k = (Y(x_k) theta_j - G lambda_{k,j}) / sqrt(6 n_obj): the frictionless Newton-Euler
residual of virtual object j (one per CoM-polytope vertex for "robust", Sec. IV-B), each
with its own contact normal forces (notes §3.5); p(q) the tray position by forward
kinematics (linearized, Gauss-Newton, as the terminal condition). Solved by 3 SQP
iterations from the resting state; each QP is sparse and solved by OSQP, set up once per
plan (the sparsity of P and A is fixed) and updated and warm-started from the previous
iterate. The limits are hard: a goal they cannot reach in time T is an
infeasible QP, reported as such.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import osqp
import scipy.sparse as sp
from scipy.optimize import nnls

from .objects import BalancedObject
from .tray import TrayModel, interpolate, rollout, step_matrices

METHODS = ("robust", "center", "top")
FD_STEP = 1e-7  # forward-difference step of the balancing Jacobian
# OSQP at 1e-4 (see docs/balancing.md), without polishing: on these QPs it failed on every
# plan measured (status_polish -1 on 18 tray and 12 robot plans) and only cost a factorization
OSQP_SETTINGS = {
    "verbose": False,
    "eps_abs": 1e-4,
    "eps_rel": 1e-4,
    "max_iter": 20000,
    "polishing": False,
}


class PlanningError(RuntimeError):
    """No trajectory: the message names the cause and what to change."""


def on_pattern(pattern: sp.csc_matrix, M: sp.csc_matrix) -> sp.csc_matrix:
    """M with exactly the sparsity of ``pattern`` (M's nonzeros must lie on it): OSQP's
    ``update`` takes new values for the pattern it was set up with, and scipy drops the
    entries of a product that happen to be zero."""
    pattern.sort_indices()
    M = M.tocsc()
    M.sort_indices()
    keys = _linear_keys(pattern)
    at = np.searchsorted(keys, _linear_keys(M))
    if np.any(at >= len(keys)) or not np.array_equal(
        keys[np.minimum(at, len(keys) - 1)], _linear_keys(M)
    ):
        raise ValueError("the matrix has entries off the fixed sparsity pattern")
    data = np.zeros(pattern.nnz)
    data[at] = M.data
    return sp.csc_matrix((data, pattern.indices, pattern.indptr), shape=pattern.shape)


def _linear_keys(M: sp.csc_matrix) -> np.ndarray:
    """column-major linear index of each stored entry of a csc matrix (sorted indices)."""
    columns = np.repeat(np.arange(M.shape[1]), np.diff(M.indptr))
    return columns * M.shape[0] + M.indices


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
    goal_tolerance: float = 0.01  # [m] a plan ending farther from the goal is refused
    # False: no terminal condition, as in the authors' OCS2 stack, whose multiple-shooting
    # SQP drops it (notes §3.5): the position cost alone pulls the tray to the goal
    terminal_constraint: bool = True

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
    """Nodes of a planned trajectory (in the model's coordinates) and what the solver reported."""

    times: np.ndarray
    X: np.ndarray  # (N+1, 3 nq) states [q, dq, ddq]
    U: np.ndarray  # (N, nq) jerks
    forces: np.ndarray  # (N+1, n_lambda) planned normal forces
    method: str
    balancing_rms: float  # RMS of the soft balancing residuals r at the nodes
    solve_time: float  # [s] wall time of the SQP
    cpu_time: float = 0.0  # [s] process time of the SQP (all threads)
    qp_status: list[str] = field(default_factory=list)
    robot: str = "tray"  # the model: "tray" or "ridgeback_ur10"

    @property
    def nq(self) -> int:
        return self.U.shape[1]

    def states(self, t: np.ndarray) -> np.ndarray:
        """States at times t, exact between nodes (constant jerk)."""
        return interpolate(self.times, self.X, self.U, t)

    def sample_times(self, period: float = 0.01) -> np.ndarray:
        return np.arange(0.0, self.times[-1] + 1e-9, period)


@dataclass(frozen=True)
class Iteration:
    """Progress after one SQP iteration (what the ``~/plan`` action sends as feedback)."""

    index: int  # 1-based
    of: int
    qp_status: str
    balancing_rms: float
    goal_distance: float  # [m] |p(q_N) - p_d| of the iterate
    elapsed: float  # [s]


def tray_model(settings: PlannerSettings) -> TrayModel:
    """The free-flying tray with the settings' limits."""
    workspace = (np.array(settings.workspace_lo), np.array(settings.workspace_hi))
    return TrayModel(
        settings.velocity_limit,
        settings.acceleration_limit,
        settings.jerk_limit,
        settings.tilt_limit,
        workspace,
    )


class TrayPlanner:
    """Builds and solves the OCP for one set of objects, one method and one robot model
    (default: the free-flying tray with the settings' limits)."""

    def __init__(
        self,
        objects: list[BalancedObject],
        method: str,
        settings: PlannerSettings,
        model: object | None = None,
    ):
        self.settings = settings
        self.method = method
        self.model = tray_model(settings) if model is None else model
        self.nq, self.nx = self.model.nq, 3 * self.model.nq
        self.virtual = virtual_objects(objects, method)
        self.N = settings.nodes
        self.n_lambda = [v.G.shape[1] for v in self.virtual]
        self.nl = int(sum(self.n_lambda))
        self.nz = (self.N + 1) * self.nx + self.N * self.nq + (self.N + 1) * self.nl
        self._scale = 1.0 / np.sqrt(6.0 * len(self.virtual))
        self._rows, self._cols, self._lam_values = self._structure()
        self._diag = self._diagonal_weights()
        self._thetas = np.array([v.theta for v in self.virtual])
        self._G = [v.G for v in self.virtual]
        self._G_all = sp.block_diag(self._G, format="csr")  # every object's contacts
        self._P_pattern: sp.csc_matrix | None = None  # structural pattern of the cost's P

    # ----- indices ------------------------------------------------------------------
    def _x(self, k: int) -> slice:
        return slice(k * self.nx, (k + 1) * self.nx)

    def _u(self, k: int) -> slice:
        start = (self.N + 1) * self.nx + k * self.nq
        return slice(start, start + self.nq)

    def _lam(self, k: int) -> slice:
        start = (self.N + 1) * self.nx + self.N * self.nq + k * self.nl
        return slice(start, start + self.nl)

    def _split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        N, nx = self.N, self.nx
        X = z[: (N + 1) * nx].reshape(N + 1, nx)
        lam = z[(N + 1) * nx + N * self.nq :].reshape(N + 1, self.nl)
        return X, lam

    # ----- problem pieces ------------------------------------------------------------
    def _linear_constraints(self, x0: np.ndarray) -> tuple:
        """(A, l, u) without the terminal position rows: dynamics, initial state, bounds."""
        s, N, nx, nq = self.settings, self.N, self.nx, self.nq
        A_d, B_d = step_matrices(s.dt, nq)
        shift = sp.eye(N, N + 1, k=1)
        dyn = sp.hstack(
            [
                sp.kron(sp.eye(N, N + 1), A_d) - sp.kron(shift, np.eye(nx)),
                sp.kron(sp.eye(N), B_d),
                sp.csr_matrix((N * nx, (N + 1) * self.nl)),
            ]
        )
        box_lo, box_hi = np.full(self.nz, -np.inf), np.full(self.nz, np.inf)
        for k in range(N + 1):
            box_lo[self._x(k)], box_hi[self._x(k)] = self.model.state_lo, self.model.state_hi
            box_lo[self._lam(k)], box_hi[self._lam(k)] = 0.0, s.force_limit
        for k in range(N):
            box_lo[self._u(k)], box_hi[self._u(k)] = -self.model.jerk_limit, self.model.jerk_limit
        box_lo[self._x(0)] = box_hi[self._x(0)] = x0
        at_rest = slice(self._x(N).start + nq, self._x(N).stop)
        if s.terminal_constraint:
            box_lo[at_rest] = box_hi[at_rest] = 0.0
        A = sp.vstack([dyn.tocsr(), sp.identity(self.nz, format="csr")], format="csc")
        zero = np.zeros(N * nx)
        return A, np.concatenate([zero, box_lo]), np.concatenate([zero, box_hi])

    def _terminal(self, X: np.ndarray, goal: np.ndarray) -> tuple:
        """Linearized p(q_N) = p_d: (rows, value) with rows @ z = value."""
        p, J = self.model.positions(X[-1, : self.nq])
        start = self._x(self.N).start
        cols = np.tile(np.arange(start, start + self.nq), 3)
        rows = sp.csr_matrix(
            (J[0].ravel(), (np.repeat(np.arange(3), self.nq), cols)), shape=(3, self.nz)
        )
        return rows, goal - p[0] + J[0] @ X[-1, : self.nq]

    def _balancing(self, X: np.ndarray, lam: np.ndarray) -> np.ndarray:
        """r (N+1, n_obj, 6): scaled frictionless Newton-Euler residuals (notes §3.5)."""
        return self._residuals(self.model.regressors(X), lam)

    def _residuals(self, Y: np.ndarray, lam: np.ndarray) -> np.ndarray:
        wrench = np.swapaxes(Y @ self._thetas.T, 1, 2)  # (n, n_obj, 6)
        contact = (lam @ self._G_all.T).reshape(wrench.shape)
        return self._scale * (wrench - contact)

    def _balancing_jacobian(self, X: np.ndarray) -> np.ndarray:
        """d r / d x_k (N+1, n_obj, 6, nx): the regressor's derivative (the model's own if it
        has one, else forward differences over the state entries that enter it; each node's
        residuals depend on its own state only, lambda enters linearly) times every virtual
        object's theta."""
        if hasattr(self.model, "regressor_jacobian"):
            dY = self.model.regressor_jacobian(X)[1]
        else:
            Y = self.model.regressors(X)
            dY = np.zeros(Y.shape + (self.nx,))
            for i in self.model.fd_indices:
                dx = np.zeros(self.nx)
                dx[i] = FD_STEP
                dY[..., i] = (self.model.regressors(X + dx) - Y) / FD_STEP
        return self._scale * np.einsum("nwpi,jp->njwi", dY, self._thetas)

    def _structure(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Row and column indices of the balancing Jacobian's structural nonzeros (fixed:
        the state entries that enter the regressor, the nonzeros of each G), and the
        constant lambda part of its values."""
        N, n_obj, nx = self.N, len(self.virtual), self.nx
        fd = self.model.fd_indices
        rows, cols, lam_values, self._lam_counts = [], [], [], []
        node_rows = 6 * n_obj * np.arange(N + 1)[:, None]
        offset = 0
        for j, (v, n) in enumerate(zip(self.virtual, self.n_lambda, strict=True)):
            rr = 6 * j + np.arange(6)
            rows.append(np.repeat(rr, len(fd))[None, :] + node_rows)
            cols.append(np.tile(fd, 6)[None, :] + nx * np.arange(N + 1)[:, None])
            g_rows, g_cols = np.nonzero(v.G)
            rows.append(rr[g_rows][None, :] + node_rows)
            lam_start = (N + 1) * nx + N * self.nq + offset
            cols.append(g_cols[None, :] + lam_start + self.nl * np.arange(N + 1)[:, None])
            lam_values.append(
                np.broadcast_to(-self._scale * v.G[g_rows, g_cols], (N + 1, len(g_rows)))
            )
            self._lam_counts.append(len(g_rows))
            offset += n
        return np.hstack(rows).ravel(), np.hstack(cols).ravel(), np.hstack(lam_values)

    def _least_squares(self, z: np.ndarray, goal: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
        """(J, r0) with the nonlinear residuals R(z') ~ J z' + r0 near z: soft balancing
        (sqrt(w_s) r) and the position error (sqrt(dt w_p) (p(q_k) - p_d))."""
        N, n_obj, nx, s = self.N, len(self.virtual), self.nx, self.settings
        X, lam = self._split(z)
        r = self._balancing(X, lam)
        dr = self._balancing_jacobian(X)
        w = np.sqrt(s.slack_weight)
        values = []
        lam_cols = np.split(self._lam_values, np.cumsum(self._lam_counts)[:-1], axis=1)
        fd = self.model.fd_indices
        for j in range(n_obj):
            values += [dr[:, j][..., fd].reshape(N + 1, -1), lam_cols[j]]
        J_bal = sp.csr_matrix(
            (w * np.hstack(values).ravel(), (self._rows, self._cols)),
            shape=((N + 1) * 6 * n_obj, self.nz),
        )
        p, Jp = self.model.positions(X[:, : self.nq])
        wp = np.sqrt(s.dt * s.position_weight)
        rows = np.repeat(np.arange(3 * (N + 1)), self.nq)
        cols = (np.arange(self.nq)[None, None, :] + nx * np.arange(N + 1)[:, None, None]).repeat(
            3, axis=1
        )
        J_pos = sp.csr_matrix((wp * Jp.ravel(), (rows, cols.ravel())), shape=(3 * (N + 1), self.nz))
        J = sp.vstack([J_bal, J_pos], format="csr")
        residual = np.concatenate([w * r.ravel(), wp * (p - goal).ravel()])
        return J, residual - J @ z

    def _cost(self, z: np.ndarray, goal: np.ndarray) -> tuple[sp.csc_matrix, np.ndarray]:
        """Gauss-Newton (P, q) of 1/2 |R(z)|^2 + the diagonal regularization, at z; P on
        the fixed structural pattern of the upper triangle (``_P_pattern``)."""
        J, r0 = self._least_squares(z, goal)
        if self._P_pattern is None:  # |J|^T |J| has no cancellations: every structural entry
            ones = J.copy()
            ones.data[:] = 1.0
            self._P_pattern = sp.triu(ones.T.tocsr() @ ones + sp.identity(self.nz), format="csc")
        P = sp.triu((J.T.tocsr() @ J + sp.diags(self._diag)).tocsc(), format="csc")
        q = J.T @ r0 - self._diag * self._target
        return on_pattern(self._P_pattern, P), q

    def _diagonal_weights(self) -> np.ndarray:
        """The regularization weights (diagonal Gauss-Newton terms), dt each: velocity,
        acceleration and jerk as the paper, 1e-6 pulling q towards the start."""
        s, N, nq = self.settings, self.N, self.nq
        node = np.concatenate(
            [np.full(nq, 1e-6), np.full(nq, s.velocity_weight), np.full(nq, s.acceleration_weight)]
        )
        lam = np.full((N + 1) * self.nl, 1e-8)
        return np.concatenate(
            [np.tile(s.dt * node, N + 1), np.full(N * nq, s.dt * s.jerk_weight), lam]
        )

    def plan(
        self,
        start: np.ndarray,
        goal: np.ndarray,
        on_iteration: Callable[[Iteration], None] | None = None,
    ) -> TrayPlan:
        """Plan from the resting configuration ``start`` (q) to the tray position ``goal``
        (3); ``on_iteration`` is called after every SQP iteration."""
        s, N, nx, nq = self.settings, self.N, self.nx, self.nq
        start, goal = np.asarray(start, dtype=float), np.asarray(goal, dtype=float)
        self._check_reachable(start, goal)
        x0 = np.concatenate([start, np.zeros(2 * nq)])
        self._target = np.zeros(self.nz)
        self._target[: (N + 1) * nx] = np.tile(x0, N + 1)
        A_fixed, lo_fixed, hi_fixed = self._linear_constraints(x0)
        z = np.zeros(self.nz)
        z[: (N + 1) * nx] = np.tile(x0, N + 1)
        statuses: list[str] = []
        y = None
        began, began_cpu = time.perf_counter(), time.process_time()
        z[(N + 1) * nx + N * nq :] = np.tile(self._resting_forces(x0), N + 1)
        solver = None
        for iteration in range(s.sqp_iterations):
            X, _ = self._split(z)
            A, lo, hi = A_fixed, lo_fixed, hi_fixed
            if s.terminal_constraint:
                terminal, value = self._terminal(X, goal)
                A = sp.vstack([A_fixed, terminal], format="csc")
                lo, hi = np.concatenate([lo_fixed, value]), np.concatenate([hi_fixed, value])
            P, q = self._cost(z, goal)
            if solver is None:  # set up (ordering, symbolic factorization) once per plan
                solver, A_pattern = osqp.OSQP(), A
                solver.setup(P, q, A, lo, hi, **OSQP_SETTINGS)
            else:  # same sparsity: new values, numeric refactorization only
                solver.update(q=q, l=lo, u=hi, Px=P.data, Ax=on_pattern(A_pattern, A).data)
            solver.warm_start(x=z, y=y)
            result = solver.solve(raise_error=False)
            status = result.info.status
            statuses.append(status)
            if "infeasible" in status:
                raise PlanningError(
                    f"the planning QP is {status}: the goal cannot be reached within "
                    f"T = {s.duration} s under the limits; increase the duration or the limits"
                )
            if status not in ("solved", "solved inaccurate"):
                raise PlanningError(f"the QP solver stopped without a solution ({status})")
            z, y = result.x, result.y
            if on_iteration is not None:
                on_iteration(self._progress(z, goal, iteration, status, began))
        elapsed, cpu = time.perf_counter() - began, time.process_time() - began_cpu
        U = z[(N + 1) * nx : (N + 1) * nx + N * nq].reshape(N, nq)
        X = rollout(x0, U, s.dt)  # exactly the triple integrator, from exactly x0
        self._check_reached(X, goal)
        lam = self._split(z)[1]
        rms = float(np.sqrt(np.mean(self._balancing(X, lam) ** 2)))
        times = np.arange(N + 1) * s.dt
        return TrayPlan(times, X, U, lam, self.method, rms, elapsed, cpu, statuses, self.model.name)

    def _check_reached(self, X: np.ndarray, goal: np.ndarray) -> None:
        """PlanningError if the final tray position misses the goal (the terminal condition
        is linearized: a goal out of the robot's reach is not met after the iterations)."""
        reached = self.model.positions(X[-1, : self.nq])[0][0]
        miss = float(np.linalg.norm(reached - goal))
        if miss > self.settings.goal_tolerance:
            raise PlanningError(
                f"the plan ends {miss:.3f} m from the goal {np.round(goal, 3)} (at "
                f"{np.round(reached, 3)}): the goal is out of the {self.model.name}'s reach "
                "or T is too short; move the goal or lengthen the duration"
            )

    def _resting_forces(self, x0: np.ndarray) -> np.ndarray:
        """Normal forces holding every virtual object at rest at x0 (NNLS): the first
        iterate, resting with these forces, balances exactly."""
        Y = self.model.regressors(x0[None])[0]
        return np.concatenate(
            [nnls(G, Y @ theta)[0] for G, theta in zip(self._G, self._thetas, strict=True)]
        )

    def _progress(
        self, z: np.ndarray, goal: np.ndarray, k: int, status: str, began: float
    ) -> Iteration:
        X, lam = self._split(z)
        rms = float(np.sqrt(np.mean(self._balancing(X, lam) ** 2)))
        reached = self.model.positions(X[-1, : self.nq])[0][0]
        return Iteration(
            k + 1, self.settings.sqp_iterations, status, rms,
            float(np.linalg.norm(reached - goal)), time.perf_counter() - began,
        )  # fmt: skip

    def _check_reachable(self, start: np.ndarray, goal: np.ndarray) -> None:
        nq = self.nq
        if start.shape != (nq,) or goal.shape != (3,):
            raise PlanningError(
                f"start must be a configuration of {nq} coordinates for the {self.model.name} "
                "model, goal a position (3)"
            )
        if not (np.all(np.isfinite(start)) and np.all(np.isfinite(goal))):
            raise PlanningError("start and goal must be finite")
        lo, hi = self.model.state_lo[:nq], self.model.state_hi[:nq]
        if np.any(start < lo) or np.any(start > hi):
            raise PlanningError(f"the start {start} is outside the limits [{lo}, {hi}]")
        if isinstance(self.model, TrayModel) and (np.any(goal < lo[:3]) or np.any(goal > hi[:3])):
            raise PlanningError(
                f"the goal position {goal} is outside the workspace [{lo[:3]}, {hi[:3]}]: "
                "it cannot be reached"
            )
