"""The ``aerial_cable_team`` scenario: n quadrotors carrying a payload on cables in MuJoCo.

Modules: ``config`` (YAML keys, presets, refusals before simulating), ``model`` (the MJCF),
``human`` (wrench profiles and head path), ``reference`` (the payload's reference
trajectory), ``team`` (paper 002's control stack flying the team), ``runner`` (the
closed loop and its recording) and ``topics`` (the bag). ``scenario`` registers the type.
"""
