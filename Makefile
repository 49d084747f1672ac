# inertia_estimation_ros: one-command set-up, tests, benchmarks and demo on a pip-only machine.
#
#   make setup   .venv with pinned wheels; messages built by this package's own CMakeLists.txt
#   make test    lint + the whole test suite (runs setup first), then test-compat:
#                the core and node tests on numpy 1.26 / scipy 1.11 (.venv-compat)
#   make bench   every benchmark under bench/, printing its tables into docs/benchmarks/
#   make bench-docs  the quick benchmarks again (a minute or two), and the pages' index
#   make mutants named mutants of core/ and ros/conversions.py (tools/mutants.py): survivors
#   make demo    the main job (see README)
#   make readme  regenerate the generated docs: node tables (docs/nodes.md), troubleshooting
#   make docs    the guide (docs/) and the API reference (pdoc) into build/docs, no warnings
#
# Each step is stamped: a second `make setup` on an up-to-date tree does nothing; after a
# source change it re-installs the package with pip (seconds).

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VENV_ABS := $(abspath $(VENV))
BIN := $(VENV)/bin
STAMP := $(VENV)/.stamps
BUILD := build/cmake
STAGE := build/stage
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check
# The PyPI ROS wheels resolve their own library paths; CMake needs the prefix paths.
CMAKE_ENV := PATH=$(VENV_ABS)/bin:$$PATH CMAKE_PREFIX_PATH=$(VENV_ABS) AMENT_PREFIX_PATH=$(VENV_ABS)
CMAKE_ARGS := -DCMAKE_INSTALL_PREFIX=$(VENV_ABS) -DCMAKE_PREFIX_PATH=$(VENV_ABS) \
	-DPython3_EXECUTABLE=$(VENV_ABS)/bin/python -DBUILD_TESTING=ON
PACKAGE_SOURCES := CMakeLists.txt package.xml $(wildcard msg/*.msg action/*.action cmake/*) \
	$(shell find inertia_estimation_ros launch config rviz -type f -not -path '*/__pycache__/*' 2>/dev/null)

.PHONY: setup test test-compat lint bench bench-docs demo readme docs clean mutants test-loop

setup: $(STAMP)/install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP)/requirements: requirements/build.txt requirements/runtime.txt requirements/test.txt requirements/constraints.txt | $(BIN)/python
	$(PIP) -c requirements/constraints.txt \
		-r requirements/build.txt -r requirements/runtime.txt -r requirements/test.txt
	@mkdir -p $(STAMP) && touch $@

# tf2_msgs is not on PyPI: build its one-message definition when no ROS install provides it.
$(STAMP)/tf2_msgs: $(STAMP)/requirements $(wildcard tools/tf2_msgs/* tools/tf2_msgs/msg/*)
	@if $(BIN)/python -c 'import tf2_msgs.msg' 2>/dev/null; then \
		echo "tf2_msgs already importable"; \
	else \
		echo "building tf2_msgs into $(VENV)"; \
		$(CMAKE_ENV) $(BIN)/cmake -S tools/tf2_msgs -B build/tf2_msgs $(CMAKE_ARGS) > /dev/null && \
		$(CMAKE_ENV) $(BIN)/cmake --build build/tf2_msgs -j2 > build/tf2_msgs/build.log && \
		$(CMAKE_ENV) $(BIN)/cmake --install build/tf2_msgs > build/tf2_msgs/install.log; \
	fi
	@touch $@

$(STAMP)/package: $(STAMP)/tf2_msgs $(PACKAGE_SOURCES)
	$(CMAKE_ENV) $(BIN)/cmake -S . -B $(BUILD) $(CMAKE_ARGS) > /dev/null
	$(CMAKE_ENV) $(BIN)/cmake --build $(BUILD) -j2 > $(BUILD)/build.log
	@touch $@

# One installer into the venv, pip, so that `pip uninstall` removes every file: CMake's
# install is staged in build/stage and setup.py installs it with the Python package and the
# console scripts (files of an older direct CMake install into the venv are removed first).
$(STAMP)/install: $(STAMP)/package setup.py
	@if [ -f $(BUILD)/install_manifest.txt ]; then \
		grep "^$(VENV_ABS)/" $(BUILD)/install_manifest.txt | xargs -r rm -f; fi
	@rm -rf $(STAGE) build/lib build/bdist.*
	@$(CMAKE_ENV) $(BIN)/cmake --install $(BUILD) --prefix $(STAGE) > $(BUILD)/install.log
	$(PIP) --no-deps --no-build-isolation .
	@touch $@

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/python -m pytest
	$(MAKE) test-compat

# The oldest supported numerics, Ubuntu 24.04's numpy 1.26 and scipy 1.11 (pip resolves
# cvxpy 1.6.7 and pin 2.7.0 with them), in a second venv: every requirement by name, the
# versions from requirements/constraints-compat.txt; the package's own build is reused.
COMPAT := .venv-compat
COMPAT_STAMP := $(COMPAT)/.stamps
REQUIREMENT_NAMES = $(shell sed -e 's/\#.*//' -e 's/[=<>].*//' \
	requirements/build.txt requirements/runtime.txt requirements/test.txt)
