"""xocview/formats/lightnet/ (reader, check, build) and op_table.py: LightNet's JSON IR."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xocview.errors import FormatError
from xocview.formats import lightnet, registry, xoc
from xocview.formats.op_table import LIGHTNET_OPS
from xocview.formats.source import Source
from xocview.model import Finding, Graph, validate
from xocview.model.schema import is_known_op, schema_attributes

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
CORPUS = SHARED / "corpus" / "lightnet"
ABSENT = f"{CORPUS} is absent"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason=ABSENT)
INVALID = "lightnet_squeezedet_INVALID_trailing_commas.json"

# From ../shared/corpus/SOURCES.md: ops, ops with empty tensors_in (creates among them), ops
# with empty tensors_out, multi-output ops. The create counts were read off the files.
SOURCES = {
    "lightnet_yolov3_ir.json": (703, 451, 451, 0, 0),
    "lightnet_trt_test.json": (22, 9, 9, 2, 0),
    "lightnet_trt_test_null_values.json": (19, 10, 10, 0, 0),
    "lightnet_cuda_test.json": (12, 2, 1, 5, 1),
    "lightnet_op_all_optypes.json": (13, 1, 1, 0, 1),
    "lightnet_test_ops.json": (9, 2, 1, 2, 0),
    "lightnet_test_ln_parse.json": (7, 2, 1, 0, 1),
}
_FOUND = sorted(p.name for p in CORPUS.glob("*.json") if p.name != INVALID)
corpus = pytest.mark.parametrize(
    "name",
    _FOUND or [pytest.param("lightnet_*.json", marks=pytest.mark.skip(reason=ABSENT))],
)


def load_corpus(name: str) -> Graph:
    return lightnet.load(Source(CORPUS / name))


def write(tmp_path: Path, doc: Any, name: str = "net.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def findings(tmp_path: Path, doc: Any) -> tuple[Graph, list[Finding]]:
    return lightnet.read_findings(Source(write(tmp_path, doc)))


def fault(tmp_path: Path, doc: Any) -> str:
    with pytest.raises(FormatError) as caught:
        lightnet.load(Source(write(tmp_path, doc)))
    return str(caught.value)


def op(name: str, optype: str, ins: Any = (), outs: Any = (), **params: Any) -> dict[str, Any]:
    """An op; ``ins``/``outs`` are tensor names (arg names src1.. / dst1..) or (arg, name)."""

    def refs(names: Any, arg: str) -> list[dict[str, str]]:
        pairs = [n if isinstance(n, tuple) else (f"{arg}{k + 1}", n) for k, n in enumerate(names)]
        return [{"arg_name": a, "name": n} for a, n in pairs]

    return {
        "name": name,
        "optype": optype,
        "tensors_in": refs(ins, "src"),
        "tensors_out": refs(outs, "dst"),
        "params": [{"arg_name": k, "value": v} for k, v in params.items()],
    }


def small() -> dict[str, Any]:
    """create -> conv2d(weight created too) -> relu -> print: the shapes of the corpus."""
    return {
        "ops": [
            op("create1", "create", (), ["img"], dtype="TL_FLOAT", dims=[1, 3, 8, 8], data=None),
            op("create2", "create", (), ["w"], dtype="TL_FLOAT", dims=[4, 3, 3, 3], data=[0]),
            op(
                "conv1",
                "conv2d",
                [("src", "img"), ("weight", "w")],
                [("dst", "c")],
                group=1,
                size=[3, 3],
                stride=[1, 1],
                padding=[1, 1, 1, 1],
                dilation=[1, 1],
            ),
            op("relu1", "relu", [("src", "c")], [("dst", "r")]),
            op("print1", "print", [("src", "r")], (), msg="r:"),
        ]
    }


# -- the corpus ---------------------------------------------------------------------------------


@corpus
def test_every_corpus_file_loads_with_the_counts_sources_md_gives(name: str) -> None:
    assert name in SOURCES, f"{name} is new in the corpus: add its counts from SOURCES.md"
    count, empty_in, creates, empty_out, multi = SOURCES[name]
    g = load_corpus(name)
    assert len(g.nodes) == count - creates
    assert sum(t.kind == "weight" for t in g.tensors) == creates
    assert all(t.metadata["create"]["name"] for t in g.tensors if t.kind == "weight")
    arg_names = [n.metadata["arg_names"] for n in g.nodes]
    assert sum(not a["tensors_in"] for a in arg_names) == empty_in - creates
    assert sum(not a["tensors_out"] for a in arg_names) == empty_out
    assert sum(len(a["tensors_out"]) > 1 for a in arg_names) == multi
    assert all(n.metadata["op"] for n in g.nodes)
    assert (g.id, g.name) == (Path(name).stem, Path(name).stem)
    assert all(g.tensors[t].kind == "output" for t in g.outputs)


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
def test_corpus_files_are_sniffed_as_lightnet_and_not_as_xoc_or_nnvm(name: str) -> None:
    source = Source(CORPUS / name)
    assert lightnet.sniff(source) is None
    assert xoc.sniff(source) == "no 'tensors' list at the root"
    try:
        from xocview.formats import nnvm
    except ImportError:  # not merged yet
        return
    assert nnvm.sniff(source) is not None


@corpus
def test_node_attributes_are_onnx_schema_attributes(name: str) -> None:
    for node in load_corpus(name).nodes:
        allowed = schema_attributes(node.op_type)
        assert set(node.attributes) <= (allowed or set()), node


@needs_corpus
def test_the_invalid_file_fails_with_line_and_column() -> None:
    with pytest.raises(FormatError) as caught:
        lightnet.load(Source(CORPUS / INVALID))
    assert caught.value.place == "line 199 column 5"
    assert str(caught.value).endswith(
        f"{INVALID}: line 199 column 5: invalid JSON: Expecting value"
    )


@needs_corpus
def test_xoc_and_nnvm_corpus_files_are_refused() -> None:
    for fmt in ("xoc", "nnvm"):
        for path in sorted((SHARED / "corpus" / fmt).glob("*.json")):
            why = lightnet.sniff(Source(path))
            assert why is not None and ("nodes" in why or "tensors" in why or "ops" in why), path


@needs_corpus
def test_convolution_normalisation_and_pooling_map_to_onnx() -> None:
    g = load_corpus("lightnet_trt_test.json")
    conv = g.node("conv2d1")
    assert conv.op_type == "Conv"
    assert conv.attributes == {
        "group": 1,
        "kernel_shape": [3, 3],
        "strides": [1, 1],
        "pads": [1, 1, 1, 1],
        "dilations": [1, 1],
    }
    assert conv.metadata == {
        "op": "conv2d",
        "params": {
            "group": 1,
            "size": [3, 3],
            "stride": [1, 1],
            "padding": [1, 1, 1, 1],
            "dilation": [1, 1],
        },
        "arg_names": {"tensors_in": ["src", "weight", "bias"], "tensors_out": ["dst"]},
    }
    assert [g.tensors[t].id for t in conv.inputs] == ["img1", "weight1", "bias1"]
    weight = g.tensor("weight1")
    assert (weight.kind, weight.shape, weight.dtype) == ("weight", [1, 64, 3, 3, 3], "float32")
    assert weight.metadata["create"] == {
        "name": "create2",
        "params": {"dims": [1, 64, 3, 3, 3], "dtype": "TL_FLOAT", "data": [0]},
    }
    bn = g.node("batchnorm1")
    assert (bn.op_type, bn.attributes) == ("BatchNormalization", {"epsilon": 1e-5})
    assert [g.tensors[t].id for t in bn.inputs] == [
        "pool1_dst",
        "scale1",
        "offset1",
        "mean1",
        "var1",
    ]
    pool = g.node("maxpool2d1")
    assert pool.op_type == "MaxPool"
    assert pool.attributes == {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    assert g.node("softmax1").attributes == {"axis": 1}
    assert g.node("concat1").attributes == {"axis": 1}
    slice3 = g.node("slice3")
    assert (slice3.op_type, slice3.attributes) == (
        "Slice",
        {"axes": [1], "starts": [0], "ends": [5]},
    )
    assert slice3.metadata["params"] == {"axis": 1, "start": 0, "len": 5}
    printer = g.node("print1")
    assert (printer.op_type, printer.outputs, printer.attributes) == ("print", [], {})
    assert g.outputs == []  # everything ends in a print


@needs_corpus
def test_yolov3_elementwise_sums_upsampling_and_its_three_heads() -> None:
    g = load_corpus("lightnet_yolov3_ir.json")
    assert sum(n.op_type == "Add" for n in g.nodes) == 23
    assert all(n.metadata["params"] == {"elew_op": "TL_SUM"} for n in g.nodes if n.op_type == "Add")
    up = g.node("upsample0")
    assert (up.op_type, up.attributes) == ("Upsample", {"mode": "nearest", "scales": [1, 1, 2, 2]})
    assert all(type(s) is float for s in up.attributes["scales"])
    assert g.inputs == []
    # The three detection heads: conv (255 channels) -> batchnorm -> relu, used by no op.
    assert [g.tensors[t].id for t in g.outputs] == ["conv13", "conv21", "conv29"]
    for head in g.outputs:
        chain, t = [], head
        for _ in range(3):
            node = g.nodes[int(g.index.producer[t])]
            chain.append(node.op_type)
            t = node.inputs[0]
        assert chain == ["Relu", "BatchNormalization", "Conv"]
        assert g.tensors[node.inputs[1]].shape[1] == 255
    image = g.tensor("input")  # made by create like the weights: LightNet has no graph inputs
    assert (image.kind, image.shape, image.has_data) == ("weight", [1, 3, 416, 416], True)


@needs_corpus
def test_created_values_are_kept_zero_filled_or_absent() -> None:
    ops = load_corpus("lightnet_test_ops.json")
    values = ops.tensor("create1").data
    assert values is not None and values.dtype == np.float32
    assert values.tolist() == [[1, 2, 3, 4], [5, 6, 7, 8]]
    yolo = load_corpus("lightnet_yolov3_ir.json").tensor("conv1_conv_wts")
    zeros = yolo.data
    assert zeros is not None and zeros.shape == (1, 32, 3, 3, 3) and not zeros.any()
    nulls = load_corpus("lightnet_trt_test_null_values.json")
    weight = nulls.tensor("weight1")
    assert (weight.kind, weight.has_data) == ("weight", False)
    assert weight.metadata["create"]["params"]["data"] is None


@needs_corpus
def test_multi_output_ops_and_typed_zeros() -> None:
    g = load_corpus("lightnet_test_ln_parse.json")
    maxreduce = g.node("maxreduce1")
    assert maxreduce.op_type == "maxreduce"  # two outputs: no ONNX op gives both
    assert [g.tensors[t].id for t in maxreduce.outputs] == ["maxreduce1_dst", "maxreduce1_arg"]
    assert maxreduce.metadata["arg_names"]["tensors_out"] == ["dst", "arg"]
    elew = g.node("elew1")
    assert elew.op_type == "Mul" and elew.inputs == maxreduce.outputs
    assert (g.node("reshape1").op_type, g.node("reshape1").attributes) == (
        "Reshape",
        {"shape": [3, 2]},
    )
    assert g.node("transpose1").attributes == {"perm": [1, 0]}
    zeros = g.tensor("zeros1")
    assert (zeros.kind, zeros.shape, zeros.dtype, zeros.metadata) == (
        "output",
        [2, 4],
        "float32",
        {},
    )
    other = g.tensor("slice1")
    assert (other.shape, other.dtype, other.metadata) == ([], "undefined", {"rank_unknown": True})
    assert [g.tensors[t].id for t in g.outputs] == ["transpose1", "zeros1"]
    cuda = load_corpus("lightnet_cuda_test.json")
    assert cuda.node("maxreduce_arg1").op_type == "maxreduce_arg"
    assert len(cuda.node("maxreduce_arg1").outputs) == 2


@needs_corpus
def test_tensors_never_defined_are_warned_about_and_shown_as_inputs() -> None:
    g, found = lightnet.read_findings(Source(CORPUS / "lightnet_op_all_optypes.json"))
    assert [g.tensors[t].id for t in g.inputs] == ["transpose1", "weight1", "bias1"]
    for k, name in enumerate(["transpose1", "weight1", "bias1"]):
        t = g.tensor(name)
        assert t.kind == "input"
        assert t.metadata == {
            "undefined": "used by op 'conv2d1' but never defined",
            "rank_unknown": True,
        }
        assert (
            Finding(
                "warning",
                f"ops[6].tensors_in[{k}]",
                f"tensor '{name}' is used by op 'conv2d1' but never defined; "
                "shown as a graph input",
            )
            in found
        )
    assert all(f.severity == "warning" for f in found)
    # concat1, batchnorm1 and upsample1 name no tensors at all ("").
    unconnected = [f for f in found if "names no tensor" in f.message]
    assert len(unconnected) == 11
    assert str(unconnected[0]) == (
        "ops[10].tensors_in[0]: warning: op 'concat1' names no tensor for input 'src1'; "
        "left unconnected"
    )
    bn = g.node("batchnorm1")
    assert (bn.inputs, bn.outputs) == ([], [])
    assert bn.metadata["omitted_inputs"] == [0, 1, 2, 3, 4]
    assert bn.metadata["omitted_outputs"] == [0]
    assert g.node("upsample1").attributes == {"mode": "nearest"}
    assert [f.place for f in found] == sorted(
        (f.place for f in found), key=lambda p: int(re.findall(r"\d+", p)[0])
    )


@needs_corpus
def test_the_null_valued_file_loads_and_reads_clean() -> None:
    g, found = lightnet.read_findings(Source(CORPUS / "lightnet_trt_test_null_values.json"))
    assert found == []
    up = g.node("upsample1")  # scales as an input tensor (Upsample-9), dims only in metadata
    assert (up.op_type, up.attributes) == ("Upsample", {"mode": "nearest"})
    assert [g.tensors[t].id for t in up.inputs] == ["softmax1_dst", "scales1"]
    assert up.metadata["params"] == {"mode": "TL_NEAREST", "dims": [1, 2, 3, 4]}


# -- small documents ----------------------------------------------------------------------------


def test_a_small_graph(tmp_path: Path) -> None:
    g, found = findings(tmp_path, {**small(), "version": "0.1"})
    assert found == []
    assert (g.id, g.name, g.metadata) == ("net", "net", {"version": "0.1"})
    assert [(t.id, t.kind, t.shape, t.dtype) for t in g.tensors] == [
        ("img", "weight", [1, 3, 8, 8], "float32"),
        ("w", "weight", [4, 3, 3, 3], "float32"),
        ("c", "activation", [], "undefined"),
        ("r", "activation", [], "undefined"),
    ]
    assert [n.id for n in g.nodes] == ["conv1", "relu1", "print1"]
    assert (g.inputs, g.outputs) == ([], [])
    assert g.tensor("img").has_data is False and g.tensor("w").has_data is True
    assert validate(g) == []


def test_unknown_optypes_and_params_stay_in_metadata(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][2]["params"].append({"arg_name": "autopad", "value": "BOGUS"})
    doc["ops"][2]["params"].append({"arg_name": "workspace", "value": 1024})
    doc["ops"][3] = op("act1", "swish", [("src", "c")], [("dst", "r")], beta=1.5)
    doc["ops"][4]["author"] = "me"
    g = lightnet.load(Source(write(tmp_path, doc)))
    conv = g.node("conv1")
    assert "auto_pad" not in conv.attributes and "workspace" not in conv.attributes
    assert conv.metadata["params"]["autopad"] == "BOGUS"
    act = g.node("act1")
    assert (act.op_type, act.attributes, act.metadata["params"]) == ("swish", {}, {"beta": 1.5})
    assert g.node("print1").metadata["fields"] == {"author": "me"}


@pytest.mark.parametrize(
    ("code", "onnx_op"),
    [("TL_SUM", "Add"), ("TL_SUB", "Sub"), ("TL_MUL", "Mul"), ("TL_DIV", "Div"), ("TL_POW", "Pow")],
)
def test_elew_maps_by_its_operation(tmp_path: Path, code: str, onnx_op: str) -> None:
    doc = {"ops": [op("e", "elew", ["a", "b"], ["c"], elew_op=code)]}
    assert lightnet.load(Source(write(tmp_path, doc))).node("e").op_type == onnx_op
    doc["ops"][0]["params"][0]["value"] = "TL_NOPE"
    assert lightnet.load(Source(write(tmp_path, doc))).node("e").op_type == "elew"


def test_dotted_param_names_round_trip_through_xoc_json(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][3]["params"].append({"arg_name": "trt.precision", "value": "fp16"})
    g = lightnet.load(Source(write(tmp_path, doc)))
    assert g.node("relu1").metadata["params"] == {"trt": {"precision": "fp16"}}
    xoc.save(g, tmp_path / "x.json")
    assert xoc.load(Source(tmp_path / "x.json")) == g


def test_repeated_op_names_get_suffixes_and_a_warning(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][3]["name"] = "conv1"
    g, found = findings(tmp_path, doc)
    assert [n.id for n in g.nodes] == ["conv1", "conv1_2", "print1"]
    assert g.nodes[1].metadata["name"] == "conv1" and "name" not in g.nodes[0].metadata
    assert [str(f) for f in found] == [
        "ops[3].name: warning: duplicate op name 'conv1' (first at ops[2]); "
        "its node id is 'conv1_2'"
    ]


def test_a_tensor_used_before_its_definition_is_a_warning(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][3], doc["ops"][2] = doc["ops"][2], doc["ops"][3]
    g, found = findings(tmp_path, doc)
    assert [str(f) for f in found] == [
        "ops[2].tensors_in[0]: warning: tensor 'c' is used by op 'relu1' before op 'conv1' "
        "(ops[3].tensors_out[0]) defines it; LightNet needs each tensor defined first"
    ]
    assert g.tensor("c").kind == "activation" and g.inputs == []


def test_a_tensor_used_by_several_ops_but_never_defined(tmp_path: Path) -> None:
    doc = {"ops": [op("a", "relu", ["x"], ["y"]), op("b", "add", ["x", "y"], ["z"])]}
    g, found = findings(tmp_path, doc)
    assert g.tensor("x").metadata["undefined"] == "used by ops 'a', 'b' but never defined"
    assert [f.place for f in found] == ["ops[0].tensors_in[0]"]
    assert (g.inputs, g.outputs) == ([0], [2])


def test_unknown_dtypes_and_mismatched_data_are_warnings(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][0]["params"][0]["value"] = "TL_FLOAT16"
    doc["ops"][1]["params"][2]["value"] = [1, 2, 3]
    g, found = findings(tmp_path, doc)
    assert g.tensor("img").dtype == "undefined"
    assert g.tensor("w").has_data is False
    assert [str(f) for f in found] == [
        "ops[0].params[0].value: warning: unknown LightNet dtype 'TL_FLOAT16' (known: TL_FLOAT, "
        "TL_DOUBLE, TL_INT32, TL_INT16, TL_INT8, TL_UINT32, TL_UINT16, TL_UINT8, TL_BOOL); "
        "the tensor's dtype is shown as undefined",
        "ops[1].params[2].value: warning: data is [1, 2, 3], not 108 numbers; "
        "its values are not loaded",
    ]


def test_values_follow_the_declared_dtype(tmp_path: Path) -> None:
    doc = {"ops": [op("c", "create", (), ["t"], dtype="TL_UINT8", dims=[3], data=[1, 2.0, 300])]}
    t = lightnet.load(Source(write(tmp_path, doc))).tensor("t")
    assert t.dtype == "uint8" and t.data is not None and t.data.dtype == np.uint8
    doc["ops"][0]["params"].append({"arg_name": "from_file", "value": True})
    assert lightnet.load(Source(write(tmp_path, doc))).tensor("t").has_data is False


# -- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("keep", [0.02, 0.5, 0.98])
def test_truncated_files_fail_with_line_and_column(tmp_path: Path, keep: float) -> None:
    text = json.dumps(small(), indent=2)
    message = fault(tmp_path, text[: int(len(text) * keep)])
    assert re.search(r"net\.json: line \d+ column \d+: invalid JSON: ", message), message


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ([], "root: is an array; expected a JSON object with an 'ops' array"),
        ({}, "ops: missing; expected an array of op objects"),
        ({"ops": {}}, "ops: is an object; expected an array of op objects"),
        ({"ops": []}, "ops: the graph is empty (no ops); expected at least one op"),
    ],
)
def test_root_faults(tmp_path: Path, doc: Any, expected: str) -> None:
    assert fault(tmp_path, doc).endswith(f"net.json: {expected}")


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set (or, for ``...``, delete) the value at a JSON path such as ``ops[2].params[0].value``."""
    keys: list[Any] = [int(k) if k.isdigit() else k for k in re.findall(r"\w+", path)]
    target: Any = doc
    for k in keys[:-1]:
        target = target[k]
    if value is ...:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value


