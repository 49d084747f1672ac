"""The aerial team's estimation as the coordinator runs it (paper 002, Sec. VI-A): one cable
UKF per robot fed by its mocap and rotor speeds, the payload's motion from its mocap, and the
human's wrench (eq. 38 or 39) with its covariance, a dead band and a degraded flag that says
why. ROS-free: ``ros/aerial_estimation.py`` feeds it messages, ``commands/estimate_aerial.py``
a bag.

Timing: every message carries its stamp. A robot's UKF predicts to a mocap stamp with the
last rotor input and updates with the full measurement (eq. 36) when pose, twist and the
payload's mocap share the stamp, else with what it has; without mocap for ``mocap_timeout``
it coasts on the rotor speeds (its covariance grows). ``estimate(t)`` reads every filter as
it is.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..inertial import InertialParameters
from ..spatial import log3
from .allocation import E3, GRAVITY
from .cables import RigidBodyState, attach_accelerations, attach_points, cable_states
from .human_wrench import HumanWrenchEstimate, HumanWrenchEstimator
from .payload_motion import PayloadMotionFilter, PayloadMotionNoise
from .rotors import RotorModel
from .ukf import ATTITUDE, STATE_DIM, TENSION, CableTensionUKF, CableUKFNoise, RobotCableModel

METHODS = ("dynamic", "quasi_static")
# Start covariance of a robot's UKF (stds of x, v, attitude, Omega, xi, xi_dot, mu).
START_STDS = [1e-2] * 3 + [0.05] * 3 + [0.02] * 3 + [0.1] * 3 + [0.01] * 3 + [0.05] * 3 + [1.0]
# The tension's random walk 0.15 N/sqrt(s): on the 40 s Table II run (bench_aerial_estimation
# --walks) the dynamic F_z RMSE is 0.094 / 0.066 / 0.055 / 0.050 / 0.049 N at 0.05 / 0.1 /
# 0.15 / 0.2 / 0.3 (lag on the pulls' ramps against noise), and from 0.15 every axis is below
# both baselines; at rest the largest |F_z| is 0.055 / 0.077 / 0.096 N at 0.1 / 0.15 / 0.2
# (MuJoCo no-human test; the dead band is 0.1 N), 0.13 N at 0.3.
TEAM_UKF_NOISE = CableUKFNoise(process=(1e-3, 0.1, 1e-2, 0.5, 1e-2, 0.5, 0.15))


@dataclass(frozen=True)
class AerialTeamModel:
    """What the estimator assumes: per robot its cable model and rotor model, the attach
    points rho_k (n, 3) in L, and the payload's mass [kg] and inertia (3x3, about the CoM)."""

    robot_ids: tuple[str, ...]
    robots: tuple[RobotCableModel, ...]
    rotors: tuple[RotorModel, ...]
    attach_points: np.ndarray
    payload_mass: float
    payload_inertia: np.ndarray

    @classmethod
    def from_document(cls, document: dict, robot_ids: list[str] | None = None) -> AerialTeamModel:
        """From a team description: the schema of ``simulate``'s ground_truth.yaml
        (``payload``: mass, inertia_diagonal, attach_points; ``cable_length``; ``robots``:
        id -> mass, inertia_diagonal, k_f, k_m, arm, optional cable_length), robots in the
        order of ``robot_ids`` (default: the document's)."""
        try:
            payload, robots = document["payload"], document["robots"]
            ids = list(robot_ids or robots)
            missing = [r for r in ids if r not in robots]
            if missing:
                raise ValueError(f"robots {missing} are not described (described: {list(robots)})")
            cable_models, rotor_models = [], []
            for rid in ids:
                r = robots[rid]
                length = float(r.get("cable_length", document.get("cable_length", np.nan)))
                cable_models.append(RobotCableModel(r["mass"], r["inertia_diagonal"], length))
                rotor_models.append(RotorModel(r["arm"], r["k_f"], r["k_m"]))
            attach = np.asarray(payload["attach_points"], dtype=float)
            if attach.shape != (len(ids), 3):
                raise ValueError(
                    f"payload.attach_points has shape {attach.shape}: one (x, y, z) per robot "
                    f"({len(ids)}), in the robots' order"
                )
            return cls(
                tuple(ids),
                tuple(cable_models),
                tuple(rotor_models),
                attach,
                float(payload["mass"]),
                np.diag(np.asarray(payload["inertia_diagonal"], dtype=float)),
            )
        except KeyError as error:
            raise ValueError(
                f"team description: missing key {error} (expected payload.mass, "
                "payload.inertia_diagonal, payload.attach_points, cable_length and per robot "
                "mass, inertia_diagonal, k_f, k_m, arm: the schema of simulate's "
                "ground_truth.yaml)"
            ) from None


