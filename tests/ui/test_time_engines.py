"""Heat by engine: after runs on the bundled executor and on onnxruntime the canvas, its legend
and the Profile pane show the last run's engine, View > Time From switches between them, an undo
falls back to the times left, and a saved file keeps both."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from PySide6.QtGui import QAction

from tests.conftest import REPO
from tests.ui.test_profiling import open_file, run_and_wait
from xocview.formats import load, save
from xocview.model.analyses.profile import node_times_ms
from xocview.ui.canvas.legend import legend_title
from xocview.ui.document import Document
from xocview.ui.run_dialog import RunOptions

SQUEEZENET = Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"


def needs_onnxruntime() -> None:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        pytest.skip("onnxruntime is not installed (pip install onnxruntime): no second engine")


def time_actions(window) -> dict[str, QAction]:  # type: ignore[no-untyped-def]
    """View > Time From's choices by their text, when the menu shows."""
    menu = window.menus.time_from
    if not menu.menuAction().isVisible():
        return {}
    return {act.text(): act for act in menu.actions()}


def shown(doc: Document, engine: str) -> bool:
    """The canvas colours by ``engine``'s stored times."""
    values = doc.node_values()
    expected = node_times_ms(doc.graph, doc.hierarchy, engine)
    return values is not None and np.array_equal(values, expected, equal_nan=True)


def legend(doc: Document) -> str:
    heat = doc.heat()
    assert heat is not None
    return legend_title(heat, doc.colour_by)


def run_both(qtbot, window) -> Document:  # type: ignore[no-untyped-def]
    doc: Document = open_file(qtbot, window, SQUEEZENET).doc
    run_and_wait(qtbot, window, RunOptions(repeat=2, warmup=0))
    run_and_wait(qtbot, window, RunOptions(repeat=2, warmup=0, engine="onnxruntime"))
    assert window.runner.messages == []
    return doc


