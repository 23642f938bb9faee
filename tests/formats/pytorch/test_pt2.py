"""torch.export archives (.pt2) read without torch: every test archive loads and runs on the
executor to torch's own outputs, the module tree is each node's nn_module_stack, an ATen op
without a mapping is refused by name, damaged archives are refused at their place, and Save
As ONNX writes a model onnxruntime runs to the same outputs.

The archives and torch's outputs come from tests/data/pytorch/make_pt2.py.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xocview.errors import FormatError, RunError
from xocview.executor import run
from xocview.formats import onnx as onnx_format
from xocview.formats.pytorch import pt2
from xocview.formats.source import Source
from xocview.model import Graph, validate

DATA = Path(__file__).parents[2] / "data" / "pytorch"
NAMES = [
    "cnn",
    "cnn_core",
    "bert",
    "gpt2",
    "gpt2_core",
    "dynamic",
    "ops",
    "ops_core",
    "decoder",
    "decoder_core",
    "rnn",
]
_PY_NAMES = re.compile(r"\b\w+(Error|Exception)\b|Traceback")


def _load(path: Path) -> Graph:
    return pt2.load(Source(path))


def _case(name: str) -> tuple[Graph, dict[str, np.ndarray], list[np.ndarray]]:
    graph = _load(DATA / f"pt2_{name}.pt2")
    z = np.load(DATA / f"pt2_{name}.npz")
    feeds = {k[3:]: z[k] for k in z.files if k.startswith("in.")}
    want = [z[f"out.{k}"] for k in range(sum(k.startswith("out.") for k in z.files))]
    return graph, feeds, want


def _model_json(path: Path) -> dict[str, Any]:
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("models/model.json"))
        return json.loads(z.read(name))


def _rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """A copy of archive ``src`` with each member passed through ``change`` (None drops it)."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            data = change(info.filename, z.read(info))
            if data is not None:
                out.writestr(info, data)
    return dst


