"""package.xml, setup.py and CMakeLists.txt agree; the installed executables run."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ET.parse(ROOT / "package.xml").getroot()


def setup_py_console_scripts() -> list[str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "CONSOLE_SCRIPTS":
            return [ast.literal_eval(e) for e in node.value.elts]
    raise AssertionError("setup.py has no CONSOLE_SCRIPTS list")


def cmake_executables() -> list[str]:
    text = (ROOT / "CMakeLists.txt").read_text()
    block = re.search(r"set\(EXECUTABLES\s+(.*?)\)", text, re.S).group(1)
    return re.findall(r'"([^"]+)"', block)


def cmake_project_name() -> str:
    return re.search(r"project\((\w+)\)", (ROOT / "CMakeLists.txt").read_text()).group(1)


def test_names_agree():
    assert PACKAGE.findtext("name") == cmake_project_name() == "inertia_estimation_ros"
    assert (ROOT / PACKAGE.findtext("name") / "__init__.py").exists()


def test_versions_agree():
    import inertia_estimation_ros

    assert inertia_estimation_ros.__version__ == PACKAGE.findtext("version")


def test_setup_py_and_cmake_install_the_same_entry_points():
    scripts = setup_py_console_scripts()
    assert scripts, "no console scripts"
    assert sorted(scripts) == sorted(cmake_executables())


def test_package_xml_is_format_3_and_declares_the_message_toolchain():
    assert PACKAGE.get("format") == "3"
    depends = {e.text for e in PACKAGE if e.tag.endswith("depend")}
    for required in ("rosidl_default_generators", "rosidl_default_runtime", "rclpy"):
        assert required in depends
    assert PACKAGE.findtext("member_of_group") == "rosidl_interface_packages"


def test_every_message_is_generated_by_cmake():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    for msg in sorted((ROOT / "msg").glob("*.msg")):
        assert f'"msg/{msg.name}"' in cmake


@pytest.mark.parametrize("entry", setup_py_console_scripts())
def test_installed_executables_run(entry):
    """CMake put each entry point into lib/<package>, pip into bin/; both answer --help."""
    name = entry.split("=")[0]
    for path in (
        Path(sys.prefix) / "lib" / "inertia_estimation_ros" / name,
        Path(sys.prefix) / "bin" / name,
    ):
        assert path.exists(), f"{path} missing: run `make setup`"
        result = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert "usage" in result.stdout
