"""Containers for one robot's grasp-frame data: the core-side twin of ``msg/GraspState``.

All vectors follow ``core.spatial``: twists (omega, v), wrenches (m, f), both in the
grasp frame {i}. ``F_i`` is the wrench robot i applies **on the payload**. Time is in
seconds on the robot's own clock. Covariances are 6x6 in the same angular-first
order, or None when unknown.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class GraspSample:
    """One robot's synchronized sample (paper 000's data point D_iq)."""

    robot_id: str
    stamp: float
    T_i0_i: np.ndarray  # 4x4 pose of the grasp frame {i} in the robot's home frame {i0}
    V_i: np.ndarray  # body twist (omega, v) in {i}
    dV_i: np.ndarray  # its time derivative in {i}
    F_i: np.ndarray  # wrench (m, f) applied on the payload, about {i}'s origin, in {i}
    g_i: np.ndarray | None = None  # gravity acceleration in {i} [m/s^2], if known
    has_force: bool = True
    has_torque: bool = True
    V_cov: np.ndarray | None = None
    dV_cov: np.ndarray | None = None
    F_cov: np.ndarray | None = None


@dataclass
class GraspSeries:
    """A time series of one robot's samples, stacked (Q samples): the batch form of D_i*."""

    robot_id: str
    t: np.ndarray  # (Q,) [s]
    T_i0_i: np.ndarray  # (Q, 4, 4)
    V_i: np.ndarray  # (Q, 6)
    dV_i: np.ndarray  # (Q, 6)
    F_i: np.ndarray  # (Q, 6)
    g_i: np.ndarray | None = None  # (Q, 3)
    has_force: bool = True
    has_torque: bool = True
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.t)

    def sample(self, k: int) -> GraspSample:
        """The k-th sample as a GraspSample."""
        return GraspSample(
            robot_id=self.robot_id,
            stamp=float(self.t[k]),
            T_i0_i=self.T_i0_i[k],
            V_i=self.V_i[k],
            dV_i=self.dV_i[k],
            F_i=self.F_i[k],
            g_i=None if self.g_i is None else self.g_i[k],
            has_force=self.has_force,
            has_torque=self.has_torque,
        )

    def select(self, keep: np.ndarray) -> GraspSeries:
        """The samples ``keep`` (boolean mask or indices), per-sample ``meta`` arrays included."""
        n = len(self.t)
        meta = {
            k: v[keep] if isinstance(v, np.ndarray) and len(v) == n else v
            for k, v in self.meta.items()
        }
        return GraspSeries(
            robot_id=self.robot_id,
            t=self.t[keep],
            T_i0_i=self.T_i0_i[keep],
            V_i=self.V_i[keep],
            dV_i=self.dV_i[keep],
            F_i=self.F_i[keep],
            g_i=None if self.g_i is None else self.g_i[keep],
            has_force=self.has_force,
            has_torque=self.has_torque,
            meta=meta,
        )

    @classmethod
    def from_samples(cls, samples: list[GraspSample]) -> GraspSeries:
        """Stack samples of one robot (in the given order)."""
        first = samples[0]
        has_g = all(s.g_i is not None for s in samples)
        return cls(
            robot_id=first.robot_id,
            t=np.array([s.stamp for s in samples]),
            T_i0_i=np.stack([s.T_i0_i for s in samples]),
            V_i=np.stack([s.V_i for s in samples]),
            dV_i=np.stack([s.dV_i for s in samples]),
            F_i=np.stack([s.F_i for s in samples]),
            g_i=np.stack([s.g_i for s in samples]) if has_g else None,
            has_force=first.has_force,
            has_torque=first.has_torque,
        )


BATCH_COLUMNS = (
    "stamps",
    "T_i0_i",
    "V_i",
    "dV_i",
    "F_i",
    "g_i",
    "has_g",
    "has_force",
    "has_torque",
)


