"""Benchmark of human collaboration with the estimated model (issue 14), in MuJoCo without ROS.

The person's effort (``sim.collaboration``: a spring-damper pulling a handle along a path of
(0.3, 0.1) m and 15 deg of yaw in 2.5 s, then a hold) to move the 32 kg payload of the
three-gimbal test scenario, with (a) the true model, (b) a model 20 % wrong in mass and CoM,
(c) no gravity compensation (a model without weight), (d) the estimator's model: the project's
offline estimator (``estimate_offline``) on the scenario's own estimation phases (guided motion,
static holds, spheres; its sensors' noise), its theta and grasp frames feeding the human-wrench
estimate, the admittance and the robots' commands.
Columns: RMS force and moment the person applies, the path tracking error (handle to target:
RMS and final), and the RMS error of the estimated human wrench. Issue targets: (a) within
10 % of the true model's effort ((d) against (a)), at least 3x less than (b).

``--aerial``: the same for paper 002's aerial team (``sim.aerial.collaboration``): a person
pulls the 0.278 kg payload's handle (robot 2's attach point) along (0.3, 0.15, 0.05) m and
15 deg of yaw in 3 s, holds it 1 s and lets go; the cable UKFs' human wrench (eq. 38) feeds the
admittance, the payload controller (eqs. 10-12) tracks its reference. Models: (a) the true
payload, (b) mass +20 % and CoM 6 cm off (20 % of the attach points' radius; the true CoM is
at the payload frame's origin), (d) the in-flight identification of ``bench_aerial_estimation``
(a 12-s waypoint flight, a description 20 % light); each sets the human-wrench estimate, the
admittance's virtual mass and inertia and the payload controller's mass and inertia. No (c):
without weight compensation an aerial team does not lift the payload. Columns as above (effort
and path while the person holds), and how far the payload moves once the person lets go.

Latency (``--latency``): from a wrench sample to the robots' commands through the nodes over
DDS, each node its own process (``latency``), p50 and p99; issue target p99 under 20 ms.
``--timer`` sends the planner's reference on its control timer only (as before
``admittance_on_wrench``), for an A/B. ``--floor``: the same loop of processes, topics, QoS and
executors with nodes that do no work (``echo_chain.py``), what DDS, rclpy and Python cost at
the machine's load (``--single``: every echo node on the single-threaded executor; ``--rr``:
every process of the loop at SCHED_RR priority, as a real-time loop is deployed on Linux).
``--executor EXECUTABLE=KIND`` (repeatable): that node's executor, in the real loop (the node's
``--executor`` option) or in the echo node in its place. Each run takes a ROS domain of its own
unless ROS_DOMAIN_ID is set. The floor per hop count: ``echo_chain.py --table``.

``--latency --replay``: what a deployment would see, the robots' data from drivers instead of
a MuJoCo simulation on the same cores: the scenario's raw driver topics with the person
pulling are simulated ahead of time (cached under build/bench/), then played in real time
at 100 Hz, restamped on the system clock (``robot_replay.py``), through the robot nodes,
the coordinator and the planner, each its own process on the system clock. The same
measures, plus from the driver's sample stamp, per hop, and each process's CPU seconds per
second of the collaborate phase. ``--rr``: every process at SCHED_RR; ``--rr-estimation``:
SCHED_RR until the admittance starts, normal priority after. ``--trace``: every process of the
loop also times its publishes and callbacks on the wall clock (``loop_trace/``), and the
segments of each sample's way (delivery and wake-up, each node's work) are printed from the
nodes' own times, without this process's; with what the slowest 2 % of the chains spent in
each, the coordinator's worker operations and garbage collections, and which of them
overlapped its slow receipts of the robots' samples.

Run: .venv/bin/python bench/bench_collaboration.py [--aerial | --latency [--timer] [--replay
[--rr | --rr-estimation] [--trace]] | --floor [--single] [--rr]] [--executor EXECUTABLE=KIND ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inertia_estimation_ros.core.collaboration.human_wrench import PayloadModel
from inertia_estimation_ros.core.cooperative import EstimatorSettings, Recording, estimate_offline
from inertia_estimation_ros.sim.collaboration import moving_person, run_collaboration
from inertia_estimation_ros.sim.ground_truth import body_inertial_parameters
from inertia_estimation_ros.sim.scenario import load_scenario, run_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "config/scenarios/test_three_gimbals.yaml"
HANDLE_P = np.array([0.45, 0.0, 0.02])
ADMITTANCE = dict(force_dead_band=2.0, moment_dead_band=0.5, fraction=0.5, time_constant=0.5)
SECONDS = 4.0


def theta_errors(scenario) -> dict[str, np.ndarray | None]:
    """theta errors in {s}: none; mass and CoM 20 % off; no weight (mass ~ 0)."""
    stepper_model = scenario.compile()
    ref = next(r for r in scenario.robots if r.robot_id == scenario.reference_robot)
    payload_s = body_inertial_parameters(stepper_model, "payload").transformed(
        np.linalg.inv(ref.T_P_i)
    )
    theta = payload_s.vec
    wrong = theta.copy()
    wrong[0] *= 1.2
    wrong[1:4] *= 1.2 * 1.2  # h = m c with both m and c 20 % larger
    weightless = theta * 1e-4
    return {
        "(a) true model": None,
        "(b) mass and CoM +20 %": wrong - theta,
        "(c) no gravity compensation": weightless - theta,
    }


def estimated_model(scenario) -> PayloadModel:
    """The offline estimator's model from the scenario's estimation phases (module docstring)."""
    run = run_scenario(SCENARIO)
    recordings = [Recording(s, "moving") for s in run.segments("human_guided")]
    recordings += [Recording(s, "static") for s in run.segments("static")]
    recordings += [Recording(s, "moving") for s in run.segments("sphere")]
    rate = max(r.sensors.rate_hz for r in scenario.robots)
    estimate = estimate_offline(recordings, scenario.reference_robot, EstimatorSettings(rate))
    truth = run.ground_truth.payload
    print(
        f"estimate: mass {estimate.theta[0]:.3f} kg (true {truth.mass:.3f}), CoM error "
        f"{np.linalg.norm(estimate.theta[1:4] / estimate.theta[0] - truth.com) * 1e3:.2f} mm, "
        f"valid {estimate.mass_valid and estimate.com_valid and estimate.inertia_valid}\n"
    )
    return PayloadModel.from_estimate(estimate)


def main() -> int:
    scenario = load_scenario(SCENARIO)
    models = {name: {"theta_error": error} for name, error in theta_errors(scenario).items()}
    models["(d) estimated model"] = {"estimate": estimated_model(scenario)}
    print(
        f"{'model':32s} {'RMS force':>10s} {'RMS moment':>11s} {'path RMS':>9s} "
        f"{'final':>7s} {'wrench err':>11s} {'wall':>6s}"
    )
    efforts = {}
    for name, model in models.items():
        started = time.perf_counter()
        run = run_collaboration(
            scenario, moving_person(scenario.T_w_P0, HANDLE_P), SECONDS, **model, **ADMITTANCE
        )
        wall = time.perf_counter() - started
        force = np.sqrt(np.mean(np.sum(run.force[:, 3:] ** 2, axis=1)))
        moment = np.sqrt(np.mean(np.sum(run.force[:, :3] ** 2, axis=1)))
        distance = np.linalg.norm(run.handle - run.target, axis=1)
        est = np.linalg.norm(run.estimate[:, 3:], axis=1) - np.linalg.norm(run.force[:, 3:], axis=1)
        efforts[name] = force
        print(
            f"{name:32s} {force:8.2f} N {moment:7.2f} N m {np.sqrt(np.mean(distance**2)):7.3f} m "
            f"{distance[-1]:5.3f} m {np.sqrt(np.mean(est**2)):8.2f} N {wall:5.1f} s"
        )
    print_ratios(
        *(efforts[k] for k in ("(a) true model", "(b) mass and CoM +20 %")),
        efforts["(d) estimated model"],
    )
    return 0


def print_ratios(a: float, b: float, d: float) -> None:
    """The issue's effort targets: the wrong model's (b) and the estimate's (d) against (a)."""
    print(f"\n(b) / (a) effort: {b / a:.1f}x (target >= 3x)")
    print(f"(d) / (a) effort: {d / a:.3f} (target within 10 %: 0.9 to 1.1)")


