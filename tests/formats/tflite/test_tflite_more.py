"""The less common TFLite builtins run on the executor to the TFLite interpreter's outputs:
index and segment ops, space/batch blocks, 3-D convolutions and the fused LSTM.

The files and the interpreter's outputs were made by tests/data/tflite/make_tflite_more.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xocview.executor import run
from xocview.formats.source import Source
from xocview.formats.tflite import load
from xocview.model import Graph, validate

DATA = Path(__file__).resolve().parents[2] / "data" / "tflite"
NAMES = ["index", "segment", "space", "conv3d", "recurrent", "handmade"]


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(DATA / "tfl_more_outputs.npz") as z:
        return {k: z[k] for k in z.files}


def _run(name: str, expected: dict[str, np.ndarray]) -> tuple[Graph, list[np.ndarray]]:
    graph = load(Source(DATA / f"tfl_more_{name}.tflite"))
    feeds = {graph.tensors[t].id: expected[f"{name}.in{k}"] for k, t in enumerate(graph.inputs)}
    got = run(graph, feeds).outputs
    return graph, [got[graph.tensors[t].id] for t in graph.outputs]


@pytest.mark.parametrize("name", NAMES)
def test_every_operator_is_mapped_and_runs_to_the_interpreters_outputs(
    name: str, expected: dict[str, np.ndarray]
) -> None:
    graph, got = _run(name, expected)
    assert [f for f in validate(graph) if f.severity == "error"] == []
    left = [
        (n.op_type, n.metadata.get("not_mapped"))
        for n in graph.nodes
        if n.metadata.get("domain") == "tflite"
    ]
    assert left == []
    for k, value in enumerate(got):
        want = expected[f"{name}.out{k}"]
        assert value.shape == want.shape, f"{name} out{k}"
        assert value.dtype == want.dtype, f"{name} out{k}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(value, want, rtol=1e-4, atol=1e-5, err_msg=f"{name} {k}")
        else:
            np.testing.assert_array_equal(value, want, err_msg=f"{name} {k}")
