"""Benchmarks of robust nonprehensile balancing (paper 004), on the free-flying tray or
(``--robot ridgeback_ur10``) on the paper's 9-DoF Ridgeback + UR10.

1. Table I side by side: the worst-case violation (Eq. 13, mu = 0.2) of the Center, Top and
   Robust plans at 30/40/50/60 cm, maximum over the three goals (paper: Ridgeback + UR10,
   T = 10 s; ours: the free-flying tray, T = ``--duration``; only signs and trends compare),
   and of the estimator-informed robust plan (the CoM polytope at 3 sigma of an estimate of
   the true CoM, verified on that polytope; no re-plan rounds, as the other columns).
2. Planning and verification times per method, in one run.
3. Success in MuJoCo over the paper's 15 CoM positions x inertias x 3 goals, per method,
   and the largest box displacement (paper: Robust 100 %, at most 2.6 cm).
4. Estimator-informed vs uninformed robust plans: the shortest certified duration, and
   success for the true CoM.

Run: .venv/bin/python bench/bench_balancing.py [--full] [--robot ridgeback_ur10 --duration 10]
[--times N: only the planning times, N rounds] [--informed: only section 4]
[--table-only: only sections 1-2]
(default: heights 30 and 60 cm and inertia scale 1 in the MuJoCo sweep; --full: the
paper's 4 heights x 3 inertia scales = 135 runs per height and method).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inertia_estimation_ros.core.planning.objects import (
    BalancedObject,
    ComEstimate,
    informed_com_box,
)
from inertia_estimation_ros.core.planning.planner import (
    PlannerSettings,
    PlanningError,
    TrayPlanner,
)
from inertia_estimation_ros.core.planning.session import (
    REPLAN_ROUNDS,
    ROBOTS,
    plan_and_verify,
    robot_model,
)
from inertia_estimation_ros.core.planning.verification import WorstCaseVerifier
from inertia_estimation_ros.sim.tray_balancing import point_mass_inertia, replay, tray_motion

START = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
GOALS = [np.array([-2.0, 1.0, 0.0]), np.array([2.0, 0.0, -0.25]), np.array([0.0, -2.0, 0.25])]
METHODS = ("center", "top", "robust")
COLUMNS = (*METHODS, "informed")  # Table I: "informed" is robust on the estimator's polytope
TABLE_I = {  # paper 004, Table I: Center, Top, Robust
    30: (2.31, 3.71, -1.17),
    40: (4.79, 6.95, -0.99),
    50: (7.92, 10.57, -0.80),
    60: (11.62, 14.43, -0.59),
}
VERIFY_PERIOD = 0.01  # [s] between verified instants (the paper's)
TRUE_OFFSET = np.array([0.03, -0.03, -0.1])  # [m] the box's true CoM from its centroid


def informed_object(base: BalancedObject) -> BalancedObject:
    """``base`` with the CoM polytope of an estimate 4 mm (per axis) off its true CoM
    (centroid + ``TRUE_OFFSET``), sigma 1 cm per axis, at 3 sigma."""
    true_com = np.array([0.0, 0.0, base.height / 2]) + TRUE_OFFSET
    estimate = ComEstimate(true_com + 0.004, np.diag([1e-4] * 3), True)
    return informed_com_box(base, estimate, k_sigma=3.0)[0]


def com_offsets(h: float) -> list[np.ndarray]:
    """The paper's 15 CoM positions relative to the centroid (notes §7.3)."""
    out = [np.zeros(3)]
    for axis, d in ((0, 0.06), (1, 0.06), (2, h / 2)):
        for sign in (1, -1):
            e = np.zeros(3)
            e[axis] = sign * d
            out.append(e)
    out += [
        np.array([sx * 0.06, sy * 0.06, sz * h / 2])
        for sx in (1, -1)
        for sy in (1, -1)
        for sz in (1, -1)
    ]
    return out


MODEL = {"robot": "tray"}  # the planner model of this run (--robot)
SETTINGS = {"base": PlannerSettings()}  # the planner settings of this run (--no-terminal)


