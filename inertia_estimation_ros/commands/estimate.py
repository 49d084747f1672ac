"""``inertia_estimation estimate``: the coordinator's pipeline on a bag, faster than real time.

``estimate_bag`` feeds every robot's recorded ``/<robot>/grasp_state`` (and batched
``/<robot>/grasp_state_array``) in log-time order
through ``core.team_pipeline.TeamPipeline`` (the code the coordinator node runs live) and ends
with a solve from scratch, as the coordinator's ``~/estimate_now`` does. With a report it
also solves every ``period`` seconds of bag time (the history that the report plots); without
one nothing shows a history, so only the final solve runs.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from . import estimate_aerial
from .lazy import defer_numpy_extras, lazy_module

np = lazy_module("numpy")  # loads on first use: arguments are checked first

# A robot's samples, one per message or batched (not /ground_truth/<id>/...), and their types.
GRASP_TOPIC = re.compile(r"^/([^/]+)/(grasp_state|grasp_state_array)$")
GRASP_TYPES = {
    "grasp_state": "inertia_estimation_ros/msg/GraspState",
    "grasp_state_array": "inertia_estimation_ros/msg/GraspStateArray",
}
TRUTH_TOPIC = "/ground_truth/payload"
LIVE_TOPIC = "/payload_estimate"
UPDATE_PERIOD = 0.1  # [s] of bag time pushed at once, the solves' granularity
PROCESS_PERIOD = 0.5  # [s] of bag time between alignments and estimator updates (or a solve)
# Where ``estimate_bag``'s CPU time goes (``BagRun.cpu_seconds``).
PHASES = ("reading", "ingestion", "history solves", "final solve")
# What bad input raises; the commands print it as a message (BagError is a ValueError).
INPUT_ERRORS = (ValueError, KeyError, OSError)


@dataclass
class BagRun:
    """What ``estimate_bag`` found (``source`` "offline"): the final estimate, the history
    (``PayloadEstimate`` messages every ``period`` of bag time), the pipeline (counts,
    refusals), and from the bag the ground truth and the live coordinator's estimates, if
    recorded. The demo fills one with the live coordinator's estimates (``source`` "live")."""

    robots: list[str]
    reference: str
    final: Any  # PayloadEstimate
    history: list = field(default_factory=list)
    pipeline: Any = None  # TeamPipeline
    truth: Any = None  # PayloadEstimate or None
    live: list = field(default_factory=list)  # recorded PayloadEstimate messages
    source: str = "offline"
    bag_seconds: float = 0.0  # the bag's duration (``run_on_bag``)
    wall_seconds: float = 0.0  # the wall time ``run_on_bag`` took over it
    cpu_seconds: dict[str, float] = field(default_factory=dict)  # per PHASES, ``estimate_bag``

    def speed(self) -> str:
        """'<bag> s of bag in <wall> s: <ratio>x real time', then the CPU time and its ratio
        and each phase's share ('' when not timed); on a second line the process's CPU time
        since it started (interpreter, imports and all: what a user who times the command
        sees) and its ratio."""
        if self.wall_seconds <= 0:
            return ""
        ratio = self.bag_seconds / self.wall_seconds
        cpu = sum(self.cpu_seconds.values())
        phases = ", ".join(f"{k} {v:.2f} s" for k, v in self.cpu_seconds.items())
        whole = time.process_time()  # this process's CPU time from its start
        return (
            f"speed: {self.bag_seconds:.1f} s of bag in {self.wall_seconds:.2f} s: "
            f"{ratio:.0f}x real time; CPU {cpu:.2f} s: "
            f"{self.bag_seconds / max(cpu, 1e-9):.0f}x real time ({phases})\n"
            f"whole process: CPU {whole:.2f} s since its start (interpreter, imports, "
            f"reading and estimate): {self.bag_seconds / max(whole, 1e-9):.0f}x real time"
        )


def bag_robots(path: Path) -> list[str]:
    """Robot ids with a ``/<id>/grasp_state`` or ``/<id>/grasp_state_array`` topic in the
    bag, sorted."""
    from ..bag_index import bag_topics

    return sorted({m.group(1) for t in bag_topics(path) if (m := GRASP_TOPIC.match(t))})


