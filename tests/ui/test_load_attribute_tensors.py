"""A Constant-weight model read in the window's child process comes back with its values lazy.

The child sends the graph pickled; a large Constant's values travel as their reader (a closure
for external data, the tensor for inline data), read here on first use, never in the child.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from tests.formats.onnx.test_attribute_tensors import constant_model
from xocview.formats.registry import load
from xocview.model.attribute_tensor import AttributeTensor
from xocview.ui import load_process


def test_a_constant_weight_comes_from_the_child_unread(qtbot: Any, tmp_path: Path) -> None:
    w = np.random.default_rng(4).standard_normal((600, 500)).astype(np.float32)
    for form in ("raw_data", "external"):
        path = constant_model(w, tmp_path, form, f"{form}.onnx")
        made = load_process.ChildLoad(path).result(lambda: None)
        assert made is not None
        graph, _ = made
        assert graph == load(path)
        spec = graph.node("Constant_24").attributes["value"]["tensor"]
        assert isinstance(spec, AttributeTensor) and not spec.is_read
        np.testing.assert_array_equal(spec.array(), w)
