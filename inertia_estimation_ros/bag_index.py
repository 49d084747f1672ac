"""What a bag of one indexed mcap file holds, read from its metadata.yaml (PyYAML's C loader)
and the mcap summary section (its channels, schemas, statistics and chunk index), without
``rosbags``: the estimate of such a bag reads its grasp messages through the index
(``read_topic_records``) and so needs no rosbags at all (its import and reader's
opening, with ruamel's YAML, cost ~0.1-0.2 s of CPU of a 3-s command).

``indexed_summary`` answers None for any other bag (sqlite3, several files, message
compression, no summary, an unknown record layout): ``bags`` then opens it with rosbags'
reader, which also names what is wrong with a damaged one. ``test_bag_index.py`` checks
the summary against rosbags' reader.
"""

from __future__ import annotations

import importlib
import mmap
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

MCAP_MAGIC = b"\x89MCAP0\r\n"
FOOTER = b"\x02" + struct.pack("<Q", 20)  # the footer record's op and length
SCHEMA, CHANNEL, STATISTICS, CHUNK_INDEX = 0x03, 0x04, 0x0B, 0x08


class BagError(ValueError):
    """A bag cannot be written or read as asked; the message says why and what to do."""


class ChunkIndex(NamedTuple):
    """An mcap chunk index record: where a chunk is and where its message indexes are."""

    message_start_time: int
    message_end_time: int
    chunk_start_offset: int
    message_index_offsets: dict[int, int]  # channel id -> offset of its message index
    compression: str
    compressed_size: int
    uncompressed_size: int


class Channel(NamedTuple):
    """An mcap channel: its id, topic and message type (its schema's name)."""

    id: int
    topic: str
    msgtype: str


@dataclass(frozen=True)
class Summary:
    """What a bag's metadata says (``_summary``)."""

    topics: dict[str, str]  # topic -> message type
    duration: float  # [s] between the first and the last message
    # a bag of one mcap file without message compression: the file, its chunk index and its
    # channels (``read_topic_records``); None for any other
    mcap: tuple[Path, list, list] | None = None
    latched: frozenset[str] | None = None  # None: not read (``bags.latched_topics`` reads it)


def _summary(path: str | Path) -> Summary:
    """A bag's summary, read once per version of its files: a command asks several times."""
    path = Path(path)
    files = ()
    if path.is_dir():
        stats = ((f.name, f.stat()) for f in sorted(path.iterdir()) if f.is_file())
        files = tuple((name, st.st_mtime_ns, st.st_size) for name, st in stats)
    return _read_summary(str(path), str(path.resolve()), files)


@lru_cache(maxsize=16)
def _read_summary(path: str, resolved: str, files: tuple) -> Summary:
    """``_summary`` of the bag at ``path`` (``resolved``) whose files are ``files`` (name,
    modification time, size): the arguments are the cache's key. Through rosbags' reader
    (``bags.rosbags_summary``) when ``indexed_summary`` does not read it."""
    found = indexed_summary(Path(path))
    if found is not None:
        return found
    from .bags import rosbags_summary

    return rosbags_summary(path)


def bag_duration(path: str | Path) -> float:
    """Seconds between a bag's first and last message."""
    return _summary(path).duration


def bag_topics(path: str | Path) -> dict[str, str]:
    """topic -> message type of every connection in a bag."""
    return dict(_summary(path).topics)


def rclpy_class(msgtype: str) -> type:
    """The rclpy message class of ``pkg/msg/Type``."""
    package, _, name = msgtype.split("/")
    try:
        return getattr(importlib.import_module(f"{package}.msg"), name)
    except (ImportError, AttributeError):
        raise BagError(f"no Python message class for {msgtype}: is its package built?") from None


def indexed_summary(path: Path) -> Summary | None:
    """The summary of a bag folder of one mcap file with a summary section, from its
    metadata.yaml and that section; None for any other bag or anything unexpected."""
    import yaml

    try:
        with (path / "metadata.yaml").open("rb") as handle:
            info = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        info = info["rosbag2_bagfile_information"]
        files = info["relative_file_paths"]
        plain = str(info.get("compression_mode") or "").lower() in ("", "none")
        if info["version"] > 9 or info["storage_identifier"] != "mcap" or len(files) != 1:
            return None
        topics = [x["topic_metadata"] for x in info["topics_with_message_count"]]
        if not plain or any(t["serialization_format"] != "cdr" for t in topics):
            return None
        file_path = path / Path(files[0]).name
        found = _mcap_summary(*_head_and_summary(file_path))
    except (OSError, KeyError, TypeError, ValueError, AttributeError, struct.error, yaml.YAMLError):
        return None
    if found is None:
        return None
    chunks, channels, duration = found
    names = {t["name"]: t["type"] for t in topics}
    return Summary(names, duration * 1e-9, (file_path, chunks, channels))


