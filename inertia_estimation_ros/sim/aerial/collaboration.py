"""A person moves an aerial team's payload through the estimated human wrench, in MuJoCo
(issue 14; paper 002 Fig. 2 closed: estimator -> admittance -> payload controller).

Paper 002's team of an ``aerial_cable_team`` scenario (``sim/aerial``) hovers; a person with
an intention (``sim/person.py``: a spring-damper with torsion from a handle on the payload to
a target moving along a 6-DoF path) pulls the payload. Every control period the loop closes
through the core only: the team's mocap and rotor speeds -> ``AerialTeamEstimator`` (a cable
UKF per robot, the human wrench of eq. 38 with the payload model) -> the admittance of the
ground teams (``AdmittanceSupervisor``, eq. 40, the same one) -> the payload reference of the
team's payload controller (eqs. 10-12, ``AerialRun.set_reference``). The reference's
acceleration is not fed forward (the paper: "not utilized by the lower-level payload
controller").

The model (mass, CoM, inertia) is the true payload's unless given: it sets the estimator's
wrench (``AerialTeamEstimator.use_payload``), the admittance's virtual mass and inertia, and
the payload controller's mass and inertia (its weight compensation), as a team that uses its
estimate would.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import spatial as sp
from ...core.aerial.payload_controller import PayloadReference
from ...core.aerial.team_estimation import (
    AerialEstimatorSettings,
    AerialTeamEstimator,
    AerialTeamModel,
)
from ...core.collaboration.supervisor import AdmittanceSupervisor, ModelSummary, Reference
from ...core.inertial import InertialParameters
from ..person import Person
from .feed import feed
from .human import PersonOnPayload
from .scenario import AerialCableTeamScenario

__all__ = ["AerialCollaborationRun", "run_aerial_collaboration"]

# The admittance for paper 002's light payload: M = the model's mass and inertia (0.278 kg, the
# paper's 0.25) and D = M / 1 s (0.28 N s/m). The payload controller (eqs. 10-12, RotorTM's
# gains) holds the payload to its reference with only 0.86 N/m horizontally, so the person
# holds the payload off the reference by up to (dead band) / 0.86 N/m, and the reference
# catches up with a time constant D / 0.86 N/m: with D = 1.1 N s/m (M / 0.25 s) and the
# coordinator's 0.1 N dead band the payload sprang back 15 cm when the person let go 1 s after
# the end of a 3-s path, here 1 cm (the paper's D = 5 is slower still). The force dead band is
# 0.05 N (the estimate's noise at rest: 0.02 N RMS), the moment's 0.02 N m.
ADMITTANCE = dict(
    fraction=1.0, time_constant=1.0, force_dead_band=0.05, moment_dead_band=0.02, cutoff_hz=5.0
)


@dataclass(frozen=True)
class AerialCollaborationRun:
    """From the admittance's start: per control instant the person's handle and its target
    (in {w}), the person's wrench and its estimate [F (I); M (L)] about the CoM, the payload's
    true pose and the reference."""

    t: np.ndarray  # (K,) [s]
    handle: np.ndarray  # (K, 3)
    target: np.ndarray  # (K, 3)
    force: np.ndarray  # (K, 6)
    estimate: np.ndarray  # (K, 6)
    payload_x: np.ndarray  # (K, 3)
    payload_R: np.ndarray  # (K, 3, 3)
    reference_x: np.ndarray  # (K, 3)

    @property
    def path_error(self) -> np.ndarray:
        """(K,) the handle's distance to its target [m]."""
        return np.linalg.norm(self.handle - self.target, axis=1)

    @property
    def yaw(self) -> np.ndarray:
        """(K,) the payload's rotation about the world's z since the start [rad]."""
        R = np.einsum("ji,kjl->kil", self.payload_R[0], self.payload_R)
        return np.arctan2(R[:, 1, 0], R[:, 0, 0])


def _true_payload(scenario: AerialCableTeamScenario) -> InertialParameters:
    payload = scenario.settings.payload
    return InertialParameters.from_mass_com_inertia(
        payload.mass, np.zeros(3), np.diag(payload.inertia)
    )


def _payload_reference(reference: Reference) -> PayloadReference:
    """The supervisor's reference of L (pose, body twist (omega, v)) for eqs. 10-12."""
    R = reference.T_w_s[:3, :3]
    return PayloadReference(
        x=reference.T_w_s[:3, 3], v=R @ reference.V_s[3:], R=R, Omega=reference.V_s[:3]
    )


def run_aerial_collaboration(
    scenario: AerialCableTeamScenario,
    person: Person | None,
    seconds: float,
    model: InertialParameters | None = None,
    warm_up: float = 1.5,
    release: float = np.inf,
    seed: int | None = None,
    **admittance: object,
) -> AerialCollaborationRun:
    """Hover for ``warm_up`` seconds (the cable UKFs converge), then run the closed loop for
    ``seconds`` with ``person`` (None: nobody touches the payload), whose path starts with the
    admittance and who lets go ``release`` seconds after it. ``model``: the payload's
    parameters in L (default the true ones); ``admittance``: ``AdmittanceSupervisor``
    keywords over ``ADMITTANCE``."""
    run = scenario.stepper(seed)
    hand = PersonOnPayload(person, warm_up + release)
    run.human = hand
    params = model or _true_payload(scenario)
    estimator = AerialTeamEstimator(
        AerialTeamModel.from_document(scenario.ground_truth_document()),
        AerialEstimatorSettings(),
    )
    estimator.use_payload(params)
    run.team.payload.mass = params.mass
    run.team.payload.inertia = params.inertia_about_com
    supervisor = AdmittanceSupervisor(**{"input_timeout": 0.5, **ADMITTANCE, **admittance})
    supervisor.on_estimate(ModelSummary(True, params.mass, params.com, params.inertia_about_com))
    dt = run.sample_period
    log = {k: [] for k in ("t", "handle", "target", "force", "estimate", "x", "R", "ref")}
    end = warm_up + seconds
    while run.time < end - 1e-9:
        chunk = run.advance(until=run.time)  # one control step, then the physics to the next
        t = float(chunk.time[0])
        estimate = feed(estimator, chunk)[0]
        supervisor.on_pose(t, sp.transform(chunk.mocap_payload_R[0], chunk.mocap_payload_x[0]))
        if estimate.valid:
            supervisor.on_wrench(t, estimate.in_payload_frame(estimate.wrench.wrench))
        if t < warm_up - 1e-9:
            continue
        if not supervisor.active and supervisor.admittance is None:
            ok, message = supervisor.start()
            if not ok:
                raise RuntimeError(message)
        reference = supervisor.tick(t, dt)
        run.set_reference(_payload_reference(reference))
        logged = (
            t - warm_up,
            hand.handle,
            hand.target,
            chunk.human_wrench[0],
            estimate.wrench.wrench if estimate.valid else np.full(6, np.nan),
            chunk.payload_x[0],
            chunk.payload_R[0],
            reference.T_w_s[:3, 3],
        )
        for key, value in zip(log, logged, strict=True):
            log[key].append(np.array(value, dtype=float))
    return AerialCollaborationRun(*(np.array(log[k]) for k in log))
