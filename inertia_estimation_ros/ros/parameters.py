"""Node parameters declared once, with descriptors, validated at start-up and at run time.

Each node lists its parameters as ``Param`` entries (name, type, default,
description, range or choices, writable or read-only). ``declare`` declares them on the node
with a ``ParameterDescriptor`` (so ``ros2 param describe`` shows the description, range and
whether it is read-only), reads the values (from YAML overrides or defaults) and validates
them; a bad value raises ``ParameterError`` naming the node, the parameter, the value and what
is allowed. An integer is accepted for a double (``sample_rate_hz:=100``), integers for a
double array (``gravity: [0, 0, -10]``), never a bool. ``watch`` keeps the writable ones
settable with ``ros2 param set``: the same checks refuse a bad value with the reason, and the
node learns the new values. ``unknown_parameters`` names overrides that match
no declared parameter (a typo). The same lists generate the README's node tables.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

from rcl_interfaces.msg import (
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
)
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
    read_only: bool = True  # False: a tuning parameter, settable while the node runs

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"Param {self.name}: unknown type {self.type!r}")

    def descriptor(self) -> ParameterDescriptor:
        read_only = ["read-only: set it at start-up and restart"] if self.read_only else []
        descriptor = ParameterDescriptor(
            name=self.name,
            type=TYPES[self.type].value,
            description=self.description,
            read_only=self.read_only,
            additional_constraints="; ".join([self.constraint_text(), *read_only]).strip("; "),
            # A double (array) also takes integers (users type 100, not 100.0); ``problem``
            # checks the values and ``coerce`` makes them floats.
            dynamic_typing=self.type in ("double", "double_array"),
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
        if not self.read_only:
            parts.append("writable at run time")
        return "; ".join(parts)

    def coerce(self, value: object) -> object:
        """The value as the node uses it: a list for arrays, a float for a double."""
        if self.type == "double_array":
            return [float(v) for v in value]
        if isinstance(value, list | tuple):
            return list(value)
        if self.type == "double" and _is_number(value):
            return float(value)
        return value

    def problem(self, value: object) -> str | None:
        """Why value is not allowed, or None if it is."""
        if self.type == "double" and not _is_number(value):
            return f"must be a number, got {type(value).__name__}"
        items = value if isinstance(value, list | tuple) else [value]
        if self.type == "double_array" and (
            not isinstance(value, list | tuple) or not all(_is_number(v) for v in items)
        ):
            return f"must be a list of numbers, got {value!r}"
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


def _is_number(value: object) -> bool:
    """An int or a float, not a bool (YAML's true is no number)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


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
        reason = param.problem(value)
        if reason:
            raise ParameterError(_message(node, param, f"= {value!r} {reason}"))
        values[param.name] = param.coerce(value)
    return SimpleNamespace(**values)


def watch(
    node: Node,
    params: list[Param],
    values: SimpleNamespace,
    on_change: Callable[[dict[str, object]], None] | None = None,
) -> None:
    """Keep ``values`` (from ``declare``) current under ``ros2 param set``: a value is checked
    as at start-up and refused with the reason; read-only ones are refused by their descriptor.
    ``on_change`` gets every accepted change, name -> value, after it is set."""
    by_name = {p.name: p for p in params}

    def check(changes: list[Parameter]) -> SetParametersResult:
        for change in changes:
            param = by_name.get(change.name)
            if param is None:
                continue
            reason = param.problem(change.value)
            if reason:
                message = _message(node, param, f"= {change.value!r} {reason}")
                return SetParametersResult(successful=False, reason=message)
        return SetParametersResult(successful=True)

    def apply(changes: list[Parameter]) -> None:
        accepted = {c.name: by_name[c.name].coerce(c.value) for c in changes if c.name in by_name}
        for name, value in accepted.items():
            setattr(values, name, value)
        if accepted and on_change is not None:
            on_change(accepted)

    node.add_on_set_parameters_callback(check)
    node.add_post_set_parameters_callback(apply)


def unknown_parameters(node: Node, params: list[Param]) -> list[str]:
    """Overrides (YAML, -p, launch) that name no parameter of the node, each with the nearest
    declared name when there is one, e.g. "estimate_perod (did you mean estimate_period?)"."""
    # rclpy keeps the overrides it was given in this attribute (no public accessor).
    overrides = getattr(node, "_parameter_overrides", {})
    known = [p.name for p in params]
    unknown = []
    for name in sorted(overrides):
        if node.has_parameter(name):
            continue
        near = difflib.get_close_matches(name, known, n=1)
        unknown.append(f"{name} (did you mean {near[0]}?)" if near else name)
    return unknown


def _message(node: Node, param: Param, reason: str) -> str:
    return (
        f"parameter '{node.get_fully_qualified_name()}.{param.name}' {reason} ({param.description})"
    )
