"""Tests of xocview/model/analyses/diff: matching two graphs and what the comparison reports."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import corpus_path
from tests.model.analyses.onnx_edits import EDITS, LIGHT_MODELS, edited_copy, light
from xocview.formats import load
from xocview.formats.registry import save
from xocview.model import Graph, Node, Tensor
from xocview.model.analyses.diff import (
    ABSENT,
    ADDED,
    CHANGED,
    INPUT_ADDED,
    INPUT_CHANGED,
    KINDS,
    NODE_ADDED,
    NODE_CHANGED,
    NODE_REMOVED,
    OUTPUT_CHANGED,
    OUTPUT_REMOVED,
    REMOVED,
    SAME,
    STATUS_NAMES,
    TENSOR_RENAMED,
    Change,
    GraphDiff,
    diff_graphs,
    shown_status,
    time_ratios,
)

pytestmark = pytest.mark.skipif(not LIGHT_MODELS, reason="the onnx package ships no light models")


def net(
    *lines: str,
    inputs: tuple[str, ...] = ("x",),
    outputs: tuple[str, ...] = ("y",),
    weights: tuple[str, ...] = (),
    attrs: dict[str, dict[str, Any]] | None = None,
    meta: dict[str, dict[str, Any]] | None = None,
    shapes: dict[str, list[int]] | None = None,
) -> Graph:
    """A graph written as ``"id: Op a, b -> c"`` lines (tensors made on first mention)."""
    tensors: list[Tensor] = []
    where: dict[str, int] = {}

    def t(name: str) -> int:
        if name not in where:
            kind = (
                "input"
                if name in inputs
                else "output"
                if name in outputs
                else "weight"
                if name in weights
                else "activation"
            )
            where[name] = len(tensors)
            tensors.append(Tensor(name, kind, list((shapes or {}).get(name, [1, 8])), "float32"))
        return where[name]

    for name in (*inputs, *weights):
        t(name)
    nodes = []
    for line in lines:
        nid, _, rest = line.partition(":")
        op, _, io = rest.strip().partition(" ")
        ins, _, outs = io.partition("->")
        nodes.append(
            Node(
                nid.strip(),
                op,
                [t(s.strip()) for s in ins.split(",") if s.strip()],
                [t(s.strip()) for s in outs.split(",") if s.strip()],
                dict((attrs or {}).get(nid.strip(), {})),
                dict((meta or {}).get(nid.strip(), {})),
            )
        )
    return Graph("g", "g", tensors, nodes, [where[i] for i in inputs], [where[o] for o in outputs])


def kinds(diff: GraphDiff) -> list[str]:
    return [f.kind for f in diff.findings]


def check_maps(diff: GraphDiff) -> None:
    """The node and tensor maps are one-to-one and each other's inverse."""
    for there, back in (
        (diff.node_map, diff.node_map_back),
        (diff.tensor_map, diff.tensor_map_back),
    ):
        hit = there[there >= 0]
        assert len(np.unique(hit)) == len(hit)
        assert np.array_equal(back[hit], np.flatnonzero(there >= 0))


# -- real models ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", LIGHT_MODELS, ids=lambda p: p.stem)
def test_every_light_model_equals_itself(path: Path) -> None:
    old, new = load(path), load(path)
    diff = diff_graphs(old, new)
    assert diff.findings == ()
    assert diff.equal and diff.follow_on == ()
    sections = np.array([n.metadata.get("derived") == "section" for n in old.nodes])
    assert np.array_equal(diff.node_map[~sections], np.flatnonzero(~sections))
    assert np.array_equal(diff.tensor_map, np.arange(len(old.tensors)))
    assert not diff.old_status.any() and not diff.new_status.any()


