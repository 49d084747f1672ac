"""Aerial teams on cables (paper 002, Li, Liu & Loianno): the ROS-free control stack.

One module per block of the paper's Fig. 2:

* ``allocation``: cable geometry, the allocation matrix P (eq. 4), P^+, the null-space
  basis N and projector B, and the quasi-static human-wrench estimate (eq. 39);
* ``cables``: cable directions and rates from mocap (eq. 41), attach-point accelerations
  (eq. 9) and the taut-cable tension (notes section 2.3);
* ``payload_controller``: the payload's desired wrench (eqs. 10-12);
* ``distribution``: nominal (eq. 13) and human-aware gradient distribution (eqs. 17-24);
* ``optimization``: human-aware distribution by SLSQP (eqs. 25-27);
* ``robot_controller``: each quadrotor's thrust and moments (eqs. 28-30, Mellinger-Kumar);
* ``ukf``: each robot's 19-state robot + cable-tension UKF (eqs. 31-37), attitude on SO(3);
* ``human_wrench``: the human's wrench from the tensions, quasi-static (eq. 39) and dynamic
  (eq. 38), with its covariance.

Frames and signs follow the paper (notes section 1.3): the payload wrench is the 6-vector
``[F; M]`` of eq. 3, **force first**, F in the world frame I and M in the payload frame L;
xi_k is the unit vector from robot k to its attach point; the tension vector on the payload
is mu_k = -|mu_k| xi_k (erratum 1: the robot feels +|mu_k| xi_k). Arrays of per-robot
3-vectors have shape (n, 3); stacked tension vectors have shape (3n,).
"""
