"""identification.shapes: containment, realizability, uniform bodies and grids, against
analytic cases, the worked cases of the LMI notes (Sec. 6.3) and rigeo 0.2.0."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import rigeo as rg
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.identification import (
    Box,
    ConvexPolyhedron,
    Cylinder,
    Ellipsoid,
    ShapeUnion,
    VoxelShape,
    outer_shell,
)
from inertia_estimation_ros.core.identification.shapes import surface_samples
from inertia_estimation_ros.core.inertial import InertialParameters

R_TILT = Rotation.from_rotvec([0.3, -0.5, 0.8]).as_matrix()
P_OFFSET = np.array([0.2, -0.1, 0.05])
SHAPES = {
    "ellipsoid": Ellipsoid([0.3, 0.2, 0.1], R_TILT, P_OFFSET),
    "box": Box([0.3, 0.2, 0.1], R_TILT, P_OFFSET),
    "box-quadratic": Box([0.3, 0.2, 0.1], R_TILT, P_OFFSET, relaxation="quadratic"),
    "cylinder": Cylinder(0.15, 0.5, R_TILT, P_OFFSET),
    "polyhedron": ConvexPolyhedron(
        np.array([[0, 0, 0], [0.4, 0, 0], [0, 0.3, 0], [0, 0, 0.2], [0.3, 0.3, 0.3]]) + P_OFFSET
    ),
}


def _points_inside(shape, rng, n):
    lo, hi = shape.aabb()
    points = rng.uniform(lo, hi, size=(4000, 3))
    return points[shape.contains(points)][:n]


def _rigeo_feasible(constraints_of, params: InertialParameters) -> bool:
    J = cp.Variable((4, 4), symmetric=True)
    problem = cp.Problem(cp.Minimize(0), [J == params.pseudo_inertia, *constraints_of(J)])
    problem.solve(solver=cp.CLARABEL)
    return problem.status == cp.OPTIMAL


# ----- worked cases (LMI notes, Sec. 6.3: Fig. 3 geometry of paper 003) ------------------
FIG3 = Ellipsoid(np.sqrt([5.0, 2.0, 1.0]))


def _fig3_body(com, R=None):
    R = np.eye(3) if R is None else R
    Sigma_C = R @ np.diag([0.9, 0.2, 0.2]) @ R.T
    inertia = np.trace(Sigma_C) * np.eye(3) - Sigma_C  # paper 003, Eq. 16
    return InertialParameters.from_mass_com_inertia(1.0, com, inertia)


@pytest.mark.parametrize(
    ("com", "R", "trace", "realizable"),
    [
        ([0.0, 0.0, 0.0], np.eye(3), 0.52, True),
        ([1.6, 0.0, 0.0], np.eye(3), 0.008, True),
        ([1.7, 0.0, 0.0], np.eye(3), -0.058, False),
        ([0.0, 0.0, 0.0], Rotation.from_rotvec([0, np.pi / 2, 0]).as_matrix(), -0.04, False),
    ],
)
def test_fig3_ellipsoid_cases(com, R, trace, realizable):
    body = _fig3_body(com, R)
    assert np.trace(FIG3.Q @ body.pseudo_inertia) == pytest.approx(trace, abs=1e-9)
    assert FIG3.can_realize(body) is realizable
    assert FIG3.contains(body.com)  # the CoM LMI (paper 003, Eq. 22) passes in every case


def test_com_constraint_is_eq22_and_weaker_than_realizability():
    """c = (1.7, 0, 0): the CoM is inside S (Eq. 22 feasible), the body does not fit."""
    body = _fig3_body([1.7, 0.0, 0.0])
    J = cp.Variable((4, 4), symmetric=True)
    fixed = [J == body.pseudo_inertia]
    com = cp.Problem(cp.Minimize(0), fixed + FIG3.com_constraints(J))
    fits = cp.Problem(cp.Minimize(0), fixed + FIG3.realizability_constraints(J))
    com.solve(solver=cp.CLARABEL)
    fits.solve(solver=cp.CLARABEL)
    assert com.status == cp.OPTIMAL and fits.status == cp.INFEASIBLE


# ----- property tests: point masses inside a shape are realizable on it -----------------
@pytest.mark.parametrize("name", sorted(SHAPES))
@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
def test_point_masses_inside_are_realizable(name, seed, n):
    shape = SHAPES[name]
    rng = np.random.default_rng(seed)
    points = _points_inside(shape, rng, n)
    body = InertialParameters.from_point_masses(rng.uniform(0.1, 2.0, len(points)), points)
    assert shape.realizability_margin(body) >= -1e-5 * body.mass


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_dumbbell_longer_than_the_shape_is_rejected(name):
    """Two equal masses 1.2 x beyond the extent along the longest direction: CoM inside,
    spread too large; a J-only check cannot see it."""
    shape = SHAPES[name]
    lo, hi = shape.aabb()
    centre = shape.uniform_density_params(1.0).com
    direction = np.eye(3)[np.argmax(hi - lo)]
    reach = 1.2 * np.max(hi - lo)
    body = InertialParameters.from_point_masses(
        [0.5, 0.5], [centre + reach * direction, centre - reach * direction]
    )
    assert shape.contains(body.com)
    assert not shape.can_realize(body)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_uniform_body_is_realizable_and_matches_a_dense_grid(name):
    shape = SHAPES[name]
    uniform = shape.uniform_density_params(2.0)
    assert shape.can_realize(uniform)
    grid = shape.grid(0.01)
    dense = InertialParameters.from_point_masses(np.full(len(grid), 2.0 / len(grid)), grid)
    assert np.allclose(dense.com, uniform.com, atol=2e-3)
    assert np.allclose(dense.inertia_about_com, uniform.inertia_about_com, rtol=0.05, atol=2e-4)


def test_polyhedron_uniform_body_equals_the_same_box_to_machine_precision():
    """The polyhedron's uniform density (tetrahedra) against the box's closed form."""
    box = SHAPES["box"]
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)])
    vertices = P_OFFSET + (corners * [0.3, 0.2, 0.1]) @ R_TILT.T
    polyhedron = ConvexPolyhedron(vertices)
    np.testing.assert_allclose(
        polyhedron.uniform_density_params(2.0).vec, box.uniform_density_params(2.0).vec, atol=1e-12
    )


# ----- rigeo 0.2.0 as an oracle -------------------------------------------------------------
def _rigeo_shapes():
    return {
        "ellipsoid": rg.Ellipsoid([0.3, 0.2, 0.1], rotation=R_TILT, center=P_OFFSET),
        "box": rg.Box([0.3, 0.2, 0.1], rotation=R_TILT, center=P_OFFSET),
        "cylinder": rg.Cylinder(0.5, 0.15, rotation=R_TILT, center=P_OFFSET),
        "polyhedron": rg.ConvexPolyhedron.from_vertices(SHAPES["polyhedron"].vertices),
    }


@pytest.mark.parametrize("name", ["ellipsoid", "box", "cylinder"])
def test_uniform_density_matches_rigeo(name):
    ours = SHAPES[name].uniform_density_params(1.5)
    theirs = _rigeo_shapes()[name].uniform_density_params(1.5)
    assert np.allclose(ours.vec, theirs.vec, atol=1e-12)


def test_ellipsoid_agrees_with_rigeo_on_random_bodies():
    rng = np.random.default_rng(3)
    ours, theirs = SHAPES["ellipsoid"], _rigeo_shapes()["ellipsoid"]
    decisions = []
    for _ in range(200):
        mass, com = rng.uniform(0.5, 2.0), P_OFFSET + rng.normal(scale=0.05, size=3)
        R = Rotation.random(random_state=rng).as_matrix()
        inertia = mass * R @ np.diag(rng.uniform(0.001, 0.015, 3)) @ R.T
        body = InertialParameters.from_mass_com_inertia(mass, com, inertia)
        ours_says = ours.can_realize(body)
        assert ours_says == theirs.can_realize(rg.InertialParameters.from_vec(body.vec))
        decisions.append(ours_says)
    assert 20 < sum(decisions) < 180  # both outcomes were exercised


@pytest.mark.parametrize("name", ["box", "cylinder", "polyhedron"])
def test_moment_relaxation_agrees_with_rigeo(name):
    """Inside: both feasible. Too long a dumbbell: both infeasible. Random bodies: ours is at
    least as tight (it adds products of faces), so ours feasible implies rigeo feasible."""
    shape, theirs = SHAPES[name], _rigeo_shapes()[name]
    rng = np.random.default_rng(4)
    inside = InertialParameters.from_point_masses(
        rng.uniform(0.2, 1.0, 6), _points_inside(shape, rng, 6)
    )
    assert shape.can_realize(inside)
    assert _rigeo_feasible(theirs.moment_sdp_constraints, inside)
    lo, hi = shape.aabb()
    centre, half = shape.uniform_density_params(1.0).com, 0.6 * (hi - lo).max()
    axis = np.eye(3)[np.argmax(hi - lo)]
    too_long = InertialParameters.from_point_masses(
        [0.5, 0.5], [centre + 2 * half * axis, centre - 2 * half * axis]
    )
    assert not shape.can_realize(too_long)
    assert not _rigeo_feasible(theirs.moment_sdp_constraints, too_long)
    compared = 0
    for _ in range(8):  # point masses inside the shape: feasible by construction
        body = InertialParameters.from_point_masses(
            rng.uniform(0.2, 1.0, 5), _points_inside(shape, rng, 5)
        )
        assert shape.can_realize(body)
        assert _rigeo_feasible(theirs.moment_sdp_constraints, body)
        compared += 1
    assert compared == 8


# ----- unions (paper 003, Cor. 2) ------------------------------------------------------------
def test_union_of_boxes_is_tighter_than_its_bounding_box():
    """An L of two slender boxes: masses in the arms fit; the same masses moved into the
    empty corner fit the bounding box but not the L."""
    arm_x = Box.from_corners([0.0, 0.0, 0.0], [1.0, 0.1, 0.1])
    arm_y = Box.from_corners([0.0, 0.0, 0.0], [0.1, 1.0, 0.1])
    letter_l = ShapeUnion([arm_x, arm_y])
    bounding = Box.from_corners([0.0, 0.0, 0.0], [1.0, 1.0, 0.1])
    arms = [[0.9, 0.05, 0.05], [0.05, 0.9, 0.05], [0.05, 0.05, 0.02], [0.6, 0.02, 0.08]]
    corner = [[0.9, 0.9, 0.05], [0.7, 0.8, 0.05], [0.8, 0.6, 0.02], [0.6, 0.7, 0.08]]
    in_arms = InertialParameters.from_point_masses(np.ones(4), arms)
    in_corner = InertialParameters.from_point_masses(np.ones(4), corner)
    assert letter_l.can_realize(in_arms) and bounding.can_realize(in_arms)
    assert bounding.can_realize(in_corner) and not letter_l.can_realize(in_corner)


def test_composite_object_grid_and_shell():
    shell = outer_shell()
    grid = shell.grid((1.0 / 0.04) ** (1.0 / 3.0) * 1e-2)  # 0.04 points per cm^3
    assert len(grid) == 70 and np.all(shell.contains(grid))
    assert np.linalg.matrix_rank(np.c_[grid, np.ones(len(grid))]) == 4  # not coplanar


# ----- frames and bad input -----------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_transformed_shape_contains_the_transformed_points(name):
    shape = SHAPES[name]
    T_a_b = sp.exp6([0.4, -0.2, 1.0, 0.3, 0.1, -0.5])
    points = np.random.default_rng(5).uniform(*shape.aabb(), size=(300, 3))
    moved = points @ T_a_b[:3, :3].T + T_a_b[:3, 3]
    assert np.array_equal(shape.transformed(T_a_b).contains(moved), shape.contains(points))
    body = shape.uniform_density_params(1.0)
    assert np.allclose(
        shape.transformed(T_a_b).uniform_density_params(1.0).vec, body.transformed(T_a_b).vec
    )


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError, match="half_extents"):
        Box([0.1, -0.2, 0.3])
    with pytest.raises(ValueError, match="orthonormal"):  # a reflection is fine (issue 19)
        Ellipsoid([0.1, 0.2, 0.3], R_b_s=np.diag([1.0, 2.0, -1.0]))
    with pytest.raises(ValueError, match="relaxation"):
        Box([0.1, 0.2, 0.3], relaxation="cubic")
    with pytest.raises(ValueError, match="pitch"):
        Box([0.1, 0.2, 0.3]).grid(0.0)
    with pytest.raises(ValueError, match="vertices"):
        ConvexPolyhedron(np.full((4, 3), np.nan))


# ----- shapes from a mesh and from a point cloud (issue 19, item 10) ----------------------------
L_ARMS = [  # an L-square: two thin plates meeting at a corner
    Box([0.15, 0.015, 0.00075], p_b_s=[0.15, 0.015, 0.0]),
    Box([0.015, 0.10, 0.00075], p_b_s=[0.015, 0.13, 0.0]),
]


def _box_mesh(boxes):
    """Overlapping closed triangle meshes of boxes (the hull of each one's corners)."""
    vertices = [box.vertices for box in boxes]
    faces = [ConvexHull(v).simplices + 8 * k for k, v in enumerate(vertices)]
    return np.vstack(vertices), np.vstack(faces)


def _corners(box):
    return np.array(box.aabb())


def test_mesh_of_an_l_shape_is_its_two_plates_exactly():
    """A mesh on the voxel grid comes back as its own boxes (to machine precision), thinner
    than a voxel (1.5 mm plates, 5 mm voxels); a body in the L's empty corner, inside the
    bounding box, is refused by the mesh and accepted by the box."""
    shape = VoxelShape.from_mesh(*_box_mesh(L_ARMS), pitch=0.005)
    assert len(shape.parts) == 2
    found = sorted((_corners(p) for p in shape.parts), key=lambda c: c[1, 0])
    expected = [np.array([[0, 0.03, -0.00075], [0.03, 0.23, 0.00075]]), _corners(L_ARMS[0])]
    expected[1][0, 1] = 0.0  # the long plate owns the corner square
    np.testing.assert_allclose(found[0], expected[0], atol=1e-12)
    np.testing.assert_allclose(found[1], expected[1], atol=1e-12)
    uniform = L_ARMS[0].uniform_density_params(0.09) + L_ARMS[1].uniform_density_params(0.06)
    assert shape.can_realize(uniform)
    corner = InertialParameters.from_point_masses([0.05], [[0.2, 0.15, 0.0]]) + uniform
    box = Box.from_corners(*shape.aabb())
    assert box.can_realize(corner) and not shape.can_realize(corner)


def test_point_cloud_of_a_tilted_solid_covers_it_with_few_boxes():
    """3000 points on the surface of a tilted box (not on the voxel grid): at most
    ``max_parts`` boxes, which contain every point of the solid and whose volume exceeds
    the solid's by less than the voxel padding; the uniform body is realizable. The
    filled voxels (``contains``, what the shape prior fills) lie inside the merged boxes
    and are tighter."""
    rng = np.random.default_rng(3)
    solid = Box([0.1, 0.03, 0.02], Rotation.from_rotvec([0, 0, 0.4]).as_matrix(), [0.1, 0, 0])
    vertices, faces = _box_mesh([solid])
    cloud = surface_samples(vertices[faces], 1e-3)
    shape = VoxelShape.from_points(
        cloud[rng.choice(len(cloud), 3000, replace=False)], 0.01, max_parts=6
    )
    assert len(shape.parts) <= 6 and shape.pitch >= 0.01
    inside = _points_inside(solid, rng, 2000)
    assert shape.contains(inside).all()
    volume = sum(np.prod(2 * p.half_extents) for p in shape.parts)
    assert np.prod(2 * solid.half_extents) < volume < 3.0 * np.prod(2 * solid.half_extents)
    assert shape.can_realize(solid.uniform_density_params(1.0))
    samples = rng.uniform(*shape.aabb(), size=(20000, 3))  # the voxels lie in the parts
    in_voxels, in_parts = shape.contains(samples), ShapeUnion(shape.parts).contains(samples)
    assert not np.any(in_voxels & ~in_parts) and in_voxels.sum() < in_parts.sum()


def test_stated_noise_gives_a_noisy_cloud_the_extent_of_its_surface():
    """A 1.5 mm plate sampled with 0.5 mm noise: its raw cloud spans over 4 mm and is
    modelled that thick; with the noise stated, the extent of every axis is within 0.5 mm
    of the plate's (the voxel grid starts at its corner, not at an outlier), and the
    solid's volume is close to the plate's. A noise-free cloud is unchanged by noise=0."""
    rng = np.random.default_rng(5)
    plate = Box([0.05, 0.015, 0.00075])
    vertices, faces = _box_mesh([plate])
    surface = surface_samples(vertices[faces], 1e-3)
    surface = surface[rng.choice(len(surface), 3000, replace=False)]
    cloud = surface + rng.normal(0, 5e-4, surface.shape)
    raw, trimmed = (
        VoxelShape.from_points(cloud, 0.005),
        VoxelShape.from_points(cloud, 0.005, noise=5e-4),
    )
    assert np.ptp(np.array(raw.aabb()), axis=0)[2] > 4e-3
    np.testing.assert_allclose(np.array(trimmed.aabb()), np.array(plate.aabb()), atol=5e-4)
    grid = rng.uniform(-0.06, 0.06, size=(200000, 3)) * [1, 0.4, 0.05]
    box_volume = 0.12 * 0.048 * 0.006
    volume = box_volume * trimmed.contains(grid).mean()
    assert volume < 1.6 * np.prod(2 * plate.half_extents) < box_volume * raw.contains(grid).mean()
    exact = VoxelShape.from_points(surface, 0.005, noise=0.0)
    np.testing.assert_array_equal(exact.aabb(), VoxelShape.from_points(surface, 0.005).aabb())


def test_bad_meshes_and_clouds_are_refused():
    vertices, faces = _box_mesh(L_ARMS[:1])
    with pytest.raises(ValueError, match="index the vertices"):
        VoxelShape.from_mesh(vertices, faces + 8, 0.005)
    with pytest.raises(ValueError, match="NaN"):
        VoxelShape.from_points(np.r_[vertices, [[np.nan, 0, 0]]], 0.005)
    with pytest.raises(ValueError, match="no extent"):
        VoxelShape.from_points(np.zeros((5, 3)), 0.005)
    with pytest.raises(ValueError, match="pitch"):
        VoxelShape.from_points(vertices, 0.0)
    with pytest.raises(ValueError, match="noise"):
        VoxelShape.from_points(vertices, 0.005, noise=-1e-3)
