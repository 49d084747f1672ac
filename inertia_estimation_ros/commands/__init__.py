"""Subcommands of the ``inertia_estimation`` tool; each module has ``add_parser(subparsers)``."""