class GraspBatch(Sequence[GraspSample]):
    """K samples of one robot as arrays (a ``GraspStateArray``, a bag's messages decoded in
    bulk): the columns of ``SetBlock`` for one robot. It reads as the sequence of its
    GraspSamples (made when indexed, once each), so code that takes a list of samples takes
    it too; ``TeamPipeline.push_batch`` and ``StreamingAligner`` use its arrays directly.

    ``g_i`` is NaN where ``has_g`` is False (no gravity reported for that sample).
    """

    __slots__ = ("robot_id", "_samples", "_finite", "aligner_rows", *BATCH_COLUMNS)

    def __init__(self, robot_id: str, **columns: np.ndarray) -> None:
        self.robot_id = robot_id
        for name in BATCH_COLUMNS:
            setattr(self, name, columns[name])
        self._samples: dict[int, GraspSample] = {}
        self._finite: np.ndarray | None = None  # ``finite``, once known
        # the columns as the aligner buffers them (``clock.row_matrix``), once made
        self.aligner_rows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.stamps)

    def __getitem__(self, k: int | slice) -> GraspSample | list[GraspSample]:  # type: ignore[override]
        if isinstance(k, slice):
            return [self[j] for j in range(*k.indices(len(self)))]
        k = range(len(self))[k]
        sample = self._samples.get(k)
        if sample is None:
            sample = self._samples[k] = GraspSample(
                robot_id=self.robot_id,
                stamp=float(self.stamps[k]),
                T_i0_i=self.T_i0_i[k],
                V_i=self.V_i[k],
                dV_i=self.dV_i[k],
                F_i=self.F_i[k],
                g_i=self.g_i[k] if self.has_g[k] else None,
                has_force=bool(self.has_force[k]),
                has_torque=bool(self.has_torque[k]),
            )
        return sample

    def __iter__(self) -> Iterator[GraspSample]:
        return (self[k] for k in range(len(self)))

    def finite(self) -> np.ndarray:
        """Per sample: every value the team uses is finite (the stamp, pose, twist, twist
        derivative, the sensed parts of the wrench, the gravity if reported). Found once per
        batch (and passed on to its ``rows``): the columns are not to be changed in place."""
        if self._finite is not None:
            return self._finite
        k = len(self)
        sensed = np.repeat(np.stack([self.has_torque, self.has_force], axis=1), 3, axis=1)
        F = np.where(sensed, self.F_i, 0.0)  # an unsensed part may be NaN
        g = np.where(self.has_g[:, None], self.g_i, 0.0)
        values = [self.T_i0_i.reshape(k, 16), self.V_i, self.dV_i, F, g, self.stamps[:, None]]
        self._finite = np.isfinite(np.concatenate(values, axis=1)).all(axis=1)
        return self._finite

    def rows(self, keep: slice | np.ndarray) -> GraspBatch:
        """The samples ``keep`` (a slice, indices or a boolean mask)."""
        out = GraspBatch(self.robot_id, **{n: getattr(self, n)[keep] for n in BATCH_COLUMNS})
        if self._finite is not None:
            out._finite = self._finite[keep]
        if self.aligner_rows is not None:
            out.aligner_rows = self.aligner_rows[keep]
        return out

    @classmethod
    def from_samples(cls, samples: Sequence[GraspSample]) -> GraspBatch:
        """Samples of one robot as arrays (the robot id of the first). ValueError or TypeError
        if a sample's fields do not have the shapes of ``GraspSample``."""
        k = len(samples)
        g = np.full((k, 3), np.nan)
        has_g = np.array([s.g_i is not None for s in samples], dtype=bool)
        if has_g.any():
            g[has_g] = np.array([s.g_i for s in samples if s.g_i is not None], dtype=float)
        batch = cls(
            samples[0].robot_id,
            stamps=np.array([s.stamp for s in samples], dtype=float).reshape(k),
            T_i0_i=np.array([s.T_i0_i for s in samples], dtype=float).reshape(k, 4, 4),
            V_i=np.array([s.V_i for s in samples], dtype=float).reshape(k, 6),
            dV_i=np.array([s.dV_i for s in samples], dtype=float).reshape(k, 6),
            F_i=np.array([s.F_i for s in samples], dtype=float).reshape(k, 6),
            g_i=g,
            has_g=has_g,
            has_force=np.array([s.has_force for s in samples], dtype=bool),
            has_torque=np.array([s.has_torque for s in samples], dtype=bool),
        )
        batch._samples = dict(enumerate(samples))
        return batch


