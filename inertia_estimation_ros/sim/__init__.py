"""Simulation of robot teams carrying a payload; separate from the core and from ROS.

* ``scenario``: YAML loading with validation, the registry of scenario types, and the
  result types (``SimulationResult``, ``RobotRecord``, ``GroundTruth``); ``run_scenario``;
* ``scenario_file``: a scenario's YAML (``include`` merged) and duration, without the numerics;
* ``ground_team``: N robots rigidly grasping one payload in MuJoCo (type ``ground_team``);
* ``payload``: payloads made of primitives; ``excitation``: how phases move the payload;
* ``sensors``: per-robot, independently seeded sensor models;
* ``ground_truth``: truth read from MuJoCo's compiled model; ``urdf``: each robot's URDF;
* ``topics``: a run as ROS 2 topics and its rosbag2 (the only ROS-facing module);
* ``gazebo``: SDF world, models and bridge YAML for gz sim;
* ``analytic``: exact analytic test data for the estimators (no physics engine).
"""
