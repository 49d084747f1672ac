"""Aerial teams on cables (paper 002), part 2: the human-wrench estimators and their cost.

    .venv/bin/python bench/bench_aerial_estimation.py [--quick]

1. Table II analogue (notes section 6.4, item 3): three Dragonflies hover with RotorTM's
   triangle on 1 m cables while a person pulls at the middle of an edge with smooth
   (trapezoid) pulls of 0.2-1 N in random directions, 2-5 s each, for 40 s (12 s with
   --quick); mocap and ESC noise as config.py. Per-axis RMSE against the truth after 2 s of
   the human wrench [F_H (I); M_H (L)] of: the quasi-static estimate (eq. 39) from the cable
   UKFs (the paper's estimator), the momentum observer of ref. [7] (K_O = 10/s, per robot,
   combined by eq. 39), and the project's dynamic estimate (eq. 38 with the payload's
   filtered acceleration), the latter also with a nominal payload mass 20 % wrong. Beside the
   paper's two rows (real flights; compare the pattern, not the digits).
2. Cost: one UKF predict + full mocap update per robot, beside the floor of numpy for the
   same sizes (a bare UKF step: 39 sigma points of 19 states, an identity model, 18
   measurements, no manifold, gating or checks: the fewest numpy calls a UKF step can make),
   and the coordinator's whole team step (payload mocap, every robot's pose, twist and rotor
   speeds, one estimate) against n. Best of repeated runs, CPU time of this process
   (``time.process_time``; wall clock on the shared 2-core machine is noisier).
   ``--ukf-step``: only the UKF step (and the first step's wall time: the kernels' compile or
   cache load); ``--ukf-step --against main``: main's and this tree's in alternating
   processes (``--pairs`` of them), a before/after table.
3. ``--identify-seeds N [--damage CASE ...]`` (alone): the in-flight identification's
   mass and CoM error/sigma over N seeds of a 6 s waypoint flight, clean or damaged
   (``DAMAGE_CASES``: a robot's mocap gap, a gust on a robot, noisier ESC speeds), weighted
   by the residuals' covariance (the estimator) and by the stated one (before; about 30 s
   per seed and case).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test"))

from aerial_feed import feed, run_scenario, team_model

from inertia_estimation_ros.core.aerial.allocation import GRAVITY, CableAllocation
from inertia_estimation_ros.core.aerial.momentum_observer import (
    MomentumObserver,
    observer_wrench,
)
from inertia_estimation_ros.core.aerial.rotors import RPM_PER_RAD_S, RotorModel
from inertia_estimation_ros.core.aerial.team_estimation import (
    START_STDS,
    TEAM_UKF_NOISE,
    AerialEstimatorSettings,
    AerialTeamEstimator,
    AerialTeamModel,
)
from inertia_estimation_ros.core.aerial.ukf import (
    CableTensionUKF,
    CableUKFNoise,
    RobotCableModel,
)
from inertia_estimation_ros.sim.aerial.config import polygon_attach_points

PAPER_TABLE_II = {  # RMSE: F x, y, z [N]; M roll, pitch, yaw [N m]
    "paper: ours (UKF, eq. 39)": (0.0185, 0.0117, 0.0564, 0.0088, 0.0066, 0.0045),
    "paper: [7] momentum obs.": (0.0282, 0.0164, 0.0419, 0.0148, 0.0040, 0.0120),
}
# The middle of the edge rho_1-rho_2: off both axes, so that a pull has a moment on all three.
GRASP = [0.07715, -0.1335, 0.01125]


def pulls(duration: float, seed: int = 7) -> list[dict]:
    """Trapezoid pulls of 0.2-1 N in random directions, 2-5 s each with 0.5 s ramps."""
    rng, t, out = np.random.default_rng(seed), 1.0, []
    while t < duration - 2.0:
        length = min(rng.uniform(2.0, 5.0), duration - t - 0.5)
        direction = rng.standard_normal(3)
        force = rng.uniform(0.2, 1.0) * direction / np.linalg.norm(direction)
        out.append(
            {"kind": "trapezoid", "start": t, "rise": 0.5, "duration": length - 0.5,
             "force": [float(f) for f in force]}
        )  # fmt: skip
        t += length + 0.3
    return out


def observer_estimates(scenario, r, gain: float = 10.0) -> np.ndarray:
    """Ref. [7]'s observer per robot on mocap velocity, attitude and ESC thrust; eq. 39."""
    doc = scenario.ground_truth_document()
    robots = [doc["robots"][rid] for rid in r.robot_ids]
    observers = [MomentumObserver(d["mass"], gain) for d in robots]
    rotors = [RotorModel(d["arm"], d["k_f"], d["k_m"]) for d in robots]
    allocation = CableAllocation(np.asarray(doc["payload"]["attach_points"]))
    out = []
    for q, t in enumerate(r.time):
        forces = []
        for k, (observer, rotor) in enumerate(zip(observers, rotors, strict=True)):
            f = rotor.input(r.rotor_rpm[max(q - 1, 0), k] / RPM_PER_RAD_S)[0]
            thrust = f * r.mocap_robot_R[q, k][:, 2]
            forces.append(observer.update(t, r.mocap_robot_v[q, k], thrust))
        R_L = r.mocap_payload_R[q]
        out.append(observer_wrench(allocation, R_L, np.array(forces), doc["payload"]["mass"]))
    return np.array(out)


