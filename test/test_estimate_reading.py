"""``estimate`` reads a bag's ground truth and live estimates through the mcap index
(``bag_index.read_topic_records``) and gets the messages rosbags' reader gives: the first truth,
every live estimate in log-time order; other bags go through the reader."""

from __future__ import annotations

from inertia_estimation_ros.bags import BagWriter, read_bag
from inertia_estimation_ros.commands import estimate
from inertia_estimation_ros.msg import PayloadEstimate

TYPE = "inertia_estimation_ros/msg/PayloadEstimate"


def payload_estimate(k: int) -> PayloadEstimate:
    message = PayloadEstimate()
    message.header.stamp.sec = k
    message.reference_robot_id = f"robot_{k}"
    return message


def write_bag(path):
    with BagWriter(path) as writer:
        for k in range(5):  # interleaved, the truth twice
            if k in (1, 3):
                writer.write(estimate.TRUTH_TOPIC, TYPE, 10**9 * k, payload_estimate(10 + k))
            writer.write(estimate.LIVE_TOPIC, TYPE, 10**9 * k + 1, payload_estimate(k))
    return path


def by_reader(path):
    messages = list(read_bag(path, [estimate.TRUTH_TOPIC, estimate.LIVE_TOPIC], "rclpy"))
    truth = [m.message for m in messages if m.topic == estimate.TRUTH_TOPIC]
    return truth[0], [m.message for m in messages if m.topic == estimate.LIVE_TOPIC]


def test_truth_and_live_estimates_through_the_index_are_the_readers(tmp_path):
    bag = write_bag(tmp_path / "bag")
    assert estimate._indexed_messages(bag, [estimate.TRUTH_TOPIC]) is not None  # the index
    truth, live = estimate.recorded_estimates(bag)
    expected_truth, expected_live = by_reader(bag)
    assert truth == expected_truth and truth.reference_robot_id == "robot_11"
    assert live == expected_live and [m.header.stamp.sec for m in live] == list(range(5))


def test_a_bag_without_them_reads_nothing(tmp_path):
    with BagWriter(tmp_path / "bag") as writer:
        writer.write("/other", TYPE, 1, payload_estimate(0))
    assert estimate.recorded_estimates(tmp_path / "bag") == (None, [])
