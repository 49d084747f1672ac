"""identification.least_squares: the streaming R factor, OLS / WLS, TLS and recursive TLS."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core.identification import (
    ExcitationError,
    RecursiveTotalLeastSquares,
    RegressionData,
    least_squares,
    total_least_squares,
)
from inertia_estimation_ros.core.identification.least_squares import checked_samples, gravity_load
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor

TRUTH = InertialParameters.from_mass_com_inertia(
    1.2, [0.1, 0.01, 0.03], np.diag([0.0008, 0.0042, 0.0045])
)
G = np.array([0.0, 0.0, -9.81])


def _excitation(rng, n):
    """Random twists and accelerations (notes lmi-physical-consistency.md, Sec. 6.4)."""
    V = np.c_[rng.normal(size=(n, 3)), rng.normal(size=(n, 3))]
    dV = np.c_[3 * rng.normal(size=(n, 3)), rng.normal(size=(n, 3))]
    return body_regressor(V, dV, G)


def test_noise_free_data_are_recovered_by_every_estimator():
    rng = np.random.default_rng(0)
    Y = _excitation(rng, 20)
    data = RegressionData.from_rows(Y, Y @ TRUTH.vec)
    for estimate in (least_squares(data), total_least_squares(data)):
        assert np.allclose(estimate.vec, TRUTH.vec, rtol=1e-9, atol=1e-12)
    rtls = RecursiveTotalLeastSquares()
    for k in range(20):
        estimate = rtls.update(Y[k], Y[k] @ TRUTH.vec)
        assert (estimate is None) == (k == 0)  # 6 rows cannot fix 10 parameters
    assert np.allclose(estimate.vec, TRUTH.vec, rtol=1e-9, atol=1e-12)


def test_streaming_factor_equals_the_batch_normal_equations():
    rng = np.random.default_rng(1)
    Y = _excitation(rng, 40)
    F = Y @ TRUTH.vec + rng.normal(size=(40, 6)) * 0.1
    sigma = np.r_[[0.05] * 3, [0.5] * 3]
    streamed = RegressionData()
    for start in range(0, 40, 7):
        streamed.add(Y[start : start + 7], F[start : start + 7], 1.0 / sigma)
    Yw, Fw = (Y / sigma[:, None]).reshape(-1, 10), (F / sigma).reshape(-1)
    assert streamed.n_rows == 240
    assert np.allclose(streamed.information, Yw.T @ Yw)
    theta = rng.normal(size=10)
    assert np.isclose(streamed.residual_norm(theta), np.linalg.norm(Yw @ theta - Fw))
    wls = np.linalg.solve(Yw.T @ Yw, Yw.T @ Fw)
    assert np.allclose(least_squares(streamed).vec, wls, rtol=1e-9)


def test_data_from_a_gram_matrix_equal_the_rows_they_sum():
    """``from_gram`` (rows weighted after they were accumulated as moments) gives the same
    normal equations, residuals and estimate as the rows themselves."""
    rng = np.random.default_rng(2)
    Y = _excitation(rng, 30).reshape(-1, 10)
    F = Y @ TRUTH.vec + 0.1 * rng.normal(size=180)
    rows = RegressionData.from_rows(Y, F)
    augmented = np.c_[Y, F]
    gram = RegressionData.from_gram(augmented.T @ augmented, 180)
    assert gram.n_rows == 180
    scale = np.abs(rows.information).max()
    np.testing.assert_allclose(gram.information, rows.information, atol=1e-10 * scale)
    theta = rng.normal(size=10)
    assert np.isclose(gram.residual_norm(theta), rows.residual_norm(theta), rtol=1e-9)
    np.testing.assert_allclose(least_squares(gram).vec, least_squares(rows).vec, rtol=1e-8)


def test_whitening_matrices_per_sample():
    rng = np.random.default_rng(2)
    Y = _excitation(rng, 10)
    F = Y @ TRUTH.vec + rng.normal(size=(10, 6))
    W = np.linalg.inv(np.linalg.cholesky(np.diag(np.arange(1.0, 7.0)) + 0.1)).T[None].repeat(10, 0)
    data = RegressionData.from_rows(Y, F, W)
    Yw = np.einsum("kij,kjp->kip", W, Y).reshape(-1, 10)
    assert np.allclose(data.information, Yw.T @ Yw)


def test_weights_follow_the_noise():
    """Heteroscedastic noise: WLS with the true sigmas beats OLS on average."""
    rng = np.random.default_rng(3)
    sigma = np.r_[[0.005] * 3, [1.0] * 3]
    err_ols, err_wls = [], []
    for _ in range(30):
        Y = _excitation(rng, 15)
        F = Y @ TRUTH.vec + rng.normal(size=(15, 6)) * sigma
        err_ols.append(
            np.linalg.norm(least_squares(RegressionData.from_rows(Y, F)).vec - TRUTH.vec)
        )
        err_wls.append(
            np.linalg.norm(least_squares(RegressionData.from_rows(Y, F, 1 / sigma)).vec - TRUTH.vec)
        )
    assert np.median(err_wls) < 0.5 * np.median(err_ols)


def test_tls_matches_the_closed_form():
    """Unscaled TLS: theta = (A^T A - s^2 1)^-1 A^T b, s the smallest singular value of
    [A | b] (Golub and Van Loan), an independent formula for the same estimate."""
    rng = np.random.default_rng(4)
    A = rng.normal(size=(60, 10))
    b = A @ rng.normal(size=10) + rng.normal(size=60) * 0.05
    A_noisy = A + rng.normal(size=A.shape) * 0.05
    tls = total_least_squares(RegressionData.from_rows(A_noisy, b), column_scale=np.ones(11))
    s_min = np.linalg.svd(np.c_[A_noisy, b], compute_uv=False)[-1]
    closed_form = np.linalg.solve(A_noisy.T @ A_noisy - s_min**2 * np.eye(10), A_noisy.T @ b)
    assert np.allclose(tls.vec, closed_form, rtol=1e-8)


def test_tls_is_consistent_where_least_squares_is_attenuated():
    """Equal i.i.d. noise on every column: OLS shrinks theta, TLS does not (Kubus et al.)."""
    rng = np.random.default_rng(5)
    A = rng.normal(size=(20000, 10))
    theta = np.linspace(1.0, 2.0, 10)
    b = A @ theta + rng.normal(size=20000) * 0.5
    data = RegressionData.from_rows(A + rng.normal(size=A.shape) * 0.5, b)
    assert np.all(least_squares(data).vec < 0.85 * theta)
    assert np.allclose(total_least_squares(data, np.ones(11)).vec, theta, rtol=0.05)


def test_static_data_raise_an_excitation_error_with_advice():
    """At rest in two orientations only m and h are determined (paper 001, App. A)."""
    g = np.array([[0.0, 0.0, -9.81], [0.0, -9.81, 0.0]])
    Y = body_regressor(np.zeros((2, 6)), np.zeros((2, 6)), g)
    data = RegressionData.from_rows(Y, Y @ TRUTH.vec)
    with pytest.raises(ExcitationError, match="Ixx.*rotate"):
        least_squares(data)


def test_bad_rows_are_refused():
    data = RegressionData()
    with pytest.raises(ValueError, match="NaN"):
        data.add(np.full((6, 10), np.nan), np.zeros(6))
    with pytest.raises(ValueError, match="do not match"):
        data.add(np.zeros((6, 9)), np.zeros(6))
    with pytest.raises(ExcitationError, match="collect more samples"):
        least_squares(RegressionData.from_rows(np.ones((6, 10)), np.ones(6)))


def test_gravity_load_is_the_static_mass_and_exposes_a_flipped_sign():
    g = np.array([[0.0, 0.0, -9.81], [3.0, -4.0, -8.0]])
    F = body_regressor(np.zeros((2, 6)), np.zeros((2, 6)), g) @ TRUTH.vec
    assert np.allclose(gravity_load(g, F), TRUTH.mass)
    assert np.all(gravity_load(g, -F) < 0)
    with pytest.raises(ValueError, match="NaN"):
        checked_samples(np.zeros((1, 6)), np.zeros((1, 6)), [[np.nan, 0, 0]], np.zeros((1, 6)))
    with pytest.raises(ValueError, match="shapes"):
        checked_samples(np.zeros((2, 6)), np.zeros((1, 6)), np.zeros((2, 3)), np.zeros((2, 6)))
