"""File > Compare With...: two graphs side by side, coloured, synchronised, with their list."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QLabel

from tests.model.analyses.onnx_edits import EDITS, LIGHT_MODELS, edited_copy, light
from tests.ui.test_viewer import open_file
from xocview.formats import load
from xocview.formats.registry import save
from xocview.model.analyses.diff import ADDED, CHANGED, NODE_CHANGED, NODE_REMOVED, REMOVED, SAME
from xocview.ui.canvas.style import theme
from xocview.ui.canvas.tint import DIVERGING_LEVELS
from xocview.ui.canvas.view import GraphView
from xocview.ui.compare import CompareTab
from xocview.ui.compare.colours import DIFFERENCES, RATIO

pytestmark = pytest.mark.skipif(not LIGHT_MODELS, reason="the onnx package ships no light models")

ALEXNET = light("bvlc_alexnet")


def compare(qtbot, window, old: Path, new: Path) -> CompareTab:  # type: ignore[no-untyped-def]
    """Open ``old``, then File > Compare With... ``new`` (the dialog's answer given)."""
    open_file(qtbot, window, old)
    before = window.tabs.count()
    window.comparer.compare(new)
    qtbot.waitUntil(lambda: window.tabs.count() == before + 1, timeout=30000)
    tab = window.tabs.currentWidget()
    assert isinstance(tab, CompareTab)
    return tab


@pytest.fixture
def edited(tmp_path: Path) -> Path:
    path = tmp_path / "alexnet_edited.onnx"
    edited_copy(ALEXNET, path, *EDITS["bvlc_alexnet"])
    return path


def item_of(view: GraphView, node: int) -> int:
    hits = np.flatnonzero(view.doc.drawing.item_node == node)
    assert len(hits), f"node {node} has no box"
    return int(hits[0])


def pixel_inside(view: GraphView, item: int) -> QColor:
    """The colour just inside the bottom-left corner of an item's box, as painted."""
    d = view.doc.drawing
    view.centerOn(QPointF(d.x[item], d.y[item]))
    corner = QPointF(d.x[item] - d.w[item] / 2 + 5, d.y[item] + d.h[item] / 2 - 4)
    at = view.mapFromScene(corner)
    return view.viewport().grab().toImage().pixelColor(at)


def test_the_menu_offers_compare_with(window) -> None:  # type: ignore[no-untyped-def]
    file_menu = window.menuBar().actions()[0].menu()
    texts = [a.text() for a in file_menu.actions()]
    assert "Compare &With..." in texts


def test_compare_opens_both_sides_with_the_findings_listed(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, ALEXNET, edited)
    assert window.tabs.tabText(window.tabs.currentIndex()) == tab.title
    assert tab.title == f"{ALEXNET.name} \u2194 {edited.name}"
    assert len(tab.left.doc.graph.nodes) == 40 and len(tab.right.doc.graph.nodes) == 39
    assert [f.kind for f in tab.differences.findings] == [
        NODE_REMOVED,
        NODE_CHANGED,
        "tensor renamed",
    ]
    summary = tab.differences.summary.text()
    assert summary.startswith(f"3 differences from {ALEXNET.name} to {edited.name}: ")


def test_clicking_a_finding_selects_its_node_on_both_sides(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, ALEXNET, edited)
    k = next(i for i, f in enumerate(tab.differences.findings) if f.kind == NODE_CHANGED)
    finding = tab.differences.findings[k]
    row = tab.differences.item_of(k)
    assert row is not None
    tree = tab.differences.tree
    tree.scrollToItem(row)
    qtbot.mouseClick(
        tree.viewport(), Qt.MouseButton.LeftButton, pos=tree.visualItemRect(row).center()
    )
    left, right = tab.left.doc, tab.right.doc
    assert left.graph.nodes[left.selected_node].id == finding.old_id
    assert right.graph.nodes[right.selected_node].id == finding.new_id
    assert left.graph.nodes[left.selected_node].op_type == "LRN"
    assert left.selected_item() >= 0 and right.selected_item() >= 0  # both have a box


def test_selecting_a_node_on_one_side_selects_its_partner(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, ALEXNET, edited)
    left, right = tab.left.doc, tab.right.doc
    conv = next(i for i, n in enumerate(right.graph.nodes) if n.op_type == "Conv")
    right.select_node(conv)
    assert left.selected_node == int(tab.diff.node_map_back[conv])
    assert left.graph.nodes[left.selected_node].op_type == "Conv"


def test_removed_and_changed_nodes_are_coloured(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, ALEXNET, edited)
    tab.left.zoom_to(1.0)
    style = theme(tab.left.theme_name)
    removed = int(np.flatnonzero(tab.diff.old_status == REMOVED)[0])
    changed = int(np.flatnonzero(tab.diff.old_status == CHANGED)[0])
    boxed = tab.left.doc.drawing.item_node
    same = next(i for i in np.flatnonzero(tab.diff.old_status == SAME).tolist() if i in boxed)
    tint = tab.left.tint()
    assert tint is not None
    assert tint.codes[item_of(tab.left, removed)] == REMOVED
    assert tint.codes[item_of(tab.left, changed)] == CHANGED
    assert pixel_inside(tab.left, item_of(tab.left, removed)) == style.fill("diff_removed").color()
    assert pixel_inside(tab.left, item_of(tab.left, changed)) == style.fill("diff_changed").color()
    assert pixel_inside(tab.left, item_of(tab.left, same)) == style.fill("no_value").color()
    partner = int(tab.diff.node_map[changed])
    assert (
        pixel_inside(tab.right, item_of(tab.right, partner)) == style.fill("diff_changed").color()
    )


def test_an_added_node_is_green_on_the_new_side(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, edited, ALEXNET)  # the other way round: the Dropout comes back
    tab.right.zoom_to(1.0)
    added = np.flatnonzero(tab.diff.new_status == ADDED)
    assert [tab.right.doc.graph.nodes[j].op_type for j in added] == ["Dropout"]
    colour = pixel_inside(tab.right, item_of(tab.right, int(added[0])))
    assert colour == theme(tab.right.theme_name).fill("diff_added").color()


def test_zooming_or_panning_one_side_moves_the_other(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, ALEXNET, edited)
    tab.left.zoom_to(0.5)
    assert tab.right.scale_factor == pytest.approx(0.5)
    tab.right.zoom_by(2.0)
    assert tab.left.scale_factor == pytest.approx(1.0)
    # pan the left onto a matched node half way down: the right centres on its partner
    d = tab.left.doc.drawing
    matched = [
        k for k in range(d.count) if d.item_node[k] >= 0 and tab.diff.node_map[d.item_node[k]] >= 0
    ]
    k = sorted(matched, key=lambda k: d.y[k])[len(matched) // 2]
    tab.left.centerOn(QPointF(d.x[k], d.y[k]))
    e = tab.right.doc.drawing
    j = item_of(tab.right, int(tab.diff.node_map[d.item_node[k]]))
    centre = tab.right.mapToScene(tab.right.viewport().rect().center())
    left = tab.left.mapToScene(tab.left.viewport().rect().center())
    # the same offset from the partner as from the node (the drawing is narrow: only y scrolls)
    assert abs((centre.y() - e.y[j]) - (left.y() - d.y[k])) <= 1.0
    assert tab.right.viewport().rect().contains(tab.right.mapFromScene(QPointF(e.x[j], e.y[j])))


def test_the_view_menus_zoom_acts_on_a_comparison(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, ALEXNET, edited)
    tab.left.zoom_to(1.0)
    window.view_do("zoom_by", 0.5)  # View > Zoom Out's call, focus on neither side
    assert tab.left.scale_factor == pytest.approx(0.5)
    assert tab.right.scale_factor == pytest.approx(0.5)
    tab.right.setFocus()
    window.view_do("zoom_to", 1.0)  # View > Actual Size
    assert tab.left.scale_factor == pytest.approx(1.0)


def test_two_runs_are_coloured_by_their_time_ratio(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The same graph with times of two runs: faster nodes below the middle level, slower
    above it, and a differences mode still there."""
    paths = []
    for run, factor in (("first", 1.0), ("second", 2.0)):
        g = load(ALEXNET)
        for node in g.nodes:
            # the convolutions got slower, the rest faster
            time = factor if node.op_type == "Conv" else 1.0 / factor
            node.metadata = {**node.metadata, "performance": {"time": {"cpu": time}}}
        path = tmp_path / f"{run}.json"
        save(g, path)
        paths.append(path)
    tab = compare(qtbot, window, paths[0], paths[1])
    assert tab.diff.equal
    assert tab.colours[0].mode == RATIO and tab.mode.count() == 2
    middle = (DIVERGING_LEVELS - 1) // 2
    tint = tab.left.tint()
    assert tint is not None
    for i, node in enumerate(tab.left.doc.graph.nodes):
        hits = np.flatnonzero(tab.left.doc.drawing.item_node == i)
        if len(hits) and "derived" not in node.metadata and "children_ids" not in node.metadata:
            code = int(tint.codes[hits[0]])
            assert (code > middle) if node.op_type == "Conv" else (code < middle), node.id
    tab.set_mode(DIFFERENCES)
    tint = tab.left.tint()
    assert tint is not None and set(tint.codes[tint.codes >= 0].tolist()) == {SAME}


def test_a_file_that_does_not_load_is_reported(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    open_file(qtbot, window, ALEXNET)
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"not a model")
    window.comparer.compare(bad)
    qtbot.waitUntil(lambda: any("broken.onnx" in e for e in window.errors), timeout=20000)
    assert not any(
        isinstance(window.tabs.widget(k), CompareTab) for k in range(window.tabs.count())
    )


def test_swap_sides_compares_the_other_way_round_in_place(qtbot, window, edited) -> None:  # type: ignore[no-untyped-def]
    tab = compare(qtbot, window, ALEXNET, edited)
    at, count = window.tabs.currentIndex(), window.tabs.count()
    headers = [w.text() for w in tab.findChildren(QLabel) if w.text().startswith("<b>")]
    assert headers[:2] == [f"<b>{ALEXNET.name}</b>", f"<b>{edited.name}</b>"]
    tab.swap_button.click()
    qtbot.waitUntil(lambda: window.tabs.widget(at) is not tab, timeout=30000)
    swapped = window.tabs.widget(at)
    assert isinstance(swapped, CompareTab) and window.tabs.count() == count
    assert swapped.title == f"{edited.name} \u2194 {ALEXNET.name}"
    headers = [w.text() for w in swapped.findChildren(QLabel) if w.text().startswith("<b>")]
    assert headers[:2] == [f"<b>{edited.name}</b>", f"<b>{ALEXNET.name}</b>"]
    assert len(swapped.left.doc.graph.nodes) == 39 and len(swapped.right.doc.graph.nodes) == 40
    # what was removed going forward is added going back
    kinds = [f.kind for f in swapped.differences.findings]
    assert NODE_REMOVED not in kinds and len(kinds) == 3
