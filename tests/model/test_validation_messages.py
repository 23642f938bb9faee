"""xocview/model/validate.py: every kind of finding, from a malformed file, message checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xocview.formats import check
from xocview.model import Graph, Node, Tensor, validate


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": "g",
        "name": "g",
        "tensors": [
            {"id": "x", "name": "input", "shape": [1, 4], "dtype": "float32"},
            {"id": "a", "name": "activation", "shape": [1, 4], "dtype": "float32"},
            {"id": "y", "name": "output", "shape": [1, 4], "dtype": "float32"},
        ],
        "nodes": [
            {"id": "n0", "name": "Relu", "inputs": [0], "outputs": [1], "attributes": {}},
            {"id": "n1", "name": "Neg", "inputs": [1], "outputs": [2], "attributes": {}},
        ],
        "inputs": [0],
        "outputs": [2],
        "metadata": {},
    }
    doc.update(changes)
    return doc


def _findings(tmp_path: Path, doc: dict[str, Any]) -> list[str]:
    path = tmp_path / "model.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    _, found = check(path)
    return [str(f) for f in found]


def _with_nodes(*nodes: dict[str, Any], **changes: Any) -> dict[str, Any]:
    doc = _doc(**changes)
    doc["nodes"] = list(nodes)
    return doc


def _node(nid: str, op: str, ins: list[int], outs: list[int], **meta: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"id": nid, "name": op, "inputs": ins, "outputs": outs, "attributes": {}}
    if meta:
        node["metadata"] = meta
    return node


CASES = [
    ("a valid graph", _doc(), []),
    (
        "index out of range",
        _with_nodes(_node("n0", "Relu", [0, 7], [1]), _node("n1", "Neg", [1], [2])),
        ["nodes[0].inputs[1]: error: tensor index 7 out of range (3 tensors)"],
    ),
    (
        "duplicate tensor id",
        _doc(
            tensors=[
                {"id": "x", "name": "input", "shape": [1, 4], "dtype": "float32"},
                {"id": "x", "name": "activation", "shape": [1, 4], "dtype": "float32"},
                {"id": "y", "name": "output", "shape": [1, 4], "dtype": "float32"},
            ]
        ),
        ["tensors[1].id: error: duplicate id 'x' (first at tensors[0])"],
    ),
    (
        "duplicate node id",
        _with_nodes(_node("n0", "Relu", [0], [1]), _node("n0", "Neg", [1], [2])),
        ["nodes[1].id: error: duplicate id 'n0' (first at nodes[0])"],
    ),
    (
        "produced twice",
        _with_nodes(
            _node("n0", "Relu", [0], [1]),
            _node("n1", "Neg", [0], [1]),
            _node("n2", "Abs", [1], [2]),
        ),
        [
            "nodes[1].outputs[0]: error: tensor 'a' is already produced by nodes[0] 'n0'; "
            "a tensor has one producer"
        ],
    ),
    (
        "cycle",
        _with_nodes(_node("n0", "Add", [0, 2], [1]), _node("n1", "Neg", [1], [2])),
        ["nodes[0]: error: cycle through 2 nodes: 'n0' -> 'n1' -> 'n0'"],
    ),
    (
        "parent_id names no node",
        _with_nodes(_node("n0", "Relu", [0], [1], parent_id="ghost"), _node("n1", "Neg", [1], [2])),
        ["nodes[0].metadata.parent_id: error: parent 'ghost' is not a node id"],
    ),
    (
        "parent without the child",
        _with_nodes(
            _node("g", "Block", [], [], children_ids=[]),
            _node("n0", "Relu", [0], [1], parent_id="g"),
            _node("n1", "Neg", [1], [2]),
        ),
        [
            "nodes[1].metadata.parent_id: error: parent 'g' (nodes[0]) does not list 'n0' in its "
            "children_ids"
        ],
    ),
    (
        "child without the parent",
        _with_nodes(
            _node("g", "Block", [], [], children_ids=["n0"]),
            _node("n0", "Relu", [0], [1]),
            _node("n1", "Neg", [1], [2]),
        ),
        [
            "nodes[0].metadata.children_ids[0]: error: child 'n0' (nodes[1]) does not name 'g' as "
            "its parent_id"
        ],
    ),
    (
        "hierarchy cycle",
        _with_nodes(
            _node("g1", "Block", [], [], children_ids=["g2"], parent_id="g2"),
            _node("g2", "Block", [], [], children_ids=["g1"], parent_id="g1"),
            _node("n0", "Relu", [0], [1]),
            _node("n1", "Neg", [1], [2]),
        ),
        ["nodes[0].metadata.parent_id: error: hierarchy cycle: 'g1' -> 'g2' -> 'g1'"],
    ),
    (
        "attribute outside the schema",
        _with_nodes(
            {"id": "n0", "name": "Relu", "inputs": [0], "outputs": [1], "attributes": {"alpha": 1}},
            _node("n1", "Neg", [1], [2]),
        ),
        [
            "nodes[0].attributes.alpha: error: 'alpha' is not an attribute of ONNX Relu; "
            "non-schema attributes belong in metadata"
        ],
    ),
    (
        "dangling input",
        _with_nodes(_node("n1", "Neg", [1], [2])),
        ["tensors[1]: warning: activation 'a' is consumed but never produced (dangling input)"],
    ),
]


@pytest.mark.parametrize(("doc", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_fault_is_found_at_its_place(
    tmp_path: Path, doc: dict[str, Any], expected: list[str]
) -> None:
    assert _findings(tmp_path, doc) == expected


def test_five_faults_give_five_located_findings() -> None:
    sample = Path(__file__).resolve().parents[2] / "sample_graphs" / "broken" / "five_faults.json"
    _, found = check(sample)
    errors = [f for f in found if f.severity == "error"]
    assert [f.place for f in errors] == [
        "nodes[0].inputs[1]",
        "tensors[3].id",
        "nodes[3].outputs[0]",
        "nodes[1]",
        "nodes[4].metadata.parent_id",
    ]


def test_validate_reports_out_of_range_on_a_model_built_in_code() -> None:
    g = Graph(
        "g", "g", [Tensor("x", "input", [1], "float32")], [Node("n", "Relu", [0], [3])], [0], [5]
    )
    assert [str(f) for f in validate(g)] == [
        "nodes[0].outputs[0]: error: tensor index 3 out of range (1 tensors)",
        "outputs[0]: error: tensor index 5 out of range (1 tensors)",
    ]


def test_unknown_kind_dtype_and_bad_dims_in_a_model_built_in_code() -> None:
    g = Graph("g", "g", [Tensor("x", "bias", [1, -2], "float99")], [], [], [])
    assert [str(f) for f in validate(g)] == [
        "tensors[0].name: error: unknown kind 'bias'; expected one of input, output, weight, "
        "activation",
        "tensors[0].dtype: error: unknown dtype 'float99'",
        "tensors[0].shape[1]: error: dimension -2 is not an integer >= -1 (-1 marks an unknown "
        "size)",
    ]