def grasp_topics(topics: dict[str, str], robots: list[str]) -> list[str]:
    """Every robot's grasp topics in the bag (either kind or both); ValueError names a robot
    without any and a topic with another message type."""
    wanted = [f"/{r}/{kind}" for r in robots for kind in GRASP_TYPES if f"/{r}/{kind}" in topics]
    missing = [r for r in robots if not any(t.startswith(f"/{r}/") for t in wanted)]
    if missing:
        raise ValueError(
            f"robots {missing} have no grasp_state nor grasp_state_array: record every "
            "robot's grasp_state"
        )
    foreign = {t: topics[t] for t in wanted if topics[t] != GRASP_TYPES[t.rsplit("/", 1)[1]]}
    if foreign:
        raise ValueError(
            f"{', '.join(f'{t} carries {m}' for t, m in foreign.items())}, not "
            f"{' or '.join(GRASP_TYPES.values())}: record the robot nodes' grasp_state (or "
            "replay raw driver topics through `bringup replay.yaml` first)"
        )
    return wanted


def coordinator_parameters(config: str | Path) -> dict[str, object]:
    """The ``/coordinator_node`` parameters of a graph config (``ros.graph``)."""
    from ..ros.graph import load_graph

    return dict(load_graph(config).node("/coordinator_node").parameters)


def estimate_bag(
    path: Path,
    parameters: dict[str, object] | None = None,
    period: float | None = None,
    progress: Any = None,
    solve_at: list[float] | None = None,
) -> BagRun:
    """Run the coordinator pipeline on a bag. ``parameters`` are coordinator parameters
    (``robots``, ``reference_robot`` and the pipeline's; default: the bag's robots, the
    truth's reference or the first robot). The history: a solve every ``period`` seconds of
    bag time (None: none), or, with ``solve_at``, once the reference robot's samples reach
    each of those stamps (e.g. those of the live coordinator's estimates, to follow its
    schedule); the final solve from scratch does not depend on it (``test_schedule``).
    ``progress(seconds)`` gets the bag time done."""
    from ..bag_index import bag_topics
    from ..core.team_pipeline import PipelineSettings, TeamPipeline
    from ..ros.conversions import to_payload_estimate

    cpu = dict.fromkeys(PHASES, 0.0)
    timed = partial(_timed, cpu)
    parameters = dict(parameters or {})
    with timed("reading"):
        topics = bag_topics(path)
        truth, live = recorded_estimates(path)
    robots = list(parameters.get("robots") or bag_robots(path))
    if len(robots) < 2:
        raise ValueError(f"{path} holds grasp_state of {robots}: the team needs two robots")
    reference = parameters.get("reference_robot") or (
        truth.reference_robot_id if truth is not None else robots[0]
    )
    settings = PipelineSettings.from_parameters(parameters)
    history, next_solve = [], None
    schedule = sorted(solve_at or [])
    try:
        wanted = grasp_topics(topics, robots)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from None
    with timed("reading"):
        feed = GraspFeed.read(path, wanted, settings, plain=solve_at is None)
        times = feed.times
    pipeline = TeamPipeline(robots, reference, settings)
    processed = -np.inf
    cadence = PROCESS_PERIOD if period is None else min(PROCESS_PERIOD, period)
    stamps = times.tolist()  # [ns]: the windows found and the times compared as Python numbers
    first = stamps[0] * 1e-9 if stamps else 0.0
    next_solve = first + period if period is not None and solve_at is None else np.inf
    start = 0
    for stop in window_stops(stamps, int(UPDATE_PERIOD * 1e9)):  # as the node's worker
        window, start = slice(start, stop), stop
        t = stamps[stop - 1] * 1e-9
        due = solve_at is not None or t - processed >= cadence
        if not due and feed.plain:  # nothing to push before the next alignment
            feed.until = stamps[stop - 1]
            continue
        with timed("ingestion"):
            feed.window(pipeline, window)
            if due:
                feed.flush(pipeline)
                pipeline.process()  # the same blocks whatever the history's period above it
                processed = t
                if progress is not None:
                    progress(t - first)
        if processed == t and t >= next_solve:
            next_solve = t + period
            with timed("history solves"):
                history.append(to_payload_estimate(pipeline.estimate(), settings.frame_of))
        while schedule and pipeline.last_stamp.get(reference, -np.inf) >= schedule[0]:
            schedule.pop(0)
            with timed("history solves"):
                history.append(to_payload_estimate(pipeline.estimate(), settings.frame_of))
    with timed("ingestion"):
        feed.flush(pipeline)
        pipeline.process()
    with timed("final solve"):
        final = to_payload_estimate(pipeline.estimate(full=True), settings.frame_of)
    history.append(final)
    return BagRun(robots, reference, final, history, pipeline, truth, live, cpu_seconds=cpu)


