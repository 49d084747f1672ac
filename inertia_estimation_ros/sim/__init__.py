"""Simulation of robot teams carrying a payload; separate from the core and from ROS."""
