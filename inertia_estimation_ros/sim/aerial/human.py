"""The simulated human: wrench profiles on the payload (notes section 6.4) and a head that
walks toward the payload and stays at a distance.

Profile kinds (each with ``start`` [s] and the wrench ``force`` [N, in the world frame]
and ``moment`` [N m, in the payload frame]):

* ``step``: the wrench from ``start`` on, for ``duration`` (default: forever);
* ``ramp``: rising linearly over ``rise`` then held for ``duration``;
* ``trapezoid``: ``rise``, hold ``duration``, fall over ``rise`` (the 6-DoF moves of
  the notes, sized by impulse = D x displacement).

The force acts at the grasp point ``grasp`` (in the payload frame), so it adds the moment
grasp x R_L^T F. By default the wrench is applied exactly (``xfrc_applied``). With ``hand``
(``stiffness`` [N/m], ``damping`` [N s/m]) the force goes through a spring-damper between the
person's hand and the grasp point: at each control step the hand is placed where the spring
transmits the profile's force and moves on at the grasp point's velocity; between steps the
payload accelerates and the force follows the spring, as a person's hand would. The recorded
ground truth is the force applied at each recording instant.

``person`` (instead of ``profiles``): a person with an intention (``sim/person.py``, issue
14): a spring-damper with torsion pulls the grasp toward a target that moves by ``shift``
[m, world] and turns by ``yaw_deg`` about the world's z over ``path_time`` [s] from
``start`` [s], from the scenario's start pose, then holds; ``release`` [s] lets go;
``stiffness``, ``damping``, ``torsion``, ``torsion_damping`` set the arm (``AERIAL_ARM``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import spatial as sp
from ...core.aerial.cables import cross3
from ..person import Person, path_person
from ..scenario import ScenarioError, Section


@dataclass(frozen=True)
class Profile:
    kind: str
    start: float
    duration: float
    rise: float
    force: np.ndarray
    moment: np.ndarray

    def level(self, t: float) -> float:
        """The profile's scale in [0, 1] at time t."""
        u = t - self.start
        if u < 0:
            return 0.0
        if self.kind == "step":
            return 1.0 if u <= self.duration else 0.0
        up = min(u / self.rise, 1.0) if self.rise > 0 else 1.0
        if self.kind == "ramp":
            return up if u <= self.rise + self.duration else 0.0
        down_start = self.rise + self.duration
        if u <= down_start:
            return up
        return max(0.0, 1.0 - (u - down_start) / self.rise) if self.rise > 0 else 0.0


@dataclass(frozen=True)
class Hand:
    stiffness: float  # [N/m]
    damping: float  # [N s/m]


@dataclass(frozen=True)
class Head:
    """The head walks horizontally toward the payload at ``speed`` from ``start`` and stops
    ``stop_distance`` from its centre, then keeps that offset as the payload moves."""

    start: np.ndarray
    height: float
    speed: float
    stop_distance: float
    begin: float


