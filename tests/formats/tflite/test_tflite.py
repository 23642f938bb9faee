"""TFLite files read without TensorFlow: the converter's files load and validate, float ones run
on the executor to the TFLite interpreter's outputs (int8 within one quantization step),
damaged files are located FormatErrors, and a 200 MB model opens without reading its weights.

The files and the interpreter's outputs were made by tests/data/tflite/make_tflite.py.
"""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tests.formats.tflite.tflite_builder import Buf, Op, Spec, T, build
from xocview.errors import FormatError, RunError
from xocview.executor import run
from xocview.formats.source import Source
from xocview.formats.tflite import load, sniff
from xocview.model import Graph, validate

DATA = Path(__file__).resolve().parents[2] / "data" / "tflite"
NAMES = ["cnn", "mlp", "block", "shapes", "more", "cnn_int8", "loop", "branch"]
FLOAT = ["cnn", "mlp", "block", "shapes", "more", "loop", "branch"]


@pytest.fixture(scope="module")
def expected() -> dict[str, np.ndarray]:
    with np.load(DATA / "tfl_outputs.npz") as z:
        return {k: z[k] for k in z.files}


def _load(name: str) -> Graph:
    return load(Source(DATA / f"tfl_{name}.tflite"))


def _run(name: str, expected: dict[str, np.ndarray]) -> tuple[Graph, list[np.ndarray]]:
    graph = _load(name)
    feeds = {graph.tensors[t].id: expected[f"{name}.in{k}"] for k, t in enumerate(graph.inputs)}
    got = run(graph, feeds).outputs
    return graph, [got[graph.tensors[t].id] for t in graph.outputs]


@pytest.mark.parametrize("name", NAMES)
def test_converter_files_load_and_validate(name: str) -> None:
    source = Source(DATA / f"tfl_{name}.tflite")
    assert sniff(source) is None
    graph = load(source)
    assert [f for f in validate(graph) if f.severity == "error"] == []
    assert graph.metadata["tflite"]["version"] == 3
    assert "min_runtime_version" in graph.metadata["tflite"]["metadata"]
    assert graph.inputs and graph.outputs


@pytest.mark.parametrize("name", FLOAT)
def test_float_models_run_to_the_interpreters_outputs(
    name: str, expected: dict[str, np.ndarray]
) -> None:
    graph, got = _run(name, expected)
    assert not [n for n in graph.nodes if n.metadata.get("domain") == "tflite"]
    for k, value in enumerate(got):
        want = expected[f"{name}.out{k}"]
        assert value.shape == want.shape
        np.testing.assert_allclose(value, want, rtol=1e-3, atol=1e-4, err_msg=f"{name} {k}")


def test_int8_model_shows_its_quantization_and_runs_within_one_step(
    expected: dict[str, np.ndarray],
) -> None:
    graph, got = _run("cnn_int8", expected)
    conv = next(n for n in graph.nodes if n.op_type == "CONV_2D")
    kids = [n for n in graph.nodes if n.metadata.get("parent_id") == conv.id]
    read = [graph.tensors[n.inputs[0]] for n in kids if n.op_type == "DequantizeLinear"]
    weight = next(t for t in read if t.kind == "weight" and len(t.shape) == 4)
    q = weight.metadata["quantization"]
    assert weight.dtype == "int8" and len(q["scale"]) == 8 and q["quantized_dimension"] == 0
    assert q["zero_point"] == [0] * 8
    assert weight.data is not None and weight.data.shape == (8, 3, 3, 3)
    dq = next(n for n in graph.nodes if n.metadata.get("tflite", {}).get("op") == "DEQUANTIZE")
    step = graph.tensors[dq.inputs[0]].metadata["quantization"]["scale"][0]
    assert np.abs(got[0] - expected["cnn_int8.out0"]).max() <= step * 1.001


