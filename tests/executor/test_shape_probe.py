"""Tests of xocview/executor/shape_probe.py and the hook it fills (model/edits/fallback.py):
after an edit upstream, the outputs of com.microsoft ops ONNX cannot type are what
onnxruntime gives for the edited model, not unknown; undo brings the old types back exactly;
ops the executor lacks, nodes over the size bound and shapes decided by unknown values stay
unknown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.executor import shape_probe
from xocview.formats import load
from xocview.model import Graph
from xocview.model import edits as E
from xocview.model.edits import fallback, onnx_infer

MS = "com.microsoft"
F = TensorProto.FLOAT
OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)]


def _w(name: str, shape: tuple[int, ...], seed: int = 0) -> TensorProto:
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[tuple[str, int, list[int]]],
    outputs: list[str],
    inits: list[TensorProto],
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info(n, F, None) for n in outputs],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=OPSETS)


def ort_types(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, tuple[str, list]]:
    """Every node output's (dtype, shape) as onnxruntime computes them."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    names = [o for n in probe.graph.node for o in n.output if o]
    have = {o.name for o in probe.graph.output}
    probe.graph.output.extend(
        helper.make_empty_tensor_value_info(o) for o in names if o not in have
    )
    sess = ort.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    got = sess.run(None, feeds)
    out = {o.name: v for o, v in zip(sess.get_outputs(), got, strict=True)}
    dtypes = {np.dtype(np.float32): "float32", np.dtype(np.int32): "int32"}
    return {k: (dtypes[v.dtype], list(v.shape)) for k, v in out.items()}


def with_types(model: onnx.ModelProto, types: dict[str, tuple[str, list]]) -> onnx.ModelProto:
    """The model with value_info for every intermediate tensor, as onnxruntime's optimizer
    saves fused graphs: the contrib outputs are typed when the file opens."""
    codes = {"float32": F, "int32": TensorProto.INT32}
    made = onnx.ModelProto()
    made.CopyFrom(model)
    outs = [o.name for o in made.graph.output]
    made.graph.value_info.extend(
        helper.make_tensor_value_info(k, codes[d], s)
        for k, (d, s) in types.items()
        if k not in outs
    )
    del made.graph.output[:]
    made.graph.output.extend(
        helper.make_tensor_value_info(k, codes[types[k][0]], types[k][1]) for k in outs
    )
    return made


def types_of(g: Graph) -> list[tuple[str, list[int], dict[str, Any]]]:
    return [(t.dtype, list(t.shape), dict(t.metadata)) for t in g.tensors]


def bert_chain(strides: int) -> onnx.ModelProto:
    """Conv -> Reshape (1, C, -1) -> Transpose -> SkipLayerNormalization -> FastGelu ->
    BiasGelu -> QuickGelu -> Attention: a Conv stem feeding a fused transformer layer."""
    c = 16
    nodes = [
        helper.make_node(
            "Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1] * 4,
            strides=[strides, strides],
        ),
        helper.make_node("Reshape", ["c", "flat"], ["r"], name="reshape"),
        helper.make_node("Transpose", ["r"], ["h"], name="transpose", perm=[0, 2, 1]),
        helper.make_node(
            "SkipLayerNormalization", ["h", "h", "gamma", "beta"], ["ln"], name="sln", domain=MS,
            epsilon=1e-5,
        ),
        helper.make_node("FastGelu", ["ln", "bias"], ["fg"], name="fastgelu", domain=MS),
        helper.make_node("BiasGelu", ["fg", "bias"], ["bg"], name="biasgelu", domain=MS),
        helper.make_node("QuickGelu", ["bg"], ["qg"], name="quickgelu", domain=MS, alpha=1.5),
        helper.make_node(
            "Attention", ["qg", "qkv_w", "qkv_b"], ["y"], name="attention", domain=MS,
            num_heads=2,
        ),
    ]  # fmt: skip
    inits = [
        _w("w", (c, 3, 3, 3)),
        _w("b", (c,), 1),
        numpy_helper.from_array(np.array([1, c, -1], np.int64), "flat"),
        _w("gamma", (c,), 2),
        _w("beta", (c,), 3),
        _w("bias", (c,), 4),
        _w("qkv_w", (c, 3 * c), 5),
        _w("qkv_b", (3 * c,), 6),
    ]
    return _model(nodes, [("x", F, [1, 3, 8, 8])], ["y"], inits)


