"""core.robot_kinematics: grasp signals from joint states vs finite differences and statics."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.robot_kinematics import RobotKinematics, RobotModelError


def link(name: str, mass: float) -> str:
    inertia = 'ixx="1e-3" iyy="1e-3" izz="1e-3" ixy="0" ixz="0" iyz="0"'
    return (
        f'<link name="{name}"><inertial><mass value="{mass}"/>'
        f'<origin xyz="0 0 0"/><inertia {inertia}/></inertial></link>'
    )


def joint(name: str, kind: str, parent: str, child: str, axis: str, xyz: str = "0 0 0") -> str:
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}" rpy="0.1 -0.2 0.3"/><axis xyz="{axis}"/>'
        '<limit lower="-10" upper="10" effort="1e3" velocity="10"/></joint>'
    )


def gimbal_robot_urdf(link_mass: float = 0.5) -> str:
    """Three slides (a translational 'Delta') and a three-axis gimbal ending at the grasp frame."""
    parts = [link("home", 0.0)]
    chain = [
        ("x", "prismatic", "1 0 0"),
        ("y", "prismatic", "0 1 0"),
        ("z", "prismatic", "0 0 1"),
        ("roll", "revolute", "1 0 0"),
        ("pitch", "revolute", "0 1 0"),
        ("yaw", "revolute", "0 0 1"),
    ]
    parent = "home"
    for k, (name, kind, axis) in enumerate(chain):
        child = f"link_{name}"
        parts += [link(child, link_mass), joint(name, kind, parent, child, axis, f"0 0 {0.05 * k}")]
        parent = child
    parts += [
        '<link name="grasp"/>',
        '<joint name="grasp_fixed" type="fixed"><parent link="link_yaw"/><child link="grasp"/>'
        '<origin xyz="0.02 0 0.03" rpy="0 0 0.5"/></joint>',
    ]
    return '<robot name="gimbal_robot">' + "".join(parts) + "</robot>"


@pytest.fixture(scope="module")
def robot():
    return RobotKinematics(gimbal_robot_urdf(), "grasp")


def test_twist_and_its_derivative_match_finite_differences(robot):
    rng = np.random.default_rng(0)
    q0, dq, ddq = rng.normal(size=(3, 6)) * 0.3

    def pose(t: float) -> np.ndarray:
        return robot.evaluate(q0 + dq * t + 0.5 * ddq * t**2, dq + ddq * t, ddq).T_i0_i

    def twist(t: float) -> np.ndarray:
        return robot.evaluate(q0 + dq * t + 0.5 * ddq * t**2, dq + ddq * t, ddq).V_i

    h = 1e-5
    now = robot.evaluate(q0, dq, ddq)
    V_fd = sp.log6(sp.inverse(pose(-h)) @ pose(h)) / (2 * h)
    dV_fd = (twist(h) - twist(-h)) / (2 * h)
    assert np.allclose(now.V_i, V_fd, atol=1e-7)
    assert np.allclose(now.dV_i, dV_fd, atol=1e-6)


def test_applied_wrench_satisfies_virtual_power(robot):
    """tau . dq = F . V for the part of tau that acts on the payload (no robot dynamics)."""
    plain = RobotKinematics(gimbal_robot_urdf(), "grasp", compensate_robot_dynamics=False)
    rng = np.random.default_rng(1)
    q, dq = rng.normal(size=(2, 6)) * 0.3
    F_true = rng.normal(size=6)
    now = plain.evaluate(q, dq, np.zeros(6))
    J_b = np.stack([plain.evaluate(q, e, np.zeros(6)).V_i for e in np.eye(6)], axis=1)
    tau = J_b.T @ F_true
    assert np.isclose(tau @ dq, F_true @ now.V_i)
    assert np.allclose(plain.applied_wrench(q, dq, np.zeros(6), tau), F_true)


def test_static_hold_recovers_the_payload_weight(robot):
    """At rest, the efforts that hold m kg more give an upward F_i of m g in {i}."""
    mass = 2.0
    q = np.zeros(6)
    T = robot.evaluate(q, np.zeros(6), np.zeros(6)).T_i0_i
    weight_i = T[:3, :3].T @ np.array([0.0, 0.0, mass * 9.81])  # upward force in {i}
    F_payload = np.concatenate([np.zeros(3), weight_i])
    J_b = np.stack([robot.evaluate(q, e, np.zeros(6)).V_i for e in np.eye(6)], axis=1)
    tau = pin.rnea(robot.model, robot.data, q, np.zeros(6), np.zeros(6)) + J_b.T @ F_payload
    F_i = robot.evaluate(q, np.zeros(6), np.zeros(6), tau).F_i
    assert np.allclose(F_i, F_payload, atol=1e-9)
    assert np.isclose(np.linalg.norm(F_i[3:]), mass * 9.81)


def test_joint_order_maps_names_and_reports_missing_joints(robot):
    names = ["yaw", "pitch", "roll", "z", "y", "x", "extra"]
    order = robot.joint_order(names)
    assert [names[k] for k in order] == robot.joint_names
    with pytest.raises(RobotModelError, match="lacks joints"):
        robot.joint_order(["x", "y"])


def test_bad_urdf_and_unknown_frame_are_clear_errors():
    with pytest.raises(RobotModelError, match="grasp frame 'tool0' is not in the URDF"):
        RobotKinematics(gimbal_robot_urdf(), "tool0")
    with pytest.raises(RobotModelError, match="cannot parse"):
        RobotKinematics("<robot", "grasp")


def branched_urdf(yaw_kind: str) -> str:
    """The gimbal robot with its yaw joint of ``yaw_kind``, a gripper finger below the grasp
    link and a camera pan joint on the base: two joints off the chain to the grasp frame."""
    urdf = gimbal_robot_urdf().replace(
        'name="yaw" type="revolute"', f'name="yaw" type="{yaw_kind}"'
    )
    extra = (
        link("finger", 0.1)
        + joint("finger_slide", "prismatic", "grasp", "finger", "1 0 0", "0 0 0.1")
        + link("camera", 0.2)
        + joint("pan", "revolute", "home", "camera", "0 0 1", "0.3 0 0")
    )
    return urdf.replace("</robot>", extra + "</robot>")


def test_only_the_chain_to_the_grasp_is_modelled_and_continuous_joints_work():
    """Joint states name the chain's joints only (finger and pan are locked), a continuous
    yaw takes its angle like a revolute one, and the signals equal Pinocchio's on the full
    revolute model with the other joints at zero (kinematics) - the wrench too, without
    robot dynamics."""
    reduced = RobotKinematics(branched_urdf("continuous"), "grasp", compensate_robot_dynamics=False)
    assert reduced.joint_names == ["x", "y", "z", "roll", "pitch", "yaw"]
    full = pin.buildModelFromXML(branched_urdf("revolute"))
    data, frame = full.createData(), full.getFrameId("grasp")
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, dq, ddq, tau = (rng.uniform(-3, 3, 6) for _ in range(4))
        k = reduced.evaluate(q, dq, ddq, tau)
        index = [full.getJointId(n) - 1 for n in reduced.joint_names]
        Q, dQ, ddQ = (np.zeros(full.nq) for _ in range(3))
        Q[index], dQ[index], ddQ[index] = q, dq, ddq
        pin.forwardKinematics(full, data, Q, dQ, ddQ)
        pin.updateFramePlacements(full, data)
        np.testing.assert_allclose(k.T_i0_i, data.oMf[frame].homogeneous, atol=1e-12)
        V = pin.getFrameVelocity(full, data, frame, pin.LOCAL).vector
        np.testing.assert_allclose(k.V_i, np.r_[V[3:], V[:3]], atol=1e-12)
        J = pin.computeFrameJacobian(full, data, Q, frame, pin.LOCAL)[:, index]
        np.testing.assert_allclose(np.r_[J[3:], J[:3]].T @ k.F_i, tau, atol=1e-9)


def test_joints_with_several_degrees_of_freedom_are_refused_by_name():
    urdf = gimbal_robot_urdf().replace('name="x" type="prismatic"', 'name="x" type="planar"')
    with pytest.raises(RobotModelError, match=r"joints \['x'\] on the chain"):
        RobotKinematics(urdf, "grasp")