def window_stops(stamps: list[int], width: int) -> list[int]:
    """The end (exclusive index) of each window of ``stamps`` (increasing): a window holds
    the stamps before its first one + ``width``."""
    stops, start = [], 0
    while start < len(stamps):
        start = bisect.bisect_left(stamps, stamps[start] + width)
        stops.append(start)
    return stops


@contextmanager
def _timed(cpu: dict[str, float], phase: str) -> Iterator[None]:
    """Add the CPU time of the block to ``cpu[phase]``."""
    started = time.process_time()
    try:
        yield
    finally:
        cpu[phase] += time.process_time() - started


class GraspFeed:
    """A bag's grasp messages on their way into the pipeline, window by window of log time
    (``window``), everything up to the latest window before an alignment (``flush``).

    A *plain* bag (``bag_grasps.read_plain_streams``: every sample of it accepted as it
    comes) is decoded as one batch per robot, and each robot's samples up to the latest
    window go in as one batch at each ``flush``: the pipeline then holds the same samples
    at every alignment as when they went in window by window. Any other bag goes in message
    by message in log-time order, window by window (``push_window``), as the coordinator
    would receive it."""

    def __init__(self, times: np.ndarray, entries: list | None, streams: dict | None) -> None:
        self.times, self.entries, self.streams = times, entries, streams
        self.pushed = dict.fromkeys(streams or {}, 0)  # samples of each robot pushed
        self.until = None  # log time [ns] of the latest window's last message

    @classmethod
    def read(cls, path: Path, topics: list[str], settings: Any, plain: bool) -> GraspFeed:
        """The bag's messages of the grasp ``topics``; ``plain``: try the plain decoding."""
        from ..ros.bag_grasps import read_grasp_entries, read_plain_streams

        robots = {t.split("/")[1]: t for t in topics if t.endswith("/grasp_state")}
        streams = None
        if plain and len(robots) == len(topics) and not settings.estimate_clock_offsets:
            streams = read_plain_streams(path, robots, settings.frame_of)
        if streams is not None:
            from ..core.cooperative.clock import row_matrix

            for stream in streams.values():  # the aligner's rows of all, sliced at each flush
                row_matrix(stream.batch)
            times = np.sort(np.concatenate([s.timestamps for s in streams.values()]))
            return cls(times, None, streams)
        entries = read_grasp_entries(path, topics)
        return cls(np.array([e.timestamp for e in entries], dtype=np.int64), entries, None)

    @property
    def plain(self) -> bool:
        return self.streams is not None

    def window(self, pipeline: Any, window: slice) -> None:
        """The messages of a window (indices into ``times``) into the pipeline or, plain,
        noted for the next ``flush``."""
        if self.entries is not None:
            push_window(pipeline, self.entries[window])
        else:
            self.until = self.times[window.stop - 1]

    def flush(self, pipeline: Any) -> None:
        """Plain: every robot's samples up to the latest window into the pipeline, one batch
        per robot."""
        if self.streams is None or self.until is None:
            return
        for robot, stream in self.streams.items():
            stop = int(np.searchsorted(stream.timestamps, self.until, side="right"))
            if stop > self.pushed[robot]:
                pipeline.push_batch(
                    stream.batch.rows(slice(self.pushed[robot], stop)), stream.frame_id
                )
                self.pushed[robot] = stop


def push_window(pipeline: Any, entries: list) -> None:
    """A window's grasp entries (``ros.bag_grasps``) into the pipeline, robot by robot in
    their order: consecutive decoded samples of one frame id as one batch
    (``TeamPipeline.push_batch``), other messages through ``ingest.push_message``."""
    from ..ros.ingest import push_message

    by_robot: dict[str, list] = {}
    for entry in entries:
        by_robot.setdefault(entry.robot_id, []).append(entry)
    for robot, mine in by_robot.items():
        batch, frame_id = [], None
        for entry in mine + [None]:
            joins = entry is not None and entry.samples is not None and entry.frame_id == frame_id
            if joins:
                batch += entry.samples
                continue
            if batch:
                pipeline.push_batch(batch, frame_id)
            batch, frame_id = [], None
            if entry is None:
                break
            if entry.samples is not None:
                batch, frame_id = list(entry.samples), entry.frame_id
            else:
                push_message(pipeline, robot, entry.message)


