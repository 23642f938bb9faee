"""The less common TFLite builtins run on the executor to the TFLite interpreter's outputs:
index and segment ops, space/batch blocks, 3-D convolutions and the fused LSTM.

The files and the interpreter's outputs were made by tests/data/tflite/make_tflite_more.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tflite.BuiltinOperator import BuiltinOperator

from tests.formats.tflite.tflite_builder import Buf, Op, Spec, T, build
from xocview.errors import RunError
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


def _write(tmp_path: Path, spec: Spec) -> Graph:
    path = tmp_path / "made.tflite"
    path.write_bytes(build(spec))
    return load(Source(path))


def test_one_hot_leaves_negative_and_too_large_indices_all_off(tmp_path: Path) -> None:
    """TFLite writes no 1 for an index outside [0, depth); ONNX would count -1 from the end."""
    four = np.asarray(4, np.int32).tobytes()
    on, off = np.float32(2.0).tobytes(), np.float32(-1.0).tobytes()
    ins = [T([3], 2, 0, "ids"), T([], 2, 1, "depth"), T([], 0, 2, "on"), T([], 0, 3, "off")]
    spec = Spec(
        tensors=[*ins, T([3, 4], 0, 0, "hot")],
        ops=[Op(0, [0, 1, 2, 3], [4])],
        codes=[BuiltinOperator.ONE_HOT],
        buffers=[Buf(), Buf(four), Buf(on), Buf(off)],
        outputs=[4],
    )
    graph = _write(tmp_path, spec)
    got = run(graph, {"ids": np.asarray([-1, 2, 7], np.int32)}).outputs["hot"]
    want = np.full((3, 4), -1.0, np.float32)
    want[1, 2] = 2.0
    np.testing.assert_array_equal(got, want)


def test_a_projection_lstm_stays_unmapped_with_its_reason(tmp_path: Path) -> None:
    weights = [T([3, 4], 0, 1, f"w{k}") for k in range(4)] + [
        T([3, 3], 0, 2, f"r{k}") for k in range(4)
    ]
    biases = [T([3], 0, 3, f"b{k}") for k in range(4)]
    tensors = [
        T([2, 5, 4], 0, 0, "x"),
        *weights,
        *biases,
        T([3, 3], 0, 2, "proj"),
        T([2, 5, 3], 0, 0, "y"),
    ]
    slots = [0, *range(1, 9), -1, -1, -1, *range(9, 13), 13, -1, -1, -1, -1, -1, -1, -1]
    spec = Spec(
        tensors=tensors,
        ops=[Op(0, slots, [14])],
        codes=[BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM],
        buffers=[Buf(), Buf(bytes(48)), Buf(bytes(36)), Buf(bytes(12))],
        outputs=[14],
    )
    graph = _write(tmp_path, spec)
    (node,) = [n for n in graph.nodes if n.op_type == "UNIDIRECTIONAL_SEQUENCE_LSTM"]
    assert node.metadata["domain"] == "tflite"
    assert node.metadata["not_mapped"] == "a projection LSTM"
    with pytest.raises(RunError, match="UNIDIRECTIONAL_SEQUENCE_LSTM"):
        run(graph, {"x": np.zeros((2, 5, 4), np.float32)})


def test_right_shift_of_negative_int32_is_arithmetic(tmp_path: Path) -> None:
    """ONNX BitShift is unsigned only; the signed shift goes through an offset and must floor."""
    spec = Spec(
        tensors=[T([5], 2, 0, "x"), T([5], 2, 0, "s"), T([5], 2, 0, "y")],
        ops=[Op(0, [0, 1], [2])],
        codes=[BuiltinOperator.RIGHT_SHIFT],
        inputs=[0, 1],
        outputs=[2],
    )
    graph = _write(tmp_path, spec)
    x = np.asarray([-7, -1, 5, -(2**31), 2**31 - 1], np.int32)
    s = np.asarray([1, 3, 0, 31, 30], np.int32)
    got = run(graph, {"x": x, "s": s}).outputs["y"]
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.right_shift(x, s))
