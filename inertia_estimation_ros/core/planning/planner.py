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
plan (the sparsity of P and A is fixed: P is block diagonal over the nodes, assembled from
each node's J_k^T J_k) and updated and warm-started from the previous iterate. A virtual
object's normal forces enter the QP only when its ZMP leaves the support (``TrayPlanner``:
the same minimizer, much smaller QPs). The limits are hard: a goal they cannot reach in time
T is an infeasible QP, reported as such.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from types import SimpleNamespace

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


# a face of an inactive object's contact cone may be crossed by this much (unit rows, N/kg):
# what the QP leaves out then, (sqrt(w_s) s d)^2 per node, is below the 1e-8 regularization
CONE_TOLERANCE = 1e-6
# the dynamics rows x_{k+1} - A x_k - B u_k = 0 times this: OSQP stops on unscaled
# residuals at 1e-4, and the plan is re-integrated from the jerks, where a 1e-4 defect per
# node summed to up to 7.6 mm at the goal; x10 leaves < 0.6 mm and OSQP as fast
DYNAMICS_ROW_SCALE = 10.0
_LAYOUT = (
    "active", "n_lambda", "nl", "nz", "_diag", "_G_lambda", "_kept", "_node_cols",
    "_J_fixed", "_P", "_P_blocks", "_A", "_A_fixed",
)  # fmt: skip


class PlanningError(RuntimeError):
    """No trajectory: the message names the cause and what to change."""


class QPSolveError(PlanningError):
    """The QP solver returned no solution (infeasible, or stopped before converging)."""


class FixedPattern:
    """A sparse (CSC) matrix of fixed sparsity assembled from one value per entry: the
    entries (rows, cols), distinct, are given once and ``data(values)`` orders values given
    in that order as the CSC data, what OSQP's ``update(Px=..., Ax=...)`` takes."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]):
        self._order = np.lexsort((rows, cols))  # column-major, rows ascending in a column
        indptr = np.concatenate([[0], np.cumsum(np.bincount(cols, minlength=shape[1]))])
        self.indices, self.indptr, self.shape = rows[self._order], indptr, shape

    def data(self, values: np.ndarray) -> np.ndarray:
        return values[self._order]

    def matrix(self, data: np.ndarray) -> sp.csc_matrix:
        """The matrix with the CSC data ``data`` (as ``data`` orders it)."""
        return sp.csc_matrix((data, self.indices, self.indptr), shape=self.shape)


def _range_projector(G: np.ndarray) -> np.ndarray:
    """The orthogonal projector onto the range of G."""
    U, singular, _ = np.linalg.svd(G)
    Q = U[:, : int(np.sum(singular > 1e-9 * singular[0]))]
    return Q @ Q.T


def _unit_rows(H: np.ndarray) -> np.ndarray:
    return H / np.linalg.norm(H, axis=1, keepdims=True)


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
    # True: a virtual object's normal forces enter the QP only once its ZMP leaves the
    # support (TrayPlanner: the same plans, smaller QPs); False: every object's, always
    screen_forces: bool = True

    @property
    def nodes(self) -> int:
        return int(round(self.duration / self.dt))


@dataclass(frozen=True)
class VirtualObject:
    """One planning hypothesis: theta (m = 1) on an object's frictionless contacts."""

    theta: np.ndarray
    G: np.ndarray  # 6 x n_contacts normal grasp matrix
    face: np.ndarray  # face form of the frictionless contact cone: G lambda, lambda >= 0