WRONG = [
    ("ops[2]", "conv", "ops[2]: is a string; expected an op object with 'name' and 'optype'"),
    ("ops[2].name", ..., "ops[2].name: missing; expected a non-empty op name"),
    ("ops[2].name", 7, "ops[2].name: is a number; expected a non-empty op name"),
    ("ops[2].name", "", "ops[2].name: is empty; expected a non-empty op name"),
    ("ops[2].optype", None, "ops[2].optype: is null; expected an operator type such as 'conv2d'"),
    ("ops[2].tensors_in", ..., "ops[2].tensors_in: missing; expected an array"),
    ("ops[2].tensors_in", "img", "ops[2].tensors_in: is a string; expected an array"),
    ("ops[2].tensors_out", {}, "ops[2].tensors_out: is an object; expected an array"),
    ("ops[2].params", None, "ops[2].params: is null; expected an array"),
    (
        "ops[2].tensors_in[1]",
        "w",
        "ops[2].tensors_in[1]: is a string; expected an object with 'arg_name' and 'name'",
    ),
    (
        "ops[2].tensors_in[1].arg_name",
        ...,
        "ops[2].tensors_in[1].arg_name: missing; expected an argument name (a non-empty string)",
    ),
    (
        "ops[2].tensors_out[0].arg_name",
        ["dst"],
        "ops[2].tensors_out[0].arg_name: is an array; expected an argument name "
        "(a non-empty string)",
    ),
    (
        "ops[2].tensors_in[1].name",
        None,
        "ops[2].tensors_in[1].name: is null; expected a tensor name (a string)",
    ),
    (
        "ops[2].tensors_out[0].name",
        ...,
        "ops[2].tensors_out[0].name: missing; expected a tensor name (a string)",
    ),
    (
        "ops[2].params[1]",
        [3, 3],
        "ops[2].params[1]: is an array; expected an object with 'arg_name' and 'value'",
    ),
    (
        "ops[2].params[1].arg_name",
        3,
        "ops[2].params[1].arg_name: is a number; expected an argument name (a non-empty string)",
    ),
    ("ops[2].params[1].value", ..., "ops[2].params[1].value: missing; expected a string, number"),
    ("ops[2].params[1].value", {"h": 3}, "ops[2].params[1].value: is an object; expected a str"),
    ("ops[2].params[1].value", [[3], [3]], "ops[2].params[1].value: is an array; expected a str"),
    (
        "ops[0].params[1].value",
        "2x2",
        'ops[0].params[1].value: is "2x2"; expected an array of positive integers',
    ),
    (
        "ops[1].params[1].value",
        [4, 0, 3, 3],
        "ops[1].params[1].value: is [4, 0, 3, 3]; expected an array of positive integers",
    ),
    (
        "ops[1].params[0].value",
        1,
        "ops[1].params[0].value: is 1; expected a LightNet dtype name such as 'TL_FLOAT'",
    ),
    (
        "ops[1].params[1]",
        ...,
        "ops[1].params: no 'dims' in this create op; expected an array of positive integers",
    ),
]


