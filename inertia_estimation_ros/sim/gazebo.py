"""Gazebo (gz sim) assets for a ground-team scenario: SDF world and models, bridge YAML.

The assets mirror the MuJoCo model (``ground_team``) and take every number from the same
compiled model: the payload link's inertial is MuJoCo's composed body (mass, CoM,
principal axes and moments), the grasp frames are SDF ``<frame>``s at the scenario's
grasp poses, and each robot is a model with the same chain and joint names:

* slides and wrist joints, the actuated ones under ``JointPositionController`` with the
  scenario's stiff gains (set-points on ``/<id>/<joint>/cmd_pos``), passive wrist joints
  damped;
* a ``force_torque`` sensor on the fixed joint between the wrist and the flange, in the
  sensor frame, ``child_to_parent``: the wrench the payload (through the flange) exerts on
  the robot, the sign of the MuJoCo bag's ``/<id>/ft_sensor``;
* an IMU on the flange if the scenario enables one; ``JointStatePublisher``;
* a ``DetachableJoint`` that welds the flange to the payload at start (gz sim closes the
  kinematic loops of the team this way).

``ros_gz_bridge`` maps the Gazebo topics to the project's: ``/clock``,
``/<id>/joint_states``, ``/<id>/ft_sensor``, ``/<id>/imu``, the set-points, the human
wrench (``ApplyLinkWrench``) and ``/ground_truth/payload_pose``. Regenerate the shipped
assets with ``python -m inertia_estimation_ros.sim.gazebo <scenario.yaml> gazebo/``.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco
import numpy as np
import yaml
from scipy.spatial.transform import Rotation

from .ground_team import JOINTS, LINEAR, GroundTeamScenario
from .ground_truth import body_inertial_parameters
from .quaternion import matrix_from_wxyz
from .scenario import ScenarioError, load_scenario

SDF_VERSION = "1.9"
FLANGE_MASS = 1e-3  # [kg]: gz needs a positive mass; MuJoCo's flange is massless
SYSTEMS = {
    "gz-sim-physics-system": "gz::sim::systems::Physics",
    "gz-sim-user-commands-system": "gz::sim::systems::UserCommands",
    "gz-sim-scene-broadcaster-system": "gz::sim::systems::SceneBroadcaster",
    "gz-sim-forcetorque-system": "gz::sim::systems::ForceTorque",
    "gz-sim-imu-system": "gz::sim::systems::Imu",
    "gz-sim-apply-link-wrench-system": "gz::sim::systems::ApplyLinkWrench",
}


def sdf_pose(T: np.ndarray) -> str:
    """SDF ``x y z roll pitch yaw`` (fixed axes x, y, z) of a 4x4 pose."""
    rpy = Rotation.from_matrix(T[:3, :3]).as_euler("xyz")
    return " ".join(f"{v:.12g}" for v in (*T[:3, 3], *rpy))


def _text(parent: ET.Element, tag: str, text: object, **attrib: str) -> ET.Element:
    element = ET.SubElement(parent, tag, attrib)
    element.text = str(text)
    return element


def _plugin(parent: ET.Element, filename: str, name: str, **settings: object) -> ET.Element:
    plugin = ET.SubElement(parent, "plugin", filename=filename, name=name)
    for key, value in settings.items():
        _text(plugin, key, value)
    return plugin


def _inertial(link: ET.Element, mass: float, T_com: np.ndarray, moments: np.ndarray) -> None:
    inertial = ET.SubElement(link, "inertial")
    _text(inertial, "pose", sdf_pose(T_com))
    _text(inertial, "mass", f"{mass:.12g}")
    inertia = ET.SubElement(inertial, "inertia")
    for name, value in zip(("ixx", "iyy", "izz"), moments, strict=True):
        _text(inertia, name, f"{value:.12g}")
    for name in ("ixy", "ixz", "iyz"):
        _text(inertia, name, 0)


def _sdf(model_or_world: ET.Element) -> str:
    root = ET.Element("sdf", version=SDF_VERSION)
    root.append(model_or_world)
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def payload_model(scenario: GroundTeamScenario, model: mujoco.MjModel) -> str:
    """The payload: one link with MuJoCo's composed inertial, visuals, and the grasp frames."""
    element = ET.Element("model", name="payload")
    link = ET.SubElement(element, "link", name="payload")
    body = model.body("payload")
    R_P_c = matrix_from_wxyz(body.iquat)
    T_com = np.eye(4)
    T_com[:3, :3], T_com[:3, 3] = R_P_c, body.ipos
    _inertial(link, float(body.mass[0]), T_com, body.inertia)
    for k, primitive in enumerate(scenario.payload):
        visual = ET.SubElement(link, "visual", name=f"part_{k}")
        _text(visual, "pose", sdf_pose(primitive.T_P_g))
        geometry = ET.SubElement(ET.SubElement(visual, "geometry"), primitive.shape)
        if primitive.shape == "box":
            _text(geometry, "size", " ".join(f"{v:.12g}" for v in primitive.size))
        else:
            _text(geometry, "radius", f"{primitive.size[0]:.12g}")
            if primitive.shape == "cylinder":
                _text(geometry, "length", f"{primitive.size[1]:.12g}")
    for robot in scenario.robots:
        frame = ET.SubElement(
            element, "frame", name=f"{robot.robot_id}_grasp", attached_to="payload"
        )
        _text(frame, "pose", sdf_pose(robot.T_P_i))
    _plugin(
        element,
        "gz-sim-pose-publisher-system",
        "gz::sim::systems::PosePublisher",
        publish_link_pose="true",
        publish_nested_model_pose="false",
        use_pose_vector_msg="false",
        update_frequency=100,
    )
    return _sdf(element)


