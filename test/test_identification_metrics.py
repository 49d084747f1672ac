"""identification.metrics (paper 001 Eqs. 10-12, Riemannian distance) and the composite
test object of paper 001, against the ground-truth table of the notes."""

from __future__ import annotations

import numpy as np
import pytest

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.identification import (
    CONFIGURATIONS,
    com_errors,
    composite_object,
    inertia_errors,
    mass_error,
    outer_shell,
    riemannian_distance,
)
from inertia_estimation_ros.core.inertial import InertialParameters

BOX = np.array([0.2, 0.3, 0.05])
TRUTH = InertialParameters.from_mass_com_inertia(
    0.8, [0.0, 0.05, 0.025], np.diag([7.6e-3, 1.8e-3, 9.2e-3])
)


def test_errors_are_normalized_by_the_bounding_box():
    m = TRUTH.mass
    moved = InertialParameters.from_mass_com_inertia(
        1.1 * m, TRUTH.com + 0.1 * BOX * [1, 0, 0], TRUTH.inertia_about_com
    )
    assert mass_error(moved, TRUTH) == pytest.approx(10.0)
    assert np.allclose(com_errors(moved, TRUTH, BOX), [10.0, 0.0, 0.0])
    box_inertia = m / 12 * (np.sum(BOX**2) * np.eye(3) - np.outer(BOX, BOX))
    shifted = InertialParameters(
        TRUTH.vec + np.r_[np.zeros(4), 0.5 * box_inertia[0, 0], 0, 0, 0, 0, 0]
    )
    assert np.allclose(inertia_errors(shifted, TRUTH, BOX), [50.0, 0, 0, 0, 0, 0])
    off_diagonal = InertialParameters(
        TRUTH.vec + np.r_[np.zeros(4), 0, 0, 0, 0, 2 * box_inertia[1, 2], 0]
    )
    assert np.allclose(inertia_errors(off_diagonal, TRUTH, BOX), [0, 0, 0, 0, 200.0, 0])


def test_inertia_error_about_the_com_ignores_the_parallel_axis_term():
    shifted = InertialParameters.from_mass_com_inertia(
        TRUTH.mass, TRUTH.com + [0.02, 0.0, 0.0], TRUTH.inertia_about_com
    )
    assert np.allclose(inertia_errors(shifted, TRUTH, BOX, about_com=True), 0.0)
    assert inertia_errors(shifted, TRUTH, BOX).max() > 1.0


def test_riemannian_distance_is_an_affine_invariant_metric():
    rng = np.random.default_rng(0)
    other = InertialParameters.from_mass_com_inertia(
        1.0, [0.01, 0.02, 0.0], np.diag([5e-3, 2e-3, 6e-3])
    )
    assert riemannian_distance(TRUTH, TRUTH) == pytest.approx(0.0, abs=1e-9)
    d = riemannian_distance(other, TRUTH)
    assert d == pytest.approx(riemannian_distance(TRUTH, other))
    T = sp.exp6(rng.normal(size=6))
    assert riemannian_distance(other.transformed(T), TRUTH.transformed(T)) == pytest.approx(d)
    scaled = InertialParameters(2.0 * TRUTH.vec)  # J -> 2 J: distance sqrt(4/2) log 2
    assert riemannian_distance(scaled, TRUTH) == pytest.approx(np.sqrt(2.0) * np.log(2.0))
    with pytest.raises(ValueError, match="consistent"):
        riemannian_distance(InertialParameters(np.r_[-1.0, np.zeros(9)]), TRUTH)


# Notes fast-inertial-identification.md, Sec. 6.2 (simulation densities, no bolts):
# m [kg], CoM y [mm], J_c xx, yy, zz and J_O xx, yy, zz, yz [1e-3 kg m^2].
GROUND_TRUTH = {
    "Hammer": (0.8057, 52.53, 7.610, 1.785, 9.189, 10.336, 2.288, 11.412, -1.058),
    "Barbell": (1.0057, 0.0, 13.843, 2.649, 16.264, 14.471, 3.277, 16.264, 0.0),
    "Tee": (1.0522, 35.64, 8.906, 1.808, 10.481, 10.900, 2.466, 11.818, -0.938),
    "Uniform": (1.3522, 0.0, 14.958, 2.681, 17.375, 15.803, 3.526, 17.375, 0.0),
    "Corners": (0.7522, 0.0, 10.527, 2.625, 12.951, 10.997, 3.095, 12.951, 0.0),
    "Rod": (0.9522, 0.0, 8.670, 0.954, 9.402, 9.266, 1.549, 9.402, 0.0),
    "Half-N-Half": (0.9191, 44.76, 8.474, 1.909, 10.165, 10.890, 2.483, 12.006, -1.029),
    "Empty": (0.3522, 0.0, 4.239, 0.897, 4.979, 4.459, 1.117, 4.979, 0.0),
}


@pytest.mark.parametrize("name", sorted(CONFIGURATIONS))
def test_composite_object_matches_the_ground_truth_table(name):
    m, com_y, *moments = GROUND_TRUTH[name]
    body = composite_object(name).params
    I_c, I_o = body.inertia_about_com * 1e3, body.inertia * 1e3
    assert body.mass == pytest.approx(m, abs=1e-4)
    assert np.allclose(body.com * 1e3, [0.0, com_y, 25.0], atol=0.01)
    assert np.allclose(np.diag(I_c), moments[:3], atol=1.5e-3)
    assert np.allclose([*np.diag(I_o), I_o[1, 2]], moments[3:], atol=1.5e-3)


def test_composite_object_is_realizable_on_its_shell():
    body = composite_object("Hammer").params
    assert outer_shell().can_realize(body)
    assert outer_shell("quadratic").can_realize(body)
    assert not outer_shell().parts[0].can_realize(body)  # the central bar alone is too small
    with pytest.raises(ValueError, match="unknown configuration"):
        composite_object("Spoon")
