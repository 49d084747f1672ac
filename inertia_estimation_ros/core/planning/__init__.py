"""Robust nonprehensile balancing (Heins and Schoellig, paper 004; notes robust-balancing.md).

* ``contact``: friction pyramids, the contact wrench cone in span and face form (cdd);
* ``objects``: objects on the tray, their CoM polytopes (from an estimate or the paper's
  default) and the robust vertex constraints (Sec. IV-B);
* ``verification``: the worst-case SDP over realizable inertias (Eq. 13);
* ``tray``: the free-flying tray's kinematics (6-DoF triple integrator);
* ``robot``: the paper's 9-DoF Ridgeback + UR10 (Pinocchio, example-robot-data's UR10);
* ``planner``: the OCP (Eq. 7) by Gauss-Newton SQP with OSQP, for either model;
* ``session``: plan + verify, and saved plans (what the node and the CLI share).
"""