@pytest.mark.parametrize(("path", "value", "expected"), WRONG)
def test_a_wrong_type_in_every_required_field(
    tmp_path: Path, path: str, value: Any, expected: str
) -> None:
    doc = small()
    _set(doc, path, value)
    assert f"net.json: {expected}" in fault(tmp_path, doc)


def test_a_tensor_defined_twice_is_an_error(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][3]["tensors_out"][0]["name"] = "c"
    assert fault(tmp_path, doc).endswith(
        "net.json: ops[3].tensors_out[0]: tensor 'c' is already defined by op 'conv1' "
        "(ops[2].tensors_out[0]); expected a new tensor name (each tensor is defined by one "
        "op's tensors_out)"
    )
    doc = small()
    doc["ops"][1]["tensors_out"][0]["name"] = "img"
    assert "ops[1].tensors_out[0]: tensor 'img' is already defined by op 'create1'" in fault(
        tmp_path, doc
    )


def test_a_repeated_arg_name_is_an_error(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][2]["params"][0]["arg_name"] = "src"
    assert fault(tmp_path, doc).endswith(
        "ops[2].params[0].arg_name: arg_name 'src' is already used at ops[2].tensors_in[0]; "
        "expected each arg_name once per op"
    )


def test_a_create_op_must_make_one_named_tensor_from_nothing(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][1]["tensors_in"] = [{"arg_name": "src", "name": "img"}]
    assert fault(tmp_path, doc).endswith(
        "ops[1]: create op 'create2' has 1 tensors_in and 1 named tensors_out; "
        "expected 0 and 1: create makes one tensor from its params"
    )
    doc = small()
    doc["ops"][0]["tensors_out"][0]["name"] = ""
    assert "ops[0]: create op 'create1' has 0 tensors_in and 0 named tensors_out" in fault(
        tmp_path, doc
    )


