"""MuJoCo's and SDF's scalar-first (w, x, y, z) unit quaternions <-> rotation matrices.

scipy's ``Rotation`` is scalar-last; its ``scalar_first`` option needs scipy >= 1.14, and
Ubuntu 24.04 ships 1.11, so the reordering is done here (batches along the last axis).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.spatial.transform import Rotation


def matrix_from_wxyz(quat_wxyz: ArrayLike) -> np.ndarray:
    """R (..., 3, 3) of quaternions (..., 4) stored w first."""
    return Rotation.from_quat(np.roll(np.asarray(quat_wxyz, dtype=float), -1, axis=-1)).as_matrix()


def wxyz_from_matrix(R: ArrayLike) -> np.ndarray:
    """Quaternions (..., 4), w first, of rotation matrices (..., 3, 3)."""
    return np.roll(Rotation.from_matrix(R).as_quat(), 1, axis=-1)
