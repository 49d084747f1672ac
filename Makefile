# inertia_estimation_ros: one-command set-up, tests, benchmarks and demo on a pip-only machine.
#
#   make setup   .venv with pinned wheels; messages built by this package's own CMakeLists.txt
#   make test    lint + the whole test suite (runs setup first)
#   make bench   every benchmark under bench/, printing its table
#   make mutants named mutants of core/ and ros/conversions.py (tools/mutants.py): survivors
#   make demo    the main job (see README)
#   make readme  regenerate the README's node tables from the nodes' interfaces
#
# Each step is stamped: a second `make setup` on an up-to-date tree only re-syncs the
# Python sources through `cmake --install` and takes seconds.

SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
VENV_ABS := $(abspath $(VENV))
BIN := $(VENV)/bin
STAMP := $(VENV)/.stamps
BUILD := build/cmake
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check
# The PyPI ROS wheels resolve their own library paths; CMake needs the prefix paths.
CMAKE_ENV := PATH=$(VENV_ABS)/bin:$$PATH CMAKE_PREFIX_PATH=$(VENV_ABS) AMENT_PREFIX_PATH=$(VENV_ABS)
CMAKE_ARGS := -DCMAKE_INSTALL_PREFIX=$(VENV_ABS) -DCMAKE_PREFIX_PATH=$(VENV_ABS) \
	-DPython3_EXECUTABLE=$(VENV_ABS)/bin/python -DBUILD_TESTING=OFF
PACKAGE_SOURCES := CMakeLists.txt package.xml $(wildcard msg/*.msg cmake/*) \
	$(shell find inertia_estimation_ros launch config rviz -type f -not -path '*/__pycache__/*' 2>/dev/null)

.PHONY: setup test lint bench demo readme clean mutants

setup: $(STAMP)/package $(STAMP)/console-scripts
	@$(CMAKE_ENV) $(BIN)/cmake --install $(BUILD) > $(BUILD)/install.log

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

# Console scripts for pip users (setup.py); CMake installs the same entry points into lib/.
$(STAMP)/console-scripts: $(STAMP)/package setup.py
	$(PIP) --no-deps --no-build-isolation .
	@touch $@

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	$(BIN)/python -m pytest

bench: setup
	@for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# Named mutants (tools/mutants.py): prints the survivors; not part of CI.
mutants: setup
	$(BIN)/python tools/mutants.py

demo: setup
	$(BIN)/inertia_estimation demo

readme: setup
	$(BIN)/python -c 'import pathlib, inertia_estimation_ros.ros.nodes as n; \
		p = pathlib.Path("README.md"); p.write_text(n.update_readme(p.read_text()))'

clean:
	rm -rf build $(VENV) *.egg-info