def virtual_objects(objects: list[BalancedObject], method: str) -> list[VirtualObject]:
    """Robust: one per CoM-polytope vertex (Sec. IV-B); center / top: the paper's baselines,
    CoM at the object's centroid or on its top face, on the axis."""
    if method not in METHODS:
        raise PlanningError(f"method {method!r} is not one of {METHODS}")
    out = []
    for obj in objects:
        frictionless = replace(obj.contacts, mu=0.0).face_form()
        axis = obj.shape.p_b_s
        coms = {
            "robust": obj.com_vertices,
            "center": axis[None, :],
            "top": np.array([[axis[0], axis[1], obj.height]]),
        }[method]
        out += [
            VirtualObject(theta, obj.contacts.normal_grasp_matrix, frictionless)
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
    qp_solves: int = 0  # QPs solved: one per SQP iteration, more when forces became active

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
    (default: the free-flying tray with the settings' limits).

    Each virtual object's residual r = s (Y theta - G lambda) splits exactly into the part
    off the range of G, s (1 - P) Y theta, which no contact force reaches, and the part in
    it, whose minimum over lambda is zero while P Y theta lies in the cone G lambda >= 0 (its
    ZMP inside the support). A QP carries an object's normal forces only once it is
    "active": the QP without the inactive ones' forces has the same minimizer as with them
    whenever, at its solution, every inactive object's linearized P Y theta lies in the
    cone (then lambda >= 0 with G lambda = P Y theta makes their terms vanish, and dropping
    nonnegative terms that vanish at the minimizer keeps it the minimizer of the convex QP).
    That is checked after every QP; an object that leaves the cone becomes active and the
    QP is solved again, so each plan is the one of the full OCP, up to the solver's
    tolerance and the 1e-8 force regularization. Every plan starts with none active
    (``screen_forces``); in the benchmark's plans none became active, in fast moves of tall
    objects a few do (docs/robust-balancing.md).
    """

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
        self._scale = 1.0 / np.sqrt(6.0 * len(self.virtual))
        self._thetas = np.array([v.theta for v in self.virtual])
        self._G = [v.G for v in self.virtual]
        self._range = np.array([_range_projector(v.G) for v in self.virtual])
        self._faces = [
            _unit_rows(v.face) @ P for v, P in zip(self.virtual, self._range, strict=True)
        ]
        self._layouts: dict[tuple[bool, ...], dict] = {}
        self._use_layout(np.zeros(len(self.virtual), dtype=bool))

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

    # ----- layout: which virtual objects carry normal forces --------------------------
    def _use_layout(self, active: np.ndarray) -> None:
        """Lay the QP out with the normal forces of the ``active`` virtual objects as
        variables: their sizes, the regularization, the constant Jacobian and the fixed
        sparsity of P and A (built once per active set, then reused)."""
        key = tuple(bool(a) for a in active)
        if key not in self._layouts:
            self.active = np.array(key)
            self.n_lambda = [G.shape[1] if a else 0 for G, a in zip(self._G, key, strict=True)]
            self.nl = int(sum(self.n_lambda))
            self.nz = (self.N + 1) * self.nx + self.N * self.nq + (self.N + 1) * self.nl
            self._diag = self._diagonal_weights()
            self._G_lambda = self._contact_matrix()
            self._kept = np.array(
                [np.eye(6) if a else np.eye(6) - P for P, a in zip(self._range, key, strict=True)]
            )
            self._node_cols = self._node_columns()
            self._J_fixed = self._constant_jacobian()
            self._P, self._P_blocks = self._cost_pattern()
            self._A, self._A_fixed = self._constraint_pattern()
            self._layouts[key] = {name: getattr(self, name) for name in _LAYOUT}
        for name, value in self._layouts[key].items():
            setattr(self, name, value)

    def _contact_matrix(self) -> np.ndarray:
        """(6 n_obj, n_lambda): the contact wrench of each object from the active forces."""
        G = np.zeros((6 * len(self.virtual), self.nl))
        col = 0
        for j, (Gj, n) in enumerate(zip(self._G, self.n_lambda, strict=True)):
            G[6 * j : 6 * j + 6, col : col + n] = Gj if n else 0.0
            col += n
        return G

    def _activate(self, z: np.ndarray, newly: np.ndarray, x0: np.ndarray) -> np.ndarray:
        """Switch to the layout with the objects ``newly`` active too; the iterate z in it
        (their forces start as the resting ones, the others' are kept)."""
        X_U, (_, lam) = z[: self._lam(0).start], self._split(z)
        old = np.split(lam, np.cumsum(self.n_lambda)[:-1], axis=1)
        resting = self._resting_forces(x0)
        self._use_layout(self.active | newly)
        forces = [
            old[j] if not newly[j] else np.tile(resting[j], (self.N + 1, 1))
            for j in range(len(self.virtual))
            if self.active[j]
        ]
        return np.concatenate([X_U, np.hstack(forces).ravel()])

    def _leaving_the_cone(self, z_lin: np.ndarray, z: np.ndarray) -> np.ndarray:
        """The inactive objects whose linearized P Y theta at z (linearized at z_lin, as in
        the QP) leaves their contact cone or needs more than the force limit, at any node."""
        X_lin, X = self._split(z_lin)[0], self._split(z)[0]
        wrench = self._wrench + np.einsum("njwi,ni->njw", self._wrench_jacobian, X - X_lin)
        outside = np.array(
            [np.max(wrench[:, j] @ F.T) > CONE_TOLERANCE for j, F in enumerate(self._faces)]
        )
        in_range = np.einsum("jvw,njw->njv", self._range, wrench)
        too_strong = np.linalg.norm(in_range[..., 3:], axis=-1).max(axis=0)
        return ~self.active & (outside | (too_strong > self.settings.force_limit))

    # ----- problem pieces ------------------------------------------------------------
    def _constraint_pattern(self) -> tuple[FixedPattern, np.ndarray]:
        """A's fixed sparsity and the values of its fixed rows: dynamics, the identity of the
        bounds, then (terminal condition) the 3 rows of the linearized p(q_N) = p_d, whose
        values ``_terminal`` gives at each iteration."""
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
        fixed = sp.vstack([DYNAMICS_ROW_SCALE * dyn, sp.identity(self.nz)], format="coo")
        rows, cols = fixed.row, fixed.col
        if s.terminal_constraint:
            q_N = self._x(N).start + np.arange(nq)
            rows = np.concatenate([rows, fixed.shape[0] + np.repeat(np.arange(3), nq)])
            cols = np.concatenate([cols, np.tile(q_N, 3)])
        shape = (fixed.shape[0] + 3 * s.terminal_constraint, self.nz)
        return FixedPattern(rows, cols, shape), fixed.data

    def _bounds(self, x0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(l, u) of the fixed rows of A: dynamics, initial state, limits, resting at the end."""
        s, N, nx, nq = self.settings, self.N, self.nx, self.nq
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
        zero = np.zeros(N * nx)
        return np.concatenate([zero, box_lo]), np.concatenate([zero, box_hi])

    def _terminal(self, X: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Linearized p(q_N) = p_d: (dp/dq (3, nq), value) with dp/dq q_N = value."""
        p, J = self.model.positions(X[-1, : self.nq])
        return J[0], goal - p[0] + J[0] @ X[-1, : self.nq]

    def _wrenches(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Y theta (N+1, n_obj, 6), its derivative by the node's state (N+1, n_obj, 6, nx))
        of every virtual object: the regressor's derivative (the model's own if it has one,
        else forward differences over the state entries that enter it) times each theta."""
        if hasattr(self.model, "regressor_jacobian"):
            Y, dY = self.model.regressor_jacobian(X)
        else:
            Y = self.model.regressors(X)
            dY = np.zeros(Y.shape + (self.nx,))
            for i in self.model.fd_indices:
                dx = np.zeros(self.nx)
                dx[i] = FD_STEP
                dY[..., i] = (self.model.regressors(X + dx) - Y) / FD_STEP
        wrench = np.swapaxes(Y @ self._thetas.T, 1, 2)
        return wrench, np.einsum("nwpi,jp->njwi", dY, self._thetas)

    def _balancing(
        self, X: np.ndarray, lam: np.ndarray, wrench: np.ndarray | None = None
    ) -> np.ndarray:
        """r (N+1, n_obj, 6): scaled frictionless Newton-Euler residuals (notes §3.5); an
        inactive object's contact wrench is P Y theta, what its forces would balance."""
        if wrench is None:
            wrench = np.swapaxes(self.model.regressors(X) @ self._thetas.T, 1, 2)
        kept = np.einsum("jvw,njw->njv", self._kept, wrench)
        return self._scale * (kept - (lam @ self._G_lambda.T).reshape(kept.shape))

    def _node_columns(self) -> np.ndarray:
        """(N+1, nx + n_lambda): each node's state and normal forces, the only variables its
        least-squares residuals depend on (P is block diagonal in them)."""
        k = np.arange(self.N + 1)[:, None]
        lam0 = self._lam(0).start
        return np.hstack([self._x(0).start + self.nx * k + np.arange(self.nx),
                          lam0 + self.nl * k + np.arange(self.nl)])  # fmt: skip

    def _constant_jacobian(self) -> np.ndarray:
        """One node's residual Jacobian (6 n_obj + 3, nx + n_lambda) holding its constant part,
        -sqrt(w_s) s G_j for each virtual object's normal forces; rows: the soft balancing
        sqrt(w_s) r (6 per virtual object), then the position sqrt(dt w_p) p(q_k)."""
        n_bal = 6 * len(self.virtual)
        J = np.zeros((n_bal + 3, self.nx + self.nl))
        J[:n_bal, self.nx :] = -np.sqrt(self.settings.slack_weight) * self._scale * self._G_lambda
        return J

    def _cost_pattern(self) -> tuple[FixedPattern, np.ndarray]:
        """P's upper triangle: each node's structural nonzeros of J_k^T J_k (the state entries
        that enter the regressor, each object's contacts, q in the position) and the
        diagonal, then the jerks' diagonal; and where each node entry lies in the node blocks
        (N+1, nloc, nloc) flattened."""
        N, nloc, n_bal = self.N, self._J_fixed.shape[1], 6 * len(self.virtual)
        S = (self._J_fixed != 0).astype(float)
        S[:n_bal, self.model.fd_indices] = 1.0
        S[n_bal:, : self.nq] = 1.0
        i, j = np.nonzero(np.triu(S.T @ S + np.eye(nloc)))
        blocks = (nloc * nloc * np.arange(N + 1)[:, None] + nloc * i + j).ravel()
        jerks = np.arange(self._u(0).start, self._u(N - 1).stop)
        rows = np.concatenate([self._node_cols[:, i].ravel(), jerks])
        cols = np.concatenate([self._node_cols[:, j].ravel(), jerks])
        return FixedPattern(rows, cols, (self.nz, self.nz)), blocks

    def _least_squares(self, z: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(J (N+1, rows, nloc), R (N+1, rows)) with each node's nonlinear residuals (soft
        balancing sqrt(w_s) r, position sqrt(dt w_p) (p(q_k) - p_d)) R_k(z') ~ R_k + J_k
        (z'_k - z_k) in its variables ``_node_cols``."""
        N, s, n_bal, fd = self.N, self.settings, 6 * len(self.virtual), self.model.fd_indices
        X, lam = self._split(z)
        w, wp = np.sqrt(s.slack_weight), np.sqrt(s.dt * s.position_weight)
        self._wrench, self._wrench_jacobian = self._wrenches(X)  # for _leaving_the_cone
        J = np.repeat(self._J_fixed[None], N + 1, axis=0)
        dr = np.einsum("jvw,njwi->njvi", self._kept, self._wrench_jacobian[..., fd])
        J[:, :n_bal, fd] = w * self._scale * dr.reshape(N + 1, n_bal, len(fd))
        p, Jp = self.model.positions(X[:, : self.nq])
        J[:, n_bal:, : self.nq] = wp * Jp
        r = self._balancing(X, lam, self._wrench)
        R = np.hstack([w * r.reshape(N + 1, -1), wp * (p - goal)])
        return J, R

    def _cost(self, z: np.ndarray, goal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Gauss-Newton (P, q) of 1/2 |R(z)|^2 + the diagonal regularization at z, P as the
        CSC data of ``_P``: node by node, J_k^T J_k and J_k^T (R_k - J_k z_k)."""
        J, R = self._least_squares(z, goal)
        cols = self._node_cols
        Jt = np.swapaxes(J, 1, 2)
        blocks = Jt @ J
        diagonal = np.arange(cols.shape[1])
        blocks[:, diagonal, diagonal] += self._diag[cols]
        q = np.zeros(self.nz)  # the regularization pulls the states towards the start
        n = len(self._target)
        q[:n] = -self._diag[:n] * self._target
        q[cols] += (Jt @ (R - (J @ z[cols][..., None])[..., 0])[..., None])[..., 0]
        jerks = self._diag[self._u(0).start : self._u(self.N - 1).stop]
        return self._P.data(np.concatenate([blocks.reshape(-1)[self._P_blocks], jerks])), q

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
        start_rates: np.ndarray | None = None,
    ) -> TrayPlan:
        """Plan from the configuration ``start`` (q; at rest, or moving with ``start_rates``
        = [dq, ddq], e.g. a bumpless start from a moving reference) to the tray position
        ``goal`` (3); ``on_iteration`` is called after every SQP iteration."""
        s, N, nx, nq = self.settings, self.N, self.nx, self.nq
        start, goal = np.asarray(start, dtype=float), np.asarray(goal, dtype=float)
        self._check_reachable(start, goal)
        rates = np.zeros(2 * nq) if start_rates is None else np.asarray(start_rates, dtype=float)
        if rates.shape != (2 * nq,) or not np.all(np.isfinite(rates)):
            raise PlanningError(f"start_rates must be {2 * nq} finite values [dq, ddq]")
        self._target = np.tile(np.concatenate([start, np.zeros(2 * nq)]), N + 1)
        x0 = np.concatenate([start, rates])
        began, began_cpu = time.perf_counter(), time.process_time()
        self._use_layout(np.full(len(self.virtual), not s.screen_forces))
        z = np.concatenate([np.tile(x0, N + 1), np.zeros(N * nq), self._initial_forces(x0)])
        statuses: list[str] = []
        solver, y, solves = None, None, 0
        for iteration in range(s.sqp_iterations):
            terminal = self._terminal(self._split(z)[0], goal) if s.terminal_constraint else None
            while True:
                if solver is None:  # set up (ordering, symbolic factorization) per layout
                    bounds = self._bounds(x0)
                Px, q, Ax, lo, hi = self._qp(z, goal, bounds, terminal)
                if solver is None:
                    solver = osqp.OSQP()
                    solver.setup(self._P.matrix(Px), q, self._A.matrix(Ax), lo, hi, **OSQP_SETTINGS)
                else:  # same sparsity: new values, numeric refactorization only
                    solver.update(q=q, l=lo, u=hi, Px=Px, Ax=Ax)
                solver.warm_start(x=z, y=y)
                result = self._solved(solver)
                solves += 1
                newly = self._leaving_the_cone(z, result.x)
                if not newly.any():
                    break
                z, solver, y = self._activate(z, newly, x0), None, None
            statuses.append(result.info.status)
            z, y = result.x, result.y
            if on_iteration is not None:
                on_iteration(self._progress(z, goal, iteration, statuses[-1], began))
        elapsed, cpu = time.perf_counter() - began, time.process_time() - began_cpu
        U = z[(N + 1) * nx : (N + 1) * nx + N * nq].reshape(N, nq)
        X = rollout(x0, U, s.dt)  # exactly the triple integrator, from exactly x0
        self._check_reached(X, goal)
        wrench = np.swapaxes(self.model.regressors(X) @ self._thetas.T, 1, 2)
        rms = float(np.sqrt(np.mean(self._balancing(X, self._split(z)[1], wrench) ** 2)))
        times = np.arange(N + 1) * s.dt
        return TrayPlan(
            times, X, U, self._forces(z, wrench), self.method, rms, elapsed, cpu, statuses,
            self.model.name, solves,
        )  # fmt: skip

    def _qp(
        self,
        z: np.ndarray,
        goal: np.ndarray,
        bounds: tuple[np.ndarray, np.ndarray],
        terminal: tuple[np.ndarray, np.ndarray] | None,
    ) -> tuple[np.ndarray, ...]:
        """(P data, q, A data, l, u) of the QP linearized at z (``bounds``: the fixed rows')."""
        A, (lo, hi) = self._A_fixed, bounds
        if terminal is not None:  # the same linearized terminal rows for every layout
            A = np.concatenate([A, terminal[0].ravel()])
            lo, hi = np.concatenate([lo, terminal[1]]), np.concatenate([hi, terminal[1]])
        return *self._cost(z, goal), self._A.data(A), lo, hi

    def _solved(self, solver: osqp.OSQP) -> SimpleNamespace:
        """OSQP's result, or PlanningError naming why there is none."""
        result = solver.solve(raise_error=False)
        status = result.info.status
        if "infeasible" in status:
            raise QPSolveError(
                f"the planning QP is {status}: the goal cannot be reached within "
                f"T = {self.settings.duration} s under the limits; increase the duration or "
                "the limits"
            )
        if status not in ("solved", "solved inaccurate"):
            raise QPSolveError(f"the QP solver stopped without a solution ({status})")
        return result

    def _forces(self, z: np.ndarray, wrench: np.ndarray) -> np.ndarray:
        """(N+1, n_contacts of all objects): the active objects' planned normal forces, and for
        each inactive one the nonnegative forces that give its P Y theta (NNLS; it lies in
        the cone)."""
        lam = np.split(self._split(z)[1], np.cumsum(self.n_lambda)[:-1], axis=1)
        forces = []
        for j, (G, P) in enumerate(zip(self._G, self._range, strict=True)):
            if self.active[j]:
                forces.append(lam[j])
            else:
                forces.append(np.array([nnls(G, P @ w)[0] for w in wrench[:, j]]))
        return np.hstack(forces)

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

    def _initial_forces(self, x0: np.ndarray) -> np.ndarray:
        """The active objects' forces of the first iterate: at rest, with the NNLS resting
        forces (it balances exactly)."""
        resting = self._resting_forces(x0)
        active = [f for f, a in zip(resting, self.active, strict=True) if a]
        return np.tile(np.concatenate([np.zeros(0), *active]), self.N + 1)

    def _resting_forces(self, x0: np.ndarray) -> list[np.ndarray]:
        """Normal forces holding each virtual object at rest at x0 (NNLS)."""
        Y = self.model.regressors(x0[None])[0]
        return [nnls(G, Y @ theta)[0] for G, theta in zip(self._G, self._thetas, strict=True)]

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
