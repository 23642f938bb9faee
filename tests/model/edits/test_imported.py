"""edits.import_values: a profile's values under one key of many nodes, one exact undo step."""

from __future__ import annotations

import copy

import pytest

from tests.model.conftest import graph, node, tensor
from xocview.errors import EditError
from xocview.model import Graph, edits

KEY = "performance.time.torch"


def sample() -> Graph:
    """a -> relu -> b -> neg -> c, in group "blk"; neg already holds an older torch time and
    relu a time of the bundled executor."""
    ts = [tensor("a", "input"), tensor("b"), tensor("c", "output")]
    nodes = [
        node("relu", "Relu", [0], [1], parent_id="blk", performance={"time": {"cpu": 1.5}}),
        node("neg", "Neg", [1], [2], parent_id="blk", performance={"time": {"torch": 9.0}}),
        node("blk", "Scope", children_ids=["relu", "neg"]),
    ]
    return graph(ts, nodes, [0], [2])


def test_the_values_replace_the_keys_old_ones_on_every_node() -> None:
    g = sample()
    edit = edits.import_values(g, KEY, {"relu": 0.25}, "import torch times")
    relu, neg, _ = g.nodes
    assert relu.metadata["performance"] == {"time": {"cpu": 1.5, "torch": 0.25}}
    assert "performance" not in neg.metadata  # the older import's value is gone, and its tables
    assert edit.description == "import torch times"


def test_one_undo_step_restores_the_graph_exactly() -> None:
    g = sample()
    before = copy.deepcopy(g)
    edit = edits.import_values(g, KEY, {"relu": 0.25, "neg": 0.5}, "import")
    assert g != before
    edit.revert(g)
    assert g == before
    assert [n.metadata for n in g.nodes] == [n.metadata for n in before.nodes]
    edit.apply(g)
    assert g.nodes[1].metadata["performance"]["time"]["torch"] == 0.5


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({}, "no values to store"),
        ({"relu": float("nan")}, "not a finite number"),
        ({"relu": "fast"}, "not a finite number"),
        ({"ghost": 1.0}, "ghost"),
    ],
)
def test_a_refused_import_changes_nothing(values: dict[str, object], message: str) -> None:
    g = sample()
    before = copy.deepcopy(g)
    with pytest.raises(EditError, match=message):
        edits.import_values(g, KEY, values, "import")  # type: ignore[arg-type]
    assert g == before
