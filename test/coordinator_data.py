"""Exact team data for the coordinator's tests (``sim.analytic``): paper 000's team and payload,
guided 6-DoF motion, static tilts and pivoting, each robot stamping on its own clock."""

from __future__ import annotations

import dataclasses
from functools import cache
from types import SimpleNamespace

import numpy as np

from inertia_estimation_ros.core.cooperative.estimate import GraspFrameEstimate
from inertia_estimation_ros.sim import analytic as an

RATE = 100.0
ROBOTS = an.PAPER_ROBOTS
CLOCK_OFFSETS = {"robot_1": 0.0, "robot_2": 0.023, "robot_3": -0.031}  # t_robot - t_reference


@cache
def team_session(
    kin_seconds: float = 5.0,
    pivot_seconds: float = 6.0,
    offsets: bool = True,
    noise: bool = False,
    statics: bool = True,
    start: float = 10.0,
):
    """(team, payload in {s}, measured GraspSeries per robot, stamps on each robot's clock
    starting near ``start``): guided motion, static tilts (``statics``), pivoting. Exact, or
    with the white noise of instrumented robots (``noise``)."""
    rng = np.random.default_rng(3)
    team, payload = an.paper_team(), an.paper_payload()
    tilts = an.paper_static_motion(hold=1.0, move=1.0) if statics else None
    segments = an.paper_session_segments(rng, kin_seconds, pivot_seconds, tilts)
    errors = dataclasses.replace(
        an.no_errors(ROBOTS),
        clock_offset={r: (CLOCK_OFFSETS[r] if offsets else 0.0) + start for r in ROBOTS},
    )
    sim, _ = an.simulate_session(
        team,
        payload,
        segments,
        RATE,
        errors=errors,
        noise=an.instrumented_noise() if noise else None,
        rng=rng,
        internal=an.squeeze_forces(team, 20.0),
    )
    return team, payload, sim.measured


def exact_estimate(
    team: an.Team, payload, residual_rms: tuple[float, float] = (0.0, 0.0), **flags: bool
) -> SimpleNamespace:
    """The fields of a TeamEstimate that the external wrench output reads: the exact model,
    its grasps certain, every flag valid unless ``flags`` say otherwise, the net-wrench
    residual RMS (force, moment) the output takes for the F/T noise."""
    values = dict(grasps_valid=True, mass_valid=True, com_valid=True, inertia_valid=True)
    return SimpleNamespace(
        reference_robot_id=team.reference_id,
        theta=payload.vec.copy(),
        theta_covariance=np.zeros((10, 10)),
        grasps=tuple(
            GraspFrameEstimate(r, team.T_s_i[r], np.zeros((6, 6))) for r in team.robot_ids
        ),
        residual_rms_force=residual_rms[0],
        residual_rms_moment=residual_rms[1],
        **(values | flags),
    )
