"""Node parameters declared once, with descriptors, and validated at start-up.

Each node lists its parameters as ``Param`` entries (name, type, default,
description, range or choices). ``declare`` declares them on the node with a
``ParameterDescriptor`` (so ``ros2 param describe`` shows the description and
range), reads the values (from YAML overrides or defaults) and validates them; a
bad value raises ``ParameterError`` naming the node, the parameter, the value
and what is allowed. The same lists generate the README's node tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import (
    InvalidParameterTypeException,
    InvalidParameterValueException,
    ParameterUninitializedException,
)
from rclpy.node import Node
from rclpy.parameter import Parameter

TYPES = {
    "bool": Parameter.Type.BOOL,
    "int": Parameter.Type.INTEGER,
    "double": Parameter.Type.DOUBLE,
    "string": Parameter.Type.STRING,
    "double_array": Parameter.Type.DOUBLE_ARRAY,
    "string_array": Parameter.Type.STRING_ARRAY,
    "int_array": Parameter.Type.INTEGER_ARRAY,
}


class ParameterError(ValueError):
    """A node parameter has a value the node cannot work with."""


@dataclass(frozen=True)
class Param:
    """One declared parameter. ``bounds`` applies to numbers and to each element of arrays."""

    name: str
    type: str
    default: object
    description: str
    bounds: tuple[float, float] | None = None
    choices: tuple[str, ...] | None = None
    length: int | None = None  # exact array length, if fixed
    nonempty: bool = False  # arrays and strings must not be empty
    read_only: bool = True

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"Param {self.name}: unknown type {self.type!r}")

    def descriptor(self) -> ParameterDescriptor:
        descriptor = ParameterDescriptor(
            name=self.name,
            type=TYPES[self.type].value,
            description=self.description,
            read_only=self.read_only,
            additional_constraints=self.constraint_text(),
        )
        if self.bounds is not None and self.type == "double":
            descriptor.floating_point_range = [
                FloatingPointRange(from_value=self.bounds[0], to_value=self.bounds[1], step=0.0)
            ]
        if self.bounds is not None and self.type == "int":
            descriptor.integer_range = [
                IntegerRange(from_value=int(self.bounds[0]), to_value=int(self.bounds[1]), step=1)
            ]
        return descriptor

    def constraint_text(self) -> str:
        """What values are allowed, in words (for descriptors, errors and the README)."""
        parts = []
        if self.bounds is not None:
            parts.append(f"in [{self.bounds[0]:g}, {self.bounds[1]:g}]")
        if self.choices:
            parts.append("one of " + ", ".join(self.choices))
        if self.length is not None:
            parts.append(f"{self.length} elements")
        if self.nonempty:
            parts.append("not empty")
        return "; ".join(parts)

    def problem(self, value: object) -> str | None:
        """Why value is not allowed, or None if it is."""
        items = value if isinstance(value, list | tuple) else [value]
        if self.nonempty and len(items) == 0 or self.nonempty and value == "":
            return "must not be empty"
        if self.length is not None and len(items) != self.length:
            return f"must have {self.length} elements, has {len(items)}"
        for item in items:
            if isinstance(item, float) and not math.isfinite(item):
                return "must be finite"
            if self.bounds is not None and not self.bounds[0] <= item <= self.bounds[1]:
                return f"must be in [{self.bounds[0]:g}, {self.bounds[1]:g}]"
            if self.choices is not None and item not in self.choices:
                return "must be one of " + ", ".join(self.choices)
        return None


def declare(node: Node, params: list[Param]) -> SimpleNamespace:
    """Declare, read and validate params on node; returns their values as attributes."""
    values = {}
    for param in params:
        default = param.default
        if isinstance(default, list | tuple) and len(default) == 0:
            default = TYPES[param.type]  # an empty array has no inferable type
        try:
            node.declare_parameter(param.name, default, param.descriptor())
        except (InvalidParameterValueException, InvalidParameterTypeException) as error:
            reason = f"is rejected: {error}; expected a {param.type} {param.constraint_text()}"
            raise ParameterError(_message(node, param, reason)) from None
        try:
            value = node.get_parameter(param.name).value
        except ParameterUninitializedException:
            value = []  # declared by type only: an empty array nobody overrode
        if isinstance(value, list | tuple):
            value = list(value)
        reason = param.problem(value)
        if reason:
            raise ParameterError(_message(node, param, f"= {value!r} {reason}"))
        values[param.name] = value
    return SimpleNamespace(**values)


def _message(node: Node, param: Param, reason: str) -> str:
    return (
        f"parameter '{node.get_fully_qualified_name()}.{param.name}' {reason} ({param.description})"
    )
