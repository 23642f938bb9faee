"""edits.record_run: a run's times and the shapes it measured, one undo step."""

from __future__ import annotations

import copy

import pytest

from tests.model.conftest import graph, node, tensor
from xocview.errors import EditError
from xocview.model import Graph, edits
from xocview.model.edits.run import SHAPE_SOURCE_KEY


def sample() -> Graph:
    """x[N, 8] (N symbolic) -> Relu -> h (nothing known) -> Add(h, w[?]) -> y[-1, 8]."""
    x = tensor("x", "input", [-1, 8], shape_symbols=["N", None])
    h = tensor("h", shape=[], rank_unknown=True)
    w = tensor("w", "weight", [-1])
    y = tensor("y", "output", [-1, 8])
    h.dtype = w.dtype = "undefined"
    nodes = [node("relu", "Relu", [0], [1]), node("add", "Add", [1, 2], [3])]
    return graph([x, h, w, y], nodes, [0], [3])


MEASURED = {
    "x": ([2, 8], "float32"),
    "h": ([2, 8], "float32"),
    "w": ([8], "float32"),
    "y": ([2, 8], "float32"),
    "gone": ([1], "float32"),  # a tensor the graph no longer has: skipped
}


def test_unknown_shapes_and_dtypes_are_filled_and_say_where_from() -> None:
    g = sample()
    edits.record_run(g, "performance.time.cpu", {"relu": 0.5, "add": 0.25}, MEASURED, "run")
    x, h, w, y = g.tensors
    assert x.shape == [-1, 8] and SHAPE_SOURCE_KEY not in x.metadata  # a named symbol stays
    assert (h.shape, h.dtype) == ([2, 8], "float32")
    assert h.metadata == {SHAPE_SOURCE_KEY: "run"}  # rank_unknown is gone
    assert (w.shape, w.dtype, w.metadata[SHAPE_SOURCE_KEY]) == ([8], "float32", "run")
    assert y.shape == [2, 8] and y.metadata[SHAPE_SOURCE_KEY] == "run"  # unnamed: measured
    assert g.nodes[0].metadata["performance"] == {"time": {"cpu": 0.5}}


def test_one_undo_step_restores_everything() -> None:
    g = sample()
    before = copy.deepcopy(g)
    edit = edits.record_run(g, "performance.time.cpu", {"relu": 0.5}, MEASURED, "run")
    assert edit.description == "run and the measured shapes of 3 tensors"  # h, w and y
    assert g != before
    edit.revert(g)
    assert g == before
    edit.apply(g)
    assert g.tensors[1].shape == [2, 8]


def test_known_shapes_and_other_ranks_are_left_alone() -> None:
    g = sample()
    g.tensors[3].shape = [4, 8]
    before = copy.deepcopy(g.tensors[3])
    measured = {"y": ([2, 8], "float32"), "x": ([2, 8, 1], "float32")}
    edits.record_run(g, "performance.time.cpu", {}, measured, "run")
    assert g.tensors[3] == before  # fully known: the run's batch does not overwrite it
    assert g.tensors[0].shape == [-1, 8]  # another rank than declared: not ours to decide


def test_a_bad_time_refuses_the_whole_edit() -> None:
    g = sample()
    before = copy.deepcopy(g)
    with pytest.raises(EditError, match="nope"):
        edits.record_run(g, "performance.time.cpu", {"nope": 1.0}, MEASURED, "run")
    assert g == before
