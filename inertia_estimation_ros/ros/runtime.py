"""Running nodes: the executables' ``main``, a group of nodes on one executor with a clean
shutdown, calls that take seconds off the executor thread, wall-clock timers, and diagnostics
messages.

Shutdown order (``NodeGroup.stop``): the spinning thread is joined and the executor shut down
(its callbacks under way finish) before the nodes are destroyed and the context is shut down;
a node destroyed while a thread still spins it can hang or fail
(``/work/shared/notes/simulation-tips.md``).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Generator, Sequence

import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.context import Context
from rclpy.executors import Executor, MultiThreadedExecutor, SingleThreadedExecutor
from rclpy.experimental import EventsExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.task import Future
from rclpy.timer import Timer
from rclpy.utilities import remove_ros_args

from .parameters import ParameterError

SHUTDOWN_TIMEOUT = 10.0  # [s] for the executor to stop and its thread to end

LEVELS = {
    "OK": DiagnosticStatus.OK,
    "WARN": DiagnosticStatus.WARN,
    "ERROR": DiagnosticStatus.ERROR,
    "STALE": DiagnosticStatus.STALE,
}


def steady_timer(node: Node, period: float, callback: Callable[[], None]) -> Timer:
    """A timer on the monotonic wall clock: it runs whether or not the node uses sim time."""
    return node.create_timer(period, callback, clock=Clock(clock_type=ClockType.STEADY_TIME))


def diagnostics(node: Node, level: str, message: str, values: dict[str, object]) -> DiagnosticArray:
    """A DiagnosticArray with the node's one status: named by its full name, level OK, WARN or
    ERROR, and its values as strings."""
    status = DiagnosticStatus(
        level=LEVELS[level],
        name=node.get_fully_qualified_name(),
        message=message,
        hardware_id=node.get_namespace().strip("/"),
        values=[KeyValue(key=k, value=str(v)) for k, v in values.items()],
    )
    array = DiagnosticArray(status=[status])
    array.header.stamp = node.get_clock().now().to_msg()
    return array


class PolledFuture(Future):
    """An rclpy ``Future`` that a coroutine awaits polling at most every ``POLL`` seconds.
    rclpy's events executor resumes an awaiting coroutine again and again until its future is
    done (a busy loop: 0.7-2.2 CPU s over a 3-s wait); here a resumption that comes sooner
    than ``POLL`` after the last one sleeps out the rest (the GIL released), so awaiting costs
    a few hundred polls a second. On rclpy's single-threaded executor, which resumes it only
    when woken, it makes no difference."""

    POLL = 0.002  # [s]

    def __await__(self) -> Generator[None, None, object]:
        last = time.monotonic()
        while not self._settled():
            rest = last + self.POLL - time.monotonic()
            if rest > 0:
                time.sleep(rest)
            last = time.monotonic()
            if self._settled():
                break
            yield
        return self.result()

    def _settled(self) -> bool:
        """Done or cancelled (what ends rclpy's own await)."""
        return self.done() or self.cancelled()


class BackgroundCalls:
    """Calls that take seconds (a balancing plan's SQP and SDPs) on a thread of their own, one
    after the other in the order submitted, so that the node's executor thread never waits for
    them: ``submit`` returns a ``PolledFuture`` that a coroutine callback awaits (the
    node's executor, woken when the call is done, resumes it), or that nobody awaits. A call
    that raises is logged with its traceback and its future holds the exception. Awaiting
    costs nothing on rclpy's single-threaded executor (measured: 0.04 CPU s over a 3-s
    wait), and little on rclpy's events executor (``PolledFuture``)."""

    def __init__(self, node: Node, name: str):
        self._node = node
        self._calls: queue.Queue = queue.Queue()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, function: Callable[..., object], *args: object) -> Future:
        """``function(*args)`` on the thread, after the calls submitted before it."""
        result = PolledFuture()
        self._calls.put((function, args, result))
        return result

    @property
    def busy(self) -> bool:
        """A call is running or waiting."""
        return self._calls.unfinished_tasks > 0

    def _run(self) -> None:
        while (call := self._calls.get()) is not None:
            function, args, result = call
            try:
                result.set_result(function(*args))
            except Exception as error:
                failure = traceback.format_exc()
                self._node.get_logger().error(f"{function.__name__} failed:\n{failure}")
                result.set_exception(error)
            finally:
                self._calls.task_done()
            executor = self._node.executor
            if executor is not None and not self._stopped.is_set():  # the awaiting callback
                executor.wake()

    def stop(self, timeout: float = SHUTDOWN_TIMEOUT) -> None:
        """No call after the one under way; wait for it at most ``timeout`` seconds."""
        self._stopped.set()
        while True:
            try:
                self._calls.get_nowait()
                self._calls.task_done()
            except queue.Empty:
                break
        self._calls.put(None)
        self._thread.join(timeout)


