"""TorchScript archives read without torch and without running their code: every test
archive loads, its module tree is the modules a forward call runs, its weights are torch's
state dict values, it runs on the executor to torch's own outputs, and hostile archives
(code that would import os or exec, recursion, deep nesting, missing or poisoned pickles,
endless loops) are refused at their file and line with nothing executed.

The archives and torch's outputs come from tests/data/pytorch/make_torchscript.py.
"""

from __future__ import annotations

import json
import pickle
import re
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from xocview.errors import FormatError
from xocview.executor import run
from xocview.formats.pytorch import torchscript
from xocview.formats.source import Source
from xocview.model import Graph, validate

DATA = Path(__file__).parents[2] / "data" / "pytorch"
NAMES = ["cnn_trace", "cnn_script", "bert_trace", "gpt2_trace"]
TREES = json.loads((DATA / "ts_modules.json").read_text())
_PY_NAMES = re.compile(r"\b\w+(Error|Exception)\b|Traceback")


def _load(path: Path) -> Graph:
    return torchscript.load(Source(path))


def _rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None]) -> Path:
    """A copy of archive ``src`` with each member passed through ``change`` (None drops it)."""
    with zipfile.ZipFile(src) as z, zipfile.ZipFile(dst, "w") as out:
        for info in z.infolist():
            data = change(info.filename, z.read(info))
            if data is not None:
                out.writestr(info, data)
    return dst


def _with_forward(tmp_path: Path, body: str, extra: str = "") -> Path:
    """ts_cnn_trace.pt with its top module's forward replaced by ``body`` (one statement a
    line, indented by the caller's choice) and ``extra`` methods appended to the class."""

    def change(name: str, data: bytes) -> bytes:
        if not name.endswith("/code/__torch__.py"):
            return data
        text = data.decode()
        head = text[: text.index("  def forward(")]
        forward = "  def forward(self: __torch__.Cnn,\n    x: Tensor) -> Tensor:\n"
        return (head + forward + body + extra).encode()

    return _rewrite(DATA / "ts_cnn_trace.pt", tmp_path / "edited.pt", change)