AERIAL = {"type": "aerial_cable_team", "name": "collaboration", "seed": 1, "duration": 30.0}
AERIAL_HANDLE_L = np.array([0.3083, 0.0, 0.01125])  # robot 2's attach point
AERIAL_WARM_UP, AERIAL_RELEASE, AERIAL_SECONDS = 1.0, 4.0, 5.0  # [s]


def aerial() -> int:
    """The aerial team's columns (module docstring, ``--aerial``)."""
    from bench_aerial_estimation import identified_payload

    from inertia_estimation_ros.core import spatial as sp
    from inertia_estimation_ros.core.inertial import InertialParameters
    from inertia_estimation_ros.sim.aerial.collaboration import run_aerial_collaboration
    from inertia_estimation_ros.sim.aerial.human import AERIAL_ARM
    from inertia_estimation_ros.sim.person import path_person

    scenario = load_scenario(AERIAL)
    payload = scenario.settings.payload
    radius = float(np.linalg.norm(payload.attach[:, :2], axis=1).mean())
    wrong = InertialParameters.from_mass_com_inertia(
        1.2 * payload.mass, np.array([0.2 * radius, 0.0, 0.0]), 1.2 * np.diag(payload.inertia)
    )
    models = {
        "(a) true model": None,
        "(b) mass +20 %, CoM 6 cm off": wrong,
        "(d) identified in flight": identified_payload(quick=False),
    }
    T_w_L0 = sp.transform(np.eye(3), scenario.settings.start)
    print(
        f"{'model':30s} {'RMS force':>10s} {'RMS moment':>12s} {'path RMS':>9s} "
        f"{'release':>8s} {'after':>7s} {'yaw':>6s} {'wrench err':>11s} {'wall':>6s}"
    )
    efforts = {}
    for name, model in models.items():
        person = path_person(
            T_w_L0, AERIAL_HANDLE_L, (0.3, 0.15, 0.05), 15.0, 3.0, AERIAL_WARM_UP, **AERIAL_ARM
        )
        started = time.perf_counter()
        run = run_aerial_collaboration(
            scenario,
            person,
            AERIAL_SECONDS,
            model,
            warm_up=AERIAL_WARM_UP,
            release=AERIAL_RELEASE,
        )
        wall = time.perf_counter() - started
        held = run.t < AERIAL_RELEASE - 1e-9
        k = int(np.count_nonzero(held)) - 1
        force = np.sqrt(np.mean(np.sum(run.force[held, :3] ** 2, axis=1)))
        moment = np.sqrt(np.mean(np.sum(run.force[held, 3:] ** 2, axis=1)))
        path = run.path_error[held]
        error = np.linalg.norm(run.estimate[held, :3] - run.force[held, :3], axis=1)
        after = np.linalg.norm(run.payload_x[-1] - run.payload_x[k])
        efforts[name] = force
        print(
            f"{name:30s} {force:8.3f} N {moment:8.4f} N m {np.sqrt(np.mean(path**2)):7.3f} m "
            f"{path[-1]:6.3f} m {after:5.3f} m {np.rad2deg(run.yaw[k]):4.1f}° "
            f"{np.sqrt(np.mean(error**2)):8.3f} N {wall:5.1f} s"
        )
    print_ratios(*efforts.values())
    return 0