def start_and_origin() -> tuple[np.ndarray, np.ndarray]:
    """The start configuration and the tray position the goals are offsets from."""
    if MODEL["robot"] == "tray":
        return START, START[:3]
    from inertia_estimation_ros.core.planning.robot import HOME

    model = robot_model(MODEL["robot"], PlannerSettings())
    return HOME, model.positions(HOME)[0][0]


def column_objects(obj: BalancedObject) -> dict[str, BalancedObject]:
    """The object each Table I column plans and verifies for."""
    return {**{m: obj for m in METHODS}, "informed": informed_object(obj)}


def plan_all(
    obj: BalancedObject, settings: PlannerSettings, columns: tuple[str, ...] = METHODS
) -> dict:
    plans = {}
    start, origin = start_and_origin()
    model = robot_model(MODEL["robot"], settings)
    objects = column_objects(obj)
    for column in columns:
        method = "robust" if column == "informed" else column
        planner = TrayPlanner([objects[column]], method, settings, model)
        plans[column] = [planner.plan(start, origin + goal) for goal in GOALS]
    return plans


def verify(verifier: WorstCaseVerifier, plan, max_solves: int) -> tuple:
    times = plan.sample_times(VERIFY_PERIOD)
    began = time.perf_counter()
    Y = robot_model(plan.robot, PlannerSettings()).regressors(plan.states(times))
    result = verifier.verify(times, Y, max_solves=max_solves)
    return result, time.perf_counter() - began


def table_i(heights: list[int], settings: PlannerSettings, max_solves: int) -> dict:
    print(
        f"\n## 1-2. Table I and times (T = {settings.duration} s, verified every {VERIFY_PERIOD} s)"
    )
    print(
        "| h [cm] | Center ours / paper | Top ours / paper | Robust ours / paper "
        "| Informed (3 sigma) ours |"
    )
    print("|---|---|---|---|---|")
    all_plans, timing, cpu = {}, {m: [] for m in COLUMNS}, {m: [] for m in COLUMNS}
    verify_times = {m: [] for m in COLUMNS}
    for h in heights:
        obj = BalancedObject.box((0.15, 0.15, h / 100))
        face_form = obj.contacts.face_form()
        verifiers = {
            column: WorstCaseVerifier(planned, face_form)
            for column, planned in column_objects(obj).items()
        }
        plans = plan_all(obj, settings, COLUMNS)
        all_plans[h] = (obj, plans)
        cells = []
        for k, method in enumerate(COLUMNS):
            results = [verify(verifiers[method], p, max_solves) for p in plans[method]]
            worst = max(results, key=lambda r: r[0].max_violation)[0]
            solved = max(r[0].solved_max for r in results)  # a lower bound of the maximum
            exact = all(r[0].exact for r in results)
            value = (
                f"{worst.max_violation:+.2f}"
                if exact
                else f"{solved:+.2f}..{worst.max_violation:+.2f}"
            )
            cells.append(f"{value} / {TABLE_I[h][k]:+.2f}" if k < len(METHODS) else value)
            timing[method] += [p.solve_time for p in plans[method]]
            cpu[method] += [p.cpu_time for p in plans[method]]
            verify_times[method] += [r[1] for r in results]
        print(f"| {h} | " + " | ".join(cells) + " |")
    print(
        "('a..b': the SDP budget ran out; the maximum lies between the largest SDP value "
        "solved, a, and the branch-and-bound upper bound, b; Informed: verified on its own "
        f"CoM polytope, an estimate of the CoM at centroid + {TRUE_OFFSET} m, 4 mm off, "
        "sigma 1 cm, at 3 sigma)"
    )
    _, origin = start_and_origin()
    model = robot_model(MODEL["robot"], settings)
    misses = {
        m: max(
            np.linalg.norm(model.positions(p.X[-1, : p.nq])[0][0] - origin - goal)
            for _, plans in all_plans.values()
            for p, goal in zip(plans[m], GOALS, strict=True)
        )
        for m in COLUMNS
    }
    print(
        "largest distance of a plan's end from its goal [cm]: "
        + ", ".join(f"{m} {100 * d:.1f}" for m, d in misses.items())
    )
    print(
        "\n| Method | planning wall mean / max [ms] | CPU mean [ms] | QPs per plan | paper [ms] "
        "| verif. [s] |"
    )
    print("|---|---|---|---|---|---|")
    paper = {"center": 110, "top": 111, "robust": 326, "informed": "-"}
    for method in COLUMNS:
        t = 1e3 * np.array(timing[method])
        qps = np.mean([p.qp_solves for _, plans in all_plans.values() for p in plans[method]])
        print(
            f"| {method} | {t.mean():.0f} / {t.max():.0f} | {1e3 * np.mean(cpu[method]):.0f} "
            f"| {qps:.2f} | {paper[method]} "
            f"| {np.mean(verify_times[method]):.1f} |"
        )
    ratio = np.mean(timing["robust"]) / np.mean(timing["center"])
    cpu_ratio = np.mean(cpu["robust"]) / np.mean(cpu["center"])
    print(f"Robust / Center planning time: wall {ratio:.2f}, CPU {cpu_ratio:.2f} (paper 2.96)")
    return all_plans