def test_conv_is_a_group_with_explicit_layout_and_unfused_activation() -> None:
    graph = _load("cnn")
    by_id = {n.id: n for n in graph.nodes}
    conv = next(n for n in graph.nodes if n.op_type == "CONV_2D")
    assert conv.metadata["derived"] == "tflite"
    options = conv.metadata["tflite"]["options"]
    assert options["padding"] == "SAME" and options["fused_activation_function"] == "RELU"
    kids = [by_id[c].op_type for c in conv.metadata["children_ids"]]
    assert kids == ["Transpose", "Transpose", "Conv", "Transpose", "Relu"]
    conv_leaf = next(by_id[c] for c in conv.metadata["children_ids"] if by_id[c].op_type == "Conv")
    assert conv_leaf.attributes["auto_pad"] == "SAME_UPPER"
    softmax = next(n for n in graph.nodes if n.metadata.get("tflite", {}).get("op") == "SOFTMAX")
    assert softmax.op_type == "Softmax" and "children_ids" not in softmax.metadata


def test_weights_are_lazy_read_only_views() -> None:
    graph = _load("mlp")
    weights = [t for t in graph.tensors if t.kind == "weight" and "buffer" in t.metadata]
    assert weights and all(not isinstance(t._data, np.ndarray) for t in weights)
    data = weights[0].data
    assert data is not None and not data.flags.writeable


def test_while_is_a_group_around_an_onnx_loop_over_its_subgraphs() -> None:
    graph = _load("loop")
    subgraphs = graph.metadata["tflite"]["subgraphs"]
    assert [s["name"] for s in subgraphs] == ["while_cond", "while_body"]
    assert subgraphs[1]["operators"] == ["ADD", "MUL", "ADD"]
    by_id = {n.id: n for n in graph.nodes}
    group = next(n for n in graph.nodes if n.op_type == "WHILE")
    assert group.metadata["derived"] == "tflite"
    assert group.metadata["tflite"]["options"]["body_subgraph_index"] == 2
    loop = by_id[group.metadata["children_ids"][-1]]
    assert loop.op_type == "Loop" and len(loop.attributes["body"]["inputs"]) == 5
    body = [by_id[c] for c in loop.metadata["children_ids"]]
    assert [n.op_type for n in body] == ["Add", "Mul", "Add", "Less"]
    assert all(n.metadata["subgraph"] == "body" for n in body)


def test_if_runs_either_branch(expected: dict[str, np.ndarray]) -> None:
    graph = _load("branch")
    (node,) = [n for n in graph.nodes if n.op_type == "If"]
    assert set(node.attributes) == {"then_branch", "else_branch"}
    x = expected["branch.in0"]
    ids = [graph.tensors[t].id for t in graph.inputs]
    for flag, want in ((True, x * 2 + 1), (False, np.tanh(x) - x)):
        got = run(graph, {ids[0]: x, ids[1]: np.asarray(flag)}).outputs
        np.testing.assert_allclose(got[graph.tensors[graph.outputs[0]].id], want, rtol=1e-6)


def test_unmapped_builtin_is_refused_by_name_at_run(tmp_path: Path) -> None:
    spec = _small(codes=[103])  # UNIQUE
    graph = load(_write(tmp_path, build(spec)))
    (node,) = graph.nodes
    assert node.op_type == "UNIQUE" and node.metadata["domain"] == "tflite"
    with pytest.raises(RunError, match="UNIQUE"):
        run(graph, {"x": np.ones((2, 3), np.float32)})


def test_signature_defs_are_in_metadata() -> None:
    (sig,) = _load("cnn").metadata["tflite"]["signature_defs"]
    assert sig["key"] == "serving_default" and sig["subgraph_index"] == 0
    assert len(sig["inputs"]) == 1 and len(sig["outputs"]) == 1


def _small(**changes: object) -> Spec:
    """x + w -> y, with ``changes`` to its fields."""
    w = np.arange(3, dtype=np.float32).tobytes()
    spec = Spec(
        [T([2, 3], 0, 0, "x"), T([3], 0, 1, "w"), T([2, 3], 0, 0, "y")],
        [Op(0, [0, 1], [2])],
        [0],
        [Buf(), Buf(w)],
        [0],
        [2],
    )
    for key, value in changes.items():
        setattr(spec, key, value)
    return spec


def _write(tmp_path: Path, blob: bytes, name: str = "m.tflite") -> Source:
    path = tmp_path / name
    path.write_bytes(blob)
    return Source(path)


def test_a_built_model_runs(tmp_path: Path) -> None:
    graph = load(_write(tmp_path, build(_small())))
    out = run(graph, {"x": np.ones((2, 3), np.float32)}).outputs["y"]
    np.testing.assert_array_equal(out, [[1, 2, 3], [1, 2, 3]])


