# Two commands for a newcomer: `make run` and `make test` (see README.md).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SAMPLE ?= sample_graphs/tiny_transformer.json

.PHONY: run test lint perf package clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,lint,package]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/xocview $(SAMPLE)

lint: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/ruff check xocview tests sample_graphs
	$(BIN)/mypy

test: lint
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q

perf: $(STAMP)
	$(BIN)/python tests/perf/xoc_io.py
	$(BIN)/python tests/perf/onnx_load.py
	$(BIN)/python tests/perf/layout_vs_dot.py
	$(BIN)/python tests/perf/viewer.py
	$(BIN)/python tests/perf/executor.py

# A standalone folder, dist/xocview/ (xocview, xocview-cli and their libraries); on macOS also
# dist/xocview.app. The slow test in tests/test_packaging.py builds the same spec.
package: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[package]'
	$(BIN)/pyinstaller --noconfirm --distpath dist --workpath build/pyinstaller packaging/xocview.spec

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .import_linter_cache build dist *.egg-info
