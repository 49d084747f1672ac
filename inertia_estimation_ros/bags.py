"""rosbag2 files with the ``rosbags`` library: write and read any topics of known types.

The type store is ROS 2 Kilted's standard messages plus this package's ``msg/*.msg``,
read from the files themselves, so every connection of a written bag embeds its
message definition and type hash (``ros2 bag play`` needs no installed package to
decode, and replays on a ROS 2 machine). Storage: ``mcap`` (default) or ``sqlite3``.

Messages to write may be rosbags objects (built from ``typestore().types``), rclpy
messages, or already-serialized CDR bytes. Topics named ``latched`` are recorded as offered
transient-local (depth 1), so ``ros2 bag play`` republishes them latched, as
``robot_description`` must be. Reading yields ``BagMessage`` in time
order, deserialized as rosbags objects, rclpy objects, or left raw.
"""

from __future__ import annotations

import heapq
import shutil
import struct
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from rosbags.interfaces import (
    Nodetype,
    Qos,
    QosDurability,
    QosHistory,
    QosLiveliness,
    QosReliability,
    QosTime,
)
from rosbags.rosbag2 import Reader, ReaderError, StoragePlugin, Writer
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.typesys import Stores, get_types_from_msg, get_typestore
from rosbags.typesys.store import Typestore

from .bag_index import (  # noqa: F401  (bag_duration, bag_topics, rclpy_class: bags' API too)
    MCAP_MAGIC,
    BagError,
    Summary,
    _summary,
    bag_duration,
    bag_topics,
    rclpy_class,
)

PACKAGE = "inertia_estimation_ros"
STORAGES = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}
BAG_VERSION = 9  # rosbag2 metadata version of Jazzy and Kilted
DESERIALIZE_AS = ("rosbags", "rclpy", "raw")
_INFINITE = QosTime(sec=9223372036, nsec=854775807)  # rosbag2's "infinite" duration
LATCHED_QOS = Qos(
    history=QosHistory.KEEP_LAST,
    depth=1,
    reliability=QosReliability.RELIABLE,
    durability=QosDurability.TRANSIENT_LOCAL,
    deadline=_INFINITE,
    lifespan=_INFINITE,
    liveliness=QosLiveliness.AUTOMATIC,
    liveliness_lease_duration=_INFINITE,
    avoid_ros_namespace_conventions=False,
)


def message_directory() -> Path:
    """This package's ``msg/`` folder: the source tree's, else the installed share/ copy."""
    for candidate in (
        Path(__file__).resolve().parents[1] / "msg",
        Path(sys.prefix) / "share" / PACKAGE / "msg",
    ):
        if any(candidate.glob("*.msg")):
            return candidate
    raise BagError(f"cannot find {PACKAGE}'s msg/*.msg files: run `make setup`")


@cache
def typestore() -> Typestore:
    """ROS 2 Kilted's message types plus this package's, from their .msg definitions."""
    store = get_typestore(Stores.ROS2_KILTED)
    types = {}
    for path in sorted(message_directory().glob("*.msg")):
        types.update(get_types_from_msg(path.read_text(), f"{PACKAGE}/msg/{path.stem}"))
    store.register(types)
    return store


def rosbags_message(msg: Any, msgtype: str) -> Any:
    """The rosbags object with the field values of an rclpy message of type ``msgtype``."""
    store = typestore()
    _, fields = store.fielddefs[msgtype]
    return store.types[msgtype](
        **{name: _field(getattr(msg, name), *kind) for name, kind in fields}
    )


def _field(value: Any, node: Nodetype, detail: Any) -> Any:
    if node == Nodetype.BASE:
        return value
    if node == Nodetype.NAME:
        return rosbags_message(value, detail)
    (item_node, item_detail), _ = detail
    if item_node == Nodetype.BASE and item_detail[0] != "string":
        return np.asarray(value, dtype=item_detail[0])
    return [_field(item, item_node, item_detail) for item in value]


def serialize(msg: Any, msgtype: str) -> bytes:
    """CDR bytes of a rosbags message, an rclpy message, or bytes (passed through).

    rclpy messages are encoded by rosbags too: ``rclpy.serialization`` output carries
    uninitialized padding and trailing bytes, so equal messages would not give equal bytes."""
    if isinstance(msg, (bytes, bytearray, memoryview)):
        return bytes(msg)
    if hasattr(msg, "__msgtype__"):
        if msg.__msgtype__ != msgtype:
            raise BagError(f"a {msg.__msgtype__} message cannot be written as {msgtype}")
        return bytes(typestore().serialize_cdr(msg, msgtype))
    if type(msg) is not rclpy_class(msgtype):
        raise BagError(f"a {type(msg).__name__} message cannot be written as {msgtype}")
    return bytes(typestore().serialize_cdr(rosbags_message(msg, msgtype), msgtype))