def robot_model(scenario: GroundTeamScenario, model: mujoco.MjModel, robot_id: str) -> str:
    """One robot: the MuJoCo chain as links and joints, controllers and sensors."""
    robot = next(r for r in scenario.robots if r.robot_id == robot_id)
    element = ET.Element("model", name=robot_id)
    links = ["home", *(f"link_{j}" for j in JOINTS), "flange"]
    for name in links[:-1]:
        link = ET.SubElement(element, "link", name=name)
        params = body_inertial_parameters(model, f"{robot_id}/{name}")
        if params.mass > 0:
            moments, R = params.principal_axes()
            T = np.eye(4)
            T[:3, :3], T[:3, 3] = R, params.com
            _inertial(link, params.mass, T, moments)
        if name in ("link_roll", "link_pitch", "link_yaw"):  # the wrist centre, at zero joints
            _text(link, "pose", sdf_pose(_translation(robot.wrist_offset)), relative_to="home")
    flange = ET.SubElement(element, "link", name="flange")
    _text(flange, "pose", sdf_pose(_translation(robot.wrist_offset)), relative_to="home")
    _inertial(flange, FLANGE_MASS, np.eye(4), np.full(3, 1e-6))
    if robot.sensors.imu.enabled:
        imu = ET.SubElement(flange, "sensor", name="imu", type="imu")
        _text(imu, "always_on", "true")
        _text(imu, "update_rate", f"{robot.sensors.rate_hz:g}")
        _text(imu, "topic", f"/{robot_id}/imu")
    fixed = ET.SubElement(element, "joint", name="world_fixed", type="fixed")
    _text(fixed, "parent", "world")
    _text(fixed, "child", "home")
    parent = "home"
    for joint, linear, actuated in zip(JOINTS, LINEAR, robot.actuated, strict=True):
        name = f"{robot_id}_{joint}"
        element_joint = ET.SubElement(
            element, "joint", name=name, type="prismatic" if linear else "revolute"
        )
        _text(element_joint, "parent", parent)
        _text(element_joint, "child", f"link_{joint}")
        axis = ET.SubElement(element_joint, "axis")
        _text(axis, "xyz", " ".join(str(int(v)) for v in np.eye(3)[JOINTS.index(joint) % 3]))
        if not linear and not actuated:
            _text(ET.SubElement(axis, "dynamics"), "damping", f"{robot.wrist_damping:.12g}")
        parent = f"link_{joint}"
    ft = ET.SubElement(element, "joint", name=f"{robot_id}_ft", type="fixed")
    _text(ft, "parent", parent)
    _text(ft, "child", "flange")
    sensor = ET.SubElement(ft, "sensor", name="ft_sensor", type="force_torque")
    _text(sensor, "always_on", "true")
    _text(sensor, "update_rate", f"{robot.sensors.rate_hz:g}")
    _text(sensor, "topic", f"/{robot_id}/ft_sensor")
    settings = ET.SubElement(sensor, "force_torque")
    _text(settings, "frame", "sensor")
    _text(settings, "measure_direction", "child_to_parent")
    for joint, linear, actuated in zip(JOINTS, LINEAR, robot.actuated, strict=True):
        if actuated:
            kp, kv = robot.stiff.translation if linear else robot.stiff.rotation
            _plugin(
                element,
                "gz-sim-joint-position-controller-system",
                "gz::sim::systems::JointPositionController",
                joint_name=f"{robot_id}_{joint}",
                topic=f"/{robot_id}/{robot_id}_{joint}/cmd_pos",
                p_gain=f"{kp:.12g}",
                d_gain=f"{kv:.12g}",
                i_gain=0,
            )
    _plugin(
        element,
        "gz-sim-joint-state-publisher-system",
        "gz::sim::systems::JointStatePublisher",
        topic=f"/{robot_id}/joint_states",
    )
    _plugin(
        element,
        "gz-sim-detachable-joint-system",
        "gz::sim::systems::DetachableJoint",
        parent_link="flange",
        child_model="payload",
        child_link="payload",
        detach_topic=f"/{robot_id}/detach",
    )
    return _sdf(element)


