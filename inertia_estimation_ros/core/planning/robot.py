"""The paper's 9-DoF mobile manipulator: Ridgeback base (x, y, yaw) + UR10 (paper 004, III-B).

Generalized position q = [x, y, yaw, 6 UR10 joints], state x = [q, nu, dnu] (27), input the
generalized jerk (9), a triple integrator as the tray's (notes §3.1). The kinematic chain
(notes §7.1, from the authors' robot description): the base's planar joints in the world,
the arm mount 0.278 m above the base top rotated pi/2, the UR10 base at (0.01, -0.27,
0.375) rotated pi from it, the UR10 itself from ``example-robot-data``'s URDF, a gripper
at ``tool0`` rotated 15 deg, and the tray surface frame {e} at the simulation calibration
(rpy (0, -pi/2, pi), xyz (0.036712, -0.000405, 0.308562)). Pinocchio gives {e}'s pose,
its LOCAL twist and spatial acceleration (the body twist and its derivative of
``core.regressor``) and the Jacobian of its position.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pinocchio as pin

from ..regressor import body_regressor
from ..spatial import skew
from .tray import GRAVITY_W

NQ = 9
NX = 3 * NQ
# Home configuration (notes §4.0): base (-1, 1, 0), arm [pi/2, -pi/4, pi/2, -pi/4, pi/2, 0.417 pi]
HOME = np.array([-1.0, 1.0, 0.0, *(np.pi * np.array([0.5, -0.25, 0.5, -0.25, 0.5, 0.417]))])
BASE_TOP_HEIGHT = 0.2  # [m] the base's top plate above the floor (only shifts heights)
UR10_URDF = "share/example-robot-data/robots/ur_description/urdf/ur10_robot.urdf"


class RobotModelError(RuntimeError):
    """The robot model cannot be built: the message says what to install."""


def ur10_urdf() -> Path:
    """The UR10 URDF shipped by the ``example-robot-data`` wheel (cmeel prefix)."""
    for entry in sys.path:
        candidate = Path(entry) / "cmeel.prefix" / UR10_URDF
        if candidate.is_file():
            return candidate
    raise RobotModelError(
        "the UR10 model comes from example-robot-data: `pip install example-robot-data` "
        "(requirements/test.txt pins it)"
    )


def _placement(rpy: tuple[float, float, float], xyz: tuple[float, float, float]) -> pin.SE3:
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), np.asarray(xyz, dtype=float))


def build_model() -> tuple[pin.Model, int]:
    """(model, frame id of the tray surface {e}) of the Ridgeback + UR10 with the tray."""
    base = pin.Model()
    parent = 0
    for name, joint in (
        ("x_to_world_joint", pin.JointModelPX()),
        ("y_to_x_joint", pin.JointModelPY()),
        ("base_to_y_joint", pin.JointModelRZ()),
    ):
        parent = base.addJoint(parent, joint, pin.SE3.Identity(), name)
        base.appendBodyToJoint(parent, pin.Inertia.Zero(), pin.SE3.Identity())
    top = pin.SE3(np.eye(3), np.array([0.0, 0.0, BASE_TOP_HEIGHT]))
    mount = top * _placement((0, 0, np.pi / 2), (0, 0, 0.278))
    ur10_base = mount * _placement((0, 0, np.pi), (0.01, -0.27, 0.375))
    frame = base.addFrame(pin.Frame("ur10_mount", parent, 0, ur10_base, pin.FrameType.OP_FRAME))
    arm = pin.buildModelFromUrdf(str(ur10_urdf()))
    model = pin.appendModel(base, arm, frame, pin.SE3.Identity())
    tool = model.getFrameId("tool0")
    gripper = model.frames[tool].placement * _placement((0, 0, 0.2618), (0, 0, 0))
    tray = gripper * _placement((0, -1.57079633, 3.14159265), (0.036712, -0.000405, 0.308562))
    tool_frame = model.frames[tool]
    joint = getattr(tool_frame, "parentJoint", None)  # Pinocchio 3; 2.x calls it `parent`
    joint = tool_frame.parent if joint is None else joint
    tray_id = model.addFrame(pin.Frame("tray", joint, tool, tray, pin.FrameType.OP_FRAME))
    return model, tray_id


class MobileManipulator:
    """Kinematics of {e} for states x = [q, nu, dnu] (..., 27), and the limits of notes §4.0."""

    name = "ridgeback_ur10"
    nq = NQ
    fd_indices = np.arange(2, NX)  # the base's x and y do not change the body motion
    # Limits (notes §4.0): positions 10 m / 10 rad for the base, 2 pi for the arm
    position_limit = np.array([10.0] * 3 + [2 * np.pi] * 6)
    velocity_limit = np.array([1.1, 1.1, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0, 3.0])
    acceleration_limit = np.array([2.5, 2.5, 1.0] + [10.0] * 6)
    jerk_limit = np.array([20.0] * 3 + [80.0] * 6)

    def __init__(self) -> None:
        self.model, self.tray = build_model()
        self.data = self.model.createData()
        self.state_lo = -np.concatenate(
            [self.position_limit, self.velocity_limit, self.acceleration_limit]
        )
        self.state_hi = -self.state_lo

    def poses(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(R_w_e (n, 3, 3), p_w_e (n, 3)) at configurations q (n, 9)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        R, p = np.empty((len(q), 3, 3)), np.empty((len(q), 3))
        for k, row in enumerate(q):
            pin.framesForwardKinematics(self.model, self.data, row)
            R[k], p[k] = self.data.oMf[self.tray].rotation, self.data.oMf[self.tray].translation
        return R, p

    def body_motion(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(V, dV, g_e) of states x (..., 27): LOCAL twist (omega, v), its derivative and
        gravity, all in {e} (the arguments of ``body_regressor``)."""
        x = np.asarray(x, dtype=float)
        flat = x.reshape(-1, NX)
        V, dV, g = np.empty((len(flat), 6)), np.empty((len(flat), 6)), np.empty((len(flat), 3))
        for k, row in enumerate(flat):
            q, v, a = row[:NQ], row[NQ : 2 * NQ], row[2 * NQ :]
            pin.forwardKinematics(self.model, self.data, q, v, a)
            pin.updateFramePlacement(self.model, self.data, self.tray)
            twist = pin.getFrameVelocity(self.model, self.data, self.tray, pin.LOCAL)
            accel = pin.getFrameAcceleration(self.model, self.data, self.tray, pin.LOCAL)
            V[k, :3], V[k, 3:] = twist.angular, twist.linear
            dV[k, :3], dV[k, 3:] = accel.angular, accel.linear
            g[k] = self.data.oMf[self.tray].rotation.T @ GRAVITY_W
        shape = x.shape[:-1]
        return V.reshape(shape + (6,)), dV.reshape(shape + (6,)), g.reshape(shape + (3,))

    def regressor_jacobian(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Y (n, 6, 10), dY/dx (n, 6, 10, 27)) for states x (n, 27): Pinocchio's analytic
        derivatives of the LOCAL twist and acceleration (and d g_e = g_e x J_omega dq),
        chained with the regressor's derivative in (V, dV, g_e) by forward differences
        (Y is polynomial of degree 2 in them)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        n = len(x)
        V, dV, g = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 3))
        D = np.zeros((n, 15, NX))  # d (V, dV, g_e) / d (q, nu, dnu)
        swap = np.r_[3:6, 0:3]  # Pinocchio's (linear, angular) -> (angular, linear)
        for k, row in enumerate(x):
            q, v, a = row[:NQ], row[NQ : 2 * NQ], row[2 * NQ :]
            pin.computeForwardKinematicsDerivatives(self.model, self.data, q, v, a)
            dv_dq, da_dq, da_dv, da_da = pin.getFrameAccelerationDerivatives(
                self.model, self.data, self.tray, pin.LOCAL
            )
            twist = pin.getFrameVelocity(self.model, self.data, self.tray, pin.LOCAL)
            accel = pin.getFrameAcceleration(self.model, self.data, self.tray, pin.LOCAL)
            pin.updateFramePlacement(self.model, self.data, self.tray)
            V[k], dV[k] = twist.vector[swap], accel.vector[swap]
            g[k] = self.data.oMf[self.tray].rotation.T @ GRAVITY_W
            D[k, :6, :NQ], D[k, :6, NQ : 2 * NQ] = dv_dq[swap], da_da[swap]
            D[k, 6:12, :NQ], D[k, 6:12, NQ : 2 * NQ] = da_dq[swap], da_dv[swap]
            D[k, 6:12, 2 * NQ :] = da_da[swap]
            D[k, 12:, :NQ] = skew(g[k]) @ da_da[3:]
        Y = body_regressor(V, dV, g)
        z = np.hstack([V, dV, g])
        step = 1e-6
        dY_dz = np.empty(Y.shape + (15,))
        for i in range(15):
            zi = z.copy()
            zi[:, i] += step
            dY_dz[..., i] = (body_regressor(zi[:, :6], zi[:, 6:12], zi[:, 12:]) - Y) / step
        return Y, np.einsum("nwpz,nzx->nwpx", dY_dz, D)

    def regressors(self, x: np.ndarray) -> np.ndarray:
        """Y (..., 6, 10) with w_GI = Y theta in {e} (paper 004, Eq. 2)."""
        return body_regressor(*self.body_motion(x))

    def positions(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(p_w_e (n, 3), d p_w_e / d q (n, 3, 9)) for configurations q (n, 9)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        p, J = np.empty((len(q), 3)), np.empty((len(q), 3, NQ))
        for k, row in enumerate(q):
            J6 = pin.computeFrameJacobian(
                self.model, self.data, row, self.tray, pin.LOCAL_WORLD_ALIGNED
            )
            pin.updateFramePlacement(self.model, self.data, self.tray)
            p[k], J[k] = self.data.oMf[self.tray].translation, J6[:3]
        return p, J
