"""Paper 000 (mocobots) reproduced: the paper's method and the project's estimator, side by side.

Run: .venv/bin/python bench/bench_cooperative.py [--repetitions 8] [--quick]

Protocol (paper Sec. IV, notes §7): Table I team and payload, 100 Hz, rotations <= 10 deg;
five 10 s kinematics trials, human-guided as in the paper (the robots float and carry the
weight, the human supplies the rest of the wrench, measured by no robot), four 2 s static
holds at +-8 deg tilts, four 60 s inertia trials about robot_3's wrist (first and last 4 s
dropped: 5200 samples each); 20 N of internal squeeze force. Each variant is repeated with
new noise and new calibration errors.

* paper method: the paper's pipeline on poses and forces filtered by a 4th-order zero-phase
  Butterworth at 5 Hz with central differences (notes §4.0). "Per trial", as the paper
  reports it: grasps per 10 s trial (Eqs. 1-8 + BFGS), mass and CoM from the static holds
  with the mean grasps (Eqs. 9-16), inertia per trial about that CoM (Eqs. 17-33). "Pooled",
  the paper's method given all the data: Kabsch / least squares + BFGS over all kinematics
  trials stacked, mass and CoM over all holds, inertia over all inertia trials stacked;
* project: ``estimate_offline`` on the same recordings (Savitzky-Golay derivatives, raw poses
  for the pose fit). "All data": one estimate from every recording, the way the online
  estimator uses everything it has seen; it finds the guided trials' unmeasured wrench and
  uses them for the grasps only. "Per trial": grasps from one 10 s trial; mass, CoM and
  inertia from the holds and one inertia trial.

Errors are mean absolute errors over trials and repetitions ("paper reported": Tables II-V).
"Bound (CRB)": the Cramer-Rao bound of the all-data mass, CoM and principal moments (see
``bound_errors``): the smallest mean absolute error any unbiased estimator can have on this
data. Ratios: project all data / paper pooled (like for like, the primary one), project per
trial / paper per trial, and project all data / bound. Then the online estimator:
per-sample update cost for N = 3, 8, 16, and convergence time.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import yaml
from scipy.spatial.transform import Rotation

from inertia_estimation_ros.core import signals
from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.cooperative import (
    EstimatorSettings,
    Recording,
    TeamEstimator,
    estimate_offline,
    paper_grasps,
    paper_inertia,
    paper_mass_com,
)
from inertia_estimation_ros.core.cooperative import grasp_kinematics as gk
from inertia_estimation_ros.core.cooperative.dynamics import WrenchMoments
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor
from inertia_estimation_ros.sim import analytic as an
from inertia_estimation_ros.sim.scenario import run_scenario

RATE = 100.0
SCENARIOS = Path(__file__).resolve().parents[1] / "config" / "scenarios"
PAIRS = (("robot_1", "robot_2"), ("robot_2", "robot_3"), ("robot_3", "robot_1"))
PAPER = {  # Tables II-V of paper 000 (v1): mean absolute error, and percent where given
    "R12": (1.945, None),
    "R23": (2.746, None),
    "R31": (1.469, None),
    "p12": (0.031, 3.688),
    "p23": (0.027, 2.867),
    "p31": (0.024, 2.089),
    "mass": (0.099, 0.867),
    "p1c": (0.026, 4.403),
    "Ixx": (0.154, 6.824),
    "Iyy": (0.138, 3.999),
    "Izz": (0.050, 0.973),
}
UNITS = {"R": "deg", "p": "m", "mass": "kg", "I": "kg m^2"}


def variants() -> dict[str, an.NoiseModel]:
    low = an.paper_noise()
    return {
        "noise only (notes 7.4: 14-bit angles, 0.1 mm, white 0.1 mm / 0.02 deg, 0.5 N)": low,
        "noisy encoders (notes 6.4: white 0.5 mm / 0.1 deg)": dataclasses.replace(
            low, position_std=5e-4, angle_std=np.deg2rad(0.1)
        ),
        "noise + constant encoder offsets (1 deg, 1-sigma)": an.paper_noise(encoder_offsets=True),
    }


# ----- data -----------------------------------------------------------------------------------
def record(team, payload, motion, duration, keep, noise, errors, rng, external=None):
    """Raw measured series over [0, duration), the kept sample mask, and (motion, the kept
    true times) for the information bound."""
    t = np.arange(0.0, duration, 1.0 / RATE)
    internal = an.squeeze_forces(team, 20.0)
    sim = an.simulate(
        team,
        payload,
        motion,
        t,
        internal=internal,
        noise=noise,
        errors=errors,
        rng=rng,
        external=external,
    )
    return sim.measured, keep(t), (motion, t[keep(t)])


def paper_series(raw, mask):
    """The paper's preprocessing: 5 Hz zero-phase Butterworth, central differences."""
    out = {}
    for r, s in raw.items():
        full = signals.series_from_poses(r, s.t, s.T_i0_i, s.F_i, s.g_i, 5.0, has_torque=False)
        out[r] = _cut(full, mask)
    return out