def _translation(p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = p
    return T


def world_sdf(scenario: GroundTeamScenario) -> str:
    """The world: physics at the scenario's timestep and gravity, the systems, the models."""
    world = ET.Element("world", name=scenario.name)
    physics = ET.SubElement(world, "physics", name="fixed_step", type="dart")
    _text(physics, "max_step_size", f"{scenario.physics.timestep:g}")
    _text(physics, "real_time_factor", 1.0)
    _text(world, "gravity", " ".join(f"{g:g}" for g in scenario.physics.gravity))
    for filename, name in SYSTEMS.items():
        ET.SubElement(world, "plugin", filename=filename, name=name)
    include = ET.SubElement(world, "include")
    _text(include, "uri", f"model://{scenario.name}_payload")
    _text(include, "name", "payload")
    _text(include, "pose", sdf_pose(scenario.T_w_P0))
    for robot_id, T_w_i0 in scenario.home_frames().items():
        include = ET.SubElement(world, "include")
        _text(include, "uri", f"model://{scenario.name}_{robot_id}")
        _text(include, "name", robot_id)
        _text(include, "pose", sdf_pose(T_w_i0))
    return _sdf(world)


def bridge_config(scenario: GroundTeamScenario) -> list[dict[str, str]]:
    """``ros_gz_bridge`` entries: Gazebo topics to the topics the robot nodes read."""

    def entry(ros: str, gz: str, ros_type: str, gz_type: str, direction: str) -> dict:
        return {
            "ros_topic_name": ros,
            "gz_topic_name": gz,
            "ros_type_name": ros_type,
            "gz_type_name": gz_type,
            "direction": direction,
        }

    entries = [entry("/clock", "/clock", "rosgraph_msgs/msg/Clock", "gz.msgs.Clock", "GZ_TO_ROS")]
    for robot in scenario.robots:
        rid = robot.robot_id
        entries += [
            entry(
                f"/{rid}/joint_states",
                f"/{rid}/joint_states",
                "sensor_msgs/msg/JointState",
                "gz.msgs.Model",
                "GZ_TO_ROS",
            ),
            entry(
                f"/{rid}/ft_sensor",
                f"/{rid}/ft_sensor",
                "geometry_msgs/msg/WrenchStamped",
                "gz.msgs.Wrench",
                "GZ_TO_ROS",
            ),
        ]
        if robot.sensors.imu.enabled:
            entries.append(
                entry(
                    f"/{rid}/imu", f"/{rid}/imu", "sensor_msgs/msg/Imu", "gz.msgs.IMU", "GZ_TO_ROS"
                )
            )
        for joint, actuated in zip(JOINTS, robot.actuated, strict=True):
            if actuated:
                topic = f"/{rid}/{rid}_{joint}/cmd_pos"
                entries.append(
                    entry(topic, topic, "std_msgs/msg/Float64", "gz.msgs.Double", "ROS_TO_GZ")
                )
    entries += [
        entry(
            "/human_wrench",
            f"/world/{scenario.name}/wrench",
            "ros_gz_interfaces/msg/EntityWrench",
            "gz.msgs.EntityWrench",
            "ROS_TO_GZ",
        ),
        entry(
            "/ground_truth/payload_pose",
            "/model/payload/pose",
            "geometry_msgs/msg/PoseStamped",
            "gz.msgs.Pose",
            "GZ_TO_ROS",
        ),
    ]
    return entries


def _model_config(name: str, description: str) -> str:
    root = ET.Element("model")
    _text(root, "name", name)
    _text(root, "version", "1.0")
    _text(root, "sdf", "model.sdf", version=SDF_VERSION)
    _text(root, "description", description)
    ET.indent(root)
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def gazebo_assets(scenario: GroundTeamScenario) -> dict[str, str]:
    """Every asset file of a scenario: relative path -> text."""
    if any(np.abs(q).max() > 1e-12 for q in scenario.initial_joint_positions().values()):
        raise ScenarioError(
            f"{scenario.name}: Gazebo assets need every robot to start at zero joint positions "
            "(level grasp frames, no `home` in the scenario)"
        )
    model = scenario.compile()
    name = scenario.name
    files = {
        f"worlds/{name}.sdf": world_sdf(scenario),
        f"models/{name}_payload/model.sdf": payload_model(scenario, model),
        f"models/{name}_payload/model.config": _model_config(
            f"{name}_payload", f"The payload of scenario {name} (inertial from MuJoCo)."
        ),
        f"config/{name}_bridge.yaml": yaml.safe_dump(bridge_config(scenario), sort_keys=False),
    }
    for robot in scenario.robots:
        rid = robot.robot_id
        files[f"models/{name}_{rid}/model.sdf"] = robot_model(scenario, model, rid)
        files[f"models/{name}_{rid}/model.config"] = _model_config(
            f"{name}_{rid}", f"Robot {rid} ({robot.kind}) of scenario {name}."
        )
        files[f"urdf/{name}_{rid}.urdf"] = scenario.urdf(model, rid)  # robot_state_publisher
    return files


def write_gazebo_assets(scenario: GroundTeamScenario, folder: str | Path) -> list[Path]:
    """Write ``gazebo_assets`` under ``folder``; returns the written paths."""
    written = []
    for relative, text in gazebo_assets(scenario).items():
        path = Path(folder) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write_gazebo_assets(load_scenario(sys.argv[1]), sys.argv[2]):
        print(path)
