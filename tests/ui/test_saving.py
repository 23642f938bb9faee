"""Saving, the dirty marker, unsaved-change prompts, undo history and the Problems pane."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import onnx
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget

from tests.conftest import REPO
from xocview.formats import load
from xocview.model import Graph
from xocview.ui.canvas.view import GraphView
from xocview.ui.commands import EditCommand

SAMPLES = REPO / "sample_graphs"


@dataclass
class SetGraphMeta:
    """A minimal reversible edit (the model's own edits follow the same protocol)."""

    key: str
    value: object
    description: str = "set metadata"
    old: object = None

    def apply(self, graph: Graph) -> None:
        self.old = graph.metadata.get(self.key)
        graph.metadata[self.key] = self.value

    def revert(self, graph: Graph) -> None:
        if self.old is None:
            graph.metadata.pop(self.key, None)
        else:
            graph.metadata[self.key] = self.old


def edit(view: GraphView, key: str, value: object) -> None:
    e = SetGraphMeta(key, value)
    e.apply(view.doc.graph)
    view.doc.undo_stack.push(EditCommand(view.doc, e))


def open_copy(qtbot, window, tmp_path: Path, name: str) -> GraphView:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    shutil.copy(SAMPLES / name, path)
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    return window.tabs.currentWidget()


def test_edit_marks_dirty_and_save_writes_xoc_json(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path, "simple_model.json")
    edit(view, "note", "edited")
    assert view.doc.dirty
    assert window.tabs.tabText(0) == "simple_model.json*"
    assert window.save()
    assert not view.doc.dirty and window.tabs.tabText(0) == "simple_model.json"
    assert load(tmp_path / "simple_model.json").metadata == {"note": "edited"}


def test_undo_restores_and_the_history_follows(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path, "simple_model.json")
    original = load(tmp_path / "simple_model.json")
    for k in range(5):
        edit(view, f"k{k}", k)
    assert window.undo_group.canUndo()
    for _ in range(5):
        window.undo_group.undo()
    assert view.doc.graph == original
    assert not view.doc.dirty  # back at the saved state


def test_an_onnx_source_is_never_overwritten(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    src = Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"
    model = tmp_path / "squeeze.onnx"
    shutil.copy(src, model)
    window.open_path(model)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    view = window.tabs.currentWidget()
    edit(view, "note", 1)
    before = model.read_bytes()
    window.ask_path = lambda parent, doc: model  # the user picks the .onnx itself
    assert not window.save()
    assert "refusing to overwrite the ONNX source" in window.errors[-1]
    window.ask_path = lambda parent, doc: tmp_path / "squeeze.json"
    assert window.save()
    assert model.read_bytes() == before
    assert load(tmp_path / "squeeze.json").metadata["note"] == 1
    assert view.doc.save_path == tmp_path / "squeeze.json"


def test_save_as_shows_the_new_file_and_format_in_the_inspector(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    src = Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"
    model = tmp_path / "squeeze.onnx"
    shutil.copy(src, model)
    window.open_path(model)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    rows = window.inspector.rows()  # nothing selected: the graph pane
    assert (rows["File"], rows["Format"]) == (str(model), "ONNX")
    target = tmp_path / "squeeze.json"
    window.ask_path = lambda parent, doc: target
    assert window.save(save_as=True)  # no edit: the undo stack was clean already
    rows = window.inspector.rows()
    assert (rows["File"], rows["Format"]) == (str(target), "XOC JSON")
    assert window.tabs.tabText(0) == "squeeze.json"


def test_closing_with_unsaved_changes_asks(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path, "simple_model.json")
    edit(view, "note", 2)
    window.ask_unsaved = lambda parent, doc: "cancel"
    assert not window.close_tab(0) and window.tabs.count() == 1
    window.ask_unsaved = lambda parent, doc: "discard"
    assert window.close_tab(0) and window.tabs.count() == 0


def test_quitting_with_unsaved_changes_can_save(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path, "simple_model.json")
    edit(view, "note", 3)
    asked = []
    window.ask_unsaved = lambda parent, doc: asked.append(doc.title) or "save"
    assert window.close()
    assert asked == ["simple_model.json"]
    assert load(tmp_path / "simple_model.json").metadata == {"note": 3}


def test_a_failed_save_keeps_the_old_file_and_tells(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path, "simple_model.json")
    edit(view, "note", 4)
    window.ask_path = lambda parent, doc: tmp_path / "missing" / "out.json"
    assert not window.save(save_as=True)
    assert "folder does not exist" in window.errors[-1]
    assert view.doc.dirty
    assert load(tmp_path / "simple_model.json").metadata == {}


def test_problems_pane_lists_findings_and_selects_the_place(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    doc = {
        "id": "g",
        "name": "g",
        "tensors": [
            {"id": "x", "name": "input", "shape": [1], "dtype": "float32"},
            {"id": "a", "name": "activation", "shape": [1], "dtype": "float32"},
            {"id": "y", "name": "output", "shape": [1], "dtype": "float32"},
        ],
        "nodes": [
            {"id": "head", "name": "Relu", "inputs": [0], "outputs": [1], "attributes": {}},
            {
                "id": "tail",
                "name": "Neg",
                "inputs": [1],
                "outputs": [2],
                "attributes": {},
                "metadata": {"parent_id": "ghost"},
            },
        ],
        "inputs": [0],
        "outputs": [2],
        "metadata": {},
    }
    path = tmp_path / "faulty.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    panel = window.problems
    assert panel.summary.text() == "1 errors, 0 warnings"
    # hidden under a clean graph, the pane comes up with the first finding
    assert window.findChild(QDockWidget, "problems").isVisible()
    item = panel.list.item(0)
    assert item.text() == "error  nodes[1].metadata.parent_id: parent 'ghost' is not a node id"
    qtbot.mouseClick(
        panel.list.viewport(),
        Qt.MouseButton.LeftButton,
        pos=panel.list.visualItemRect(item).center(),
    )
    view = window.tabs.currentWidget()
    assert view.doc.graph.nodes[view.doc.selected_node].id == "tail"