@pytest.mark.parametrize("model", sorted(EDITS))
def test_a_bypass_an_attribute_and_a_rename_are_exactly_three_findings(
    model: str, tmp_path: Path
) -> None:
    bypass, attr_op, attr = EDITS[model]
    edits = edited_copy(light(model), tmp_path / "edited.onnx", bypass, attr_op, attr)
    old, new = load(light(model)), load(tmp_path / "edited.onnx")
    diff = diff_graphs(old, new)
    assert kinds(diff) == [NODE_REMOVED, NODE_CHANGED, TENSOR_RENAMED], [
        f.text() for f in diff.findings
    ]
    removed, changed, renamed = diff.findings
    producer = old.index.producer
    bypassed = old.nodes[producer[old.index.tensor_position(edits.bypassed_output)]]
    assert (removed.old_id, removed.subject) == (bypassed.id, bypass)
    target = old.nodes[producer[old.index.tensor_position(edits.changed_output)]]
    assert changed.old_id == target.id and changed.subject == attr_op
    (change,) = changed.changes
    assert (change.what, change.key) == ("attribute", attr)
    assert change.old == pytest.approx(edits.old_value) and change.new == pytest.approx(
        edits.new_value
    )
    assert (renamed.old_id, renamed.new_id) == edits.renamed
    check_maps(diff)
    leaves_a = [i for i, n in enumerate(old.nodes) if "derived" not in n.metadata]
    leaves_b = [j for j, n in enumerate(new.nodes) if "derived" not in n.metadata]
    assert sorted(diff.old_status[leaves_a].tolist()).count(SAME) == len(leaves_a) - 2
    assert diff.old_status[old.index.node_position(bypassed.id)] == REMOVED
    assert diff.old_status[old.index.node_position(target.id)] == CHANGED
    assert diff.new_status[leaves_b].tolist().count(CHANGED) == 1
    assert ADDED not in diff.new_status[leaves_b].tolist()


def test_every_corpus_file_equals_itself_and_its_xoc_json_conversion(tmp_path: Path) -> None:
    files = [
        p
        for p in sorted(corpus_path().rglob("*"))
        if p.suffix in (".json", ".onnx") and "INVALID" not in p.name
    ]
    assert files
    for path in files:
        assert diff_graphs(load(path), load(path)).findings == (), path.name
        out = tmp_path / f"{path.stem}.xoc.json"
        save(load(path), out)
        assert diff_graphs(load(path), load(out)).findings == (), path.name


@pytest.mark.parametrize("path", LIGHT_MODELS, ids=lambda p: p.stem)
def test_a_model_and_its_xoc_json_conversion_are_equal(path: Path, tmp_path: Path) -> None:
    save(load(path), tmp_path / "converted.json")
    diff = diff_graphs(load(path), load(tmp_path / "converted.json"))
    assert diff.findings == ()
    assert len(diff.renamed_nodes()) == 0


# -- what is reported, on small graphs ------------------------------------------------------------

CHAIN = ("a: Conv x, w -> t1", "b: Relu t1 -> t2", "c: Conv t2, v -> t3", "d: Sigmoid t3 -> y")


def chain(*lines: str, **kw: Any) -> Graph:
    return net(*(lines or CHAIN), weights=("w", "v"), **kw)


def test_an_operator_replaced_in_place_is_one_change_of_op_type() -> None:
    new = chain(
        "a: Conv x, w -> t1", "act: Tanh t1 -> t2", "c: Conv t2, v -> t3", "d: Sigmoid t3 -> y"
    )
    diff = diff_graphs(chain(), new)
    (f,) = diff.findings
    assert (f.kind, f.old_id, f.new_id) == (NODE_CHANGED, "b", "act")
    assert f.changes == (Change("op_type", "", "Relu", "Tanh"),)


def test_an_inserted_node_is_one_finding_and_its_reader_is_not_changed() -> None:
    new = chain(
        "a: Conv x, w -> t1",
        "b: Relu t1 -> t2",
        "extra: Identity t2 -> t2b",
        "c: Conv t2b, v -> t3",
        "d: Sigmoid t3 -> y",
    )
    diff = diff_graphs(chain(), new)
    assert [(f.kind, f.new_id) for f in diff.findings] == [(NODE_ADDED, "extra")]
    assert diff.findings[0].old_nodes == ("b", "c")  # where it goes, on the old side
    assert diff.new_status.tolist() == [SAME, SAME, ADDED, SAME, SAME]


