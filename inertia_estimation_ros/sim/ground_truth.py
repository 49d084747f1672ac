"""Ground truth read from MuJoCo's compiled model (never computed separately).

MuJoCo composes each body's mass, CoM and inertia from its geoms; the compiled
model stores them as ``body_mass``, ``body_ipos`` (CoM in the body frame),
``body_iquat`` (principal axes in the body frame, w-x-y-z) and ``body_inertia``
(principal moments). Sites store their pose in their body's frame.
"""

from __future__ import annotations

import mujoco
import numpy as np

from ..core.inertial import InertialParameters
from ..core.spatial import transform
from .quaternion import matrix_from_wxyz
from .scenario import SimulationResult, pose_to_yaml


def body_inertial_parameters(model: mujoco.MjModel, body: str) -> InertialParameters:
    """The body's inertial parameters in its own body frame, from the compiled model."""
    b = model.body(body)
    R_b_c = matrix_from_wxyz(b.iquat)
    inertia_about_com = R_b_c @ np.diag(b.inertia) @ R_b_c.T
    return InertialParameters.from_mass_com_inertia(float(b.mass[0]), b.ipos, inertia_about_com)


def site_pose_in_body(model: mujoco.MjModel, site: str) -> np.ndarray:
    """T_b_site: the site's pose in its body's frame, from the compiled model."""
    s = model.site(site)
    return transform(matrix_from_wxyz(s.quat), s.pos)


def body_pose_in_parent(model: mujoco.MjModel, body: str) -> np.ndarray:
    """T_parent_body at qpos = 0 (the body's ``pos``/``quat`` in the compiled model)."""
    b = model.body(body)
    return transform(matrix_from_wxyz(b.quat), b.pos)


def site_pose_in_world(data: mujoco.MjData, site: str) -> np.ndarray:
    """T_w_site in the current (forward-computed) state."""
    s = data.site(site)
    return transform(s.xmat.reshape(3, 3), s.xpos)


def body_pose_in_world(data: mujoco.MjData, body: str) -> np.ndarray:
    """T_w_body in the current (forward-computed) state."""
    b = data.body(body)
    return transform(b.xmat.reshape(3, 3), b.xpos)


def ground_truth_document(result: SimulationResult) -> dict:
    """A run's ground truth as plain YAML-ready data (saved next to its bag)."""
    truth = result.ground_truth
    params = truth.payload
    moments, R_s_c = params.principal_axes()
    ref = truth.reference_robot
    return {
        "scenario": result.scenario_name,
        "type": result.scenario_type,
        "seed": result.seed,
        "reference_robot": ref,
        "reference_frame": result.robots[ref].grasp_frame_id,
        "payload": {
            "parameters": params.vec.tolist(),
            "mass": params.mass,
            "com": params.com.tolist(),
            "inertia_about_com": params.inertia_about_com.tolist(),
            "principal_moments": moments.tolist(),
            "principal_axes": pose_to_yaml(transform(R_s_c, params.com)),
        },
        "grasps": {rid: pose_to_yaml(T) for rid, T in truth.T_s_i.items()},
        "home_frames_in_world": {rid: pose_to_yaml(T) for rid, T in truth.T_w_i0.items()},
        "clock_offsets": dict(truth.clock_offsets),
        "sensor_errors": {rid: record.sensor_errors for rid, record in result.robots.items()},
        "phases": [
            {"name": p.name, "program": p.program, "start": p.start, "end": p.end}
            for p in result.phases
        ],
    }
