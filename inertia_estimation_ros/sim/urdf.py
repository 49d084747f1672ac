"""URDF of one robot's chain, from its home frame {i0} to its grasp frame {i}, out of MuJoCo.

Everything comes from the compiled model: each body becomes a link (its name is
the link name, e.g. ``robot_1/home`` ... ``robot_1/grasp``), each body's joint a
URDF joint of the same name (the names in ``sensor_msgs/JointState``), with the
body's pose in its parent as the joint origin and the body's mass, CoM and inertia
as the link's inertial. The robot nodes load it with ``pinocchio.buildModelFromXML``
(``core.robot_kinematics``) and get the same kinematics and link dynamics.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import mujoco
import numpy as np
from scipy.spatial.transform import Rotation

from .ground_truth import body_inertial_parameters, body_pose_in_parent

_JOINT_TYPES = {
    int(mujoco.mjtJoint.mjJNT_SLIDE): "prismatic",
    int(mujoco.mjtJoint.mjJNT_HINGE): "revolute",
}
_LIMIT = 1e3  # URDF needs limits on prismatic and revolute joints; the chain has none.


def _numbers(x: np.ndarray) -> str:
    return " ".join(repr(float(v)) for v in x)


def _origin(parent: ET.Element, T: np.ndarray) -> None:
    rpy = Rotation.from_matrix(T[:3, :3]).as_euler("xyz")  # URDF rpy: fixed axes x, y, z
    ET.SubElement(parent, "origin", xyz=_numbers(T[:3, 3]), rpy=_numbers(rpy))


def _link(robot: ET.Element, model: mujoco.MjModel, body: str) -> None:
    link = ET.SubElement(robot, "link", name=body)
    params = body_inertial_parameters(model, body)
    if params.mass <= 0:
        return
    inertial = ET.SubElement(link, "inertial")
    ET.SubElement(inertial, "origin", xyz=_numbers(params.com), rpy="0 0 0")
    ET.SubElement(inertial, "mass", value=repr(params.mass))
    I_c = params.inertia_about_com
    names = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
    entries = (I_c[0, 0], I_c[0, 1], I_c[0, 2], I_c[1, 1], I_c[1, 2], I_c[2, 2])
    ET.SubElement(
        inertial, "inertia", {n: repr(float(v)) for n, v in zip(names, entries, strict=True)}
    )


def _chain(model: mujoco.MjModel, root: str, tip: str) -> list[int]:
    """Body ids from the child of ``root`` down to ``tip``."""
    root_id, body = model.body(root).id, model.body(tip).id
    chain = []
    while body != root_id:
        if body == 0:
            raise ValueError(f"body {tip!r} is not below {root!r}")
        chain.append(body)
        body = int(model.body_parentid[body])
    return chain[::-1]


def chain_urdf(model: mujoco.MjModel, root: str, tip: str, robot_name: str) -> str:
    """The URDF (a string) of the serial chain from body ``root`` to body ``tip``.

    Each body has at most one slide or hinge joint at its origin; a body without one
    is attached by a fixed joint named ``<body>_fixed``.
    """
    robot = ET.Element("robot", name=robot_name)
    _link(robot, model, root)
    for body in _chain(model, root, tip):
        name = model.body(body).name
        parent = model.body(int(model.body_parentid[body])).name
        _link(robot, model, name)
        count, first = int(model.body_jntnum[body]), int(model.body_jntadr[body])
        if count > 1 or (count == 1 and int(model.jnt_type[first]) not in _JOINT_TYPES):
            raise ValueError(f"body {name!r}: a URDF chain needs one slide or hinge per body")
        if count == 1 and np.any(model.jnt_pos[first] != 0):
            raise ValueError(f"body {name!r}: the joint must sit at the body origin")
        if count == 1:
            joint = ET.SubElement(
                robot,
                "joint",
                name=model.joint(first).name,
                type=_JOINT_TYPES[int(model.jnt_type[first])],
            )
        else:
            joint = ET.SubElement(robot, "joint", name=f"{name}_fixed", type="fixed")
        ET.SubElement(joint, "parent", link=parent)
        ET.SubElement(joint, "child", link=name)
        _origin(joint, body_pose_in_parent(model, name))
        if count == 1:
            ET.SubElement(joint, "axis", xyz=_numbers(model.jnt_axis[first]))
            limits = {"lower": repr(-_LIMIT), "upper": repr(_LIMIT)}
            ET.SubElement(joint, "limit", effort=repr(_LIMIT), velocity=repr(_LIMIT), **limits)
    ET.indent(robot)
    return ET.tostring(robot, encoding="unicode")
