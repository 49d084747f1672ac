"""Payload primitives: MuJoCo's compiled inertial values against the analytic formulas."""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.spatial import transform
from inertia_estimation_ros.sim.ground_truth import body_inertial_parameters
from inertia_estimation_ros.sim.payload import Primitive, aluminium_frame
from inertia_estimation_ros.sim.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[1]


def compiled(primitives: list[Primitive]) -> InertialParameters:
    """The parameters MuJoCo composes for a free body made of the primitives, in its frame."""
    geoms = "".join(p.mjcf(f"g{k}") for k, p in enumerate(primitives))
    model = mujoco.MjModel.from_xml_string(
        f'<mujoco><worldbody><body name="payload"><freejoint/>{geoms}</body></worldbody></mujoco>'
    )
    return body_inertial_parameters(model, "payload")


def analytic(shape: str, size: tuple, density: float) -> tuple[float, np.ndarray]:
    """Mass and CoM inertia of a uniform solid, textbook formulas."""
    if shape == "box":
        a, b, c = size
        m = density * a * b * c
        return m, m / 12 * np.diag([b**2 + c**2, a**2 + c**2, a**2 + b**2])
    if shape == "cylinder":  # axis along z
        r, length = size
        m = density * np.pi * r**2 * length
        side = m * (3 * r**2 + length**2) / 12
        return m, np.diag([side, side, m * r**2 / 2])
    (r,) = size
    m = density * 4 / 3 * np.pi * r**3
    return m, 2 / 5 * m * r**2 * np.eye(3)


def placed(shape: str, size: tuple, density: float, T: np.ndarray) -> InertialParameters:
    """Analytic parameters of a primitive at pose T in the body frame (parallel axis theorem)."""
    m, I_c = analytic(shape, size, density)
    R = T[:3, :3]
    return InertialParameters.from_mass_com_inertia(m, T[:3, 3], R @ I_c @ R.T)


POSE = transform(Rotation.from_rotvec([0.3, -0.5, 0.8]).as_matrix(), [0.2, -0.1, 0.35])


@pytest.mark.parametrize(
    ("shape", "size"), [("box", (0.4, 0.25, 0.1)), ("cylinder", (0.07, 0.3)), ("sphere", (0.12,))]
)
def test_each_primitive_matches_its_formula(shape, size):
    expected = placed(shape, size, 2700.0, POSE)
    got = compiled([Primitive(shape, size, POSE, density=2700.0)])
    np.testing.assert_allclose(got.vec, expected.vec, rtol=1e-9, atol=1e-12)


def test_a_composite_of_different_densities_is_the_sum_of_its_parts():
    parts = [
        ("box", (0.8, 0.3, 0.02), 2700.0, transform(np.eye(3), [0.4, 0.0, 0.03])),
        ("cylinder", (0.04, 0.1), 7850.0, POSE),
        ("sphere", (0.05,), 1100.0, transform(np.eye(3), [0.2, -0.05, 0.09])),
    ]
    expected = sum(placed(*p).vec for p in parts)
    got = compiled([Primitive(s, size, T, density=rho) for s, size, rho, T in parts])
    np.testing.assert_allclose(got.vec, expected, rtol=1e-9, atol=1e-12)


def test_a_primitive_given_by_mass_gets_that_mass_spread_uniformly():
    got = compiled([Primitive("box", (0.3, 0.2, 0.1), POSE, mass=2.5)])
    expected = placed("box", (0.3, 0.2, 0.1), 2.5 / (0.3 * 0.2 * 0.1), POSE)
    np.testing.assert_allclose(got.vec, expected.vec, rtol=1e-9, atol=1e-12)


def test_aluminium_frame_mass_is_density_times_tube_section_times_length():
    length, width, tube, wall = 1.2, 0.8, 0.05, 0.004
    got = compiled(aluminium_frame(length, width, tube, wall, np.eye(4)))
    section = tube**2 - (tube - 2 * wall) ** 2
    assert got.mass == pytest.approx(2700.0 * section * 2 * (length + width), rel=1e-12)
    np.testing.assert_allclose(got.com, 0.0, atol=1e-12)
    moments = np.diag(got.inertia_about_com)
    assert moments[0] < moments[1] < moments[2]  # longer along x: smallest moment about x


def test_paper_preset_payload_is_table_one():
    """Paper 000 Table I: 11.412 kg, p_1c, R_1c (up to the principal axes' sign symmetry), I_c."""
    scenario = load_scenario(ROOT / "config/scenarios/paper000_mocobots.yaml")
    params = body_inertial_parameters(scenario.compile(), "payload")
    assert params.mass == pytest.approx(11.412, rel=1e-6)
    np.testing.assert_allclose(params.com, [0.553, 0.172, 0.072], atol=1e-12)
    moments, R_1c = params.principal_axes()
    np.testing.assert_allclose(moments, [2.258, 3.448, 5.698], rtol=1e-6)
    R_table = Rotation.from_rotvec(np.deg2rad([0.001, 0.010, -95.016])).as_matrix()
    flips = [np.diag(d) for d in ([1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1])]
    angles = [np.linalg.norm(Rotation.from_matrix(R_table.T @ R_1c @ D).as_rotvec()) for D in flips]
    assert min(angles) < 1e-9


def test_bad_primitives_are_rejected_with_the_reason():
    with pytest.raises(ScenarioError, match="exactly one of density and mass"):
        Primitive("box", (1.0, 1.0, 1.0), np.eye(4))
    with pytest.raises(ScenarioError, match="not one of"):
        Primitive("cone", (1.0,), np.eye(4), density=1.0)
    with pytest.raises(ScenarioError, match="2 wall < tube"):
        aluminium_frame(1.0, 0.5, 0.04, 0.03, np.eye(4))