def print_latency(what: str, seconds: list[float], target: float | None = None) -> None:
    """p50, p99 and max of ``seconds`` in ms, with the issue's target if any."""
    if not seconds:
        print(f"{what}: no samples")
        return
    ms = 1e3 * np.asarray(seconds)
    p50, p99 = np.percentile(ms, [50, 99])
    goal = f" (target p99 < {target:g} ms)" if target else ""
    print(
        f"{what} ({len(ms)} samples at 100 Hz): p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
        f"max {ms.max():.1f} ms{goal}"
    )


# ----- latency over DDS ------------------------------------------------------------------------
LATENCY_SCENARIO = "test_collaborate.yaml"  # estimation phases, then the person's pull
# [s] the coordinator's executor thread lags 1-2 s behind while the estimation's solves share
# the interpreter with it (GIL, 20-ms switch interval); once frozen it catches up in ~2.5 s
BACKLOG = 3.0
ROBOTS = ("robot_1", "robot_2", "robot_3")


def own_domain() -> None:
    """A ROS domain of this run's own (unless ROS_DOMAIN_ID is set), on this machine only:
    another graph on the same domain (a test, a demo) would mix its samples into ours
    (stamps out of order, refused estimates). 102-201, outside the tests' 1-101."""
    import os

    os.environ.setdefault("ROS_DOMAIN_ID", str(102 + os.getpid() % 100))
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")