# -- sniffing and the op table ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ({"tensors": [], "nodes": []}, "has a 'tensors' list (XOC or NNVM JSON)"),
        ({"nodes": [], "heads": [], "arg_nodes": []}, "has a 'nodes' list (XOC or NNVM JSON)"),
        ({"graph": {"tensors": []}}, "no 'ops' list at the root"),
        ([{"ops": []}], "the JSON root is not an object"),
        ("ops: []", "not a JSON object"),
    ],
)
def test_sniff_refuses_other_documents(tmp_path: Path, doc: Any, why: str) -> None:
    assert (lightnet.sniff(Source(write(tmp_path, doc))) or "").startswith(why)


def test_sniff_accepts_lightnet_and_xoc_refuses_it(tmp_path: Path) -> None:
    source = Source(write(tmp_path, small()))
    assert lightnet.sniff(source) is None
    assert xoc.sniff(source) is not None
    assert lightnet.NAME == "LightNet JSON IR" and lightnet.EXTENSIONS == (".json",)


def test_the_table_names_onnx_ops_and_schema_attributes() -> None:
    for optype, rules in LIGHTNET_OPS.items():
        for rule in rules:
            assert is_known_op(rule.onnx_op), optype
            allowed = schema_attributes(rule.onnx_op) or frozenset()
            targets = {t if isinstance(t, str) else t[0] for t in rule.attrs.values()}
            assert targets | set(rule.fixed) <= allowed, optype