def identified_payload(quick: bool):
    """In-flight identification as the coordinator runs it (``OnlinePayloadIdentification``:
    the weak prior around the description, valid parts only) on paper002_aerial's 6-DoF
    waypoint flight without a person (the first 12 s), from the cable UKFs of a team whose
    description is 20 % light; the parameters the human-wrench estimator then uses."""
    from inertia_estimation_ros.core.aerial.identification import OnlinePayloadIdentification
    from inertia_estimation_ros.ros.graph import data_file

    config = yaml.safe_load(data_file("paper002_aerial.yaml", "config/scenarios").read_text())
    config = config | {"name": "identify", "duration": 6.0 if quick else 12.0, "human": {}}
    tic = time.perf_counter()
    scenario, r = run_scenario(config)
    estimator = AerialTeamEstimator(team_model(scenario, 0.8))
    identification = OnlinePayloadIdentification(estimator.model)

    def add(e) -> None:
        if e.stamp > 1.0:
            identification.add(e, estimator.motion, estimator.robot_counters())

    feed(estimator, r, each=add)
    truth = scenario.ground_truth_document()["payload"]
    estimate, use = identification.solve()
    print(
        f"In-flight identification ({r.time[-1]:.0f} s flown and estimated in "
        f"{time.perf_counter() - tic:.0f} s, {identification.samples} samples): mass "
        f"{estimate.mass:.4f} +- {np.sqrt(estimate.mass_variance):.4f} kg (truth "
        f"{truth['mass']}); valid mass/CoM/inertia {estimate.mass_valid}/{estimate.com_valid}/"
        f"{estimate.inertia_valid}; used: CoM {np.round(use.com, 4)} m (truth 0), inertia "
        f"diagonal {np.round(np.diag(use.inertia_about_com), 5)} (truth "
        f"{truth['inertia_diagonal']}); advice: {' / '.join(estimate.advice) or 'none'}"
    )
    return use


DAMAGE_CASES = {  # the in-flight identification's damaged inputs (``--identify-seeds``)
    "clean": "as flown",
    "mocap_gap": "robot_2's mocap missing 2.5-3.0 s",
    "gust": "robot_1 pushed down 3 N for 0.2 s at 2.5 s (its cable's tension halves, its "
    "UKF's mocap is gated for 0.5 s)",
    "noisy_tensions": "ESC speed noise 4.5 % instead of 1.5 %",
}