def _refused(path: Path) -> FormatError:
    with pytest.raises(FormatError) as info:
        _load(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert not _PY_NAMES.search(message), message
    return info.value


@pytest.mark.parametrize("name", NAMES)
def test_every_archive_loads_valid_and_fully_mapped(name: str) -> None:
    path = DATA / f"ts_{name}.pt"
    assert torchscript.sniff(Source(path)) is None
    graph = _load(path)
    assert validate(graph) == []
    assert not [n.id for n in graph.nodes if n.metadata.get("domain") in ("aten", "prim")]
    assert graph.metadata["opset_import"] == [{"domain": "", "version": 20}]
    assert "undecided" not in graph.metadata["torchscript"]


@pytest.mark.parametrize("name", NAMES)
def test_runs_to_torch_outputs(name: str) -> None:
    graph = _load(DATA / f"ts_{name}.pt")
    z = np.load(DATA / f"ts_{name}.npz")
    feeds = {k[3:]: z[k] for k in z.files if k.startswith("in.")}
    want = [z[f"out.{k}"] for k in range(sum(k.startswith("out.") for k in z.files))]
    got = list(run(graph, feeds).outputs.values())
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_module_tree_is_the_modules_a_forward_runs(name: str) -> None:
    graph = _load(DATA / f"ts_{name}.pt")
    tree = TREES[name]
    groups = {n.id: n for n in graph.nodes if "module" in n.metadata}
    by_module = {n.metadata["module"]: n for n in groups.values()}
    assert sorted(by_module) == tree["called"]
    for path, node in by_module.items():
        assert node.metadata["class"].rpartition(".")[2] == tree["modules"][path]
        # the parent group is the nearest enclosing module the forward ran
        enclosing = [p for p in by_module if path.startswith(p + ".")]
        parent = node.metadata.get("parent_id")
        want = by_module[max(enclosing, key=len)].id if enclosing else None
        assert parent == want, path
    for n in graph.nodes:  # every leaf sits in a group or at the top; groups name children
        for child in n.metadata.get("children_ids", []):
            assert graph.node(child).metadata["parent_id"] == n.id


@pytest.mark.parametrize("name", NAMES)
def test_weights_are_the_state_dict(name: str) -> None:
    graph = _load(DATA / f"ts_{name}.pt")
    state = TREES[name]["state_dict"]
    z = np.load(DATA / f"ts_{name}.npz")
    weights = {t.metadata["fqn"]: t for t in graph.tensors if t.metadata.get("torch_kind")}
    read = {k for k in weights if not k.startswith("CONSTANTS.")}
    assert read <= set(state)
    assert {k for k in state if k not in read} <= {k for k in state if "num_batches" in k}
    for key in read:
        t, want = weights[key], state[key]
        values = np.asarray(t.data, dtype=np.float64)
        assert list(t.shape) == want["shape"] and list(values.shape) == want["shape"]
        assert t.dtype == {"float32": "float32", "int64": "int64"}[want["dtype"]]
        np.testing.assert_allclose(values.reshape(-1)[:8], want["head"], rtol=1e-6)
        np.testing.assert_allclose(values.sum(), want["sum"], rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(np.abs(values).sum(), want["abs"], rtol=1e-5)
        if f"sd.{key}" in z.files:
            np.testing.assert_array_equal(t.data, z[f"sd.{key}"])


def test_scripted_checks_are_folded_and_assumptions_said() -> None:
    graph = _load(DATA / "ts_cnn_script.pt")
    ts = graph.metadata["torchscript"]
    assert ts["shapes"] == "not recorded"
    # BatchNorm2d._check_input_dim raises unless the input is 4-d: taken as 4-d, and said so
    assert ts["assumed"] and all("ne 4 taken as False" in a for a in ts["assumed"])
    assert all(re.search(r"code/__torch__/\S+\.py line \d+", a) for a in ts["assumed"])
    ops = {n.op_type for n in graph.nodes}
    assert {"Conv", "BatchNormalization", "MaxPool", "Relu", "Gemm"} <= ops
    x = next(graph.tensors[i] for i in graph.inputs)
    assert x.metadata.get("rank_unknown") and "float32 assumed" in x.metadata["torchscript"]


def test_traced_inputs_give_shapes() -> None:
    graph = _load(DATA / "ts_bert_trace.pt")
    inputs = {graph.tensors[i].id: graph.tensors[i] for i in graph.inputs}
    assert {k: (t.shape, t.dtype) for k, t in inputs.items()} == {
        "input_ids": ([2, 8], "int64"),
        "attention_mask": ([2, 8], "int64"),
    }
    assert [graph.tensors[i].shape for i in graph.outputs] == [[2, 8, 32], [2, 32]]


def test_sniff_tells_other_archives_apart(tmp_path: Path) -> None:
    assert torchscript.sniff(Source(DATA / "pt2_cnn.pt2")) is not None
    assert torchscript.sniff(Source(DATA / "ckpt_state.pt")) is not None
    text = tmp_path / "x.pt"
    text.write_text("not a zip")
    assert torchscript.sniff(Source(text)) == "not a zip archive"


def test_an_undecidable_branch_is_kept_as_a_node(tmp_path: Path) -> None:
    body = (
        "    features = self.features\n"
        "    y = (features).forward(x, )\n"
        "    if torch.gt(torch.sum(y), 0):\n"
        "      z = torch.relu(y)\n"
        "    else:\n"
        "      z = torch.neg(y)\n"
        "    return torch.flatten(z, 1)\n"
    )
    graph = _load(_with_forward(tmp_path, body))
    node = next(n for n in graph.nodes if n.op_type == "If")
    assert node.metadata["domain"] == "prim" and node.metadata["assigns"] == ["z"]
    assert node.metadata["source"] == "code/__torch__.py line 13"
    assert graph.metadata["torchscript"]["undecided"]
    assert "If" in graph.metadata["torchscript"]["not_mapped"]


def test_loops_over_known_ranges_unroll(tmp_path: Path) -> None:
    body = (
        "    y = x\n"
        "    for i in range(3):\n"
        "      y = torch.add(y, i)\n"
        "    _0 = annotate(List[int], [1, 2])\n"
        "    if torch.eq(torch.len(_0), 2):\n"
        "      y = torch.relu(y)\n"
        "    else:\n"
        "      ops.prim.RaiseException('no', 'builtins.ValueError')\n"
        "    return y\n"
    )
    graph = _load(_with_forward(tmp_path, body))
    assert [n.op_type for n in graph.nodes if "children_ids" not in n.metadata] == [
        "Add",
        "Add",
        "Add",
        "Relu",
    ]
    x = np.ones((1, 3, 16, 16), np.float32)
    (out,) = run(graph, {"x": x}).outputs.values()
    np.testing.assert_allclose(out, x + 3)


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("    return __import__('os').system('touch PWNED')\n", "__import__"),
        ('    _0 = exec(\'open("PWNED", "w")\')\n    return x\n', "exec"),
        ("    return eval('x')\n", "eval"),
        ("    return (self).forward(x, )\n", "calls nested more than 40"),
        ("    while True:\n      pass\n    return x\n", "steps"),
        ("    with torch.no_grad():\n      pass\n    return x\n", "With statement"),
        ("    return (lambda: x)()\n", "Lambda"),
        ("    return self.nothing\n", "no attribute 'nothing'"),
        ("    return CONSTANTS.c7\n", "CONSTANTS.c7"),
        ("    ops.prim.RaiseException('bad', 'builtins.ValueError')\n", "raises"),
    ],
)
def test_hostile_code_executes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str, problem: str
) -> None:
    monkeypatch.chdir(tmp_path)
    e = _refused(_with_forward(tmp_path, body))
    assert problem in str(e)
    assert re.search(r"code/__torch__\.py line \d+", e.place)
    assert not (tmp_path / "PWNED").exists()


