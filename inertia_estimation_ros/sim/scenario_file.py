"""Scenario files without the simulator: the YAML with its ``include`` chain, and the simulated
duration a scenario declares.

Imports only PyYAML, so that ``inertia_estimation simulate --list`` reads every shipped scenario
without loading numpy, SciPy or MuJoCo. ``scenario_duration`` follows the rules of each type's
``duration`` (``GroundTeamScenario``, ``AerialCableTeamScenario``, ``TrayBalancingScenario``) with
their defaults; test_cli_frictions.py checks it against them on every shipped scenario.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml


class ScenarioError(ValueError):
    """A scenario file or object is invalid; the message names the key and what to change."""


def _merge(base: dict, override: dict) -> dict:
    """Recursive dict merge: mappings merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def read_scenario_yaml(path: str | Path, _seen: tuple[Path, ...] = ()) -> dict:
    """The scenario mapping of a YAML file, with its ``include`` chain merged in."""
    path = Path(path).resolve()
    if path in _seen:
        raise ScenarioError(f"{path}: include cycle through {[str(p) for p in _seen]}")
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as error:
        raise ScenarioError(f"cannot read scenario {path}: {error.strerror}") from None
    except yaml.YAMLError as error:
        raise ScenarioError(f"{path}: not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: a scenario must be a YAML mapping")
    include = data.pop("include", None)
    if include is None:
        return data
    base = read_scenario_yaml(path.parent / include, (*_seen, path))
    return _merge(base, data)


def scenario_duration(data: Mapping) -> float:
    """The simulated time [s] of a scenario mapping, as its type's ``duration`` gives it:
    ``ground_team`` every excitation program with its settling, ``aerial_cable_team`` its
    ``duration``, ``tray_balancing`` the plan's ``duration`` and the 1 s hold. Only the keys
    that make the duration are read: a full check needs ``load_scenario``."""
    kind = data.get("type")
    if kind == "ground_team":
        programs = data.get("excitation")
        if not isinstance(programs, list) or not programs:
            raise ScenarioError("excitation: give at least one excitation program")
        return sum(_program_duration(program) for program in programs)
    if kind == "aerial_cable_team":
        return _number(data, "duration")
    if kind == "tray_balancing":
        return _number(data, "duration", 5.0) + 1.0
    raise ScenarioError(f"scenario type {kind!r}: no duration rule for it")


def _program_duration(program: Any) -> float:
    """One excitation program's settling and motion [s] (sim/excitation.py)."""
    if not isinstance(program, Mapping):
        raise ScenarioError(f"excitation: expected a mapping, got {program!r}")
    settle = _number(program, "settle", 0.5)
    kind = program.get("program")
    if kind in ("human_guided", "sphere", "collaborate"):
        return settle + _number(program, "duration")
    if kind == "static_holds":
        count = len(program.get("orientations_deg") or ())
        hold, transition = _number(program, "hold", 2.0), _number(program, "transition", 1.5)
        return settle + (count + 1) * transition + count * hold
    if kind == "scripted":
        waypoints = program.get("waypoints") or [{}]
        return settle + _number(waypoints[-1], "t")
    raise ScenarioError(f"excitation: unknown program {kind!r}")


def _number(data: Mapping, key: str, default: float | None = None) -> float:
    value = data.get(key) if isinstance(data, Mapping) else None
    value = default if value is None else value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ScenarioError(f"{key}: expected a number, got {value!r}")
    return float(value)