class BagWriter:
    """A rosbag2 being written: ``write(topic, msgtype, timestamp_ns, msg)`` in any topic order.

    Use as a context manager. Connections are created on first use of a topic, with the
    message definition embedded; a topic keeps its first type. Topics in ``latched`` are
    offered transient-local.
    """

    def __init__(self, path: str | Path, storage: str = "mcap", latched: Iterable[str] = ()):
        if storage not in STORAGES:
            raise BagError(f"storage {storage!r} is not one of {list(STORAGES)}")
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f"{self.path} exists: rosbag2 writes a new folder; remove it first")
        self.storage = storage
        self._writer = Writer(self.path, version=BAG_VERSION, storage_plugin=STORAGES[storage])
        self._connections: dict[str, Any] = {}
        self._latched = set(latched)

    def __enter__(self) -> BagWriter:
        self._writer.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self._writer.close()

    def flush(self) -> None:
        """Hand every message written so far to the operating system, where a writer killed
        later (SIGKILL) leaves it for ``repair_bag``: mcap closes its open chunk, sqlite3
        commits."""
        storage = self._writer.storage
        if storage is None:
            return
        if STORAGES[self.storage] == StoragePlugin.MCAP:
            if storage.chunk.bio.tell():
                storage.close_chunk()
                storage.bio.flush()
        else:
            storage.conn.commit()

    def write(
        self, topic: str, msgtype: str, timestamp_ns: int, msg: Any, latched: bool = False
    ) -> None:
        """Write one message; ``latched`` (or the constructor's list) offers its topic
        transient-local, decided at the topic's first message."""
        connection = self._connections.get(topic)
        if connection is None:
            if msgtype not in typestore().types:
                raise BagError(f"{topic}: unknown message type {msgtype}")
            qos = [LATCHED_QOS] if latched or topic in self._latched else []
            connection = self._writer.add_connection(
                topic, msgtype, typestore=typestore(), offered_qos_profiles=qos
            )
            self._connections[topic] = connection
        elif connection.msgtype != msgtype:
            raise BagError(f"{topic} carries {connection.msgtype}, not {msgtype}")
        self._writer.write(connection, int(timestamp_ns), serialize(msg, msgtype))


def write_bag(
    path: str | Path,
    streams: Iterable[Iterable[tuple[str, str, int, Any]]],
    storage: str = "mcap",
    latched: Iterable[str] = (),
) -> Path:
    """Write time-sorted streams of (topic, msgtype, timestamp_ns, msg), merged in time order;
    ``latched`` topics are offered transient-local."""
    with BagWriter(path, storage, latched) as writer:
        for topic, msgtype, stamp, msg in heapq.merge(*streams, key=lambda item: item[2]):
            writer.write(topic, msgtype, stamp, msg)
    return Path(path)


@dataclass(frozen=True)
class BagMessage:
    topic: str
    msgtype: str
    timestamp: int  # log time [ns]
    message: Any  # rosbags object, rclpy object, or CDR bytes


@contextmanager
def open_bag(path: str | Path) -> Iterator[Reader]:
    """A rosbags ``Reader`` of a bag folder; BagError says what is wrong and what to do when
    it is no bag, a damaged one, or one whose writer did not finish."""
    path = Path(path)
    if not path.exists():
        raise BagError(f"{path} does not exist")
    if not path.is_dir():
        raise BagError(f"{path} is not a bag: a rosbag2 bag is a folder with metadata.yaml")
    mcaps = sorted(path.glob("*.mcap"))
    if not (path / "metadata.yaml").exists():
        hint = (
            f"its writer was stopped before it finished: run `inertia_estimation bag-repair "
            f"{path}` to recover the messages"
            if mcaps
            else "is it a bag folder?"
        )
        raise BagError(f"{path} has no metadata.yaml: {hint}")
    try:
        reader = Reader(path)
        reader.open()
    except (ReaderError, KeyError, TypeError, ValueError) as error:
        hint = f" run `inertia_estimation bag-repair {path}`" if mcaps else ""
        raise BagError(f"{path} cannot be read ({error or type(error).__name__});{hint}") from None
    try:
        yield reader
    except ReaderError as error:
        raise BagError(
            f"{path} is damaged ({error}): run `inertia_estimation bag-repair {path}`"
        ) from None
    finally:
        reader.close()


def rosbags_summary(path: str | Path) -> Summary:
    """A bag's summary through rosbags' reader (any bag ``bag_index`` does not read itself),
    with its latched topics; BagError says what is wrong with a bag that does not open."""
    with open_bag(path) as reader:
        storages = getattr(reader.storage, "storages", [])
        mcap = None
        if len(storages) == 1 and isinstance(storages[0], McapReader):
            if reader.storage.metadata.compression_mode != "message":
                storage = storages[0]
                mcap = (Path(storage.path), list(storage.chunks), list(storage.connections))
        return Summary(
            {c.topic: c.msgtype for c in reader.connections},
            reader.duration * 1e-9,
            mcap,
            frozenset(c.topic for c in reader.connections if _latched(c)),
        )


