"""identification.sdp: paper 003's SDP (Eq. 25) with margins, shapes, CoM regions and priors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.consistency import ConsistencyError
from inertia_estimation_ros.core.identification import (
    Box,
    ConsistentIdentification,
    Ellipsoid,
    RegressionData,
    least_squares,
)
from inertia_estimation_ros.core.inertial import InertialParameters, meets_bound
from inertia_estimation_ros.core.regressor import body_regressor

G = np.array([0.0, 0.0, -9.81])
# Notes lmi-physical-consistency.md, Sec. 6.4: a thin box, so the triangle inequality is tight.
R_BOX = Rotation.from_rotvec([0.0, 0.0, 0.4]).as_matrix()
DIMS = np.array([0.20, 0.08, 0.04])
TRUTH = Box(DIMS / 2, R_BOX, [0.10, 0.01, 0.03]).uniform_density_params(1.2)
ELLIPSOID = Ellipsoid(1.1 * np.sqrt(3) / 2 * DIMS, R_BOX, TRUTH.com)
NOISE = np.r_[[0.05] * 3, [0.5] * 3]
UNIT_SCALE = np.r_[1.0, [10.0] * 3, [100.0] * 6]  # kg, kg m, kg m^2 (notes Sec. 6.4)


def _data(rng, n, noise=NOISE):
    V = np.c_[rng.normal(size=(n, 3)), np.zeros((n, 3))]
    dV = np.c_[3 * rng.normal(size=(n, 3)), rng.normal(size=(n, 3))]
    Y = body_regressor(V, dV, G)
    return RegressionData.from_rows(Y, Y @ TRUTH.vec + rng.normal(size=(n, 6)) * noise)


def _error(params):
    return np.linalg.norm((params.vec - TRUTH.vec) * UNIT_SCALE) / np.linalg.norm(
        TRUTH.vec * UNIT_SCALE
    )


def test_monte_carlo_of_the_notes():
    """Least squares is inconsistent most of the time; the SDP never is, and the tighter
    the constraints, the smaller the error (notes Sec. 6.4, 20 trials per sample size)."""
    rng = np.random.default_rng(0)
    plain = ConsistentIdentification()
    bounded = ConsistentIdentification(shapes=ELLIPSOID, com_regions=ELLIPSOID)
    for n, ls_inconsistent_at_least in ((5, 15), (10, 10)):
        errors = {"ls": [], "J": [], "J+ell": []}
        inconsistent = 0
        for _ in range(20):
            data = _data(rng, n)
            ls = least_squares(data)
            inconsistent += not ls.is_consistent()
            errors["ls"].append(_error(ls))
            for key, sdp in (("J", plain), ("J+ell", bounded)):
                result = sdp.solve(data)
                estimate = result.params
                assert estimate.is_consistent(margin=0.0)
                assert meets_bound(estimate.pseudo_inertia, result.margins[0])
                assert key == "J" or ELLIPSOID.can_realize(estimate, tol=1e-6)
                errors[key].append(_error(estimate))
        median = {key: np.median(value) for key, value in errors.items()}
        assert median["J+ell"] <= median["J"] <= median["ls"]
        assert inconsistent >= ls_inconsistent_at_least


def test_noise_free_data_recover_the_truth():
    data = _data(np.random.default_rng(1), 30, noise=0.0)
    for sdp in (ConsistentIdentification(), ConsistentIdentification(shapes=ELLIPSOID)):
        assert np.allclose(sdp.solve(data).params.vec, TRUTH.vec, rtol=1e-5, atol=1e-7)


def test_reused_problem_equals_a_fresh_one():
    """Streaming: the compiled (DPP) problem re-solved on new data gives a fresh solve's answer."""
    rng = np.random.default_rng(2)
    reused = ConsistentIdentification(shapes=ELLIPSOID)
    assert reused.problem.is_dpp()
    for n in (6, 12, 40):
        data = _data(rng, n)
        again = reused.solve(data).params
        fresh = ConsistentIdentification(shapes=ELLIPSOID).solve(data).params
        # Equal up to the solver tolerance: 1e-8 of the objective, ~1e-4 in flat directions.
        difference = (again.vec - fresh.vec) * UNIT_SCALE
        assert np.linalg.norm(difference) < 1e-3 * np.linalg.norm(TRUTH.vec * UNIT_SCALE)