def project_series(raw, mask):
    """Project preprocessing: 5 Hz zero-phase Butterworth, Savitzky-Golay derivatives, raw
    poses and gravity (the pose fit whitens white pose noise itself)."""
    out = {}
    for r, s in raw.items():
        full = signals.series_from_poses(
            r, s.t, s.T_i0_i, s.F_i, s.g_i, 5.0, method="savgol", has_torque=False
        )
        full = dataclasses.replace(full, T_i0_i=s.T_i0_i, g_i=s.g_i)
        out[r] = _cut(full, mask)
    return out


def _cut(series, mask):
    fields = ("t", "T_i0_i", "V_i", "dV_i", "F_i", "g_i")
    return dataclasses.replace(series, **{f: getattr(series, f)[mask] for f in fields})


def experiment(noise, seed, quick):
    """Raw recordings of one run of the protocol, as (kind, raw, mask) tuples."""
    rng = np.random.default_rng(seed)
    team, payload = an.paper_team(), an.paper_payload()
    errors = noise.draw_errors(team.robot_ids, rng, team.reference_id)
    runs = []
    guide = an.HumanGuidance(((0.0, 14.0),))  # float mode: the human moves the payload
    for _ in range(2 if quick else 5):
        motion = an.paper_kinematics_motion(rng)
        kept = _middle(2.0, 12.0)
        runs.append(("kin", *record(team, payload, motion, 14.0, kept, noise, errors, rng, guide)))
    statics = an.paper_static_motion()
    duration = statics.rotation.duration

    def holds(t):
        k = statics.rotation.holding(t)
        return (k >= 1) & (k <= 4)

    runs.append(("static", *record(team, payload, statics, duration, holds, noise, errors, rng)))
    for _ in range(2 if quick else 4):
        motion = an.paper_inertia_motion(rng)
        runs.append(
            (
                "inertia",
                *record(team, payload, motion, 60.0, _middle(4.0, 56.0), noise, errors, rng),
            )
        )
    return runs


def _middle(start, stop):
    return lambda t: (t >= start) & (t < stop)


# ----- errors ---------------------------------------------------------------------------------
def grasp_errors(T_s_i, truth):
    out = {}
    for i, j in PAIRS:
        T_hat = sp.inverse(T_s_i[i]) @ T_s_i[j]
        T = sp.inverse(truth[i]) @ truth[j]
        key = i[-1] + j[-1]
        out["R" + key] = np.rad2deg(sp.rotation_angle(T[:3, :3].T @ T_hat[:3, :3]))
        out["p" + key] = np.linalg.norm(T_hat[:3, 3] - T[:3, 3])
    return out


def payload_errors(mass, com, moments, truth):
    true_moments = truth.principal_axes()[0]
    out = {"mass": abs(mass - truth.mass), "p1c": np.linalg.norm(com - truth.com)}
    if moments is not None:
        for name, m, m_true in zip(("Ixx", "Iyy", "Izz"), moments, true_moments, strict=True):
            out[name] = abs(m - m_true)
    return out