def chosen_executors() -> dict[str, str]:
    """``--executor EXECUTABLE=KIND`` (repeatable, e.g. ``robot_node=events``): the rclpy
    executor (a key of ``runtime.EXECUTORS``) that executable's processes spin on."""
    pairs = [sys.argv[i + 1] for i, arg in enumerate(sys.argv[:-1]) if arg == "--executor"]
    return dict(pair.split("=", 1) for pair in pairs)


def with_executors(command: list[str], executable: str, executors: dict[str, str]) -> list[str]:
    """``command`` (``python -m module --ros-args ...``) with ``--executor KIND`` if
    ``executors`` names ``executable``."""
    kind = executors.get(executable)
    return command if kind is None else [*command[:3], "--executor", kind, *command[3:]]


def latency_graph(folder: Path) -> Path:
    """config/sim_collaborate.yaml on the short test scenario (100 Hz samples)."""
    import yaml

    root = Path(__file__).resolve().parents[1]
    data = yaml.safe_load((root / "config" / "sim_collaborate.yaml").read_text())
    data["/sim_node"]["ros__parameters"].update(scenario=LATENCY_SCENARIO, diagnostics_period=0.1)
    # the wrench keeps its samples' stamp: the hops are matched by stamp
    data["/coordinator_node"]["ros__parameters"]["external_wrench_delay"] = 0.0
    if "--timer" in sys.argv:  # the reference on the planner's control timer only
        data["/planner_node"]["ros__parameters"]["admittance_on_wrench"] = False
    path = folder / "graph.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def stamp_reader(kind: type) -> object:
    """``serialized``'s reader of the stamped messages of type ``kind`` (GraspState,
    ExternalWrench or PoseStamped)."""
    from geometry_msgs.msg import PoseStamped

    from inertia_estimation_ros.msg import ExternalWrench, GraspState
    from inertia_estimation_ros.ros import serialized

    readers = {
        GraspState: serialized.grasp_state_reader,
        ExternalWrench: serialized.external_wrench_reader,
        PoseStamped: serialized.pose_stamped_reader,
    }
    return readers[kind]()


