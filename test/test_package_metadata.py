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


# ----- package.xml against the code -------------------------------------------------------------
# Module -> rosdep key, where they differ (ROS packages import under their own name).
ROSDEP_KEYS = {
    "numpy": "python3-numpy",
    "scipy": "python3-scipy",
    "yaml": "python3-yaml",
    "matplotlib": "python3-matplotlib",
    "tqdm": "python3-tqdm",
    "threadpoolctl": "python3-threadpoolctl",
    "numba": "python3-numba",
    "cvxpy": "python3-cvxpy-pip",
    "cdd": "python3-pycddlib-pip",
    "osqp": "python3-osqp-pip",
    "mujoco": "python3-mujoco-pip",
    "rosbags": "python3-rosbags-pip",
    "pytest": "python3-pytest",
    "hypothesis": "python3-hypothesis-pip",
    "filterpy": "python3-filterpy-pip",
    "rigeo": "python3-rigeo-pip",
    "catkin_pkg": "python3-catkin-pkg",
}
# Declared and needed, but never imported by name: why.
NOT_IMPORTED = {
    "rosidl_default_runtime": "the generated messages' runtime",
    "python3-clarabel-pip": "cvxpy solver, chosen by name",
    "python3-scs-pip": "cvxpy solver, chosen by name",
    "python3-ruff-pip": "make lint",
    "ament_cmake_pytest": "CMakeLists.txt's BUILD_TESTING block",
    "example-robot-data": "the UR10's URDF file (core/planning/robot.py), found on sys.path",
}
# Imported but optional: not declared, so that a headless robot needs no Qt or Gazebo.
OPTIONAL = {"rviz2", "ros_gz_sim", "ros_gz_bridge"}


def imported_modules(*folders: str) -> dict[str, str]:
    """Top-level modules imported by the Python files below the folders (not the standard
    library, not the package itself nor the test and benchmark helpers): module -> a file
    importing it."""
    helpers = [*(ROOT / "test").glob("*.py"), *(ROOT / "bench").glob("*.py")]
    local = {p.stem for p in helpers} | {PACKAGE.findtext("name")}
    found = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    names = [node.module]
                else:
                    continue
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top not in local:
                        found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def launch_packages() -> set[str]:
    """Packages whose executables or share folders the launch files use."""
    text = "\n".join(p.read_text() for p in (ROOT / "launch").glob("*.py"))
    used = set(re.findall(r'package="(\w+)"', text))
    return used | set(re.findall(r'get_package_share_directory\("(\w+)"\)', text))


def declared(*tags: str) -> set[str]:
    return {e.text for e in PACKAGE if e.tag in tags}


def test_package_xml_declares_what_the_code_imports_and_nothing_unused():
    runtime = imported_modules(PACKAGE.findtext("name"), "launch")
    tests = imported_modules("test")
    run_keys = {ROSDEP_KEYS.get(m, m) for m in runtime} | (launch_packages() - OPTIONAL)
    run_keys.discard(PACKAGE.findtext("name"))
    test_keys = {ROSDEP_KEYS.get(m, m) for m in tests}
    run_declared = declared("depend", "exec_depend")
    missing = run_keys - run_declared
    assert not missing, f"imported, not declared in package.xml: {missing} ({runtime})"
    missing_tests = test_keys - run_declared - declared("test_depend")
    assert not missing_tests, f"tests import, package.xml lacks: {missing_tests}"
    unused = run_declared | declared("test_depend")
    unused -= run_keys | test_keys | set(NOT_IMPORTED)
    assert not unused, f"declared in package.xml, used nowhere: {unused}"
    assert not OPTIONAL & run_declared, "optional packages must stay undeclared"


def test_optional_packages_are_only_used_on_request():
    """rviz2 runs only with rviz:=true; without ros_gz the Gazebo launch names what to install."""
    sim = (ROOT / "launch" / "sim_estimation.launch.py").read_text()
    helper = (ROOT / "inertia_estimation_ros" / "ros" / "graph.py").read_text()
    rviz = helper[helper.index("def launch_rviz") :]
    assert "launch_rviz(" in sim
    assert 'package="rviz2"' in rviz and "condition=IfCondition" in rviz


def test_the_supported_minimum_versions_agree():
    """package.xml's version_gte and setup.py's install_requires name the same minimum
    versions of numpy and scipy: Ubuntu 24.04's 1.26 and 1.11 (tested by make test)."""
    requires = dict(entry.partition(">=")[::2] for entry in setup_py_requirements()[0])
    minimum = {e.text: e.get("version_gte") for e in PACKAGE if e.tag.endswith("depend")}
    assert minimum["python3-numpy"] == requires["numpy"] == "1.26"
    assert minimum["python3-scipy"] == requires["scipy"] == "1.11"


def setup_py_requirements() -> tuple[list[str], list[str]]:
    """setup.py's install_requires and its "ros" extra, as written."""
    found = {}
    for node in ast.walk(ast.parse((ROOT / "setup.py").read_text())):
        if isinstance(node, ast.keyword) and node.arg in ("install_requires", "extras_require"):
            found[node.arg] = ast.literal_eval(node.value)
    return found["install_requires"], found["extras_require"]["ros"]


