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
import importlib
import mmap
import shutil
import struct
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, lru_cache
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


class BagError(ValueError):
    """A bag cannot be written or read as asked; the message says why and what to do."""


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


def rclpy_class(msgtype: str) -> type:
    """The rclpy message class of ``pkg/msg/Type``."""
    package, _, name = msgtype.split("/")
    try:
        return getattr(importlib.import_module(f"{package}.msg"), name)
    except (ImportError, AttributeError):
        raise BagError(f"no Python message class for {msgtype}: is its package built?") from None


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


@dataclass(frozen=True)
class _Summary:
    """What a bag's metadata says (``_summary``)."""

    topics: dict[str, str]  # topic -> message type
    duration: float  # [s] between the first and the last message
    latched: frozenset[str]
    # a bag of one mcap file with compressed chunks: the file, its chunk index and its
    # connections (``read_topic_records``); None for any other
    mcap: tuple[Path, list, list] | None = None


def _summary(path: str | Path) -> _Summary:
    """A bag's summary, read once per version of its files: opening a bag parses its
    metadata.yaml and the mcap summary (tens of ms), and a command asks several times."""
    path = Path(path)
    files = ()
    if path.is_dir():
        stats = ((f.name, f.stat()) for f in sorted(path.iterdir()) if f.is_file())
        files = tuple((name, st.st_mtime_ns, st.st_size) for name, st in stats)
    return _read_summary(str(path), str(path.resolve()), files)


@lru_cache(maxsize=16)
def _read_summary(path: str, resolved: str, files: tuple) -> _Summary:
    """``_summary`` of the bag at ``path`` (``resolved``) whose files are ``files`` (name,
    modification time, size): the arguments are the cache's key."""
    with open_bag(path) as reader:
        storages = getattr(reader.storage, "storages", [])
        mcap = None
        if len(storages) == 1 and isinstance(storages[0], McapReader):
            if reader.storage.metadata.compression_mode != "message":
                storage = storages[0]
                mcap = (Path(storage.path), list(storage.chunks), list(storage.connections))
        return _Summary(
            {c.topic: c.msgtype for c in reader.connections},
            reader.duration * 1e-9,
            frozenset(c.topic for c in reader.connections if _latched(c)),
            mcap,
        )


def bag_duration(path: str | Path) -> float:
    """Seconds between a bag's first and last message."""
    return _summary(path).duration


def bag_topics(path: str | Path) -> dict[str, str]:
    """topic -> message type of every connection in a bag."""
    return dict(_summary(path).topics)


def latched_topics(path: str | Path) -> set[str]:
    """Topics of a bag whose recorded publishers were all transient-local (replay them latched)."""
    return set(_summary(path).latched)


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