class Arrivals:
    """Wall times (``time.time``) at which this process saw the loop's messages: the reference
    robot's sample and the wrench by stamp (the first copy), the planner's references (if
    given) and each robot's commands in order. This process sees the topics as the nodes do.
    It takes them as serialized bytes and reads only the stamps (``serialized``'s readers):
    the observer runs on the loop's cores at the loop's priority, and with rclpy's message
    objects (and /proc read every 50 ms, ``replay``) it took a third of a core at 100 Hz,
    more than any node but the coordinator (now 0.10-0.12)."""

    def __init__(self, node: object, topics: dict[str, tuple[type, str]]) -> None:
        """``topics``: "sample", "wrench", optionally "reference", and each robot's id ->
        (message type, topic)."""
        from inertia_estimation_ros.ros.interface import RELIABLE_QOS, SENSOR_QOS

        self.sample: dict[float, float] = {}
        self.wrench: dict[float, float] = {}
        self.reference: list[float] = []
        self.commands: dict[str, list[float]] = {}
        self.first_stamp = self.last_stamp = None  # of the samples [s]
        now = time.time
        for what, (kind, topic) in topics.items():
            if what in ("sample", "wrench"):
                callback = self._stamped(kind, getattr(self, what), what == "sample")
            else:
                arrivals = self.reference if what == "reference" else []
                if what != "reference":
                    self.commands[what] = arrivals
                callback = lambda raw, a=arrivals: a.append(now())  # noqa: E731
            qos = SENSOR_QOS if what == "sample" else RELIABLE_QOS
            node.create_subscription(kind, topic, callback, qos, raw=True)

    def _stamped(
        self, kind: type, first: dict[float, float], sample: bool
    ) -> Callable[[bytes], None]:
        """A raw callback keeping the first arrival of each stamp in ``first``; ``sample``:
        also the first and last stamps."""
        reader = stamp_reader(kind)
        now = time.time

        def callback(raw: bytes) -> None:
            arrived = now()
            stamp = reader.read(raw).stamp
            first.setdefault(stamp, arrived)
            if sample:
                self.first_stamp = stamp if self.first_stamp is None else self.first_stamp
                self.last_stamp = stamp

        return callback

    def span(self) -> float:
        """Seconds of sample time seen so far (0 before two samples)."""
        return 0.0 if self.first_stamp is None else self.last_stamp - self.first_stamp

    def _after(self, when: float) -> float | None:
        """When every robot's first command after ``when`` arrived (None: not every one)."""
        followed = [a[np.searchsorted(a, when)] for a in self.commands.values() if a[-1] > when]
        return max(followed) if len(followed) == len(self.commands) else None

    def report(self, skip: float = 0.0, wall_stamps: bool = False) -> int:
        """p50/p99 of sample -> wrench and sample -> every robot's next command, for the
        samples whose wrench arrived once every robot's commands flowed (and ``skip`` s
        after): before, a robot whose command publisher this process discovered late would
        count its discovery as delay. ``wall_stamps``: the samples are stamped on this
        machine's clock (``--replay``), so also from the stamp itself, and per hop."""
        if not self.commands or not all(self.commands.values()):
            print("no commands arrived")
            return 1
        first_command = max(a[0] for a in self.commands.values())
        delays, coordinator, settled, stamped = [], [], [], []
        for stamp, produced in self.sample.items():
            wrench = self.wrench.get(stamp)
            if wrench is None or wrench < first_command:
                continue
            coordinator.append(wrench - produced)
            if produced > first_command + skip:
                settled.append(wrench - produced)
            followed = self._after(wrench)
            if followed is not None:
                delays.append(followed - produced)
                stamped.append(followed - stamp)
        print_latency("wrench sample -> /external_wrench (the coordinator)", coordinator)
        if skip:
            print_latency(
                f"the same, samples from {skip:g} s after the admittance's start (the backlog "
                "of the estimation's solves cleared)",
                settled,
            )
        print_latency("wrench sample -> every robot's command over DDS", delays, target=20.0)
        if wall_stamps:
            print_latency(
                "the driver's sample stamp (joint states, before the robot node) -> every "
                "robot's command",
                stamped,
                target=20.0,
            )
            self.hops(first_command)
        admitted = [s for s in self.wrench if self.wrench[s] >= first_command]
        span = max(admitted) - min(admitted) if len(admitted) > 1 else np.nan
        print(
            f"wrenches after every robot's first command: {len(admitted)} in {span:.2f} s of "
            f"sample time, {len(admitted) / span:.1f} per second (the robots sample at 100 Hz)"
        )
        return 0

    def hops(self, first_command: float) -> None:
        """Per hop, as this process sees the topics: robot_1's sample -> the wrench, the
        wrench -> the planner's next reference, that reference -> every robot's next command."""
        reference = np.asarray(self.reference)
        hops: dict[str, list[float]] = {"sample": [], "planner": [], "robots": []}
        for stamp, produced in self.sample.items():
            wrench = self.wrench.get(stamp)
            if wrench is None or wrench < first_command or not len(reference):
                continue
            k = np.searchsorted(reference, wrench)
            followed = self._after(reference[k]) if k < len(reference) else None
            if followed is not None:
                hops["sample"].append(wrench - produced)
                hops["planner"].append(reference[k] - wrench)
                hops["robots"].append(followed - reference[k])
        print_latency("  hop: robot_1's grasp_state -> /external_wrench", hops["sample"])
        print_latency(
            "  hop: /external_wrench -> the planner's next ~/reference/pose", hops["planner"]
        )
        print_latency("  hop: that reference -> every robot's next command", hops["robots"])


def start_graph(
    graph: Path, log: Path, executors: dict[str, str], prefix: list[str] = ()
) -> dict[str, object]:
    """Every node of ``graph`` as its own process (``demo.start_children``), each on the
    executor ``executors`` names for its executable, behind ``prefix`` (e.g. ``chrt``)."""
    from inertia_estimation_ros.commands.demo import start_children
    from inertia_estimation_ros.ros import bringup

    node_command = bringup.node_command  # start_children's, with the chosen executors
    bringup.node_command = lambda spec, *args: [
        *prefix,
        *with_executors(node_command(spec, *args), spec.executable, executors),
    ]
    try:
        return start_children(graph, log)
    finally:
        bringup.node_command = node_command