@needs_corpus
def test_registered_it_is_detected_by_content_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the registry does once the lead adds this module to FORMATS."""
    monkeypatch.setattr(registry, "FORMATS", (*registry.FORMATS, lightnet))
    path = CORPUS / "lightnet_op_all_optypes.json"
    assert registry.detect(Source(path)) is lightnet
    g, found = registry.check(path)
    assert g == registry.load(path)
    assert sum("never defined" in f.message for f in found) == 3
    assert not [f for f in found if f.severity == "error"]
    for other in sorted((SHARED / "corpus" / "xoc").glob("*.json")):
        assert registry.detect(Source(other)) is xoc
    with pytest.raises(FormatError, match="line 199 column 5"):
        registry.load(CORPUS / INVALID)


def test_loading_does_not_change_the_document(tmp_path: Path) -> None:
    doc = small()
    before = copy.deepcopy(doc)
    source = Source(write(tmp_path, doc))
    lightnet.load(source)
    assert source.json == before


def test_a_weight_of_more_dims_than_an_array_holds_keeps_no_values(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][1] = op("create2", "create", (), ["w"], dtype="TL_FLOAT", dims=[1] * 100, data=[0])
    g, found = findings(tmp_path, doc)
    assert g.tensor("w").data is None and g.tensor("w").shape == [1] * 100
    assert any("100 dimensions, more than an array holds" in f.message for f in found)
