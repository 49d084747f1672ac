"""What each node publishes, subscribes, serves and accepts, declared once.

Every node module defines a ``NodeInterface``. The README's node tables are
generated from these (``markdown``), and the tests check both that the README is
current and that a running node really has exactly these topics and services.
Topic names are relative to the node's namespace; ``{robot}`` stands for each id
of the node's ``robots`` parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from .parameters import Param

# Streams of samples: best effort, like sensor drivers (REP-2003); a late sample is useless.
SENSOR_QOS = QoSProfile(
    depth=qos_profile_sensor_data.depth * 10,
    reliability=ReliabilityPolicy.BEST_EFFORT,
    durability=DurabilityPolicy.VOLATILE,
)
# Inputs of which only the newest matters (poses a reference or a wrench is stamped with):
# REP-2003's sensor-data depth of 5. A callback takes one message per queue and executor turn,
# so on a saturated executor a backlog, once formed, stays and its depth is the lag (50 deep at
# 100 Hz: 0.5 s behind /clock in the one-process aerial graph; 5 deep: at most 0.1 s).
NEWEST_QOS = QoSProfile(
    depth=qos_profile_sensor_data.depth,
    reliability=SENSOR_QOS.reliability,
    durability=SENSOR_QOS.durability,
)
# State that late joiners need: the last message is kept for them.
LATCHED_QOS = QoSProfile(
    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
)
RELIABLE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
QOS_NAMES = {"sensor": SENSOR_QOS, "latched": LATCHED_QOS, "reliable": RELIABLE_QOS}


@dataclass(frozen=True)
class Topic:
    name: str
    type: str  # e.g. "inertia_estimation_ros/msg/GraspState"
    qos: str  # a key of QOS_NAMES
    description: str


@dataclass(frozen=True)
class Service:
    name: str
    type: str
    description: str


@dataclass(frozen=True)
class NodeInterface:
    executable: str
    description: str
    publishes: list[Topic] = field(default_factory=list)
    subscribes: list[Topic] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    parameters: list[Param] = field(default_factory=list)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _default(param: Param) -> str:
    return "`" + repr(param.default).replace("'", '"') + "`"


def markdown(interface: NodeInterface) -> str:
    """The README section of one node: its topics, services and parameters as tables."""
    lines = [f"### `{interface.executable}`", "", interface.description, ""]
    if interface.publishes or interface.subscribes:
        lines += ["| Direction | Topic | Type | QoS | Description |", "|---|---|---|---|---|"]
        for direction, topics in (("pub", interface.publishes), ("sub", interface.subscribes)):
            lines += [
                f"| {direction} | `{t.name}` | `{t.type}` | {t.qos} | {_cell(t.description)} |"
                for t in topics
            ]
        lines.append("")
    if interface.services:
        lines += ["| Service | Type | Description |", "|---|---|---|"]
        lines += [
            f"| `{s.name}` | `{s.type}` | {_cell(s.description)} |" for s in interface.services
        ]
        lines.append("")
    if interface.parameters:
        lines += ["| Parameter | Type | Default | Allowed | Description |", "|---|---|---|---|---|"]
        lines += [
            f"| `{p.name}` | {p.type} | {_default(p)} | {_cell(p.constraint_text())} "
            f"| {_cell(p.description)} |"
            for p in interface.parameters
        ]
        lines.append("")
    return "\n".join(lines)