def latency() -> int:
    """Wrench sample -> robots' commands through the nodes, each node its own process, at
    100 Hz: for every sample of the reference robot (``/robot_1/grasp_state``, as it leaves
    its robot node) that the coordinator turned into ``/external_wrench`` while the admittance
    ran, the wall time until every robot's next ``~/command/pose`` arrived. The planner
    publishes the reference as each wrench arrives (``admittance_on_wrench``), its control
    timer only when wrenches pause."""
    import tempfile

    from inertia_estimation_ros.commands.demo import stop_children

    folder = Path(tempfile.mkdtemp(prefix="bench_collaboration_"))
    monitor, arrivals, group = loop_monitor()
    children = start_graph(latency_graph(folder), folder / "graph.log", chosen_executors())
    enabled = None
    try:
        deadline = time.monotonic() + 300
        while children["/sim_node"].poll() is None and time.monotonic() < deadline:
            if enabled is None and "collaborate" in monitor.phase:
                enabled = monitor.enable_admittance(timeout=10.0)
                print(f"/planner_node/enable: {enabled.message if enabled else 'no answer'}")
            time.sleep(0.05)
    finally:
        stop_children(children)
        group.stop()
    status = arrivals.report(skip=BACKLOG)
    if status:
        print(f"(see {folder / 'graph.log'})")
    return status


def loop_monitor(executor: str = "single") -> tuple[object, Arrivals, object]:
    """This process's node on its own ROS domain, seeing the loop's topics (``Arrivals``),
    spinning on ``executor``: (monitor, arrivals, its ``NodeGroup``)."""
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.context import Context

    from inertia_estimation_ros.msg import ExternalWrench, GraspState
    from inertia_estimation_ros.ros.demo_monitor import DemoMonitor
    from inertia_estimation_ros.ros.runtime import NodeGroup

    own_domain()
    context = Context()
    rclpy.init(context=context)
    monitor = DemoMonitor(context=context)
    topics = {"sample": (GraspState, "/robot_1/grasp_state")}
    topics["wrench"] = (ExternalWrench, "/external_wrench")
    topics["reference"] = (PoseStamped, "/planner_node/reference/pose")
    for rid in ROBOTS:
        topics[rid] = (PoseStamped, f"/{rid}/robot_node/command/pose")
    arrivals = Arrivals(monitor, topics)
    return monitor, arrivals, NodeGroup([monitor], context, executor).start()


# ----- latency with the robots' data replayed (--replay) ----------------------------------------
# [s] without a new sample: the drivers are done (robot_replay.py waits 0.5 s before it ends)
DRIVERS_DONE = 0.25
REPLAY_CACHE = Path(__file__).resolve().parents[1] / "build" / "bench" / "collaboration_replay"


def replay_inputs() -> tuple[Path, float]:
    """The robots' driver topics of ``LATENCY_SCENARIO`` with the person pulling, simulated
    ahead of time (MuJoCo without ROS; in the ``collaborate`` phase the robots hold the
    payload against the person, as nothing commands them), cached under build/: (the bag,
    seconds from its first message to the ``collaborate`` phase)."""
    import shutil

    import yaml

    from inertia_estimation_ros.data import SCENARIOS, data_file
    from inertia_estimation_ros.sim.topics import write_simulation_bag

    phases = REPLAY_CACHE / "phases.yaml"
    if not phases.exists():
        shutil.rmtree(REPLAY_CACHE, ignore_errors=True)
        REPLAY_CACHE.mkdir(parents=True)
        scenario = load_scenario(data_file(LATENCY_SCENARIO, SCENARIOS))
        print(f"simulating {LATENCY_SCENARIO} ({scenario.duration:g} s) into {REPLAY_CACHE}")
        result = scenario.run(seed=scenario.seed)
        write_simulation_bag(result, REPLAY_CACHE / "bag", "mcap", False)
        start = next(p.start for p in result.phases if p.program == "collaborate")
        offset = float(start - result.phases[0].start)
        phases.write_text(yaml.safe_dump({"collaborate": offset}))
    return REPLAY_CACHE / "bag", yaml.safe_load(phases.read_text())["collaborate"]


