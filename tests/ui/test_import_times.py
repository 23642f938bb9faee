"""File > Import Times in the window: one undo step, the heat shows the imported source, a
Model Explorer metric gets its own colour mode under View > Colour by Metric, and what cannot
be imported is said in a message, never a crash."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtGui import QAction

from tests.formats.profiles.make_profiles import LIGHT, ort_profile, other_model
from tests.ui.test_profiling import open_file
from xocview.model.analyses.metrics import node_metric
from xocview.model.analyses.profile import node_times_ms
from xocview.ui.canvas.legend import legend_title
from xocview.ui.document import Document

SQUEEZENET = LIGHT / "light_squeezenet.onnx"


def file_action(window, text: str) -> QAction:  # type: ignore[no-untyped-def]
    menu = window.menuBar().actions()[0].menu()
    return next(a for a in menu.actions() if a.text().replace("&", "") == text)


def import_via_menu(qtbot, window, path: Path) -> None:  # type: ignore[no-untyped-def]
    """The menu's import: the file is read in a worker, then stored on the GUI thread."""
    window.importer.ask = lambda parent, start: path  # the file dialog's answer
    file_action(window, "Import Times...").trigger()
    assert not window.importer.idle  # reading, the window free meanwhile
    qtbot.waitUntil(lambda: window.importer.idle, timeout=30000)


def test_an_onnxruntime_profile_colours_the_graph_and_one_undo_takes_it_away(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("onnxruntime")
    doc: Document = open_file(qtbot, window, SQUEEZENET).doc
    before = copy.deepcopy(doc.graph)
    import_via_menu(qtbot, window, ort_profile(SQUEEZENET, tmp_path, "basic"))
    assert doc.undo_stack.count() == 1
    assert doc.undo_stack.undoText().startswith("import onnxruntime profile as ")
    assert doc.time_sources() == ["onnxruntime"] and doc.shown_time_engine() == "onnxruntime"
    assert doc.colour_by == "time"
    expected = node_times_ms(doc.graph, doc.hierarchy, "onnxruntime")
    assert np.isfinite(expected).sum() > 50
    assert np.array_equal(doc.node_values(), expected, equal_nan=True)
    heat = doc.heat()
    assert heat is not None and (heat.levels >= 0).any() and heat.source == "onnxruntime"
    # at this level every kernel is a node of the file: all matched
    assert re.match(
        r"onnxruntime profile: (\d+) of \1 kernels matched", window.importer.messages[-1]
    )
    doc.undo_stack.undo()
    assert doc.graph == before and doc.time_sources() == []
    assert np.isnan(doc.times_ms()).all()
    doc.undo_stack.redo()
    assert doc.time_sources() == ["onnxruntime"]


def test_node_data_is_a_metric_to_colour_by(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    doc: Document = open_file(qtbot, window, SQUEEZENET).doc
    convs = [n.id for n in doc.graph.nodes if n.op_type == "Conv"][:4]
    data = tmp_path / "errors.json"
    data.write_text(json.dumps({"results": {c: {"value": 1 + k} for k, c in enumerate(convs)}}))
    menu = window.menus.metrics
    assert not menu.menuAction().isVisible()
    window.importer.import_file(data)
    assert doc.colour_by == "metric:errors" and doc.undo_stack.count() == 1
    heat = doc.heat()
    assert heat is not None and legend_title(heat, doc.colour_by) == "errors per node (log)"
    assert np.array_equal(
        doc.node_values(), node_metric(doc.graph, "errors", doc.hierarchy), equal_nan=True
    )
    assert menu.menuAction().isVisible()
    (act,) = menu.actions()
    assert act.text() == "errors" and act.isChecked()
    window.runner.colour_by("flops")
    assert not act.isChecked()
    act.trigger()  # View > Colour by Metric > errors
    assert doc.colour_by == "metric:errors" and act.isChecked()
    doc.undo_stack.undo()
    assert not menu.menuAction().isVisible()
    assert np.isnan(doc.node_values()).all()  # nothing stored under the metric any more


def test_what_cannot_be_imported_is_said_and_changes_nothing(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("onnxruntime")
    doc: Document = open_file(qtbot, window, other_model(tmp_path)).doc
    assert window.importer.import_file(ort_profile(SQUEEZENET, tmp_path, "none")) is None
    assert "0 of 105 kernels matched a node of other.onnx" in window.importer.messages[-1]
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    assert window.importer.import_file(bad) is None
    assert "bad.json: line 1 column 6: invalid JSON" in window.importer.messages[-1]
    assert doc.undo_stack.count() == 0 and doc.colour_by == "category"


def test_a_file_that_is_no_profile_is_said_through_the_menu_too(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    doc: Document = open_file(qtbot, window, SQUEEZENET).doc
    bad = tmp_path / "notes.json"
    bad.write_text("[1, 2")
    import_via_menu(qtbot, window, bad)
    assert "notes.json" in window.importer.messages[-1]
    assert doc.undo_stack.count() == 0