def truth_value(row, team, payload):
    if row.startswith("p") and row != "p1c":
        i, j = "robot_" + row[1], "robot_" + row[2]
        return np.linalg.norm((sp.inverse(team.T_s_i[i]) @ team.T_s_i[j])[:3, 3])
    return {
        "mass": payload.mass,
        "p1c": np.linalg.norm(payload.com),
        **dict(zip(("Ixx", "Iyy", "Izz"), payload.principal_axes()[0], strict=True)),
    }.get(row)


# ----- the two methods ------------------------------------------------------------------------
def run_paper(runs, reference):
    """(per-trial errors, pooled errors) of the paper's method."""
    team, payload = an.paper_team(), an.paper_payload()
    series = {
        kind: [paper_series(raw, mask) for k, raw, mask, _ in runs if k == kind] for kind in KINDS
    }
    per_trial, pooled = {}, {}
    grasps = [paper_grasps(s, reference) for s in series["kin"]]
    for T in grasps:
        _collect(per_trial, grasp_errors(T, team.T_s_i))
    T_mean = {
        r: sp.transform(
            Rotation.from_matrix([T[r][:3, :3] for T in grasps]).mean().as_matrix(),
            np.mean([T[r][:3, 3] for T in grasps], axis=0),
        )
        for r in team.robot_ids
    }
    mass, com = paper_mass_com(joined(series["static"]), T_mean, reference)
    _collect(per_trial, payload_errors(mass, com, None, payload))
    for s in series["inertia"]:
        _, moments, _ = paper_inertia(s, T_mean, com, reference)
        errors = payload_errors(mass, com, moments, payload)
        _collect(per_trial, errors, only=("Ixx", "Iyy", "Izz"))
    T_all = paper_grasps(joined(series["kin"]), reference)
    mass, com = paper_mass_com(joined(series["static"]), T_all, reference)
    _, moments, _ = paper_inertia(joined(series["inertia"]), T_all, com, reference)
    _collect(pooled, grasp_errors(T_all, team.T_s_i))
    _collect(pooled, payload_errors(mass, com, moments, payload))
    return per_trial, pooled


KINDS = ("kin", "static", "inertia")


def joined(trials):
    """One series per robot from several trials (each filtered and differentiated alone)."""
    fields = ("t", "T_i0_i", "V_i", "dV_i", "F_i", "g_i")
    return {
        r: dataclasses.replace(
            trials[0][r], **{f: np.concatenate([getattr(s[r], f) for s in trials]) for f in fields}
        )
        for r in trials[0]
    }


def run_project(runs, reference):
    team, payload = an.paper_team(), an.paper_payload()
    recordings = {
        kind: [
            Recording(project_series(raw, mask), "static" if kind == "static" else "moving")
            for k, raw, mask, _ in runs
            if k == kind
        ]
        for kind in ("kin", "static", "inertia")
    }
    per_trial, all_data = {}, {}
    for rec in recordings["kin"]:
        s = rec.series
        fit = gk.fit_grasps(
            {r: x.V_i for r, x in s.items()},
            reference,
            poses={r: x.T_i0_i for r, x in s.items()},
            gravity={r: x.g_i for r, x in s.items()},
        )
        _collect(per_trial, grasp_errors(fit.T_s_i, team.T_s_i))
    for rec in recordings["inertia"]:
        est = estimate_offline(recordings["static"] + [rec], reference)
        _collect(
            per_trial,
            _estimate_errors(est, team, payload),
            only=("mass", "p1c", "Ixx", "Iyy", "Izz"),
        )
    everything = recordings["kin"] + recordings["static"] + recordings["inertia"]
    estimate = estimate_offline(everything, reference)
    _collect(all_data, _estimate_errors(estimate, team, payload))
    return per_trial, all_data, estimate


REFUSED = "refused"