def test_a_bypass_that_renames_nodes_is_matched_by_structure() -> None:
    """Positional ids shift after a removal: the same id now names the next node."""
    old = chain(
        "n0: Conv x, w -> t1", "n1: Relu t1 -> t2", "n2: Conv t2, v -> t3", "n3: Sigmoid t3 -> y"
    )
    new = chain("n0: Conv x, w -> t1", "n1: Conv t1, v -> t3", "n2: Sigmoid t3 -> y")
    diff = diff_graphs(old, new)
    assert [(f.kind, f.old_id) for f in diff.findings] == [(NODE_REMOVED, "n1")]
    assert diff.node_map.tolist() == [0, -1, 1, 2]


def test_swapped_operands_of_a_commutative_op_are_no_change() -> None:
    old = net("m: MatMul x, w -> t", "add: Add t, bias -> y", weights=("w", "bias"))
    new = net("mm: MatMul x, w -> t", "plus: Add bias, t -> y", weights=("w", "bias"))
    diff = diff_graphs(old, new)
    assert diff.findings == ()
    assert diff.node_map.tolist() == [0, 1]


def test_a_rewired_input_is_a_change_of_the_reader() -> None:
    old = net("a: Relu x -> t1", "b: Neg t1 -> t2", "c: Add t1, t2 -> y")
    new = net("a: Relu x -> t1", "b: Neg t1 -> t2", "c: Add t2, t2 -> y")
    (f,) = diff_graphs(old, new).findings
    assert f.kind == NODE_CHANGED and f.old_id == "c"
    assert [(c.what, c.where) for c in f.changes] == [("input", "input[0]")]


def test_a_new_batch_size_is_the_inputs_and_outputs_change_not_every_node() -> None:
    shapes_old = {"x": [1, 8], "t1": [1, 8], "t2": [1, 8], "t3": [1, 8], "y": [1, 8]}
    shapes_new = {k: [4, 8] for k in shapes_old}
    diff = diff_graphs(chain(shapes=shapes_old), chain(shapes=shapes_new))
    assert kinds(diff) == [INPUT_CHANGED, OUTPUT_CHANGED]
    assert diff.findings[0].changes == (Change("shape", "", [1, 8], [4, 8]),)
    assert diff.follow_on == ("a", "b", "c")
    assert not diff.old_status.any()


def test_a_weight_of_another_shape_is_a_change_of_its_reader() -> None:
    diff = diff_graphs(chain(shapes={"w": [8, 8]}), chain(shapes={"w": [8, 4]}))
    (f,) = diff.findings
    assert f.old_id == "a"
    assert [(c.what, c.where, c.tensor) for c in f.changes] == [("shape", "input[1]", "w")]


def test_a_renamed_graph_input_is_one_rename() -> None:
    new = net(
        *[line.replace("x,", "image,") for line in CHAIN], inputs=("image",), weights=("w", "v")
    )
    diff = diff_graphs(chain(), new)
    assert [(f.kind, f.old_id, f.new_id) for f in diff.findings] == [(TENSOR_RENAMED, "x", "image")]


def test_graph_inputs_and_outputs_added_and_removed() -> None:
    old = net("a: Relu x -> y", "b: Neg x -> z", outputs=("y", "z"))
    new = net("a: Add x, mask -> y", inputs=("x", "mask"))
    diff = diff_graphs(old, new)
    found = [(f.kind, f.old_id or f.new_id) for f in diff.findings]
    assert (INPUT_ADDED, "mask") in found and (OUTPUT_REMOVED, "z") in found
    assert (NODE_REMOVED, "b") in found
    changed = next(f for f in diff.findings if f.kind == NODE_CHANGED)
    assert [c.what for c in changed.changes] == ["op_type", "inputs"]


def test_attribute_and_metadata_keys_are_named() -> None:
    old = chain(attrs={"a": {"strides": [1, 1]}}, meta={"c": {"source": {"line": 3}}})
    new = chain(attrs={"a": {"strides": [2, 2], "group": 1}}, meta={"c": {"source": {"line": 4}}})
    diff = diff_graphs(old, new)
    assert [f.old_id for f in diff.findings] == ["a", "c"]
    assert diff.findings[0].changes == (
        Change("attribute", "strides", [1, 1], [2, 2]),
        Change("attribute", "group", ABSENT, 1),
    )
    assert diff.findings[1].changes == (Change("metadata", "source.line", 3, 4),)
    assert diff.findings[0].changes[1].text() == "attribute group: added 1"