def latched_topics(path: str | Path) -> set[str]:
    """Topics of a bag whose recorded publishers were all transient-local (replay them latched)."""
    latched = _summary(path).latched
    return set(latched if latched is not None else rosbags_summary(path).latched)


def _latched(connection: Any) -> bool:
    """Whether every recorded publisher of a connection was transient-local."""
    offered = connection.ext.offered_qos_profiles
    return bool(offered) and all(q.durability == QosDurability.TRANSIENT_LOCAL for q in offered)


def read_bag(
    path: str | Path, topics: Iterable[str] | None = None, deserialize: str = "rosbags"
) -> Iterator[BagMessage]:
    """Messages of a bag (optionally only ``topics``) in log-time order.

    ``deserialize``: ``rosbags`` (this module's type store, no ROS needed), ``rclpy`` (the
    generated message classes), or ``raw`` (CDR bytes).
    """
    if deserialize not in DESERIALIZE_AS:
        raise BagError(f"deserialize={deserialize!r} is not one of {list(DESERIALIZE_AS)}")
    if deserialize == "rclpy":
        from rclpy.serialization import deserialize_message
    store = typestore() if deserialize == "rosbags" else None  # half a second to build
    with open_bag(path) as reader:
        connections = reader.connections
        if topics is not None:
            topics = set(topics)
            connections = [c for c in connections if c.topic in topics]
            missing = topics - {c.topic for c in connections}
            if missing:
                raise BagError(f"{path} has no topics {sorted(missing)}")
            if not connections:
                return
        for connection, stamp, raw in reader.messages(connections=connections):
            if deserialize == "rosbags":
                message = store.deserialize_cdr(raw, connection.msgtype)
            elif deserialize == "rclpy":
                message = deserialize_message(raw, rclpy_class(connection.msgtype))
            else:
                message = bytes(raw)
            yield BagMessage(connection.topic, connection.msgtype, stamp, message)


# ----- repair ----------------------------------------------------------------------------------
_MCAP_FOOTER = b"\x02" + struct.pack("<QQQI", 20, 0, 0, 0) + MCAP_MAGIC


@dataclass(frozen=True)
class RepairResult:
    """What ``repair_bag`` did: messages recovered per topic, the bytes of the damaged file
    that held no complete record, and where the damaged folder was kept."""

    counts: dict[str, int]
    lost_bytes: int
    backup: Path


def _complete_records_end(data: bytes) -> int:
    """Offset after the last complete top-level MCAP record (op, uint64 length, body)."""
    end = offset = len(MCAP_MAGIC)
    while offset + 9 <= len(data):
        op, length = data[offset], struct.unpack_from("<Q", data, offset + 1)[0]
        if op == 0x02 or offset + 9 + length > len(data):  # footer, or cut off
            break
        offset += 9 + length
        end = offset
    return end


def repair_bag(path: str | Path) -> RepairResult:
    """Recover every message of an mcap bag whose writer was killed or whose file was cut off
    (no metadata.yaml, no mcap summary): the complete records are read sequentially and
    written to a new bag at ``path``; the damaged folder is kept as ``<path>.damaged``."""
    path = Path(path)
    mcaps = sorted(path.glob("*.mcap")) if path.is_dir() else []
    if len(mcaps) != 1:
        raise BagError(f"{path} is not a folder with one .mcap file: nothing to repair")
    data = mcaps[0].read_bytes()
    if not data.startswith(MCAP_MAGIC):
        raise BagError(f"{mcaps[0]} is not an mcap file (its first bytes are not MCAP's)")
    end = _complete_records_end(data)
    backup = path.with_name(path.name + ".damaged")
    if backup.exists():
        raise BagError(f"{backup} exists: move it away, then repair again")
    scratch = path.with_name(path.name + ".repairing")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    salvage = scratch / "salvage.mcap"
    salvage.write_bytes(data[:end] + _MCAP_FOOTER)
    counts = _rewrite(salvage, scratch / "bag")
    path.rename(backup)
    (scratch / "bag").rename(path)
    shutil.rmtree(scratch)
    return RepairResult(counts, len(data) - end, backup)


def _rewrite(salvage: Path, out: Path) -> dict[str, int]:
    """Write the messages of a sequentially readable mcap file into a new bag."""
    reader = McapReader(salvage)
    try:
        reader.open()
    except ReaderError as error:
        raise BagError(f"nothing recoverable: {error}") from None
    counts: dict[str, int] = {}
    try:
        with BagWriter(out) as writer:
            for connection, stamp, raw in reader.messages_scan(reader.connections):
                latched = _latched(connection)
                writer.write(connection.topic, connection.msgtype, stamp, raw, latched=latched)
                counts[connection.topic] = counts.get(connection.topic, 0) + 1
    except ReaderError as error:
        raise BagError(f"the salvaged records do not read: {error}") from None
    finally:
        reader.close()
    return counts
