"""Human collaboration with the estimated model (issue 14; paper 002 Sec. VI, paper 000's
float mode): the external (human) wrench on a ground team's payload (``human_wrench``),
the 6-D admittance that turns a human wrench into a payload reference for ground and
aerial teams (``admittance``, paper 002 eq. 40), and the robots' commands that follow that
reference (``following``).
"""
