"""``bench_collaboration.py --latency --replay --trace``: loaded into every process of the loop
(this folder first on ``PYTHONPATH``) while ``LOOP_TRACE`` names a folder. Every
``Publisher.publish`` and every subscription callback is timed on the wall clock
(``time.time_ns``, one clock for every process) with the message's stamp (its bytes' or its
header's), and written at the process's exit to ``LOOP_TRACE/<script>_<namespace>_<pid>.txt``:
one line per event, ``p|s topic stamp_ns start_ns end_ns``. ``trace_report.py`` matches them
by stamp across the processes. rclpy's ``MessageInfo`` (with the receive time) is not used:
its callbacks fail on the events executor (``SystemError``)."""

from __future__ import annotations

import os

if os.environ.get("LOOP_TRACE"):
    import atexit
    import inspect
    import struct
    import sys
    import time

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

    def _write() -> None:
        namespace = next((a[6:].strip("/") for a in sys.argv if a.startswith("__ns:=")), "")
        script = os.path.basename(sys.argv[0]).removesuffix(".py") if sys.argv else "python"
        path = os.path.join(
            os.environ["LOOP_TRACE"], f"{script}_{namespace or 'root'}_{os.getpid()}.txt"
        )
        with open(path, "w") as out:
            out.writelines(" ".join(map(str, event)) + "\n" for event in _events)

    atexit.register(_write)