# The core tests, the coordinator's pipeline and a node/DDS subset (not test_inertial.py: its
# oracle, pin.PseudoInertia, needs Pinocchio 3).
# Tests known to fail on numpy 1.26 / scipy 1.11 only, as --deselect options (none now).
COMPAT_KNOWN :=
COMPAT_TESTS := test/test_spatial.py test/test_regressor.py \
	test/test_consistency.py test/test_identification_least_squares.py \
	test/test_identification_sdp.py test/test_cooperative_external_wrench.py \
	test/test_cooperative_kinematics.py test/test_cooperative_dynamics.py \
	test/test_sim_payload.py test/test_gazebo_assets.py test/test_robot_kinematics.py \
	test/test_conversions.py test/test_messages_dds.py test/test_coordinator.py \
	test/test_services.py test/test_parameters_runtime.py test/test_coordinator_node.py \
	test/test_namespaces.py test/test_aerial_ukf.py
# The live-coordinator tests stream one pass at the coordinator's own pace (flow control in
# test/coordinator_graph.py): a fixed-rate looping stream failed them on a starved machine.

$(COMPAT)/bin/python:
	$(PYTHON) -m venv $(COMPAT)

$(COMPAT_STAMP)/requirements: requirements/constraints-compat.txt requirements/build.txt \
		requirements/runtime.txt requirements/test.txt | $(COMPAT)/bin/python
	$(COMPAT)/bin/python -m pip install -q --disable-pip-version-check --prefer-binary \
		-c requirements/constraints-compat.txt $(REQUIREMENT_NAMES)
	@mkdir -p $(COMPAT_STAMP) && touch $@

$(COMPAT_STAMP)/install: $(COMPAT_STAMP)/requirements $(STAMP)/install
	@if [ -d build/tf2_msgs ]; then $(CMAKE_ENV) $(BIN)/cmake --install build/tf2_msgs \
		--prefix $(abspath $(COMPAT)) > build/tf2_msgs/install-compat.log; fi
	$(COMPAT)/bin/python -m pip install -q --disable-pip-version-check --no-deps \
		--no-build-isolation .
	@touch $@

test-compat: $(COMPAT_STAMP)/install
	$(COMPAT)/bin/python -c 'import numpy, scipy; print("numpy", numpy.__version__, "scipy", scipy.__version__)'
	$(COMPAT)/bin/python -m pytest -q $(COMPAT_TESTS) $(COMPAT_KNOWN)

bench: setup
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done
	$(BIN)/python bench/doc_page.py

# Each benchmark writes its section of docs/benchmarks/<name>.md (bench/doc_page.py); these
# take a minute or two on a shared 2-core machine, the others up to an hour each (`make bench`).
QUICK_BENCHES := bench_cli.py bench_collaboration.py
bench-docs: setup
	@for f in $(QUICK_BENCHES); do echo "== bench/$$f"; $(BIN)/python bench/$$f || exit 1; done
	$(BIN)/python bench/doc_page.py

# Named mutants (tools/mutants.py): prints the survivors; not part of CI.
mutants: setup
	$(BIN)/python tools/mutants.py

demo: setup
	$(BIN)/inertia_estimation demo

readme: setup
	$(BIN)/python -c 'import pathlib, inertia_estimation_ros.ros.nodes as n; \
		p = pathlib.Path("docs/nodes.md"); p.write_text(n.update_readme(p.read_text()))'
	$(BIN)/python tools/troubleshooting.py

# The docstrings' cross-references and the guide's links are checked by test/test_docs.py.
docs: setup
	PDOC_ALLOW_EXEC=1 $(BIN)/python tools/build_docs.py --out build/docs

clean:
	rm -rf build $(VENV) $(COMPAT) *.egg-info

# The collaboration loop over DDS (issue 14), alone: nodes as processes, 1.5-3 min; `make
# test` runs it too.
test-loop:
	$(BIN)/python -m pytest -m closed_loop test/test_collaboration_loop.py
