"""``inertia_estimation record``: write live topics to a rosbag2 (``ros.bag_recorder``)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)  # Ctrl-C; ros2 launch and docker stop

# Each robot's grasp_state (one sample per message, or batched: grasp_state_array), the raw
# driver topics, robot descriptions, the coordinator's estimate, /clock and the simulator's
# ground truth.
DEFAULT_TOPICS = (
    "/*/grasp_state",
    "/*/grasp_state_array",
    "/*/joint_states",
    "/*/ft_sensor",
    "/*/imu",
    "/*/robot_description",
    "/payload_estimate",
    "/clock",
    "/ground_truth/*",
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "record",
        help="record live topics into a rosbag2 (Ctrl-C to stop)",
        description=(
            "Subscribe to the topics that match the patterns, as they appear in the graph, and "
            "write every message to a new rosbag2 (message definitions embedded; latched "
            "topics stay latched). Log times come from this node's clock: simulated time with "
            "--use-sim-time. Stop with Ctrl-C, SIGTERM (ros2 launch, docker stop) or "
            "--duration: the bag is then finished, whatever further signals arrive. The bag "
            "goes to disk every half second: after a SIGKILL or a crash, `inertia_estimation "
            "bag-repair` recovers all but the last half second."
        ),
        epilog=(
            "examples:\n"
            "  inertia_estimation record runs/live                 # the default topics below\n"
            "  inertia_estimation record runs/sim --use-sim-time --duration 60\n"
            "  inertia_estimation record runs/gs --topics '/*/grasp_state' /payload_estimate\n"
            "  inertia_estimation record runs/light --exclude '/*/joint_states'\n\n"
            "default topics (fnmatch patterns): " + " ".join(DEFAULT_TOPICS) + "\n"
            "that is each robot's grasp_state, the raw driver topics and robot descriptions,\n"
            "the coordinator's estimate, /clock and the simulator's ground truth"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("bag", type=Path, help="folder of the new bag (must not exist)")
    parser.add_argument(
        "--topics", nargs="+", default=list(DEFAULT_TOPICS), help="topic names or patterns"
    )
    parser.add_argument("--exclude", nargs="+", default=[], help="patterns to leave out")
    parser.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap")
    parser.add_argument("--duration", type=float, help="stop after this many wall-clock seconds")
    parser.add_argument(
        "--use-sim-time", action="store_true", help="stamp messages with /clock (simulation)"
    )
    parser.set_defaults(run=run)


def record(
    path: Path,
    patterns: Sequence[str],
    exclude: Sequence[str],
    storage: str,
    duration: float | None,
    use_sim_time: bool,
    restore_signal_handlers: bool = True,
) -> Counter:
    """Record until Ctrl-C or SIGTERM (or ``duration`` wall-clock seconds); returns messages
    per topic. Signals arriving while the bag is finished are ignored (``_stop_signals``);
    the command keeps ignoring them until it exits (``restore_signal_handlers`` False)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.parameter import Parameter
    from rclpy.signals import SignalHandlerOptions

    from ..ros.bag_recorder import BagRecorder
    from ..ros.runtime import NodeGroup

    with _stop_signals(restore_signal_handlers) as stop:
        context = Context()
        rclpy.init(context=context, signal_handler_options=SignalHandlerOptions.NO)
        recorder = BagRecorder(
            path,
            patterns,
            exclude,
            storage,
            context=context,
            parameter_overrides=[Parameter("use_sim_time", value=use_sim_time)],
        )
        group = NodeGroup([recorder], context, "single").start()  # see BagRecorder
        try:
            deadline = None if duration is None else time.monotonic() + duration
            while not stop.wait(0.05) and not group.finished():
                if deadline is not None and time.monotonic() >= deadline:
                    break
        finally:
            stop.set()  # from here on, signals only get a note
            group.executor.shutdown()
            recorder.close()
            group.stop()
    return recorder.counts


@contextmanager
def _stop_signals(restore: bool = True) -> Iterator[threading.Event]:
    """An event set by the first SIGINT or SIGTERM; later ones only print that the bag is
    being finished. Afterwards the previous handlers come back if ``restore``, else the
    signals are ignored until the process ends."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def handle(signum: int, frame: object) -> None:
        if stop.is_set():
            print("finishing the bag; wait a moment", file=sys.stderr, flush=True)
        stop.set()

    previous = {s: signal.signal(s, handle) for s in STOP_SIGNALS}
    try:
        yield stop
    finally:  # the bag is finished: the previous handlers, or none until the process ends
        for s, handler in previous.items():  # (Python's shutdown resets handlers, not SIG_IGN)
            signal.signal(s, handler if restore else signal.SIG_IGN)


def run(args: argparse.Namespace) -> int:
    if args.bag.exists():
        print(f"error: {args.bag} exists; choose a new folder")
        return 2
    counts = record(
        args.bag,
        args.topics,
        args.exclude,
        args.storage,
        args.duration,
        args.use_sim_time,
        restore_signal_handlers=False,  # a signal after the bag is finished changes nothing
    )
    for topic, n in sorted(counts.items()):
        print(f"{n:8d}  {topic}")
    print(f"wrote {sum(counts.values())} messages on {len(counts)} topics to {args.bag}")
    return 0