# rclpy executors a group of nodes can run on. Both deliver every sample of the sim_test.yaml
# graph (the simulation node slows down rather than flood a busy process); the single-threaded
# one needs less CPU, Python running one thread at a time anyway.
class _MultiThreadedExecutor(MultiThreadedExecutor):
    """rclpy's MultiThreadedExecutor, shutting down its worker threads before its guard
    condition: rclpy (Kilted) destroys the guard condition first, and callbacks still queued
    then fail with "cannot use Destroyable because destruction was requested"."""

    def shutdown(self, timeout_sec: float | None = None, *, wait_for_threads: bool = True) -> bool:
        self._executor.shutdown(wait=wait_for_threads)
        return Executor.shutdown(self, timeout_sec)


# "events": rclpy's experimental EventsExecutor (single-threaded, its wait loop in C++).
EXECUTORS = {
    "multi": _MultiThreadedExecutor,
    "single": SingleThreadedExecutor,
    "events": EventsExecutor,
}


class NodeGroup:
    """Nodes spinning on one executor (a key of ``EXECUTORS``) in a background thread.

    rclpy's events executor runs its loop in C++ for ``SPIN_SLICE`` at a time (no Python
    frame per event: at 1 kHz, N = 16 the coordinator's per-event ``spin_once`` loop was
    ~12 % of its GIL time); ``stop`` ends the slice at once through a future the
    executor waits on. A slice is finite because rclpy 9.1.2's events executor spinning
    without a timeout busy-waits in its queue holding the queue's lock (every thread that
    posts to it, a timer's or a ``stop``, then blocks). rclpy's Python executors take one
    event per ``spin_once`` as before (their ``spin`` is the same Python loop); ``stop`` wakes
    them. End a group with ``stop``: an executor shut down under its running thread returns
    from each ``spin_once`` at once, and the thread would take a core until the context ends."""

    SPIN_SLICE = 1.0  # [s] of the events executor's C++ loop between checks of the group

    def __init__(self, nodes: Sequence[Node], context: Context, executor: str = "multi"):
        self.nodes, self.context = list(nodes), context
        self.executor = EXECUTORS[executor](context=context)
        for node in self.nodes:
            self.executor.add_node(node)
        self.error: BaseException | None = None
        self._stopping = threading.Event()
        self._stopped = Future()  # done at stop(): ends the events executor's slice
        self._thread = threading.Thread(target=self._spin, name="executor", daemon=True)

    def _spin(self) -> None:
        try:
            while not self._stopping.is_set() and self.context.ok():
                self._spin_slice()
        except Exception as error:  # a callback raised: report it, end the group
            if not self.context.ok():  # the context went down under the executor: the end
                return
            self.error = error
            traceback.print_exc()

    def _spin_slice(self) -> None:
        """Callbacks until ``stop``, the context's shutdown, or a slice's end: one event on
        rclpy's Python executors, up to ``SPIN_SLICE`` seconds on the events executor."""
        if isinstance(self.executor, Executor):
            self.executor.spin_once(timeout_sec=0.1)
        else:
            self.executor.spin_until_future_complete(self._stopped, timeout_sec=self.SPIN_SLICE)

    def start(self) -> NodeGroup:
        self._thread.start()
        return self

    def finished(self) -> bool:
        """A node has asked the group to end (``finished`` set) or the executor stopped."""
        return not self._thread.is_alive() or any(
            getattr(node, "finished", threading.Event()).is_set() for node in self.nodes
        )

    def wait(self, timeout: float | None = None) -> bool:
        """Block until ``finished()`` or timeout seconds; returns ``finished()``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.finished():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    def stop(self) -> None:
        """The spinning thread ends first (no new callbacks), then the executor shuts down
        (the callbacks under way finish), then the nodes and the context go."""
        self._stopping.set()
        self._stopped.set_result(None)  # the events executor's slice ends now
        if isinstance(self.executor, Executor):
            self.executor.wake()  # a Python executor's spin_once returns now
        self._thread.join(SHUTDOWN_TIMEOUT)
        self.executor.shutdown(timeout_sec=SHUTDOWN_TIMEOUT)
        for node in self.nodes:
            node.destroy_node()
        if self.context.ok():
            rclpy.shutdown(context=self.context)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_until_interrupted(group: NodeGroup) -> int:
    """Wait for a started group until Ctrl-C, SIGTERM, or a node finishing, then stop it;
    0 unless a callback failed."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        group.wait()
    except KeyboardInterrupt:
        pass
    finally:
        group.stop()
    return 1 if group.error else 0