def recorded_estimates(path: Path) -> tuple[Any, list]:
    """The ground truth (first message) and the live estimates, when the bag has them."""
    from ..bag_index import bag_topics

    topics = bag_topics(path)
    wanted = [t for t in (TRUTH_TOPIC, LIVE_TOPIC) if t in topics]
    if not wanted:
        return None, []
    found = _indexed_messages(path, wanted)
    if found is None:  # not one indexed mcap file: through rosbags' reader
        from ..bags import read_bag

        found = {topic: [] for topic in wanted}
        for message in read_bag(path, wanted, deserialize="rclpy"):
            found[message.topic].append(message.message)
    truth = found.get(TRUTH_TOPIC) or [None]
    return truth[0], found.get(LIVE_TOPIC, [])


def _indexed_messages(path: Path, topics: list[str]) -> dict[str, list] | None:
    """The first truth and every live estimate of an indexed mcap bag, through its index
    (``bag_index.read_topic_records``: no second reader of the bag), decoded without rclpy
    (``ros.cdr``); None for any other bag."""
    from ..bag_index import rclpy_class, read_topic_records

    records = read_topic_records(path, topics)
    if records is None:
        return None
    found = {}
    for topic, messages in records.items():
        kind = rclpy_class(messages.msgtype)
        count = min(len(messages), 1) if topic == TRUTH_TOPIC else len(messages)
        found[topic] = [_decoded(messages.message(k), kind) for k in range(count)]
    return found