def _edit_model(src: Path, dst: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    def change(name: str, data: bytes) -> bytes:
        if not name.endswith("models/model.json"):
            return data
        doc = json.loads(data)
        edit(doc)
        return json.dumps(doc).encode()

    return _rewrite(src, dst, change)


@pytest.mark.parametrize("name", NAMES)
def test_every_archive_loads_valid_and_fully_mapped(name: str) -> None:
    path = DATA / f"pt2_{name}.pt2"
    assert pt2.sniff(Source(path)) is None
    graph = _load(path)
    assert validate(graph) == []
    assert not [n.id for n in graph.nodes if n.metadata.get("domain") == "aten"]
    assert graph.metadata["opset_import"] == [{"domain": "", "version": 20}]
    assert graph.metadata["torch_export"]["schema_version"].startswith("8.")
    fx = {n["name"] for n in _model_json(path)["graph_module"]["graph"]["nodes"]}
    ids = {n.id for n in graph.nodes}
    kept = {f for f in fx if not f.startswith("_assert")}
    assert kept <= ids  # every ATen node is there under its FX name


@pytest.mark.parametrize("name", NAMES)
def test_executor_outputs_equal_torch(name: str) -> None:
    graph, feeds, want = _case(name)
    got = run(graph, feeds).outputs
    assert len(graph.outputs) == len(want)
    for k, t in enumerate(graph.outputs):
        value = got[graph.tensors[t].id]
        assert value.shape == want[k].shape, (name, k)
        np.testing.assert_allclose(value, want[k], rtol=1e-3, atol=1e-4, err_msg=f"{name} {k}")


@pytest.mark.parametrize("name", ["cnn", "bert", "gpt2_core", "ops"])
def test_module_tree_equals_nn_module_stack(name: str) -> None:
    path = DATA / f"pt2_{name}.pt2"
    graph = _load(path)
    by_id = {n.id: n for n in graph.nodes}
    checked = 0
    for raw in _model_json(path)["graph_module"]["graph"]["nodes"]:
        if raw["name"] not in by_id:
            continue
        stack = raw["metadata"].get("nn_module_stack", "")
        entries = [item.split(",") for item in stack.split(";") if item]
        want = [(p, c) for _, p, c in entries if p]  # the root module is the graph itself
        chain = []
        parent = by_id[raw["name"]].metadata.get("parent_id")
        while parent is not None:
            group = by_id[parent]
            chain.append((group.metadata["module"], group.metadata["class"]))
            assert group.op_type == group.metadata["class"].rpartition(".")[2]
            parent = group.metadata.get("parent_id")
        assert chain[::-1] == want, raw["name"]
        checked += 1
    assert checked >= 10
    for node in graph.nodes:  # children and parents agree both ways
        for child in node.metadata.get("children_ids", []):
            assert by_id[child].metadata["parent_id"] == node.id


def test_aten_nodes_read_as_aten_and_run_as_onnx() -> None:
    graph = _load(DATA / "pt2_bert.pt2")
    by_id = {n.id: n for n in graph.nodes}
    linear = by_id["linear"]  # three ONNX ops under the ATen op's name
    assert linear.op_type == "linear"
    assert linear.metadata["target"] == "torch.ops.aten.linear.default"
    assert [by_id[c].op_type for c in linear.metadata["children_ids"]] == [
        "Transpose",
        "MatMul",
        "Add",
    ]
    assert "stack_trace" in linear.metadata
    between = {t.id: t for t in graph.tensors}["linear/matmul"]  # typed by ONNX inference
    assert (between.shape, between.dtype) == ([2, 8, 32], "float32")
    embedding = by_id["embedding"]  # one ONNX op: a leaf of that op
    assert embedding.op_type == "Gather"
    assert embedding.metadata["target"] == "torch.ops.aten.embedding.default"
    assert embedding.metadata["arguments"] == {"padding_idx": 0}
    sdpa = by_id["scaled_dot_product_attention"]
    assert sdpa.op_type == "scaled_dot_product_attention"
    core = {n.id: n for n in _load(DATA / "pt2_cnn_core.pt2").nodes}
    assert core["convolution"].op_type == "Conv"
    assert core["_native_batch_norm_legit_no_training"].op_type == "BatchNormalization"
    assert core["addmm"].op_type == "Gemm"


def test_weights_are_lazy_memory_mapped_views_with_their_fqn() -> None:
    graph = _load(DATA / "pt2_cnn.pt2")
    weights = {t.metadata["fqn"]: t for t in graph.tensors if "fqn" in t.metadata}
    conv = weights["features.0.weight"]
    assert conv.id == "p_features_0_weight"
    assert conv.metadata["torch_kind"] == "parameter"
    assert weights["features.1.running_var"].metadata["torch_kind"] == "buffer"
    assert not isinstance(conv._data, np.ndarray)  # a reader, not yet called
    values = conv.data
    assert values is not None and values.shape == (8, 3, 3, 3) and values.dtype == np.float32
    assert not values.flags.owndata and not values.flags.writeable  # a view of the map
    assert "features.1.num_batches_tracked" not in weights  # read by no node


def test_dynamic_batch_keeps_its_symbol_and_runs_at_other_sizes() -> None:
    graph, feeds, want = _case("dynamic")
    ids = graph.tensors[graph.inputs[0]]
    assert ids.shape == [-1, 5]
    symbol = ids.metadata["shape_symbols"][0]
    assert symbol and ids.metadata["shape_symbols"][1] is None
    assert graph.metadata["torch_export"]["range_constraints"][symbol]["max_val"] == 64
    assert any(n.op_type == "Shape" for n in graph.nodes)  # sym_size read at run time
    one = run(graph, {"ids": feeds["ids"][1:2]}).outputs
    (out,) = (one[graph.tensors[t].id] for t in graph.outputs)
    np.testing.assert_allclose(out, want[0][1:2], rtol=1e-3, atol=1e-4)


def test_unmapped_op_is_refused_by_name(tmp_path: Path) -> None:
    def rename(doc: dict[str, Any]) -> None:
        for node in doc["graph_module"]["graph"]["nodes"]:
            if node["name"] == "relu":
                node["target"] = "torch.ops.aten.frobnicate.default"

    path = _edit_model(DATA / "pt2_cnn.pt2", tmp_path / "odd.pt2", rename)
    graph = _load(path)
    node = next(n for n in graph.nodes if n.id == "relu")
    assert (node.op_type, node.metadata["domain"]) == ("frobnicate", "aten")
    assert graph.metadata["torch_export"]["not_mapped"] == ["frobnicate"]
    with pytest.raises(RunError) as err:
        run(graph)
    message = str(err.value)
    assert "'relu'" in message and "no kernel for op 'frobnicate' of domain 'aten'" in message
    assert not _PY_NAMES.search(message)


def test_arguments_a_mapping_cannot_take_leave_an_aten_node(tmp_path: Path) -> None:
    def train(doc: dict[str, Any]) -> None:
        for node in doc["graph_module"]["graph"]["nodes"]:
            if node["target"] == "torch.ops.aten.batch_norm.default":
                for arg in node["inputs"]:
                    if arg["name"] == "training":
                        arg["arg"] = {"as_bool": True}

    graph = _load(_edit_model(DATA / "pt2_cnn.pt2", tmp_path / "train.pt2", train))
    norms = [n for n in graph.nodes if n.metadata.get("target", "").endswith("batch_norm.default")]
    assert norms and all(n.op_type == "batch_norm" for n in norms)
    assert norms[0].metadata["not_mapped"] == "batch norm in training mode"
    assert [f for f in validate(graph) if f.severity == "error"] == []


def _refused(path: Path) -> str:
    with pytest.raises(FormatError) as err:
        graph = _load(path)
        for t in graph.tensors:  # values are read on first use
            _ = t.data
    message = str(err.value)
    assert message.startswith(str(path)) and not _PY_NAMES.search(message)
    return message


def test_truncated_archive_is_refused(tmp_path: Path) -> None:
    data = (DATA / "pt2_cnn.pt2").read_bytes()
    path = tmp_path / "cut.pt2"
    path.write_bytes(data[: len(data) // 2])
    assert pt2.sniff(Source(path)) is None  # taken by its name, so that load says why
    assert "zip" in _refused(path)


def test_missing_model_json_is_refused(tmp_path: Path) -> None:
    path = _rewrite(
        DATA / "pt2_cnn.pt2",
        tmp_path / "empty.pt2",
        lambda n, d: None if n.endswith(".json") else d,
    )
    assert "models/: no model JSON in the archive" in _refused(path)


def test_bad_json_is_refused_at_its_line(tmp_path: Path) -> None:
    path = _rewrite(
        DATA / "pt2_cnn.pt2",
        tmp_path / "bad.pt2",
        lambda n, d: b'{"graph_module": {"graph": [1, 2' if n.endswith("models/model.json") else d,
    )
    assert re.search(r"models/model\.json line 1 column \d+: invalid JSON", _refused(path))


def test_wrong_dtype_code_is_refused_at_its_place(tmp_path: Path) -> None:
    def bad(doc: dict[str, Any]) -> None:
        doc["graph_module"]["graph"]["tensor_values"]["relu"]["dtype"] = 99

    path = _edit_model(DATA / "pt2_cnn.pt2", tmp_path / "dtype.pt2", bad)
    message = _refused(path)
    assert "models/model.json graph_module.graph.tensor_values.relu.dtype" in message
    assert "dtype code 99 is unknown" in message


def test_missing_field_and_unknown_value_are_refused(tmp_path: Path) -> None:
    def no_target(doc: dict[str, Any]) -> None:
        del doc["graph_module"]["graph"]["nodes"][2]["target"]

    message = _refused(_edit_model(DATA / "pt2_cnn.pt2", tmp_path / "a.pt2", no_target))
    assert "graph_module.graph.nodes[2]: has no 'target'" in message

    def ghost(doc: dict[str, Any]) -> None:
        node = doc["graph_module"]["graph"]["nodes"][0]
        node["inputs"][0]["arg"] = {"as_tensor": {"name": "ghost"}}

    message = _refused(_edit_model(DATA / "pt2_cnn.pt2", tmp_path / "b.pt2", ghost))
    assert "value 'ghost' has no entry in tensor_values" in message


def test_short_weight_member_is_refused_when_read(tmp_path: Path) -> None:
    path = _rewrite(
        DATA / "pt2_cnn.pt2",
        tmp_path / "short.pt2",
        lambda n, d: d[:100] if n.endswith("data/weights/weight_0") else d,
    )
    assert "data/weights/weight_0" in _refused(path)


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    def newer(doc: dict[str, Any]) -> None:
        doc["schema_version"] = {"major": 99, "minor": 0}

    message = _refused(_edit_model(DATA / "pt2_cnn.pt2", tmp_path / "new.pt2", newer))
    assert "schema_version: export schema 99.0 is newer than this reader" in message


def test_pickled_payloads_are_refused_by_name(tmp_path: Path) -> None:
    def pickled(name: str, data: bytes) -> bytes:
        if not name.endswith("model_weights_config.json"):
            return data
        doc = json.loads(data)
        doc["config"]["features.0.weight"]["use_pickle"] = True
        return json.dumps(doc).encode()

    graph = _load(_rewrite(DATA / "pt2_cnn.pt2", tmp_path / "p.pt2", pickled))
    weight = next(t for t in graph.tensors if t.metadata.get("fqn") == "features.0.weight")
    with pytest.raises(FormatError, match=r"weight_0: the values are stored as a pickled tensor"):
        _ = weight.data


def _legacy_archive(tmp_path: Path, stored: bool) -> tuple[Path, dict[str, np.ndarray]]:
    """A torch 2.5-2.6 layout: the program JSON at the zip's top with a torch.save zip of
    the state dict (made without torch: the values are the current archive's)."""
    from tests.formats.pytorch.torch_pickles import T, state_pickle, write_zip

    current = _load(DATA / "pt2_cnn.pt2")
    values = {
        str(t.metadata["fqn"]): np.asarray(t.data, dtype=np.float32)
        for t in current.tensors
        if t.metadata.get("torch_kind") in ("parameter", "buffer") and t.dtype == "float32"
    }
    records = [
        T(fqn, "FloatStorage", str(k), v.size, 0, v.shape, tuple(s // 4 for s in v.strides))
        for k, (fqn, v) in enumerate(values.items())
    ]
    inner = write_zip(
        tmp_path / "state.pt",
        state_pickle(records),
        {str(k): v.tobytes() for k, v in enumerate(values.values())},
    )
    path = tmp_path / "old.pt2"
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", method) as z:
        z.writestr(
            "old/serialized_exported_program.json", json.dumps(_model_json(DATA / "pt2_cnn.pt2"))
        )
        z.write(inner, "old/serialized_state_dict.pt")
        z.writestr("old/version", "8.1")
    return path, values


@pytest.mark.parametrize("stored", [True, False])
def test_legacy_layout_reads_its_pickled_state_dict(tmp_path: Path, stored: bool) -> None:
    path, values = _legacy_archive(tmp_path, stored)
    assert pt2.sniff(Source(path)) is None
    graph = _load(path)
    assert [n.op_type for n in graph.nodes if n.id == "conv2d"] == ["Conv"]
    weights = {str(t.metadata.get("fqn")): t for t in graph.tensors if "fqn" in t.metadata}
    assert weights["head.weight"].shape == [10, 16]
    for fqn, expected in values.items():
        got = weights[fqn].data
        assert got is not None
        np.testing.assert_array_equal(got, expected, err_msg=fqn)
    if stored:  # a view of the archive's memory map, not a copy
        assert not weights["head.weight"].data.flags.owndata
    _, feeds, want = _case("cnn")  # and it runs to torch's outputs
    got = run(graph, feeds).outputs[graph.tensors[graph.outputs[0]].id]
    np.testing.assert_allclose(got, want[0], rtol=1e-3, atol=1e-4)


def test_legacy_layout_with_a_hostile_state_dict_reads_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = b"cos\nsystem\n(V touch " + str(marker).encode() + b"\ntR."
    path = tmp_path / "bad.pt2"
    inner = tmp_path / "state.pt"
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("archive/data.pkl", payload)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(
            "bad/serialized_exported_program.json", json.dumps(_model_json(DATA / "pt2_cnn.pt2"))
        )
        z.write(inner, "bad/serialized_state_dict.pt")
    graph = _load(path)
    weight = next(t for t in graph.tensors if t.metadata.get("fqn") == "head.weight")
    with pytest.raises(FormatError, match=r"os\.system"):
        _ = weight.data
    assert not marker.exists()


def test_sniff_refuses_other_files(tmp_path: Path) -> None:
    plain = tmp_path / "plain.zip"
    with zipfile.ZipFile(plain, "w") as z:
        z.writestr("archive/data.pkl", b"x")
    assert "not a torch.export archive" in str(pt2.sniff(Source(plain)))
    text = tmp_path / "model.pt2"
    text.write_text("not a zip")
    assert pt2.sniff(Source(text)) == "not a zip archive"


@pytest.mark.parametrize("name", ["cnn_core", "bert", "dynamic", "ops"])
def test_save_as_onnx_runs_in_onnxruntime_to_torch_outputs(name: str, tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    graph, feeds, want = _case(name)
    out = tmp_path / f"{name}.onnx"
    onnx_format.save(graph, out)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run(None, feeds)
    for k, value in enumerate(got):
        np.testing.assert_allclose(value, want[k], rtol=1e-3, atol=1e-4, err_msg=f"{name} {k}")


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            out += _paths(v, (*path, k))
    return out


@pytest.mark.parametrize("suffix", ["models/model.json", "model_weights_config.json"])
def test_damaged_values_anywhere_give_format_errors_only(suffix: str, tmp_path: Path) -> None:
    """Seeded damage to one JSON value at a time: the archive loads (and its weights read)
    or is refused with a FormatError; no other exception gets out."""
    src = DATA / "pt2_dynamic.pt2"
    with zipfile.ZipFile(src) as z:
        member = next(n for n in z.namelist() if n.endswith(suffix))
        base = json.loads(z.read(member))
    places = _paths(base)[1:]
    rng = np.random.default_rng(0)
    junk: list[Any] = [None, 99, -3, "x", [], {}, 1.5, True, [1, "a"], {"as_int": "q"}]
    refused = 0
    for trial in range(120):
        doc = json.loads(json.dumps(base))
        place = places[int(rng.integers(len(places)))]
        holder = doc
        for key in place[:-1]:
            holder = holder[key]
        holder[place[-1]] = junk[int(rng.integers(len(junk)))]
        data = json.dumps(doc).encode()
        path = _rewrite(
            src, tmp_path / f"f{trial}.pt2", lambda n, d, new=data: new if n == member else d
        )
        try:
            graph = _load(path)
            for t in graph.tensors:
                _ = t.data
        except FormatError as e:
            assert not _PY_NAMES.search(str(e))
            refused += 1
    assert refused > 10


def test_more_mapped_ops_match_torch_live(tmp_path: Path) -> None:
    """Ops of the table the committed archives do not use, exported and run live."""
    torch = pytest.importorskip("torch", reason="exports with torch (a bench extra)")
    from torch.nn import functional as F

    class More(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv1d(4, 6, 3, padding="same")

        def forward(self, x: Any, y: Any) -> tuple:
            a = self.conv(x)
            b = torch.baddbmm(a[:, :, :6], a[:, :, :6], a[:, :, 2:].mT * 0.1, alpha=0.5, beta=2)
            c = torch.einsum("bij,bjk->bik", b, b) * 0.01
            d = F.elu(c) + F.leaky_relu(c, 0.2) + F.hardswish(c) + F.hardsigmoid(c)
            u = (d + F.relu6(c) + F.softplus(c, beta=2)).repeat(1, 2, 1).unflatten(1, (3, 4))
            m = torch.maximum(u, u.mean()) + torch.remainder(u, 0.7) + torch.fmod(u, 0.7)
            z = torch.log_softmax(m, -1) + torch.sign(m) * torch.round(m) - torch.expm1(m)
            q = torch.argmin(z, 1).float() + z.min(dim=-1).values.sum() + z.amin((1, 2)).sum()
            w = torch.stack([y == 1, y != 2], 0).any(0).all()
            return z, q, w, F.avg_pool1d(a, 2), y // 3, torch.zeros_like(z).sum() + 1

    torch.manual_seed(0)
    model = More().eval()
    x, y = torch.randn(2, 4, 8), torch.tensor([1, 2, 3])
    with torch.no_grad():
        want = model(x, y)
    exported = torch.export.export(model, (x, y))
    for k, ep in enumerate((exported, exported.run_decompositions())):
        path = tmp_path / f"more{k}.pt2"
        torch.export.save(ep, path)
        graph = _load(path)
        assert not [n.id for n in graph.nodes if n.metadata.get("domain") == "aten"]
        got = run(graph, {"x": x.numpy(), "y": y.numpy()}).outputs
        for j, t in enumerate(graph.outputs):
            value, expected = got[graph.tensors[t].id], want[j].numpy()
            assert value.dtype == expected.dtype
            np.testing.assert_allclose(value, expected, rtol=1e-3, atol=1e-4)
