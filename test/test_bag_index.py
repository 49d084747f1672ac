"""``bag_index`` reads a bag of one indexed mcap file without rosbags: its topics, duration,
chunk index and channels are those of rosbags' reader (``bags.rosbags_summary``); any other
bag (sqlite3, a damaged folder) goes through the reader, with its errors; compressed chunks
are undone by rosbags' own decompressors."""

from __future__ import annotations

import pytest
from rosbags.rosbag2.storage_mcap import DECOMPRESSORS

from inertia_estimation_ros import bag_index, bags
from inertia_estimation_ros.msg import PayloadEstimate

TYPE = "inertia_estimation_ros/msg/PayloadEstimate"
STRING = "std_msgs/msg/String"


def write(path, storage="mcap"):
    """Three topics of two types, one latched, interleaved over several chunks' worth."""
    from std_msgs.msg import String

    with bags.BagWriter(path, storage, latched=["/description"]) as writer:
        writer.write("/description", STRING, 5, String(data="x" * 1000))
        for k in range(3000):
            message = PayloadEstimate(reference_robot_id=f"robot_{k}")
            writer.write("/a/estimate", TYPE, 10**7 * k + 7, message)
            if k % 3 == 0:
                writer.write("/b/estimate", TYPE, 10**7 * k + 9, message)
    return path


def chunk_fields(chunk):
    names = ("message_start_time", "message_end_time", "chunk_start_offset")
    names += ("message_index_offsets", "compression", "compressed_size", "uncompressed_size")
    return tuple(getattr(chunk, name) for name in names)


def test_an_indexed_mcap_bag_reads_as_rosbags_reads_it(tmp_path):
    bag = write(tmp_path / "bag")
    mine, theirs = bag_index.indexed_summary(bag), bags.rosbags_summary(bag)
    assert mine is not None
    assert list(mine.topics.items()) == list(theirs.topics.items())
    assert mine.duration == theirs.duration == (10**7 * 2999 + 7 - 5 + 1) * 1e-9
    assert mine.mcap[0] == theirs.mcap[0]
    assert len(mine.mcap[1]) == len(theirs.mcap[1]) > 1
    for a, b in zip(mine.mcap[1], theirs.mcap[1], strict=True):
        assert chunk_fields(a) == chunk_fields(b)
    ours = [(c.id, c.topic, c.msgtype) for c in mine.mcap[2]]
    assert ours == [(c.id, c.topic, c.msgtype) for c in theirs.mcap[2]]
    assert bags.bag_topics(bag) == theirs.topics
    assert bags.latched_topics(bag) == {"/description"}  # through the reader


def test_other_bags_go_through_the_reader(tmp_path):
    bag = write(tmp_path / "bag", storage="sqlite3")
    assert bag_index.indexed_summary(bag) is None
    assert bags.bag_topics(bag) == bags.rosbags_summary(bag).topics
    assert bag_index.read_topic_records(bag, ["/a/estimate"]) is None
    (tmp_path / "empty").mkdir()
    with pytest.raises(bags.BagError, match="no metadata.yaml"):
        bags.bag_topics(tmp_path / "empty")
    with pytest.raises(bags.BagError, match="does not exist"):
        bags.bag_topics(tmp_path / "nothing")


def test_compressed_chunks_are_undone_by_rosbags_decompressors():
    data = bytes(range(256)) * 64
    assert bag_index._decompressor("")(data, len(data)) == data
    assert bag_index._decompressor("lz4") is DECOMPRESSORS["lz4"]
    assert bag_index._decompressor("zstd") is DECOMPRESSORS["zstd"]
    assert bag_index._decompressor("brotli") is None