@dataclass(frozen=True)
class TopicRecords:
    """Every message of one topic of a bag, as arrays: log times [ns] in log-time order and
    the CDR bytes of message k at ``data[starts[k] : starts[k] + lengths[k]]``."""

    msgtype: str
    timestamps: np.ndarray  # (n,) int64
    data: np.ndarray  # uint8
    starts: np.ndarray  # (n,) int64
    lengths: np.ndarray  # (n,) int64

    def __len__(self) -> int:
        return len(self.timestamps)

    def message(self, k: int) -> bytes:
        return self.data[self.starts[k] : self.starts[k] + self.lengths[k]].tobytes()

    def rows(self) -> np.ndarray | None:
        """(n, length) bytes of the messages when all have one length, else None."""
        if not len(self) or np.any(self.lengths != self.lengths[0]):
            return None
        length = int(self.lengths[0])
        return self.data.reshape(-1, length)[self.starts // length]


MESSAGE_HEADER = 1 + 8 + 2 + 4 + 8 + 8  # an mcap message record's op, length and fields


def read_topic_records(path: str | Path, topics: Iterable[str]) -> dict[str, TopicRecords] | None:
    """The messages of ``topics`` of a bag of one indexed mcap file, found through its chunk
    and message indexes and sliced out of whole chunks (no per-message Python); None for
    any other bag (sqlite3, several files, no index, unknown compression): read it with
    ``read_bag``. The same messages in the same order per topic as ``read_bag``."""
    from rosbags.rosbag2.storage_mcap import DECOMPRESSORS

    mcap = _summary(path).mcap  # the bag's chunk index, read once
    if mcap is None:
        return None
    file_path, chunks, connections = mcap
    wanted = {c.id: c for c in connections if c.topic in set(topics)}
    if not chunks or any(c.compression not in DECOMPRESSORS for c in chunks):
        return None
    try:
        with file_path.open("rb") as handle:  # mapped, not read: no copy of the whole file
            file = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        return _records(memoryview(file), chunks, wanted, DECOMPRESSORS)
    except (IndexError, ValueError, struct.error):  # a damaged index: read_bag says so
        return None


def _records(
    file: memoryview, chunks: list, wanted: dict, decompressors: dict
) -> dict[str, TopicRecords] | None:
    """``read_topic_records`` of an mcap file's bytes, its chunk index and connections (what
    it returns holds copies: no view of ``file``)."""
    types = {c.topic: c.msgtype for c in wanted.values()}
    if len(types) != len({(c.topic, c.msgtype) for c in wanted.values()}):
        return None  # a topic of two types
    parts: dict[str, list] = {topic: [] for topic in types}
    for chunk in chunks:
        mine = {cid: o for cid, o in chunk.message_index_offsets.items() if cid in wanted}
        if not mine:
            continue
        body = np.frombuffer(_chunk_records(file, chunk, decompressors), np.uint8)
        for cid, offset in mine.items():
            length = struct.unpack_from("<I", file, offset + 9 + 2)[0]
            index = np.frombuffer(file, "<u8", length // 8, offset + 9 + 6).reshape(-1, 2)
            index = index.astype(np.int64)  # (log time, record offset) per message
            sizes = body[index[:, 1, None] + np.arange(1, 9)].view("<u8")[:, 0].astype(np.int64)
            payloads = _payloads(body, index[:, 1] + MESSAGE_HEADER, sizes - (MESSAGE_HEADER - 9))
            parts[wanted[cid].topic].append((index[:, 0], payloads, sizes - (MESSAGE_HEADER - 9)))
    return {topic: _topic_records(types[topic], parts[topic]) for topic in types}


def _payloads(body: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The bytes of the messages at ``starts`` of a chunk's records, one after the other."""
    if np.all(lengths == lengths[0]):  # rows of a strided view: no index per byte
        return np.lib.stride_tricks.sliding_window_view(body, int(lengths[0]))[starts].ravel()
    return np.concatenate([body[a : a + n] for a, n in zip(starts, lengths, strict=True)])


def _chunk_records(file: memoryview, chunk: Any, decompressors: dict) -> memoryview | bytes:
    """The uncompressed records of a chunk (a view of ``file`` if it is not compressed)."""
    start = chunk.chunk_start_offset + 9 + 40 + len(chunk.compression)
    data = file[start : start + chunk.compressed_size]
    return decompressors[chunk.compression](data, chunk.uncompressed_size)


def _topic_records(msgtype: str, parts: list) -> TopicRecords:
    """One topic's messages of every chunk, in log-time order (ties: file order)."""
    if not parts:
        empty = np.zeros(0, np.int64)
        return TopicRecords(msgtype, empty, np.zeros(0, np.uint8), empty, empty)
    times = np.concatenate([t for t, _, _ in parts])
    lengths = np.concatenate([n for _, _, n in parts])
    starts = np.cumsum(lengths) - lengths
    order = np.argsort(times, kind="stable")
    data = np.concatenate([p for _, p, _ in parts])
    return TopicRecords(msgtype, times[order], data, starts[order], lengths[order])


# ----- repair ----------------------------------------------------------------------------------
MCAP_MAGIC = b"\x89MCAP0\r\n"
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