def test_the_heat_follows_the_engine_of_the_last_run_and_the_view_menu(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    needs_onnxruntime()
    doc: Document = open_file(qtbot, window, SQUEEZENET).doc
    assert doc.colour_by == "category" and time_actions(window) == {}
    run_and_wait(qtbot, window, RunOptions(repeat=2, warmup=0))
    assert doc.colour_by == "time" and shown(doc, "cpu")
    assert legend(doc) == "time per node (log)"  # one engine: nothing to tell apart
    assert time_actions(window) == {}  # one engine: no choice
    cpu_levels = doc.heat().levels.copy()  # type: ignore[union-attr]
    window.runner.colour_actions["flops"].trigger()  # onnxruntime's run colours by time again

    run_and_wait(qtbot, window, RunOptions(repeat=2, warmup=0, engine="onnxruntime"))
    assert window.runner.messages == []
    assert doc.time_sources() == ["cpu", "onnxruntime"]
    assert doc.colour_by == "time" and doc.shown_time_engine() == "onnxruntime"
    assert shown(doc, "onnxruntime") and not shown(doc, "cpu")
    assert not np.array_equal(doc.heat().levels, cpu_levels)  # type: ignore[union-attr]
    assert legend(doc) == "time per node from onnxruntime (log)"
    panel = window.runner.profile
    assert panel.summary.text().startswith("onnxruntime (optimization all): Total ")
    actions = time_actions(window)
    assert list(actions) == ["xocview", "onnxruntime"]
    assert actions["onnxruntime"].isChecked() and not actions["xocview"].isChecked()
    assert window.runner.colour_actions["time"].isChecked()

    window.runner.colour_actions["params"].trigger()
    actions["xocview"].trigger()  # View > Time From > xocview: colours by time again
    assert doc.colour_by == "time" and shown(doc, "cpu")
    assert np.array_equal(doc.heat().levels, cpu_levels)  # type: ignore[union-attr]
    assert legend(doc) == "time per node from xocview (log)"
    assert panel.summary.text().startswith("xocview: Total ")
    assert "median of" not in panel.summary.text()  # the last run was onnxruntime's
    assert time_actions(window)["xocview"].isChecked()
    assert not time_actions(window)["onnxruntime"].isChecked()

    time_actions(window)["onnxruntime"].trigger()
    assert shown(doc, "onnxruntime") and panel.summary.text().startswith("onnxruntime")
    assert "median of 2" in panel.summary.text()  # the last run's own times: its passes told


def test_undoing_a_run_shows_the_times_left_and_redo_brings_it_back(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    needs_onnxruntime()
    doc = run_both(qtbot, window)
    panel = window.runner.profile
    window.undo_group.undo()  # onnxruntime's times go: the canvas falls back to ours
    assert doc.time_sources() == ["cpu"] and shown(doc, "cpu")
    assert legend(doc) == "time per node (log)"
    assert time_actions(window) == {}
    assert panel.summary.text().startswith("Total ")
    window.undo_group.redo()
    assert shown(doc, "onnxruntime") and legend(doc) == "time per node from onnxruntime (log)"
    assert list(time_actions(window)) == ["xocview", "onnxruntime"]
    window.undo_group.undo()
    window.undo_group.undo()  # and ours: no times at all
    assert doc.time_sources() == [] and not np.isfinite(doc.times_ms()).any()
    assert panel.summary.text().startswith("No times yet")


def test_a_saved_file_with_both_engines_reopens_with_the_choice(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    needs_onnxruntime()
    doc = run_both(qtbot, window)
    ort = doc.times_ms().copy()
    out = tmp_path / "both.json"
    doc.save_to(out)
    assert window.close_tab(0) and window.tabs.count() == 0
    again: Document = open_file(qtbot, window, out).doc
    assert again.time_sources() == ["cpu", "onnxruntime"]
    assert again.colour_by == "time" and shown(again, "cpu")  # ours first, as a file opens
    assert legend(again) == "time per node from xocview (log)"
    actions = time_actions(window)
    assert list(actions) == ["xocview", "onnxruntime"] and actions["xocview"].isChecked()
    actions["onnxruntime"].trigger()
    assert shown(again, "onnxruntime")
    assert np.allclose(again.times_ms(), ort, equal_nan=True, rtol=1e-6)
    assert window.runner.profile.summary.text().startswith("onnxruntime: Total ")


def test_a_file_with_onnxruntime_times_only_opens_coloured_by_them(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    graph = load(REPO / "sample_graphs" / "tiny_transformer.json")
    for nd in graph.nodes:  # its cpu times become onnxruntime's
        times = nd.metadata.get("performance", {}).get("time", {})
        if "cpu" in times:
            times["onnxruntime"] = times.pop("cpu")
    save(graph, tmp_path / "ort.json")
    doc: Document = open_file(qtbot, window, tmp_path / "ort.json").doc
    assert doc.time_sources() == ["onnxruntime"]
    assert doc.colour_by == "time" and shown(doc, "onnxruntime")
    assert legend(doc) == "time per node from onnxruntime (log)"
    assert time_actions(window) == {}
    assert window.runner.profile.summary.text().startswith("onnxruntime: Total ")


def test_an_engine_without_times_falls_back(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "t.json"
    shutil.copy(REPO / "sample_graphs" / "tiny_transformer.json", path)
    doc: Document = open_file(qtbot, window, path).doc
    with qtbot.waitSignal(doc.heat_changed):
        doc.set_time_engine("gpu")  # nothing stored: the times there are are shown
    assert doc.time_engine == "gpu" and doc.shown_time_engine() == "cpu" and shown(doc, "cpu")
    for bad in ("", "time.cpu"):
        with pytest.raises(ValueError):
            doc.set_time_engine(bad)


def test_the_window_says_whose_times_it_shows(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A picture of the window after both runs, for a person to look at (XOCVIEW_SHOTS=DIR
    keeps it); the legend names the engine."""
    needs_onnxruntime()
    doc = run_both(qtbot, window)
    window.runner.dock.show()
    window.runner.dock.raise_()
    qtbot.wait(50)
    for engine in ("onnxruntime", "xocview"):
        time_actions(window)[engine].trigger()
        qtbot.wait(50)
        image = window.grab().toImage()
        assert not image.isNull() and image.width() >= 1000
        assert legend(doc) == f"time per node from {engine} (log)"
        image.save(str(tmp_path / f"window_{engine}.png"))
        keep = os.environ.get("XOCVIEW_SHOTS")
        if keep:
            image.save(str(Path(keep) / f"window_{engine}.png"))


def test_the_inspector_names_the_engine_whose_time_it_shows(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    from xocview.model.analyses.profile import format_ms

    needs_onnxruntime()
    doc = run_both(qtbot, window)
    g = doc.graph
    conv = next(k for k, n in enumerate(g.nodes) if n.op_type == "Conv")
    doc.select_node(conv)
    rows = window.inspector.tree.findItems("Time (onnxruntime)", Qt.MatchFlag.MatchExactly)
    ort_ms = node_times_ms(g, doc.hierarchy, "onnxruntime")[conv]
    assert rows and rows[0].text(1).startswith(format_ms(float(ort_ms)))
    time_actions(window)["xocview"].trigger()
    doc.select_node(conv)
    rows = window.inspector.tree.findItems("Time (xocview)", Qt.MatchFlag.MatchExactly)
    cpu_ms = node_times_ms(g, doc.hierarchy, "cpu")[conv]
    assert rows and rows[0].text(1).startswith(format_ms(float(cpu_ms)))