def _damaged_flight(config: dict, seed: int, case: str):
    """(scenario, run, damage of ``feed``) of ``identified_payload``'s 6 s flight, damaged."""
    from inertia_estimation_ros.sim.aerial.runner import AerialResult
    from inertia_estimation_ros.sim.scenario import load_scenario

    flight = {"type": "aerial_cable_team", "name": "identify", "duration": 6.0, "human": {}}
    if case == "noisy_tensions":
        flight["sensors"] = {"rpm_noise": 0.045}
    scenario = load_scenario(config | flight | {"seed": seed})
    if case != "gust":
        gap = case == "mocap_gap"

        def damage(q: int, kind: str, k: int, value: np.ndarray) -> np.ndarray | None:
            silent = gap and k == 1 and kind != "rotors" and 250 <= q < 300
            return None if silent else value

        return scenario, scenario.run(), damage
    run = scenario.stepper()
    body = int(run.index.robot_bodies[0])
    parts = [run.advance(2.5)]
    run.data.xfrc_applied[body, 2] = -3.0  # the runner sets only the payload's
    parts.append(run.advance(2.7))
    run.data.xfrc_applied[body, 2] = 0.0
    parts.append(run.advance())
    data = {key: np.concatenate([p.data[key] for p in parts]) for key in parts[0].data}
    times = np.concatenate([p.time for p in parts])
    first = parts[0]
    r = AerialResult(
        first.scenario_name, first.seed, first.robot_ids, times, data, first.cable_limit,
        first.attach_points,
    )  # fmt: skip
    return scenario, r, None


def _add_while_hands_off(runs: dict, estimator, estimate) -> None:
    """As the coordinator samples (``~/hands_off``): every estimate offered with the UKFs'
    counters (the degraded ones counted, not taken)."""
    if estimate.stamp > 1.0:
        counters = estimator.robot_counters()
        for run in runs.values():
            run.add(estimate, estimator.motion, counters)


