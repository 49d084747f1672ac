"""planner_node's CPU in admittance mode over DDS, alone (issue 14): the node as its own
process on the executor asked, fed by this process at 100 Hz as the loop of
``bench_collaboration.py --latency --replay`` feeds it (the reference robot's ``GraspState``
and a human ``ExternalWrench`` per instant, a ``PayloadEstimate`` every 0.5 s), the
admittance enabled by ``~/enable``. Prints, per executor: the node's CPU seconds per second
(/proc), references received per wrench sent, and the delay from publishing a wrench to
receiving the reference it caused (this process's monotonic clock; the reference's stamp
is the planner's ROS clock, so the delay is matched by order, p50 / p99).

``--executors floor``: in planner_node's place a node that does nothing but the same I/O
(the same subscriptions, QoS and two reference messages per wrench, the header copied; rclpy's
events executor): what rclpy, DDS and the interpreter cost at this load for this node.

Run: PYTHONPATH=$PWD .venv/bin/python bench/bench_planner_node.py [--executors events single
floor] [--seconds 10] [--timer] [--rr]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

RATE = 100.0  # [Hz]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(executor: str, seconds: float, timer: bool, rr: bool) -> str:
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from std_srvs.srv import SetBool

    from inertia_estimation_ros.msg import ExternalWrench, GraspState
    from inertia_estimation_ros.ros.conversions import to_pose, to_time, to_wrench
    from inertia_estimation_ros.ros.interface import LATCHED_QOS, RELIABLE_QOS, SENSOR_QOS
    from inertia_estimation_ros.ros.runtime import NodeGroup

    sys.path.insert(0, str(Path(__file__).parent))
    from bench_planner_tick import estimate_message

    if executor == "floor":
        command = [sys.executable, __file__, "--serve-floor"]
    else:
        command = [sys.executable, "-m", "inertia_estimation_ros.ros.nodes.planner_node"]
        command += ["--executor", executor, "--ros-args", "-r", "reference_grasp_state:=/pose"]
        command += ["-p", f"admittance_on_wrench:={'false' if timer else 'true'}"]
    if rr:
        command = ["chrt", "-r", "50", *command]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("feeder", context=context)
    sent, received = [], []
    node.create_subscription(
        PoseStamped,
        "/planner_node/reference/pose",
        lambda msg: received.append(time.monotonic()),
        RELIABLE_QOS,
    )
    poses = node.create_publisher(GraspState, "/pose", SENSOR_QOS)
    wrenches = node.create_publisher(ExternalWrench, "/external_wrench", RELIABLE_QOS)
    estimates = node.create_publisher(type(estimate_message()), "/payload_estimate", LATCHED_QOS)
    enable = node.create_client(SetBool, "/planner_node/enable")
    group = NodeGroup([node], context, "events").start()
    pose = GraspState(robot_id="robot_1", home_frame_id="world", has_pose=True)
    pose.header.frame_id, pose.pose = "robot_1/grasp", to_pose(np.eye(4))
    wrench = ExternalWrench(wrench=to_wrench(np.array([0, 0, 0.5, 12.0, 6.0, 0])))
    estimate = estimate_message()
    try:
        assert enable.wait_for_service(timeout_sec=60.0), "planner_node did not start"
        answer, k, start, cpu = None, 0, time.monotonic(), None
        while time.monotonic() - start < seconds + 3.0:
            now = time.time()
            if k % 50 == 0:
                estimates.publish(estimate)
            pose.header.stamp = wrench.header.stamp = to_time(now)
            poses.publish(pose)
            if cpu is not None:
                sent.append(time.monotonic())
            wrenches.publish(wrench)
            k += 1
            if answer is None and k > 20:
                answer = enable.call_async(SetBool.Request(data=True))
            if cpu is None and answer is not None and answer.done() and k > 300:
                cpu, first, received[:] = cpu_seconds(child.pid), time.monotonic(), []
            time.sleep(max(0.0, start + k / RATE - time.monotonic()))
        spent = cpu_seconds(child.pid) - cpu
        elapsed = time.monotonic() - first
    finally:
        child.terminate()
        try:
            child.wait(60)  # a loaded machine: a minute to shut down cleanly
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        group.stop()
    delays = _delays(sent, received)
    p50, p99 = np.percentile(delays, [50, 99]) if delays else (np.nan, np.nan)
    return (
        f"{executor}{' timer' if timer else ''}: planner_node {spent / elapsed:.3f} CPU s per s "
        f"({1e3 * spent / max(len(sent), 1):.2f} ms per wrench), {len(received)} references "
        f"for {len(sent)} wrenches, wrench -> reference p50 {p50:.2f} ms, p99 {p99:.2f} ms; "
        f"load {os.getloadavg()[0]:.1f}; {answer.result().message if answer.done() else ''}"
    )


def _delays(sent: list[float], received: list[float]) -> list[float]:
    """ms from each wrench to the first reference received after it (before the next)."""
    out, j = [], 0
    for k, t in enumerate(sent):
        following = sent[k + 1] if k + 1 < len(sent) else np.inf
        while j < len(received) and received[j] < t:
            j += 1
        if j < len(received) and received[j] < following:
            out.append(1e3 * (received[j] - t))
    return out


def serve_floor() -> int:
    """planner_node's I/O without its work (``--executors floor``)."""
    import rclpy
    from geometry_msgs.msg import PoseStamped, TwistStamped
    from std_srvs.srv import SetBool

    from inertia_estimation_ros.msg import ExternalWrench, GraspState, PayloadEstimate
    from inertia_estimation_ros.ros.interface import LATCHED_QOS, NEWEST_QOS, RELIABLE_QOS
    from inertia_estimation_ros.ros.runtime import NodeGroup, run_until_interrupted

    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("planner_node", context=context)
    pose, twist = PoseStamped(), TwistStamped()
    poses = node.create_publisher(PoseStamped, "~/reference/pose", RELIABLE_QOS)
    twists = node.create_publisher(TwistStamped, "~/reference/twist", RELIABLE_QOS)

    def on_wrench(msg: ExternalWrench) -> None:
        pose.header = twist.header = msg.header
        poses.publish(pose)
        twists.publish(twist)

    def enable(request: SetBool.Request, response: SetBool.Response) -> SetBool.Response:
        response.success, response.message = True, "floor: nothing to enable"
        return response

    node.create_subscription(ExternalWrench, "/external_wrench", on_wrench, RELIABLE_QOS)
    node.create_subscription(GraspState, "/pose", lambda msg: None, NEWEST_QOS)
    node.create_subscription(PayloadEstimate, "/payload_estimate", lambda msg: None, LATCHED_QOS)
    node.create_service(SetBool, "~/enable", enable)
    return run_until_interrupted(NodeGroup([node], context, "events").start())


def main() -> int:
    if "--serve-floor" in sys.argv:
        return serve_floor()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executors", nargs="+", default=["events", "single"])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--timer", action="store_true", help="admittance_on_wrench false")
    parser.add_argument("--rr", action="store_true", help="the planner at SCHED_RR 50")
    args = parser.parse_args()
    os.environ.setdefault("ROS_DOMAIN_ID", str(50 + os.getpid() % 50))
    for executor in args.executors:
        print(run(executor, args.seconds, args.timer, args.rr), flush=True)
    return 0


if __name__ == "__main__":
    from doc_page import benchmark_page  # the figures into docs/benchmarks/planner_node.md

    with benchmark_page("planner_node"):
        status = main()
    raise SystemExit(status)
