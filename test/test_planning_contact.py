"""Contact wrench cone and robust vertex constraints (paper 004, Sec. IV; notes §3.3-3.6, §8.2).

References: the notes' face form table (pycddlib 2.1.8 on the paper's box), an independent
cone-membership test (non-negative least squares on the span form), and the Newton-Euler
equations written out in CoM form (notes §3.2), not through ``core.regressor``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import nnls

from inertia_estimation_ros.core.planning.contact import ContactError, ContactPolygon
from inertia_estimation_ros.core.planning.objects import (
    BalancedObject,
    robust_constraint_values,
)
from inertia_estimation_ros.core.regressor import body_regressor
from inertia_estimation_ros.core.spatial import skew

a, b, c = 6.6667, 13.3333, 33.3333
# notes §8.2: columns [tau_x, tau_y, tau_z, f_x, f_y, f_z], 26 rows, f_z coefficient -1.
NOTES_H = np.array(
    [
        [-a, 0, c, -5, 0, -1], [a, 0, -c, -5, 0, -1], [0, 0, 0, -5, 5, -1], [0, a, c, 0, 5, -1],
        [-a, a, c, -2.5, 2.5, -1], [0, -a, -c, 0, 5, -1], [a, -a, -c, -2.5, 2.5, -1],
        [-a, -a, c, -2.5, -2.5, -1], [-b, 0, 0, 0, 0, -1], [-a, -a, -c, 2.5, 2.5, -1],
        [0, -b, 0, 0, 0, -1], [-a, a, -c, 2.5, -2.5, -1], [-a, 0, -c, 5, 0, -1],
        [0, 0, -2 * c, 0, 0, -1], [0, 0, 0, 5, 5, -1], [a, -a, c, 2.5, -2.5, -1],
        [a, 0, c, 5, 0, -1], [0, 0, 0, 5, -5, -1], [0, a, -c, 0, -5, -1], [0, -a, c, 0, -5, -1],
        [a, a, c, 2.5, 2.5, -1], [a, a, -c, -2.5, -2.5, -1], [0, 0, 0, -5, -5, -1],
        [0, 0, 2 * c, 0, 0, -1], [b, 0, 0, 0, 0, -1], [0, b, 0, 0, 0, -1],
    ]
)  # fmt: skip
PAPER_BOX = ContactPolygon.rectangle(0.075, 0.075, mu=0.2)
H_PAPER = PAPER_BOX.face_form()


def test_face_form_equals_the_notes_rows():
    """Same 26 rows up to order (the notes print 4 decimals: tolerance 5e-5 relative)."""
    assert H_PAPER.shape == NOTES_H.shape
    for row in NOTES_H:
        distance = np.abs(H_PAPER - row).max(axis=1) / np.abs(row).max()
        assert distance.min() < 5e-5, row
    np.testing.assert_allclose(H_PAPER[:, 5], -1.0)


def _inside_cone(S: np.ndarray, w: np.ndarray) -> bool:
    """w in cone(S columns) iff non-negative least squares fits it exactly."""
    _, residual = nnls(S, w)
    return residual <= 1e-9 * max(1.0, np.linalg.norm(w))


weights = st.lists(st.floats(0.0, 10.0), min_size=16, max_size=16)


@settings(max_examples=60, deadline=None)
@given(weights)
def test_every_generator_combination_satisfies_every_face(z):
    w = PAPER_BOX.span_form() @ np.array(z)
    assert np.all(H_PAPER @ w <= 1e-9 * max(1.0, np.abs(w).max()))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(-1.0, 1.0), min_size=6, max_size=6))
def test_face_form_decides_membership_like_the_span_form(w):
    """Outside the cone some face fails, inside none does (random wrenches, both sides)."""
    w = np.array(w) + np.array([0, 0, 0, 0, 0, 0.5])  # bias towards the cone
    margin = (H_PAPER @ w).max()
    if abs(margin) < 1e-6:
        return  # on the boundary: either answer is right
    assert (margin < 0) == _inside_cone(PAPER_BOX.span_form(), w)


def test_frictionless_face_form_is_tipping_rows_and_equalities():
    H = ContactPolygon.rectangle(0.075, 0.075, mu=0.0).face_form()
    tipping = H[np.abs(H[:, 5] + 1) < 1e-9]
    assert len(tipping) == 4 and len(H) == 10
    np.testing.assert_allclose(np.sort(np.abs(tipping[:, :2]).max(axis=1)), np.full(4, 1 / 0.075))


def test_cylinder_contacts_give_a_cone_containing_its_generators():
    disk = ContactPolygon.disk(0.05, sides=8, mu=0.3)
    H = disk.face_form()
    assert np.all(H @ disk.span_form() <= 1e-9)
    assert np.all(H @ np.array([0, 0, 0, 0, 0, 1.0]) < 0)  # resting upright is strictly inside


def test_bad_contacts_are_refused():
    with pytest.raises(ContactError, match="mu"):
        ContactPolygon(np.zeros((4, 3)), mu=-0.1)
    with pytest.raises(ContactError, match="normal"):
        ContactPolygon(np.zeros((4, 3)), normal=np.zeros(3))


def _newton_euler_com_form(com, I_c, V, dV, g):
    """w_GI about the tray origin from the CoM form of notes §3.2 (m = 1)."""
    w, v = V[:3], V[3:]
    a = dV[3:] + np.cross(w, v)  # classical acceleration of the origin
    a_c = a + np.cross(dV[:3], com) + np.cross(w, np.cross(w, com))
    f = a_c - g
    tau = I_c @ dV[:3] + np.cross(w, I_c @ w) + np.cross(com, f)
    return np.concatenate([tau, f])


motions = st.lists(st.floats(-3.0, 3.0), min_size=12, max_size=12)
TALL = BalancedObject.box((0.15, 0.15, 0.5))
G = np.array([0.0, 0.0, -9.81])


@settings(max_examples=40, deadline=None)
@given(motions, st.lists(st.floats(0.01, 1.0), min_size=8, max_size=8))
def test_vertex_constraints_cover_the_convex_hull_of_the_virtual_objects(motion, weights):
    """Paper Sec. IV-B: w_GI = Y theta is linear in theta and the cone is convex, so every
    theta in conv{theta_k} (its CoM anywhere in C) is bounded by the vertices' maximum. The
    values are the CoM-form Newton-Euler equations (notes §3.2) for each virtual object."""
    V, dV = np.array(motion[:6]), np.array(motion[6:])
    Y = body_regressor(V, dV, G)
    thetas = TALL.parameters_at(TALL.com_vertices)
    vertices = robust_constraint_values(H_PAPER, Y, thetas)
    lam = np.array(weights) / np.sum(weights)
    inside = robust_constraint_values(H_PAPER, Y, (lam @ thetas)[None])[0]
    assert np.all(inside <= vertices.max(axis=0) + 1e-9)
    I_c = TALL.nominal_inertia_about_com
    for com, values in zip(TALL.com_vertices, vertices, strict=True):
        direct = H_PAPER @ _newton_euler_com_form(com, I_c, V, dV, G)
        np.testing.assert_allclose(values, direct, atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-5.0, 5.0), min_size=3, max_size=3),
    st.lists(st.floats(0, 1), min_size=3, max_size=3),
)
def test_without_rotation_every_com_inside_is_bounded_by_the_vertices(accel, s):
    """In translation the inertia drops out and w_GI is affine in the CoM: the vertex
    constraints hold for every CoM in C. (With rotation the parallel-axis term is quadratic in
    the CoM, so a CoM inside with the nominal inertia about it can exceed every vertex: the
    SDP of Eq. 13, not Sec. IV-B, covers that; test_planning_verification.)"""
    Y = body_regressor(np.zeros(6), np.concatenate([np.zeros(3), accel]), G)
    vertices = robust_constraint_values(H_PAPER, Y, TALL.parameters_at(TALL.com_vertices))
    com = TALL.com_lo + np.array(s) * (TALL.com_hi - TALL.com_lo)
    inside = robust_constraint_values(H_PAPER, Y, TALL.parameters_at(com))[0]
    assert np.all(inside <= vertices.max(axis=0) + 1e-9)


def test_grasp_matrices_agree():
    """Frictionless G lambda equals the full grasp matrix applied to lambda n."""
    lam = np.array([1.0, 2.0, 0.5, 3.0])
    forces = np.outer(lam, PAPER_BOX.normal).ravel()
    np.testing.assert_allclose(
        PAPER_BOX.normal_grasp_matrix @ lam, PAPER_BOX.grasp_matrix @ forces, atol=1e-12
    )
    np.testing.assert_allclose(PAPER_BOX.grasp_matrix[:3, :3], skew(PAPER_BOX.points[0]))
