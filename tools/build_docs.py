"""``make docs``: the guide (docs/*.md) and the API reference (the core and the simulator's
docstrings) rendered together by pdoc into build/docs/, with no warnings.

Each docs page becomes the docstring of a module of a generated package ``guide`` (pdoc
renders modules only): docs/index.md is ``guide``, docs/concepts.md ``guide.concepts``,
docs/benchmarks/cli.md ``guide.benchmarks.cli``. Links between pages are rewritten to the
rendered pages, other files of docs/ (pictures) are copied beside them. A warning of pdoc
(an unresolvable reference, a broken docstring) fails the build.

    .venv/bin/python tools/build_docs.py [--out build/docs] [--guide-only]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
API = (
    "inertia_estimation_ros.core",
    "inertia_estimation_ros.sim",
    "!inertia_estimation_ros.sim.gazebo",
)
LINK = re.compile(r"(\]\()([^)#:\s]+\.md)(#[^)]*)?(\))")


def module_of(page: Path) -> str:
    """docs/x/y-z.md -> guide.x.y_z; an index.md is its folder's package."""
    parts = [p.replace("-", "_") for p in page.relative_to(DOCS).with_suffix("").parts]
    if parts[-1] == "index":
        parts = parts[:-1]
    return ".".join(["guide", *parts])


def html_of(module: str) -> str:
    """Where pdoc writes a module, relative to the output folder."""
    return module.replace(".", "/") + ".html"


def rewrite_links(text: str, page: Path, out: Path) -> str:
    """``[x](other.md#anchor)`` -> the rendered page of other.md, relative to this one's; a
    Markdown file outside docs/ (the README) -> that file, relative to the rendered page."""
    here = Path(html_of(module_of(page))).parent

    def replace(match: re.Match) -> str:
        target = (page.parent / match.group(2)).resolve()
        if target.is_relative_to(DOCS):
            rendered = os.path.relpath(html_of(module_of(target)), here)
        else:
            rendered = os.path.relpath(target, (out / here).resolve())
        return f"{match.group(1)}{rendered}{match.group(3) or ''}{match.group(4)}"

    return LINK.sub(replace, text)


def write_guide(source: Path, out: Path) -> list[str]:
    """The package ``guide`` under ``source`` (docstrings = pages), docs/ assets copied into
    ``out/guide``. Returns the module names."""
    shutil.rmtree(source / "guide", ignore_errors=True)
    pages = sorted(DOCS.rglob("*.md"))
    modules = []
    for page in pages:
        module = module_of(page)
        modules.append(module)
        parts = module.split(".")
        is_package = page.name == "index.md" or any(p.parent == page.with_suffix("") for p in pages)
        folder = source.joinpath(*parts[:-1]) if not is_package else source.joinpath(*parts)
        folder.mkdir(parents=True, exist_ok=True)
        file = folder / ("__init__.py" if is_package else f"{parts[-1]}.py")
        file.write_text(f"__doc__ = {rewrite_links(page.read_text(), page, out)!r}\n")
    for folder in [source / "guide", *(source / "guide").rglob("*")]:  # packages need a file
        if folder.is_dir() and not (folder / "__init__.py").exists():
            (folder / "__init__.py").write_text('"""Pages of this folder."""\n')
    for asset in DOCS.rglob("*"):
        if asset.is_file() and asset.suffix != ".md":
            target = out / "guide" / asset.relative_to(DOCS)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(asset, target)
    return modules


def build(out: Path, guide_only: bool = False) -> list[str]:
    """Render into ``out``; returns pdoc's warnings (none is the goal)."""
    import pdoc
    import pdoc.render

    source = out.with_name(out.name + "-src")  # the generated package ``guide``
    write_guide(source, out)
    sys.path.insert(0, str(source))
    os.environ.setdefault("PDOC_ALLOW_EXEC", "1")
    pdoc.render.configure(docformat="markdown")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pdoc.pdoc("guide", *([] if guide_only else API), output_directory=out)
    return [
        str(w.message) for w in caught if "pdoc" in (w.filename or "") or "pdoc" in str(w.category)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "docs")
    parser.add_argument("--guide-only", action="store_true", help="skip the API reference")
    args = parser.parse_args()
    problems = build(args.out, args.guide_only)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(f"docs: {args.out / 'guide.html'} (guide), {args.out / 'index.html'} (all modules)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
