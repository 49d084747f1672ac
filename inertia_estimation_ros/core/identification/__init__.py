"""Physically consistent inertial identification of one rigid body (papers 001 and 003).

Where each method lives:

* ``least_squares``: the streaming data (``RegressionData``), OLS / WLS, TLS and
  recursive TLS (Atkeson et al.; Kubus et al.), the baselines of paper 001;
* ``sdp``: paper 003's SDP, Eq. 25 (``ConsistentIdentification``): the pseudo-inertia
  LMI with a margin, bounding shapes, CoM regions, Euclidean or entropic ("GEO") priors;
* ``shapes``: ellipsoid, box, cylinder, convex polyhedron and unions: containment,
  realizability constraints (paper 003 Thm. 4, Cor. 2; moment relaxations), voxel grids;
* ``point_masses``: paper 001's point-mass discretization (PMD, Problem 1);
* ``shape_prior``: the project's method (``ShapePriorIdentification``), which combines
  them: a shape-based density prior, bias-compensated noise-weighted data, and the LMIs;
* ``metrics``: paper 001 Eqs. 10-12 and the Riemannian distance;
* ``conventions``: which sign, order and frame conventions the user's data follow;
* ``composite_object``: paper 001's modular test object, for tests and benchmarks.

The regressor itself is ``core.regressor``; the LMI builders ``core.consistency``.
"""

from .composite_object import CONFIGURATIONS, CompositeObject, composite_object, outer_shell
from .conventions import Convention, ConventionDiagnosis, diagnose_conventions
from .least_squares import (
    ExcitationError,
    RecursiveTotalLeastSquares,
    RegressionData,
    least_squares,
    total_least_squares,
)
from .metrics import com_errors, inertia_errors, mass_error, riemannian_distance
from .point_masses import (
    PointMassDiscretization,
    dynamism,
    full_model_weight,
    point_mass_basis,
)
from .sdp import ConsistentIdentification, MarginActiveWarning, SdpResult
from .shape_prior import ShapePriorIdentification
from .shapes import (
    Box,
    ConvexPolyhedron,
    Cylinder,
    Ellipsoid,
    Shape,
    ShapeUnion,
    VoxelShape,
    voxel_centres,
)

__all__ = [
    "CONFIGURATIONS",
    "Box",
    "CompositeObject",
    "ConsistentIdentification",
    "Convention",
    "ConventionDiagnosis",
    "ConvexPolyhedron",
    "Cylinder",
    "Ellipsoid",
    "ExcitationError",
    "MarginActiveWarning",
    "PointMassDiscretization",
    "RecursiveTotalLeastSquares",
    "RegressionData",
    "SdpResult",
    "Shape",
    "ShapePriorIdentification",
    "ShapeUnion",
    "VoxelShape",
    "com_errors",
    "composite_object",
    "diagnose_conventions",
    "dynamism",
    "full_model_weight",
    "inertia_errors",
    "least_squares",
    "mass_error",
    "outer_shell",
    "point_mass_basis",
    "riemannian_distance",
    "total_least_squares",
    "voxel_centres",
]