@dataclass(frozen=True)
class AerialEstimatorSettings:
    """``method``: dynamic (eq. 38, with the payload's acceleration) or quasi_static (eq. 39).
    The dead band: a wrench axis within ``dead_band_force`` [N] / ``dead_band_moment`` [N m]
    of zero reads as no contact (the dead-banded wrench shrinks every axis by it).
    ``mocap_timeout`` [s]: silence after which a source is degraded; ``sync_tolerance`` [s]:
    stamps this close are one instant; ``slack_tension`` [N]: a tension below it is a slack
    cable; ``reacquire_after`` [s]: a robot's UKF reacquires a kind of mocap update refused or
    missing this long (``CableTensionUKF``)."""

    method: str = "dynamic"
    dead_band_force: float = 0.1
    dead_band_moment: float = 0.03
    mocap_timeout: float = 0.1
    sync_tolerance: float = 0.002
    slack_tension: float = 0.05
    reacquire_after: float = 0.5
    ukf_noise: CableUKFNoise = TEAM_UKF_NOISE
    motion_noise: PayloadMotionNoise = field(default_factory=PayloadMotionNoise)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method {self.method!r}: choose one of {METHODS}")
        for name in ("dead_band_force", "dead_band_moment", "mocap_timeout", "sync_tolerance"):
            if not getattr(self, name) >= 0.0:
                raise ValueError(f"{name} = {getattr(self, name)}: must be >= 0")
        if not self.reacquire_after > 0.0:
            raise ValueError(f"reacquire_after = {self.reacquire_after}: must be > 0")


@dataclass
class AerialTeamEstimate:
    """At ``stamp``: per robot (order of ``robot_ids``) the tension [N], its std, xi_k (robot
    to attach point) and the 4x4 covariance of (xi_k, mu_k); the human wrench
    [F_H (I); M_H (L)] with its covariance, ``contact`` (outside the dead band),
    ``dead_banded`` (each axis shrunk by the dead band), ``degraded`` and why."""

    stamp: float
    robot_ids: tuple[str, ...]
    tension: np.ndarray
    tension_std: np.ndarray
    xi: np.ndarray
    cable_covariance: np.ndarray
    wrench: HumanWrenchEstimate | None
    payload_R: np.ndarray
    contact: bool = False
    dead_banded: np.ndarray = field(default_factory=lambda: np.zeros(6))
    reasons: list[str] = field(default_factory=list)

    @property
    def degraded(self) -> bool:
        return bool(self.reasons)

    @property
    def valid(self) -> bool:
        return self.wrench is not None

    def in_payload_frame(self, wrench: np.ndarray) -> np.ndarray:
        """[F (I); M (L)] (the paper's order) as the core's moment-first wrench in the payload
        frame L: (M, R_L^T F), what ``core.collaboration`` takes."""
        return np.concatenate([wrench[3:], self.payload_R.T @ wrench[:3]])


@dataclass(frozen=True)
class OnboardCable:
    """A robot's own estimate of its cable (its UKF run onboard): tension [N], its std, xi
    (robot to attach point) and the 4x4 covariance of (xi, mu)."""

    tension: float
    tension_std: float
    cable_direction: np.ndarray
    cable_covariance: np.ndarray


