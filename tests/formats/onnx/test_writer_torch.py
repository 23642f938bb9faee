"""PyTorch exports saved again as ONNX: scopes, functions and control flow come through, and
onnxruntime gives the export's own outputs. Both exporters where onnxscript is importable."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest

torch = pytest.importorskip("torch", reason="torch is in the bench extra, not in make test")
pytest.importorskip("onnxruntime", reason="onnxruntime is the yardstick")

from tests.executor.test_torch_control_flow import CondNet, LoopNet  # noqa: E402
from tests.formats.onnx.running import assert_same_outputs  # noqa: E402
from xocview.formats import load, save  # noqa: E402
from xocview.model import Graph, Hierarchy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "perf"))
try:
    import torch_exports  # tests/perf/: the benchmark's exports and its quiet export
finally:
    sys.path.pop(0)

EXPORTERS = ["ts", "dynamo"]


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.norm = torch.nn.LayerNorm(8)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.norm(self.fc(x)))


class Stack(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first, self.second = Block(), Block()
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x: Any) -> Any:
        return self.drop(self.second(self.first(x)))


def export(model: Any, args: tuple[Any, ...], path: Path, exporter: str, **options: Any) -> Path:
    """A quiet export with seeded random weights; dynamo needs onnxscript (skip without)."""
    if exporter == "dynamo":
        pytest.importorskip("onnxscript", reason="the dynamo exporter needs onnxscript")
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.5)
    torch_exports.quiet_export(model.eval(), args, path, exporter, **options)
    return path


def round_trip(source: Path) -> tuple[Graph, Graph, Path]:
    """The export opened, saved by xocview and checked; both graphs and the written file."""
    graph = load(source)
    out = source.with_name(source.stem + ".saved.onnx")
    assert save(graph, out) == []
    onnx.checker.check_model(str(out), full_check=True)
    assert_same_outputs(source, out)
    return graph, load(out), out


def _without_data_places(graph: Graph) -> Graph:
    """The graph less the external-data places of its weights (the file names differ)."""
    for t in graph.tensors:
        t.metadata.pop("external_data", None)
    return graph


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_an_export_with_module_scopes_round_trips(exporter: str, tmp_path: Path) -> None:
    source = export(Stack(), (torch.randn(2, 8),), tmp_path / "stack.onnx", exporter)
    graph, back, _ = round_trip(source)
    assert _without_data_places(back) == _without_data_places(graph)
    scopes = {n.id for n in back.nodes if n.metadata.get("derived") == "scope"}
    assert scopes == {n.id for n in graph.nodes if n.metadata.get("derived") == "scope"}
    assert scopes  # the module path came through (names or dynamo's metadata_props)


def test_modules_exported_as_functions_stay_functions(tmp_path: Path) -> None:
    source = export(
        Stack(),
        (torch.randn(2, 8),),
        tmp_path / "fn.onnx",
        "ts",
        export_modules_as_functions={Block},
    )
    graph, back, out = round_trip(source)
    assert back == graph
    written = onnx.load(str(out))
    assert [f.name for f in written.functions] == [f.name for f in onnx.load(str(source)).functions]
    calls = [n for n in back.nodes if "function" in n.metadata]
    assert len(calls) == 2 and all(
        Hierarchy(back).is_group[back.index.node_position(n.id)] for n in calls
    )


def test_a_scripted_loop_with_a_branch_round_trips(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.script is deprecated, but still exported
        scripted = torch.jit.script(LoopNet())
    source = export(
        scripted,
        (torch.randn(3, 8), 5),
        tmp_path / "loop.onnx",
        "ts",
        input_names=["x", "n"],
    )
    graph, back, out = round_trip(source)
    assert back == graph
    loop = next(n for n in onnx.load(str(out)).graph.node if n.op_type == "Loop")
    body = loop.attribute[0].g
    assert "If" in [n.op_type for n in body.node]


def test_torch_cond_round_trips(tmp_path: Path) -> None:
    source = export(CondNet(), (torch.randn(3, 8),), tmp_path / "cond.onnx", "dynamo")
    graph, back, out = round_trip(source)
    assert _without_data_places(back) == _without_data_places(graph)
    assert "If" in [n.op_type for n in onnx.load(str(out)).graph.node]


@pytest.mark.parametrize("exporter", EXPORTERS)
def test_a_transformer_export_round_trips(exporter: str, tmp_path: Path) -> None:
    """A one-layer BERT from the first-view benchmark's configs (random weights)."""
    pytest.importorskip("transformers", reason="transformers is in the bench extra")
    if exporter == "dynamo":
        pytest.importorskip("onnxscript", reason="the dynamo exporter needs onnxscript")
    made = torch_exports.export_one("bert", 1, exporter, tmp_path)
    if made.path is None:
        pytest.skip(f"the {exporter} exporter failed here: {made.error}")
    graph, back, _ = round_trip(made.path)
    assert _without_data_places(back) == _without_data_places(graph)