def test_times_of_two_runs_are_no_change_but_are_compared() -> None:
    old = chain(meta={k: {"performance": {"time": {"cpu": 2.0}}} for k in "abcd"})
    new = chain(meta={k: {"performance": {"time": {"cpu": 1.0}}} for k in "abcd"})
    diff = diff_graphs(old, new)
    assert diff.equal
    assert diff.times == {"cpu": {"old_ms": 8.0, "new_ms": 4.0, "nodes": 4}}


def test_a_group_loses_a_child_without_being_reported() -> None:
    def grouped(*lines: str) -> Graph:
        g = chain(*lines)
        kids = [n.id for n in g.nodes if n.id in ("b", "c")]
        for n in g.nodes:
            if n.id in kids:
                n.metadata["parent_id"] = "blk"
        g.nodes.append(Node("blk", "Block", [], [], {}, {"children_ids": kids}))
        g.invalidate()
        return g

    old = grouped(*CHAIN)
    new = grouped("a: Conv x, w -> t1", "c: Conv t1, v -> t3", "d: Sigmoid t3 -> y")
    diff = diff_graphs(old, new)
    assert [(f.kind, f.old_id) for f in diff.findings] == [(NODE_REMOVED, "b")]
    assert diff.node_map[4] == 3  # the group is matched


def test_a_new_group_is_one_finding() -> None:
    new = chain()
    new.nodes[1].metadata["parent_id"] = "blk"
    new.nodes.append(Node("blk", "Block", [], [], {}, {"children_ids": ["b"]}))
    new.invalidate()
    diff = diff_graphs(chain(), new)
    assert [(f.kind, f.new_id) for f in diff.findings] == [(NODE_ADDED, "blk")]


def test_the_json_report_has_the_documented_keys(tmp_path: Path) -> None:
    edited_copy(light("bvlc_alexnet"), tmp_path / "e.onnx", *EDITS["bvlc_alexnet"])
    diff = diff_graphs(load(light("bvlc_alexnet")), load(tmp_path / "e.onnx"))
    report = json.loads(json.dumps(diff.to_json()))
    assert report["format"] == "xocview-diff" and report["version"] == 1
    assert set(report) == {
        "format", "version", "equal", "old", "new", "counts", "matched", "findings",
        "renamed_nodes", "follow_on_shapes", "times",
    }  # fmt: skip
    assert report["equal"] is False
    assert list(report["counts"]) == list(KINDS)
    assert sum(report["counts"].values()) == len(report["findings"]) == 3
    changed = next(f for f in report["findings"] if f["kind"] == NODE_CHANGED)
    assert changed["changes"] == [
        {
            "what": "attribute",
            "key": "alpha",
            "old": pytest.approx(1e-4),
            "new": pytest.approx(2e-4),
        }
    ]
    assert changed["old_nodes"] == [changed["old"]] and changed["new_nodes"] == [changed["new"]]
    removed = next(f for f in report["findings"] if f["kind"] == NODE_REMOVED)
    assert "new" not in removed and removed["new_nodes"]  # where it was, on the new side
    assert report["matched"]["nodes"] == 39
    assert STATUS_NAMES[REMOVED] == "removed"


# -- properties ------------------------------------------------------------------------------------

OPS = ("Relu", "Add", "Mul", "Conv", "Concat", "Sigmoid")


@st.composite
def dags(draw: st.DrawFn) -> Graph:
    """A random DAG of a few op types: each node reads one to three earlier tensors."""
    n = draw(st.integers(min_value=1, max_value=25))
    tensors = [Tensor("in", "input", [1, 4], "float32")]
    nodes = []
    for i in range(n):
        reads = draw(st.lists(st.integers(0, len(tensors) - 1), min_size=1, max_size=3))
        op = draw(st.sampled_from(OPS))
        axis = {"axis": draw(st.integers(0, 1))} if op == "Concat" else {}
        tensors.append(Tensor(f"t{i}", "activation", [1, 4], "float32"))
        nodes.append(Node(f"n{i}", op, reads, [len(tensors) - 1], axis))
    tensors[-1].kind = "output"
    return Graph("g", "g", tensors, nodes, [0], [len(tensors) - 1])


