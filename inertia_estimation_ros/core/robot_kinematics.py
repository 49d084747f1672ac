"""One robot's grasp-frame signals from its joint states, with Pinocchio.

Given the robot's URDF (its root is the home frame {i0}), joint positions q (one per
joint, angles of continuous joints too), velocities dq, accelerations ddq and, optionally,
joint efforts tau of the chain from the root to the grasp frame {i}, this computes what
``GraspSample`` holds. Only that chain is modelled (Pinocchio's reduced model): joints off
it (a gripper, another arm, a pan-tilt head) are locked at their neutral position, so joint
states need not name them.

* ``T_i0_i``: forward kinematics of the grasp frame;
* ``V_i = J_b(q) dq``: the body twist, J_b the body Jacobian of {i} (Modern
  Robotics Eq. 5.18), angular first as everywhere in the core;
* ``dV_i = J_b ddq + dJ_b dq``: the time derivative of the body twist (Pinocchio's
  LOCAL frame acceleration, not the classical acceleration);
* ``F_i``: the wrench the robot applies on the payload at {i}. Joint efforts
  balance the robot's own dynamics and the payload: tau = M ddq + h(q, dq) + J_b^T F_i
  (Modern Robotics Eq. 8.1 with an end-effector wrench), so
  F_i = (J_b^T)^+ (tau - M ddq - h), with the robot's own dynamics from its URDF
  inertias (RNEA) when ``compensate_robot_dynamics`` is set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dgesv

# Pinocchio's spatial vectors are linear first; the core's are angular first.
_ANGULAR_FIRST = np.array([3, 4, 5, 0, 1, 2])
_RANK_TOLERANCE = 6 * np.finfo(float).eps  # lstsq's default cutoff for a 6x6 (rcond=None)


class RobotModelError(ValueError):
    """The URDF or the joint names do not describe the chain this robot needs."""


@dataclass(frozen=True)
class GraspKinematics:
    """Grasp-frame pose, body twist and its derivative (and, if efforts were given, the wrench)."""

    T_i0_i: np.ndarray
    V_i: np.ndarray
    dV_i: np.ndarray
    F_i: np.ndarray | None


class RobotKinematics:
    """Pinocchio model of one robot, from a URDF string, evaluated at its grasp frame."""

    def __init__(self, urdf: str, grasp_frame: str, compensate_robot_dynamics: bool = True):
        try:
            full = pin.buildModelFromXML(urdf)
        except (RuntimeError, ValueError) as error:
            raise RobotModelError(f"cannot parse the URDF: {error}") from None
        if not full.existFrame(grasp_frame):
            names = ", ".join(f.name for f in full.frames)
            raise RobotModelError(f"grasp frame {grasp_frame!r} is not in the URDF; it has {names}")
        self.model = _chain_model(full, grasp_frame)
        wide = [self.model.names[j] for j in range(1, self.model.njoints) if self.model.nvs[j] != 1]
        if wide:
            raise RobotModelError(
                f"joints {wide} on the chain to {grasp_frame!r} have several degrees of freedom; "
                "only revolute, continuous and prismatic joints are supported"
            )
        # Continuous joints: q holds (cos, sin) of the angle (nq 2, nv 1).
        self._circular = np.array([self.model.nqs[j] == 2 for j in range(1, self.model.njoints)])
        self._any_circular = bool(self._circular.any())
        self.data = self.model.createData()
        self.frame_id = self.model.getFrameId(grasp_frame)
        self.compensate = compensate_robot_dynamics
        self.joint_names = [self.model.names[j] for j in range(1, self.model.njoints)]

    def joint_order(self, names: list[str]) -> np.ndarray:
        """Index of each model joint in a JointState's name list; raises if one is missing."""
        index = {name: k for k, name in enumerate(names)}
        missing = [name for name in self.joint_names if name not in index]
        if missing:
            raise RobotModelError(
                f"joint state lacks joints {missing}; the URDF has {self.joint_names}"
            )
        return np.array([index[name] for name in self.joint_names])

    def frame_in_grasp(self, frame: str) -> np.ndarray:
        """T_i_f of a frame rigidly attached to the grasp frame {i} (e.g. a sensor frame).

        Raises ``RobotModelError`` if the URDF has no such frame or a joint moves it relative
        to {i}."""
        if not self.model.existFrame(frame):
            raise RobotModelError(f"frame {frame!r} is not in the URDF")
        f, i = self.model.frames[self.model.getFrameId(frame)], self.model.frames[self.frame_id]
        if _parent_joint(f) != _parent_joint(i):
            raise RobotModelError(
                f"frame {frame!r} is not rigidly attached to the grasp frame {i.name!r}"
            )
        return (i.placement.inverse() * f.placement).homogeneous

    def configuration(self, q: np.ndarray) -> np.ndarray:
        """Pinocchio's configuration vector of one position per joint (angles of continuous
        joints become their cos and sin)."""
        q = np.asarray(q, dtype=float)
        if not self._any_circular:
            return q
        circular = self._circular
        parts = [[np.cos(a), np.sin(a)] if c else [a] for a, c in zip(q, circular, strict=True)]
        return np.concatenate(parts)

    def evaluate(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, tau: np.ndarray | None = None
    ) -> GraspKinematics:
        """Grasp-frame signals at (q, dq, ddq), and the applied wrench if tau is given."""
        model, data = self.model, self.data
        q = self.configuration(q)
        pin.forwardKinematics(model, data, q, dq, ddq)
        pin.updateFramePlacements(model, data)
        placement = data.oMf[self.frame_id]
        T_i0_i = placement.homogeneous.copy()
        V_i = pin.getFrameVelocity(model, data, self.frame_id, pin.LOCAL).vector[_ANGULAR_FIRST]
        dV_i = pin.getFrameAcceleration(model, data, self.frame_id, pin.LOCAL).vector[
            _ANGULAR_FIRST
        ]
        F_i = None if tau is None else self.applied_wrench(q, dq, ddq, tau)
        return GraspKinematics(T_i0_i, V_i, dV_i, F_i)

    def applied_wrench(
        self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, tau: np.ndarray
    ) -> np.ndarray:
        """F_i = (J_b^T)^+ (tau - tau_robot): the wrench on the payload at {i}, in {i}.

        A chain of six joints solves J_b^T F = tau - tau_robot directly (LAPACK's LU, called
        without numpy's wrapper: ~2 against ~21 us per robot sample for ``lstsq``; the same F
        to rounding while J_b is regular); a J_b singular to working precision (a pivot below
        ``lstsq``'s cutoff relative to the largest), and any other chain, takes the
        minimum-norm least squares."""
        model, data = self.model, self.data
        q = self.configuration(q) if len(q) != model.nq else q
        J_b = pin.computeFrameJacobian(model, data, q, self.frame_id, pin.LOCAL)[_ANGULAR_FIRST]
        tau_robot = pin.rnea(model, data, q, dq, ddq) if self.compensate else 0.0
        residual = np.asarray(tau, dtype=float) - tau_robot
        if model.nv == 6:
            lu, _, F, singular = dgesv(J_b.T, residual)
            pivots = np.abs(lu.diagonal())
            if not singular and pivots.min() > _RANK_TOLERANCE * pivots.max():
                return F
        F, *_ = np.linalg.lstsq(J_b.T, residual, rcond=None)
        return F


def _chain_model(model: pin.Model, frame: str) -> pin.Model:
    """The model of the joints from the root to ``frame`` only: every other joint locked at
    its neutral position (``pin.buildReducedModel``)."""
    chain = set(model.supports[_parent_joint(model.frames[model.getFrameId(frame)])])
    locked = [j for j in range(1, model.njoints) if j not in chain]
    if not locked:
        return model
    return pin.buildReducedModel(model, locked, pin.neutral(model))


def _parent_joint(frame: pin.Frame) -> int:
    """The joint a frame moves with: ``parentJoint`` (Pinocchio 3), ``parent`` before."""
    return frame.parentJoint if hasattr(frame, "parentJoint") else frame.parent