def test_pip_install_requires_every_runtime_requirement():
    """A plain `pip install .` (issue 19, item 7) gets every non-ROS package of
    requirements/runtime.txt (numba was missing: core/aerial did not import), and
    `pip install .[ros]` every ROS wheel; pycddlib stays below 3, which builds only
    against a system cddlib."""
    install_requires, ros_extra = setup_py_requirements()
    runtime = set(pinned("runtime.txt"))
    assert {n for n in runtime if not n.startswith("ros-")} <= set(
        map(normalized, install_requires)
    )
    assert {n for n in runtime if n.startswith("ros-")} <= set(map(normalized, ros_extra))
    assert "pycddlib>=2.1.6,<3" in install_requires


def our_installed_files(prefix: Path) -> set[Path]:
    """Every file of this package below an install prefix (CMake's or pip's layout)."""
    name = PACKAGE.findtext("name")
    site = Path("lib") / f"python{sys.version_info.major}.{sys.version_info.minor}"
    patterns = [
        f"{site}/site-packages/{name}/**/*",
        f"lib/{name}/*",
        f"lib/lib{name}__*",
        f"share/{name}/**/*",
        f"include/{name}/**/*",
        f"share/ament_index/resource_index/*/{name}",
    ]
    return {
        p
        for pattern in patterns
        for p in prefix.glob(pattern)
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_pip_records_every_installed_file_so_that_uninstall_removes_them_all():
    """The pip path installs once: CMake's staged install goes in through setup.py, so the
    distribution's RECORD lists every file of the package in the prefix, messages included."""
    import sysconfig
    from importlib.metadata import distributions

    name = PACKAGE.findtext("name")  # the installed one, not the source tree's egg-info:
    (dist,) = distributions(name=name, path=[sysconfig.get_paths()["purelib"]])
    recorded = {Path(dist.locate_file(f)).resolve() for f in dist.files}
    installed = {p.resolve() for p in our_installed_files(Path(sys.prefix))}
    assert any(p.name == "_grasp_state.py" for p in installed), "run `make setup`"
    unrecorded = sorted(map(str, installed - recorded))
    assert not unrecorded, f"{len(unrecorded)} files pip would leave behind: {unrecorded[:5]}"


def test_colcon_test_runs_the_pytest_suite():
    """CMakeLists.txt's BUILD_TESTING block registers the suite with ament_cmake_pytest
    (make setup configures build/cmake with BUILD_TESTING=ON, as colcon does)."""
    build = ROOT / "build" / "cmake"
    listed = subprocess.run(
        [str(Path(sys.prefix) / "bin" / "ctest"), "-N", "--test-dir", str(build)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert "Test #1: pytest" in listed.stdout and "Total Tests: 1" in listed.stdout
    ctest = (build / "CTestTestfile.cmake").read_text()
    assert "pytest" in ctest and str(ROOT / "test") in ctest


# ----- what colcon and rosdep read, checked with their own parser ---------------------------------
def test_catkin_pkg_parses_and_validates_package_xml():
    """catkin_pkg (the parser colcon, rosdep and bloom use) reads package.xml as format 3 with
    the ament_cmake build type and finds nothing to warn about."""
    from catkin_pkg.package import parse_package

    warnings: list[str] = []
    package = parse_package(str(ROOT / "package.xml"), warnings=warnings)
    package.validate(warnings=warnings)
    assert not warnings, warnings
    assert package.package_format == 3 and package.name == cmake_project_name()
    assert package.get_build_type() == "ament_cmake"
    assert "ament_cmake_pytest" in {d.name for d in package.test_depends}


def rosdep_rules() -> dict:
    import yaml

    return yaml.safe_load((ROOT / "rosdep" / "inertia_estimation_ros.yaml").read_text())


def pinned(*files: str) -> dict[str, str]:
    """requirement name (normalized) -> its ``==`` version in requirements/``files``."""
    pins = {}
    for name in files:
        for line in (ROOT / "requirements" / name).read_text().splitlines():
            line = line.split("#")[0].strip()
            if line:
                requirement, _, version = line.partition("==")
                pins[normalized(requirement)] = version.strip()
    return pins


def normalized(requirement: str) -> str:
    return re.split(r"[<>\[ ]", requirement)[0].lower().replace("_", "-").strip()


def test_every_pip_key_resolves_through_our_rosdep_file_to_a_pinned_requirement():
    """Each ``*-pip`` key of package.xml is defined in rosdep/inertia_estimation_ros.yaml for
    Ubuntu and Debian as pip packages that requirements/*.txt pin, and that file defines no
    key package.xml does not use (what ``rosdep install`` would resolve; the standard keys
    such as python3-numpy come from rosdistro's base.yaml, which is not reachable here)."""
    from catkin_pkg.package import parse_package

    package = parse_package(str(ROOT / "package.xml"))
    keys = {
        d.name
        for group in (package.build_depends, package.exec_depends, package.test_depends)
        for d in group
    } | {d.name for d in package.doc_depends}
    pip_keys = {k for k in keys if k.endswith("-pip")}
    rules = rosdep_rules()
    assert set(rules) == pip_keys
    requirements = pinned("runtime.txt", "test.txt", "build.txt")
    for key, rule in rules.items():
        for platform in ("ubuntu", "debian"):
            packages = rule[platform]["pip"]["packages"]
            assert packages, key
            for entry in packages:  # a name, or name==version as requirements pins it
                name, _, version = entry.partition("==")
                assert normalized(name) in requirements, (key, entry)
                assert version in ("", requirements[normalized(name)]), (key, entry)
