"""`xocview run` as a user runs it: light models, one corpus file per JSON format, errors."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.cli.running import run as xocview
from tests.conftest import REPO, corpus_path
from tests.executor.big_graphs import lightnet_file
from xocview.formats import load
from xocview.model.analyses.profile import node_times_ms

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


@pytest.mark.parametrize("name", sorted(p.stem for p in LIGHT.glob("*.onnx")))
def test_run_prints_outputs_and_the_slowest_nodes_of_every_light_model(name: str) -> None:
    done = xocview("run", str(LIGHT / f"{name}.onnx"), "--top", "3")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "outputs:" in out and "1x1000" in out
    assert "slowest 3 nodes:" in out and "time per op type:" in out
    assert "peak memory" in out


def test_profile_and_save_keep_the_times(tmp_path: Path) -> None:
    profile, saved = tmp_path / "p.json", tmp_path / "timed.json"
    model = LIGHT / "light_squeezenet.onnx"
    done = xocview(
        "run", str(model), "--repeat", "2", "--profile", str(profile), "--save", str(saved)
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(profile.read_text())
    assert data["total_ms"] > 0 and data["peak_bytes"] > data["weight_bytes"] > 0
    assert {n["op_type"] for n in data["nodes"]} >= {"Conv", "Relu", "MaxPool"}
    graph = load(saved)
    times = node_times_ms(graph)
    timed = [graph.nodes[i].op_type for i in np.flatnonzero(np.isfinite(times))]
    assert "Conv" in timed and "ConstantOfShape" not in timed  # weights are made once, untimed
    # XOC JSON has no field for weight values: the run says so, as convert does
    assert "xocview: note: 52 weights" in done.stderr and "without their values" in done.stderr


def test_an_npy_input_is_used_and_a_wrong_one_refused(tmp_path: Path) -> None:
    model = LIGHT / "light_squeezenet.onnx"
    name = next(
        vi.name for vi in onnx.load(model).graph.input if len(vi.type.tensor_type.shape.dim) == 4
    )
    good, bad = tmp_path / "x.npy", tmp_path / "bad.npy"
    np.save(good, np.zeros((1, 3, 224, 224), np.float32))
    np.save(bad, np.zeros((1, 3, 5), np.float32))
    assert xocview("run", str(model), "--input", f"{name}={good}").returncode == 0
    done = xocview("run", str(model), "--input", f"{name}={bad}")
    assert done.returncode == 1
    assert done.stderr.startswith(f"xocview: error: {model}: input ")  # the file is named
    assert "given shape [1, 3, 5]" in done.stderr and "Traceback" not in done.stderr


def test_an_unsupported_op_names_the_node_and_keeps_the_times_so_far(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    graph = load(REPO / "sample_graphs" / "tiny_transformer.json")
    graph.nodes[-1].op_type = "NoSuchOp"
    from xocview.formats import save

    save(graph, path)
    done = xocview("run", str(path))
    assert done.returncode == 1
    assert f"node '{graph.nodes[-1].id}' (NoSuchOp): no kernel for op 'NoSuchOp'" in done.stderr
    assert "slowest so far" in done.stdout


def test_xoc_corpus_resnet18_runs_with_random_weights() -> None:
    path = corpus_path("xoc", "xoc_resnet18.json")
    done = xocview("run", str(path))
    assert done.returncode == 0, done.stderr
    assert "output                   float32  1x1000" in done.stdout


def test_nnvm_corpus_file_runs_with_a_given_input_shape() -> None:
    """MXNet symbol files state no shapes: the input's is given, the weights' are inferred."""
    path = corpus_path("nnvm", "mxnet12_resnet18-priv-symbol.json")
    done = xocview("run", str(path), "--shape", "data=1,3,112,112")
    assert done.returncode == 0, done.stderr
    assert "softmax                  float32  1x1000" in done.stdout
    assert "reads 2 inputs, the op takes 1" in done.stdout  # the label input is left out
    missing = xocview("run", str(path))
    assert missing.returncode == 1 and "input 'data'" in missing.stderr


def test_save_fills_in_the_shapes_an_mxnet_file_leaves_out(tmp_path: Path) -> None:
    path = corpus_path("nnvm", "mxnet08_mtcnn_det1-symbol.json")
    saved = tmp_path / "measured.json"
    done = xocview("run", str(path), "--shape", "data=1x3x12x12", "--save", str(saved))
    assert done.returncode == 0, done.stderr
    before, after = load(path), load(saved)
    assert all(t.metadata.get("rank_unknown") for t in before.tensors)
    shapes = {t.id: (t.shape, t.dtype, t.metadata.get("shape_source")) for t in after.tensors}
    assert shapes["data"] == ([1, 3, 12, 12], "float32", "run")
    assert shapes["conv1_weight"] == ([10, 3, 3, 3], "float32", "run")
    assert shapes["conv1"] == ([1, 10, 10, 10], "float32", "run")
    assert not any(t.metadata.get("rank_unknown") for t in after.tensors)


def test_lightnet_corpus_file_runs() -> None:
    path = corpus_path("lightnet", "lightnet_yolov3_ir.json")
    done = xocview("run", str(path), "--top", "1")
    assert done.returncode == 0, done.stderr
    assert "over 252 nodes" in done.stdout


def test_a_billion_element_weight_is_refused_over_the_budget_naming_it(tmp_path: Path) -> None:
    path = lightnet_file(tmp_path, [10**9])
    done = xocview("run", str(path), "--max-memory", "2G")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"xocview: error: {path}: the run needs about 3.7 GB for its")
    assert "over the memory budget of 2.0 GB" in done.stderr
    assert "largest: weight 'big' [1000000000] float32 3.7 GB" in done.stderr
    assert "--max-memory SIZE" in done.stderr


def test_the_default_budget_refuses_what_no_machine_holds(tmp_path: Path) -> None:
    done = xocview("run", str(lightnet_file(tmp_path, [10**6, 10**6])))
    assert done.returncode == 1, done.stderr
    assert "largest: weight 'big' [1000000,1000000] float32 3.6 TB" in done.stderr


def test_max_memory_refuses_a_small_real_model_and_none_lifts_it() -> None:
    path = str(LIGHT / "light_bvlc_alexnet.onnx")
    done = xocview("run", path, "--max-memory", "1M")
    assert done.returncode == 1
    assert "over the memory budget of 1.0 MB" in done.stderr
    done = xocview("run", path, "--max-memory", "none", "--top", "1")
    assert done.returncode == 0, done.stderr


def test_a_bad_max_memory_is_a_usage_error() -> None:
    done = xocview("run", str(LIGHT / "light_bvlc_alexnet.onnx"), "--max-memory", "2x")
    assert done.returncode == 2
    assert "argument --max-memory: '2x' is not a size; expected e.g. 2G" in done.stderr


def test_a_subgraph_attribute_is_refused_with_exit_1(tmp_path: Path) -> None:
    from onnx import TensorProto, helper

    def info(name: str, shape: list[int]) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    body = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["o"])], "score_mod", [info("s", [])], [info("o", [])]
    )
    node = helper.make_node("FlexAttention", ["x"], ["y"], "flex", domain="custom", score_mod=body)
    graph = helper.make_graph([node], "g", [info("x", [2, 3])], [info("y", [2, 3])])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)]
    path = tmp_path / "flex.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)
    done = xocview("run", str(path))
    assert done.returncode == 1, done.stderr
    assert "node 'flex' (FlexAttention): no kernel for op 'FlexAttention' of domain 'custom'" in (
        done.stderr
    )
    assert "outputs:" not in done.stdout


def test_run_reports_its_thread_count_and_the_spread_of_the_passes(tmp_path: Path) -> None:
    path = str(LIGHT / "light_squeezenet.onnx")
    done = xocview(
        "run", path, "--threads", "1", "--repeat", "3", "--profile", str(tmp_path / "p.json")
    )
    assert done.returncode == 0, done.stderr
    assert "(median of 3, 1 thread)" in done.stdout
    assert "spread over 3 passes (slowest / fastest, nodes above 1% of the time): typical x" in (
        done.stdout
    )
    profile = json.loads((tmp_path / "p.json").read_text())
    assert profile["threads"] == 1 and profile["passes"] == 3
    assert all(node["spread"] >= 1.0 for node in profile["nodes"])
    bad = xocview("run", path, "--threads", "-2")
    assert bad.returncode == 1 and "threads must be >= 0" in bad.stderr
