"""The list of files that could not be opened shows each message from its start, the file's name.

A refused Hugging Face snapshot gave a message longer than the box (a deep cache path, then the
place and the problem; a large font, or a box made small): appending scrolled to its end, and
the box began "xternal data ..." (wrapped anywhere) and named no file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import QPoint

WEIGHT = "encoder.layer.0.attention.self.query.weight"


def refused_model(folder: Path) -> Path:
    """A model whose external data location leaves its folder (``../../blobs/<sha256>``)."""
    folder.mkdir(parents=True)
    t = numpy_helper.from_array(np.ones((4, 4), np.float32), WEIGHT)
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    entry = t.external_data.add()
    entry.key, entry.value = "location", "../../blobs/" + "0123456789abcdef" * 4
    node = helper.make_node("MatMul", ["X", WEIGHT], ["Y"], name="matmul")
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([node], "g", [x], [y], [t])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


def _deep(tmp_path: Path, name: str) -> Path:
    """A cache-like folder (under the 300 characters a message keeps of a path)."""
    parts = [f"models--{name}--a-rather-long-model-name", "snapshots", "0123456789abcdef" * 5]
    return tmp_path.joinpath(*parts)


def _small(window: Any) -> None:
    """The box as a large font (or the user) makes it: the message takes more lines than
    it shows."""
    window.open_failures.resize(360, 200)


def _top_left(window: Any) -> int:
    """The character position shown first in the list (its top-left corner)."""
    return int(window.open_failures.text.cursorForPosition(QPoint(4, 4)).position())


def test_a_refused_file_longer_than_the_box_shows_its_start(
    qtbot: Any, window: Any, tmp_path: Path
) -> None:
    path = refused_model(_deep(tmp_path, "org"))
    _small(window)
    window.open_path(path)
    qtbot.waitUntil(lambda: bool(window.errors), timeout=20000)
    message = window.errors[0]
    assert message.startswith(f"{path}: initializer '{WEIGHT}' external_data 'location': ")
    assert "leaves the model's folder" in message
    failures = window.open_failures
    qtbot.waitUntil(failures.isVisible)
    qtbot.wait(50)  # the deferred scroll, once the text is laid out at the box's width
    text = failures.text
    assert text.verticalScrollBar().maximum() > 0  # the message does not fit: it scrolls
    assert text.horizontalScrollBar().maximum() == 0  # wrapped, never hidden sideways
    assert _top_left(window) == 0  # the start, the file's name, is the first thing shown
    assert text.toPlainText().startswith(str(path))


def test_each_new_failure_shows_from_its_own_start(qtbot: Any, window: Any, tmp_path: Path) -> None:
    first = refused_model(_deep(tmp_path, "one"))
    second = refused_model(_deep(tmp_path, "two"))
    _small(window)
    window.open_path(first)
    qtbot.waitUntil(lambda: len(window.errors) == 1, timeout=20000)
    qtbot.wait(50)
    bar = window.open_failures.text.verticalScrollBar()
    bar.setValue(bar.maximum())  # the first message read to its end
    window.open_path(second)
    qtbot.waitUntil(lambda: len(window.errors) == 2, timeout=20000)
    qtbot.wait(50)
    failures = window.open_failures
    assert "2 files could not be opened" in failures.heading.text()
    shown = failures.text.toPlainText()
    start = shown.index(str(second))
    assert start == len(window.errors[0]) + 1  # one line each
    assert _top_left(window) == start
