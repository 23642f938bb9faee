"""Model-local functions that stand for far more nodes than the file holds: calls are expanded
only as deep as a node budget allows, counted before expanding any; shape inference (which
expands every call in C++, past any Cancel) is not run on them; saving keeps the functions
of the calls left unexpanded."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from xocview.formats import registry
from xocview.formats.onnx import expansion

_OPSETS = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]


def _bomb(levels: int, path: Path) -> Path:
    """f0 .. f{levels-1}: each calls the next twice, the last is a Relu; the graph calls f0:
    2^(levels-1) Relus once expanded, in a file of a few KB."""
    fns = []
    for k in range(levels):
        if k == levels - 1:
            body = [helper.make_node("Relu", ["x"], ["y"])]
        else:
            body = [
                helper.make_node(f"f{k + 1}", ["x"], ["a"], domain="local"),
                helper.make_node(f"f{k + 1}", ["a"], ["y"], domain="local"),
            ]
        fns.append(helper.make_function("local", f"f{k}", ["x"], ["y"], body, _OPSETS))
    graph = helper.make_graph(
        [helper.make_node("f0", ["X"], ["Y"], domain="local")],
        "bomb",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])],
    )
    onnx.save(helper.make_model(graph, opset_imports=_OPSETS, functions=fns), path)
    return path


def _self_calling(path: Path) -> Path:
    """A function that calls itself: no end but the depth limit (one call a level, so the
    node budget is never what stops it)."""
    body = [
        helper.make_node("r", ["x"], ["a"], domain="local"),
        helper.make_node("Relu", ["a"], ["y"]),
    ]
    fn = helper.make_function("local", "r", ["x"], ["y"], body, _OPSETS)
    graph = helper.make_graph(
        [helper.make_node("r", ["X"], ["Y"], domain="local")],
        "rec",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])],
    )
    onnx.save(helper.make_model(graph, opset_imports=_OPSETS, functions=[fn]), path)
    return path


def test_plan_counts_before_expanding_and_names_the_cut_function(tmp_path: Path) -> None:
    model = onnx.load(_bomb(30, tmp_path / "bomb.onnx"))
    start = time.perf_counter()
    p = expansion.plan(model, budget=1000)
    assert time.perf_counter() - start < 1.0
    assert p.depth == 8 and p.nodes == 2**9 - 1  # 255 calls and 256 unexpanded f8 calls
    assert not p.infer  # 2^30 nodes fully expanded
    assert any("'local.f8'" in n and "1,000 nodes" in n for n in p.notes)
    assert any(n.startswith("shape inference not run") for n in p.notes)
    assert {k[1] for k in p.kept} == {f"f{k}" for k in range(8, 30)}


def test_a_small_model_with_functions_is_expanded_and_inferred(tmp_path: Path) -> None:
    p = expansion.plan(onnx.load(_bomb(5, tmp_path / "small.onnx")))
    # 31 call groups and 16 Relus, all expanded; inference runs
    assert (p.depth, p.nodes, p.infer, p.notes, p.kept) == (16, 47, True, (), ())


def test_a_30_level_bomb_loads_within_the_budget_without_inference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(expansion, "MAX_EXPANDED_NODES", 2000)
    called: list[object] = []
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", lambda *a, **k: called.append(a))
    path = _bomb(30, tmp_path / "bomb.onnx")
    assert path.stat().st_size < 4096
    start = time.perf_counter()
    graph = registry.load(path)
    assert time.perf_counter() - start < 10
    assert called == []
    assert len(graph.nodes) <= 2000
    cut = [n for n in graph.nodes if n.metadata.get("not_expanded")]
    assert cut and {n.op_type for n in cut} == {"f9"}  # depth 10 would make 2^11 - 1 nodes
    assert cut[0].metadata["function"] == {"domain": "local", "name": "f9"}
    notes = graph.metadata["reader_notes"]
    assert any("'local.f9'" in n and "not expanded" in n for n in notes)


def test_check_warns_and_skips_inference_on_a_bomb(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(expansion, "MAX_EXPANDED_NODES", 2000)
    path = _bomb(30, tmp_path / "bomb.onnx")
    start = time.perf_counter()
    _, findings = registry.check(path)
    assert time.perf_counter() - start < 10
    warnings = [f.message for f in findings if f.severity == "warning" and f.place == "functions"]
    assert any("'local.f9'" in w for w in warnings)
    assert any("shape inference not run" in w for w in warnings)
    assert not [f for f in findings if f.severity == "error"]


def test_a_self_calling_function_stops_at_the_depth_limit(tmp_path: Path) -> None:
    path = _self_calling(tmp_path / "rec.onnx")
    p = expansion.plan(onnx.load(path))
    assert p.depth == expansion.MAX_FUNCTION_DEPTH and not p.infer
    assert any("calls itself" in n for n in p.notes)
    assert any("'local.r' nested 16 deep" in n for n in p.notes)


def test_saving_keeps_the_functions_of_unexpanded_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ort = pytest.importorskip("onnxruntime")
    monkeypatch.setattr(expansion, "MAX_EXPANDED_NODES", 100)
    src = _bomb(10, tmp_path / "bomb.onnx")
    graph = registry.load(src)
    assert any(n.metadata.get("not_expanded") for n in graph.nodes)
    out = tmp_path / "out.onnx"
    registry.save(graph, out)
    model = onnx.load(out)
    assert {f.name for f in model.functions} == {f"f{k}" for k in range(10)}
    onnx.checker.check_model(model, full_check=True)
    x = np.array([-1, 2, -3, 4], np.float32)
    want = ort.InferenceSession(str(src)).run(None, {"X": x})[0]
    got = ort.InferenceSession(str(out)).run(None, {"X": x})[0]
    np.testing.assert_array_equal(got, want)
    again = registry.load(out)  # the notes are the reader's, not carried in the file
    assert again.metadata["reader_notes"] == graph.metadata["reader_notes"]


def test_saving_a_30_level_bomb_runs_no_inference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The saved file holds the whole bomb again: the writer's type refresh and check must
    not expand it either."""
    monkeypatch.setattr(expansion, "MAX_EXPANDED_NODES", 100)
    graph = registry.load(_bomb(30, tmp_path / "bomb.onnx"))
    out = tmp_path / "out.onnx"
    start = time.perf_counter()
    registry.save(graph, out)
    assert time.perf_counter() - start < 10
    model = onnx.load(out)
    assert len(model.functions) == 30
    onnx.checker.check_model(model)


