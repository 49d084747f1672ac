"""``@dataclass(frozen=True)
class AerialRobot:
    robot_id: str
    kind: str = "quadrotor"


@scenario_type("aerial_cable_team")``: paper 002's team flying in MuJoCo.

YAML keys (``config/scenarios/paper002_aerial.yaml`` is the paper's setup):

* ``name``, ``seed``, ``duration`` [s], ``timestep`` [s] (physics, default 0.001);
* ``quadrotor``: ``dragonfly`` (default) or ``hummingbird`` (RotorTM's parameters);
* ``cable_length`` [m] (1.0);
* ``payload``: ``shape`` ``triangle`` (RotorTM's, n = 3) or ``polygon`` (``robots``,
  ``radius``), ``mass`` [kg], ``inertia`` (diagonal), optional ``attach_points``;
* ``start`` (payload position) and ``waypoints`` (``time``, ``xyz``, ``rpy_deg``), visited
  at rest along minimum-jerk segments;
* ``human``: ``profiles`` (``human.py``), ``grasp`` (in the payload frame), ``head``
  (``start`` [x, y], ``height``, ``speed``, ``stop_distance``, ``begin``);
* ``sensors``: mocap and ESC noise (``config.py``);
* ``control``: ``method`` (``nominal``, ``gradient``, ``optimization``), ``rate`` [Hz],
  ``attitude_rate`` [Hz], ``gradient_a``, ``gradient_b``, ``robot_distance``,
  ``head_distance`` [m].

A team that cannot fly (n < 3 or collinear attach points, cables too short for the robots'
spacing, a payload beyond the rotors' thrust) is refused with a ``ScenarioError`` before any
simulation starts.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import mujoco
import yaml

from ..scenario import Section, scenario_type
from .config import AerialConfig, read_config
from .model import compile_model, robot_name
from .runner import AerialResult, AerialRun


@dataclass(frozen=True)
class AerialRobot:
    robot_id: str
    kind: str = "quadrotor"


@scenario_type("aerial_cable_team")
class AerialCableTeamScenario:
    def __init__(self, config: AerialConfig, raw: dict):
        self.settings, self.config = config, raw
        self.name, self.seed, self.duration = config.name, config.seed, config.duration

    @classmethod
    def from_config(cls, section: Section) -> AerialCableTeamScenario:
        raw = dict(section.data)
        return cls(read_config(section), raw)

    @property
    def robots(self) -> list[AerialRobot]:
        return [AerialRobot(robot_name(k)) for k in range(self.settings.n)]

    def compile(self) -> mujoco.MjModel:
        """The compiled MuJoCo model (the runner builds its own)."""
        return compile_model(self.settings)[0]

    def stepper(self, seed: int | None = None) -> AerialRun:
        return AerialRun(self.settings, self.seed if seed is None else seed)

    def run(
        self, seed: int | None = None, progress: Callable[[float], None] | None = None
    ) -> AerialResult:
        return self.stepper(seed).advance(math.inf, progress)

    def ground_truth_document(self) -> dict:
        """The constants an estimator is judged against: payload, cables and robots."""
        c = self.settings
        quad = c.quadrotor
        return {
            "payload": {
                "mass": float(c.payload.mass),
                "inertia_diagonal": [float(v) for v in c.payload.inertia],
                "attach_points": [[float(v) for v in p] for p in c.payload.attach],
            },
            "cable_length": float(c.cable_length),
            "robots": {
                robot_name(k): {
                    "model": c.quadrotor_name,
                    "mass": float(quad.mass),
                    "inertia_diagonal": [float(v) for v in quad.inertia],
                    "k_f": float(quad.k_f),
                    "k_m": float(quad.k_f * quad.k_m_over_k_f),
                    "arm": float(quad.arm),
                }
                for k in range(c.n)
            },
        }

    def write_outputs(
        self, result: AerialResult, out: Path, storage: str, ground_truth: bool
    ) -> int:
        """``inertia_estimation simulate``'s output: ``out/bag`` (``topics.py``, with a
        progress bar), the resolved ``out/scenario.yaml`` and ``out/ground_truth.yaml``;
        prints the real-time factor."""
        from tqdm import tqdm

        from .topics import message_count, write_aerial_bag

        with tqdm(total=message_count(result, ground_truth), unit="msg", desc="write bag") as bar:
            write_aerial_bag(result, out / "bag", storage, ground_truth, bar.update)
        config = dict(self.config, type="aerial_cable_team", seed=result.seed)
        (out / "scenario.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        (out / "ground_truth.yaml").write_text(
            yaml.safe_dump(self.ground_truth_document(), sort_keys=False)
        )
        print(
            f"{result.duration:.1f} s simulated in {result.wall_time:.1f} s (real-time factor "
            f"{result.duration / result.wall_time:.2f}); wrote {out / 'bag'} ({storage})"
        )
        return 0
