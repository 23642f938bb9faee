"""model/analyses/opfacts.py and resources/ops.json: categories, key attributes, FLOPs."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import onnx
import onnx.defs
import pytest

from tests.model.conftest import graph, node, tensor
from xocview.formats import load
from xocview.model import Graph, Hierarchy
from xocview.model.analyses.opfacts import (
    category,
    flops,
    flops_assuming,
    flops_text,
    graph_flops,
    graph_flops_assuming,
    input_names,
    key_attributes,
)
from xocview.resources import resource_path

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def one(
    op: str,
    ins: Sequence[Sequence[int]],
    out: Sequence[int],
    attributes: dict[str, Any] | None = None,
    kinds: Sequence[str] = (),
    **meta: Any,
) -> Graph:
    """A graph of a single node: inputs x0, x1, ... (kinds default to activation), output y."""
    tensors = [
        tensor(f"x{i}", kinds[i] if i < len(kinds) else "activation", s) for i, s in enumerate(ins)
    ]
    tensors.append(tensor("y", "output", out))
    n = len(ins)
    return graph(tensors, [node("n", op, range(n), [n], attributes, **meta)], [0], [n])


@cache
def light(name: str) -> Graph:
    path = LIGHT / f"light_{name}.onnx"
    if not path.exists():
        pytest.skip(f"{path} is absent (it ships with the onnx package)")
    return load(path)


# -- categories and ops.json -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        ("Conv", "convolution"),
        ("ConvTranspose", "convolution"),
        ("Relu", "activation"),
        ("Softmax", "activation"),
        ("MaxPool", "pooling"),
        ("GlobalAveragePool", "pooling"),
        ("BatchNormalization", "normalization"),
        ("Add", "elementwise"),
        ("Reshape", "shape"),
        ("Transpose", "shape"),
        ("ReduceMean", "reduction"),
        ("Gemm", "matmul"),
        ("MatMul", "matmul"),
        ("LSTM", "recurrent"),
        ("If", "control"),
        ("QuantizeLinear", "quantization"),
        ("Constant", "io"),
        ("Identity", "io"),
        ("LinearRegressor", "matmul"),  # ai.onnx.ml
        ("Normalizer", "normalization"),  # ai.onnx.ml
        ("TreeEnsembleClassifier", "custom"),  # ai.onnx.ml, custom on purpose
        ("MyFancyOp", "custom"),
        ("", "custom"),
    ],
)
def test_category(op: str, expected: str) -> None:
    assert category(op) == expected


def test_ops_json_covers_every_onnx_operator() -> None:
    doc = json.loads(resource_path("ops.json").read_text(encoding="utf-8"))
    schemas = {
        s.name
        for s in onnx.defs.get_all_schemas_with_history()
        if s.domain in ("", "ai.onnx.ml") and not s.name.startswith("_")
    }
    missing = schemas - set(doc["ops"])
    assert not missing, f"run resources/make_ops.py: ops.json lacks {sorted(missing)}"
    assert {e["category"] for e in doc["ops"].values()} <= set(doc["categories"])


def test_ops_json_is_what_make_ops_writes() -> None:
    """The hand-written tables and the committed JSON agree (regenerate after editing either)."""
    doc = json.loads(resource_path("ops.json").read_text(encoding="utf-8"))
    if doc["onnx_version"] != onnx.__version__:
        pytest.skip(f"ops.json was made with onnx {doc['onnx_version']}, not {onnx.__version__}")
    spec = importlib.util.spec_from_file_location("make_ops", resource_path("make_ops.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    built, unassigned = module.build()
    assert unassigned == []
    assert json.loads(json.dumps(built)) == doc, "run resources/make_ops.py"


@pytest.mark.parametrize(
    "model",
    [
        *("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50"),
        *("shufflenet", "squeezenet", "vgg19", "zfnet512"),
    ],
)
def test_light_models_are_covered(model: str) -> None:
    """Every op of the light models has a category and known FLOPs (their shapes are known);
    the derived section groups of the flat ones are not ops."""
    g = light(model)
    leaves = [n for n, grp in zip(g.nodes, Hierarchy(g).is_group, strict=True) if not grp]
    assert all(category(n.op_type) != "custom" for n in leaves)
    assert graph_flops(g)[1] == 0


def test_input_names() -> None:
    assert input_names("Conv") == ["X", "W", "B"]
    assert input_names("MyFancyOp") == []


# -- key attributes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "attributes", "text"),
    [
        ("Conv", {"kernel_shape": [3, 3], "strides": [2, 2], "group": 32}, "3x3 /2 g32"),
        ("Conv", {"kernel_shape": [3, 3], "strides": [1, 1], "group": 1}, "3x3"),
        ("Conv", {"kernel_shape": [1, 7], "strides": [2, 1]}, "1x7 /2x1"),
        ("Conv", {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [1, 1, 1, 1]}, "3x3 d2"),
        ("MaxPool", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, "3x3 /2"),
        ("Transpose", {"perm": [0, 2, 3, 1]}, "perm=0,2,3,1"),
        ("Concat", {"axis": 1}, "axis=1"),
        ("Softmax", {"axis": -1}, "axis=-1"),
        ("Gather", {"axis": 0}, "axis=0"),
        ("Flatten", {"axis": 1}, "axis=1"),
        ("Softmax", {}, ""),  # only what the node sets: defaults differ between opsets
        ("Reshape", {"allowzero": 0}, ""),
        ("Slice", {"starts": [0], "ends": [4]}, ""),
        ("BatchNormalization", {"epsilon": 1e-5}, ""),
        ("Gemm", {"transA": 0, "transB": 1, "alpha": 1.0}, "transB"),
        ("Cast", {"to": 10}, "to=float16"),
        ("Cast", {"to": "half"}, ""),  # a value of the wrong type is left out
        ("LeakyRelu", {"alpha": 0.1}, "alpha=0.1"),
        ("LSTM", {"hidden_size": 20, "direction": "bidirectional"}, "h=20 bidirectional"),
        ("LSTM", {"hidden_size": 20, "direction": "forward"}, "h=20"),
        ("ReduceMean", {"axes": [2, 3], "keepdims": 0}, "axes=2,3 keepdims=0"),
        ("MyFancyOp", {"axis": 1}, ""),
    ],
)
def test_key_attributes(op: str, attributes: dict[str, Any], text: str) -> None:
    assert key_attributes(node("n", op, attributes=attributes)) == text


# -- FLOPs ---------------------------------------------------------------------------------------

CONV_OUT = 128 * 56 * 56


def test_conv_with_groups() -> None:
    """3x3 conv 64 -> 128 on 56x56 in 4 groups: each output sums 16 channels x 9 taps."""
    g = one("Conv", [[1, 64, 56, 56], [128, 16, 3, 3]], [1, 128, 56, 56], {"group": 4})
    assert flops(g, 0) == 2 * CONV_OUT * 16 * 9 == 115_605_504


def test_conv_dense_with_bias() -> None:
    g = one("Conv", [[1, 64, 56, 56], [128, 64, 3, 3], [128]], [1, 128, 56, 56])
    assert flops(g, 0) == 2 * CONV_OUT * 64 * 9 + CONV_OUT


def test_conv_without_weight_shape_uses_attributes() -> None:
    g = one(
        "Conv",
        [[1, 64, 56, 56], [-1, -1, -1, -1]],
        [1, 128, 56, 56],
        {"group": 4, "kernel_shape": [3, 3]},
    )
    assert flops(g, 0) == 2 * CONV_OUT * 16 * 9


def test_conv_transpose() -> None:
    """Each of the 16x8x8 inputs is spread through a 4x4 kernel into 8 channels."""
    g = one("ConvTranspose", [[1, 16, 8, 8], [16, 8, 4, 4]], [1, 8, 16, 16], {"strides": [2, 2]})
    assert flops(g, 0) == 2 * (16 * 8 * 8) * (8 * 16)


def test_gemm_trans_b_with_c() -> None:
    g = one("Gemm", [[8, 256], [512, 256], [512]], [8, 512], {"transB": 1})
    assert flops(g, 0) == 2 * 8 * 512 * 256 + 8 * 512


def test_gemm_trans_a() -> None:
    g = one("Gemm", [[256, 8], [256, 512]], [8, 512], {"transA": 1})
    assert flops(g, 0) == 2 * 8 * 512 * 256


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([2, 1, 8, 16], [3, 16, 32], 2 * (2 * 3) * 8 * 32 * 16),  # batch dims broadcast to 2x3
        ([4, 8, 16], [16, 32], 2 * 4 * 8 * 32 * 16),
        ([16], [16, 32], 2 * 32 * 16),  # 1-D operands are promoted
        ([8, 16], [16], 2 * 8 * 16),
        ([8, 16], [15, 32], None),  # inner dimensions disagree
        ([2, 8, 16], [3, 16, 32], None),  # batch dimensions do not broadcast
    ],
)
def test_matmul(a: list[int], b: list[int], expected: int | None) -> None:
    assert flops(one("MatMul", [a, b], [1]), 0) == expected


@pytest.mark.parametrize(
    ("op", "per_element"),
    [
        ("Relu", 1),
        ("Sigmoid", 1),
        ("Add", 1),
        ("Where", 1),
        ("BatchNormalization", 2),
        ("LayerNormalization", 7),
        ("InstanceNormalization", 7),
        ("Softmax", 5),
        ("Gelu", 8),
    ],
)
def test_per_output_element(op: str, per_element: int) -> None:
    g = one(op, [[2, 64, 7, 7]], [2, 64, 7, 7])
    assert flops(g, 0) == per_element * 2 * 64 * 7 * 7


def test_elementwise_counts_the_broadcast_output() -> None:
    assert flops(one("Mul", [[4, 1], [1, 5]], [4, 5]), 0) == 20


def test_sum_of_three_inputs_is_two_adds() -> None:
    assert flops(one("Sum", [[10], [10], [10]], [10]), 0) == 20


def test_pooling() -> None:
    g = one("MaxPool", [[1, 64, 56, 56]], [1, 64, 28, 28], {"kernel_shape": [3, 3]})
    assert flops(g, 0) == 9 * 64 * 28 * 28
    assert flops(one("MaxPool", [[1, 64, 56, 56]], [1, 64, 28, 28]), 0) is None  # no kernel


@pytest.mark.parametrize("op", ["GlobalAveragePool", "ReduceMean", "ReduceSum", "ArgMax"])
def test_input_elements(op: str) -> None:
    assert flops(one(op, [[1, 2048, 7, 7]], [1, 2048, 1, 1]), 0) == 2048 * 49


def lstm_step(gates: int, pointwise: int, inputs: int = 10, hidden: int = 20) -> int:
    """Hand count of one step: gate products, two bias vectors, pointwise work."""
    return 2 * gates * hidden * (inputs + hidden) + 2 * gates * hidden + pointwise * hidden


def test_lstm() -> None:
    """seq 5, batch 2, input 10, hidden 20: 5 * 2 * (4800 + 160 + 180)."""
    shapes = [[5, 2, 10], [1, 80, 10], [1, 80, 20], [1, 160]]
    g = one("LSTM", shapes, [5, 1, 2, 20], {"hidden_size": 20})
    assert flops(g, 0) == 5 * 2 * lstm_step(4, 9) == 51_400


def test_lstm_bidirectional_batch_first_without_hidden_size() -> None:
    shapes = [[2, 5, 10], [2, 80, 10], [2, 80, 20], [2, 160]]
    g = one("LSTM", shapes, [2, 5, 2, 20], {"layout": 1})
    assert flops(g, 0) == 2 * 5 * 2 * lstm_step(4, 9)


def test_lstm_with_omitted_bias() -> None:
    """B omitted but sequence_lens given: the fourth tensor is not a bias."""
    shapes = [[5, 2, 10], [1, 80, 10], [1, 80, 20], [2]]
    g = one("LSTM", shapes, [5, 1, 2, 20], {"hidden_size": 20}, omitted_inputs=[3])
    assert flops(g, 0) == 5 * 2 * (lstm_step(4, 9) - 2 * 80)


def test_gru() -> None:
    shapes = [[5, 2, 10], [1, 60, 10], [1, 60, 20], [1, 120]]
    g = one("GRU", shapes, [5, 1, 2, 20], {"hidden_size": 20})
    assert flops(g, 0) == 5 * 2 * lstm_step(3, 8) == 38_800


@pytest.mark.parametrize(
    "g",
    [
        one("Conv", [[1, 64, 56, 56], [128, 64, 3, 3]], [1, 128, -1, -1]),
        one("Relu", [[1, 10]], [-1, 10]),
        one("Gemm", [[-1, 256], [256, 512]], [-1, 512]),
        one("LSTM", [[-1, 2, 10], [1, 80, 10], [1, 80, 20]], [1], {"hidden_size": 20}),
        one("ReduceSum", [[4, -1]], [4]),
        one("NonZero", [[4, 4]], [2, 16]),  # no FLOPs rule
        one("MyFancyOp", [[4]], [4]),
    ],
)
def test_unknown_flops(g: Graph) -> None:
    assert flops(g, 0) is None


def test_unknown_dims_count_as_asked_and_say_so() -> None:
    """A dynamic batch (-1) has no FLOPs by default; taken as 1, or as 8, it scales them."""
    gemm = one("Gemm", [[-1, 256], [256, 512]], [-1, 512])
    per_row = 2 * 256 * 512
    assert flops(gemm, 0, unknown_dims=1) == per_row
    assert flops(gemm, 0, unknown_dims=8) == 8 * per_row
    assert flops_assuming(gemm, 0) == (per_row, True)
    known = one("Gemm", [[4, 256], [256, 512]], [4, 512])
    assert flops_assuming(known, 0) == (4 * per_row, False)  # nothing to assume: exact
    conv = one("Conv", [[-1, 64, 56, 56], [128, 64, 3, 3]], [-1, 128, 56, 56])
    assert flops(conv, 0, unknown_dims=2) == 2 * 2 * 128 * 56 * 56 * 64 * 9


def test_unknown_dims_leave_rules_and_rank_unknown_alone() -> None:
    assert flops_assuming(one("MyFancyOp", [[-1]], [-1]), 0) == (None, False)
    g = one("MatMul", [[8, 16], [16, 32]], [8, 32])
    g.tensors[0].shape = []
    g.tensors[0].metadata["rank_unknown"] = True
    assert flops(g, 0, unknown_dims=1) is None


def test_an_uncounted_node_assumes_nothing() -> None:
    """Conv's weight is of unknown rank and it has no kernel_shape: nothing is counted, so
    nothing was assumed, though its output's batch was read as 1 on the way."""
    conv = one("Conv", [[-1, 3, 8, 8], [1]], [-1, 4, 6, 6])
    conv.tensors[1].metadata["rank_unknown"] = True
    assert flops_assuming(conv, 0) == (None, False)
    assert graph_flops_assuming(conv) == (0, 1, False)


