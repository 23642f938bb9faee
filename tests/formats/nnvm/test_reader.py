"""xocview/formats/nnvm/ (reader, build, entries): MXNet and TVM graphs."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from xocview.errors import FormatError
from xocview.formats import nnvm, xoc
from xocview.formats.nnvm.build import tvm_op_type
from xocview.formats.op_table import NNVM_OPS
from xocview.formats.source import Source
from xocview.model import Graph, validate
from xocview.model.schema import schema_attributes

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
CORPUS = SHARED / "corpus" / "nnvm"
ABSENT = f"{CORPUS} is absent"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=ABSENT)

# From ../shared/corpus/SOURCES.md: NNVM nodes (nulls included), null nodes, heads, op types.
SOURCES = {
    "mxnet080_save_000800.json": (17, 10, 1, 4),
    "mxnet08_deepwater_symbol_mlp-py.json": (14, 8, 1, 3),
    "mxnet08_deepwater_symbol_lenet-cpp.json": (21, 10, 1, 6),
    "mxnet08_deepwater_symbol_unet-cpp.json": (147, 75, 1, 9),
    "mxnet08_deepwater_symbol_resnet-cpp.json": (372, 173, 1, 8),
    "mxnet08_Inception_BN-symbol.json": (513, 280, 1, 8),
    "mxnet08_mtcnn_det1-symbol.json": (24, 14, 2, 4),
    "mxnet08_mtcnn_det4-symbol.json": (133, 74, 5, 6),
    "mxnet12_resnet18-priv-symbol.json": (174, 104, 1, 8),
    "mxnet11_inception_v3-symbol.json": (785, 474, 1, 9),
    "mxnet12_resnet269_v2-symbol.json": (2250, 1348, 1, 8),
    "mxnet1001_se-resnext50-32x4d-symbol.json": (621, 333, 1, 10),
    "mxnet12_test_mkldnn_model_model1.json": (73, 34, 1, 5),
    "mxnet10_insightface_mobilefacenet-symbol.json": (432, 285, 1, 7),
    "mxnet14_mtcnn_det1-symbol.json": (24, 14, 2, 4),
    "mxnet14_mtcnn_det4-symbol.json": (133, 74, 5, 6),
    "mxnet1401_retinaface_M25-symbol.json": (436, 274, 9, 9),
    "mxnet1401_arcface_r100-symbol.json": (1133, 772, 1, 9),
    "mxnet1501_retinaface_det_model-symbol.json": (438, 274, 9, 11),
    "tvm_nnvm_insightface_deploy_graph.json": (253, 168, 1, 1),
    "tvm_nnvm_retinaface_deploy_graph.json": (269, 168, 9, 1),
    "tvm_nnvm_wrn_fc.json": (10, 6, 1, 1),
    "tvm_nnvm_wrn-rasp.json": (700, 192, 1, 1),
    "tvm_nnvm_mobilenet_deploy_graph.json": (143, 84, 1, 1),
    "tvm_relay_deploy_graph.json": (89, 57, 1, 1),
}
# MXNet 0.8 files have no node_row_ptr; their extra outputs are the entries with index > 0.
EXTRA_OUTPUTS_08 = {"mxnet08_mtcnn_det4-symbol.json": 4}
# The graph inputs: the data, and the label of files saved with their training loss layer.
LABELS = {
    "mxnet080_save_000800.json": "softmax_label",
    "mxnet11_inception_v3-symbol.json": "prob_label",
    **{
        name: "softmax_label"
        for name in SOURCES
        if name.startswith(("mxnet08_deepwater", "mxnet08_Inception", "mxnet12_", "mxnet1001"))
    },
}

corpus = pytest.mark.parametrize(
    "name", [pytest.param(n, marks=needs_corpus) for n in sorted(SOURCES)]
)


def load_corpus(name: str) -> Graph:
    return nnvm.load(Source(CORPUS / name))


def write(tmp_path: Path, doc: Any, name: str = "model-symbol.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def load_doc(tmp_path: Path, doc: Any) -> Graph:
    return nnvm.load(Source(write(tmp_path, doc)))


def small(**changes: Any) -> dict[str, Any]:
    """data -> Convolution(weight, bias) -> Activation(relu): an MXNet 1.x symbol file."""
    doc: dict[str, Any] = {
        "nodes": [
            {"op": "null", "name": "data", "inputs": []},
            {"op": "null", "name": "conv_weight", "inputs": []},
            {"op": "null", "name": "conv_bias", "inputs": []},
            {
                "op": "Convolution",
                "name": "conv",
                "attrs": {"kernel": "(3, 3)", "num_filter": "8", "pad": "(1, 1)"},
                "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
            },
            {
                "op": "Activation",
                "name": "relu",
                "attrs": {"act_type": "relu"},
                "inputs": [[3, 0, 0]],
            },
        ],
        "arg_nodes": [0, 1, 2],
        "node_row_ptr": [0, 1, 2, 3, 4, 5],
        "heads": [[4, 0, 0]],
        "attrs": {"mxnet_version": ["int", 10400]},
    }
    doc.update(changes)
    return doc


# -- the corpus ---------------------------------------------------------------------------------


@corpus
def test_every_corpus_file_loads_with_the_counts_sources_md_gives(name: str) -> None:
    count, nulls, heads, op_types = SOURCES[name]
    raw = json.loads((CORPUS / name).read_text(encoding="utf-8"))
    entries = (
        raw["node_row_ptr"][-1] if "node_row_ptr" in raw else count + EXTRA_OUTPUTS_08.get(name, 0)
    )
    g = load_corpus(name)
    assert len(g.nodes) == count - nulls
    assert len(g.tensors) == entries
    assert sum(t.kind in ("input", "weight") for t in g.tensors) == nulls
    assert len(g.outputs) == heads
    assert all(g.tensors[t].kind == "output" for t in g.outputs)
    assert len({n.metadata["op"] for n in g.nodes}) == op_types
    data = "0" if name.startswith("tvm_nnvm_wrn") else "data"
    expected_inputs = [data, LABELS[name]] if name in LABELS else [data]
    assert [g.tensors[t].id for t in g.inputs] == expected_inputs


@corpus
def test_corpus_graphs_validate_without_errors(name: str) -> None:
    assert [f for f in validate(load_corpus(name)) if f.severity == "error"] == []


@corpus
def test_corpus_graphs_convert_to_xoc_json_and_load_back_equal(name: str, tmp_path: Path) -> None:
    g = load_corpus(name)
    path = tmp_path / "converted.json"
    xoc.save(g, path)
    assert xoc.load(Source(path)) == g


@corpus
def test_corpus_files_are_sniffed_as_nnvm_and_not_as_xoc(name: str) -> None:
    source = Source(CORPUS / name)
    assert nnvm.sniff(source) is None
    assert xoc.sniff(source) is not None


@pytest.mark.parametrize("net", ["det1", "det4"])
@needs_corpus
def test_the_same_mtcnn_net_saved_by_mxnet_0_8_and_1_4_loads_equal(net: str) -> None:
    """Excluded, as they legitimately differ: the graph id and name (from the file names), the
    graph metadata ``mxnet_version`` (only 1.4 records it) and the ``__init__`` attribute of
    the PReLU gamma weights (1.4 records their initializer; 0.8 saved an empty ``param``).
    """
    old = load_corpus(f"mxnet08_mtcnn_{net}-symbol.json")
    new = load_corpus(f"mxnet14_mtcnn_{net}-symbol.json")
    assert old.metadata == {}
    assert new.metadata == {"mxnet_version": 10400}
    inits = [t for t in new.tensors if "__init__" in t.metadata.get("attrs", {})]
    assert inits and all(t.id.endswith("_gamma") for t in inits)
    for t in inits:
        assert t.metadata.pop("attrs") == {"__init__": ["Constant", {"value": 0.25}]}
    new.id, new.name, new.metadata = old.id, old.name, old.metadata
    assert new == old


@needs_corpus
def test_convolution_pooling_and_prelu_map_to_onnx_with_typed_attributes() -> None:
    g = load_corpus("mxnet14_mtcnn_det1-symbol.json")
    conv = g.node("conv1")
    assert conv.op_type == "Conv"
    assert conv.attributes == {
        "kernel_shape": [3, 3],
        "strides": [1, 1],
        "pads": [0, 0, 0, 0],
        "dilations": [1, 1],
        "group": 1,
    }
    assert conv.metadata["op"] == "Convolution"
    assert conv.metadata["attrs"]["num_filter"] == 10
    assert conv.metadata["attrs"]["cudnn_off"] is False
    assert [g.tensors[t].id for t in conv.inputs] == ["data", "conv1_weight", "conv1_bias"]
    pool = g.node("pool1")
    assert pool.op_type == "MaxPool"
    assert pool.attributes == {
        "kernel_shape": [2, 2],
        "strides": [2, 2],
        "pads": [0, 0, 0, 0],
        "ceil_mode": 1,  # pooling_convention="full"
    }
    assert g.node("prelu1").op_type == "PRelu"
    assert g.node("prob1").op_type == "Softmax" and g.node("prob1").attributes == {"axis": 1}


@needs_corpus
def test_spaced_tuples_global_pools_and_batch_norm_states() -> None:
    g = load_corpus("mxnet11_inception_v3-symbol.json")
    assert g.node("conv1_3x3_s2").attributes["strides"] == [2, 2]
    avg = g.node("inception_a1_pool")
    assert avg.op_type == "AveragePool" and avg.attributes["count_include_pad"] == 1
    assert g.node("pool_8x8_s1").op_type == "GlobalAveragePool"
    bn = g.node("conv1_3x3_s2_bn")
    assert bn.op_type == "BatchNormalization" and bn.attributes == {"epsilon": 0.001}
    assert bn.metadata["input_versions"] == [0, 0, 0, 1, 1]
    ins = [g.tensors[t] for t in bn.inputs]
    assert [t.kind for t in ins] == ["activation", "weight", "weight", "weight", "weight"]
    assert ins[1].metadata["attrs"] == {"eps": 0.001, "fix_gamma": False, "use_global_stats": True}
    assert ins[4].metadata["attrs"]["__init__"] == ["one", {}]  # moving_var starts at one
    # MXNet 1.x BatchNorm has three outputs (the mean and variance follow the result).
    assert [g.tensors[t].id for t in bn.outputs] == [
        "conv1_3x3_s2_bn",
        "conv1_3x3_s2_bn:1",
        "conv1_3x3_s2_bn:2",
    ]


@needs_corpus
def test_multi_output_nodes_and_several_heads() -> None:
    g = load_corpus("mxnet08_mtcnn_det4-symbol.json")  # 0.8: counted from the references
    split = g.node("slice")
    assert split.op_type == "Split" and split.attributes == {"axis": 1, "num_outputs": 5}
    assert [g.tensors[t].id for t in split.outputs] == ["slice"] + [
        f"slice:{k}" for k in range(1, 5)
    ]
    assert len(g.outputs) == 5
    tvm = load_corpus("tvm_nnvm_retinaface_deploy_graph.json")
    assert len(tvm.outputs) == 9 and all(tvm.tensors[t].kind == "output" for t in tvm.outputs)


@needs_corpus
def test_tvm_shapes_dtypes_and_kernels_fill_the_model() -> None:
    g = load_corpus("tvm_nnvm_wrn_fc.json")
    x = g.tensor("0")
    assert (x.kind, x.shape, x.dtype, x.metadata) == (
        "input",
        [1, 80, 8, 8],
        "float32",
        {"storage_id": 3},
    )
    w = g.tensor("8_OIHW8i8o")
    assert (w.kind, w.shape) == ("weight", [10, 10, 8, 8, 8, 8])
    assert all(t.dtype == "float32" and t.shape for t in g.tensors)
    dense = g.node("dense0")
    assert dense.op_type == "Gemm" and dense.attributes == {"transB": 1}
    assert dense.metadata == {
        "op": "tvm_op",
        "attrs": {"flatten_data": 0, "func_name": "fuse_dense", "num_inputs": 3, "num_outputs": 1},
    }
    assert g.tensor("dense0").shape == [1, 10] and g.tensor("dense0").kind == "output"
    conv = g.node("_contrib_conv2d_nchwc0")
    assert conv.op_type == "fuse__contrib_conv2d_NCHWc"
    relay = load_corpus("tvm_relay_deploy_graph.json")  # no "dtype" list, only "dltype"
    assert relay.tensor("p0").kind == "weight" and relay.tensor("p0").dtype == "float32"
    assert relay.tensor("p0").shape == [4, 1, 3, 3, 3, 8]


@needs_corpus
def test_mxnet_shape_and_dtype_hints_type_parameters() -> None:
    g = load_corpus("mxnet1401_retinaface_M25-symbol.json")
    w = g.tensor("mobilenet0_conv0_weight")
    assert (w.kind, w.shape, w.dtype) == ("weight", [8, 3, 3, 3], "float32")  # "(8L, 3L, 3L, 3L)"
    d = g.tensor("data")
    assert (d.shape, d.dtype, d.metadata) == ([], "undefined", {"rank_unknown": True})


@needs_corpus
def test_repeated_names_get_suffixes_and_a_warning() -> None:
    g, found = nnvm.read_findings(Source(CORPUS / "mxnet08_deepwater_symbol_unet-cpp.json"))
    twin = g.node("pool5_conv1_bn_2")
    assert twin.metadata["name"] == "pool5_conv1_bn"
    assert g.node("pool5_conv1_bn").metadata.get("name") is None
    assert g.tensor("pool5_conv1_bn_gamma_2").metadata["name"] == "pool5_conv1_bn_gamma"
    assert found[0].severity == "warning"
    assert str(found[0]) == (
        "nodes[51].name: warning: repeats the name of nodes[44]; loaded as 'pool5_conv1_bn_gamma_2'"
    )


@needs_corpus
def test_other_formats_corpus_files_are_refused() -> None:
    for path in sorted((SHARED / "corpus" / "xoc").glob("*.json")):
        assert nnvm.sniff(Source(path)) in (
            "has a 'tensors' list (XOC JSON), which NNVM graphs do not",
            "no 'nodes' list at the root",  # the {"graph": {...}} wrapped variant
        )
    for path in sorted((SHARED / "corpus" / "lightnet").glob("*.json")):
        if "INVALID" in path.name:
            with pytest.raises(FormatError, match="invalid JSON"):
                nnvm.sniff(Source(path))
        else:
            assert nnvm.sniff(Source(path)) == "no 'nodes' list at the root"


# -- small documents: the format's variants -----------------------------------------------------


def test_an_mxnet_1x_symbol_file(tmp_path: Path) -> None:
    g = load_doc(tmp_path, small())
    assert (g.id, g.name, g.metadata) == ("model", "model", {"mxnet_version": 10400})
    assert [(t.id, t.kind) for t in g.tensors] == [
        ("data", "input"),
        ("conv_weight", "weight"),
        ("conv_bias", "weight"),
        ("conv", "activation"),
        ("relu", "output"),
    ]
    assert (g.inputs, g.outputs) == ([0], [4])
    conv, relu = g.nodes
    assert (conv.id, conv.op_type, conv.inputs, conv.outputs) == ("conv", "Conv", [0, 1, 2], [3])
    assert conv.attributes == {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    assert conv.metadata == {
        "op": "Convolution",
        "attrs": {"kernel": [3, 3], "num_filter": 8, "pad": [1, 1]},
    }
    assert (relu.op_type, relu.attributes) == ("Relu", {})
    for t in g.tensors:
        assert (t.shape, t.dtype, t.metadata) == ([], "undefined", {"rank_unknown": True})


def test_the_mxnet_0_8_form_reads_the_same(tmp_path: Path) -> None:
    """``param`` dicts, two-element entries, no node_row_ptr, ``attr`` for user attributes."""
    doc = small()
    del doc["node_row_ptr"], doc["attrs"]
    for nd in doc["nodes"]:
        nd["param"] = nd.pop("attrs", {})
        nd["backward_source_id"] = -1
        nd["inputs"] = [e[:2] for e in nd["inputs"]]
    doc["heads"] = [[4, 0]]
    doc["nodes"][4]["attr"] = {"ctx_group": "stage1"}
    g = load_doc(tmp_path, doc)
    expected = load_doc(tmp_path, small())
    assert g.metadata == {}
    assert g.nodes[1].metadata.pop("user_attrs") == {"ctx_group": "stage1"}
    assert g.nodes == expected.nodes and g.tensors == expected.tensors


def test_the_attr_key_of_mxnet_0_11_reads_like_attrs(tmp_path: Path) -> None:
    doc = small()
    for nd in doc["nodes"]:
        if "attrs" in nd:
            nd["attr"] = nd.pop("attrs")
    assert load_doc(tmp_path, doc).nodes == load_doc(tmp_path, small()).nodes


def tvm_doc() -> dict[str, Any]:
    """A TVM graph whose second node has two outputs, so entry ids differ from node ids."""
    return {
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {
                "op": "tvm_op",
                "name": "split0",
                "attrs": {
                    "func_name": "fuse_split",
                    "num_inputs": "1",
                    "num_outputs": "2",
                    "flatten_data": "0",
                },
                "inputs": [[0, 0, 0]],
            },
            {"op": "null", "name": "p0", "inputs": []},
            {
                "op": "tvm_op",
                "name": "add0",
                "attrs": {
                    "func_name": "fuse_elemwise_add_3",
                    "num_inputs": "2",
                    "num_outputs": "1",
                    "flatten_data": "0",
                },
                "inputs": [[1, 1, 0], [2, 0, 0]],
            },
        ],
        "arg_nodes": [0, 2],
        "heads": [[3, 0, 0], [1, 0, 0]],
        "attrs": {
            "dltype": ["list_str", ["float32", "float32", "float32", "float16", "int8"]],
            "shape": ["list_shape", [[2, 4], [1, 4], [1, 4], [4], [1, 4]]],
            "storage_id": ["list_int", [0, 1, 2, 3, 4]],
        },
        "node_row_ptr": [0, 1, 3, 4, 5],
    }


def test_tvm_lists_are_indexed_by_entry_id(tmp_path: Path) -> None:
    g = load_doc(tmp_path, tvm_doc())
    got = [(t.id, t.kind, t.shape, t.dtype, t.metadata) for t in g.tensors]
    assert got == [
        ("x", "input", [2, 4], "float32", {"storage_id": 0}),
        ("split0", "output", [1, 4], "float32", {"storage_id": 1}),
        ("split0:1", "activation", [1, 4], "float32", {"storage_id": 2}),
        ("p0", "weight", [4], "float16", {"storage_id": 3}),
        ("add0", "output", [1, 4], "int8", {"storage_id": 4}),
    ]
    split, add = g.nodes
    assert (split.op_type, split.outputs) == ("fuse_split", [1, 2])
    assert (add.op_type, add.inputs, add.attributes) == ("Add", [2, 3], {})
    assert add.metadata["attrs"]["func_name"] == "fuse_elemwise_add_3"
    assert g.outputs == [4, 1]
    assert g.metadata == {}


def test_tvm_dtype_flags_serve_when_there_are_no_dltypes(tmp_path: Path) -> None:
    doc = tvm_doc()
    doc["attrs"]["dtype"] = ["list_int", [0, 0, 6, 99, 2]]
    del doc["attrs"]["dltype"]
    g = load_doc(tmp_path, doc)
    assert [t.dtype for t in g.tensors] == ["float32", "float32", "int64", "undefined", "float16"]
    assert g.tensors[3].metadata == {"storage_id": 3, "dtype_flag": 99}


@pytest.mark.parametrize(
    ("func_name", "op_type", "attributes"),
    [
        ("fuse_relu", "Relu", {}),
        ("fuse_dense_2", "Gemm", {"transB": 1}),
        ("fuse_flatten", "Flatten", {}),
        ("fused_nn_relu", "Relu", {}),  # Relay's "nn." prefix
        ("fuse_broadcast_mul", "Mul", {}),
        ("fuse_conv2d", "fuse_conv2d", None),  # its padding and strides are gone
        ("fuse_conv2d_broadcast_add_relu_3", "fuse_conv2d_broadcast_add_relu", None),
        ("fused_nn_global_avg_pool2d", "fused_nn_global_avg_pool2d", None),  # layout unknown
        ("fuse_softmax", "fuse_softmax", None),  # the axis is gone
        ("fuse___layout_transform___8", "fuse___layout_transform__", None),
        ("my_kernel", "my_kernel", None),
        ("", "tvm_op", None),
        (None, "tvm_op", None),
    ],
)
def test_tvm_kernels_map_only_when_nothing_was_lost(
    func_name: Any, op_type: str, attributes: dict[str, Any] | None
) -> None:
    got, rule = tvm_op_type(func_name)
    assert got == op_type
    assert (None if rule is None else dict(rule.fixed)) == attributes


@pytest.mark.parametrize(
    ("name", "attrs", "slot", "version", "kind"),
    [
        ("fc_weight", {}, 1, 0, "weight"),
        ("bn_moving_var", {}, 4, 0, "weight"),
        ("x", {}, 1, 0, "weight"),  # only ever a later operand
        ("x", {}, 0, 0, "input"),  # the data operand
        ("x", {"__init__": '["zero", {}]'}, 0, 0, "weight"),  # an initializer: a parameter
        ("x", {}, 0, 1, "weight"),  # read after mutation: an auxiliary state
        ("softmax_label", {}, 1, 0, "input"),
    ],
)
def test_variable_roles(
    tmp_path: Path, name: str, attrs: dict[str, str], slot: int, version: int, kind: str
) -> None:
    other = {"op": "null", "name": "other", "inputs": []}
    var = {"op": "null", "name": name, "attrs": attrs, "inputs": []}
    ins = [[0, 0, 0]] * (slot + 1)
    ins[slot] = [1, 0, version]
    doc = {
        "nodes": [other, var, {"op": "Custom", "name": "op", "inputs": ins}],
        "arg_nodes": [0, 1],
        "heads": [[2, 0, 0]],
    }
    g = load_doc(tmp_path, doc)
    assert g.tensor(name).kind == kind


def test_a_parameter_reaching_an_op_through_one_input_ops_is_a_weight(tmp_path: Path) -> None:
    """TVM scales a bias with ``__mul_scalar__`` before ``dense``; the data is the first operand."""
    doc = {
        "nodes": [
            {"op": "null", "name": "0", "inputs": []},
            {"op": "null", "name": "1", "inputs": []},
            {"op": "null", "name": "228", "inputs": []},
            {
                "op": "tvm_op",
                "name": "scaled",
                "attrs": {"func_name": "fuse___mul_scalar__"},
                "inputs": [[2, 0, 0]],
            },
            {
                "op": "tvm_op",
                "name": "fc",
                "attrs": {"func_name": "fuse_dense"},
                "inputs": [[0, 0, 0], [1, 0, 0], [3, 0, 0]],
            },
        ],
        "arg_nodes": [0, 1, 2],
        "heads": [[4, 0, 0]],
    }
    g = load_doc(tmp_path, doc)
    assert [g.tensors[t].id for t in g.inputs] == ["0"]
    assert g.tensor("228").kind == "weight"


def test_unmapped_ops_keep_their_name_and_only_schema_attributes_are_attributes(
    tmp_path: Path,
) -> None:
    doc = small()
    doc["nodes"][4] = {
        "op": "UpSampling",
        "name": "up",
        "attrs": {"scale": "2", "sample_type": "nearest"},
        "inputs": [[3, 0, 0]],
    }
    doc["nodes"][3]["attrs"].update({"workspace": "1024", "layout": "NCHW", "stride": "()"})
    g = load_doc(tmp_path, doc)
    conv, up = g.nodes
    assert conv.attributes == {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}  # "()": no strides
    assert conv.metadata["attrs"]["workspace"] == 1024
    assert (up.op_type, up.attributes) == ("UpSampling", {})
    assert up.metadata == {"op": "UpSampling", "attrs": {"scale": 2, "sample_type": "nearest"}}


def test_every_nnvm_rule_names_an_onnx_op_and_its_schema_attributes() -> None:
    for op, rules in NNVM_OPS.items():
        for rule in rules:
            allowed = schema_attributes(rule.onnx_op)
            assert allowed is not None, (op, rule.onnx_op)
            targets = [t if isinstance(t, str) else t[0] for t in rule.attrs.values()]
            assert set(targets) | set(rule.fixed) <= allowed, (op, rule.onnx_op)


ODD_VALUES = ["1e999", "abc", "()", "(1, 2, 3)", "True", "-5", "[[1]]", "None", '{"a": 1}']


@pytest.mark.parametrize("op", sorted(NNVM_OPS))
def test_odd_attribute_values_never_break_a_mapped_op(tmp_path: Path, op: str) -> None:
    names = {name for rule in NNVM_OPS[op] for name in [*rule.attrs, *rule.when]}
    for value in ODD_VALUES:
        doc = small()
        doc["nodes"][4] = {
            "op": op,
            "name": "odd",
            "attrs": {name: value for name in sorted(names)},
            "inputs": [[3, 0, 0]],
        }
        g = load_doc(tmp_path, doc)
        assert [f for f in validate(g) if f.severity == "error"] == []


def test_a_channels_last_convolution_does_not_pretend_to_be_onnx_conv(tmp_path: Path) -> None:
    doc = small()
    doc["nodes"][3]["attrs"]["layout"] = "NHWC"
    assert load_doc(tmp_path, doc).nodes[0].op_type == "Convolution"


def test_shape_hints_dotted_keys_and_control_deps(tmp_path: Path) -> None:
    doc = small()
    doc["nodes"][1]["attrs"] = {"__shape__": "(8L, 0L, 3L, 3L)", "__dtype__": "2", "a.b": "1"}
    doc["nodes"][4]["control_deps"] = [1]
    g = load_doc(tmp_path, doc)
    w = g.tensor("conv_weight")
    assert (w.shape, w.dtype) == ([8, -1, 3, 3], "float16")  # MXNet's 0 is an unknown size
    assert w.metadata == {"attrs": {"__shape__": [8, 0, 3, 3], "__dtype__": 2, "a": {"b": 1}}}
    assert g.node("relu").metadata["control_deps"] == ["conv_weight"]


def test_ids_stay_unique_when_names_repeat_or_collide(tmp_path: Path) -> None:
    doc = {
        "nodes": [
            {"op": "null", "name": "x", "inputs": []},
            {
                "op": "SliceChannel",
                "name": "s",
                "attrs": {"num_outputs": "2"},
                "inputs": [[0, 0, 0]],
            },
            {"op": "elemwise_add", "name": "s:1", "inputs": [[1, 0, 0], [1, 1, 0]]},
            {"op": "Activation", "name": "x", "attrs": {"act_type": "relu"}, "inputs": [[2, 0, 0]]},
            {"op": "Activation", "name": "", "attrs": {"act_type": "tanh"}, "inputs": [[3, 0, 0]]},
        ],
        "arg_nodes": [0],
        "node_row_ptr": [0, 1, 3, 4, 5, 6],
        "heads": [[4, 0, 0]],
    }
    path = write(tmp_path, doc)
    g, found = nnvm.read_findings(Source(path))
    assert [t.id for t in g.tensors] == ["x", "s", "s:1_2", "s:1", "x_2", "node_4"]
    assert [n.id for n in g.nodes] == ["s", "s:1", "x_2", "node_4"]
    assert [str(f) for f in found] == [
        "nodes[3].name: warning: repeats the name of nodes[0]; loaded as 'x_2'",
        "nodes[4].name: warning: empty name; loaded as 'node_4'",
    ]
    assert [f for f in validate(g) if f.severity == "error"] == []


def test_sniff_accepts_nnvm_and_refuses_the_rest(tmp_path: Path) -> None:
    assert nnvm.sniff(Source(write(tmp_path, small()))) is None
    cases = {
        "not json": "not a JSON object",
        "[1]": "the JSON root is not an object",
        '{"nodes": [], "tensors": []}': "has a 'tensors' list (XOC JSON), which NNVM graphs do not",
        '{"ops": []}': "no 'nodes' list at the root",
        '{"nodes": [{"op": "null"}]}': "no 'heads' or 'arg_nodes' at the root",
        '{"nodes": [{"name": "a"}], "heads": []}': "the nodes have no 'op' names",
    }
    for text, reason in cases.items():
        assert nnvm.sniff(Source(write(tmp_path, text, "other.json"))) == reason
    assert xoc.sniff(Source(write(tmp_path, small()))) == "no 'tensors' list at the root"


# -- faults ---------------------------------------------------------------------------------------


def broken(edit: Any) -> dict[str, Any]:
    doc = copy.deepcopy(small())
    edit(doc)
    return doc


def _set(path: str, value: Any) -> Any:
    """An edit that sets (or, for the _DEL marker, removes) the item at a dotted path."""

    def edit(doc: dict[str, Any]) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        target: Any = doc
        for p in parents:
            target = target[p]
        if value is _DEL:
            del target[last]
        else:
            target[last] = value

    return edit


_DEL = object()

FAULTS = [
    # (edit, place, problem, expected)
    (lambda d: d.clear(), "nodes", "missing", "an array of node objects"),
    (_set("nodes", {}), "nodes", "is an object", "an array of node objects"),
    (_set("nodes", []), "nodes", "the graph is empty (no nodes)", "at least one node"),
    (_set("nodes.1", "w"), "nodes[1]", "is a string", "a node object with 'op', 'name', 'inputs'"),
    (_set("nodes.3.op", _DEL), "nodes[3].op", "missing", "a string"),
    (_set("nodes.3.op", 7), "nodes[3].op", "is a number", "a string"),
    (_set("nodes.3.name", None), "nodes[3].name", "is null", "a string"),
    (_set("nodes.3.inputs", _DEL), "nodes[3].inputs", "missing", "an array of input entries"),
    (_set("nodes.3.inputs", "0"), "nodes[3].inputs", "is a string", "an array of input entries"),
    (_set("nodes.3.inputs.1", 1), "nodes[3].inputs[1]", "is a number", None),
    (_set("nodes.3.inputs.1", [1]), "nodes[3].inputs[1]", "is [1]", None),
    (_set("nodes.3.inputs.1", [1, 0, 0, 0]), "nodes[3].inputs[1]", "is [1, 0, 0, 0]", None),
    (_set("nodes.3.inputs.1", [1, True]), "nodes[3].inputs[1]", "is [1, True]", None),
    (_set("nodes.3.inputs.1", [1, -1, 0]), "nodes[3].inputs[1]", "is [1, -1, 0]", None),
    (
        _set("nodes.3.inputs.0", [99, 0, 0]),
        "nodes[3].inputs[0]",
        "node index 99 out of range (5 nodes)",
        None,
    ),
    (
        _set("nodes.3.inputs.0", [4, 0, 0]),
        "nodes[3].inputs[0]",
        "refers to node 4, which does not come before node 3",
        "inputs from earlier nodes (NNVM lists nodes in topological order)",
    ),
    (
        _set("nodes.3.inputs.0", [3, 0, 0]),
        "nodes[3].inputs[0]",
        "refers to node 3, which does not",
        None,
    ),
    (
        _set("nodes.4.inputs.0", [3, 1, 0]),
        "nodes[4].inputs[0]",
        "output 1 of node 3 'conv' does not exist (1 outputs)",
        "an output index below the node's output count",
    ),
    (_set("nodes.3.attrs", "kernel=3"), "nodes[3].attrs", "is a string", "an object of strings"),
    (_set("nodes.3.attrs.kernel", [3, 3]), "nodes[3].attrs.kernel", "is an array", None),
    (
        _set("nodes.0.inputs", [[1, 0, 0]]),
        "nodes[0].inputs[0]",
        "refers to node 1, which does not come before node 0",
        None,
    ),
    (
        _set("nodes.1.inputs", [[0, 0, 0]]),
        "nodes[1].inputs",
        "the variable 'conv_weight' (op 'null') has 1 inputs",
        None,
    ),
    (_set("nodes.4.control_deps", [9]), "nodes[4].control_deps", "has a bad node index", None),
    (_set("nodes.4.control_deps", 1), "nodes[4].control_deps", "is a number", None),
    (_set("nodes.4.backward_source_id", "x"), "nodes[4].backward_source_id", "is a string", None),
    (_set("heads", _DEL), "heads", "missing", "an array of output entries"),
    (_set("heads", [4, 0, 0]), "heads[0]", "is a number", None),
    (_set("heads", []), "heads", "is empty (the graph has no outputs)", "at least one entry"),
    (_set("heads", [[5, 0, 0]]), "heads[0]", "node index 5 out of range (5 nodes)", None),
    (
        _set("heads", [[4, 2, 0]]),
        "heads[0]",
        "output 2 of node 4 'relu' does not exist (1 outputs)",
        None,
    ),
    (_set("node_row_ptr", "0"), "node_row_ptr", "is a string", "an array of integers"),
    (_set("node_row_ptr", [0, 1, 2]), "node_row_ptr", "has 3 items for 5 nodes", None),
    (
        _set("node_row_ptr", [0, 1, 2, 3, 4, 4.5]),
        "node_row_ptr",
        "is not integers starting at 0",
        None,
    ),
    (
        _set("node_row_ptr", [0, 1, 2, 3, 3, 4]),
        "node_row_ptr[4]",
        "gives node 3 'conv' 0 outputs",
        None,
    ),
    (
        _set("node_row_ptr", [0, 2, 3, 4, 5, 6]),
        "node_row_ptr[1]",
        "gives node 0 'data' 2 outputs",
        None,
    ),
    (
        _set("node_row_ptr", [0, 1, 2, 3, 5000, 5001]),
        "node_row_ptr[4]",
        "gives node 3 'conv' 4997 outputs",
        "at most 4096 outputs per node",
    ),
    (
        _set("node_row_ptr", [0, 1, 2, 3, 4000, 8000]),
        "node_row_ptr",
        "gives 8000 outputs to 5 nodes",
        "at most 4176",
    ),
    (_set("arg_nodes", {}), "arg_nodes", "is an object", "an array of node indices"),
    (_set("arg_nodes", [0, 9]), "arg_nodes[1]", "is 9", "the index of a 'null' node (0 to 4)"),
    (_set("arg_nodes", [3]), "arg_nodes[0]", "node 3 'conv' is an operator ('Convolution')", None),
    (_set("attrs", []), "attrs", "is an array", "an object of graph attributes"),
    (
        _set("attrs.shape", [[1]] * 5),
        "attrs.shape",
        "is [[1], [1], [1], [1], [1]]",
        '["list_shape", [...]]',
    ),
    (
        _set("attrs.shape", ["list_shape", [[1]] * 4]),
        "attrs.shape[1]",
        "has 4 items",
        "one item per entry (5 entries)",
    ),
    (_set("attrs.dltype", ["list_str", ["float32"] * 4 + [1]]), "attrs.dltype[1][4]", "is 1", None),
    (
        _set("attrs.storage_id", ["list_int", [0, 1, 2, 3, "4"]]),
        "attrs.storage_id[1][4]",
        "is '4'",
        None,
    ),
    (
        _set("attrs.shape", ["list_shape", [[1], [1], [1], [1], [1, -2]]]),
        "attrs.shape[1][4]",
        "is [1, -2]",
        None,
    ),
]


@pytest.mark.parametrize(("edit", "place", "problem", "expected"), FAULTS)
def test_faults_name_the_file_the_place_and_what_was_expected(
    tmp_path: Path, edit: Any, place: str, problem: str, expected: str | None
) -> None:
    path = write(tmp_path, broken(edit))
    with pytest.raises(FormatError) as info:
        nnvm.load(Source(path))
    err = info.value
    assert (err.file, err.place) == (str(path), place)
    assert err.problem.startswith(problem)
    if expected is not None:
        assert err.expected == expected
    assert str(err).startswith(f"{path}: {place}: {problem}")


def test_a_huge_output_index_in_a_row_ptr_less_file_is_refused(tmp_path: Path) -> None:
    doc = small(heads=[[4, 999999999]])
    del doc["node_row_ptr"]
    with pytest.raises(FormatError) as info:
        load_doc(tmp_path, doc)
    assert (info.value.place, info.value.problem) == (
        "nodes[4]",
        "gives node 4 'relu' 1000000000 outputs",
    )


def test_a_non_object_root_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"root: is an array; expected a JSON object"):
        load_doc(tmp_path, [small()])


@pytest.mark.parametrize("cut", [1, 100, 400, -2])
def test_truncated_files_report_where_the_json_stops(tmp_path: Path, cut: int) -> None:
    text = json.dumps(small(), indent=1)
    path = write(tmp_path, text[:cut])
    with pytest.raises(FormatError) as info:
        nnvm.load(Source(path))
    assert info.value.file == str(path)
    assert "invalid JSON" in info.value.problem
    assert info.value.place.startswith("line ")


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 8) | st.text(max_size=6) | st.just("(1, 1)"),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_damaged_document_gives_a_format_error_or_a_graph(tmp_path: Path, data: Any) -> None:
    doc = small()
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(doc)[1:]))
        *parents, last = path
        target: Any = doc
        for p in parents:
            target = target[p]
        target[last] = data.draw(JSON_VALUES)
    try:
        g = load_doc(tmp_path, doc)
    except FormatError as e:
        assert e.place and e.problem
    else:
        assert [f for f in validate(g) if f.severity == "error"] == []
