"""Plan, verify, save and load: what the planner node and the CLI share.

A plan is handed out only with its verification (Eq. 13 per object along the plan);
``PlanOutcome.certified`` says whether every object's worst case is <= 0. Callers must
not execute an uncertified plan; they refuse and say why.

The planner ignores the inertia's uncertainty (every virtual object has the uniform-density
inertia, paper Sec. V) and the SDP covers it afterwards (Sec. VI). When the SDP refuses a
plan, ``plan_and_verify`` re-plans, as the notes (§4.1) advise, with more conservatism:
the soft balancing weight w_s times ``ESCALATION`` per round, at most ``replan_rounds``
times; each round is reported (``PlanOutcome.rounds``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .objects import BalancedObject
from .planner import (
    Iteration,
    PlannerSettings,
    PlanningError,
    QPSolveError,
    TrayPlan,
    TrayPlanner,
    tray_model,
)
from .verification import Verification, WorstCaseVerifier

VERIFY_PERIOD = 0.01  # [s] between verified instants (the paper's)
ROBOTS = ("tray", "ridgeback_ur10")
REPLAN_ROUNDS = 2  # re-plans after a refused verification (w_s 100 -> 1e3 -> 1e4)
# w_s factor per re-plan; beyond w_s ~ 1e4 OSQP stops at its iteration limit (tray, T = 3 s)
ESCALATION = 10.0


def robot_model(name: str, settings: PlannerSettings):  # noqa: ANN201 - TrayModel or robot
    """The planner model called ``name``: the free-flying tray (the settings' limits) or
    the paper's Ridgeback + UR10 (needs example-robot-data)."""
    if name == "tray":
        return tray_model(settings)
    if name == "ridgeback_ur10":
        from .robot import MobileManipulator  # pinocchio and the UR10 only where asked

        return _manipulator(MobileManipulator)
    raise PlanningError(f"robot {name!r} is not one of {ROBOTS}")


_MODELS: dict = {}


def _manipulator(cls: type):  # noqa: ANN202 - built once per process (URDF parsing)
    if cls not in _MODELS:
        _MODELS[cls] = cls()
    return _MODELS[cls]


@dataclass(frozen=True)
class Round:
    """One plan-and-verify round of ``plan_and_verify``."""

    slack_weight: float  # the round's w_s
    max_violation: float  # the worst case over the objects (NaN: the round gave no plan)
    time: float  # when it occurs [s]
    planning_time: float  # [s] wall time of the SQP
    refused: str = ""  # why the round gave no plan

    def describe(self) -> str:
        if self.refused:
            return f"w_s {self.slack_weight:g}: no plan ({self.refused})"
        return f"w_s {self.slack_weight:g}: {self.max_violation:+.3f} at t = {self.time:.2f} s"


@dataclass
class PlanOutcome:
    plan: TrayPlan
    verifications: dict[str, Verification]  # per object name
    rounds: list[Round] = field(default_factory=list)  # every plan-and-verify round

    @property
    def certified(self) -> bool:
        return all(v.certified for v in self.verifications.values())

    @property
    def worst(self) -> tuple[str, Verification]:
        return max(self.verifications.items(), key=lambda item: item[1].max_violation)

    def summary(self) -> str:
        plan = self.plan
        name, worst = self.worst
        model = robot_model(plan.robot, PlannerSettings())
        V, dV, g_e = model.body_motion(plan.X)
        accel = dV[:, 3:] + np.cross(V[:, :3], V[:, 3:])
        tilt = np.rad2deg(np.arccos(np.clip(-g_e[:, 2] / np.linalg.norm(g_e, axis=1), -1, 1)))
        final = model.positions(plan.X[-1, : plan.nq])[0][0]
        lines = [
            f"{plan.robot}: method {plan.method}, duration {plan.times[-1]:.1f} s, planned in "
            f"{1e3 * plan.solve_time:.0f} ms (QP: {', '.join(plan.qp_status)})",
            f"final tray position {np.round(final, 4)}, peak speed "
            f"{np.linalg.norm(V[:, 3:], axis=1).max():.2f} m/s, peak acceleration "
            f"{np.linalg.norm(accel, axis=1).max():.2f} m/s^2, peak tilt {tilt.max():.1f} deg",
            f"balancing residual RMS {plan.balancing_rms:.2e}",
            f"worst case (Eq. 13) {worst.max_violation:+.3f} for '{name}' "
            f"at t = {worst.time:.2f} s "
            f"(face {worst.row}; {worst.sdp_solves} SDPs for {worst.pairs} pairs"
            f"{'' if worst.exact else ', upper bound'}): "
            + ("CERTIFIED" if self.certified else "NOT certified"),
        ]
        if len(self.rounds) > 1:
            lines.append("re-planned: " + "; ".join(r.describe() for r in self.rounds))
        return "\n".join(lines)


def verify_plan(
    plan: TrayPlan,
    objects: list[BalancedObject],
    max_solves: int = 400,
    period: float = VERIFY_PERIOD,
    verifiers: list[WorstCaseVerifier] | None = None,
) -> dict[str, Verification]:
    """Eq. 13 for every object along the plan, every ``period`` seconds (``verifiers``:
    one per object, built once for several plans of the same objects)."""
    times = plan.sample_times(period)
    Y = robot_model(plan.robot, PlannerSettings()).regressors(plan.states(times))
    verifiers = verifiers or verifiers_for(objects)
    return {
        obj.name: verifier.verify(times, Y, max_solves)
        for obj, verifier in zip(objects, verifiers, strict=True)
    }


def verifiers_for(objects: list[BalancedObject]) -> list[WorstCaseVerifier]:
    """Eq. 13 built for each object (its SDP and interval hull: 18 SDPs each)."""
    return [WorstCaseVerifier(obj, obj.contacts.face_form()) for obj in objects]


def plan_and_verify(
    objects: list[BalancedObject],
    method: str,
    settings: PlannerSettings,
    start: np.ndarray,
    goal: np.ndarray,
    max_solves: int = 400,
    robot: str = "tray",
    on_iteration: Callable[[Iteration], None] | None = None,
    replan_rounds: int = REPLAN_ROUNDS,
    start_rates: np.ndarray | None = None,
) -> PlanOutcome:
    """Plan (PlanningError on refusal) and verify; while the SDP refuses the plan, re-plan
    with w_s times ``ESCALATION``, at most ``replan_rounds`` times. The outcome is the first
    certified round's, else the last plan's (a re-plan the QP solver cannot solve ends the
    rounds). ``on_iteration`` sees each SQP iteration of every round; ``start_rates``
    ([dq, ddq]) starts from a moving state."""
    model, verifiers = robot_model(robot, settings), None
    outcome, rounds = None, []
    for index in range(replan_rounds + 1):
        round_settings = replace(settings, slack_weight=settings.slack_weight * ESCALATION**index)
        try:
            planner = TrayPlanner(objects, method, round_settings, model)
            plan = planner.plan(start, goal, on_iteration, start_rates)
        except QPSolveError as error:
            if outcome is None:
                raise
            rounds.append(Round(round_settings.slack_weight, np.nan, np.nan, np.nan, str(error)))
            break
        verifiers = verifiers or verifiers_for(objects)
        outcome = PlanOutcome(
            plan, verify_plan(plan, objects, max_solves, verifiers=verifiers), rounds
        )
        worst = outcome.worst[1]
        rounds.append(
            Round(round_settings.slack_weight, worst.max_violation, worst.time, plan.solve_time)
        )
        if outcome.certified:
            break
    return outcome


def save_plan(path: Path, plan: TrayPlan, spec: dict) -> None:
    """The plan's nodes and the object description it was planned for (``spec``), as .npz."""
    np.savez(
        path,
        times=plan.times,
        X=plan.X,
        U=plan.U,
        forces=plan.forces,
        method=plan.method,
        balancing_rms=plan.balancing_rms,
        solve_time=plan.solve_time,
        robot=plan.robot,
        spec=json.dumps(spec),
    )


def load_plan(path: Path) -> tuple[TrayPlan, dict]:
    """(plan, object description) saved by ``save_plan``; ValueError if it is not one."""
    try:
        data = np.load(path, allow_pickle=False)
        plan = TrayPlan(
            data["times"],
            data["X"],
            data["U"],
            data["forces"],
            str(data["method"]),
            float(data["balancing_rms"]),
            float(data["solve_time"]),
            robot=str(data["robot"]) if "robot" in data else "tray",
        )
        return plan, json.loads(str(data["spec"]))
    except (OSError, KeyError, ValueError) as error:
        raise ValueError(
            f"{path} is not a plan saved by `inertia_estimation plan`: {error}"
        ) from None
