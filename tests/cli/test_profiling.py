"""``profile_graph``: ``xocview run``'s measurements from Python, on the same path."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.cli.running import run as xocview
from xocview.cli import app
from xocview.cli import run as cli_run
from xocview.cli.profiling import ProfileResult, profile_graph
from xocview.errors import XocviewError
from xocview.formats import registry
from xocview.formats.source import Source
from xocview.model import Graph
from xocview.model.analyses.profile import stored_time, time_sources, times_as_metadata

REPEAT = 5


def small_model(path: Path) -> Path:
    """A float model with two inputs and a few op types: Mul, Conv, Relu, pooling, Gemm."""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    g = rng.standard_normal((4, 5)).astype(np.float32)
    nodes = [
        helper.make_node("Mul", ["x", "scale"], ["xs"], name="scaled"),
        helper.make_node("Conv", ["xs", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("GlobalAveragePool", ["r"], ["p"], name="pool"),
        helper.make_node("Flatten", ["p"], ["f"], name="flat"),
        helper.make_node("Gemm", ["f", "g"], ["y"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8]),
            helper.make_tensor_value_info("scale", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])],
        [
            onnx.numpy_helper.from_array(w, "w"),
            onnx.numpy_helper.from_array(b, "b"),
            onnx.numpy_helper.from_array(g, "g"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return small_model(tmp_path / "small.onnx")


def load(path: Path) -> Graph:
    """The graph as ``xocview run`` loads it."""
    return registry.load_source(Source(str(path)))[0]


def feeds() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    return {"x": x, "scale": np.asarray([0.5], dtype=np.float32)}


def cli_result(model: Path, *args: str) -> Any:
    """The RunResult ``xocview run`` computes for these arguments, in this process."""
    ns = app._parser().parse_args(["run", str(model), *args])
    return cli_run._run(ns, load(model))


def test_figures_equal_xocview_runs_within_the_run_to_run_spread(
    model: Path, tmp_path: Path
) -> None:
    profile, saved = tmp_path / "p.json", tmp_path / "timed.json"
    done = xocview(
        "run", model, "--repeat", str(REPEAT), "--profile", profile, "--save", saved
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cli = json.loads(profile.read_text())
    ours = profile_graph(load(model), repeat=REPEAT)
    assert [n["id"] for n in cli["nodes"]] == list(ours.node_times)
    assert {n["id"]: n["op_type"] for n in cli["nodes"]} == ours.op_types
    assert set(cli["op_types_ms"]) == set(ours.by_op) == {
        "Mul", "Conv", "Relu", "GlobalAveragePool", "Flatten", "Gemm",
    }  # fmt: skip
    for op, ms in cli["op_types_ms"].items():  # a busy machine: a generous factor
        seconds = ours.by_op[op]
        assert seconds > 0
        assert abs(seconds * 1e3 - ms) < 0.5 or 1 / 20 < seconds * 1e3 / ms < 20, op
    assert 1 / 20 < ours.total * 1e3 / cli["total_ms"] < 20
    assert cli["passes"] == ours.run_result.passes == REPEAT
    assert cli["outputs"] == {k: list(v.shape) for k, v in ours.outputs.items()} == {"y": [1, 5]}
    assert cli["peak_bytes"] == ours.peak_bytes > 0  # the same tensors alive at once
    to_json = ours.to_json()
    assert set(to_json) == set(cli) and to_json["engine"] == cli["engine"] == "xocview"
    # the times sit on the graph as ``--save`` puts them: the same nodes, the same key
    timed = load(saved)
    assert time_sources(timed) == time_sources(ours.graph) == ["cpu"]
    on_file = {nd.id for nd in timed.nodes if np.isfinite(stored_time(nd.metadata))}
    assert on_file == set(ours.node_times)


def test_outputs_are_those_of_the_runs_default_feeds_exactly(model: Path) -> None:
    cli = cli_result(model, "--repeat", "1")
    ours = profile_graph(load(model), repeat=1, warmup=0)
    assert set(ours.node_times) == set(cli.node_times)
    assert ours.outputs.keys() == cli.outputs.keys() == {"y"}
    np.testing.assert_array_equal(ours.outputs["y"], cli.outputs["y"])
    other_seed = profile_graph(load(model), repeat=1, seed=1)
    assert not np.array_equal(other_seed.outputs["y"], ours.outputs["y"])


def test_inputs_by_name_or_in_order_give_the_same_outputs(model: Path) -> None:
    given = feeds()
    by_name = profile_graph(load(model), given, repeat=1)
    in_order = profile_graph(load(model), [given["x"], given["scale"]], repeat=1)
    np.testing.assert_array_equal(by_name.outputs["y"], in_order.outputs["y"])
    default = profile_graph(load(model), repeat=1)
    assert not np.array_equal(default.outputs["y"], by_name.outputs["y"])


def test_outputs_equal_onnxruntimes(model: Path) -> None:
    ort = pytest.importorskip("onnxruntime", reason="the comparison needs onnxruntime")
    given = feeds()
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    (expected,) = session.run(["y"], given)
    ours = profile_graph(load(model), given, repeat=2)
    assert ours.outputs["y"].dtype == np.float32
    np.testing.assert_allclose(ours.outputs["y"], expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("from_file", [True, False], ids=["file", "written"])
def test_onnxruntime_engine_reports_its_node_times(model: Path, from_file: bool) -> None:
    pytest.importorskip("onnxruntime", reason="engine='onnxruntime' needs onnxruntime")
    given = feeds()
    xoc = profile_graph(load(model), given, repeat=1)
    ort = profile_graph(
        load(model),
        given,
        repeat=3,
        engine="onnxruntime",
        optimization="none",
        model_path=model if from_file else None,
    )
    assert ort.engine == "onnxruntime" and ort.optimization == "none" and ort.repeat == 3
    assert set(ort.node_times) == set(xoc.node_times)  # no optimization: every node runs
    assert all(s > 0 for s in ort.node_times.values())
    assert ort.peak_bytes == 0  # onnxruntime does not tell its memory
    np.testing.assert_allclose(ort.outputs["y"], xoc.outputs["y"], rtol=1e-5, atol=1e-5)
    assert time_sources(ort.graph) == ["onnxruntime"]
    assert ort.to_json()["optimization"] == "none" and "peak_bytes" not in ort.to_json()
    ms = {nd.id: stored_time(nd.metadata, "onnxruntime") for nd in ort.graph.nodes}
    assert {k: v for k, v in ms.items() if np.isfinite(v)} == times_as_metadata(ort.node_times)


def test_the_graph_given_is_not_changed(model: Path) -> None:
    graph, untouched = load(model), load(model)
    result = profile_graph(graph, repeat=2)
    assert graph == untouched
    assert not any("performance" in nd.metadata for nd in graph.nodes)
    assert result.graph is not graph
    ms = {nd.id: stored_time(nd.metadata) for nd in result.graph.nodes}
    assert {k: v for k, v in ms.items() if np.isfinite(v)} == times_as_metadata(result.node_times)


def test_result_sums_ranks_and_spreads(model: Path) -> None:
    r = profile_graph(load(model), repeat=3)
    assert r.repeat == 3 and r.engine == "xocview" and r.optimization is None
    assert sum(r.by_op.values()) == pytest.approx(sum(r.node_times.values()))
    assert list(r.by_op.values()) == sorted(r.by_op.values(), reverse=True)
    ranked = r.slowest(2)
    assert len(ranked) == 2 and ranked[0][1] == max(r.node_times.values())
    assert set(r.spread) == set(r.node_times) and all(s >= 1.0 for s in r.spread.values())
    assert r.typical_spread is not None and r.typical_spread >= 1.0
    text = repr(r)
    assert text.startswith("<ProfileResult xocview: 6 nodes") and "median of 3" in text
    assert repr(ranked[0][0]) in text and "\n" not in text
    once = profile_graph(load(model), repeat=1)
    assert once.spread == {} and once.typical_spread is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"repeat": 0}, "repeat must be a whole number >= 1; got 0"),
        ({"repeat": 2.5}, "repeat must be a whole number >= 1; got 2.5"),
        ({"warmup": -1}, "warmup must be a whole number >= 0; got -1"),
        ({"threads": 0}, "threads must be a whole number >= 1; got 0"),
        ({"engine": "cuda"}, "engine 'cuda': expected one of xocview, onnxruntime"),
        ({"optimization": "basic"}, "optimization is onnxruntime's"),
        ({"inputs": [np.zeros((1, 3, 8, 8))]}, "1 values given for 2 graph inputs (x, scale)"),
        ({"inputs": np.zeros(3)}, "expected a mapping of input names to arrays"),
        ({"inputs": {"nope": np.zeros(1)}}, "no tensor named 'nope' to feed"),
    ],
)
def test_bad_arguments_are_one_line_errors(
    model: Path, kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(XocviewError) as caught:
        profile_graph(load(model), **kwargs)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_onnxruntime_missing_is_a_one_line_error(
    model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    why = "onnxruntime is not installed (pip install onnxruntime)"
    monkeypatch.setattr("xocview.cli.profiling.missing_onnxruntime", lambda: why)
    with pytest.raises(XocviewError, match=r"^onnxruntime is not installed \(pip install"):
        profile_graph(load(model), engine="onnxruntime")


def test_to_pandas_without_pandas_says_it_is_needed(
    model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = profile_graph(load(model), repeat=1)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails
    with pytest.raises(XocviewError, match=r"^to_pandas needs pandas, which is not installed$"):
        r.to_pandas()


def test_to_pandas_has_a_row_per_node(model: Path) -> None:
    pytest.importorskip("pandas", reason="to_pandas needs pandas")
    r = profile_graph(load(model), repeat=1)
    frame = r.to_pandas()
    assert list(frame.columns) == ["node", "op_type", "seconds", "share"]
    assert set(frame["node"]) == set(r.node_times)
    assert frame["share"].sum() == pytest.approx(1.0)


def test_show_opens_the_graph_with_its_times(model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r: ProfileResult = profile_graph(load(model), repeat=1)
    calls: list[tuple[Graph, str | None]] = []
    fake = types.ModuleType("xocview.ui.show_client")

    def show_graph(graph: Graph, *, name: str | None = None, **_: Any) -> None:
        calls.append((graph, name))

    fake.show_graph = show_graph  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "xocview.ui.show_client", fake)
    r.show(name="small")
    r.show()
    assert [(g is r.graph, name) for g, name in calls] == [(True, "small"), (True, None)]
    shown = calls[0][0]
    assert time_sources(shown) == ["cpu"]
    assert {nd.id for nd in shown.nodes if np.isfinite(stored_time(nd.metadata))} == set(
        r.node_times
    )