def test_a_heavy_prior_wins_in_both_metrics():
    data = _data(np.random.default_rng(3), 8)
    prior = Box(DIMS / 2, R_BOX, [0.0, 0.0, 0.0]).uniform_density_params(2.0)
    euclidean = ConsistentIdentification(regularizer="euclidean")
    entropic = ConsistentIdentification(regularizer="entropic")
    assert np.allclose(euclidean.solve(data, prior, 1e6).params.vec, prior.vec, atol=1e-4)
    assert np.allclose(entropic.solve(data, prior, 1e6).params.vec, prior.vec, atol=1e-3)
    unregularized = ConsistentIdentification().solve(data).params.vec
    for sdp in (euclidean, entropic):
        assert np.allclose(sdp.solve(data, prior, 1e-9).params.vec, unregularized, atol=1e-4)


@pytest.mark.parametrize("weighed", [slice(0, 4), slice(4, 10)], ids=["mass, CoM", "inertia"])
def test_prior_metric_weighs_parameters_separately(weighed):
    """A metric that weighs only some parameters pins them to the prior and leaves the rest
    to the data: the prior is right in the weighed parameters and wrong in all the others,
    which noise-free data then recover (a scaled-identity metric would pull them all)."""
    data = _data(np.random.default_rng(4), 30, noise=0.0)
    R_prior = Rotation.from_rotvec([0.1, -0.1, 0.6]).as_matrix()
    wrong = Box(1.1 * DIMS / 2, R_prior, [0.11, -0.01, 0.035]).uniform_density_params(1.3)
    assert np.all(np.abs(wrong.vec - TRUTH.vec) > 1e-5)
    prior = wrong.vec.copy()
    prior[weighed] = TRUTH.vec[weighed]
    metric = np.zeros((10, 10))
    metric[weighed, weighed] = 1e6 * np.eye(len(range(10)[weighed]))
    sdp = ConsistentIdentification(regularizer="euclidean")
    estimate = sdp.solve(data, InertialParameters(prior), metric).params
    np.testing.assert_allclose(estimate.vec, TRUTH.vec, rtol=1e-4, atol=1e-6)


def test_com_region_is_enforced():
    data = _data(np.random.default_rng(5), 10)
    region = Box([0.01, 0.01, 0.01], p_b_s=[0.0, 0.0, 0.0])
    estimate = ConsistentIdentification(com_regions=region).solve(data).params
    assert region.contains(estimate.com, tol=1e-6)


def test_two_bodies_and_extra_parameters():
    """Block rows of two bodies plus a viscous term: noise-free data recover all of them."""
    rng = np.random.default_rng(6)
    other = InertialParameters.from_mass_com_inertia(0.5, [0.0, 0.2, 0.0], np.eye(3) * 1e-3)
    friction = 0.3
    rows, values = [], []
    for _ in range(20):
        V, dV = rng.normal(size=(2, 2, 6))
        velocity = rng.normal()
        Y = np.zeros((12, 21))
        Y[:6, :10], Y[6:, 10:20] = body_regressor(V[0], dV[0], G), body_regressor(V[1], dV[1], G)
        Y[:, 20] = velocity
        rows.append(Y)
        values.append(Y @ np.r_[TRUTH.vec, other.vec, friction])
    sdp = ConsistentIdentification(2, n_extra=1, shapes=[ELLIPSOID, None])
    result = sdp.solve(RegressionData.from_rows(np.vstack(rows), np.concatenate(values)))
    assert np.allclose(result.bodies[0].vec, TRUTH.vec, atol=1e-6)
    assert np.allclose(result.bodies[1].vec, other.vec, atol=1e-6)
    assert np.isclose(result.extra[0], friction, atol=1e-6)


def test_infeasible_constraints_raise_a_clear_error():
    """A CoM region outside the bounding shape: no solver certifies, ConsistencyError."""
    shape, region = Ellipsoid([0.1, 0.1, 0.1]), Box([0.01, 0.01, 0.01], p_b_s=[1.0, 0.0, 0.0])
    sdp = ConsistentIdentification(shapes=shape, com_regions=region)
    with pytest.raises(ConsistencyError, match="infeasible"):
        sdp.solve(_data(np.random.default_rng(7), 10))


def test_bad_calls_are_refused():
    sdp = ConsistentIdentification(regularizer="entropic")
    data = _data(np.random.default_rng(9), 10)
    with pytest.raises(ValueError, match="needs a prior"):
        sdp.solve(data)
    inconsistent = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([1, 1, 3]))
    with pytest.raises(ValueError, match="consistent"):
        sdp.solve(data, inconsistent, 1.0)
    with pytest.raises(ValueError, match="no data"):
        ConsistentIdentification().solve(RegressionData())
    with pytest.raises(ValueError, match="regularizer"):
        ConsistentIdentification(regularizer="l1")
