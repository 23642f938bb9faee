"""Runs on onnxruntime, timed by its own profiler and put onto the graph our reader made."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.executor.test_light_models import _with_random_weights
from xocview.errors import RunError
from xocview.executor import run
from xocview.executor.onnxruntime_engine import input_values, run_onnxruntime
from xocview.executor.ort_model import named_model
from xocview.executor.ort_profile import attribute, read_profile
from xocview.formats import load
from xocview.model import Graph

ort = pytest.importorskip("onnxruntime", reason="the onnxruntime engine needs onnxruntime")

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
MODELS = sorted(p.stem for p in LIGHT.glob("*.onnx"))
_LEVELS = {"none": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "all": "ORT_ENABLE_ALL"}


def own_outputs(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's outputs for the file as it stands, run its own default way."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds), strict=True))


def profile_at(graph: Graph, path: Path, level: str, tmp: Path):  # type: ignore[no-untyped-def]
    """One profiled pass of the model as the engine names it, at ``level``."""
    model, _ = named_model(graph, path)
    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(tmp / "profile")
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS[level])
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    session.run(None, input_values(graph, {}, {}, {}, 1, 0))
    return read_profile(session.end_profiling())


@pytest.mark.parametrize("name", MODELS)
def test_light_model_outputs_are_onnxruntimes_and_every_kernel_finds_its_node(
    name: str, tmp_path: Path
) -> None:
    path = LIGHT / f"{name}.onnx"
    graph = load(path)
    result = run_onnxruntime(graph, path, repeat=2, warmup=1)
    expected = own_outputs(path, input_values(graph, {}, {}, {}, 1, 0))
    assert result.outputs.keys() == expected.keys()
    for key, want in expected.items():
        np.testing.assert_allclose(result.outputs[key], want, rtol=1e-5, atol=1e-6)
    assert result.node_times and all(t > 0 for t in result.node_times.values())
    assert result.passes == 2 and result.threads == 1 and result.total_time > 0
    assert {result.op_types[k] for k in result.node_times} >= {"Conv"}
    for level in ("none", "basic"):  # nodes keep their names (or a fusion takes one)
        profile = profile_at(graph, path, level, tmp_path)
        found = attribute(profile, graph)
        assert not found.unmatched, [k.name for k in found.unmatched]
    # At "all" the NCHWc transformer adds layout conversions that stand for no node: 1 to 37
    # kernels (2-25% of them, 0.0-7.8% of the time on a quiet machine; up to 16% of one
    # profiled run's time on a loaded one) in the light models with onnxruntime 1.32.
    profile = profile_at(graph, path, "all", tmp_path)
    found = attribute(profile, graph)
    assert {k.op_name for k in found.unmatched} <= {"ReorderInput", "ReorderOutput"}
    count, time = found.matched_share(profile)
    assert count >= 0.7 and time >= 0.75, (count, time)


def test_none_times_every_node_of_the_graph_that_runs() -> None:
    path = LIGHT / "light_squeezenet.onnx"
    graph = load(path)
    result = run_onnxruntime(graph, path, optimization="none")
    assert set(result.node_times) == {nd.id for nd in graph.nodes}
    assert not result.warnings
    basic = run_onnxruntime(graph, path, optimization="basic")  # ConstantOfShape folded
    assert len(basic.node_times) == 65
    assert basic.warnings == [
        "40 nodes of the graph got no onnxruntime time: folded into constants, fused into "
        "another node, removed by its optimizer (level basic) or in a branch not taken"
    ]


def test_the_inputs_are_those_the_bundled_executor_feeds(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, "n"])
    k = helper.make_tensor_value_info("k", TensorProto.INT64, [3])
    nodes = [helper.make_node("Identity", ["x"], ["y"]), helper.make_node("Identity", ["k"], ["j"])]
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in (("y", 1), ("j", 7))]
    path = tmp_path / "id.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x, k], outs)), path)
    graph = load(path)
    ours = run(graph, seed=7, symbols={"n": 5})
    theirs = run_onnxruntime(graph, path, seed=7, symbols={"n": 5})
    assert theirs.outputs["y"].shape == (2, 5)
    for name in ("y", "j"):
        np.testing.assert_array_equal(theirs.outputs[name], ours.outputs[name])
    given = np.ones((2, 3), np.float32)
    assert (run_onnxruntime(graph, path, {"x": given}).outputs["y"] == given).all()
    with pytest.raises(RunError, match="no tensor named 'z' to feed; inputs are 'x', 'k'"):
        run_onnxruntime(graph, path, {"z": given})


def test_unnamed_and_same_named_nodes_get_the_ids_our_reader_gave(tmp_path: Path) -> None:
    info = helper.make_tensor_value_info
    nodes = [
        helper.make_node("Relu", ["x"], ["a"]),  # unnamed: Relu_0
        helper.make_node("Neg", ["a"], ["b"], name="dup"),
        helper.make_node("Abs", ["b"], ["c"], name="dup"),  # dup_2
        helper.make_node("Sigmoid", ["c"], ["y"]),  # Sigmoid_3
    ]
    graph_proto = helper.make_graph(
        nodes, "g", [info("x", TensorProto.FLOAT, [4])], [info("y", TensorProto.FLOAT, [4])]
    )
    path = tmp_path / "unnamed.onnx"
    onnx.save(helper.make_model(graph_proto), path)
    graph = load(path)
    ids = [nd.id for nd in graph.nodes]
    assert ids == ["Relu_0", "dup", "dup_2", "Sigmoid_3"]
    result = run_onnxruntime(graph, path, optimization="none")
    assert set(result.node_times) == set(ids)
    assert result.op_types == {
        "Relu_0": "Relu",
        "dup": "Neg",
        "dup_2": "Abs",
        "Sigmoid_3": "Sigmoid",
    }


def test_external_data_is_read_beside_the_model_and_the_profile_leaves_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _with_random_weights(
        onnx.load(LIGHT / "light_squeezenet.onnx"), np.random.default_rng(0)
    )
    folder = tmp_path / "model"
    folder.mkdir()
    path = folder / "squeezenet.onnx"
    onnx.save(model, path, save_as_external_data=True, location="weights.bin", size_threshold=1024)
    assert (folder / "weights.bin").stat().st_size > 1_000_000
    work, temp = tmp_path / "cwd", tmp_path / "tmp"
    work.mkdir()
    temp.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    graph = load(path)
    result = run_onnxruntime(graph, path, repeat=2)
    expected = own_outputs(path, input_values(graph, {}, {}, {}, 1, 0))
    (key,) = expected
    np.testing.assert_allclose(result.outputs[key], expected[key], rtol=1e-5, atol=1e-6)
    assert len(result.node_times) == 39 and "Conv" in result.op_types.values()
    assert list(work.iterdir()) == [] and list(temp.iterdir()) == []
    assert sorted(p.name for p in folder.iterdir()) == ["squeezenet.onnx", "weights.bin"]


def test_external_data_outside_the_models_folder_is_refused(tmp_path: Path) -> None:
    path = LIGHT / "light_squeezenet.onnx"
    graph = load(path)
    model = onnx.load(path)
    weight = numpy_helper.from_array(np.zeros(100_000, np.float32), "conv1_w_0__SHAPE")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    weight.external_data.add(key="location", value="../outside.bin")
    model.graph.initializer.append(weight)
    (tmp_path / "m").mkdir()
    evil = tmp_path / "m" / "evil.onnx"
    evil.write_bytes(model.SerializeToString())  # onnx.save would refuse to write it
    with pytest.raises(RunError, match=r"'\.\./outside\.bin' leaves the model's folder"):
        named_model(graph, evil)


def test_control_flow_bodies_and_functions_are_timed(tmp_path: Path) -> None:
    info = helper.make_tensor_value_info
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="then_relu")],
        "then",
        [],
        [info("t", TensorProto.FLOAT, [4])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["e"], name="else_abs")],
        "else",
        [],
        [info("e", TensorProto.FLOAT, [4])],
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_id"),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="body_add"),
        ],
        "body",
        [
            info("i", TensorProto.INT64, []),
            info("cond_in", TensorProto.BOOL, []),
            info("acc_in", TensorProto.FLOAT, [4]),
        ],
        [info("cond_out", TensorProto.BOOL, []), info("acc_out", TensorProto.FLOAT, [4])],
    )
    fn = helper.make_function(
        "local",
        "Swish",
        ["a"],
        ["b"],
        [helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("Mul", ["a", "s"], ["b"])],
        [helper.make_opsetid("", 17)],
    )
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["sx"], name="sum", keepdims=0),
        helper.make_node("Greater", ["sx", "zero"], ["c"], name="gt"),
        helper.make_node("If", ["c"], ["yif"], name="if", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["n", "true", "yif"], ["yl"], name="loop", body=body),
        helper.make_node("Swish", ["yl"], ["y"], name="swish", domain="local"),
    ]
    inits = [
        helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0]),
        helper.make_tensor("n", TensorProto.INT64, [], [3]),
        helper.make_tensor("true", TensorProto.BOOL, [], [True]),
    ]
    g = helper.make_graph(
        nodes, "g", [info("x", TensorProto.FLOAT, [4])], [info("y", TensorProto.FLOAT, [4])], inits
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    path = tmp_path / "control.onnx"
    onnx.save(helper.make_model(g, opset_imports=opsets, functions=[fn]), path)
    graph = load(path)
    result = run_onnxruntime(graph, path, {"x": np.ones(4, np.float32)}, optimization="none")
    timed = set(result.node_times)
    assert timed >= {"sum", "gt", "if", "then_relu", "loop", "body_id", "body_add"}
    assert timed >= {"swish/Sigmoid_0", "swish/Mul_1"}  # the function's body, inlined
    assert "else_abs" not in timed and "swish" not in timed
    assert "1 nodes of the graph got no onnxruntime time" in result.warnings[0]
    np.testing.assert_allclose(result.outputs["y"], run(graph, {"x": np.ones(4)}).outputs["y"])


def test_an_edited_graph_is_refused_as_no_longer_the_files() -> None:
    path = LIGHT / "light_squeezenet.onnx"
    graph = load(path)
    graph.nodes[40].op_type = "Tanh"
    with pytest.raises(RunError, match=r"node 'n1' is a Tanh, the file's node 40 a Relu"):
        run_onnxruntime(graph, path)
    graph.nodes[40].op_type = "Relu"
    del graph.nodes[-1]  # the Softmax
    graph.invalidate()
    with pytest.raises(RunError, match="the graph has 104 operator nodes, the file 105; "):
        run_onnxruntime(graph, path)


def test_threads_cancel_and_bad_settings() -> None:
    path = LIGHT / "light_squeezenet.onnx"
    graph = load(path)
    assert run_onnxruntime(graph, path, threads=2).threads == 2
    passes: list[tuple[int, int]] = []
    done = run_onnxruntime(graph, path, repeat=3, warmup=1, on_pass=lambda *p: passes.append(p))
    assert passes == [(1, 4), (2, 4), (3, 4), (4, 4)] and done.passes == 3
    stopped = run_onnxruntime(graph, path, repeat=3, cancel=lambda: True)
    assert stopped.cancelled and not stopped.node_times
    with pytest.raises(RunError, match="optimization 'max': expected one of all, extended"):
        run_onnxruntime(graph, path, optimization="max")
    with pytest.raises(RunError, match="threads must be >= 0"):
        run_onnxruntime(graph, path, threads=-1)


def test_without_onnxruntime_the_error_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails as if not installed
    path = LIGHT / "light_squeezenet.onnx"
    with pytest.raises(
        RunError, match=r"^onnxruntime is not installed \(pip install onnxruntime\)$"
    ):
        run_onnxruntime(load(path), path)