class _RobotTrack:
    """One robot's UKF and what arrived for it."""

    def __init__(self, index: int, model: RobotCableModel, rotors: RotorModel):
        self.index, self.model, self.rotors = index, model, rotors
        self.ukf: CableTensionUKF | OnboardCable | None = None
        self.onboard = False  # the robot estimates its cable itself (``onboard_cable``)
        self.time = -np.inf  # the UKF's state time
        self.input: np.ndarray | None = None
        self.last_input = -np.inf  # stamp of the last finite rotor speeds
        self.last_mocap = -np.inf
        self.pose: tuple[float, np.ndarray, np.ndarray] | None = None
        self.twist: tuple[float, np.ndarray, np.ndarray] | None = None
        self.counters: Counter[str] = Counter()

    @property
    def all_counters(self) -> Counter[str]:
        counts = Counter(self.counters)
        if isinstance(self.ukf, CableTensionUKF):
            counts.update(self.ukf.counters)
        return counts


class AerialTeamEstimator:
    """Feed it the mocap, rotor speeds (rad/s) and payload mocap of a team (``*_pose``,
    ``*_twist``, ``rotor_speeds``) in stamp order; ``estimate(t)`` returns an
    ``AerialTeamEstimate``. Twists are as mocap gives them: v and omega in the world frame."""

    def __init__(self, model: AerialTeamModel, settings: AerialEstimatorSettings | None = None):
        self.model = model
        self.settings = settings or AerialEstimatorSettings()
        self.human = HumanWrenchEstimator(
            model.attach_points, model.payload_mass, model.payload_inertia
        )
        self.tracks = {
            rid: _RobotTrack(k, m, r)
            for k, (rid, m, r) in enumerate(
                zip(model.robot_ids, model.robots, model.rotors, strict=True)
            )
        }
        self.lengths = np.array([m.length for m in model.robots])
        self.motion = PayloadMotionFilter(self.settings.motion_noise)
        self.payload: RigidBodyState | None = None
        self._payload_pose: tuple[float, np.ndarray, np.ndarray] | None = None
        self._payload_twist_time = -np.inf
        self.counters: Counter[str] = Counter()

    def use_payload(self, params: InertialParameters) -> None:
        """Estimate the human wrench with these payload parameters (in the mocap frame L,
        e.g. identified in flight, ``identification.py``): mass, CoM c and the inertia about
        it; the wrench's moment is then about c."""
        self.human = HumanWrenchEstimator(
            self.model.attach_points - params.com, params.mass, params.inertia_about_com
        )

    # ----- input ------------------------------------------------------------------------
    def payload_pose(self, t: float, x: np.ndarray, R: np.ndarray) -> None:
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(R))):
            self.counters["payload.nan"] += 1
            return
        self._payload_pose = (t, np.asarray(x, dtype=float), np.asarray(R, dtype=float))
        self.motion.update_pose(t, x)

    def payload_twist(self, t: float, v: np.ndarray, omega: np.ndarray) -> None:
        if self._payload_pose is None or not np.all(np.isfinite(np.r_[v, omega])):
            self.counters["payload.nan" if self._payload_pose else "payload.no_pose"] += 1
            return
        _, x, R = self._payload_pose
        Omega = R.T @ np.asarray(omega, dtype=float)
        self.motion.update_twist(t, v, Omega)
        self.payload = RigidBodyState(x, np.asarray(v, dtype=float), R, Omega)
        self._payload_twist_time = t

    def rotor_speeds(self, robot_id: str, t: float, rad_s: np.ndarray) -> None:
        """The ESC speeds [rad/s]; NaN ones are counted and the last valid input held. A
        robot without mocap for ``mocap_timeout`` coasts on them."""
        track = self.tracks[robot_id]
        u = track.rotors.input(rad_s) if len(rad_s) == 4 else np.full(4, np.nan)
        if np.all(np.isfinite(u)):
            track.input, track.last_input = u, t
        else:
            track.counters["rotor_speeds.invalid"] += 1
        if track.ukf is not None and t - track.last_mocap > self.settings.mocap_timeout:
            self._predict(track, t)

    def onboard_cable(self, robot_id: str, t: float, cable: OnboardCable) -> None:
        """A robot's own cable estimate (it runs its UKF onboard): used as it is, in place of
        the coordinator's UKF; non-finite ones are counted and refused."""
        track = self.tracks[robot_id]
        values = np.r_[cable.tension, cable.tension_std, cable.cable_direction]
        if not (np.all(np.isfinite(values)) and np.all(np.isfinite(cable.cable_covariance))):
            track.counters["onboard.invalid"] += 1
            return
        track.ukf, track.onboard, track.last_mocap = cable, True, t
        track.counters["onboard.accepted"] += 1

    def robot_pose(self, robot_id: str, t: float, p: np.ndarray, R: np.ndarray) -> None:
        track = self.tracks[robot_id]
        if track.pose is not None:  # the previous pose never met its twist
            self._update(track, pose=track.pose)
        track.pose = (t, np.asarray(p, dtype=float), np.asarray(R, dtype=float))
        self._try_mocap(track)

    def robot_twist(self, robot_id: str, t: float, v: np.ndarray, omega: np.ndarray) -> None:
        track = self.tracks[robot_id]
        if track.twist is not None:
            self._update(track, twist=track.twist)
        track.twist = (t, np.asarray(v, dtype=float), np.asarray(omega, dtype=float))
        self._try_mocap(track)

    # ----- the filters --------------------------------------------------------------------
    def _try_mocap(self, track: _RobotTrack) -> None:
        pose, twist = track.pose, track.twist
        if pose is not None and twist is not None:
            if abs(pose[0] - twist[0]) <= self.settings.sync_tolerance:
                self._update(track, pose=pose, twist=twist)
            elif pose[0] < twist[0]:
                self._update(track, pose=pose)
            else:
                self._update(track, twist=twist)

    def _start(self, track: _RobotTrack, t: float, p: np.ndarray, R: np.ndarray) -> bool:
        """The UKF's start at the first pose with the payload's: xi from the geometry."""
        if self.payload is None or not (np.all(np.isfinite(p)) and np.all(np.isfinite(R))):
            track.counters["mocap.waiting"] += 1
            return False
        attach = attach_points(self.payload, self.model.attach_points)[track.index]
        xi = (attach - p) / np.linalg.norm(attach - p)
        x0 = np.zeros(STATE_DIM)
        x0[:3], x0[ATTITUDE], x0[12:15] = p, log3(R), xi
        x0[TENSION] = self.model.payload_mass * GRAVITY / len(self.tracks)
        P0 = np.diag(np.square(START_STDS))
        track.ukf = CableTensionUKF(
            track.model, x0, P0, self.settings.ukf_noise,
            reacquire_after=self.settings.reacquire_after,
        )  # fmt: skip
        track.time = t
        return True

    def _attach_accel(self, track: _RobotTrack) -> np.ndarray | None:
        """a_k of eq. 9 from the payload's filtered motion (eq. 35; erratum 11)."""
        if self.payload is None or not self.motion.ready:
            return None
        k = track.index
        return attach_accelerations(
            self.motion.accel + GRAVITY * E3,
            self.payload.R,
            self.motion.Omega,
            self.motion.Omega_dot,
            self.model.attach_points[k : k + 1],
        )[0]

    def _predict(self, track: _RobotTrack, t: float) -> None:
        if track.ukf is None or t <= track.time:
            return
        u = track.input if track.input is not None else np.full(4, np.nan)
        track.ukf.predict(u, t - track.time, self._attach_accel(track))
        track.time = t

    def _update(self, track: _RobotTrack, pose=None, twist=None) -> None:  # noqa: ANN001
        """Predict to the measurement's stamp, then update with pose, twist and (when the
        payload's mocap has the same stamp) the cable state of eq. 41."""
        t = (pose or twist)[0]
        if pose is not None:
            track.pose = None
        if twist is not None:
            track.twist = None
        if track.ukf is None:
            if pose is None or not self._start(track, *pose):
                return
        if t < track.time - 1e-9:
            track.counters["mocap.out_of_order"] += 1
            return
        self._predict(track, t)
        ukf = track.ukf
        cable = self._cable(track, pose, twist)
        if pose is not None and twist is not None and cable is not None:
            accepted = ukf.update_mocap(pose[1], pose[2], twist[1], pose[2].T @ twist[2], *cable)
        else:
            accepted = False
            if pose is not None:
                accepted |= ukf.update_pose(pose[1], pose[2])
            if twist is not None:
                R = track.ukf.attitude
                accepted |= ukf.update_twist(twist[1], R.T @ twist[2])
        if accepted:
            track.last_mocap = t

    def _cable(self, track: _RobotTrack, pose, twist):  # noqa: ANN001, ANN202
        """(xi, xi_dot) of eq. 41 from this robot's and the payload's mocap at one stamp."""
        payload = self.payload
        if pose is None or twist is None or payload is None:
            return None
        if abs(self._payload_twist_time - pose[0]) > self.settings.sync_tolerance:
            track.counters["cable.payload_not_synchronous"] += 1
            return None
        k = track.index
        xi, xi_dot = cable_states(
            payload,
            self.model.attach_points[k : k + 1],
            pose[1][None],
            twist[1][None],
            self.lengths[k : k + 1],
        )
        return xi[0], xi_dot[0]

    # ----- output -------------------------------------------------------------------------
    def estimate(self, t: float) -> AerialTeamEstimate:
        """The team's estimate at ``t`` from every filter as it stands."""
        ids = self.model.robot_ids
        reasons = self._reasons(t)
        ukfs = [self.tracks[r].ukf for r in ids]
        n = len(ids)
        if any(u is None for u in ukfs) or self.payload is None:
            waiting = [r for r, u in zip(ids, ukfs, strict=True) if u is None]
            reasons.append(
                "waiting for the first mocap of "
                + (", ".join(waiting) if waiting else "the payload")
            )
            nan = np.full(n, np.nan)
            return AerialTeamEstimate(
                t, ids, nan, nan, np.full((n, 3), np.nan), np.full((n, 4, 4), np.nan), None,
                np.eye(3), reasons=reasons,
            )  # fmt: skip
        tension = np.array([u.tension for u in ukfs])
        xi = np.array([u.cable_direction for u in ukfs])
        cable_cov = np.array([u.cable_covariance for u in ukfs])
        R_L = self.payload.R
        if self.settings.method == "dynamic" and self.motion.ready:
            m = self.motion
            wrench = self.human.dynamic(
                R_L, tension, xi, cable_cov, m.accel, m.Omega, m.Omega_dot, m.covariance
            )
        else:
            wrench = self.human.quasi_static(R_L, tension, xi, cable_cov)
        band = np.r_[[self.settings.dead_band_force] * 3, [self.settings.dead_band_moment] * 3]
        shrunk = np.sign(wrench.wrench) * np.maximum(np.abs(wrench.wrench) - band, 0.0)
        return AerialTeamEstimate(
            t,
            ids,
            tension,
            np.array([u.tension_std for u in ukfs]),
            xi,
            cable_cov,
            wrench,
            R_L,
            contact=bool(np.any(shrunk != 0.0)),
            dead_banded=shrunk,
            reasons=reasons,
        )

    def _reasons(self, t: float) -> list[str]:
        """Why the estimate is degraded (empty: it is not)."""
        timeout, reasons = self.settings.mocap_timeout, []
        if t - self._payload_twist_time > timeout and self.payload is not None:
            reasons.append(
                f"payload: no mocap for {t - self._payload_twist_time:.2f} s: the wrench uses "
                "its last attitude and motion"
            )
        for rid, track in self.tracks.items():
            if track.ukf is None:
                continue
            if track.onboard:
                if t - track.last_mocap > timeout:
                    reasons.append(
                        f"{rid}: no onboard tension for {t - track.last_mocap:.2f} s: its last "
                        "one is used"
                    )
            elif t - track.last_mocap > timeout:
                reasons.append(
                    f"{rid}: no mocap for {t - track.last_mocap:.2f} s: its UKF coasts on the "
                    f"rotor speeds (tension sigma {track.ukf.tension_std:.2f} N)"
                )
            if not track.onboard and t - track.last_input > timeout:
                reasons.append(
                    f"{rid}: no valid rotor speeds for {t - track.last_input:.2f} s "
                    f"({track.counters['rotor_speeds.invalid']} invalid): its UKF holds the "
                    "last thrust"
                )
            if track.ukf.tension < self.settings.slack_tension:
                reasons.append(
                    f"{rid}: cable slack (tension {track.ukf.tension:.3f} N): the taut-cable "
                    "model of its tension estimate does not hold"
                )
        return reasons

    def robot_counters(self) -> dict[str, dict[str, int]]:
        """Per robot: the UKF's accepted/gated/NaN updates, clamps, repairs, invalid input."""
        return {rid: dict(track.all_counters) for rid, track in self.tracks.items()}