class Human:
    def __init__(
        self, profiles: list[Profile], grasp: np.ndarray, head: Head | None, hand: Hand | None
    ):
        self.profiles, self.grasp, self.head, self.hand = profiles, grasp, head, hand
        self._hand_x: np.ndarray | None = None
        self._hand_v = np.zeros(3)
        self._hand_t = 0.0
        self.head_position = None if head is None else np.r_[head.start[:2], head.height]
        self._offset: np.ndarray | None = None

    def _profile(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        force, moment = np.zeros(3), np.zeros(3)
        for profile in self.profiles:
            level = profile.level(t)
            force += level * profile.force
            moment += level * profile.moment
        return force, moment

    def place_hand(self, t: float, grasp_x: np.ndarray, grasp_v: np.ndarray) -> None:
        """The hand where the spring transmits the profile's force (called per control step)."""
        if self.hand is not None:
            self._hand_x = grasp_x + self._profile(t)[0] / self.hand.stiffness
            self._hand_v, self._hand_t = grasp_v, t

    def wrench(
        self,
        t: float,
        R_L: np.ndarray,
        grasp_x: np.ndarray | None = None,
        grasp_v: np.ndarray | None = None,
    ) -> np.ndarray:
        """[F_H (I); M_H (L)] about the payload's CoM: the profiles' force (or the hand's
        spring-damper force, given the grasp point's position and velocity) applied at the
        grasp point (its moment grasp x R_L^T F added), plus the profiles' moment."""
        if not self.profiles:
            return np.zeros(6)
        force, moment = self._profile(t)
        if self.hand is not None and self._hand_x is not None and grasp_x is not None:
            hand_x = self._hand_x + self._hand_v * (t - self._hand_t)  # moving on with the grasp
            stretch, rate = hand_x - grasp_x, self._hand_v - grasp_v
            force = self.hand.stiffness * stretch + self.hand.damping * rate
        return np.concatenate([force, moment + cross3(self.grasp, R_L.T @ force)])

    def step_head(self, t: float, dt: float, payload_x: np.ndarray) -> np.ndarray | None:
        """Advance the head by dt toward the payload; its position (None without a head)."""
        if self.head is None:
            return None
        if self._offset is not None:
            self.head_position = np.r_[payload_x[:2] + self._offset, self.head.height]
            return self.head_position
        if t >= self.head.begin:
            gap = payload_x[:2] - self.head_position[:2]
            distance = float(np.linalg.norm(gap))
            travel = min(self.head.speed * dt, max(distance - self.head.stop_distance, 0.0))
            self.head_position[:2] += travel * gap / max(distance, 1e-9)
            if distance - travel <= self.head.stop_distance + 1e-9:
                self._offset = self.head_position[:2] - payload_x[:2]
        return self.head_position


# A person's arm on a light aerial payload (a 0.3 kg payload hanging on cables): gentle.
AERIAL_ARM = {"stiffness": 20.0, "damping": 2.0, "torsion": 1.0, "torsion_damping": 0.1}


class PersonOnPayload:
    """A ``Person`` as the aerial runner's human: its wrench [F (I); M (L)] about the CoM,
    evaluated at each control instant (``place_hand``) on the fresh state and held over the
    control period, as the ground loop applies it (between physics steps MuJoCo's poses lag
    its velocities by a step, which would corrupt the hand's finite-difference velocity);
    zero from ``release`` [s] on (the person lets go)."""

    def __init__(self, person: Person | None, release: float = np.inf) -> None:
        self.person, self.release = person, release
        self.grasp = np.zeros(3) if person is None else person.handle_P
        self.handle = self.target = np.full(3, np.nan)
        self._previous: tuple | None = None
        self._due: float | None = None
        self._wrench = np.zeros(6)

    def step_head(self, t: float, dt: float, payload_x: np.ndarray) -> None:
        return None

    def place_hand(self, t: float, grasp_x: np.ndarray, grasp_v: np.ndarray) -> None:
        """A control instant: the next wrench is evaluated afresh."""
        self._due = t

    def wrench(
        self, t: float, R_L: np.ndarray, grasp_x: np.ndarray, grasp_v: np.ndarray
    ) -> np.ndarray:
        if t >= self.release:  # the person lets go
            self.person, self._wrench = None, np.zeros(6)
        if self.person is not None and t == self._due:
            x_L = grasp_x - R_L @ self.grasp  # the payload frame L is at the CoM
            w, self.handle, self.target, self._previous = self.person.wrench(
                t, sp.transform(R_L, x_L), x_L, self._previous
            )
            self._wrench = np.concatenate([w[3:], R_L.T @ w[:3]])
            self._due = None
        return self._wrench.copy()


def read_human(data: dict, path: str, start: np.ndarray | None = None) -> Human | PersonOnPayload:
    """The scenario's ``human``; ``start``: the payload's start position (a person's path
    begins at the payload's start pose)."""
    section = Section(data, path)
    grasp = section.vector("grasp", 3, [0.3083, 0.0, 0.01125])
    if section.has("person"):
        return _person(section, grasp, np.zeros(3) if start is None else start)
    profiles = [
        _profile(Section(item, f"{path}.profiles[{k}]"))
        for k, item in enumerate(section.items("profiles", []))
    ]
    head = None
    if section.has("head"):
        h = section.section("head")
        start_xy = h.vector("start", 2)
        head = Head(
            start=start_xy,
            height=h.number("height", 1.7, positive=True),
            speed=h.number("speed", 0.3, low=0.0),
            stop_distance=h.number("stop_distance", 0.7, low=0.0),
            begin=h.number("begin", 0.0, low=0.0),
        )
        h.done()
    hand = None
    if section.has("hand"):
        h = section.section("hand")
        hand = Hand(h.number("stiffness", 200.0, positive=True), h.number("damping", 5.0, low=0))
        h.done()
    section.done()
    return Human(profiles, grasp, head, hand)


def _person(section: Section, grasp: np.ndarray, start: np.ndarray) -> PersonOnPayload:
    """``human.person``: alone, without profiles, head or hand."""
    others = [key for key in ("profiles", "head", "hand") if section.has(key)]
    if others:
        raise ScenarioError(
            f"{section.path}: a person moves the payload alone; remove {', '.join(others)}"
        )
    p = section.section("person")
    arm = {
        "stiffness": p.number("stiffness", AERIAL_ARM["stiffness"], positive=True),
        "damping": p.number("damping", AERIAL_ARM["damping"], low=0.0),
        "torsion": p.number("torsion", AERIAL_ARM["torsion"], low=0.0),
        "torsion_damping": p.number("torsion_damping", AERIAL_ARM["torsion_damping"], low=0.0),
    }
    person = path_person(
        sp.transform(np.eye(3), start),
        grasp,
        p.vector("shift", 3, [0.3, 0.15, 0.05]),
        p.number("yaw_deg", 15.0),
        p.number("path_time", 3.0, positive=True),
        p.number("start", 1.0, low=0.0),
        **arm,
    )
    release = p.number("release", None, low=0.0)
    p.done()
    section.done()
    return PersonOnPayload(person, np.inf if release is None else release)


def _forever_if_none(value: float | None) -> float:
    return np.inf if value is None else value


def _profile(section: Section) -> Profile:
    kind = section.string("kind", choices=("step", "ramp", "trapezoid"))
    rise = section.number("rise", 0.0 if kind == "step" else 0.5, low=0.0)
    if kind != "step" and rise == 0:
        raise ScenarioError(f"{section.path}.rise: a {kind} needs rise > 0")
    profile = Profile(
        kind=kind,
        start=section.number("start", low=0.0),
        duration=_forever_if_none(section.number("duration", None, low=0.0)),
        rise=rise,
        force=section.vector("force", 3, [0.0, 0.0, 0.0]),
        moment=section.vector("moment", 3, [0.0, 0.0, 0.0]),
    )
    section.done()
    return profile