def _estimate_errors(estimate, team, payload):
    """Errors of the valid quantities; refused ones (validity flag False) are marked."""
    out = {}
    if estimate.grasps_valid:
        out.update(grasp_errors({g.robot_id: g.T_s_i for g in estimate.grasps}, team.T_s_i))
    else:
        out.update({row: REFUSED for row in PAPER if row[0] in "Rp" and row != "p1c"})
    moments = estimate.principal_moments if estimate.inertia_valid else None
    errors = payload_errors(estimate.mass, estimate.p_s_c, moments, payload)
    valid = {"mass": estimate.mass_valid, "p1c": estimate.com_valid}
    valid.update(dict.fromkeys(("Ixx", "Iyy", "Izz"), estimate.inertia_valid))
    out.update({row: errors[row] if ok else REFUSED for row, ok in valid.items()})
    return out


def _collect(store, values, only=None):
    """Append errors per row; refusals are counted under (row, "refused")."""
    for key, value in values.items():
        if only is None or key in only:
            if value == REFUSED:
                store[key, REFUSED] = store.get((key, REFUSED), 0) + 1
            else:
                store.setdefault(key, []).append(float(value))


# ----- the information bound ------------------------------------------------------------------
def bound_errors(runs, noise):
    """Cramer-Rao bound on the all-data errors of mass, CoM and principal moments, as the mean
    absolute errors an efficient unbiased estimator would have. A lower bound for this data:
    exact kinematics and grasps, only the white force noise; internal forces unknown (only the
    net wrench informs); the guided trials left out (their human wrench is unmeasured).
    Unconstrained: where J > 0 is nearly active (this frame is flat, lambda_min(J) is about 2
    sigma from 0), a consistent estimator may beat it."""
    team, payload = an.paper_team(), an.paper_payload()
    torque = [team.has_torque(r) for r in team.robot_ids]
    A_f, _ = WrenchMoments.empty(team.robot_ids, torque).noise_structure(team.T_s_i)
    noise_information = np.linalg.inv(noise.force_std**2 * A_f)
    information = np.zeros((10, 10))
    for kind, _, _, (motion, t) in runs:
        if kind != "kin":
            T_w_s, V_s, dV_s = motion.evaluate(t)
            g_s = np.einsum("kji,j->ki", T_w_s[:, :3, :3], an.GRAVITY_W)
            Y = body_regressor(V_s, dV_s, g_s)
            information += np.einsum("kia,ij,kjb->ab", Y, noise_information, Y)
    C = _propagate(np.linalg.inv(information), payload.vec)
    draws = np.random.default_rng(0).multivariate_normal(np.zeros(3), C[1:4, 1:4], 20000)
    half_normal = np.sqrt(2.0 / np.pi * np.diag(C))
    return {
        "mass": half_normal[0],
        "p1c": float(np.mean(np.linalg.norm(draws, axis=1))),
        **dict(zip(("Ixx", "Iyy", "Izz"), half_normal[4:], strict=True)),
    }


def _propagate(C_theta, theta, step=1e-6):
    """Covariance of (mass, CoM, principal moments ascending) from that of theta."""

    def quantities(vec):
        body = InertialParameters(vec)
        return np.r_[body.mass, body.com, body.principal_axes()[0]]

    J = np.array([quantities(theta + step * e) - quantities(theta - step * e) for e in np.eye(10)])
    J = J.T / (2 * step)
    return J @ C_theta @ J.T


# ----- tables ---------------------------------------------------------------------------------
def cell(values, unit, truth):
    """Mean of the values, and its percentage of the true magnitude where it has one."""
    if not values:
        return "-"
    mean = float(np.mean(values))
    digits = 4 if unit == "deg" else 5
    if truth is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({100 * mean / truth:.3f}%)"


COLUMNS = (  # (store, header)
    ("paper per trial", "paper per trial"),
    ("project per trial", "project per trial"),
    ("paper pooled", "paper pooled"),
    ("project all data", "project all data"),
    ("bound", "bound (CRB)"),
)


