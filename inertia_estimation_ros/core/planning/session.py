"""Plan, verify, save and load: what the planner node and the CLI share.

A plan is handed out only with its verification (Eq. 13 per object along the plan);
``PlanOutcome.certified`` says whether every object's worst case is <= 0. Callers must
not execute an uncertified plan; they refuse and say why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .objects import BalancedObject
from .planner import PlannerSettings, TrayPlan, TrayPlanner
from .tray import regressors
from .verification import Verification, WorstCaseVerifier

VERIFY_PERIOD = 0.01  # [s] between verified instants (the paper's)


@dataclass
class PlanOutcome:
    plan: TrayPlan
    verifications: dict[str, Verification]  # per object name

    @property
    def certified(self) -> bool:
        return all(v.certified for v in self.verifications.values())

    @property
    def worst(self) -> tuple[str, Verification]:
        return max(self.verifications.items(), key=lambda item: item[1].max_violation)

    def summary(self) -> str:
        plan, X = self.plan, self.plan.X
        name, worst = self.worst
        lines = [
            f"method {plan.method}, duration {plan.times[-1]:.1f} s, planned in "
            f"{1e3 * plan.solve_time:.0f} ms (QP: {', '.join(plan.qp_status)})",
            f"final position {np.round(X[-1, :3], 4)}, peak speed "
            f"{np.linalg.norm(X[:, 6:9], axis=1).max():.2f} m/s, peak acceleration "
            f"{np.linalg.norm(X[:, 12:15], axis=1).max():.2f} m/s^2, peak tilt "
            f"{np.rad2deg(np.abs(X[:, 3:5]).max()):.1f} deg",
            f"balancing residual RMS {plan.balancing_rms:.2e}",
            f"worst case (Eq. 13) {worst.max_violation:+.3f} for '{name}' "
            f"at t = {worst.time:.2f} s "
            f"(face {worst.row}; {worst.sdp_solves} SDPs for {worst.pairs} pairs"
            f"{'' if worst.exact else ', upper bound'}): "
            + ("CERTIFIED" if self.certified else "NOT certified"),
        ]
        return "\n".join(lines)


def verify_plan(
    plan: TrayPlan,
    objects: list[BalancedObject],
    max_solves: int = 400,
    period: float = VERIFY_PERIOD,
) -> dict[str, Verification]:
    """Eq. 13 for every object along the plan, every ``period`` seconds."""
    times = plan.sample_times(period)
    Y = regressors(plan.states(times))
    return {
        obj.name: WorstCaseVerifier(obj, obj.contacts.face_form()).verify(times, Y, max_solves)
        for obj in objects
    }


def plan_and_verify(
    objects: list[BalancedObject],
    method: str,
    settings: PlannerSettings,
    start: np.ndarray,
    goal: np.ndarray,
    max_solves: int = 400,
) -> PlanOutcome:
    """Plan (PlanningError on refusal) and verify."""
    plan = TrayPlanner(objects, method, settings).plan(start, goal)
    return PlanOutcome(plan, verify_plan(plan, objects, max_solves))


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
        )
        return plan, json.loads(str(data["spec"]))
    except (OSError, KeyError, ValueError) as error:
        raise ValueError(
            f"{path} is not a plan saved by `inertia_estimation plan`: {error}"
        ) from None
