"""The modular test object of paper 001 (Fig. 2 and 3), built from primitives.

A 3D-printed H-shaped PLA body (a central bar and two cross bars, with half-cylinder
bosses at the ends) has ten cylindrical holes for steel or ABS weights and fifteen
bolt holes. Geometry, densities and the eight weight patterns follow the authors'
public generator (notes ``fast-inertial-identification.md``, Sec. 6.1-6.2).

The object frame {o} has its origin at the centre of the bottom face and z through
the thickness. All lengths here are in metres.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..inertial import InertialParameters
from .shapes import Box, Relaxation, ShapeUnion

MM = 1e-3
THICKNESS = 50 * MM
BOSS_RADIUS = 7.5 * MM
WEIGHT_RADIUS = 12.7 * MM
WEIGHT_HEIGHT = 25.4 * MM
BOLT_RADIUS = 3.3 * MM
# Edge lengths of the bounding box, a in paper 001 Eqs. 11-12.
BOUNDING_BOX = np.array([0.200, 0.315, 0.050])

# (x, y) of the ten weight holes and fifteen bolt holes, in mm; holes are centred at z = 25 mm.
WEIGHT_HOLES = np.array(
    [
        [-65, 125], [0, 125], [65, 125], [0, 75], [0, 25],
        [0, -25], [0, -75], [-65, -125], [0, -125], [65, -125],
    ]
) * MM  # fmt: skip
BOLT_HOLES = np.array(
    [
        [0, 150], [-90, 125], [-40, 125], [40, 125], [90, 125], [0, 100], [0, 50], [0, 0],
        [0, -50], [0, -100], [-90, -125], [-40, -125], [40, -125], [90, -125], [0, -150],
    ]
) * MM  # fmt: skip

# Densities [kg/m^3]: (PLA at 20 % infill, ABS, steel).
DENSITIES = {"simulation": (260.0, 1040.0, 7770.0), "real": (491.0, 1321.0, 7847.0)}

# Weight patterns of Fig. 3: name -> (steel hole indices, ABS hole indices).
CONFIGURATIONS = {
    "Hammer": ((0, 1, 2, 3), (4, 5, 6, 8)),
    "Barbell": ((0, 1, 2, 7, 8, 9), (3, 4, 5, 6)),
    "Tee": ((0, 1, 2, 3, 4, 5, 6), ()),
    "Uniform": (tuple(range(10)), ()),
    "Corners": ((0, 2, 7, 9), ()),
    "Rod": ((1, 3, 4, 5, 6, 8), ()),
    "Half-N-Half": ((0, 1, 2, 3, 4), (5, 6, 7, 8, 9)),
    "Empty": ((), ()),
}


def _solid_box(density: float, size: np.ndarray, centre: np.ndarray) -> InertialParameters:
    return Box(np.asarray(size) / 2, p_b_s=centre).uniform_density_params(
        density * float(np.prod(size))
    )


def _solid_cylinder(
    density: float, radius: float, height: float, centre: list[float]
) -> InertialParameters:
    """A cylinder with its axis along z."""
    m = density * np.pi * radius**2 * height
    I_c = m * np.diag([(3 * radius**2 + height**2) / 12] * 2 + [radius**2 / 2])
    return InertialParameters.from_mass_com_inertia(m, centre, I_c)


def _half_cylinder(density: float, face_centre: np.ndarray, outward_y: float) -> InertialParameters:
    """A boss: half of a z-axis cylinder, flat face in the plane y = face_centre[1]."""
    r, h = BOSS_RADIUS, THICKNESS
    m = density * np.pi * r**2 * h / 2
    offset = 4 * r / (3 * np.pi)  # CoM distance from the flat face
    I_face = m * np.diag([(3 * r**2 + h**2) / 12] * 2 + [r**2 / 2])  # about the face centre
    I_c = I_face - m * offset**2 * np.diag([1.0, 0.0, 1.0])
    return InertialParameters.from_mass_com_inertia(
        m, face_centre + [0.0, outward_y * offset, 0.0], I_c
    )


def outer_shell(relaxation: Relaxation = "moment") -> ShapeUnion:
    """The object's outer shell: the three bars and a box around each boss."""
    end, tip = 150 * MM, 150 * MM + BOSS_RADIUS
    corners = [
        ([-25 * MM, -100 * MM, 0.0], [25 * MM, 100 * MM, THICKNESS]),  # central bar
        ([-100 * MM, 100 * MM, 0.0], [100 * MM, end, THICKNESS]),  # cross bars
        ([-100 * MM, -end, 0.0], [100 * MM, -100 * MM, THICKNESS]),
        ([-BOSS_RADIUS, end, 0.0], [BOSS_RADIUS, tip, THICKNESS]),  # bosses
        ([-BOSS_RADIUS, -tip, 0.0], [BOSS_RADIUS, -end, THICKNESS]),
    ]
    return ShapeUnion([Box.from_corners(lo, hi, relaxation) for lo, hi in corners])


@dataclass(frozen=True)
class CompositeObject:
    """One configuration of the test object, in the object frame {o}."""

    name: str
    params: InertialParameters
    shape: ShapeUnion
    bounding_box: np.ndarray  # edge lengths a [m] for paper 001's metrics


def composite_object(name: str, densities: str = "simulation") -> CompositeObject:
    """The test object with the weight pattern ``name`` (paper 001, Fig. 3), bolts excluded."""
    if name not in CONFIGURATIONS:
        raise ValueError(f"unknown configuration {name!r}; choose one of {sorted(CONFIGURATIONS)}")
    if densities not in DENSITIES:
        raise ValueError(f"densities must be one of {sorted(DENSITIES)}")
    pla, abs_plastic, steel = DENSITIES[densities]
    z_hole = THICKNESS / 2
    bars = outer_shell().parts[:3]
    parts = [_solid_box(pla, 2 * bar.half_extents, bar.p_b_s) for bar in bars]
    parts += [
        _half_cylinder(pla, np.array([0.0, 150 * MM, z_hole]), +1.0),
        _half_cylinder(pla, np.array([0.0, -150 * MM, z_hole]), -1.0),
    ]
    parts += [_solid_cylinder(-pla, BOLT_RADIUS, THICKNESS, [x, y, z_hole]) for x, y in BOLT_HOLES]
    steel_holes, abs_holes = CONFIGURATIONS[name]
    for index, (x, y) in enumerate(WEIGHT_HOLES):
        fill = steel if index in steel_holes else abs_plastic if index in abs_holes else 0.0
        parts.append(_solid_cylinder(fill - pla, WEIGHT_RADIUS, WEIGHT_HEIGHT, [x, y, z_hole]))
    body = sum(parts[1:], parts[0])
    return CompositeObject(name, body, outer_shell(), BOUNDING_BOX.copy())