@dataclass(frozen=True)
class SetBlock:
    """Q synchronized sets of a team's N robots as arrays, robots in the team's order: the
    block form of Q calls of ``TeamEstimator.update`` (``TeamEstimator.update_block``).

    ``g`` is NaN where ``has_g`` is False (that robot reports no gravity in that set).
    """

    robot_ids: tuple[str, ...]
    stamps: np.ndarray  # (Q, N) [s]
    T_i0_i: np.ndarray  # (Q, N, 4, 4)
    V_i: np.ndarray  # (Q, N, 6)
    dV_i: np.ndarray  # (Q, N, 6)
    F_i: np.ndarray  # (Q, N, 6)
    g_i: np.ndarray  # (Q, N, 3)
    has_g: np.ndarray  # (Q, N) bool
    has_force: np.ndarray  # (Q, N) bool
    has_torque: np.ndarray  # (Q, N) bool

    def __len__(self) -> int:
        return len(self.stamps)

    @classmethod
    def from_sets(
        cls, sets: Sequence[Mapping[str, GraspSample]], robot_ids: Sequence[str]
    ) -> SetBlock:
        """Stack sets (a GraspSample per robot of ``robot_ids``, as the aligner gives them).
        ValueError or TypeError if a sample's fields do not stack."""
        ids = tuple(robot_ids)
        rows = [[s[r] for r in ids] for s in sets]
        flat = [x for row in rows for x in row]
        q, n = len(rows), len(ids)

        def stacked(name: str, shape: tuple[int, ...]) -> np.ndarray:
            values = np.array([getattr(x, name) for x in flat], dtype=float)
            return values.reshape((q, n) + shape)

        g = np.full((q * n, 3), np.nan)
        has_g = np.array([x.g_i is not None for x in flat], dtype=bool)
        if has_g.any():
            g[has_g] = np.array([x.g_i for x in flat if x.g_i is not None], dtype=float)
        return cls(
            ids,
            stacked("stamp", ()),
            stacked("T_i0_i", (4, 4)),
            stacked("V_i", (6,)),
            stacked("dV_i", (6,)),
            stacked("F_i", (6,)),
            g.reshape(q, n, 3),
            has_g.reshape(q, n),
            np.array([x.has_force for x in flat], dtype=bool).reshape(q, n),
            np.array([x.has_torque for x in flat], dtype=bool).reshape(q, n),
        )

    @classmethod
    def empty(cls, robot_ids: Sequence[str]) -> SetBlock:
        """A block of no set."""
        n = len(robot_ids)
        shapes = ((), (4, 4), (6,), (6,), (6,), (3,))
        arrays = [np.empty((0, n) + shape) for shape in shapes]
        return cls(tuple(robot_ids), *arrays, *(np.empty((0, n), dtype=bool),) * 3)

    def rows(self, keep: slice | np.ndarray) -> SetBlock:
        """The sets ``keep`` (a slice, indices or a boolean mask)."""
        return SetBlock(self.robot_ids, *(getattr(self, name)[keep] for name in BATCH_COLUMNS))

    @classmethod
    def concatenate(cls, blocks: Sequence[SetBlock]) -> SetBlock:
        """One block of the sets of ``blocks``, in order."""
        arrays = (np.concatenate([getattr(b, name) for b in blocks]) for name in BATCH_COLUMNS)
        return cls(blocks[0].robot_ids, *arrays)

    def set_at(self, q: int) -> dict[str, GraspSample]:
        """The q-th set as GraspSamples (the per-sample form of ``update``)."""
        return {
            r: GraspSample(
                robot_id=r,
                stamp=float(self.stamps[q, k]),
                T_i0_i=self.T_i0_i[q, k],
                V_i=self.V_i[q, k],
                dV_i=self.dV_i[q, k],
                F_i=self.F_i[q, k],
                g_i=self.g_i[q, k] if self.has_g[q, k] else None,
                has_force=bool(self.has_force[q, k]),
                has_torque=bool(self.has_torque[q, k]),
            )
            for k, r in enumerate(self.robot_ids)
        }