def test_deeply_nested_code_is_refused(tmp_path: Path) -> None:
    deep = "torch.relu(" * 150 + "x" + ")" * 150
    e = _refused(_with_forward(tmp_path, f"    return {deep}\n"))
    assert "code/__torch__.py" in e.place and "nested" in str(e)


def test_a_missing_or_poisoned_pickle_is_refused(tmp_path: Path) -> None:
    missing = _rewrite(
        DATA / "ts_cnn_trace.pt",
        tmp_path / "missing.pt",
        lambda n, d: None if n.endswith("/data.pkl") else d,
    )
    assert torchscript.sniff(Source(missing)) is not None
    assert "data.pkl" in _refused(missing).place

    class Payload:
        def __reduce__(self) -> tuple:
            return (open, (str(tmp_path / "PWNED"), "w"))

    poisoned = _rewrite(
        DATA / "ts_cnn_trace.pt",
        tmp_path / "poisoned.pt",
        lambda n, d: pickle.dumps(Payload(), protocol=2) if n.endswith("/data.pkl") else d,
    )
    e = _refused(poisoned)
    assert e.place.endswith("data.pkl") and "open" in str(e) and "__torch__ classes" in str(e)
    assert not (tmp_path / "PWNED").exists()


def test_damaged_code_and_constants_are_located(tmp_path: Path) -> None:
    def bad_code(name: str, data: bytes) -> bytes:
        return (
            b"class Cnn(Module):\n  def forward(self,\n" if name.endswith("__torch__.py") else data
        )

    e = _refused(_rewrite(DATA / "ts_cnn_trace.pt", tmp_path / "a.pt", bad_code))
    assert e.place.startswith("code/__torch__.py line")

    def no_storage(name: str, data: bytes) -> bytes | None:
        return None if "/constants/" in name else data

    e = _refused(_rewrite(DATA / "ts_cnn_trace.pt", tmp_path / "b.pt", no_storage))
    assert "constants/0" in e.place