def print_table(title, stores, with_ratio):
    """One row per paper row: reported, the four columns, and the two ratios."""
    team, payload = an.paper_team(), an.paper_payload()
    print(f"\n{title}")
    header = f"{'row':5} {'unit':7} {'paper reported':>15}" + "".join(
        f" {name:>18}" for _, name in COLUMNS
    )
    header += f" {'all/pooled':>10} {'trial/trial':>11} {'all/bound':>9}"
    print(header)
    print("-" * len(header))
    for row, (reported, reported_pct) in PAPER.items():
        unit = UNITS.get(row, UNITS.get(row[0]))
        truth = truth_value(row, team, payload)
        rep = f"{reported}" + (f" ({reported_pct}%)" if reported_pct else "")
        cells = "".join(f" {cell(stores[key].get(row), unit, truth):>18}" for key, _ in COLUMNS)
        ratios = [
            _ratio(stores[a].get(row), stores[b].get(row)) if with_ratio else "n/a"
            for a, b in (
                ("project all data", "paper pooled"),
                ("project per trial", "paper per trial"),
                ("project all data", "bound"),
            )
        ]
        print(f"{row:5} {unit:7} {rep:>15}{cells} {ratios[0]:>10} {ratios[1]:>11} {ratios[2]:>9}")
    for key, store in stores.items():
        for row in PAPER:
            if (row, REFUSED) in store:
                total = store[row, REFUSED] + len(store.get(row, []))
                print(f"  (refused, not averaged: {row}: {store[row, REFUSED]} of {total} {key})")


def _ratio(ours, theirs):
    if not ours or not theirs:
        return "n/a"
    return f"{np.mean(ours) / np.mean(theirs):.2f}"


# ----- online ---------------------------------------------------------------------------------
def online_session(n, seed):
    """A continuous session for an N-robot team: 15 s of 6-DoF motion, four static tilts,
    40 s of pivoting; robots with twist, pose and force sensing (white noise)."""
    rng = np.random.default_rng(seed)
    if n == 3:
        team, payload = an.paper_team(), an.paper_payload()
    else:
        team, T_s_p = an.ring_team(n, rng)
        body = an.paper_payload()
        payload = InertialParameters.from_mass_com_inertia(
            body.mass, [0.0, 0.0, 0.07], np.diag(body.principal_axes()[0])
        ).transformed(T_s_p)
    kin = an.paper_kinematics_motion(rng)
    pivot = an.paper_inertia_motion(rng)
    tilts = an.paper_static_motion().rotation
    still = an.SmoothWaypoints(np.zeros((1, 3)), 1.0, 1.0)
    segments = [
        (
            an.PayloadMotion(
                an.Ramped(kin.rotation, 15, 1.5), an.Ramped(kin.translation, 15, 1.5), kin.pivot_s
            ),
            15.0,
        ),
        (an.PayloadMotion(tilts, still, payload.com), tilts.duration),
        (
            an.PayloadMotion(
                an.Ramped(pivot.rotation, 40, 2.0),
                pivot.translation,
                team.T_s_i[team.robot_ids[-1]][:3, 3],
            ),
            40.0,
        ),
    ]
    noise = an.instrumented_noise()
    sim, _ = an.simulate_session(
        team, payload, segments, RATE, noise=noise, rng=rng, internal=an.squeeze_forces(team, 20.0)
    )
    return team, payload, an.synchronized_sets(sim.measured)


def online_run(n, seed):
    """Feed the session sample by sample; estimate() every 0.25 s for 5 s, then every 2 s."""
    team, payload, sets = online_session(n, seed)
    estimator = TeamEstimator(team.robot_ids, team.reference_id, EstimatorSettings())
    update_times, history = [], []
    for k, samples in enumerate(sets):
        start = time.perf_counter()
        estimator.update(samples)
        update_times.append(time.perf_counter() - start)
        every = 25 if k < 5 * RATE else 200
        if (k + 1) % every == 0:
            history.append(((k + 1) / RATE, estimator.estimate()))
    start = time.perf_counter()
    final = estimator.estimate_now()
    return np.array(update_times), history, final, time.perf_counter() - start, team, payload