def test_graph_flops_with_unknown_dims_as_one() -> None:
    tensors = [tensor("x", "input", [-1, 8]), tensor("t", shape=[-1, 8])]
    tensors += [tensor("y", "output", [-1, 8])]
    nodes = [node("relu", "Relu", [0], [1]), node("add", "Add", [1, 1], [2])]
    g = graph(tensors, nodes, [0], [2])
    assert graph_flops(g) == (0, 2)
    assert graph_flops(g, unknown_dims=1) == (16, 0)
    assert graph_flops_assuming(g) == (16, 0, True)
    assert graph_flops_assuming(g, 4) == (64, 0, True)


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((1056, False, 0), "1,056"),
        ((1056, True, 0), "1,056 (unknown dims as 1)"),
        ((1056, False, 3), "at least 1,056 (3 nodes without a count)"),
        ((1056, True, 3), "at least 1,056 (unknown dims as 1; 3 nodes without a count)"),
        ((0, False, 153), "unknown (153 nodes without a count)"),
        ((0, False, 0), "0"),
        ((None, False, 0), "unknown"),
    ],
)
def test_flops_text_says_what_the_count_rests_on(
    args: tuple[int | None, bool, int], text: str
) -> None:
    assert flops_text(*args) == text


def test_rank_unknown_is_unknown() -> None:
    g = one("MatMul", [[8, 16], [16, 32]], [8, 32])
    g.tensors[0].shape = []
    g.tensors[0].metadata["rank_unknown"] = True
    assert flops(g, 0) is None


