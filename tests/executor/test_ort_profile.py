"""onnxruntime's profile JSON read without onnxruntime, and its kernel names put onto a graph."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xocview.errors import FormatError
from xocview.executor.ort_profile import attribute, median_times, parse_profile, read_profile
from xocview.model import Graph, Node, Tensor


def run_event(ts: float, dur: float) -> dict[str, Any]:
    return {"cat": "Session", "name": "model_run", "ts": ts, "dur": dur, "ph": "X", "args": {}}


def node_event(name: str, ts: float, dur: float, op: str = "Conv") -> dict[str, Any]:
    args = {"op_name": op, "provider": "CPUExecutionProvider", "node_index": "0"}
    return {"cat": "Node", "name": name, "ts": ts, "dur": dur, "ph": "X", "args": args}


# Two runs of a small model as onnxruntime writes them: fences around kernels (older versions
# write them), a Loop body's node called twice in a run, a kernel of no known node.
PROFILE: list[dict[str, Any]] = [
    {"cat": "Session", "name": "model_loading_array", "ts": 1, "dur": 50, "args": {}},
    {"cat": "Session", "name": "session_initialization", "ts": 60, "dur": 40, "args": {}},
    run_event(100, 100),
    node_event("conv_fence_before", 101, 0),
    node_event("conv_kernel_time", 102, 20),
    node_event("conv_fence_after", 123, 0),
    node_event("body_add_kernel_time", 130, 3, "Add"),
    node_event("body_add_kernel_time", 140, 4, "Add"),
    node_event("ReorderOutput_kernel_time", 150, 5, "ReorderOutput"),
    run_event(300, 100),
    node_event("conv_kernel_time", 302, 30),
    node_event("body_add_kernel_time", 330, 6, "Add"),
    node_event("ReorderOutput_kernel_time", 350, 7, "ReorderOutput"),
]


def test_kernel_times_per_run_without_fences() -> None:
    profile = parse_profile(PROFILE)
    assert list(profile.kernels) == ["conv", "body_add", "ReorderOutput"]
    assert profile.runs == 2 and profile.run_times == [1e-4, 1e-4]
    conv = profile.kernels["conv"]
    assert conv.op_name == "Conv" and conv.provider == "CPUExecutionProvider"
    assert conv.durations == pytest.approx([20e-6, 30e-6])
    # a node called twice in a run (a Loop's body): its calls add up within the run
    assert profile.kernels["body_add"].durations == pytest.approx([7e-6, 6e-6])
    assert profile.other == []


def test_a_kernel_missing_from_a_run_has_none_there() -> None:
    events = [run_event(0, 10), node_event("a_kernel_time", 1, 2), run_event(20, 10)]
    events.append(node_event("b_kernel_time", 21, 3))
    profile = parse_profile(events)
    assert profile.kernels["a"].durations == [2e-6, None]
    assert profile.kernels["b"].durations == [None, 3e-6]


def test_without_run_events_each_appearance_is_a_run_and_other_events_are_counted() -> None:
    events = [node_event("a_kernel_time", 5, 2), node_event("a_kernel_time", 1, 1)]
    events.append(node_event("a_weird_event", 3, 1))
    profile = parse_profile({"traceEvents": events})
    assert profile.kernels["a"].durations == [1e-6, 2e-6]  # in time order
    assert profile.other == ["a_weird_event"]


def test_a_profile_that_is_not_a_trace_is_refused_naming_the_place(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match=r"p.json: \[1\].dur: 'x' is not a number"):
        parse_profile([run_event(0, 1), node_event("a_kernel_time", 0, "x")], "p.json")  # type: ignore[arg-type]
    with pytest.raises(FormatError, match="not a list of trace events"):
        parse_profile({"events": []})
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(FormatError, match=r"bad\.json: not JSON"):
        read_profile(bad)
    with pytest.raises(FormatError, match="cannot read the file"):
        read_profile(tmp_path / "absent.json")


def test_read_profile_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "onnxruntime_profile.json"
    path.write_text(json.dumps(PROFILE))
    assert read_profile(path).kernels["conv"].durations == pytest.approx([20e-6, 30e-6])


def chain_graph() -> Graph:
    """x -> Conv 'c' -> Relu (unnamed in the file: 'Relu_1') -> BatchNormalization '/s/bn'
    -> Mul '/s/bn/mul' -> y."""
    tensors = [
        Tensor("x", "input", [1, 3, 8, 8], "float32"),
        Tensor("w", "weight", [3, 3, 1, 1], "float32"),
        Tensor("c_out", "activation", [1, 3, 8, 8], "float32"),
        Tensor("r_out", "activation", [1, 3, 8, 8], "float32"),
        Tensor("bn_out", "activation", [1, 3, 8, 8], "float32"),
        Tensor("y", "output", [1, 3, 8, 8], "float32"),
    ]
    nodes = [
        Node("c", "Conv", [0, 1], [2]),
        Node("Relu_1", "Relu", [2], [3]),
        Node("/s/bn", "BatchNormalization", [3], [4], None, {"parent_id": "/s"}),
        Node("/s/bn/mul", "Mul", [4], [5], None, {"parent_id": "/s"}),
        Node("/s", "Scope", [], [], None, {"children_ids": ["/s/bn", "/s/bn/mul"]}),
    ]
    return Graph("g", "g", tensors, nodes, [0], [5])


def one_run(*kernels: tuple[str, str, float]) -> list[dict[str, Any]]:
    events = [run_event(0, 1000)]
    events += [node_event(f"{n}_kernel_time", 1 + k, d, op) for k, (n, op, d) in enumerate(kernels)]
    return events


def test_fused_and_renamed_kernels_find_their_nodes() -> None:
    graph = chain_graph()
    profile = parse_profile(
        one_run(
            ("r_out_nchwc", "Conv", 10),  # the NCHWc Conv named after the fused Relu's output
            ("bn_out_bn_nchwc", "Conv", 4),  # a BatchNormalization turned into a Conv
            ("/s/bn/mul/MatMulScaleFusion/_token_3", "FusedMatMul", 2),  # a scoped id
            ("ReorderOutput", "ReorderOutput", 1),
            ("/s/QuickGeluFusion/", "QuickGelu", 1),  # names a group, not a node that runs
        )
    )
    found = attribute(profile, graph)
    assert found.times == {"c": [10e-6], "/s/bn": [4e-6], "/s/bn/mul": [2e-6]}
    assert [k.name for k in found.unmatched] == ["ReorderOutput", "/s/QuickGeluFusion/"]
    count, time = found.matched_share(profile)
    assert count == pytest.approx(3 / 5) and time == pytest.approx(16 / 18)


def test_an_exact_name_wins_over_a_walk_back_and_kernels_of_one_node_add_up() -> None:
    graph = chain_graph()
    profile = parse_profile(
        one_run(("c", "Conv", 5), ("r_out_nchwc", "Conv", 3), ("fused Relu_1", "Relu", 2))
    )
    found = attribute(profile, graph)
    # 'c' is timed by name, so the NCHWc kernel stays with the Relu whose output names it
    assert found.times == {"c": [5e-6], "Relu_1": [pytest.approx(5e-6)]}
    assert found.kernels["Relu_1"] == ["fused Relu_1", "r_out_nchwc"]  # named ones first
    assert not found.unmatched


def test_an_if_keeps_its_own_time_without_its_branches() -> None:
    tensors = [Tensor("c", "input", [], "bool"), Tensor("y", "output", [2], "float32")]
    tensors += [Tensor("t", "activation", [2], "float32")]
    nodes = [
        Node("if", "If", [0], [1], None, {"children_ids": ["then_relu"]}),
        Node("then_relu", "Relu", [2], [1], None, {"parent_id": "if", "subgraph": "then"}),
    ]
    graph = Graph("g", "g", tensors, nodes, [0], [1])
    events = [run_event(0, 100), node_event("then_relu_kernel_time", 1, 4, "Relu")]
    events += [node_event("if_kernel_time", 0.5, 10, "If"), run_event(200, 100)]
    events += [node_event("if_kernel_time", 200.5, 3, "If")]  # the branch not taken
    found = attribute(parse_profile(events), graph)
    assert found.times["if"] == pytest.approx([6e-6, 3e-6])
    assert found.times["then_relu"] == pytest.approx([4e-6, None])
    medians = median_times(found.times)
    assert medians["then_relu"] == pytest.approx((4e-6, 1.0))  # over the runs it ran in
    assert medians["if"] == pytest.approx((4.5e-6, 2.0))
    assert median_times(found.times, first=1) == {"if": pytest.approx((3e-6, 1.0))}