def relabelled(g: Graph, seed: int) -> Graph:
    """``g`` with fresh node ids in a shuffled file order that is still topological."""
    rng = random.Random(seed)
    nodes = [
        Node(f"q{rng.random():.12f}", n.op_type, n.inputs, n.outputs, n.attributes) for n in g.nodes
    ]
    order = list(range(len(nodes)))
    # swap neighbours that do not depend on each other: the order stays topological
    for _ in range(len(nodes)):
        k = rng.randrange(max(len(nodes) - 1, 1))
        if k + 1 < len(nodes) and not set(nodes[order[k]].outputs) & set(
            nodes[order[k + 1]].inputs
        ):
            order[k], order[k + 1] = order[k + 1], order[k]
    return Graph("g", "g", g.tensors, [nodes[i] for i in order], g.inputs, g.outputs)


@settings(max_examples=60, deadline=None)
@given(dags(), st.integers(0, 2**16))
def test_relabelled_ids_are_fully_matched(g: Graph, seed: int) -> None:
    other = relabelled(g, seed)
    diff = diff_graphs(g, other)
    assert diff.findings == ()
    assert diff.matched_nodes() == len(g.nodes)
    check_maps(diff)
    for i, j in enumerate(diff.node_map.tolist()):
        assert other.nodes[j].op_type == g.nodes[i].op_type


@settings(max_examples=60, deadline=None)
@given(dags(), st.data())
def test_bypassing_any_node_is_one_finding(g: Graph, data: st.DataObject) -> None:
    """A node removed and its readers given its first input: that removal, nothing else."""
    out = g.outputs[0]
    gone = data.draw(st.sampled_from([n for n in g.nodes if n.outputs[0] != out] or [None]))
    if gone is None:
        return
    x, y = gone.inputs[0], gone.outputs[0]
    kept = [
        Node(n.id, n.op_type, [x if t == y else t for t in n.inputs], n.outputs, n.attributes)
        for n in g.nodes
        if n is not gone
    ]
    diff = diff_graphs(g, Graph("g", "g", g.tensors, kept, g.inputs, g.outputs))
    assert [(f.kind, f.old_id) for f in diff.findings] == [(NODE_REMOVED, gone.id)]


# -- what a side-by-side view colours by -------------------------------------------------------


def _in_a_block(g: Graph) -> Graph:
    """``g`` with its nodes b and c in a group "blk" (appended last)."""
    for n in g.nodes:
        if n.id in ("b", "c"):
            n.metadata["parent_id"] = "blk"
    g.nodes.append(Node("blk", "Block", [], [], {}, {"children_ids": ["b", "c"]}))
    g.invalidate()
    return g


def test_a_group_holding_a_difference_shows_changed() -> None:
    def grouped(*lines: str) -> Graph:
        return _in_a_block(chain(*lines))

    old = grouped(*CHAIN)
    new = grouped(
        "a: Conv x, w -> t1", "b: Tanh t1 -> t2", "c: Conv t2, v -> t3", "d: Sigmoid t3 -> y"
    )
    diff = diff_graphs(old, new)
    assert diff.old_status.tolist() == [SAME, CHANGED, SAME, SAME, SAME]  # own statuses
    assert shown_status(diff, True).tolist() == [SAME, CHANGED, SAME, SAME, CHANGED]
    assert shown_status(diff, False).tolist() == [SAME, CHANGED, SAME, SAME, CHANGED]


def test_time_ratios_of_two_runs_per_node_and_per_group() -> None:
    def timed(times: dict[str, float]) -> Graph:
        meta = {k: {"performance": {"time": {"cpu": v}}} for k, v in times.items()}
        return _in_a_block(chain(meta=meta))

    old = timed({"a": 1.0, "b": 2.0, "c": 2.0, "d": 4.0})
    new = timed({"a": 2.0, "b": 1.0, "c": 5.0})  # d has no time in the new run
    ratio_old, ratio_new = time_ratios(diff_graphs(old, new), "cpu")
    assert ratio_old[:4].tolist()[:3] == [2.0, 0.5, 2.5] and np.isnan(ratio_old[3])
    assert ratio_old[4] == pytest.approx(6.0 / 4.0)  # the group: (1 + 5) / (2 + 2)
    np.testing.assert_array_equal(ratio_new, ratio_old)
