"""The benchmark pages come from the benchmarks (issue 18): every ``bench/bench_<name>.py``
writes its section of ``docs/benchmarks/<name>.md`` through ``bench/doc_page.py``, the page
exists and the index lists it; a run replaces only the section of its own command line."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import doc_page  # noqa: E402

BENCHES = sorted((ROOT / "bench").glob("bench_*.py"))


@pytest.mark.parametrize("script", BENCHES, ids=lambda p: p.stem)
def test_every_benchmark_writes_its_page_and_the_index_names_it(script):
    name = script.stem.removeprefix("bench_")
    assert f'benchmark_page("{name}")' in script.read_text(), f"{script.name}: use benchmark_page"
    page = ROOT / "docs" / "benchmarks" / f"{name}.md"
    assert page.exists(), f"run {script.name} to write {page.name}"
    assert doc_page.sections_of(page.read_text()), f"{page.name} has no section"
    index = (ROOT / "docs" / "benchmarks" / "index.md").read_text()
    assert f"| `bench/{script.name}` |" in index


def test_the_index_lists_the_current_sections():
    index = ROOT / "docs" / "benchmarks" / "index.md"
    assert doc_page.updated_index(index.read_text()) == index.read_text(), (
        "run `.venv/bin/python bench/doc_page.py`"
    )


def test_every_section_was_written_by_its_run():
    """No table is pasted by hand: each section starts as ``doc_page`` writes it."""
    for page in sorted((ROOT / "docs" / "benchmarks").glob("*.md")):
        if page.name == "index.md":
            continue
        for command, section in doc_page.sections_of(page.read_text()).items():
            assert section.split("\n\n")[1].startswith("Written on "), (
                f"{page.name}: run `{command}` to replace its hand-copied section"
            )


def _run(folder: Path, argv: list[str], printed: str, monkeypatch) -> str:
    monkeypatch.setattr(sys, "argv", argv)
    with doc_page.benchmark_page("demo", folder):
        print(printed)
    return (folder / "demo.md").read_text()


def test_a_run_replaces_only_the_section_of_its_own_command(tmp_path, monkeypatch):
    _run(tmp_path, ["bench/bench_demo.py"], "full run, first", monkeypatch)
    _run(tmp_path, ["bench/bench_demo.py", "--quick"], "quick run", monkeypatch)
    text = _run(tmp_path, ["bench/bench_demo.py"], "full run, second", monkeypatch)
    sections = doc_page.sections_of(text)
    assert list(sections) == [
        ".venv/bin/python bench/bench_demo.py",
        ".venv/bin/python bench/bench_demo.py --quick",
    ]
    assert "full run, second" in text and "quick run" in text and "first" not in text
    assert re.search(r"Written on \d{4}-\d\d-\d\d \d\d:\d\d UTC", text)
    assert text.startswith("# Benchmark: demo\n")


def test_a_run_updates_the_index(tmp_path, monkeypatch):
    begin, end = doc_page.INDEX_MARKERS
    (tmp_path / "index.md").write_text(f"# Benchmarks\n\n{begin}\n{end}\n")
    _run(tmp_path, ["bench/bench_demo.py", "--quick"], "quick run", monkeypatch)
    index = (tmp_path / "index.md").read_text()
    assert (
        "- [demo](demo.md):\n  - `.venv/bin/python bench/bench_demo.py --quick`: Written on"
        in index
    )


def test_a_failed_run_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench/bench_demo.py"])
    with pytest.raises(RuntimeError), doc_page.benchmark_page("demo", tmp_path):
        raise RuntimeError("the benchmark failed")
    assert not (tmp_path / "demo.md").exists()