def identification_seeds(seeds: int, cases: list[str]) -> None:
    """The in-flight identification's |error|/sigma over seeds 1..``seeds`` of
    ``identified_payload``'s 6 s flight (samples after 1 s while nothing is degraded,
    description 20 % light, the weak prior; raw, before the validity thresholds), clean and
    damaged (``DAMAGE_CASES``): the samples weighted by their residuals' covariance (the
    estimator's) and, on the same samples, by the covariances they state (before s12g)."""
    from inertia_estimation_ros.core.aerial.identification import OnlinePayloadIdentification
    from inertia_estimation_ros.core.cooperative.payload_properties import payload_properties
    from inertia_estimation_ros.ros.graph import data_file

    config = yaml.safe_load(data_file("paper002_aerial.yaml", "config/scenarios").read_text())
    refusals = dict.fromkeys(cases, 0)
    for case in cases:
        print(f"\nIn-flight identification, {case}: {DAMAGE_CASES[case]}")
        print("| seed | weights | samples | mass [kg] | CoM [mm] | CoM sigma [mm] | "
              "error/sigma (m, x, y, z) |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        z: dict[str, list] = {"residuals": [], "stated": []}
        for seed in range(1, seeds + 1):
            scenario, r, damage = _damaged_flight(config, seed, case)
            truth = scenario.ground_truth_document()["payload"]["mass"]
            estimator = AerialTeamEstimator(team_model(scenario, 0.8))
            runs = {name: OnlinePayloadIdentification(estimator.model) for name in z}
            runs["stated"].identification.min_samples = sys.maxsize  # the stated weights only
            feed(estimator, r, damage, partial(_add_while_hands_off, runs, estimator))
            run = runs["residuals"]
            refused = run.damage_refusal() is not None
            gated, updates = run.updates[1], run.updates.sum()
            print(
                f"| {seed} | degraded {run.degraded}/{run.offered} "
                f"({run.degraded / max(run.offered, 1):.0%}), UKF updates gated {gated}/{updates}"
                f" ({gated / max(updates, 1):.0%}) | {'REFUSED' if refused else 'identified'} "
                "| | | | |"
            )
            refusals[case] += refused
            for name, run in runs.items():
                result = run.identification.solve_with_prior(run.nominal, run.information)
                props = payload_properties(result.params.vec, result.covariance)
                sigma = np.sqrt(np.r_[props.mass_variance, np.diag(props.p_s_c_covariance)])
                z[name].append(np.r_[props.mass - truth, props.p_s_c] / sigma)
                print(
                    f"| {seed} | {name} | {run.samples} | {props.mass:.4f} | "
                    f"{np.round(props.p_s_c * 1e3, 1)} | {np.round(sigma[1:] * 1e3, 1)} | "
                    f"{np.round(z[name][-1], 2)} |"
                )
        for name, scores in z.items():
            scores = np.array(scores)
            rms = np.sqrt(np.mean(scores**2, axis=0))
            print(
                f"{case}, {name} weights: error/sigma (mass, CoM x, y, z) mean "
                f"{scores.mean(axis=0).round(2)}, RMS {rms.round(2)}, largest |.| "
                f"{np.abs(scores).max(axis=0).round(2)}"
            )
        print(f"{case}: refused (damage_refusal) on {refusals[case]} of {seeds} seeds")


def table_two(quick: bool, walks: list[float]) -> None:
    duration = 12.0 if quick else 40.0
    human = {"grasp": GRASP, "profiles": pulls(duration)}
    tic = time.perf_counter()
    scenario, r = run_scenario({"name": "table2", "duration": duration, "human": human})
    print(f"Table II analogue: {duration:g} s flown in {time.perf_counter() - tic:.0f} s")
    rows: dict[str, np.ndarray] = {}
    static_rows = []
    identified = identified_payload(quick)
    if identified is not None:
        estimator = AerialTeamEstimator(team_model(scenario, 0.8))
        estimator.use_payload(identified)
        estimates = feed(estimator, r)
        rows["project: dynamic, identified"] = np.array([e.wrench.wrench for e in estimates])
    for name, scale in (("project: dynamic (eq. 38)", 1.0), ("project: dynamic, m_L -20 %", 0.8)):
        estimator = AerialTeamEstimator(team_model(scenario, scale), AerialEstimatorSettings())
        tic = time.perf_counter()
        estimates = feed(estimator, r)
        print(f"  {name}: {len(r.time)} samples estimated in {time.perf_counter() - tic:.0f} s")
        rows[name] = np.array([e.wrench.wrench for e in estimates])
        if scale == 1.0:
            static_rows = [
                estimator.human.quasi_static(e.payload_R, e.tension, e.xi, e.cable_covariance)
                for e in estimates
            ]
    for walk in walks:  # the tension random walk of the team UKFs [N/sqrt(s)]
        process = (*TEAM_UKF_NOISE.process[:-1], walk)
        settings = AerialEstimatorSettings(ukf_noise=CableUKFNoise(process=process))
        estimates = feed(AerialTeamEstimator(team_model(scenario), settings), r)
        rows[f"project: dynamic, walk {walk:g}"] = np.array([e.wrench.wrench for e in estimates])
    rows = {
        "UKF quasi-static (eq. 39)": np.array([s.wrench for s in static_rows]),
        "momentum observer [7]": observer_estimates(scenario, r),
        **rows,
    }
    window = r.time > 2.0
    print(f"  per-axis RMSE over {window.sum()} samples after 2 s (F [N], M [N m]):")
    print(f"  {'':30s}" + "".join(f"{a:>9s}" for a in ("F_x", "F_y", "F_z", "M_x", "M_y", "M_z")))
    for name, values in PAPER_TABLE_II.items():
        print(f"  {name:30s}" + "".join(f"{v:9.4f}" for v in values))
    rmse = {}
    for name, wrench in rows.items():
        rmse[name] = np.sqrt(np.mean((wrench[window] - r.human_wrench[window]) ** 2, axis=0))
        print(f"  {name:30s}" + "".join(f"{v:9.4f}" for v in rmse[name]))
    others = [rmse["UKF quasi-static (eq. 39)"], rmse["momentum observer [7]"]]
    for name in ("project: dynamic (eq. 38)", "project: dynamic, identified"):
        if name in rmse:
            wins = np.all([rmse[name] < other for other in others], axis=0)
            print(f"  {name} below both others on {wins.sum()}/6 axes: {wins.tolist()}")
    peak = np.abs(r.human_wrench[window]).max(axis=0)
    print("  largest applied |wrench| per axis: " + " ".join(f"{v:.3f}" for v in peak))


def _team(n: int) -> AerialTeamModel:
    rho = polygon_attach_points(n, max(0.31, 0.75 * n / (2 * np.pi)), 0.01125)
    robot = RobotCableModel(0.25, np.array([0.000601, 0.000589, 0.001076]), 1.0)
    rotors = RotorModel(0.1075, 3.9408732e-9, 5.9113098e-11)
    ids = tuple(f"robot_{k + 1}" for k in range(n))
    inertia = np.diag([0.1, 0.1, 0.2])
    return AerialTeamModel(ids, (robot,) * n, (rotors,) * n, rho, 0.3 * n / 3, inertia)


def _best_cpu_time(step, calls: int = 200, repeats: int = 7) -> float:
    """The best CPU time [s] per call of ``step`` over ``repeats`` batches of ``calls``."""
    for _ in range(20):
        step()
    best = np.inf
    for _ in range(repeats):
        tic = time.process_time()
        for _ in range(calls):
            step()
        best = min(best, (time.process_time() - tic) / calls)
    return best


def bare_ukf_step(n: int = 19, m: int = 18):
    """A UKF step with the fewest numpy calls: cubature points of an n-state, identity model,
    the first m states measured (the floor of any numpy UKF of these sizes)."""
    x, P, Q, R = np.zeros(n), np.eye(n) * 1e-2, np.eye(n) * 1e-4, np.eye(m) * 1e-4
    w = np.full(2 * n, 0.5 / n)
    z = np.zeros(m)

    def step() -> None:
        nonlocal x, P
        L = np.sqrt(n) * np.linalg.cholesky(P)
        X = np.concatenate([x + L.T, x - L.T])  # predict through f = identity
        x = w @ X
        D = X - x
        P = (D.T * w) @ D + Q
        L = np.sqrt(n) * np.linalg.cholesky(P)
        X = np.concatenate([x + L.T, x - L.T])  # update with h = the first m states
        Z = X[:, :m]
        dZ = Z - w @ Z
        S = (dZ.T * w) @ dZ + R
        K = np.linalg.solve(S, (((X - x).T * w) @ dZ).T).T
        x = x + K @ (z - w @ Z)
        P = P - K @ S @ K.T

    return step


def ukf_cost() -> None:
    """One robot's UKF step (predict 10 ms + full mocap update) against the numpy floor; and
    the first step's wall time (numba compiles the kernels, or loads them from its cache)."""
    model = RobotCableModel(0.25, np.array([0.000601, 0.000589, 0.001076]), 1.0)
    x0 = np.zeros(19)
    x0[2], x0[12:15], x0[18] = 2.0, [0.0, 0.0, -1.0], 0.9
    ukf = CableTensionUKF(model, x0, np.diag(np.square(START_STDS)), TEAM_UKF_NOISE)
    u, p, zero, xi = np.array([0.25 * GRAVITY + 0.9, 0, 0, 0]), x0[:3], np.zeros(3), x0[12:15]
    tic, cpu = time.perf_counter(), time.process_time()
    ukf.predict(u, 0.01)
    ukf.update_mocap(p, np.eye(3), zero, zero, xi, zero)
    print(
        f"First UKF step of this process: {time.perf_counter() - tic:.2f} s wall, "
        f"{time.process_time() - cpu:.2f} s CPU (numba compiles the kernels, or loads them)"
    )
    predict = _best_cpu_time(lambda: ukf.predict(u, 0.01))
    update = _best_cpu_time(lambda: ukf.update_mocap(p, np.eye(3), zero, zero, xi, zero))
    floor = _best_cpu_time(bare_ukf_step())
    print(
        f"UKF step per robot (CPU time): predict {predict * 1e6:.0f} us + full update "
        f"{update * 1e6:.0f} us = {(predict + update) * 1e6:.0f} us; numpy floor of a bare "
        f"19-state UKF step (identity model, 18 measurements): {floor * 1e6:.0f} us "
        "(target 100 us)"
    )


ROOT = Path(__file__).resolve().parents[1]
STEP_LINE = re.compile(r"predict (\d+) us \+ full update (\d+) us = (\d+) us.*: (\d+) us")
UKF_COST = "import sys; sys.path.insert(0, 'bench'); import bench_aerial_estimation; "
UKF_COST += "bench_aerial_estimation.ukf_cost()"


def ukf_step_against(revision: str, pairs: int) -> None:
    """``ukf_cost`` of git ``revision`` (its files exported to a temporary folder) and of
    this tree, in alternating processes (the shared machine's load drifts between runs)."""
    header = "| run | load | code | predict [us] | update [us] | step [us] | numpy floor [us] |"
    rows = [header, "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as folder:
        files = ["inertia_estimation_ros", "bench", "test"]
        archive = subprocess.run(["git", "archive", revision, *files], cwd=ROOT, check=True,
                                 capture_output=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        for run in range(1, pairs + 1):
            for name, tree in ((revision, folder), ("this tree", str(ROOT))):
                load = os.getloadavg()[0]
                environment = os.environ | {"PYTHONPATH": tree}
                printed = subprocess.run(
                    [sys.executable, "-c", UKF_COST], cwd=tree, env=environment, check=True,
                    capture_output=True, text=True,
                ).stdout  # fmt: skip
                figures = " | ".join(STEP_LINE.search(printed).groups())
                rows.append(f"| {run} | {load:.1f} | {name} | {figures} |")
    print(f"UKF step per robot (CPU time, best of 7 x 200 calls), {revision} against this tree:")
    print("\n".join(rows))


def timings(quick: bool) -> None:
    ukf_cost()
    print("\nCost per call (best of repeats; target < 100 us per UKF step):")
    for n in (3, 8) if quick else (3, 8, 16, 32):
        model = _team(n)
        estimator = AerialTeamEstimator(model)
        x_L, R_L = np.array([0.0, 0.0, 1.0]), np.eye(3)
        attach = x_L + model.attach_points
        robot_x = attach + np.array([0.0, 0.0, 1.0])
        hover = (
            np.sqrt((0.25 * GRAVITY + model.payload_mass * GRAVITY / n) / (4 * 3.9408732e-9))
            / RPM_PER_RAD_S
        )
        steps = []
        for q in range(40):
            t = 0.01 * q
            tic = time.process_time()
            estimator.payload_pose(t, x_L, R_L)
            estimator.payload_twist(t, np.zeros(3), np.zeros(3))
            for k, rid in enumerate(model.robot_ids):
                estimator.robot_pose(rid, t, robot_x[k], np.eye(3))
                estimator.robot_twist(rid, t, np.zeros(3), np.zeros(3))
                estimator.rotor_speeds(rid, t, np.full(4, hover))
            estimator.estimate(t)
            steps.append(time.process_time() - tic)
        team = min(steps[5:])
        print(
            f"  n = {n:2d}: team step {team * 1e3:7.2f} ms, per robot {team / n * 1e6:7.0f} us "
            f"(at 100 Hz mocap: {team * 100:.2f} of a core)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="12 s flight, n <= 8")
    parser.add_argument("--cost", action="store_true", help="only the cost table")
    parser.add_argument("--ukf-step", action="store_true", help="only the UKF step per robot")
    parser.add_argument(
        "--against", metavar="REVISION",
        help="with --ukf-step: alternate runs of a git revision's UKF step and this tree's",
    )  # fmt: skip
    parser.add_argument("--pairs", type=int, default=4, help="runs of each with --against")
    parser.add_argument(
        "--walks", type=float, nargs="*", default=[],
        help="extra rows: the dynamic estimate with these tension random walks [N/sqrt(s)]",
    )  # fmt: skip
    parser.add_argument(
        "--identify-seeds", type=int, default=0,
        help="only the in-flight identification's error/sigma over this many seeds of a 6 s "
        "flight",
    )  # fmt: skip
    parser.add_argument(
        "--damage", nargs="+", choices=list(DAMAGE_CASES), default=["clean"],
        help="with --identify-seeds: the damaged inputs to run (default: clean)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.identify_seeds:
        identification_seeds(args.identify_seeds, args.damage)
        return
    if args.ukf_step:
        ukf_step_against(args.against, args.pairs) if args.against else ukf_cost()
        return
    if not args.cost:
        table_two(args.quick, args.walks)
    timings(args.quick)


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/aerial_estimation.md

    with benchmark_page("aerial_estimation"):
        main()