@pytest.fixture
def chain(tmp_path: Path) -> Iterator[tuple[Graph, onnx.ModelProto]]:
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    before = bert_chain(1)
    path = tmp_path / "chain.onnx"
    onnx.save(with_types(before, ort_types(before, {"x": x})), str(path))
    yield load(path), bert_chain(2)


CONTRIB = ("ln", "fg", "bg", "qg", "y")


def test_a_conv_strides_edit_reaches_contrib_ops_as_onnxruntime_computes_them(
    chain: tuple[Graph, onnx.ModelProto],
) -> None:
    g, edited = chain
    assert [g.tensor(t).shape for t in CONTRIB] == [[1, 64, 16]] * 5  # typed when opened
    E.set_attribute(g, "conv", "strides", [2, 2])
    x = np.zeros((1, 3, 8, 8), np.float32)
    want = ort_types(edited, {"x": x})
    for t in CONTRIB:
        tensor = g.tensor(t)
        assert (tensor.dtype, tensor.shape) == want[t], t
        assert "rank_unknown" not in tensor.metadata
    assert g.tensor("y").shape == [1, 16, 16]


def test_undo_restores_the_old_types_exactly_and_redo_the_probed_ones(
    chain: tuple[Graph, onnx.ModelProto],
) -> None:
    g, _ = chain
    old = types_of(g)
    edit = E.set_attribute(g, "conv", "strides", [2, 2])
    new = types_of(g)
    assert new != old
    edit.revert(g)
    assert types_of(g) == old
    edit.apply(g)
    assert types_of(g) == new


def test_without_the_probe_the_contrib_outputs_are_unknown_not_stale(
    chain: tuple[Graph, onnx.ModelProto],
) -> None:
    g, _ = chain
    fallback.unregister(shape_probe.probe)
    try:
        E.set_attribute(g, "conv", "strides", [2, 2])
    finally:
        shape_probe.register()
    assert g.tensor("h").shape == [1, 16, 16]  # ONNX's own inference
    for t in CONTRIB:
        assert g.tensor(t).metadata.get("rank_unknown") is True, t


def test_an_input_shape_edit_reaches_attention_with_its_present_output(tmp_path: Path) -> None:
    def model(b: int, s: int) -> onnx.ModelProto:
        node = helper.make_node(
            "Attention", ["x", "w", "bias"], ["y", "present"], domain=MS, name="att", num_heads=2
        )
        return _model(
            [node], [("x", F, [b, s, 16])], ["y", "present"], [_w("w", (16, 48)), _w("bias", (48,))]
        )

    path = tmp_path / "att.onnx"
    onnx.save(model(1, 4), str(path))
    g = load(path)
    E.set_shape(g, "x", [2, 6, 16])
    want = ort_types(model(2, 6), {"x": np.zeros((2, 6, 16), np.float32)})
    assert (g.tensor("y").dtype, g.tensor("y").shape) == want["y"] == ("float32", [2, 6, 16])
    assert (g.tensor("present").dtype, g.tensor("present").shape) == want["present"]


def gqa(lengths_known: bool, head: int) -> onnx.ModelProto:
    """GroupQueryAttention's decoding step: one new token after three cached, 4 query heads and
    2 kv heads of ``head`` values; seqlens_k and total_sequence_length (whose value is the
    present caches' length) stored, or graph inputs as decoders have them."""
    node = helper.make_node(
        "GroupQueryAttention", ["q", "k", "v", "pk0", "pv0", "seqlens", "total"],
        ["y", "pk", "pv"], domain=MS, name="gqa", num_heads=4, kv_num_heads=2,
    )  # fmt: skip
    inputs = [(n, F, s) for n, s in _gqa_shapes(head).items()]
    lengths = {"seqlens": np.array([3], np.int32), "total": np.array(4, np.int32)}
    inits = [numpy_helper.from_array(v, k) for k, v in lengths.items()] if lengths_known else []
    if not lengths_known:
        inputs += [(k, TensorProto.INT32, list(v.shape)) for k, v in lengths.items()]
    return _model([node], inputs, ["y", "pk", "pv"], inits)


def _gqa_shapes(head: int) -> dict[str, list[int]]:
    kv = [1, 1, 2 * head]
    return {"q": [1, 1, 4 * head], "k": kv, "v": kv, "pk0": [1, 2, 3, head], "pv0": [1, 2, 3, head]}


