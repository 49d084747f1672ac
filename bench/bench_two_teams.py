"""Two coordinators in one process (issue 17) on numpy 2 and on numpy 1.26, side by side.

The graph of ``test_namespaces.py`` (teams under /team_a and /team_b, each coordinator in a
context of its own, real rclpy over DDS) takes one pass of exact team data at its own pace
(``TeamPublisher(consumed=...)``, at most 0.5 s of stamps ahead), in a child process per run
of each venv that exists (``.venv``; ``.venv-compat``, ``make test-compat`` builds it), the
venvs alternating. Printed per run: instants per second per team, the process's CPU per
instant of both teams, the cores it got and the load average (the machine is shared), then
per venv how often numpy lets a waiting thread take the GIL during small array copies (a
helper thread counts its turns; Python's switch interval at 10 s, so that only a released
GIL gives it one).

    .venv/bin/python bench/bench_two_teams.py [--repeat 2] [--seconds 40] [--executor multi]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import scipy

ROOT = Path(__file__).resolve().parents[1]
# the source tree, the tests' graph helpers, bench/doc_page.py
sys.path[:0] = [str(ROOT), str(ROOT / "test"), str(ROOT / "bench")]

import conftest  # noqa: E402, F401 (claims a ROS domain id of its own, as the tests)
import test_namespaces as graph_test  # noqa: E402
from coordinator_graph import TeamPublisher, accepted_instants, start  # noqa: E402
from rclpy.node import Node  # noqa: E402

from inertia_estimation_ros.ros.bringup import start_graph  # noqa: E402
from inertia_estimation_ros.ros.graph import load_graph  # noqa: E402

TEAMS = {"/team_a": 1.0, "/team_b": 2.0}
COPIES = 100_000
VENVS = (".venv", ".venv-compat")


def graph_rate(seconds: float, executor: str) -> str:
    """One pass (or ``seconds``) of both teams through their coordinators."""
    config = graph_test.write(
        Path(tempfile.mkdtemp()),
        {
            "/coordinator_node": {
                "ros__parameters": {
                    "robots": list(graph_test.ROBOTS),
                    "reference_robot": "robot_1",
                    "estimate_period": 0.2,
                }
            }
        },
    )
    graph = load_graph(config)
    context = graph_test.own_context()
    groups = [start_graph(graph.under(t), graph_test.own_context(), executor) for t in TEAMS]
    node = Node("teams", context=context)
    spinner = start(context, node)
    streams = {team: graph_test.team_streams(scale) for team, scale in TEAMS.items()}
    publishers = [
        TeamPublisher(node, streams[t], prefix=t, consumed=accepted_instants(c, streams[t]))
        for t, (c,) in zip(TEAMS, [g.nodes for g in groups], strict=True)
    ]
    wall, cpu = time.monotonic(), time.process_time()
    for publisher in publishers:
        publisher.start()
    n = len(publishers[0].messages)
    while time.monotonic() - wall < seconds and any(p.published < n for p in publishers):
        time.sleep(0.2)
    wall, cpu = time.monotonic() - wall, time.process_time() - cpu
    sent = [p.published for p in publishers]
    for publisher in publishers:
        publisher.join()
    for group in groups:
        group.stop()
    spinner.stop()
    return (
        f"{executor} executor: {sent} of {n} instants in {wall:.1f} s, "
        f"{sum(sent) / len(sent) / wall:.1f} instants/s per team; CPU "
        f"{1e3 * cpu / max(sum(sent) / 2, 1):.2f} ms per instant of both teams, "
        f"{cpu / wall:.2f} cores; load {os.getloadavg()[0]:.1f}"
    )


def gil_turns() -> list[str]:
    """Turns a waiting thread gets during COPIES small copies (0: numpy keeps the GIL)."""
    turns, stop = [0], threading.Event()

    def helper() -> None:
        while not stop.is_set():
            turns[0] += 1
            time.sleep(0)  # releases the GIL, then waits for it

    R, T, x = np.eye(3), np.eye(4), np.arange(3.0)
    copies = {
        "T[:3, :3] = R": lambda: T.__setitem__((slice(0, 3), slice(0, 3)), R),
        "np.concatenate of two 3-vectors": lambda: np.concatenate([x, x]),
        "a 3-vector's copy()": x.copy,
    }
    interval = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    threading.Thread(target=helper, daemon=True).start()
    time.sleep(0.1)
    lines = []
    for name, copy in copies.items():
        before = turns[0]
        for _ in range(COPIES):
            copy()
        lines.append(f"  {name}: {turns[0] - before} turns in {COPIES} calls")
    stop.set()
    sys.setswitchinterval(interval)
    return lines


def child(seconds: float, executor: str) -> None:
    """One run in this venv: its versions, the graph's rate, the GIL turns."""
    print(f"numpy {np.__version__}, scipy {scipy.__version__}")
    print(graph_rate(seconds, executor))
    print("\n".join(gil_turns()))
    sys.stdout.flush()
    os._exit(0)  # rclpy's and FastDDS's threads need not be joined


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=2, help="runs per venv, alternating")
    parser.add_argument("--seconds", type=float, default=40.0, help="at most this long a run")
    parser.add_argument("--executor", choices=("multi", "single"), default="multi")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.seconds, args.executor)
    venvs = [v for v in VENVS if (ROOT / v / "bin" / "python").exists()]
    from doc_page import benchmark_page  # the runs into docs/benchmarks/two_teams.md

    with benchmark_page("two_teams"):
        turns = {}
        for k in range(args.repeat):
            for venv in venvs:
                command = [str(ROOT / venv / "bin" / "python"), __file__, "--child"]
                command += ["--seconds", str(args.seconds), "--executor", args.executor]
                out = subprocess.run(command, capture_output=True, text=True, check=True)
                versions, rate, *turns[venv] = out.stdout.strip().splitlines()[-5:]
                print(f"run {k + 1}, {venv} ({versions}): {rate}", flush=True)
        print("GIL turns of a waiting thread during small copies:")
        for venv, lines in turns.items():
            print(f"{venv}:\n" + "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
