"""Rigid payloads made of primitives (box, cylinder, sphere), each with its own density or mass.

A payload is described in its own frame {P}; MuJoCo composes the body's mass, CoM
and inertia from the geoms, and the ground truth is read back from the compiled
model (``ground_truth.body_inertial_parameters``), never computed here. YAML forms:

* ``kind: box``: ``size: [x, y, z]`` (full lengths), ``density`` or ``mass``, ``pose``;
* ``kind: aluminium_frame``: a rectangular frame of square hollow tubes,
  ``length``, ``width`` (centre lines), ``tube`` (outer side), ``wall``,
  ``density`` (default 2700 kg/m^3), ``pose`` (of the frame's centre in {P});
* ``kind: composite``: ``primitives:`` a list of ``{shape, size | radius/length,
  density | mass, pose}``.

The same primitives serve the later aerial and tray scenarios.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.spatial import transform
from .quaternion import wxyz_from_matrix
from .scenario import ScenarioError, Section

ALUMINIUM_DENSITY = 2700.0  # kg/m^3
SHAPES = ("box", "cylinder", "sphere")


@dataclass(frozen=True)
class Primitive:
    """One solid: ``size`` holds full lengths for a box, (radius, length) for a cylinder
    along its z axis, (radius,) for a sphere. Exactly one of density and mass is set."""

    shape: str
    size: tuple[float, ...]
    T_P_g: np.ndarray  # pose of the primitive's centre in the payload frame {P}
    density: float | None = None  # kg/m^3
    mass: float | None = None  # kg

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ScenarioError(f"primitive shape {self.shape!r} is not one of {list(SHAPES)}")
        if (self.density is None) == (self.mass is None):
            raise ScenarioError(f"{self.shape}: give exactly one of density and mass")
        if min(self.size) <= 0 or (self.density or self.mass) <= 0:
            raise ScenarioError(f"{self.shape}: sizes, density and mass must be > 0")

    def mjcf(self, name: str) -> str:
        """The MJCF ``<geom>`` (MuJoCo sizes are half-lengths; no collisions)."""
        if self.shape == "box":
            size = np.asarray(self.size) / 2.0
        elif self.shape == "cylinder":
            size = np.array([self.size[0], self.size[1] / 2.0])
        else:
            size = np.asarray(self.size)
        p = self.T_P_g[:3, 3]
        w_xyz = wxyz_from_matrix(self.T_P_g[:3, :3])
        amount = f'density="{self.density!r}"' if self.mass is None else f'mass="{self.mass!r}"'
        return (
            f'<geom name="{name}" type="{self.shape}" size="{_numbers(size)}" '
            f'pos="{_numbers(p)}" quat="{_numbers(w_xyz)}" {amount}/>'
        )


def _numbers(x: np.ndarray) -> str:
    return " ".join(repr(float(v)) for v in x)


def aluminium_frame(
    length: float,
    width: float,
    tube: float,
    wall: float,
    T_P_frame: np.ndarray,
    density: float = ALUMINIUM_DENSITY,
) -> list[Primitive]:
    """A rectangular frame of square hollow tubes, each tube as its four wall plates.

    Two tubes run along x (length + tube, so the corners are closed) at y = +-width/2,
    two along y between them (width - tube) at x = +-length/2; all centred at z = 0
    of the frame's own pose ``T_P_frame``.
    """
    if not 0 < 2 * wall < tube < min(length, width):
        raise ScenarioError(
            f"aluminium_frame: need 0 < 2 wall < tube < min(length, width); got wall={wall}, "
            f"tube={tube}, length={length}, width={width}"
        )
    plates = []
    for side in (-1.0, 1.0):
        plates += _tube_walls((0.0, side * width / 2, 0.0), length + tube, 0, tube, wall)
        plates += _tube_walls((side * length / 2, 0.0, 0.0), width - tube, 1, tube, wall)
    return [
        Primitive("box", tuple(size), T_P_frame @ transform(np.eye(3), centre), density=density)
        for size, centre in plates
    ]


def _tube_walls(
    centre: tuple[float, float, float], length: float, axis: int, tube: float, wall: float
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(size, centre) of the 4 plates of a square tube along ``axis`` (0: x, 1: y)."""
    across = 1 - axis
    plates = []
    for side in (-1.0, 1.0):
        top = np.zeros(3)
        top[axis], top[across], top[2] = length, tube, wall
        c_top = np.array(centre)
        c_top[2] += side * (tube - wall) / 2
        web = np.zeros(3)
        web[axis], web[across], web[2] = length, wall, tube - 2 * wall
        c_web = np.array(centre)
        c_web[across] += side * (tube - wall) / 2
        plates += [(top, c_top), (web, c_web)]
    return plates


def _primitive(section: Section) -> Primitive:
    shape = section.string("shape", choices=SHAPES)
    if shape == "box":
        size = tuple(section.vector("size", 3))
    elif shape == "cylinder":
        size = (section.number("radius", positive=True), section.number("length", positive=True))
    else:
        size = (section.number("radius", positive=True),)
    primitive = Primitive(
        shape,
        size,
        section.pose("pose", None),
        density=section.number("density", None, positive=True),
        mass=section.number("mass", None, positive=True),
    )
    section.done()
    return primitive


def read_payload(section: Section) -> list[Primitive]:
    """The payload's primitives from its YAML section (see the module docstring)."""
    kind = section.string("kind", choices=("box", "aluminium_frame", "composite"))
    if kind == "box":
        primitives = [
            Primitive(
                "box",
                tuple(section.vector("size", 3)),
                section.pose("pose", None),
                density=section.number("density", None, positive=True),
                mass=section.number("mass", None, positive=True),
            )
        ]
    elif kind == "aluminium_frame":
        primitives = aluminium_frame(
            section.number("length", positive=True),
            section.number("width", positive=True),
            section.number("tube", positive=True),
            section.number("wall", positive=True),
            section.pose("pose", None),
            section.number("density", ALUMINIUM_DENSITY, positive=True),
        )
    else:
        items = section.items("primitives")
        if not items:
            raise ScenarioError(f"{section.path}.primitives: give at least one primitive")
        primitives = [
            _primitive(Section(item, f"{section.path}.primitives[{k}]"))
            for k, item in enumerate(items)
        ]
    return primitives