def convergence_time(history, final, quantity):
    """Earliest estimate time after which ``quantity`` stays within 5% of its final value."""
    target = quantity(final)
    if target is None:
        return None
    times = [t for t, _ in history]
    good = [
        q is not None and np.linalg.norm(q - target) <= 0.05 * np.linalg.norm(target)
        for q in (quantity(e) for _, e in history)
    ]
    bad = [k for k, ok in enumerate(good) if not ok]
    if not bad:
        return times[0]
    return times[bad[-1] + 1] if bad[-1] + 1 < len(times) else None


QUANTITIES = {
    "grasp positions": lambda e: (
        np.concatenate([g.T_s_i[:3, 3] for g in e.grasps]) if e.grasps_valid else None
    ),
    "mass": lambda e: np.array([e.mass]) if e.mass_valid else None,
    "CoM": lambda e: e.p_s_c if e.com_valid else None,
    "principal moments": lambda e: e.principal_moments if e.inertia_valid else None,
}


def online_table(quick):
    print(
        "\nOnline TeamEstimator: one session per team size (15 s of 6-DoF motion, 4 static "
        "tilts, 40 s pivoting; estimate() every 0.25 s for 5 s, then every 2 s)"
    )
    print(
        f"{'N':>3} {'update median':>14} {'update p95':>11} {'per robot':>10} {'solve':>8}  "
        "converged within 5% of the final value at [s]"
    )
    for n in (3, 8) if quick else (3, 8, 16):
        times, history, final, solve, team, payload = online_run(n, seed=10 + n)
        conv = {name: convergence_time(history, final, q) for name, q in QUANTITIES.items()}
        conv_text = ", ".join(
            f"{k} {v:.0f}" if v is not None else f"{k} never" for k, v in conv.items()
        )
        median, p95 = 1e6 * np.median(times), 1e6 * np.percentile(times, 95)
        print(
            f"{n:>3} {median:>11.0f} us {p95:>8.0f} us {median / n:>7.0f} us {solve:>7.2f}s  "
            f"{conv_text}"
        )
        errors = _estimate_errors_any(final, team, payload)
        print(f"    final: stage {final.stage.name}, {errors}")


def _estimate_errors_any(estimate, team, payload):
    grasp = max(
        np.linalg.norm(g.T_s_i[:3, 3] - team.T_s_i[g.robot_id][:3, 3]) for g in estimate.grasps
    )
    moments = payload.principal_axes()[0]
    rel = np.abs(estimate.principal_moments - moments) / moments
    return (
        f"grasp position error max {1000 * grasp:.2f} mm, "
        f"mass {estimate.mass - payload.mass:+.4f} kg, "
        f"CoM {1000 * np.linalg.norm(estimate.p_s_c - payload.com):.2f} mm, "
        f"moments {np.array2string(100 * rel, precision=2)} %"
    )


