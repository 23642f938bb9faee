"""Running an .onnx file on onnxruntime from the window: the Engine choice, the times it
records beside the bundled executor's, and the Profile pane that says whose they are."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.conftest import REPO
from tests.ui.test_profiling import open_file, run_and_wait
from xocview.model.analyses.profile import node_times_ms
from xocview.ui.run_dialog import RunDialog, RunOptions

SQUEEZENET = Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"


def test_the_engine_choice_shows_for_onnx_files_when_onnxruntime_is_there(
    qtbot, window, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("onnxruntime")
    doc = open_file(qtbot, window, SQUEEZENET).doc
    dialog = RunDialog(doc, window)
    assert dialog.engine.count() == 2 and dialog.engine.parent() is dialog
    assert not dialog.optimization.isEnabled()
    dialog.engine.setCurrentIndex(1)
    assert dialog.optimization.isEnabled()
    dialog.optimization.setCurrentIndex(2)
    options = dialog.options()
    assert (options.engine, options.optimization) == ("onnxruntime", "basic")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as if not installed
    assert RunDialog(doc, window).engine.parent() is None  # not in the dialog


def test_no_engine_choice_for_other_formats(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    doc = open_file(qtbot, window, REPO / "sample_graphs" / "tiny_transformer.json").doc
    dialog = RunDialog(doc, window)
    assert dialog.engine.parent() is None and dialog.options().engine == "xocview"


def test_onnxruntime_times_live_beside_ours_and_the_profile_says_whose(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("onnxruntime")
    doc = open_file(qtbot, window, SQUEEZENET).doc
    run_and_wait(qtbot, window, RunOptions(repeat=1, warmup=0))
    cpu = node_times_ms(doc.graph, doc.hierarchy)
    assert doc.colour_by == "time" and np.isfinite(cpu).sum() > 0
    run_and_wait(qtbot, window, RunOptions(repeat=2, warmup=1, engine="onnxruntime"))
    assert window.runner.messages == []
    ort = {
        nd.id: nd.metadata["performance"]["time"]["onnxruntime"]
        for nd in doc.graph.nodes
        if "onnxruntime" in nd.metadata.get("performance", {}).get("time", {})
    }
    assert len(ort) == 39 and all(ms > 0 for ms in ort.values())
    assert np.array_equal(node_times_ms(doc.graph, doc.hierarchy), cpu, equal_nan=True)
    panel = window.runner.profile
    assert panel.summary.text().startswith("onnxruntime (optimization all): Total ")
    assert "peak memory" not in panel.summary.text()
    assert panel.nodes.rowCount() == 39 and panel.nodes.item(0, 1).text() == "Conv"
    assert "on onnxruntime" in window.statusBar().currentMessage()
    window.undo_group.undo()  # onnxruntime's times are one undo step; ours stay
    assert not any(
        "onnxruntime" in nd.metadata.get("performance", {}).get("time", {})
        for nd in doc.graph.nodes
    )
    assert np.array_equal(node_times_ms(doc.graph, doc.hierarchy), cpu, equal_nan=True)