def test_ops_without_a_schema_keep_their_outputs(tmp_path: Path) -> None:
    body = "    _0, _1, _2 = torch.lstm_like(x, [x], True)\n    return (_0, _2)\n"
    graph = _load(_with_forward(tmp_path, body))
    (node,) = [n for n in graph.nodes if n.op_type == "lstm_like"]
    assert node.metadata["domain"] == "aten" and len(node.outputs) == 3
    assert [graph.tensors[i].id for i in graph.outputs] == [
        graph.tensors[node.outputs[0]].id,
        graph.tensors[node.outputs[2]].id,
    ]
    assert graph.metadata["torchscript"]["not_mapped"] == ["lstm_like"]


def test_live_torch_traces_run_to_torch_outputs(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="torch makes the archives of this test")
    from torch import nn

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(20, 16)
            self.layers = nn.ModuleList([nn.Linear(16, 16) for _ in range(3)])
            self.gn = nn.GroupNorm(2, 4)

        def forward(self, ids: torch.Tensor, img: torch.Tensor) -> tuple:
            x = self.emb(ids)
            for layer in self.layers:
                x = nn.functional.gelu(layer(x)) + x
            return x.softmax(-1), self.gn(img).flatten(1)

    torch.manual_seed(0)
    cases = {
        "block": (Block().eval(), (torch.randint(0, 20, (2, 5)), torch.randn(1, 4, 6, 6))),
        "mha": (
            nn.MultiheadAttention(16, 2, batch_first=True).eval(),
            (torch.randn(2, 5, 16),) * 3,
        ),
    }
    for name, (module, inputs) in cases.items():
        path = tmp_path / f"{name}.pt"
        with warnings.catch_warnings():  # the tracer's notes on constants it records
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(module, inputs)
        traced.save(str(path))
        with torch.no_grad():
            want = traced(*inputs)
        graph = _load(path)
        feeds = {graph.tensors[i].id: x.numpy() for i, x in zip(graph.inputs, inputs, strict=True)}
        got = list(run(graph, feeds).outputs.values())
        for g, w in zip(got, want, strict=True):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-3, atol=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        net = nn.LSTM(8, 8, num_layers=2, batch_first=True, bidirectional=True).eval()
        x = torch.randn(2, 3, 8)
        lstm = torch.jit.trace(net, (x,))
    lstm.save(str(tmp_path / "lstm.pt"))
    graph = _load(tmp_path / "lstm.pt")
    assert "not_mapped" not in graph.metadata["torchscript"]
    got = run(graph, {graph.tensors[graph.inputs[0]].id: x.numpy()}).outputs
    want, (h, c) = net(x)
    for t, w in zip(graph.outputs, (want, h, c), strict=True):
        np.testing.assert_allclose(got[graph.tensors[t].id], w.detach().numpy(), atol=1e-5)


def test_a_scripted_module_without_traced_inputs_runs_once_given_its_input(
    tmp_path: Path,
) -> None:
    """No shapes in the archive: the input's rank is unknown, so Linear lowers to MatMul and
    Add (Gemm needs a 2-D input), and the run takes the input the user gives."""
    torch = pytest.importorskip("torch", reason="torch makes the archive of this test")
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))
    path = tmp_path / "mlp.pt"
    torch.jit.script(net.eval()).save(str(path))
    graph = torchscript.load(Source(path))
    assert not [n.id for n in graph.nodes if n.metadata.get("domain") == "aten"]
    x = np.random.default_rng(0).standard_normal((2, 4, 6)).astype(np.float32)
    got = run(graph, {graph.tensors[graph.inputs[0]].id: x}).outputs
    want = net(torch.from_numpy(x)).detach().numpy()
    np.testing.assert_allclose(next(iter(got.values())), want, rtol=1e-3, atol=1e-4)