# ----- an unmeasured external wrench: the human-guided phase in MuJoCo -----------------------
def human_guided_table():
    """MuJoCo's human-guided phase (config/scenarios/test_three_gimbals.yaml: 6 s guided, two
    holds, 12 s on spheres; noise-free sensors at 500 Hz) through both estimators."""
    data = yaml.safe_load((SCENARIOS / "test_three_gimbals.yaml").read_text())
    data["excitation"][0]["duration"] = 6.0
    data["excitation"][2].update(duration=12.0, ramp=1.0)
    run = run_scenario(data)
    truth = run.ground_truth
    moments = truth.payload.principal_axes()[0]
    guided = [Recording(s, "moving") for s in run.segments("human_guided")]
    held = [Recording(s, "static") for s in run.segments("static")]
    sphere = [Recording(s, "moving") for s in run.segments("sphere")]
    fast, off = EstimatorSettings(500.0), EstimatorSettings(500.0, detect_external_wrench=False)
    cases = {
        "offline, all recordings, detection off": (guided + held + sphere, off),
        "offline, static + sphere recordings only": (held + sphere, fast),
        "offline, all recordings": (guided + held + sphere, fast),
    }
    estimates = {k: estimate_offline(r, truth.reference_robot, c) for k, (r, c) in cases.items()}
    force = np.linalg.norm(truth.F_human_s[:, 3:], axis=1)
    acting = truth.time[force > 1.0]
    decimated = {r: s.select(np.arange(len(s)) % 5 == 0) for r, s in run.series().items()}
    sets = an.synchronized_sets(decimated)
    after = [s for s in sets if s[truth.reference_robot].stamp > acting[-1] + 1.0]
    for name, stream in (("all samples in time order", sets), ("from 1 s after the human", after)):
        estimator = TeamEstimator(list(decimated), truth.reference_robot, EstimatorSettings(100.0))
        for k, samples in enumerate(stream):
            estimator.update(samples)
            if k % 100 == 99:
                estimator.estimate()
        estimates[f"online (100 Hz), {name}"] = estimator.estimate_now()
    phase = truth.grasps[truth.reference_robot].meta["phase"] == "human_guided"
    print(
        "\nAn unmeasured external wrench: MuJoCo's human-guided phase (test_three_gimbals: 6 s "
        "guided, 2 holds, 12 s spheres)"
    )
    print(
        f"  the human's force acts {acting[0]:.1f}-{acting[-1]:.1f} s, RMS "
        f"{np.sqrt(np.mean(force[phase] ** 2)):.1f} N over the guided phase (ground truth)"
    )
    print(f"{'estimator':53} {'principal moments [kg m^2]':>28} {'error %':>20}  set aside")
    print(f"{'truth':53} {np.array2string(moments, precision=4):>28}")
    for name, estimate in estimates.items():
        error = 100 * (estimate.principal_moments / moments - 1)
        spans = ", ".join(
            [
                f"{s.samples} samples {s.start:.1f}-{s.end:.1f} s ({s.force:.0f} N)"
                for s in estimate.external_wrench_spans
            ]
            + [
                f"{s.samples} samples {s.start:.1f}-{s.end:.1f} s (size not determined)"
                for s in estimate.undecided_spans
            ]
        )
        print(
            f"{name:53} {np.array2string(estimate.principal_moments, precision=4):>28} "
            f"{np.array2string(error, precision=2):>20}  {spans or '-'}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="fewer trials, for a smoke run")
    args = parser.parse_args()
    reference = "robot_1"
    print(__doc__.split("\n\n")[0])
    for k, (name, noise) in enumerate(variants().items()):
        stores = {key: {} for key, _ in COLUMNS}
        set_aside, guided = [], []
        start = time.perf_counter()
        for rep in range(args.repetitions):
            runs = experiment(noise, seed=1000 * k + rep, quick=args.quick)
            paper_trial, paper_pooled = run_paper(runs, reference)
            project_trial, project_all, estimate = run_project(runs, reference)
            bound = {row: [value] for row, value in bound_errors(runs, noise).items()}
            for key, values in zip(
                (c for c, _ in COLUMNS),
                (paper_trial, project_trial, paper_pooled, project_all, bound),
                strict=True,
            ):
                _merge(stores[key], values)
            set_aside.append(estimate.samples_external_wrench)
            guided.append(sum(mask.sum() for kind, _, mask, _ in runs if kind == "kin"))
        title = (
            f"Variant: {name}; {args.repetitions} repetitions ({time.perf_counter() - start:.0f} s)"
        )
        print_table(title, stores, with_ratio="offsets" not in name)
        print(
            f"  project all data set aside {np.mean(set_aside):.0f} samples per repetition for an "
            f"external wrench (the human-guided kinematics trials hold {np.mean(guided):.0f})"
        )
    human_guided_table()
    online_table(args.quick)


def _merge(store, values):
    for key, value in values.items():
        if isinstance(value, list):
            store.setdefault(key, []).extend(value)
        else:
            store[key] = store.get(key, 0) + value


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/cooperative.md

    with benchmark_page("cooperative"):
        main()