def success_sweep(all_plans: dict, heights: list[int], scales: list[float]) -> None:
    print(f"\n## 3. MuJoCo success (15 CoMs x inertia scales {scales} x 3 goals per cell)")
    print("| h [cm] | " + " | ".join(f"{m} success / max disp. [cm]" for m in METHODS) + " |")
    print("|---|---|---|---|")
    for h in heights:
        obj, plans = all_plans[h]
        size = np.array([0.15, 0.15, h / 100])
        cells = []
        for method in METHODS:
            runs = [
                replay(plan, size, c, s * point_mass_inertia(size, c), motion=motion)
                for plan in plans[method]
                for motion in [tray_motion(plan)]  # once per plan, not per run
                for c in com_offsets(size[2])
                for s in scales
            ]
            ok = [r.success for r in runs]
            disp = max(r.max_displacement for r, good in zip(runs, ok, strict=True) if good)
            cells.append(f"{100 * np.mean(ok):.0f} % of {len(runs)} / {100 * disp:.1f}")
        print(f"| {h} | " + " | ".join(cells) + " |")
    print("(paper: Robust 100 % at every height, at most 2.6 cm; Top 100 % at 30 cm, fewer above)")


def informed_vs_uninformed(max_solves: int) -> None:
    """A 60 cm box whose CoM the team estimated to 1 cm (3 sigma) vs the paper's full box,
    each planned without re-planning and with the session's re-plan rounds (w_s x10 while
    the SDP refuses, ``plan_and_verify``)."""
    print("\n## 4. Estimator-informed vs uninformed robust plans (60 cm box, goal 1)")
    size = np.array([0.15, 0.15, 0.6])
    base = BalancedObject.box(tuple(size))
    informed = informed_object(base)
    print(
        "| CoM polytope | re-plans | shortest certified T [s] | rounds (w_s: worst case) "
        "| MuJoCo (true CoM) |"
    )
    print("|---|---|---|---|---|")
    for name, obj in (("uninformed (paper)", base), ("informed, 3 sigma", informed)):
        for rounds in (0, REPLAN_ROUNDS):
            found = shortest_certified(obj, rounds, max_solves)
            if found is None:
                print(f"| {name} | {rounds} | none up to 10 s | | |")
                continue
            duration, outcome = found
            run = replay(outcome.plan, size, TRUE_OFFSET, point_mass_inertia(size, TRUE_OFFSET))
            print(
                f"| {name} | {rounds} | {duration:.1f} "
                f"| {'; '.join(r.describe() for r in outcome.rounds)} "
                f"| {'success' if run.success else 'FAILED'}, {100 * run.max_displacement:.1f} cm |"
            )


def shortest_certified(obj: BalancedObject, rounds: int, max_solves: int) -> tuple | None:
    """(T, outcome) of the shortest certified plan to goal 1 on a 0.5 s grid up to 10 s."""
    start, origin = start_and_origin()
    for duration in np.arange(2.0, 10.01, 0.5):
        settings = replace(SETTINGS["base"], duration=float(duration))
        try:
            outcome = plan_and_verify(
                [obj], "robust", settings, start, origin + GOALS[0], max_solves,
                robot=MODEL["robot"], replan_rounds=rounds,
            )  # fmt: skip
        except PlanningError:  # too short for the limits
            continue
        if outcome.certified:
            return float(duration), outcome
    return None