@pytest.mark.parametrize("lengths_known", [True, False])
def test_group_query_attention_is_probed_only_with_its_lengths_known(
    tmp_path: Path, lengths_known: bool
) -> None:
    path = tmp_path / "gqa.onnx"
    onnx.save(gqa(lengths_known, 8), str(path))
    g = load(path)
    for name, shape in _gqa_shapes(16).items():  # heads of 16 values instead of 8
        E.set_shape(g, name, shape)
    if not lengths_known:  # zeros would give a cache of 3, not 4: unknown instead
        assert all(g.tensor(t).metadata.get("rank_unknown") for t in ("y", "pk", "pv"))
        return
    feeds = {n: np.zeros(s, np.float32) for n, s in _gqa_shapes(16).items()}
    want = ort_types(gqa(True, 16), feeds)
    for t in ("y", "pk", "pv"):
        assert (g.tensor(t).dtype, g.tensor(t).shape) == want[t], t
    assert g.tensor("y").shape == [1, 1, 64] and g.tensor("pk").shape == [1, 2, 4, 16]


def test_a_contrib_op_without_a_kernel_and_a_failing_kernel_give_unknown(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Inverse", ["r"], ["inv"], name="inverse", domain=MS),
        helper.make_node(
            "SkipLayerNormalization", ["r", "skip", "gamma"], ["ln"], name="sln", domain=MS
        ),
    ]
    model = _model(
        nodes, [("x", F, [2, 4, 4]), ("skip", F, [2, 4, 4])], ["inv", "ln"], [_w("gamma", (4,))]
    )
    feeds = {"x": np.ones((2, 4, 4), np.float32), "skip": np.ones((2, 4, 4), np.float32)}
    path = tmp_path / "lacking.onnx"
    onnx.save(with_types(model, ort_types(model, feeds)), str(path))
    g = load(path)
    assert g.tensor("inv").shape == [2, 4, 4] and g.tensor("ln").shape == [2, 4, 4]
    E.set_shape(g, "x", [3, 5, 5])  # skip stays (2, 4, 4): SkipLayerNormalization refuses
    for t in ("inv", "ln"):
        assert g.tensor(t).metadata.get("rank_unknown") is True and g.tensor(t).shape == [], t


def test_a_node_over_the_size_bound_is_not_probed(tmp_path: Path) -> None:
    model = _model(
        [helper.make_node("FastGelu", ["x"], ["y"], name="fg", domain=MS)],
        [("x", F, [1, 16])],
        ["y"],
        [],
    )
    path = tmp_path / "big.onnx"
    onnx.save(model, str(path))
    g = load(path)
    E.set_shape(g, "x", [2, shape_probe.PROBE_ELEMENTS // 2])
    assert g.tensor("y").shape == [2, shape_probe.PROBE_ELEMENTS // 2]
    E.set_shape(g, "x", [2, shape_probe.PROBE_ELEMENTS // 2 + 1])
    assert g.tensor("y").metadata.get("rank_unknown") is True


def test_repeated_blocks_are_probed_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodes, x = [], "x"
    for i in range(40):
        nodes.append(helper.make_node("FastGelu", [x, "bias"], [f"g{i}"], name=f"fg{i}", domain=MS))
        x = f"g{i}"
    path = tmp_path / "repeat.onnx"
    onnx.save(_model(nodes, [("x", F, [1, 4, 8])], [x], [_w("bias", (8,))]), str(path))
    g = load(path)
    calls: list[str] = []
    real = shape_probe.probe

    def counting(*args: Any) -> Any:
        calls.append(args[1].id)
        return real(*args)

    fallback.clear_memo()
    monkeypatch.setattr(fallback, "_PROBES", [counting])
    E.set_shape(g, "x", [2, 3, 8])
    assert all(g.tensor(f"g{i}").shape == [2, 3, 8] for i in range(40))
    assert calls == ["fg0"]


def test_answers_stay_right_when_onnx_infer_numbers_its_types_again(tmp_path: Path) -> None:
    """The probe's memo holds type ids; a cleared type table gives ids other meanings."""
    node = helper.make_node("FusedMatMul", ["x", "w"], ["y"], name="fmm", domain=MS)
    path = tmp_path / "renumber.onnx"
    onnx.save(_model([node], [("x", F, [1, 4])], ["y"], [_w("w", (4, 6))]), str(path))
    g = load(path)
    onnx_infer.clear_memo()
    E.set_shape(g, "x", [2, 4])  # x, w, y: type ids 0, 1, 2
    E.set_shape(g, "x", [5, 4])
    assert g.tensor("y").shape == [5, 6]
    onnx_infer.clear_memo()  # the next walk numbers the types from 0 again
    E.set_shape(g, "x", [3, 4])  # x, w: 0, 1 again, now meaning other types
    assert (g.tensor("y").dtype, g.tensor("y").shape) == ("float32", [3, 6])
