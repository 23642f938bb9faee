# Two commands for a newcomer: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SAMPLE ?= sample_graphs/tiny_transformer.json
# Every package that `make` installs, build back-ends included, comes at the version that
# requirements.lock pins (`make lock` regenerates it); pyproject.toml's ranges stay loose.
LOCK   := requirements.lock
PIP_VERSION := 26.3
UV_VERSION  := 0.13.9
export PIP_CONSTRAINT := $(abspath $(LOCK))
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: run test lint perf package clean lock sysdeps-gui sysdeps-test

$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet pip==$(PIP_VERSION)
	$(BIN)/python -m pip install --quiet -e '.[test,lint,package]'
	touch $(STAMP)

# Qt's system libraries (and the desktop tools the tests ask): installed when missing, or the
# exact apt-get line is printed; see packaging/linux/system-deps.sh.
sysdeps-gui:
	bash packaging/linux/system-deps.sh gui

sysdeps-test:
	bash packaging/linux/system-deps.sh test

run: $(STAMP) sysdeps-gui
	$(BIN)/xocview $(SAMPLE)

# Re-pin every run-time, test, lint and packaging dependency to its newest allowed release.
lock: $(STAMP)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv pip compile pyproject.toml --extra test --extra lint --extra package \
	    --universal --python-version 3.10 --quiet -o $(LOCK)

lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check xocview tests sample_graphs
	$(BIN)/mypy

test: lint sysdeps-test
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

perf: $(STAMP)
	$(BIN)/python tests/perf/xoc_io.py
	$(BIN)/python tests/perf/onnx_load.py
	$(BIN)/python tests/perf/layout_vs_dot.py
	$(BIN)/python tests/perf/viewer.py
	$(BIN)/python tests/perf/executor.py
	$(BIN)/python tests/perf/first_view.py

# A standalone folder, dist/xocview/ (xocview, xocview-cli and their libraries); on macOS also
# dist/xocview.app. The slow test in tests/test_packaging.py builds the same spec.
package: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[package]'
	$(BIN)/pyinstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/xocview.spec

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .import_linter_cache build dist *.egg-info