def planning_times(heights: list[int], settings: PlannerSettings, repeats: int) -> None:
    """Only the planning times (no verification), interleaving the methods so that the
    shared machine's load falls on all of them alike."""
    print(f"\n## 2. Planning times only ({repeats} x {len(heights)} heights x 3 goals per method)")
    cpu = {m: [] for m in METHODS}
    wall = {m: [] for m in METHODS}
    qps = {m: [] for m in METHODS}
    for _ in range(repeats):
        for h in heights:
            obj = BalancedObject.box((0.15, 0.15, h / 100))
            for method, plans in plan_all(obj, settings).items():
                cpu[method] += [p.cpu_time for p in plans]
                wall[method] += [p.solve_time for p in plans]
                qps[method] += [p.qp_solves for p in plans]
    print("| Method | CPU mean [ms] | wall mean [ms] | QPs per plan | paper [ms] |")
    print("|---|---|---|---|---|")
    paper = {"center": 110, "top": 111, "robust": 326}
    for method in METHODS:
        print(
            f"| {method} | {1e3 * np.mean(cpu[method]):.0f} | {1e3 * np.mean(wall[method]):.0f} "
            f"| {np.mean(qps[method]):.2f} | {paper[method]} |"
        )
    ratio = np.mean(cpu["robust"]) / np.mean(cpu["center"])
    wall_ratio = np.mean(wall["robust"]) / np.mean(wall["center"])
    print(f"Robust / Center planning time: CPU {ratio:.2f}, wall {wall_ratio:.2f} (paper 2.96)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the paper's full sweep")
    parser.add_argument("--duration", type=float, default=5.0, help="plan duration T [s]")
    parser.add_argument("--max-solves", type=int, default=150, help="SDPs per trajectory")
    parser.add_argument("--robot", choices=ROBOTS, default="tray", help="planner model")
    parser.add_argument("--times", type=int, default=0, help="only N rounds of planning times")
    parser.add_argument(
        "--no-terminal",
        action="store_true",
        help="plan as the authors' OCS2 stack, which drops the terminal condition (notes §3.5)",
    )
    parser.add_argument("--heights", type=int, nargs="+", default=[30, 40, 50, 60])
    parser.add_argument(
        "--informed", action="store_true", help="only the informed-vs-uninformed comparison"
    )
    parser.add_argument(
        "--table-only", action="store_true", help="only Table I and times (sections 1-2)"
    )
    args = parser.parse_args()
    MODEL["robot"] = args.robot
    # the goals turn the robot's arm far: after 3 SQP iterations the linearized terminal
    # condition leaves up to ~1 cm; without it the position cost alone leaves up to ~25 cm
    # (printed below Table I)
    SETTINGS["base"] = PlannerSettings(
        terminal_constraint=not args.no_terminal, goal_tolerance=0.5 if args.no_terminal else 0.02
    )
    print(
        f"robot model: {args.robot}, terminal condition: "
        + ("none (as the authors' OCS2 stack)" if args.no_terminal else "hard")
    )
    heights = args.heights
    settings = replace(SETTINGS["base"], duration=args.duration)
    if args.times:
        planning_times(heights, settings, args.times)
        return
    if args.informed:
        began = time.perf_counter()
        informed_vs_uninformed(args.max_solves)
        print(f"\nran: informed vs uninformed only, total {time.perf_counter() - began:.0f} s")
        return
    began = time.perf_counter()
    all_plans = table_i(heights, settings, args.max_solves)
    if args.table_only:
        print(f"\nran: Table I and times only, heights {heights}, T = {args.duration} s, "
              f"total {time.perf_counter() - began:.0f} s")  # fmt: skip
        return
    sweep_heights = heights if args.full else [h for h in heights if h in (30, 60)]
    scales = [1.0, 0.5, 0.1] if args.full else [1.0]
    success_sweep(all_plans, sweep_heights, scales)
    informed_vs_uninformed(args.max_solves)
    print(
        f"\nran: heights {heights}, sweep heights {sweep_heights}, scales {scales}, "
        f"T = {args.duration} s, total {time.perf_counter() - began:.0f} s"
    )


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/balancing.md

    with benchmark_page("balancing"):
        main()
