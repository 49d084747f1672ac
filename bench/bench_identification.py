"""Benchmarks of physically consistent identification (papers 001 and 003).

1. Paper 001, Table III: the composite object on a UR5 wrist, ~150 samples at 100 Hz,
   moderate noise (Table II), three speeds; OLS, GEO, PMD and the project's method.
2. Error against the number of samples (50 to 5000): OLS, LMI-SDP and the project's method.
3. Solve times: single-body SDP cold and warm, PMD with ~60 points, and the multi-body
   problem size of paper 003 (6 bodies + 6 friction parameters, 30,000 rows).

Run: .venv/bin/python bench/bench_identification.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pinocchio as pin
from filterpy.common import Q_discrete_white_noise
from filterpy.kalman import KalmanFilter

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inertia_estimation_ros.core import spatial as sp
from inertia_estimation_ros.core.identification import (
    CONFIGURATIONS,
    Box,
    ConsistentIdentification,
    Ellipsoid,
    PointMassDiscretization,
    RegressionData,
    ShapePriorIdentification,
    ShapeUnion,
    com_errors,
    composite_object,
    inertia_errors,
    least_squares,
    mass_error,
    outer_shell,
    total_least_squares,
)
from inertia_estimation_ros.core.inertial import InertialParameters
from inertia_estimation_ros.core.regressor import body_regressor

GRAVITY_W = np.array([0.0, 0.0, -9.81])
RATE = 100.0  # Hz, the FT-300 rate of paper 001
# Table II of paper 001, "moderate": angular acc., linear acc., force, torque.
NOISE = {"alpha": 0.5, "a": 0.05, "force": 0.1, "torque": 0.005}
PMD_PITCH = (1.0 / 0.04) ** (1.0 / 3.0) * 1e-2  # 0.04 points per cm^3 (paper 001, Sec. VI)

# UR5 as in Modern Robotics (Lynch and Park), Example 4.5: home pose M and space screw axes.
_W1, _W2, _L1, _L2, _H1, _H2 = 0.109, 0.082, 0.425, 0.392, 0.089, 0.095
_M = np.array(
    [[-1, 0, 0, _L1 + _L2], [0, 0, 1, _W1 + _W2], [0, 1, 0, _H1 - _H2], [0, 0, 0, 1]], dtype=float
)
_S = np.array(
    [
        [0, 0, 1, 0, 0, 0],
        [0, 1, 0, -_H1, 0, 0],
        [0, 1, 0, -_H1, 0, _L1],
        [0, 1, 0, -_H1, 0, _L1 + _L2],
        [0, 0, -1, -_W1, _L1 + _L2, 0],
        [0, 1, 0, _H2 - _H1, 0, _L1 + _L2],
    ],
    dtype=float,
)
_B = (sp.adjoint(sp.inverse(_M)) @ _S.T).T  # body screw axes
_Q0 = np.radians([0, -90, 60, -90, -90, 0])
_FREQUENCIES = np.array([0, 0, 0, 0.1, 0.13, 0.16])  # Hz, joints 4-6 (paper 001, Sec. VI)
_AMPLITUDE = np.radians(45)


def _body_jacobian(q: np.ndarray) -> np.ndarray:
    """J_b(q) (Modern Robotics Eq. 5.18): column i is Ad(e^-[B_n]q_n ... e^-[B_i+1]q_i+1) B_i."""
    J = np.empty((6, 6))
    T_tail = np.eye(4)
    for i in range(5, -1, -1):
        J[:, i] = sp.adjoint(T_tail) @ _B[i]
        T_tail = T_tail @ sp.exp6(-_B[i] * q[i])
    return J


def _forward_kinematics(q: np.ndarray) -> np.ndarray:
    T = _M.copy()
    for B, angle in zip(_B, q, strict=True):
        T = T @ sp.exp6(B * angle)
    return T


def flange_motion(
    q: np.ndarray, dq: np.ndarray, ddq: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(R_w_s, V_s, dV_s) per sample: V = J_b dq, dV = J_b ddq + (dJ_b/dt) dq."""
    h = 1e-6
    R, V, dV = [], [], []
    for qk, dqk, ddqk in zip(q, dq, ddq, strict=True):
        J = _body_jacobian(qk)
        dJ = (_body_jacobian(qk + h * dqk) - _body_jacobian(qk - h * dqk)) / (2 * h)
        R.append(_forward_kinematics(qk)[:3, :3])
        V.append(J @ dqk)
        dV.append(J @ ddqk + dJ @ dqk)
    return np.array(R), np.array(V), np.array(dV)