@pytest.mark.parametrize(
    ("changes", "place", "problem"),
    [
        ({"ops": [Op(0, [0, 9], [2])]}, "subgraphs[0].operators[0].inputs[1]", "tensor 9"),
        ({"ops": [Op(4, [0, 1], [2])]}, "subgraphs[0].operators[0].opcode_index", "4 names"),
        ({"tensors": [T([2, 3], 77, 0, "x"), T([3], 0, 1), T([2, 3])]}, "tensors[0].type", "77"),
        ({"tensors": [T([2, 3], 0, 0, "x"), T([3], 0, 5), T([2, 3])]}, "tensors[1].buffer", "5"),
        ({"tensors": [T([2, 3]), T([4], 0, 1), T([2, 3])]}, "tensors[1].buffer", "12 bytes"),
        ({"outputs": [7]}, "subgraphs[0].outputs[0]", "tensor 7"),
        ({"buffers": [Buf(), Buf(None, 64, 1 << 20)]}, "buffers[1].offset", "past the end"),
    ],
)
def test_damaged_models_are_located_format_errors(
    tmp_path: Path, changes: dict[str, object], place: str, problem: str
) -> None:
    source = _write(tmp_path, build(_small(**changes)))
    with pytest.raises(FormatError) as info:
        load(source)
    assert str(info.value).startswith(str(source.path))
    assert place in info.value.place and problem in str(info.value)


@pytest.mark.parametrize("keep", [0.2, 0.5, 0.9])
def test_truncated_file_is_a_format_error(tmp_path: Path, keep: float) -> None:
    blob = (DATA / "tfl_cnn.tflite").read_bytes()
    source = _write(tmp_path, blob[: int(len(blob) * keep)])
    with pytest.raises(FormatError) as info:
        load(source)
    assert info.value.place and str(source.path) in str(info.value)


@pytest.mark.parametrize("name", ["cnn", "cnn_int8", "loop"])
def test_flipped_bytes_never_escape_as_python_errors(tmp_path: Path, name: str) -> None:
    blob = bytearray((DATA / f"tfl_{name}.tflite").read_bytes())
    rng = np.random.default_rng(32)
    failures = 0
    for case in range(150):
        bad = bytearray(blob)
        at = rng.integers(8, len(bad), size=4)
        bad[at[0] : at[0] + 1] = bytes([int(rng.integers(0, 256))])
        for k in at[1:]:
            bad[k] = int(rng.integers(0, 256))
        try:
            load(_write(tmp_path, bytes(bad), f"f{case}.tflite"))
        except FormatError:
            failures += 1
    assert failures > 0  # some damage is found, and none escapes as another exception


def test_not_tflite_is_refused_by_sniff(tmp_path: Path) -> None:
    assert sniff(_write(tmp_path, b"\0" * 16, "x.bin")) is not None
    with pytest.raises(FormatError, match="TFL3"):
        load(_write(tmp_path, b"\0" * 16, "x.tflite"))


def test_200mb_model_opens_in_under_a_second_without_reading_weights(tmp_path: Path) -> None:
    """A buffer past the flatbuffer (Buffer.offset/size, as models past 2 GB are written)."""
    n = 50_000_000
    offset = 1 << 16
    spec = Spec(
        [T([n], 0, 0, "x"), T([n], 0, 1, "w"), T([n], 0, 0, "y")],
        [Op(0, [0, 1], [2])],
        [0],
        [Buf(), Buf(None, offset, 4 * n)],
        [0],
        [2],
    )
    blob = build(spec)
    assert len(blob) < offset
    path = tmp_path / "big.tflite"
    with open(path, "wb") as f:
        f.write(blob)
        f.truncate(offset + 4 * n)
        f.seek(offset + 4 * (n - 1))
        f.write(np.float32(2.5).tobytes())
    assert path.stat().st_size > 200_000_000
    tracemalloc.start()
    start = time.perf_counter()
    graph = load(Source(path))
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert seconds < 1.0 and peak < 10 << 20
    w = graph.tensor("w")
    assert w.kind == "weight" and w.shape == [n] and not isinstance(w._data, np.ndarray)
    data = w.data
    assert data is not None and data[-1] == 2.5 and data[0] == 0.0