def test_data_movement_is_zero_whatever_the_shapes() -> None:
    assert flops(one("Reshape", [[-1, 4], [2]], [-1]), 0) == 0
    assert flops(one("Transpose", [[2, 3]], [3, 2]), 0) == 0


# -- whole graphs ------------------------------------------------------------------------------


def test_graph_flops_counts_leaves_and_unknowns() -> None:
    tensors = [tensor("x", "input", [4, 8]), tensor("t", shape=[4, 8])]
    tensors += [tensor("u", shape=[-1]), tensor("y", "output", [4, 8])]
    nodes = [
        node("relu", "Relu", [0], [1], parent_id="blk"),
        node("odd", "MyFancyOp", [1], [2], parent_id="blk"),
        node("add", "Add", [1, 1], [3]),
        node("blk", "Block", children_ids=["relu", "odd"]),  # a group: its leaves count
    ]
    assert graph_flops(graph(tensors, nodes, [0], [3])) == (64, 1)


def test_resnet50_flops() -> None:
    """About 4.1 G multiply-adds in the convolutions and the classifier, plus ~0.04 GFLOPs of
    batch norm, ReLU, residual adds and pooling."""
    g = light("resnet50")
    total, unknown = graph_flops(g)
    print(f"light_resnet50: {total / 1e9:.3f} GFLOPs")
    assert unknown == 0
    assert 7.7e9 <= total <= 8.3e9
    dense = [flops(g, i) for i, n in enumerate(g.nodes) if n.op_type in ("Conv", "Gemm")]
    assert 7.7e9 <= sum(f or 0 for f in dense) <= 8.2e9
