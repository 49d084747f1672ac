"""``bench_collaboration.py --latency --replay --trace``: loaded into every process of the loop
(this folder first on ``PYTHONPATH``) while ``LOOP_TRACE`` names a folder. Every
``Publisher.publish`` and every subscription callback is timed on the wall clock
(``time.time_ns``, one clock for every process) with the message's stamp (its bytes' or its
header's), and written at the process's exit to ``LOOP_TRACE/<script>_<namespace>_<pid>.txt``:
one line per event, ``p|s topic stamp_ns start_ns end_ns``; also every garbage collection
(``g genN thread start_ns end_ns``) and, in the coordinator, the worker's and the solver
courier's operations (``w name thread start_ns end_ns``). ``trace_report.py`` matches them
by stamp across the processes. rclpy's ``MessageInfo`` (with the receive time) is not used:
its callbacks fail on the events executor (``SystemError``)."""

from __future__ import annotations

import os

if os.environ.get("LOOP_TRACE"):
    import atexit
    import functools
    import gc
    import importlib.abc
    import inspect
    import struct
    import sys
    import threading
    import time
    from collections.abc import Callable

    import rclpy.node
    import rclpy.publisher

    _events: list[tuple[str, str, int, int, int]] = []
    _STAMP = struct.Struct("<iI")  # CDR little endian, after the 4-byte encapsulation

    def _stamp(message: object) -> int:
        if isinstance(message, bytes | bytearray):
            sec, nanosec = _STAMP.unpack_from(message, 4) if len(message) >= 12 else (0, -1)
            return sec * 1_000_000_000 + nanosec
        header = getattr(message, "header", None)
        return -1 if header is None else header.stamp.sec * 1_000_000_000 + header.stamp.nanosec

    _publish = rclpy.publisher.Publisher.publish

    def publish(self, message):
        start = time.time_ns()
        try:
            return _publish(self, message)
        finally:
            _events.append(("p", self.topic_name, _stamp(message), start, time.time_ns()))

    _subscribe = rclpy.node.Node.create_subscription

    def create_subscription(self, msg_type, topic, callback, qos_profile, **kwargs):
        try:  # a callback that takes the MessageInfo too: left as it is
            inspect.signature(callback).bind(None, None)
            return _subscribe(self, msg_type, topic, callback, qos_profile, **kwargs)
        except TypeError:
            name = self.resolve_topic_name(topic)

        def timed(message, _callback=callback):
            start = time.time_ns()
            try:
                return _callback(message)
            finally:
                _events.append(("s", name, _stamp(message), start, time.time_ns()))

        return _subscribe(self, msg_type, topic, timed, qos_profile, **kwargs)

    rclpy.publisher.Publisher.publish = publish
    rclpy.node.Node.create_subscription = create_subscription

    # What else holds the interpreter: the garbage collector's collections ("g", the
    # generation) and the coordinator's other threads' operations ("w": the worker's cycle and
    # its parts, the solver's courier), each with the thread's id in the stamp's place.
    _collecting: dict[int, int] = {}

    def _collected(phase: str, info: dict) -> None:
        thread = threading.get_native_id()
        if phase == "start":
            _collecting[thread] = time.time_ns()
        elif thread in _collecting:
            start = _collecting.pop(thread)
            _events.append(("g", f"gen{info['generation']}", thread, start, time.time_ns()))

    gc.callbacks.append(_collected)

    def _timed(name: str, function: Callable) -> Callable:
        @functools.wraps(function)
        def run(*args: object, **kwargs: object) -> object:
            start = time.time_ns()
            try:
                return function(*args, **kwargs)
            finally:
                end = time.time_ns()
                _events.append(("w", name, threading.get_native_id(), start, end))

        return run

    _PROBES = {  # module -> its functions and methods timed as "w" events
        "inertia_estimation_ros.ros.nodes.coordinator_node": (
            "CoordinatorNode._step",
            "CoordinatorNode._collect_solve",
            "CoordinatorNode._report_solver_restarts",
            "CoordinatorNode._start_command_or_solve",
            "CoordinatorNode._publish_diagnostics",
            "CoordinatorNode._publish",
            "push_raw",
        ),
        "inertia_estimation_ros.core.team_pipeline": (
            "TeamPipeline.process",
            "TeamPipeline.start_solve",
            "TeamPipeline.finish_solve",
        ),
        "inertia_estimation_ros.ros.external_wrench_output": ("ExternalWrenchOutput.follow",),
        "inertia_estimation_ros.ros.wrench_checks": ("WrenchChecks.status",),
        "inertia_estimation_ros.core.solver_process": (
            "SolverProcess.submit",
            "SolverProcess._answer",
            "SolverProcess._solve",
        ),
    }

    def _probe(module: object, names: tuple[str, ...]) -> None:
        for name in names:
            owner_name, _, attribute = name.rpartition(".")
            owner = getattr(module, owner_name) if owner_name else module
            setattr(owner, attribute, _timed(name, getattr(owner, attribute)))

    class _ProbeFinder(importlib.abc.MetaPathFinder):
        """Times ``_PROBES``' functions once their module has run (the nodes import them
        after this file)."""

        def find_spec(self, name: str, path: object, target: object = None) -> object:
            if name not in _PROBES:
                return None
            finders = [f for f in sys.meta_path if f is not self and hasattr(f, "find_spec")]
            spec = next(filter(None, (f.find_spec(name, path, target) for f in finders)), None)
            if spec is None or spec.loader is None:
                return spec
            exec_module = spec.loader.exec_module

            def run(module: object) -> None:
                exec_module(module)
                _probe(module, _PROBES[name])

            spec.loader.exec_module = run
            return spec

    sys.meta_path.insert(0, _ProbeFinder())

    def _write() -> None:
        namespace = next((a[6:].strip("/") for a in sys.argv if a.startswith("__ns:=")), "")
        script = os.path.basename(sys.argv[0]).removesuffix(".py") if sys.argv else "python"
        path = os.path.join(
            os.environ["LOOP_TRACE"], f"{script}_{namespace or 'root'}_{os.getpid()}.txt"
        )
        with open(path, "w") as out:
            out.writelines(" ".join(map(str, event)) + "\n" for event in _events)

    atexit.register(_write)