def _head_and_summary(file_path: Path) -> tuple[bytes, bytes]:
    """An mcap file's first bytes (magic and header) and its summary section."""
    with file_path.open("rb") as handle:
        head = handle.read(64)
        handle.seek(-(len(FOOTER) + 20 + len(MCAP_MAGIC)), 2)
        footer_start = handle.tell()
        footer = handle.read()
        if footer[: len(FOOTER)] != FOOTER or footer[-len(MCAP_MAGIC) :] != MCAP_MAGIC:
            raise ValueError("no mcap footer")
        start = struct.unpack_from("<Q", footer, len(FOOTER))[0]
        if not 0 < start <= footer_start:
            raise ValueError("no summary section")
        handle.seek(start)
        return head, handle.read(footer_start - start)


def _mcap_summary(head: bytes, data: bytes) -> tuple[list, list, int] | None:
    """(chunk indexes, channels, duration [ns] as rosbags computes it) of an mcap file's
    first bytes and summary section; None without a ros2 header, statistics or chunk index."""
    if head[:8] != MCAP_MAGIC or head[8] != 0x01 or _string(head, 17)[0] != "ros2":
        return None
    schemas, channels, chunks, statistics = {}, [], [], None
    offset = 0
    while offset + 9 <= len(data):
        op, length = data[offset], struct.unpack_from("<Q", data, offset + 1)[0]
        body = offset + 9
        if op == SCHEMA:
            schemas[struct.unpack_from("<H", data, body)[0]] = _string(data, body + 2)[0]
        elif op == CHANNEL:
            cid, schema = struct.unpack_from("<HH", data, body)
            channels.append((cid, schema, _string(data, body + 4)[0]))
        elif op == CHUNK_INDEX:
            chunks.append(_chunk_index(data, body))
        elif op == STATISTICS:
            count = struct.unpack_from("<Q", data, body)[0]
            start, end = struct.unpack_from("<QQ", data, body + 8 + 2 + 4 * 4)
            statistics = (count, start, end)
        offset = body + length
    if statistics is None or not chunks or any(s not in schemas for _, s, _ in channels):
        return None
    count, start, end = statistics
    found_channels = [Channel(cid, topic, schemas[s]) for cid, s, topic in channels]
    return chunks, found_channels, end - start + 1 if count else 0


def _string(data: bytes, offset: int) -> tuple[str, int]:
    """An mcap string at ``offset`` and the offset after it."""
    n = struct.unpack_from("<I", data, offset)[0]
    return bytes(data[offset + 4 : offset + 4 + n]).decode(), offset + 4 + n


def _chunk_index(data: bytes, offset: int) -> ChunkIndex:
    """The chunk index record whose body starts at ``offset``."""
    start, end, chunk_start, _ = struct.unpack_from("<QQQQ", data, offset)
    offset += 32
    n = struct.unpack_from("<I", data, offset)[0]
    pairs = struct.iter_unpack("<HQ", data[offset + 4 : offset + 4 + n])
    offset += 4 + n + 8  # the map, then the message index length
    compression, offset = _string(data, offset)
    compressed, uncompressed = struct.unpack_from("<QQ", data, offset)
    return ChunkIndex(start, end, chunk_start, dict(pairs), compression, compressed, uncompressed)


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
        """(n, length) bytes of the messages when all have one length, else None (a view of
        ``data`` when they are stored in log-time order: not to be changed in place)."""
        if not len(self) or np.any(self.lengths != self.lengths[0]):
            return None
        length = int(self.lengths[0])
        order = self.starts // length
        if order[0] == 0 and (order[1:] - order[:-1] == 1).all():
            return self.data.reshape(-1, length)
        return self.data.reshape(-1, length)[order]


MESSAGE_HEADER = 1 + 8 + 2 + 4 + 8 + 8  # an mcap message record's op, length and fields


def read_topic_records(path: str | Path, topics: Iterable[str]) -> dict[str, TopicRecords] | None:
    """The messages of ``topics`` of a bag of one indexed mcap file, found through its chunk
    and message indexes and sliced out of whole chunks (no per-message Python); None for
    any other bag (sqlite3, several files, no index, unknown compression): read it with
    ``read_bag``. The same messages in the same order per topic as ``read_bag``."""
    mcap = _summary(path).mcap  # the bag's chunk index, read once
    if mcap is None:
        return None
    file_path, chunks, connections = mcap
    wanted = {c.id: c for c in connections if c.topic in set(topics)}
    decompressors = {c.compression: _decompressor(c.compression) for c in chunks}
    if not chunks or None in decompressors.values():
        return None
    try:
        with file_path.open("rb") as handle:  # mapped, not read: no copy of the whole file
            file = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        return _records(memoryview(file), chunks, wanted, decompressors)
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


def _decompressor(compression: str) -> Callable[[Any, int], Any] | None:
    """(data, uncompressed size) -> uncompressed data for an mcap chunk compression: none
    here, lz4 or zstd by rosbags' decompressors (its dependencies; loaded only for such a
    bag); None for another."""
    if compression == "":
        return lambda data, _: data
    from rosbags.rosbag2.storage_mcap import DECOMPRESSORS

    return DECOMPRESSORS.get(compression)