def _decoded(raw: bytes, kind: type) -> Any:
    """A message of class ``kind`` from its CDR bytes: ``ros.cdr`` (no rclpy to load), rclpy
    for what it does not read."""
    from ..ros.cdr import UnsupportedError, decode

    try:
        return decode(raw, kind)
    except UnsupportedError:
        from rclpy.serialization import deserialize_message

        return deserialize_message(raw, kind)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "estimate",
        help="run the coordinator's pipeline on a bag, faster than real time",
        description=(
            "Feed every robot's /<robot>/grasp_state (or batched /<robot>/grasp_state_array) "
            "of a bag through the coordinator's "
            "pipeline (the same code as coordinator_node: checks, clock offsets, alignment, "
            "the team estimator), as fast as it goes, and print the final estimate +- 1 sigma, "
            "against the ground truth when the bag has /ground_truth/payload (simulator "
            "bags). Bags of raw driver topics only need robot nodes first: replay them "
            "through `bringup replay.yaml` and `record` the grasp_state."
        ),
        epilog=(
            "examples:\n"
            "  inertia_estimation estimate runs/demo/bag\n"
            "  inertia_estimation estimate runs/demo/bag --report runs/demo/report\n"
            "  inertia_estimation estimate bag --config sim_paper000.yaml  # its coordinator's\n"
            "  inertia_estimation estimate bag --robots robot_1 robot_2 --reference robot_2\n"
            "  inertia_estimation estimate bag --json | jq .mass"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_bag_arguments(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the final estimate as one JSON document instead of the table (schema: "
        "docs/command-line.md, 'estimate --json')",
    )
    parser.add_argument("--report", type=Path, help="also write the report into this folder")
    parser.add_argument(
        "--force", action="store_true", help="overwrite the report already in --report"
    )
    estimate_aerial.add_arguments(parser)
    parser.set_defaults(run=run)


def add_bag_arguments(parser: argparse.ArgumentParser) -> None:
    """Arguments shared with ``report``: the bag and the pipeline's parameters."""
    parser.add_argument(
        "bag", type=Path, help="rosbag2 folder with /<robot>/grasp_state (or grasp_state_array)"
    )
    parser.add_argument(
        "--config", help="graph config whose /coordinator_node parameters to use (config/*.yaml)"
    )
    parser.add_argument("--robots", nargs="+", help="robot ids (default: every grasp_state)")
    parser.add_argument("--reference", help="reference robot (default: the truth's, or first)")
    parser.add_argument(
        "--period",
        type=positive_seconds,
        help="seconds of bag time between solves of the history, which the report plots "
        "(default: from the bag's length, about 12 points, at most 5 s apart; without a "
        "report none: only the final solve, which does not depend on the history)",
    )


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number of seconds > 0")
    return value


def history_period(duration: float, solves: int = 12, longest: float = 5.0) -> float:
    """The default period of the history's solves for a bag of ``duration`` seconds: about
    ``solves`` solves, rounded up to 1, 2 or 5 times a power of ten, at most ``longest``
    (a short bag still gets a convergence curve, not one point)."""
    target = max(duration, 1e-3) / solves
    scale = 10.0 ** math.floor(math.log10(target))
    step = min(s * scale for s in (1, 2, 5, 10) if s * scale >= target * (1 - 1e-9))
    return min(step, longest)


def bag_problem(path: Path) -> str:
    """What is plainly wrong with the bag argument ('' if nothing), found before the numerics
    load: a path that does not exist."""
    if not path.exists():
        return (
            f"{path} does not exist: give a rosbag2 folder (or the folder `simulate --out` wrote)"
        )
    return ""


def bag_folder(path: Path) -> Path:
    """The bag of ``path``: itself, or the ``bag/`` that ``simulate --out`` wrote into it."""
    if not (path / "metadata.yaml").exists() and (path / "bag" / "metadata.yaml").exists():
        return path / "bag"
    return path


def run_on_bag(args: argparse.Namespace) -> BagRun:
    """``estimate_bag`` with the command line's parameters and a progress bar."""
    from threadpoolctl import threadpool_limits

    from ..bag_index import bag_duration
    from ..core import team_pipeline  # noqa: F401  (scipy's BLAS loaded before the limit below)
    from .progress import progress_bar

    parameters = coordinator_parameters(args.config) if args.config else {}
    if args.robots:
        parameters["robots"] = args.robots
    if args.reference:
        parameters["reference_robot"] = args.reference
    args.bag = bag_folder(args.bag)
    duration = bag_duration(args.bag)
    plotting = bool(getattr(args, "report", None)) or args.command == "report"
    period = args.period or (history_period(duration) if plotting else None)
    with (
        progress_bar(round(duration, 1), "bag s", "estimate") as bar,
        # the coordinator's setting; it holds for the BLAS libraries loaded by now only (a
        # second thread spinning on small matrices cost 4-5 s of CPU on the paper000 bag)
        threadpool_limits(limits=1, user_api="blas"),
    ):

        def advance(seconds: float) -> None:
            bar.update(round(seconds, 1) - bar.n)

        started = time.perf_counter()
        result = estimate_bag(args.bag, parameters, period, advance)
        result.wall_seconds = time.perf_counter() - started
        result.bag_seconds = duration
        bar.update(bar.total - bar.n)
    return result


def run(args: argparse.Namespace) -> int:
    from .report import comparison_table, report_folder_problem, write_report

    problem = args.report and report_folder_problem(args.report, args.force)
    if problem:
        print(f"error: {problem}")
        return 2
    problem = bag_problem(args.bag)  # before the numerics load: a quick answer
    if problem:
        print(json.dumps({"error": problem}) if args.json else f"error: {problem}")
        return 2
    defer_numpy_extras()  # numerics from here on, without what only scipy's API layer touches
    from ..bag_index import bag_topics

    try:
        if estimate_aerial.is_aerial_bag(bag_topics(bag_folder(args.bag))):
            return estimate_aerial.run_aerial(args, bag_folder(args.bag))
        result = run_on_bag(args)
        if args.json:
            print(json.dumps(estimate_document(result, args.bag), indent=1, allow_nan=False))
        else:
            print(comparison_table(result.final, result.truth))
            print(input_summary(result.pipeline))
            print(result.speed())
        if args.report:
            path = write_report(args.report, result, args.bag)
            print(f"report: {path}", file=sys.stderr if args.json else sys.stdout)
    except INPUT_ERRORS as error:
        if args.json:
            print(json.dumps({"error": str(error)}))
        else:
            print(f"error: {error}")
        return 2
    return 0


def input_summary(pipeline: Any) -> str:
    """What the pipeline took and refused: accepted samples per robot, every refusal by robot
    and reason (with the latest detail), sets the aligner could not form."""
    lines = [f"input: samples accepted {dict(sorted(pipeline.accepted.items()))}"]
    refusals = pipeline.refusals()
    lines += [f"refused: {text}" for text in refusals] or ["refused: none"]
    dropped = dict(pipeline.dropped())
    if dropped:
        lines.append(f"sets not formed by the aligner: {dropped}")
    return "\n".join(lines)


STAGES = ("WAITING", "KINEMATICS", "STATICS", "DYNAMICS", "FROZEN")
PARAMETERS = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")


def _finite(value: Any) -> Any:
    """JSON-ready: nested lists of floats, non-finite numbers as null."""
    array = np.asarray(value, dtype=float)
    if array.ndim == 0:
        return float(array) if np.isfinite(array) else None
    return [_finite(v) for v in array]


def estimate_document(result: BagRun, bag: Path) -> dict[str, Any]:
    """The final estimate as JSON-ready data (docs/command-line.md documents the schema): validity,
    every quantity with its covariance (null where not valid), advice, refusals, and the
    comparison with the ground truth when the bag has it."""
    from ..core.cooperative.payload_properties import payload_properties
    from ..ros.conversions import covariance_matrix, seconds, transform_matrix
    from .report import comparison_rows

    final = result.final
    valid = {
        "grasps": final.grasps_valid,
        "mass": final.mass_valid,
        "com": final.com_valid,
        "inertia": final.inertia_valid,
    }
    theta = np.asarray(final.parameters, dtype=float)
    covariance = np.asarray(final.parameter_covariance, dtype=float).reshape(10, 10)
    document: dict[str, Any] = {
        "bag": str(bag),
        "robots": result.robots,
        "reference": result.reference,
        "stamp": seconds(final.header.stamp),
        "stage": STAGES[final.stage],
        "valid": valid,
        "physically_consistent": final.physically_consistent,
        "consistency_margin": _finite(final.consistency_margin),
        "parameters": {
            "names": list(PARAMETERS),
            "value": _finite(theta),
            "covariance": _finite(covariance),
        },
        "grasps": {
            g.robot_id: {
                "frame_id": g.child_frame_id,
                "T_s_i": _finite(transform_matrix(g.transform)),
                "covariance": _finite(
                    c if (c := covariance_matrix(g.covariance)) is not None else np.zeros((6, 6))
                ),
            }
            for g in final.grasps
        }
        if final.grasps_valid
        else None,
        "mass": None,
        "com": None,
        "inertia_about_com": None,
        "principal_moments": None,
    }
    if final.mass_valid and theta[0] > 0:
        props = payload_properties(theta, covariance)
        document["mass"] = {"value": props.mass, "variance": _finite(props.mass_variance)}
        if final.com_valid:
            document["com"] = {
                "value": _finite(props.p_s_c),
                "covariance": _finite(props.p_s_c_covariance),
            }
        if final.inertia_valid:
            document["inertia_about_com"] = {
                "value": _finite(props.inertia_about_com),
                "covariance": _finite(props.inertia_about_com_covariance),
            }
            document["principal_moments"] = {
                "value": _finite(props.principal_moments),
                "covariance": _finite(props.principal_moments_covariance),
            }
    document["condition_numbers"] = {
        name: _finite(getattr(final, f"{name}_condition_number"))
        for name in ("kinematics", "statics", "dynamics")
    }
    document["samples"] = {
        "kinematics": final.samples_kinematics,
        "static": final.samples_static,
        "dynamic": final.samples_dynamic,
        "sets_rejected": final.samples_rejected,
    }
    document["advice"] = list(final.advice)
    pipeline = result.pipeline
    document["input"] = {
        "accepted": dict(sorted(pipeline.accepted.items())),
        "refused": [
            {
                "robot": rid,
                "reason": reason,
                "count": n,
                "detail": pipeline.rejection_details[(rid, reason)],
            }
            for (rid, reason), n in sorted(pipeline.rejected.items())
        ],
        "sets_dropped": dict(pipeline.dropped()),
    }
    document["comparison"] = (
        [
            {
                "quantity": row.name,
                "estimate": _finite(row.value) if row.sigma is not None else None,
                "sigma": None if row.sigma is None else _finite(row.sigma),
                "truth": None if row.truth is None else _finite(row.truth),
            }
            for row in comparison_rows(final, result.truth)
        ]
        if result.truth is not None
        else None
    )
    return document
