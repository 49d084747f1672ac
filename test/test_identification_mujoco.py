"""Identification on MuJoCo-simulated F/T data: an independent physics engine checks the
regressor's conventions end to end and gives the ground truth (its compiled inertia)."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.identification import (
    Box,
    ConsistentIdentification,
    Cylinder,
    RegressionData,
    ShapePriorIdentification,
    ShapeUnion,
    inertia_errors,
    least_squares,
)
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor

# A three-hinge wrist holding a payload of three geoms; the F/T site is on the payload, so
# the sensors read the wrench the wrist applies on it, in the site frame.
MODEL = """
<mujoco>
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="wrist" pos="0 0 1">
      <joint type="hinge" axis="1 0 0"/>
      <joint type="hinge" axis="0 1 0"/>
      <joint type="hinge" axis="0 0 1"/>
      <geom type="sphere" size="0.02" mass="0.5"/>
      <body name="payload" pos="0.05 0.02 -0.03" quat="0.9 0.1 0.3 0.2">
        <site name="ft" pos="0.01 -0.02 0" quat="0.8 0 0.6 0"/>
        <geom type="box" size="0.1 0.03 0.02" pos="0.08 0 0" density="800"/>
        <geom type="cylinder" size="0.02 0.04" pos="0.17 0 0.03" density="7800"/>
        <geom type="box" size="0.03 0.06 0.02" pos="0 0.05 0" density="1200"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <torque site="ft"/>
    <force site="ft"/>
  </sensor>
</mujoco>
"""
WRENCH_STD = np.r_[[0.005] * 3, [0.1] * 3]


def _pose(pos, quat_wxyz):
    return sp.transform(Rotation.from_quat(np.roll(quat_wxyz, -1)).as_matrix(), pos)


@pytest.fixture(scope="module")
def simulation():
    """(V, dV, g, F) at the site over 4 s of a three-sine wrist motion, truth, shape."""
    model = mujoco.MjModel.from_xml_string(MODEL)
    data = mujoco.MjData(model)
    site, body = model.site("ft").id, model.body("payload").id
    frequencies, amplitudes = np.array([0.3, 0.45, 0.55]), np.array([1.2, 1.0, 1.5])

    def state(t):
        phase = 2 * np.pi * frequencies * t
        q = amplitudes * np.sin(phase)
        dq = amplitudes * 2 * np.pi * frequencies * np.cos(phase)
        ddq = -amplitudes * (2 * np.pi * frequencies) ** 2 * np.sin(phase)
        return q, dq, ddq

    def twist(t):
        data.qpos[:], data.qvel[:], _ = state(t)
        mujoco.mj_forward(model, data)
        V = np.zeros(6)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, site, V, 1)
        return V  # (omega, v) in the site frame: the core's body twist

    samples = []
    h = 1e-5
    for t in np.arange(0.0, 4.0, 0.02):
        dV = (twist(t + h) - twist(t - h)) / (2 * h)
        V = twist(t)
        data.qpos[:], data.qvel[:], data.qacc[:] = state(t)
        mujoco.mj_inverse(model, data)
        R_w_s = data.site_xmat[site].reshape(3, 3)
        samples.append((V, dV, R_w_s.T @ model.opt.gravity, data.sensordata.copy()))
    V, dV, g, F = (np.array(x) for x in zip(*samples, strict=True))
    R_b_i = Rotation.from_quat(np.roll(model.body_iquat[body], -1)).as_matrix()
    truth_b = InertialParameters.from_mass_com_inertia(
        model.body_mass[body],
        model.body_ipos[body],
        R_b_i @ np.diag(model.body_inertia[body]) @ R_b_i.T,
    )
    T_s_b = sp.inverse(_pose(model.site_pos[site], model.site_quat[site]))
    geoms = [g for g in range(model.ngeom) if model.geom_bodyid[g] == body]
    parts = []
    for geom in geoms:
        T_s_g = T_s_b @ _pose(model.geom_pos[geom], model.geom_quat[geom])
        size = model.geom_size[geom]
        if model.geom_type[geom] == mujoco.mjtGeom.mjGEOM_BOX:
            parts.append(Box(size, T_s_g[:3, :3], T_s_g[:3, 3], relaxation="quadratic"))
        else:
            parts.append(Cylinder(size[0], 2 * size[1], T_s_g[:3, :3], T_s_g[:3, 3], "quadratic"))
    return (V, dV, g, F), truth_b.transformed(T_s_b), ShapeUnion(parts)


def test_least_squares_recovers_mujocos_compiled_inertia(simulation):
    (V, dV, g, F), truth, shape = simulation
    estimate = least_squares(RegressionData.from_rows(body_regressor(V, dV, g), F))
    assert np.allclose(estimate.vec, truth.vec, rtol=1e-5, atol=1e-7)
    assert shape.can_realize(truth)


def test_noisy_short_data_constrained_estimators_stay_physical(simulation):
    """30 noisy samples: least squares drifts, the constrained estimates stay realizable on
    the payload's geoms and land closer to the truth."""
    (V, dV, g, F), truth, shape = simulation
    rng = np.random.default_rng(0)
    box = np.ptp(np.array(shape.aabb()), axis=0)
    keep = slice(0, 30)
    F_noisy = F[keep] + rng.normal(size=F[keep].shape) * WRENCH_STD
    Y = body_regressor(V[keep], dV[keep], g[keep])
    ols = least_squares(RegressionData.from_rows(Y, F_noisy))
    sdp = ConsistentIdentification(shapes=shape).solve(RegressionData.from_rows(Y, F_noisy))
    project = ShapePriorIdentification(shape, WRENCH_STD)
    project.add(V[keep], dV[keep], g[keep], F_noisy)
    error = {
        name: inertia_errors(estimate, truth, box).mean()
        for name, estimate in (("ols", ols), ("sdp", sdp.params), ("project", project.solve()))
    }
    assert shape.can_realize(sdp.params) and error["sdp"] < error["ols"]
    assert error["project"] < error["ols"]
