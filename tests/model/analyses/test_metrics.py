"""Named metrics (performance.<name>): which a graph stores, and the values to colour by."""

from __future__ import annotations

import math

import numpy as np

from tests.model.conftest import graph, node, tensor
from xocview.model.analyses.metrics import metric_key, metric_mode, metric_names, node_metric


def sample():  # type: ignore[no-untyped-def]
    """outer { inner { a, b }, c }, d: a and b carry an error, the inner group its own."""
    ts = [tensor(f"t{k}") for k in range(5)]
    nodes = [
        node("a", "Relu", [0], [1], parent_id="inner", performance={"err": 0.5}),
        node(
            "b", "Relu", [1], [2], parent_id="inner", performance={"err": 2.0, "time": {"cpu": 1}}
        ),
        node("c", "Relu", [2], [3], parent_id="outer", performance={"err": -1.0}),
        node("d", "Relu", [3], [4], performance={"mem": 7, "flag": True}),
        node("inner", "Scope", parent_id="outer", children_ids=["a", "b"]),
        node("outer", "Scope", children_ids=["inner", "c"]),
    ]
    return graph(ts, nodes, [0], [4])


def test_the_named_metrics_are_the_numbers_beside_the_times() -> None:
    assert metric_names(sample()) == ["err", "mem"]  # not "time", not a boolean
    assert metric_key("err") == "performance.err" and metric_mode("err") == "metric:err"


def test_a_group_shows_its_own_value_or_its_largest_members() -> None:
    g = sample()
    g.nodes[4].metadata["performance"] = {"err": 0.1}  # inner's own value wins over its leaves'
    values = node_metric(g, "err")
    assert values[:3].tolist() == [0.5, 2.0, -1.0] and math.isnan(values[3])
    assert values[4] == 0.1
    assert values[5] == 0.1  # outer: the largest of inner (0.1) and c (-1.0)
    del g.nodes[4].metadata["performance"]
    assert node_metric(g, "err")[[4, 5]].tolist() == [2.0, 2.0]
    assert np.isnan(node_metric(g, "nothing")).all()
