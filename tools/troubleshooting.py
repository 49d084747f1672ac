"""Write docs/troubleshooting.md: every advice or refusal message the package can print, found
in its source, with what to do and where it comes from.

The package's rule for messages is "<what is wrong>: <what to do>", so this page is generated
from the source: every string literal (f-strings with their fields shown as ``…``) whose text
has ": " or "; " followed by an instruction. ``test/test_troubleshooting.py`` fails when the page is
out of date; ``make readme`` rewrites it (with the node tables).

    .venv/bin/python tools/troubleshooting.py [--check]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inertia_estimation_ros"
PAGE = ROOT / "docs" / "troubleshooting.md"
VERBS = (
    "add call calibrate change check choose drop fix give hold increase install keep let lift "
    "lower move name pass publish raise record reduce remove replay report restart rotate run "
    "see send set shorten start synchronize tilt try use wait write"
).split()
INSTRUCTION = re.compile(r"[:;]\s+(?:or\s+)?(?:" + "|".join(VERBS) + r")\b")
AREAS = (  # (path prefix under the package, section title, where the message appears)
    (
        ("core/cooperative/", "core/team_pipeline.py"),
        "The estimate's advice and refusals",
        "`PayloadEstimate.advice`, `/diagnostics`, the tables of `estimate`, `report` and `demo`",
    ),
    (("commands/", "bags.py", "cli.py"), "The command line", "`inertia_estimation <command>`"),
    (
        ("ros/",),
        "Nodes, graph configs and parameters",
        "node start-up errors and logs, `bringup`, the launch files, `ros2 param set`",
    ),
    (("sim/",), "Simulation scenarios", "`simulate`, `sim_node`, `run_scenario`"),
    (("core/", ""), "The library (core)", "exceptions of `inertia_estimation_ros.core`"),
)


@dataclass(frozen=True)
class Message:
    """One message: its text (fields as …), the file and line that print it."""

    text: str
    path: str
    line: int

    @property
    def problem(self) -> str:
        return self.text[: INSTRUCTION.search(self.text).start()]

    @property
    def action(self) -> str:
        return self.text[INSTRUCTION.search(self.text).start() + 1 :].strip()


def _text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "…" for v in node.values)
    return None


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes (not messages)."""
    out = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            out.add(id(body[0].value))
    return out


def messages(package: Path = PACKAGE) -> list[Message]:
    """Every advice/refusal message in the package's source, in file and line order."""
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text())
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.JoinedStr):
                skip |= {id(v) for v in node.values}
        for node in ast.walk(tree):
            text = _text(node)
            if id(node) in skip or not text or not INSTRUCTION.search(text):
                continue
            text = " ".join(text.split())
            found.append(Message(text, path.relative_to(package).as_posix(), node.lineno))
    return sorted(found, key=lambda m: (m.path, m.line))


def area_of(message: Message) -> int:
    for index, (prefixes, _, _) in enumerate(AREAS):
        if message.path.startswith(prefixes):
            return index
    return len(AREAS) - 1


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'")


INTRO = """# Troubleshooting

Every message the package prints when it refuses input or cannot determine something says
what is wrong and, after the colon, what to do. This page lists all of them, generated from
the source (`tools/troubleshooting.py`; `test/test_troubleshooting.py` keeps it current), so
that a message you see can be looked up here by its words. `…` stands for a value the
message fills in (a robot id, a number, a file).

The situations newcomers meet first:

- **A quantity stays "not valid".** The motion has not excited it yet. The estimate's
  advice names the motion: rotate about the axis it names (inertia, grasp rotations), hold
  the payload still at several tilts (mass and CoM), or move without a hand on the payload
  (a human's wrench is set aside). `inertia_estimation report` plots the condition numbers
  over time (excitation.png).
- **A robot's samples are refused.** `estimate` prints the refusals by robot and reason
  below its table (`refused: robot_2: 390 samples refused, wrong frame id ...`); the
  coordinator puts them on `/diagnostics`. Fix that robot's driver or configuration: its
  frame id, its clock, its stamps. [reliability.md](reliability.md) has the full matrix of
  damaged input and what the package does with it.
- **A command or a node refuses to start.** The message names the argument, the parameter
  or the YAML key and the accepted values; nothing has run yet.
"""


def page(found: list[Message] | None = None) -> str:
    """The whole page."""
    found = messages() if found is None else found
    parts = [INTRO]
    for index, (_, title, where) in enumerate(AREAS):
        rows = [m for m in found if area_of(m) == index]
        if not rows:
            continue
        parts.append(f"\n## {title}\n\nSeen in: {where}.\n\n| Message | What to do | Source |\n")
        parts.append("|---|---|---|\n")
        seen = set()
        for m in rows:
            if m.text in seen:
                continue
            seen.add(m.text)
            source = f"`{m.path}`"  # no line numbers: the page stays current across edits
            parts.append(f"| {_cell(m.problem)} | {_cell(m.action)} | {source} |\n")
    return "".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description="write docs/troubleshooting.md")
    parser.add_argument("--check", action="store_true", help="only check that it is current")
    args = parser.parse_args()
    found = messages()
    text = page(found)
    if args.check:
        current = PAGE.exists() and PAGE.read_text() == text
        print("docs/troubleshooting.md is " + ("current" if current else "OUT OF DATE"))
        return 0 if current else 1
    PAGE.write_text(text)
    print(f"wrote {PAGE.relative_to(ROOT)}: {len(found)} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
