"""Save As ONNX in the window: an edited ONNX model written with its weights, reopened equal;
the save's notes shown; the ONNX file then saved again in place."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest

from tests.conftest import REPO
from tests.formats.onnx.running import LIGHT, assert_same_outputs
from xocview.formats import load
from xocview.model import edits
from xocview.ui.commands import perform
from xocview.ui.saving import ask_path

SQUEEZENET = LIGHT / "light_squeezenet.onnx"


def _open(qtbot, window, path: Path):  # type: ignore[no-untyped-def]
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    return window.tabs.currentWidget()


def test_save_as_onnx_writes_the_edited_model_and_reopens_it(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if not SQUEEZENET.exists():
        pytest.skip("the onnx package ships no light models here")
    source = Path(shutil.copy(SQUEEZENET, tmp_path / "squeeze.onnx"))
    view = _open(qtbot, window, source)
    doc = view.doc
    relu = next(n.id for n in doc.graph.nodes if n.op_type == "Relu")
    assert perform(doc, edits.bypass_node, relu) is None
    assert perform(doc, edits.set_metadata, "reviewed", True) is None
    target = tmp_path / "fixed.onnx"
    window.ask_path = lambda parent, d: target
    assert window.save(save_as=True)
    assert not doc.dirty and doc.path == target and doc.format == "ONNX"
    assert window.tabs.tabText(0) == "fixed.onnx"
    written = onnx.load(str(target))
    onnx.checker.check_model(written, full_check=True)
    assert relu not in {n.name for n in written.graph.node}
    reopened = load(target)
    assert reopened.metadata["reviewed"] is True
    assert len(reopened.nodes) == len(load(source).nodes) - 1
    # Save again: the ONNX file this document wrote is its file now, written in place.
    assert perform(doc, edits.set_metadata, "reviewed", False) is None
    window.ask_path = lambda parent, d: pytest.fail("Save should not ask")
    assert window.save()
    assert load(target).metadata["reviewed"] is False
    assert source.read_bytes() == SQUEEZENET.read_bytes()  # the source is untouched


def test_the_notes_of_a_save_are_shown(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = Path(shutil.copy(REPO / "sample_graphs" / "tiny_transformer.json", tmp_path))
    _open(qtbot, window, source)
    target = tmp_path / "tiny.onnx"
    window.ask_path = lambda parent, d: target
    assert window.save(save_as=True)
    assert window.errors[-1].startswith(f"{target} was written, but:\n- 21 weights")
    onnx.checker.check_model(str(target), full_check=True)


def test_a_failed_onnx_save_says_why_and_keeps_the_document_dirty(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    source = Path(shutil.copy(REPO / "sample_graphs" / "simple_model.json", tmp_path))
    view = _open(qtbot, window, source)
    assert perform(view.doc, edits.set_metadata, "note", 1) is None
    window.ask_path = lambda parent, d: tmp_path / "simple.onnx"
    assert not window.save(save_as=True)
    assert "node 'node_0'" in window.errors[-1] and "pads" in window.errors[-1]
    assert view.doc.dirty and view.doc.format == "XOC JSON"
    assert not (tmp_path / "simple.onnx").exists()


def test_the_save_dialog_offers_onnx(qtbot, window, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QFileDialog

    seen = {}

    def fake(parent, title, default, filters):  # type: ignore[no-untyped-def]
        seen["filters"] = filters
        return str(tmp_path / "model"), "ONNX (*.onnx)"

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake))
    if not SQUEEZENET.exists():
        pytest.skip("the onnx package ships no light models here")
    view = _open(qtbot, window, Path(shutil.copy(SQUEEZENET, tmp_path / "s.onnx")))
    assert ask_path(window, view.doc) == tmp_path / "model.onnx"
    assert "ONNX (*.onnx)" in seen["filters"] and "XOC JSON (*.json)" in seen["filters"]


def test_a_saved_model_runs_like_the_source(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    if not SQUEEZENET.exists():
        pytest.skip("the onnx package ships no light models here")
    source = Path(shutil.copy(SQUEEZENET, tmp_path / "squeeze.onnx"))
    _open(qtbot, window, source)
    window.ask_path = lambda parent, d: tmp_path / "copy.onnx"
    assert window.save(save_as=True)
    assert_same_outputs(source, tmp_path / "copy.onnx")
