"""Simulation speed of the MuJoCo ground team as a real-time factor (simulated s / wall s).

    .venv/bin/python bench/bench_simulation.py

N = 3, 8, 16 Delta-gimbal robots (grasps on a circle) carry a 1.4 m box along a 10 s
multi-sine on a sphere about robot_1's wrist, all sensor models on, at 100, 500 and 1000 Hz
sensor rates (physics step 1 ms). Columns: the physics loop alone (MuJoCo stepping and
logging), and the whole run (plus per-sample Pinocchio kinematics for the true and the
measured grasp signals and the sensor models). A second table gives the rosbag2 writing
rate for the paper-000 preset's rate. Paper 000 reports no simulation, so there is no
number to compare with. Timings are wall-clock on a shared 2-core machine: noisy.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from inertia_estimation_ros.sim.scenario import load_scenario
from inertia_estimation_ros.sim.topics import message_count, write_simulation_bag

TEAM_SIZES = (3, 8, 16)
RATES_HZ = (100, 500, 1000)
DURATION = 10.0


def team(n: int, rate_hz: int) -> dict:
    angles = 2 * np.pi * np.arange(n) / n
    robots = [
        {
            "id": f"robot_{k + 1}",
            "grasp": {
                "xyz": [0.6 * np.cos(a), 0.6 * np.sin(a), 0.0],
                "rotvec_deg": [0.0, 0.0, float(np.rad2deg(a))],
            },
        }
        for k, a in enumerate(angles)
    ]
    return {
        "type": "ground_team",
        "name": f"bench_{n}_robots_{rate_hz}hz",
        "payload": {
            "initial_pose": {"xyz": [0.0, 0.0, 0.9]},
            "kind": "box",
            "size": [1.4, 1.4, 0.04],
            "density": 500.0,
            "pose": {"xyz": [0.05, -0.03, 0.04]},
        },
        "robot_defaults": {
            "kind": "delta_gimbal",
            "sensors": {
                "rate_hz": rate_hz,
                "encoder": {"linear_resolution": 1e-4, "angular_resolution_deg": 0.022},
                "wrench": {"source": "ft_sensor", "force_noise": 0.5, "torque_noise": 0.05},
                "imu": {"enabled": True, "gyro_noise": 0.002, "accel_noise": 0.02},
                "clock": {"offset": 0.001, "jitter": 0.0001},
                "dropout": 0.01,
            },
        },
        "robots": robots,
        "excitation": [
            {"program": "sphere", "locked_robot": "robot_1", "duration": DURATION, "ramp": 1.0}
        ],
    }


def real_time_factors(n: int, rate_hz: int) -> tuple[float, float, float]:
    scenario = load_scenario(team(n, rate_hz))
    result = scenario.run()
    return (
        result.duration,
        result.duration / result.physics_wall_time,
        (result.duration / result.wall_time),
    )


def bag_rate(storage: str) -> tuple[int, float]:
    scenario = load_scenario(
        Path(__file__).resolve().parents[1] / "config/scenarios/paper000_mocobots.yaml"
    )
    data = dict(scenario.config)
    data["excitation"] = [data["excitation"][0]]  # one 10 s guided trial
    result = load_scenario(data).run()
    folder = Path(tempfile.mkdtemp())
    try:
        started = time.perf_counter()
        write_simulation_bag(result, folder / "bag", storage)
        return message_count(result), time.perf_counter() - started
    finally:
        shutil.rmtree(folder)


def main() -> None:
    print("Real-time factor of the MuJoCo ground team (simulated s per wall s; higher is faster)")
    print(
        f"{'robots':>6} {'rate [Hz]':>9} {'sim [s]':>8} {'physics RTF':>12} {'whole-run RTF':>14}"
        f" {'paper 000':>10}"
    )
    for n in TEAM_SIZES:
        for rate in RATES_HZ:
            duration, physics, whole = real_time_factors(n, rate)
            print(f"{n:>6} {rate:>9} {duration:>8.1f} {physics:>12.1f} {whole:>14.1f} {'n/a':>10}")
    print()
    print("rosbag2 writing, paper-000 preset (3 robots, 100 Hz), one 10.5 s guided trial")
    print(f"{'storage':>8} {'messages':>9} {'wall [s]':>9} {'msg/s':>8}")
    for storage in ("mcap", "sqlite3"):
        count, wall = bag_rate(storage)
        print(f"{storage:>8} {count:>9} {wall:>9.2f} {count / wall:>8.0f}")


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/simulation.md

    with benchmark_page("simulation"):
        main()