def parameter_help(executable: str) -> str:
    """The parameters of a node as --help text."""
    from .nodes import node_interface

    lines = ["parameters (set with --ros-args -p name:=value or --params-file file.yaml):"]
    for p in node_interface(executable).parameters:
        allowed = f" [{p.constraint_text()}]" if p.constraint_text() else ""
        lines.append(f"  {p.name} ({p.type}, default {p.default!r}){allowed}: {p.description}")
    return "\n".join(lines)


def freeze_start_up_heap() -> None:
    """Python's cyclic garbage collector leaves alone what exists once a node is built (its
    imports: numpy, scipy, rclpy, the node; ~90 000-115 000 objects): ``gc.freeze`` after a
    collection of the start-up's garbage. A full collection, which Python runs when enough
    objects have outlived two younger collections, otherwise scans all of them: 47-67 ms of
    CPU in a robot, planner or coordinator node just built (load 16; 0.01 ms once frozen),
    a pause of every callback of the node (issue 14: in the replayed loop, measured with
    ``gc.callbacks``, full collections of 20-280 ms at start-up; only young ones of < 0.4 ms
    once the samples flowed). Garbage made later is collected as before; start-up objects
    that become cyclic garbage later are not (a bound, not a growth)."""
    gc.collect()
    gc.freeze()


# Modules the core imports inside the functions that use them, so that `inertia_estimation
# estimate` never loads them (docs/throughput.md), while a node's callbacks do use them (the
# human wrench's Cholesky, quaternions of a robot's poses). A node loads them before it
# spins: an import inside a callback holds the whole process for its duration (scipy.stats,
# ~1 s of CPU, was one: the coordinator's first human wrench held its updates, p99 stamp ->
# update 885 ms at 100 Hz, N = 3 in bench_coordinator's 10-s window; 45 ms with it loaded;
# the chi-square quantiles now come from scipy.special's chdtri, imported with the core).
CALLBACK_IMPORTS = ("scipy.linalg.lapack", "scipy.spatial.transform")


def load_callback_imports() -> None:
    """Import ``CALLBACK_IMPORTS`` now (a node at start-up, before it spins)."""
    for module in CALLBACK_IMPORTS:
        importlib.import_module(module)


def run_executable(executable: str, argv: list[str] | None = None, executor: str = "multi") -> int:
    """``main`` of a node executable: --help, rclpy set-up, spin until Ctrl-C, clean shutdown;
    ``executor`` is a key of ``EXECUTORS``."""
    from .nodes import node_class, node_interface

    argv = sys.argv if argv is None else argv
    parser = argparse.ArgumentParser(
        prog=executable,
        description=node_interface(executable).description,
        epilog=parameter_help(executable)
        + f"\n\nexample: ros2 run inertia_estimation_ros {executable} --ros-args "
        "-r __ns:=/robot_1 --params-file config/sim_paper000.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--executor",
        choices=sorted(EXECUTORS),
        default=executor,
        help="rclpy executor the node spins on: multi- or single-threaded, or rclpy's "
        f"experimental events executor; the node is tested on its default (default: {executor})",
    )
    executor = parser.parse_args(remove_ros_args(argv)[1:]).executor
    context = Context()
    rclpy.init(args=argv, context=context, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = node_class(executable)(context=context)
    except ParameterError as error:
        print(f"{executable}: {error}", file=sys.stderr)
        rclpy.shutdown(context=context)
        return 2
    load_callback_imports()
    freeze_start_up_heap()
    return run_until_interrupted(NodeGroup([node], context, executor).start())
