"""If bodies nested deep, with many nodes: reading, checking and saving cost the nodes, not
the nodes times the depth (each level used to walk, copy or re-check everything below it)."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from xocview.formats import registry
from xocview.formats.onnx import nesting
from xocview.formats.onnx.check import _shallow


def _tree(depth: int, path: Path) -> Path:
    """A binary tree of If nodes ``depth`` deep (each branch holds the next If), one Add in
    each deepest branch: 2^(depth+1) - 1 nodes, every one inside bodies but the first If."""
    count = itertools.count()

    def branch(level: int) -> onnx.GraphProto:
        n = next(count)
        if level == depth:
            node = helper.make_node("Add", ["X", "X"], [f"v{n}"], name=f"add{n}")
        else:
            node = helper.make_node(
                "If",
                ["C"],
                [f"v{n}"],
                name=f"if{n}",
                then_branch=branch(level + 1),
                else_branch=branch(level + 1),
            )
        out = helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, [4])
        return helper.make_graph([node], f"b{n}", [], [out])

    onnx.save(_model(branch(0), "tree"), path)
    return path


def _model(top: onnx.GraphProto, name: str) -> onnx.ModelProto:
    """The top branch's nodes as a model reading X (float [4]) and C (the If condition)."""
    graph = helper.make_graph(
        list(top.node),
        name,
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [4]),
            helper.make_tensor_value_info("C", TensorProto.BOOL, []),
        ],
        list(top.output),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_saving_walks_each_subtree_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = registry.load(_tree(10, tmp_path / "tree.onnx"))
    visited = [0]
    walk = nesting.Nesting.subtree

    def counted(self: nesting.Nesting, i: int) -> list[int]:
        found = walk(self, i)
        visited[0] += len(found)
        return found

    monkeypatch.setattr(nesting.Nesting, "subtree", counted)
    out = tmp_path / "out.onnx"
    registry.save(graph, out)
    # Walking each holder's subtree at every level visits nodes x depth (~20k here).
    assert visited[0] <= len(graph.nodes)
    saved = onnx.load(out)
    onnx.checker.check_model(saved, full_check=True)
    assert sum(1 for _ in _all_nodes(saved.graph)) == len(graph.nodes)


def _all_nodes(g: onnx.GraphProto):  # type: ignore[no-untyped-def]
    for node in g.node:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attr.g)


def test_the_checker_gets_each_holder_without_its_bodies(tmp_path: Path) -> None:
    model = onnx.load(_tree(3, tmp_path / "tree.onnx"))
    node = model.graph.node[0]
    shallow = onnx.NodeProto.FromString(
        _shallow(node, [a for a in node.attribute if a.type == onnx.AttributeProto.GRAPH])
    )
    assert shallow.op_type == "If" and list(shallow.input) == ["C"]
    assert [a.name for a in shallow.attribute] == [a.name for a in node.attribute]
    assert all(len(a.g.node) == 0 and a.g.name for a in shallow.attribute)


def test_a_deep_tree_reads_checks_and_saves_in_bounded_time(tmp_path: Path) -> None:
    path = _tree(12, tmp_path / "tree.onnx")  # 8191 nodes, 12 levels of bodies
    start = time.perf_counter()
    graph = registry.load(path)
    _, findings = registry.check(path)
    registry.save(graph, tmp_path / "out.onnx")
    assert time.perf_counter() - start < 60  # about 3 s on a quiet machine
    assert len(graph.nodes) == 2**13 - 1
    assert not [f for f in findings if f.severity == "error"]


def _twin_tree(depth: int, path: Path) -> Path:
    """Like ``_tree``, but both branches of every If are one body: each name is made once per
    copy of its body (2^level makers), as ONNX allows and real exporters write."""

    def branch(level: int) -> onnx.GraphProto:
        name = f"v{level}"
        if level == depth:
            node = helper.make_node("Add", ["X", "X"], [name])
        else:
            inner = branch(level + 1)
            node = helper.make_node("If", ["C"], [name], then_branch=inner, else_branch=inner)
        out = helper.make_tensor_value_info(name, TensorProto.FLOAT, [4])
        return helper.make_graph([node], f"b{level}", [], [out])

    model = _model(branch(0), "twins")
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)
    return path


def test_names_reused_by_every_copy_of_a_body_read_check_save_and_run(tmp_path: Path) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the test yardstick")
    import numpy as np

    from xocview.executor import run

    path = _twin_tree(10, tmp_path / "twins.onnx")  # 2047 nodes; 'v10' has 1024 makers
    graph = registry.load(path)
    _, findings = registry.check(path)
    assert [str(f) for f in findings if f.severity == "error"] == []
    out = tmp_path / "out.onnx"
    registry.save(graph, out)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    x = np.arange(4, dtype=np.float32)
    feeds = {"X": x, "C": np.array(True)}
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
    got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(run(graph, feeds).outputs["v0"], want[0])


def test_a_second_maker_in_one_body_is_still_an_error(tmp_path: Path) -> None:
    path = _twin_tree(2, tmp_path / "twins.onnx")
    model = onnx.load(path)
    body = model.graph.node[0].attribute[0].g  # then_branch of the top If
    body.node.append(helper.make_node("Identity", ["X"], ["v1"], name="again"))
    onnx.save(model, path)
    _, findings = registry.check(path)
    assert any(
        f.severity == "error" and "tensor 'v1' is already produced" in f.message for f in findings
    )
