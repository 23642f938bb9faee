"""Search as a user drives it: Ctrl+F, type a query, read the results, press Enter to jump."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt

from tests.conftest import REPO
from xocview.ui.canvas.view import GraphView
from xocview.ui.panels.search import SearchPanel

TINY = REPO / "sample_graphs" / "tiny_transformer.json"


def open_collapsed(qtbot, window) -> GraphView:  # type: ignore[no-untyped-def]
    window.open_path(TINY)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    view.doc.set_level(0)
    return view


def find(qtbot, window, query: str, regex: bool = False) -> SearchPanel:  # type: ignore[no-untyped-def]
    """Ctrl+F, tick or untick Regex, type ``query`` and wait for the results."""
    window.activateWindow()
    qtbot.waitUntil(lambda: window.isActiveWindow())
    qtbot.keyClick(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    panel: SearchPanel = window.search
    assert window.search_dock.isVisible() and panel.edit.hasFocus()
    panel.regex.setChecked(regex)
    qtbot.keyClicks(panel.edit, query)
    qtbot.waitUntil(lambda: not panel._timer.isActive())
    return panel


def node_hits(panel: SearchPanel) -> list[str]:
    return [row.split()[1] for row in panel.hits() if row.startswith("node")]


def has_box(view: GraphView, node_id: str) -> bool:
    pos = view.doc.graph.index.node_position(node_id)
    return bool(np.any(view.doc.drawing.item_node == pos))


def test_search_dock_is_hidden_until_find(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    assert window.search_dock.objectName() == "search"
    assert not window.search_dock.isVisible()


def test_enter_jumps_to_a_collapsed_node_and_selects_it(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_collapsed(qtbot, window)
    assert not has_box(view, "l0.softmax")
    panel = find(qtbot, window, "softmax")
    assert node_hits(panel) == ["l0.softmax", "l1.softmax"]
    assert panel.hits()[0] == "node  l0.softmax  Softmax"
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)
    doc = view.doc
    target = doc.graph.index.node_position("l0.softmax")
    assert doc.selected_node == target
    assert {"encoder", "layer0", "l0.attention"} <= doc.expanded
    assert has_box(view, "l0.softmax")
    assert window.inspector.rows()["Node"] == "l0.softmax"


def test_down_then_enter_jumps_to_the_second_result(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_collapsed(qtbot, window)
    panel = find(qtbot, window, "softmax")
    qtbot.keyClick(panel.edit, Qt.Key.Key_Down)
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)
    assert view.doc.selected_node == view.doc.graph.index.node_position("l1.softmax")
    assert has_box(view, "l1.softmax") and not has_box(view, "l0.softmax")


def test_regex_matches_exactly_the_named_nodes(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    open_collapsed(qtbot, window)
    panel = find(qtbot, window, r"^l1\.(q|k)$", regex=True)
    assert node_hits(panel) == ["l1.q", "l1.k"]


def test_a_shape_finds_the_tensor_and_enter_selects_it(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_collapsed(qtbot, window)
    panel = find(qtbot, window, "1x16x1000")
    assert panel.hits() == ["tensor  logits  1x16x1000 float32  (matched: shape)"]
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)
    assert view.doc.selected_tensor == view.doc.graph.index.tensor_position("logits")
    assert window.inspector.rows()["Tensor"] == "logits"


def test_an_invalid_regex_shows_the_error(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_collapsed(qtbot, window)
    panel = find(qtbot, window, "(", regex=True)
    assert "regex '('" in panel.status.text() and "missing )" in panel.status.text()
    assert panel.hits() == []
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)  # nothing to jump to, nothing breaks
    assert view.doc.selected_node == -1
    panel.regex.setChecked(False)  # the same text as plain text is fine
    qtbot.waitUntil(lambda: not panel._timer.isActive())
    assert "regex" not in panel.status.text()


def test_a_metadata_value_finds_its_group(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_collapsed(qtbot, window)
    panel = find(qtbot, window, "self-attention")
    assert panel.hits() == [
        "node  l0.attention  Attention  (matched: metadata kind_hint)",
        "node  l1.attention  Attention  (matched: metadata kind_hint)",
    ]
    panel.results.setCurrentRow(1)
    panel.results.itemActivated.emit(panel.results.currentItem())
    assert view.doc.selected_node == view.doc.graph.index.node_position("l1.attention")
    assert has_box(view, "l1.attention")


def test_the_panel_follows_the_current_tab(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    open_collapsed(qtbot, window)
    panel = find(qtbot, window, "logits")
    assert panel.hits()
    window.open_path(REPO / "sample_graphs" / "simple_model.json")
    qtbot.waitUntil(lambda: window.tabs.count() == 2, timeout=20000)
    assert panel.doc is window.tabs.currentWidget().doc
    assert panel.hits() == []
    window.close_tab(1)
    window.close_tab(0)
    assert panel.doc is None and panel.hits() == []


def test_attribute_names_and_values_are_found(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.open_path(REPO / "sample_graphs" / "simple_model.json")
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    view = window.tabs.currentWidget()
    panel = find(qtbot, window, "kernel_shape")
    assert panel.hits() == ["node  node_0  Conv  (matched: attribute kernel_shape = [3, 3])"]
    for query in ("3, 3", "3x3"):
        panel.edit.clear()
        qtbot.keyClicks(panel.edit, query)
        qtbot.waitUntil(lambda: not panel._timer.isActive())
        assert node_hits(panel) == ["node_0"], query
    panel.edit.clear()
    panel.regex.setChecked(True)
    qtbot.keyClicks(panel.edit, "^pads$")
    qtbot.waitUntil(lambda: not panel._timer.isActive())
    assert panel.hits() == ["node  node_0  Conv  (matched: attribute pads = [1, 1])"]
    qtbot.keyClick(panel.edit, Qt.Key.Key_Return)
    assert view.doc.selected_node == view.doc.graph.index.node_position("node_0")
    assert window.inspector.rows()["Op type"] == "Conv"


def test_tiny_transformer_axis_finds_every_node_with_the_attribute(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    open_collapsed(qtbot, window)
    panel = find(qtbot, window, "axis")
    rows = panel.hits()
    assert "node  l0.softmax  Softmax  (matched: attribute axis = -1)" in rows
    assert "node  embed  Gather  (matched: attribute axis = 0)" in rows
