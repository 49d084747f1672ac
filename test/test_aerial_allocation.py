"""core.aerial allocation and distribution (paper 002, eqs. 4, 13, 17-27, 39) against the
paper's own definitions built independently here, finite differences and the check values of
the notes (aerial-cable-team-phri.md, section 4.6)."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core.aerial.allocation import (
    GRAVITY,
    AllocationError,
    CableAllocation,
    edge_null_vectors,
)
from inertia_estimation_ros.core.aerial.distribution import (
    GradientDistribution,
    desired_robot_positions,
    distance_gradient,
    nominal_distribution,
)
from inertia_estimation_ros.core.aerial.optimization import (
    OptimizationDistribution,
    OptimizationSettings,
    _Problem,
)
from inertia_estimation_ros.core.spatial import exp3, skew

# RotorTM's triangular payload (notes section 3.9).
RHO = np.array([[-0.1540, -0.267, 0.01125], [0.3083, 0.0, 0.01125], [-0.1540, 0.267, 0.01125]])
M_L = 0.278
LENGTHS = np.ones(3)
X_L = np.array([0.0, 0.0, 1.0])
ATTACH = X_L + RHO
HOVER = np.r_[0.0, 0.0, M_L * GRAVITY, 0.0, 0.0, 0.0]


def polygon(n: int, radius: float = 0.4) -> np.ndarray:
    angles = 2 * np.pi * np.arange(n) / n
    return np.column_stack([radius * np.cos(angles), radius * np.sin(angles), np.zeros(n)])


def paper_P(rho: np.ndarray, R_L: np.ndarray) -> np.ndarray:
    """Eq. 4 written out block by block, as printed."""
    top = np.hstack([np.eye(3)] * len(rho))
    bottom = np.hstack([skew(r) @ R_L.T for r in rho])
    return np.vstack([top, bottom])


def random_rotations(count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [exp3(rng.normal(size=3)) for _ in range(count)]


@pytest.mark.parametrize("n", [3, 4, 8])
def test_P_pseudo_inverse_null_basis_and_projector(n):
    rho = RHO if n == 3 else polygon(n)
    alloc = CableAllocation(rho)
    for R in random_rotations(5, seed=n):
        P = alloc.matrix(R)
        assert np.allclose(P, paper_P(rho, R), atol=1e-14)  # factorisation of notes 2.2
        assert np.allclose(P @ alloc.pseudo_inverse(R), np.eye(6), atol=1e-12)  # eq. 13
        assert np.allclose(alloc.pseudo_inverse(R), np.linalg.pinv(P), atol=1e-12)
        B = alloc.projector(R)
        assert np.abs(P @ B).max() < 1e-12  # eq. 23
        mu, w = np.random.default_rng(n).normal(size=(2, 3 * n))
        assert np.allclose(alloc.project(R, mu), B @ mu, atol=1e-12)  # the O(n) forms
        assert np.allclose(alloc.solve(R, w[:6]), alloc.pseudo_inverse(R) @ w[:6], atol=1e-12)
        assert np.allclose(B @ B, B, atol=1e-12) and np.allclose(B, B.T, atol=1e-12)
        N = alloc.null_basis(R)
        assert N.shape == (3 * n, 3 * n - 6)  # errata 4 and 6: c has 3n - 6 entries
        assert np.allclose(N.T @ N, np.eye(3 * n - 6), atol=1e-12)
        assert np.abs(P @ N).max() < 1e-12
        assert np.allclose(N @ N.T, B, atol=1e-12)


def test_null_basis_is_continuous_in_the_payload_attitude():
    """A small rotation changes N by as little (no SVD sign flips; notes pitfall 3)."""
    alloc = CableAllocation(polygon(5))
    R = random_rotations(1)[0]
    step = exp3([1e-4, -2e-4, 1e-4])
    change = np.abs(alloc.null_basis(R @ step) - alloc.null_basis(R)).max()
    assert change < 1e-3


def test_closed_form_null_basis_for_three_cables():
    """Notes section 2.2: the three edge vectors span the null space of P (n = 3)."""
    alloc = CableAllocation(RHO)
    edges = edge_null_vectors(RHO)
    assert np.abs(alloc.P_b @ edges).max() < 1e-14
    assert np.linalg.matrix_rank(edges) == 3
    for R in random_rotations(3):
        world_edges = np.kron(np.eye(3), R) @ edges
        assert np.abs(alloc.matrix(R) @ world_edges).max() < 1e-14
        assert np.allclose(alloc.projector(R) @ world_edges, world_edges, atol=1e-12)


def test_nominal_hover_tensions_match_the_notes():
    """Notes 4.6: 0.9094 N for robots 1 and 3, 0.9085 N for robot 2, all vertical."""
    mu = nominal_distribution(CableAllocation(RHO), np.eye(3), HOVER).reshape(3, 3)
    assert np.allclose(mu[:, :2], 0.0, atol=1e-12)
    assert np.allclose(mu[:, 2], [0.9094, 0.9085, 0.9094], atol=5e-5)


def test_nominal_clamp_keeps_cables_pulling():
    """A wrench P^+ would meet by pushing on a cable gets a floored vertical component."""
    alloc = CableAllocation(RHO)
    wrench = np.r_[0.0, 0.0, 0.5, 0.5, 0.0, 0.0]  # a roll moment beyond what gravity allows
    assert nominal_distribution(alloc, np.eye(3), wrench)[2::3].min() < 0.0
    clamped = nominal_distribution(alloc, np.eye(3), wrench, min_vertical_tension=0.05)
    assert clamped[2::3].min() == pytest.approx(0.05)


@pytest.mark.parametrize("rho", [RHO[:2], np.array([[0, 0, 0], [0.2, 0, 0], [0.4, 0, 0.0]])])
def test_two_cables_or_collinear_attach_points_are_refused(rho):
    with pytest.raises(AllocationError, match="rank .* < 6"):
        CableAllocation(rho)


def test_wrench_estimate_round_trip_eq39():
    """Appendix A: allocate mu = P^+ [m_L g e3 - F_H; -M_H], estimate with eq. 39, get the
    human wrench back; with no human the estimate is zero (erratum 12: m is m_L)."""
    alloc = CableAllocation(RHO)
    for R in random_rotations(3, seed=7):
        for human in (
            np.zeros(6),
            np.r_[0.5, 0, 0, 0, 0, 0.05],
            np.r_[0.2, -0.3, 0.4, 0.01, 0.02, 0.03],
        ):
            mu = alloc.pseudo_inverse(R) @ (HOVER - human)
            mu_k = mu.reshape(3, 3)
            tension = np.linalg.norm(mu_k, axis=1)
            xi = -mu_k / tension[:, None]  # erratum 1: mu_k = -|mu_k| xi_k acts on the payload
            assert np.allclose(alloc.external_wrench(R, tension, xi, M_L), human, atol=1e-12)


def test_distance_gradient_is_the_derivative_over_all_robots():
    """Eq. 20 against finite differences of w = sum_k |p_O - x_k|^2 (eq. 19; erratum 2: the
    sum runs over all n robots, so every block of the gradient is non-zero)."""
    rng = np.random.default_rng(3)
    mu = rng.normal(size=9) + np.tile([0, 0, 1.0], 3)
    p_O = np.array([0.9, 0.2, 1.9])

    def w(m):
        return np.sum((p_O - desired_robot_positions(ATTACH, m, LENGTHS)) ** 2)

    h = 1e-6
    numeric = np.array([(w(mu + h * e) - w(mu - h * e)) / (2 * h) for e in np.eye(9)])
    analytic = distance_gradient(mu, ATTACH, LENGTHS, p_O)
    assert np.allclose(analytic, numeric, atol=1e-7)
    assert np.all(np.linalg.norm(analytic.reshape(3, 3), axis=1) > 1e-3)


def iterate_gradient(a: float, steps: int = 60) -> tuple[np.ndarray, GradientDistribution]:
    alloc = CableAllocation(RHO)
    mu_bar = nominal_distribution(alloc, np.eye(3), HOVER)
    method = GradientDistribution(alloc, LENGTHS, a=a, b=2.0)
    p_O = np.array([0.9, 0.0, 1.9])
    history = []
    for _ in range(steps):
        mu = method.update(np.eye(3), ATTACH, mu_bar, p_O)
        history.append(np.linalg.norm(p_O - desired_robot_positions(ATTACH, mu, LENGTHS), axis=1))
        # The modifier lies in the null space (erratum 3): the payload wrench is unchanged.
        assert np.abs(alloc.matrix(np.eye(3)) @ method.mu_tilde).max() < 1e-12
        assert np.allclose(mu[2::3], mu_bar[2::3], atol=1e-12)  # vertical parts stay (notes 2.2)
    return np.array(history), method


@pytest.mark.parametrize("a, expected", [(1.0, 0.68), (2.0, 0.76)])
def test_gradient_method_converges_at_safe_gains(a, expected):
    """Notes 4.6: robot 2 (nearest p_O) moves from 0.60 m to 0.68 m (a = 1), 0.76 m (a = 2)."""
    history, _ = iterate_gradient(a)
    assert history[0, 1] > 0.6
    assert np.allclose(history[-1], history[-2], atol=1e-9)  # converged
    assert history[-1, 1] == pytest.approx(expected, abs=0.006)  # the notes' two digits


def test_gradient_method_limit_cycle_at_a5_b2():
    """Notes 4.6: a = 5, b = 2 does not converge. Here it settles on a 4-cycle whose even
    iterates are the notes' numbers: robot 2 at 1.06 and 1.27 m (notes ~1.07 and 1.28),
    robots 1 and 3 at 0.90 and 0.82 m (notes ~0.89 and 0.81)."""
    history, _ = iterate_gradient(5.0, steps=200)
    tail = history[-8:]
    assert np.allclose(tail[:4], tail[4:], atol=1e-4)  # period 4
    assert np.abs(np.diff(tail[:, 1])).min() > 0.1  # never settles
    even = tail[::2]
    assert sorted(np.round(even[:2, 1], 2)) == pytest.approx([1.06, 1.27], abs=0.015)
    assert sorted(np.round(even[:2, 0], 2)) == pytest.approx([0.82, 0.90], abs=0.015)


def test_optimization_keeps_every_distance_and_matches_the_notes():
    """Notes 4.6: human at (1.2, -0.6, 1.6) m: the three pairs end at 0.750 m, tension norms
    0.909 -> 0.916 N, P N c ~ 0. A second (warm-started) call needs at most one iteration."""
    alloc = CableAllocation(RHO)
    mu_bar = nominal_distribution(alloc, np.eye(3), HOVER)
    method = OptimizationDistribution(alloc, LENGTHS)
    p_O = np.array([1.2, -0.6, 1.6])
    result = method.update(np.eye(3), ATTACH, mu_bar, p_O)
    assert result.solved and result.c.shape == (3,)
    x = desired_robot_positions(ATTACH, result.mu_des, LENGTHS)
    pairs = [np.linalg.norm(x[i] - x[j]) for i, j in [(0, 1), (0, 2), (1, 2)]]
    assert np.allclose(pairs, 0.75, atol=1e-6)
    assert np.all(np.linalg.norm(x - p_O, axis=1) >= 0.75 - 1e-6)
    assert np.allclose(np.linalg.norm(result.mu_des.reshape(3, 3), axis=1), 0.916, atol=1e-3)
    assert np.abs(alloc.matrix(np.eye(3)) @ (result.mu_des - mu_bar)).max() < 1e-12
    again = method.update(np.eye(3), ATTACH, mu_bar, p_O)
    assert again.solved and again.iterations <= 1


def test_optimization_jacobians_and_robot_blocks():
    """Erratum 5: robot k's block of N is rows 3k..3k+2; the analytic Jacobians of x_k(c)
    and of every constraint match finite differences (n = 4, two robots per side)."""
    rho = polygon(4)
    alloc = CableAllocation(rho)
    R = random_rotations(1, seed=4)[0]
    attach = X_L + rho @ R.T
    mu_bar = nominal_distribution(alloc, R, HOVER)
    settings = OptimizationSettings(max_tension=2.0)
    problem = _Problem(
        alloc.null_basis(R), mu_bar, attach, np.full(4, 0.8), X_L + [1, 0.3, 0.5], settings
    )
    c = np.random.default_rng(5).normal(scale=0.1, size=6)
    h = 1e-6
    x0, J = problem.positions(c)
    g0, G = problem.constraints(c)
    for m, e in enumerate(np.eye(6)):
        xp, xm = problem.positions(c + h * e)[0], problem.positions(c - h * e)[0]
        assert np.allclose(J[:, :, m], (xp - xm) / (2 * h), atol=1e-7)
        gp, gm = problem.constraints(c + h * e)[0], problem.constraints(c - h * e)[0]
        assert np.allclose(G[:, m], (gp - gm) / (2 * h), atol=1e-6)
    cost, grad = problem.cost(c)
    assert cost == pytest.approx(mu_bar @ mu_bar + c @ c)  # notes: |mu_bar|^2 + |c|^2


def test_optimization_falls_back_when_no_splay_is_feasible():
    """A human inside the team: no tension keeps 0.75 m; the nominal tensions are kept."""
    alloc = CableAllocation(RHO)
    mu_bar = nominal_distribution(alloc, np.eye(3), HOVER)
    method = OptimizationDistribution(alloc, LENGTHS, OptimizationSettings(head_distance=3.0))
    result = method.update(np.eye(3), ATTACH, mu_bar, X_L + [0, 0, 1.0])
    assert not result.solved and "fallback" in result.message
    assert np.allclose(result.mu_des, mu_bar)