def replay_graph(folder: Path) -> Path:
    """``latency_graph`` without the simulation, every node on the system clock."""
    import yaml

    data = yaml.safe_load(latency_graph(folder).read_text())
    del data["/sim_node"]
    data["/**"]["ros__parameters"]["use_sim_time"] = False
    path = folder / "replay.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def cpu_seconds(children: dict[str, object]) -> dict[str, float]:
    """CPU time (user + system, s) of each running child process so far (/proc; with its own
    children: the coordinator's solver process), and of this process."""
    from bench_coordinator import cpu_seconds as tree_cpu_seconds

    spent = {"this monitor": time.process_time()}
    for name, child in children.items():
        try:
            spent[name.strip("/").replace("/robot_node", "")] = tree_cpu_seconds(child.pid)
        except FileNotFoundError:
            continue
    return spent


def normal_priority(pids: list[int]) -> None:
    """Every thread of the processes ``pids`` back to the normal scheduling policy."""
    for pid in pids:
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                os.sched_setscheduler(int(task.name), os.SCHED_OTHER, os.sched_param(0))
            except (ProcessLookupError, PermissionError):
                continue


def replay() -> int:
    """``--latency --replay``: the robots' data from hardware-like drivers instead of a
    simulation on the same cores. ``replay_inputs`` ahead of time; then the robot nodes, the
    coordinator and the planner (each its own process, on the system clock) and
    ``robot_replay.py`` (the drivers: the raw topics in real time, restamped on this
    machine's clock), the admittance enabled as the ``collaborate`` phase begins; the same
    measures as ``--latency``, plus from the driver's stamp and per hop. ``--rr``: every
    process (this one too) at SCHED_RR priority; ``--rr-estimation``: so until the admittance
    starts (the estimate needs every sample in time), at normal priority from then on."""
    import subprocess
    import tempfile

    from echo_chain import FIFO_PRIORITY, realtime_prefix

    from inertia_estimation_ros.commands.demo import stop_children

    bag, collaborate = replay_inputs()
    demote = "--rr-estimation" in sys.argv  # SCHED_RR until the admittance starts
    prefix = realtime_prefix("rr" if "--rr" in sys.argv or demote else "")
    if prefix:  # this process too, before rclpy's and DDS's threads start (they inherit it)
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(FIFO_PRIORITY))
    folder = Path(tempfile.mkdtemp(prefix="bench_collaboration_replay_"))
    trace = trace_children(folder) if "--trace" in sys.argv else None
    load = os.getloadavg()[0]
    monitor, arrivals, group = loop_monitor("events")  # 0.1 of a core less than "single"
    children = start_graph(replay_graph(folder), folder / "graph.log", chosen_executors(), prefix)
    drivers = str(Path(__file__).with_name("robot_replay.py"))
    children["drivers"] = subprocess.Popen([*prefix, sys.executable, drivers, str(bag)])
    enabled, cpu, cpu_end = None, {}, {}
    try:
        deadline = time.monotonic() + 600
        seen, since = None, time.monotonic()  # the newest sample's stamp, seen since when
        while children["drivers"].poll() is None and time.monotonic() < deadline:
            if enabled is None and arrivals.span() >= collaborate:
                enabled = monitor.enable_admittance(timeout=10.0)
                print(f"/planner_node/enable: {enabled.message if enabled else 'no answer'}")
                if demote:
                    normal_priority([os.getpid(), *(c.pid for c in children.values())])
                cpu = cpu_seconds(children)
            if arrivals.last_stamp != seen:
                seen, since = arrivals.last_stamp, time.monotonic()
            elif cpu and not cpu_end and time.monotonic() - since > DRIVERS_DONE:
                # once, after the last sample (not while the loop runs: /proc's reads
                # would compete with it, on its cores and for this process's interpreter)
                cpu_end, replayed = cpu_seconds(children), arrivals.span() - collaborate
            time.sleep(0.05)
    finally:
        stop_children(children)
        group.stop()
    if cpu_end and enabled.success:
        spent = {name: cpu_end[name] - cpu.get(name, 0.0) for name in cpu_end}
        print(
            f"CPU seconds per second of the collaborate phase replayed ({replayed:.1f} s): "
            + ", ".join(f"{name} {t / replayed:.2f}" for name, t in spent.items())
        )
    policy = "SCHED_RR 50" if prefix else "normal priority"
    if demote:
        policy = "SCHED_RR 50 while the estimate converged, normal priority from the admittance on"
    end = os.getloadavg()[0]
    print(f"{policy}; load average (1 min) {load:.1f} at the start, {end:.1f} at the end")
    status = arrivals.report(skip=BACKLOG, wall_stamps=True)
    if trace is not None:
        from loop_trace.trace_report import print_report

        print_report(trace, ROBOTS)
    if status:
        print(f"(see {folder / 'graph.log'})")
    return status


