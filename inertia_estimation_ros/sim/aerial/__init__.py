"""The ``aerial_cable_team`` scenario: n quadrotors carrying a payload on cables in MuJoCo.

Modules: ``config`` (YAML keys, presets, refusals before simulating), ``model`` (the MJCF),
``human`` (wrench profiles and head path, or a person pulling toward a moving target),
``reference`` (the payload's reference trajectory), ``team`` (paper 002's control stack
flying the team), ``runner`` (the closed loop and its recording), ``topics`` (the bag),
``feed`` (a run's sensors into the team estimator) and ``collaboration`` (a person moves the
payload through the estimated wrench and the admittance). ``scenario`` registers the type.
"""
