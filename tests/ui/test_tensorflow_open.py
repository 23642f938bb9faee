"""A user drops a SavedModel folder on the window: it opens as its serving function, a click
on a layer shows what TensorFlow called it, a double-click opens it, and a weight shows the
variable's values read from ``variables/``."""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import REPO
from tests.ui.test_viewer import click_item, open_file

FOLDER = REPO / "tests" / "data" / "same_model" / "saved_model"


def test_a_dropped_saved_model_folder_opens_and_its_layers_inspect(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, FOLDER)
    rows = window.inspector.rows()
    assert rows["Format"] == "TensorFlow" and rows["Inputs"] == "1" and rows["Outputs"] == "1"
    graph = view.doc.graph
    keys = list(view.doc.drawing.keys)
    ids = _ids(graph)
    stem = next(
        k
        for k, key in enumerate(keys)
        if key in ids and graph.node(key).metadata.get("name") == "stem_1"
    )
    click_item(qtbot, view, stem)
    assert "stem_1" in window.inspector.rows().values()
    click_item(qtbot, view, stem, double=True)
    group = keys[stem]

    def opened() -> bool:
        shown = [k for k in view.doc.drawing.keys if k in _ids(graph)]
        return any(graph.node(k).metadata.get("parent_id") == group for k in shown)

    qtbot.waitUntil(opened, timeout=5000)
    kernel = next(
        t for t in graph.tensors if t.metadata.get("checkpoint_key", "").startswith("variables/0/")
    )
    view.doc.select_tensor(graph.index.tensor_position(kernel.id))
    shown = window.inspector.rows()
    assert float(shown["Min"]) == pytest.approx(float(np.min(kernel.data)), rel=1e-6)


def _ids(graph) -> set[str]:  # type: ignore[no-untyped-def]
    return {n.id for n in graph.nodes}