def trace_children(folder: Path) -> Path:
    """``--trace``: the processes started from now on time their publishes and callbacks
    (``loop_trace/sitecustomize.py``) into ``folder``/trace; returns that folder."""
    trace = folder / "trace"
    trace.mkdir()
    probe = str(Path(__file__).with_name("loop_trace"))
    os.environ["LOOP_TRACE"] = str(trace)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [probe, os.environ.get("PYTHONPATH")]))
    return trace


def floor(seconds: float = 15.0) -> int:
    """The same loop with nodes that do no work (``echo_chain.py``: the same processes, topics'
    QoS and executors), for ``seconds`` at 100 Hz: what DDS, rclpy and the interpreter cost
    at this load, the floor under ``--latency``'s figures."""
    import os
    import subprocess

    import rclpy
    from echo_chain import EXECUTABLES, FIFO_PRIORITY, command_topic, realtime_prefix, sample_topic
    from geometry_msgs.msg import PoseStamped
    from rclpy.context import Context
    from rclpy.node import Node

    from inertia_estimation_ros.commands.demo import stop_children
    from inertia_estimation_ros.ros.runtime import NodeGroup

    prefix = realtime_prefix("rr" if "--rr" in sys.argv else "")
    if prefix:  # this process too, before rclpy's and DDS's threads start (they inherit it)
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(FIFO_PRIORITY))
    own_domain()
    context = Context()
    rclpy.init(context=context)
    monitor = Node("echo_monitor", context=context)
    topics = {"sample": (PoseStamped, sample_topic("robot_1"))}
    topics["wrench"] = (PoseStamped, "/echo/wrench")
    for rid in ROBOTS:
        topics[rid] = (PoseStamped, command_topic(rid))
    arrivals = Arrivals(monitor, topics)
    group = NodeGroup([monitor], context, "single").start()
    script = str(Path(__file__).with_name("echo_chain.py"))
    roles = [*ROBOTS, "coordinator", "planner", "source"]  # the source last: all listen
    executors = dict.fromkeys(EXECUTABLES.values(), "single") if "--single" in sys.argv else {}
    executors.update(chosen_executors())
    children = {}
    for role in roles:
        executor = executors.get(EXECUTABLES["robot" if role in ROBOTS else role])
        command = [*prefix, sys.executable, script, role, *([executor] if executor else [])]
        children[role] = subprocess.Popen(command)
    try:
        deadline = time.monotonic() + 120  # discovery: a minute or more at a high load
        while not all(arrivals.commands.values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(seconds)
    finally:
        stop_children(children)
        group.stop()
    return arrivals.report()


def check_options() -> None:
    """``--help`` and a clear error for an unknown option; the runs read ``sys.argv``."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--aerial", action="store_true", help="the aerial team's effort table")
    mode.add_argument("--latency", action="store_true", help="wrench -> commands over DDS")
    mode.add_argument("--floor", action="store_true", help="the same loop, nodes doing no work")
    parser.add_argument("--timer", action="store_true", help="reference on the planner's timer")
    parser.add_argument(
        "--replay", action="store_true", help="with --latency: the robots' data replayed"
    )
    parser.add_argument("--single", action="store_true", help="echo nodes single-threaded")
    parser.add_argument("--rr", action="store_true", help="the loop at SCHED_RR priority")
    parser.add_argument(
        "--rr-estimation", action="store_true", help="--replay: SCHED_RR until the admittance"
    )
    parser.add_argument(
        "--trace", action="store_true", help="--replay: every process's publishes and callbacks"
    )
    parser.add_argument("--executor", action="append", metavar="EXECUTABLE=KIND", default=[])
    parser.parse_args()


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/collaboration.md

    check_options()

    with benchmark_page("collaboration"):
        if "--floor" in sys.argv:
            status = floor()
        elif "--aerial" in sys.argv:
            status = aerial()
        else:
            status = replay() if "--replay" in sys.argv else None
            if status is None:
                status = latency() if "--latency" in sys.argv else main()
    sys.exit(status)