def joint_trajectory(speed: float, n_samples: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q = q0 + 45 deg sin(2 pi f speed t) on joints 4-6 at 100 Hz, and its derivatives."""
    t = np.arange(n_samples)[:, None] / RATE
    phase = 2 * np.pi * _FREQUENCIES * speed
    return (
        _Q0 + _AMPLITUDE * np.sin(phase * t),
        _AMPLITUDE * phase * np.cos(phase * t),
        -_AMPLITUDE * phase**2 * np.sin(phase * t),
    )


def speed_scale(mean_angular_velocity: float, duration: float = 35.0) -> float:
    """The time scale s that gives this mean |omega| over the trajectory (paper 001, Sec. VI).

    With q(s t), omega scales with s and the window with 1/s: iterate s on the fixed point.
    """
    scale = 1.0
    for _ in range(4):
        q, dq, _ = joint_trajectory(1.0, int(duration * scale * 10))
        q, dq = q[::10], dq[::10]  # every 0.1 s
        mean = np.mean(
            [np.linalg.norm((_body_jacobian(a) @ b)[:3]) for a, b in zip(q, dq, strict=True)]
        )
        scale = mean_angular_velocity / mean
    return scale


def kalman_joint_estimates(
    q_measured: np.ndarray, encoder_std: float, jerk_variance: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q, dq, ddq) from a constant-acceleration Kalman filter per joint, started at rest."""
    dt = 1.0 / RATE
    out = np.zeros(q_measured.shape + (3,))
    for j in range(q_measured.shape[1]):
        kf = KalmanFilter(dim_x=3, dim_z=1)
        kf.F = np.array([[1.0, dt, dt * dt / 2], [0.0, 1.0, dt], [0.0, 0.0, 1.0]])
        kf.H = np.array([[1.0, 0.0, 0.0]])
        kf.R *= encoder_std**2
        kf.Q = Q_discrete_white_noise(3, dt, jerk_variance)
        kf.x = np.array([q_measured[0, j], 0.0, 0.0])
        kf.P = np.diag([encoder_std**2, 1.0, 10.0])
        for k in range(len(q_measured)):
            if k:
                kf.predict()
            kf.update(q_measured[k, j])
            out[k, j] = kf.x
    return out[..., 0], out[..., 1], out[..., 2]


# The sensor frame {s} is the flange; the object's bottom face sits on it, centred on
# weight hole 5 at (0, -25, 0) mm of the object frame {o}, as in the authors' example.
T_S_O = sp.transform(np.eye(3), [0.0, 0.025, 0.0])
WRENCH_STD = np.r_[[NOISE["torque"]] * 3, [NOISE["force"]] * 3]
ENCODER_STD, JERK_VARIANCE = 1e-4, 1.0  # the Kalman-filter stand-in (paper 001 gives none)
# Error std of dV = (alpha, dv) per kinematics source; for the Kalman filter, the RMS error
# it makes on this trajectory (printed by benchmark_table_iii).
DV_STD = {
    "exact": np.zeros(6),
    "table-ii": np.r_[[NOISE["alpha"]] * 3, [NOISE["a"]] * 3],
    "kalman": np.r_[[0.8] * 3, [0.35] * 3],
}


class Scenario:
    """Exact flange motion (from joint trajectories), and noisy measurements of it."""

    def __init__(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> None:
        self.joints = (q, dq, ddq)
        self.R_w_s, self.V, self.dV = flange_motion(q, dq, ddq)
        self.g_s = np.einsum("kji,j->ki", self.R_w_s, GRAVITY_W)

    def first(self, n: int) -> Scenario:
        return Scenario(*(x[:n] for x in self.joints))

    def measure(
        self, truth_s: InertialParameters, rng: np.random.Generator, kinematics: str
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(V, dV, g_s, F): F = Y theta + Table II noise; V, dV exact ("exact"), exact plus
        Table II noise ("table-ii"), or from the Kalman filter on noisy encoders ("kalman",
        the Table III setting)."""
        F = body_regressor(self.V, self.dV, self.g_s) @ truth_s.vec
        F = F + rng.normal(size=F.shape) * WRENCH_STD
        if kinematics != "kalman":
            dV_std = DV_STD[kinematics]
            return self.V, self.dV + rng.normal(size=self.dV.shape) * dV_std, self.g_s, F
        q = self.joints[0] + rng.normal(size=self.joints[0].shape) * ENCODER_STD
        _, V, dV = flange_motion(*kalman_joint_estimates(q, ENCODER_STD, JERK_VARIANCE))
        return V, dV, self.g_s, F


def _shell_in_sensor_frame() -> ShapeUnion:
    return outer_shell(relaxation="quadratic").transformed(T_S_O)


class Methods:
    """The estimators of the comparison, each built once and re-used."""

    def __init__(self) -> None:
        self.shell = _shell_in_sensor_frame()
        self.pmd_points = self.shell.grid(PMD_PITCH)
        fine = self.shell.grid(0.005)
        self.uniform_unit = InertialParameters.from_point_masses(
            np.full(len(fine), 1.0 / len(fine)), fine
        )
        self.geo = ConsistentIdentification(regularizer="entropic")
        self.lmi = ConsistentIdentification(shapes=self.shell)
        self.best = {
            kinematics: ShapePriorIdentification(
                self.shell, WRENCH_STD, dV_std, bias_compensation=kinematics != "kalman"
            )
            for kinematics, dV_std in DV_STD.items()
        }

    def ols(self, V, dV, g, F, kinematics):
        return least_squares(RegressionData.from_rows(body_regressor(V, dV, g), F))

    def tls(self, V, dV, g, F, kinematics):
        return total_least_squares(RegressionData.from_rows(body_regressor(V, dV, g), F))

    def geo_(self, V, dV, g, F, kinematics):
        """GEO as in paper 001: entropic prior = uniform fill of the shape (mass from OLS),
        gamma = 1e-5 tr(A^T A) as in the authors' later code."""
        data = RegressionData.from_rows(body_regressor(V, dV, g), F)
        prior = InertialParameters(abs(least_squares(data).mass) * self.uniform_unit.vec)
        gamma = 1e-5 * np.trace(data.information) / data.n_rows
        return self.geo.solve(data, prior, gamma).params

    def lmi_sdp(self, V, dV, g, F, kinematics):
        """Paper 003's SDP: least squares, J > 0 and realizable on the shell, no prior."""
        return self.lmi.solve(RegressionData.from_rows(body_regressor(V, dV, g), F)).params

    def pmd(self, V, dV, g, F, kinematics):
        estimator = PointMassDiscretization(self.pmd_points)
        estimator.add(V, dV, g, F)
        return estimator.solve()

    def project(self, V, dV, g, F, kinematics):
        estimator = self.best[kinematics]
        estimator.reset()
        estimator.add(V, dV, g, F)
        return estimator.solve()


def measurements(scenario: Scenario, objects: list, seeds: int, kinematics: str) -> list:
    """(object, truth in {s}, (V, dV, g, F)) for every object and noise seed."""
    out = []
    for obj in objects:
        truth = obj.params.transformed(T_S_O)
        for seed in range(seeds):
            out.append(
                (obj, truth, scenario.measure(truth, np.random.default_rng(seed), kinematics))
            )
    return out


def evaluate(method, cases: list, kinematics: str) -> tuple[np.ndarray, float]:
    """Mean mass / CoM / inertia errors [%] (paper 001 Eqs. 10-12) and % consistent."""
    errors, consistent = [], []
    for obj, truth, data in cases:
        estimate = method(*data, kinematics)
        errors.append(
            [
                mass_error(estimate, truth),
                com_errors(estimate, truth, obj.bounding_box).mean(),
                inertia_errors(estimate, truth, obj.bounding_box).mean(),
            ]
        )
        consistent.append(estimate.is_consistent())
    return np.mean(errors, axis=0), 100.0 * np.mean(consistent)


# Paper 001, Table III (moderate noise, Kalman-filtered kinematics, ~150 samples):
# method -> (mass, CoM, inertia) at 1.0, 1.5, 2.0 rad/s; inertia ">500" as inf.
PAPER_TABLE_III = {
    "OLS": ((1.36, 2.88, 3.22), (34.4, 44.0, 36.1), (np.inf,) * 3),
    "RTLS": ((1.84, 1.77, 2.41), (97.5, 37.7, 38.2), (np.inf,) * 3),
    "GEO": ((1.45, 2.65, 4.09), (33.0, 33.1, 32.6), (np.inf, 252, 109)),
    "PMD": ((1.34, 2.15, 1.91), (9.83, 15.5, 16.4), (44.1, 43.5, 43.6)),
}


def _cell(ours: float, paper: float | None) -> str:
    paper_text = "" if paper is None else (">500" if np.isinf(paper) else f"{paper:g}")
    return f"{ours:7.2f} {('(' + paper_text + ')') if paper_text else '':>8}"


def benchmark_table_iii(seeds: int) -> None:
    speeds = {1.0: speed_scale(1.0), 1.5: speed_scale(1.5), 2.0: speed_scale(2.0)}
    objects = [composite_object(name) for name in CONFIGURATIONS]
    methods = Methods()
    rows = [
        ("OLS", methods.ols),
        ("RTLS", methods.tls),
        ("GEO", methods.geo_),
        ("PMD", methods.pmd),
        ("project", methods.project),
    ]
    scenarios = {w: Scenario(*joint_trajectory(s, 150)) for w, s in speeds.items()}
    titles = {
        "table-ii": "Table II moderate noise on alpha, a, force, torque (exact omega)",
        "kalman": "Kalman-filtered kinematics (encoder std 1e-4 rad, KF started at rest)",
    }
    for kinematics, title in titles.items():
        print(f"\n[1] Paper 001 Table III, {title}")
        print(f"    150 samples at 100 Hz, 8 objects x {seeds} seeds; ours (paper), errors in %")
        cases = {w: measurements(scenarios[w], objects, seeds, kinematics) for w in speeds}
        if kinematics == "kalman":
            errors = np.concatenate([c[2][1] - scenarios[w].dV for w in speeds for c in cases[w]])
            rms = np.sqrt(np.mean(errors**2, axis=0))
            alpha, a = rms[:3].mean(), rms[3:].mean()
            print(f"    KF RMS error: alpha {alpha:.2f} rad/s^2, a {a:.2f} m/s^2")
        header = "".join(
            f"{q + ' @' + str(w):>17}" for q in ("mass", "CoM", "inertia") for w in speeds
        )
        print(f"{'method':9}{header}{'consistent %':>14}")
        for name, method in rows:
            results = {w: evaluate(method, cases[w], kinematics) for w in speeds}
            paper = PAPER_TABLE_III.get(name)
            cells = [
                _cell(results[w][0][q], None if paper is None else paper[q][i])
                for q in range(3)
                for i, w in enumerate(speeds)
            ]
            share = min(results[w][1] for w in speeds)
            print(f"{name:9}" + "".join(f"{c:>17}" for c in cells) + f"{share:14.0f}")


def benchmark_samples(seeds: int) -> None:
    counts = (50, 150, 500, 1500, 5000)
    scenario = Scenario(*joint_trajectory(speed_scale(1.0), counts[-1]))
    objects = [composite_object(name) for name in CONFIGURATIONS]
    methods = Methods()
    names = [f"{m} {q}" for m in ("OLS", "LMI-SDP", "project") for q in ("CoM %", "inertia %")]
    titles = {
        "exact": "wrench noise only (paper 003's setting)",
        "table-ii": "Table II noise on the wrench and on alpha, a",
    }
    for kinematics, title in titles.items():
        print(f"\n[2] Error vs number of samples at 1.0 rad/s, {title}, 8 objects x {seeds} seeds")
        print("    LMI-SDP: least squares with J > 0 and realizable on the shell (paper 003)")
        print(f"{'samples':>8}" + "".join(f"{n:>18}" for n in names) + f"{'OLS consistent %':>18}")
        for n in counts:
            cases = measurements(scenario.first(n), objects, seeds, kinematics)
            results = [
                evaluate(method, cases, kinematics)
                for method in (methods.ols, methods.lmi_sdp, methods.project)
            ]
            cells = [errors[q] for errors, _ in results for q in (1, 2)]
            print(f"{n:8d}" + "".join(f"{c:18.2f}" for c in cells) + f"{results[0][1]:18.0f}")


def _timed(function, repeats: int = 1) -> float:
    """Median wall time of ``function()`` in ms."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def benchmark_times() -> None:
    print(
        "\n[3] Solve times [ms]: cold = build, compile, first solve; warm = re-solve, median of 20"
    )
    print(f"{'problem':58}{'cold':>10}{'warm':>10}")
    scenario = Scenario(*joint_trajectory(speed_scale(1.0), 150))
    truth = composite_object("Hammer").params.transformed(T_S_O)
    batches = [scenario.measure(truth, np.random.default_rng(k), "table-ii") for k in range(21)]
    rows = [RegressionData.from_rows(body_regressor(V, dV, g), F) for V, dV, g, F in batches]
    shell = _shell_in_sensor_frame()
    box = Box(np.array([0.1, 0.1575, 0.025]), p_b_s=T_S_O[:3, 3] + [0, 0, 0.025])
    ellipsoid = Ellipsoid(np.sqrt(3) * box.half_extents, p_b_s=box.p_b_s)
    for label, make in [
        ("SDP: J > margin (paper 003, Thm. 3)", lambda: ConsistentIdentification()),
        (
            "SDP: J > margin, bounding ellipsoid (Thm. 4)",
            lambda: ConsistentIdentification(shapes=ellipsoid),
        ),
        (
            "SDP: J > margin, bounding box (moment relaxation)",
            lambda: ConsistentIdentification(shapes=box),
        ),
        (
            "SDP: J > margin, 5-box shell, moment relaxation (Cor. 2)",
            lambda: ConsistentIdentification(shapes=outer_shell().transformed(T_S_O)),
        ),
        (
            "SDP: J > margin, 5-box shell, quadratic relaxation",
            lambda: ConsistentIdentification(shapes=shell),
        ),
        ("SDP: entropic prior (GEO)", lambda: ConsistentIdentification(regularizer="entropic")),
    ]:
        holder = {}
        prior = InertialParameters(truth.vec)
        weight = 1e-3 if "entropic" in label else 0.0

        def cold(make=make, holder=holder, prior=prior, weight=weight):
            holder["sdp"] = make()
            holder["sdp"].solve(rows[0], prior, weight)

        cold_ms = _timed(cold)
        batch = iter(rows[1:])
        warm_ms = _timed(
            lambda h=holder, p=prior, w=weight, b=batch: h["sdp"].solve(next(b), p, w), 20
        )
        print(f"{label:58}{cold_ms:10.1f}{warm_ms:10.1f}")

    methods = Methods()
    best = methods.best["table-ii"]
    for V, dV, g, F in batches[:1]:
        best.reset()
        best.add(V, dV, g, F)
    cold_ms = _timed(lambda: ShapePriorIdentification(shell, WRENCH_STD, DV_STD["table-ii"]))
    warm_ms = _timed(best.solve, 20)
    print(f"{'project method (build / solve)':58}{cold_ms:10.1f}{warm_ms:10.1f}")

    pmd = PointMassDiscretization(methods.pmd_points)
    pmd.add(*batches[0])
    cold_ms = _timed(pmd.solve)
    warm_ms = _timed(pmd.solve, 20)
    label = f"PMD, {len(methods.pmd_points)} points, 150 samples (SOCP)"
    print(f"{label:58}{cold_ms:10.1f}{warm_ms:10.1f}")

    data, shapes, regions = multibody_problem()
    start = time.perf_counter()
    compressed = RegressionData.from_rows(*data)
    qr_ms = 1e3 * (time.perf_counter() - start)
    sdp = {}
    cold_ms = _timed(
        lambda: sdp.setdefault(
            "p",
            ConsistentIdentification(6, n_extra=6, margin=1e-6, shapes=shapes, com_regions=regions),
        ).solve(compressed)
    )
    warm_ms = _timed(lambda: sdp["p"].solve(compressed), 5)
    label = "6 bodies + 6 friction, 30,000 rows (paper 003 size)"
    print(f"{label:58}{cold_ms:10.1f}{warm_ms:10.1f}   + {qr_ms:.0f} ms QR of the rows")
    print("    paper 003: 1.67 s end to end (MOSEK, Matlab, 2011 Core i5)")


def multibody_problem() -> tuple[tuple[np.ndarray, np.ndarray], list, list]:
    """Rows of Pinocchio's 6-joint sample arm (10,000 ... samples x 6 joints = 30,000 rows)
    plus viscous friction, with a bounding and a CoM ellipsoid per body (paper 003, Eq. 25)."""
    model = pin.buildSampleModelManipulator()
    data = model.createData()
    rng = np.random.default_rng(0)
    order = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])  # Pinocchio's dynamic parameters -> theta
    truths = [
        InertialParameters.from_pinocchio(model.inertias[j].toDynamicParameters())
        for j in range(1, 7)
    ]
    friction = rng.uniform(0.1, 0.5, 6)
    Y, tau = [], []
    for _ in range(5000):
        q, v, a = pin.randomConfiguration(model), rng.normal(size=6), rng.normal(size=6)
        Y_pin = pin.computeJointTorqueRegressor(model, data, q, v, a)
        Y_k = np.hstack([Y_pin.reshape(6, 6, 10)[:, :, order].reshape(6, 60), np.diag(v)])
        Y.append(Y_k)
        tau.append(Y_k @ np.concatenate([*(t.vec for t in truths), friction]))
    Y, tau = np.vstack(Y), np.concatenate(tau) + rng.normal(size=30000) * 0.1
    shapes, regions = [], []
    for body in truths:
        moments, R = np.linalg.eigh(
            body.pseudo_inertia[:3, :3] - np.outer(body.h, body.h) / body.mass
        )
        semi_axes = 2.0 * np.sqrt(np.maximum(moments, 1e-6) / body.mass)
        shapes.append(Ellipsoid(semi_axes, R if np.linalg.det(R) > 0 else -R, body.com))
        regions.append(Ellipsoid(semi_axes / 2, R if np.linalg.det(R) > 0 else -R, body.com))
    return (Y, tau), shapes, regions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed per object")
    args = parser.parse_args()
    seeds = 1 if args.quick else 3
    benchmark_table_iii(seeds)
    benchmark_samples(1 if args.quick else 2)
    benchmark_times()


if __name__ == "__main__":
    from doc_page import benchmark_page  # the tables into docs/benchmarks/identification.md

    with benchmark_page("identification"):
        main()
