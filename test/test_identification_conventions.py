"""identification.conventions: the data's conventions are recognised by fitting them."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.identification import (
    Box,
    Convention,
    RegressionData,
    diagnose_conventions,
    least_squares,
)
from inertia_estimation_ros.core.identification.least_squares import gravity_load
from inertia_estimation_ros.core.regressor import body_regressor

TRUTH = Box([0.12, 0.05, 0.03], p_b_s=[0.05, 0.02, 0.08]).uniform_density_params(1.3)


def _package_samples(seed: int, n: int = 60):
    """Slow, tilted motion (gravity dominates, as in hand-held data), this package's way."""
    rng = np.random.default_rng(seed)
    V = np.c_[0.8 * rng.normal(size=(n, 3)), 0.2 * rng.normal(size=(n, 3))]
    dV = np.c_[2.0 * rng.normal(size=(n, 3)), 0.5 * rng.normal(size=(n, 3))]
    tilt = rng.normal(size=(n, 3))
    g = 9.81 * tilt / np.linalg.norm(tilt, axis=1, keepdims=True)
    F = (
        body_regressor(V, dV, g) @ TRUTH.vec
        + rng.normal(size=(n, 6)) * np.r_[[0.002] * 3, [0.02] * 3]
    )
    return V, dV, g, F


def _as_user_records(convention: Convention, V, dV, g, F):
    """The same samples as a user with ``convention`` would record them (written out
    independently of Convention.to_package)."""
    if convention.acceleration == "classical":
        dV = np.c_[dV[:, :3], dV[:, 3:] + np.cross(V[:, :3], V[:, 3:])]
    if convention.order == "linear_first":
        V, dV, F = (np.c_[x[:, 3:], x[:, :3]] for x in (V, dV, F))
    if convention.gravity == "specific_force":
        g = -g
    if convention.wrench == "reaction":
        F = -F
    return V, dV, g, F


@pytest.mark.parametrize(
    "convention",
    [
        Convention(),
        Convention(wrench="reaction"),
        Convention(order="linear_first", acceleration="classical"),
        Convention(wrench="reaction", gravity="specific_force"),
    ],
    ids=str,
)
def test_the_convention_of_the_data_is_recognised(convention):
    samples = _as_user_records(convention, *_package_samples(0))
    diagnosis = diagnose_conventions(*samples)
    assert diagnosis.best == convention and diagnosis.clear
    assert np.allclose(diagnosis.fits[0].params.mass, TRUTH.mass, rtol=0.02)
    assert str(convention) in str(diagnosis).splitlines()[-1]


def test_a_sign_check_on_the_gravity_load_cannot_tell_what_the_fit_can():
    """Sensor reaction AND an accelerometer's specific force: the gravity-load mass is
    positive, so that check passes, yet the data do not follow the package's conventions;
    the diagnosis names both flips and the package reading's consistent fit is far off."""
    convention = Convention(wrench="reaction", gravity="specific_force")
    V, dV, g, F = _as_user_records(convention, *_package_samples(1))
    assert np.mean(gravity_load(g, F)) > 0
    diagnosis = diagnose_conventions(V, dV, g, F)
    assert diagnosis.best == convention
    as_given = next(fit for fit in diagnosis.fits if fit.convention == Convention())
    assert as_given.relative_residual > 10 * diagnosis.fits[0].relative_residual
    data = RegressionData.from_rows(body_regressor(V, dV, g), F)
    assert not least_squares(data).is_consistent()


def test_data_in_world_axes_are_recognised_given_the_orientations():
    V, dV, g, F = _package_samples(3)
    R_w_b = Rotation.random(len(V), random_state=4).as_matrix()
    in_world = [
        np.concatenate([R_w_b @ x[:, :3, None], R_w_b @ x[:, 3:, None]], axis=1)[..., 0]
        for x in (V, dV, F)
    ]
    g_world = np.einsum("kij,kj->ki", R_w_b, g)
    diagnosis = diagnose_conventions(in_world[0], in_world[1], g_world, in_world[2], R_w_b)
    assert diagnosis.best == Convention(frame="world") and diagnosis.clear
    with pytest.raises(ValueError, match="R_w_b"):
        diagnose_conventions(V, dV, g, F, R_w_b[:3])


def test_malformed_samples_get_a_clear_error():
    V, dV, g, F = _package_samples(2, 10)
    with pytest.raises(ValueError, match="shapes"):
        diagnose_conventions(V, dV, g[:, :2], F)
