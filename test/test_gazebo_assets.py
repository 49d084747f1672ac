"""Gazebo assets, checked statically (gz sim cannot run here): they parse, are current, and
carry the scenario's inertial values, grasp poses, sensors and topics."""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.sim.gazebo import gazebo_assets
from inertia_estimation_ros.sim.scenario import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[1]
GAZEBO = ROOT / "gazebo"
PRESET = ROOT / "config" / "scenarios" / "paper000_mocobots.yaml"
NAME = "paper000_mocobots"


def pose(text: str) -> np.ndarray:
    """4x4 of an SDF ``x y z roll pitch yaw`` (fixed axes)."""
    values = [float(v) for v in text.split()]
    T = np.eye(4)
    T[:3, :3] = Rotation.from_euler("xyz", values[3:]).as_matrix()
    T[:3, 3] = values[:3]
    return T


def yaml_pose(entry: dict) -> np.ndarray:
    """4x4 of a scenario's ``{xyz, rotvec_deg}``, computed here independently of the package."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec(np.deg2rad(entry.get("rotvec_deg", [0, 0, 0]))).as_matrix()
    T[:3, 3] = entry.get("xyz", [0, 0, 0])
    return T


def sdf(relative: str) -> ET.Element:
    root = ET.parse(GAZEBO / relative).getroot()
    assert root.tag == "sdf" and root.get("version") == "1.9"
    return root


@pytest.fixture(scope="module")
def preset() -> dict:
    return yaml.safe_load(PRESET.read_text())


def test_shipped_assets_are_current():
    """The files under gazebo/ are exactly what the generator makes of the preset."""
    for relative, text in gazebo_assets(load_scenario(PRESET)).items():
        path = GAZEBO / relative
        assert path.exists(), f"{path} missing: python -m inertia_estimation_ros.sim.gazebo"
        assert path.read_text() == text, f"{path} is stale: regenerate it"


def test_payload_link_has_table_one_inertia_and_the_grasp_frames(preset):
    model = sdf(f"models/{NAME}_payload/model.sdf").find("model")
    inertial = model.find("link[@name='payload']/inertial")
    inertia = inertial.find("inertia")
    moments = np.diag([float(inertia.findtext(k)) for k in ("ixx", "iyy", "izz")])
    assert all(float(inertia.findtext(k)) == 0 for k in ("ixy", "ixz", "iyz"))
    T_P_c = pose(inertial.findtext("pose"))
    params = InertialParameters.from_mass_com_inertia(
        float(inertial.findtext("mass")), T_P_c[:3, 3], T_P_c[:3, :3] @ moments @ T_P_c[:3, :3].T
    )
    # Table I of paper 000, in {1} = {P}.
    assert params.mass == pytest.approx(11.412, rel=1e-6)
    np.testing.assert_allclose(params.com, [0.553, 0.172, 0.072], atol=1e-9)
    principal, _ = params.principal_axes()
    np.testing.assert_allclose(principal, [2.258, 3.448, 5.698], rtol=1e-6)
    frames = {f.get("name"): pose(f.findtext("pose")) for f in model.findall("frame")}
    for robot in preset["robots"]:
        np.testing.assert_allclose(
            frames[f"{robot['id']}_grasp"], yaml_pose(robot["grasp"]), atol=1e-9
        )
        assert model.find(f"frame[@name='{robot['id']}_grasp']").get("attached_to") == "payload"


def test_robots_start_where_their_grasps_are_and_weld_to_the_payload(preset):
    world = sdf(f"worlds/{NAME}.sdf").find("world")
    includes = {i.findtext("name"): i for i in world.findall("include")}
    T_w_P = pose(includes["payload"].findtext("pose"))
    np.testing.assert_allclose(T_w_P, yaml_pose(preset["payload"]["initial_pose"]), atol=1e-9)
    assert float(world.findtext("physics/max_step_size")) == preset["physics"]["timestep"]
    for robot in preset["robots"]:
        rid = robot["id"]
        include = includes[rid]
        assert include.findtext("uri") == f"model://{NAME}_{rid}"
        model = sdf(f"models/{NAME}_{rid}/model.sdf").find("model")
        flange = pose(model.findtext("link[@name='flange']/pose"))
        T_w_flange = pose(include.findtext("pose")) @ flange
        np.testing.assert_allclose(T_w_flange, T_w_P @ yaml_pose(robot["grasp"]), atol=1e-9)
        joints = [j.get("name") for j in model.findall("joint")]
        assert joints == [
            "world_fixed",
            *(f"{rid}_{j}" for j in ("x", "y", "z")),
            *(f"{rid}_{j}" for j in ("roll", "pitch", "yaw")),
            f"{rid}_ft",
        ]
        detach = model.find("plugin[@name='gz::sim::systems::DetachableJoint']")
        assert detach.findtext("parent_link") == "flange"
        assert detach.findtext("child_model") == "payload"
        gimbal = model.find(f"joint[@name='{rid}_pitch']/axis/dynamics/damping")
        assert float(gimbal.text) == preset["robot_defaults"]["wrist_damping"]


def test_ft_sensor_plugin_setup_measures_the_payload_on_the_robot():
    world = sdf(f"worlds/{NAME}.sdf").find("world")
    systems = {p.get("name") for p in world.findall("plugin")}
    assert {"gz::sim::systems::ForceTorque", "gz::sim::systems::Physics"} <= systems
    for rid in ("robot_1", "robot_2", "robot_3"):
        model = sdf(f"models/{NAME}_{rid}/model.sdf").find("model")
        joint = model.find(f"joint[@name='{rid}_ft']")
        assert joint.get("type") == "fixed" and joint.findtext("child") == "flange"
        sensor = joint.find("sensor")
        assert sensor.get("type") == "force_torque"
        assert sensor.findtext("topic") == f"/{rid}/ft_sensor"
        assert sensor.findtext("force_torque/measure_direction") == "child_to_parent"
        assert sensor.findtext("force_torque/frame") == "sensor"
        assert float(sensor.findtext("update_rate")) == 100


def test_bridge_maps_gazebo_to_the_topics_the_robot_nodes_read():
    entries = yaml.safe_load((GAZEBO / "config" / f"{NAME}_bridge.yaml").read_text())
    pairs = {
        ("rosgraph_msgs/msg/Clock", "gz.msgs.Clock"),
        ("sensor_msgs/msg/JointState", "gz.msgs.Model"),
        ("geometry_msgs/msg/WrenchStamped", "gz.msgs.Wrench"),
        ("sensor_msgs/msg/Imu", "gz.msgs.IMU"),
        ("std_msgs/msg/Float64", "gz.msgs.Double"),
        ("ros_gz_interfaces/msg/EntityWrench", "gz.msgs.EntityWrench"),
        ("geometry_msgs/msg/PoseStamped", "gz.msgs.Pose"),
    }
    keys = {"ros_topic_name", "gz_topic_name", "ros_type_name", "gz_type_name", "direction"}
    for entry in entries:
        assert set(entry) == keys
        assert (entry["ros_type_name"], entry["gz_type_name"]) in pairs
        assert entry["direction"] in ("GZ_TO_ROS", "ROS_TO_GZ")
    to_ros = {
        e["ros_topic_name"]: e["ros_type_name"] for e in entries if e["direction"] == "GZ_TO_ROS"
    }
    for rid in ("robot_1", "robot_2", "robot_3"):
        assert to_ros[f"/{rid}/joint_states"] == "sensor_msgs/msg/JointState"
        assert to_ros[f"/{rid}/ft_sensor"] == "geometry_msgs/msg/WrenchStamped"
        model = sdf(f"models/{NAME}_{rid}/model.sdf").find("model")
        commands = {
            p.findtext("topic") for p in model.findall("plugin") if p.findtext("joint_name")
        }
        assert commands == {f"/{rid}/{rid}_{j}/cmd_pos" for j in "xyz"}
        assert commands <= {e["gz_topic_name"] for e in entries if e["direction"] == "ROS_TO_GZ"}
    assert to_ros["/clock"] == "rosgraph_msgs/msg/Clock"


def test_launch_file_uses_the_shipped_assets_and_they_are_installed():
    tree = ast.parse((ROOT / "launch" / "gazebo_estimation.launch.py").read_text())
    functions = {f.name for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert "generate_launch_description" in functions
    strings = {
        n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }
    assert {"worlds", "config", "models", "ros_gz_bridge", "parameter_bridge", NAME} <= strings
    assert "install(DIRECTORY launch config rviz gazebo" in (ROOT / "CMakeLists.txt").read_text()
    assert '"gazebo")' in (ROOT / "setup.py").read_text()


def test_assets_need_robots_that_start_at_zero_joints():
    with pytest.raises(ScenarioError, match="start at zero joint positions"):
        gazebo_assets(load_scenario(ROOT / "config" / "scenarios" / "test_two_wrists.yaml"))
