"""core.inertial: the 10-vector type, against Pinocchio and analytic bodies."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import rigeo as rg
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.inertial import InertialParameters


def test_pinocchio_ordering_round_trip():
    rng = np.random.default_rng(0)
    for _ in range(10):
        I = pin.Inertia.Random()
        body = InertialParameters.from_pinocchio(I.toDynamicParameters())
        assert np.isclose(body.mass, I.mass)
        assert np.allclose(body.com, I.lever)
        assert np.allclose(body.inertia_about_com, I.inertia)
        assert np.allclose(body.to_pinocchio(), I.toDynamicParameters())
        T = sp.exp6(rng.normal(size=6))
        moved = pin.SE3(T[:3, :3].copy(), T[:3, 3].copy()).act(I)
        assert np.allclose(body.transformed(T).to_pinocchio(), moved.toDynamicParameters())


def test_pseudo_inertia_matches_pinocchio():
    I = pin.Inertia.Random()
    body = InertialParameters.from_pinocchio(I.toDynamicParameters())
    J = pin.PseudoInertia.FromInertia(I).toMatrix()
    assert np.allclose(body.pseudo_inertia, J)
    assert np.allclose(InertialParameters.from_pseudo_inertia(J).vec, body.vec)


def test_solid_box_from_point_masses():
    """A dense grid of equal point masses in a box tends to the analytic box inertia."""
    a, b, c, m = 0.4, 0.2, 0.1, 3.0
    n = 40
    grid = np.stack(
        np.meshgrid(*[(np.arange(n) + 0.5) / n - 0.5 for _ in range(3)], indexing="ij"), -1
    ).reshape(-1, 3) * [a, b, c]
    body = InertialParameters.from_point_masses(np.full(len(grid), m / len(grid)), grid + 1.0)
    expected = m / 12 * np.diag([b**2 + c**2, a**2 + c**2, a**2 + b**2])
    assert np.isclose(body.mass, m) and np.allclose(body.com, 1.0)
    assert np.allclose(body.inertia_about_com, expected, rtol=2e-3)
    assert body.is_consistent()


def test_principal_axes_are_sorted_and_proper():
    R = sp.exp6([0.3, -1.0, 2.0, 0, 0, 0])[:3, :3]
    body = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), R @ np.diag([3, 1, 2]) @ R.T)
    moments, R_b_c = body.principal_axes()
    assert np.allclose(moments, [1, 2, 3]) and np.isclose(np.linalg.det(R_b_c), 1.0)
    assert np.allclose(R_b_c @ np.diag(moments) @ R_b_c.T, body.inertia_about_com)


def test_triangle_inequality_case_from_the_lmi_notes():
    """I_C = diag(1, 1, 3) is positive definite but violates J1 + J2 >= J3."""
    body = InertialParameters.from_mass_com_inertia(1.0, np.zeros(3), np.diag([1.0, 1.0, 3.0]))
    assert body.is_semi_consistent()
    assert not body.satisfies_triangle_inequalities()
    assert not body.is_consistent()


# ----- the worked cases of the LMI notes (Sec. 6.2) -------------------------------------
# theta, semi-consistent (I > 0, paper 003 Def. 4), strictly consistent (J > 0, Thm. 3),
# min eig J. Under the one tolerance rule the thin plate (J >= 0, singular: realizable as a
# measure) is consistent; strictly (rtol 0, a positive margin) it is not.
NOTES_CASES = {
    "box": ([2, 0.2, 0, 0, 0.002083, 0, 0, 0.035417, 0, 0.036667], True, True, 4.17e-4),
    "sphere": ([1, 0, 0, 0, 0.004, 0, 0, 0.004, 0, 0.004], True, True, 0.002),
    "rod": ([0.5, 0, 0, -0.075, 0.01625, 0, 0, 0.01625, 0, 0.012], True, False, -9.78e-4),
    "triangle": ([1, 0, 0, 0, 1, 0, 0, 1, 0, 3], True, False, -0.5),
    "com far out": ([1, 1, 0, 0, 0.01, 0, 0, 0.01, 0, 0.01], False, False, -0.614),
    "negative mass": ([-1, 0, 0, 0, 1, 0, 0, 1, 0, 1], False, False, -1.0),
    "I_C not PD": ([1, 0, 0, 0, -0.1, 0, 0, 1, 0, 1], False, False, -0.05),
    "thin plate": ([1, 0, 0, 0, 0.01, 0, 0, 0.04, 0, 0.05], True, False, 0.0),
    "massless": ([0, 0, 0, 0, 2, 0, 0, 2, 0, 2], False, False, 0.0),
}


@pytest.mark.parametrize("name", sorted(NOTES_CASES))
def test_worked_cases_of_the_lmi_notes(name):
    theta, semi, consistent, min_eig = NOTES_CASES[name]
    body = InertialParameters(theta)
    assert body.consistency_margin() == pytest.approx(min_eig, abs=2e-3 * max(abs(min_eig), 1e-3))
    assert body.is_consistent(margin=1e-12, rtol=0.0) is consistent
    assert body.is_consistent() is (consistent or name == "thin plate")
    assert body.is_semi_consistent(tol=1e-12 if body.mass > 0 else 0.0) is semi
    # pin.PseudoInertia and rigeo (test-only oracles) agree on J and on the verdict.
    pseudo = pin.PseudoInertia.FromDynamicParameters(body.to_pinocchio()).toMatrix()
    assert np.allclose(pseudo, body.pseudo_inertia)
    if body.mass > 0:  # rigeo refuses non-positive masses outright
        assert bool(rg.InertialParameters.from_vec(body.vec).consistent(eps=1e-12)) is consistent


def test_older_six_by_six_test_misses_the_triangle_inequality():
    """I_C = diag(1, 1, 3): the 6x6 spatial inertia is positive definite (Sousa and
    Cortesao's LMI), the pseudo-inertia is not (paper 003's LMI)."""
    body = InertialParameters.from_mass_com_inertia(1.0, [0.1, 0.0, 0.0], np.diag([1.0, 1.0, 3.0]))
    assert np.linalg.eigvalsh(body.spatial_inertia)[0] > 0
    assert not body.is_consistent()


# ----- property tests --------------------------------------------------------------------
point_clouds = st.integers(1, 12).flatmap(
    lambda n: st.tuples(
        arrays(np.float64, n, elements=st.floats(0.01, 5.0)),
        arrays(np.float64, (n, 3), elements=st.floats(-1.0, 1.0)),
    )
)


@settings(max_examples=50, deadline=None)
@given(cloud=point_clouds)
def test_point_masses_are_consistent_and_round_trip(cloud):
    masses, points = cloud
    body = InertialParameters.from_point_masses(masses, points)
    rank = np.linalg.matrix_rank(np.c_[points, np.ones(len(points))], tol=1e-6)
    assert body.consistency_margin() >= -1e-9 * body.mass
    assert body.is_consistent() or rank < 4  # strictly, unless all points are coplanar
    assert body.satisfies_triangle_inequalities(tol=1e-9 * body.mass)
    assert np.allclose(InertialParameters.from_pseudo_inertia(body.pseudo_inertia).vec, body.vec)
    assert np.allclose(InertialParameters.from_pinocchio(body.to_pinocchio()).vec, body.vec)
    again = InertialParameters.from_mass_com_inertia(body.mass, body.com, body.inertia_about_com)
    assert np.allclose(again.vec, body.vec)
    q = points[0] + 0.3
    about_q = sum(
        m * sp.skew(p - q) @ sp.skew(p - q).T for m, p in zip(masses, points, strict=True)
    )
    assert np.allclose(body.inertia_about(q), about_q)
    half = len(masses) // 2
    parts = InertialParameters.from_point_masses(masses[:half], points[:half])
    assert np.allclose(
        (parts + InertialParameters.from_point_masses(masses[half:], points[half:])).vec, body.vec
    )


@settings(max_examples=50, deadline=None)
@given(
    moments=arrays(np.float64, 3, elements=st.floats(0.1, 1.0)),
    excess=st.floats(0.01, 1.0),
    rotvec=arrays(np.float64, 3, elements=st.floats(-3.0, 3.0)),
    com=arrays(np.float64, 3, elements=st.floats(-1.0, 1.0)),
)
def test_triangle_violations_are_rejected(moments, excess, rotvec, com):
    """Principal moments with J3 > J1 + J2: positive definite, yet not a body."""
    J1, J2 = moments[:2]
    R = Rotation.from_rotvec(rotvec).as_matrix()
    inertia = R @ np.diag([J1, J2, J1 + J2 + excess]) @ R.T
    body = InertialParameters.from_mass_com_inertia(moments[2], com, inertia)
    assert body.is_semi_consistent()
    assert not body.satisfies_triangle_inequalities()
    assert not body.is_consistent()
    assert not bool(rg.InertialParameters.from_vec(body.vec).consistent())


@settings(max_examples=30, deadline=None)
@given(twist=arrays(np.float64, 6, elements=st.floats(-2.0, 2.0)))
def test_frame_changes_round_trip_and_match_pinocchio(twist):
    body = InertialParameters.from_pinocchio(pin.Inertia.Random().toDynamicParameters())
    T = sp.exp6(twist)
    assert np.allclose(body.transformed(T).transformed(sp.inverse(T)).vec, body.vec)
    R = T[:3, :3]
    rotated = pin.SE3(R.copy(), np.zeros(3)).act(pin.Inertia(*_pin_args(body)))
    assert np.allclose(body.rotated(R).to_pinocchio(), rotated.toDynamicParameters())
    assert np.allclose(body.rotated(R).inertia, R @ body.inertia @ R.T)


def _pin_args(body):
    return body.mass, body.com, body.inertia_about_com
