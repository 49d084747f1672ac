"""Cooperative payload estimation by a robot team (paper 000, Zhang et al., "mocobots").

N robots hold one rigid payload. From each robot's grasp pose, twist, twist derivative
and wrench (``core.samples.GraspSample``), the team finds every grasp frame T_s_i, the
mass, CoM and inertia, and the principal axes, online, with covariances and advice.

Modules, one per stage:
* ``grasp_kinematics``: Eqs. 1-8 (Kabsch, least squares), the paper's BFGS refinement,
  and the joint consensus fits over all robots (twists, poses, common gravity);
* ``statics``: Eqs. 9-16 (mass and CoM from static holds, the paper's stage B);
* ``dynamics``: Eqs. 17-33 (the paper's stage C) and the one-stage 10-parameter
  information-form fit with errors-in-variables correction;
* ``payload_properties``: mass, CoM, CoM inertia and principal axes with covariances;
* ``diagnostics``: condition numbers, unexcited axes, refusals and advice;
* ``correlated_noise``: covariance inflation for time-correlated residuals;
* ``external_wrench``: wrench statistics per segment; segments that an unmeasured external
  wrench (a human hand) acted on are found and left out of mass, CoM and inertia;
* ``estimate``: ``TeamEstimate`` (maps 1:1 to msg/PayloadEstimate) and its assembly;
* ``online``: ``TeamEstimator``, the recursive estimator for the coordinator node;
* ``offline``: the paper's pipeline and ``estimate_offline`` for recorded data;
* ``clock``: clock offsets from angular speed and ``StreamingAligner``;
* ``settings``: ``EstimatorSettings``.
"""

from .clock import ClockOffset, SpeedHistory, StreamingAligner, estimate_clock_offset
from .estimate import GraspFrameEstimate, Stage, TeamEstimate
from .external_wrench import ExternalWrenchSpan, UndecidedSpan
from .offline import Recording, estimate_offline, paper_grasps, paper_inertia, paper_mass_com
from .online import TeamEstimator, UpdateResult
from .settings import EstimatorSettings

__all__ = [
    "ClockOffset",
    "EstimatorSettings",
    "ExternalWrenchSpan",
    "GraspFrameEstimate",
    "Recording",
    "SpeedHistory",
    "Stage",
    "StreamingAligner",
    "TeamEstimate",
    "TeamEstimator",
    "UndecidedSpan",
    "UpdateResult",
    "estimate_clock_offset",
    "estimate_offline",
    "paper_grasps",
    "paper_inertia",
    "paper_mass_com",
]