def test_a_body_the_call_gives_that_refers_to_itself_is_walked_once(tmp_path: Path) -> None:
    """A call's graph attribute whose If refers (ref_attr_name) to that same attribute: the
    reader used to copy it into itself until Python's recursion limit."""

    def ref_if(out: str) -> onnx.NodeProto:
        node = helper.make_node("If", ["c"], [out])
        for name in ("then_branch", "else_branch"):
            a = node.attribute.add()
            a.name, a.ref_attr_name, a.type = name, "g", onnx.AttributeProto.GRAPH
        return node

    fn = helper.make_function("local", "F", ["c", "x"], ["y"], [ref_if("y")], _OPSETS)
    fn.attribute_proto.add(name="g", type=onnx.AttributeProto.GRAPH)
    given = helper.make_graph(
        [ref_if("z")], "given", [], [helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])]
    )
    graph = helper.make_graph(
        [helper.make_node("F", ["C", "X"], ["Y"], domain="local", g=given)],
        "g",
        [
            helper.make_tensor_value_info("C", TensorProto.BOOL, []),
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [4]),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])],
    )
    path = tmp_path / "ref.onnx"
    onnx.save(helper.make_model(graph, opset_imports=_OPSETS, functions=[fn]), path)
    loaded = registry.load(path)
    holders = [n for n in loaded.nodes if n.op_type == "If"]
    assert len(holders) == 3  # the body's If, and the given graph's If in each branch
    assert {n.metadata.get("subgraph") for n in holders} >= {"then_branch", "else_branch"}


def test_the_default_budget_is_in_proportion_to_the_file(tmp_path: Path) -> None:
    """A few-KB bomb expands to at most MIN_EXPANDED_NODES, and runs no inference; a file whose
    one layer function (400 nodes) is called by 272 calls expands in full and is inferred."""
    bomb = expansion.plan(onnx.load(_bomb(30, tmp_path / "bomb.onnx")))
    assert bomb.nodes <= expansion.MIN_EXPANDED_NODES and not bomb.infer
    layer = [
        helper.make_node("Relu", ["x" if i == 0 else f"t{i}"], [f"t{i + 1}"]) for i in range(399)
    ]
    layer.append(helper.make_node("Relu", ["t399"], ["y"]))
    fn = helper.make_function("local", "layer", ["x"], ["y"], layer, _OPSETS)
    calls = [
        helper.make_node("layer", [f"h{i}"], [f"h{i + 1}"], domain="local") for i in range(272)
    ]
    graph = helper.make_graph(
        calls,
        "stack",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("h272", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=_OPSETS, functions=[fn])
    stack = expansion.plan(model)
    assert stack.nodes == 272 * (400 + 1) and stack.infer and not stack.notes  # calls too
