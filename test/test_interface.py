"""ros.interface: node descriptions render to the node tables of docs/nodes.md."""

from __future__ import annotations

from inertia_estimation_ros.ros.interface import NodeInterface, Service, Topic, markdown
from inertia_estimation_ros.ros.parameters import Param

EXAMPLE = NodeInterface(
    executable="example_node",
    description="An example.",
    publishes=[Topic("out", "std_msgs/msg/String", "latched", "the | result")],
    subscribes=[Topic("{robot}/in", "std_msgs/msg/String", "sensor", "inputs")],
    services=[Service("~/reset", "std_srvs/srv/Trigger", "start over")],
    parameters=[Param("rate", "double", 100.0, "rate [Hz]", bounds=(1.0, 500.0))],
)


def test_markdown_lists_every_topic_service_and_parameter():
    text = markdown(EXAMPLE)
    assert text.startswith("### `example_node`\n\nAn example.")
    assert "| pub | `out` | `std_msgs/msg/String` | latched | the \\| result |" in text
    assert "| sub | `{robot}/in` | `std_msgs/msg/String` | sensor | inputs |" in text
    assert "| `~/reset` | `std_srvs/srv/Trigger` | start over |" in text
    assert "| `rate` | double | `100.0` | in [1, 500] | rate [Hz] |" in text
