"""The package's data files (``config/``, ``launch/``, ``rviz/``, ``config/scenarios/``), found by
path or by bare name, and the catalogue of shipped scenarios (``simulate --list``).

Imports nothing heavy: the command line resolves and checks names here before it loads the
numerics.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "inertia_estimation_ros"
SCENARIOS = "config/scenarios"


def data_roots() -> list[Path]:
    """Where the package's data folders (config/, launch/, rviz/) are: the source tree, the
    ament index's share folder (a colcon install), then this prefix's ``share/<package>``."""
    roots = [Path(__file__).resolve().parents[1]]
    try:
        from ament_index_python.packages import get_package_share_directory

        roots.append(Path(get_package_share_directory(PACKAGE)))
    except (ImportError, LookupError, OSError):  # not installed, or no ament index at all
        pass
    return roots + [Path(sys.prefix) / "share" / PACKAGE]


def data_file(name: str | Path, folder: str) -> Path:
    """A file given by path (absolute, or relative to the working directory) or by its name in
    the package's ``folder`` (e.g. ``config``), with or without ``.yaml``; FileNotFoundError
    lists where it looked."""
    path = Path(name).expanduser()
    names = [path] if path.suffix else [path, path.with_name(path.name + ".yaml")]
    candidates = names + (
        [] if path.is_absolute() else [r / folder / n for r in data_roots() for n in names]
    )
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    raise FileNotFoundError(f"no file {name} (looked at {', '.join(map(str, candidates))})")


@dataclass(frozen=True)
class ScenarioEntry:
    """A shipped scenario: its bare name, file and what its header comment says it is for."""

    name: str
    path: Path
    purpose: str


def shipped_scenarios() -> list[ScenarioEntry]:
    """Every scenario in the package's ``config/scenarios/`` (first root that has them),
    sorted by name, with the first sentence of its header comment."""
    for root in data_roots():
        folder = root / SCENARIOS
        files = sorted(folder.glob("*.yaml")) if folder.is_dir() else []
        if files:
            return [ScenarioEntry(f.stem, f, _purpose(f)) for f in files]
    return []


def _purpose(path: Path) -> str:
    """The first sentence of a YAML file's leading comment block."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines)
    cut = text.find(". ")
    return text if cut < 0 else text[: cut + 1]
