"""Stored times of several engines on one graph: which engines a graph has, each one's times."""

from __future__ import annotations

import numpy as np

from xocview.model import Graph, Node, Tensor
from xocview.model.analyses.profile import (
    ORT_TIME_KEY,
    TIME_KEY,
    TIME_KEYS,
    engine_label,
    node_times_ms,
    own_times_ms,
    stored_time,
    time_key,
    time_sources,
)


def timed_graph() -> Graph:
    """x -> a -> b (grouped in 'block') -> y; 'a' timed by both engines, 'b' by onnxruntime only
    (with a bad cpu value), the group by nobody."""
    tensors = [
        Tensor("x", "input", [2], "float32"),
        Tensor("t", "activation", [2], "float32"),
        Tensor("y", "output", [2], "float32"),
    ]
    both = {"cpu": 2.0, "onnxruntime": 0.5}
    nodes = [
        Node("a", "Relu", [0], [1], None, {"parent_id": "block", "performance": {"time": both}}),
        Node(
            "b",
            "Relu",
            [1],
            [2],
            None,
            {"parent_id": "block", "performance": {"time": {"cpu": -1, "onnxruntime": 0.25}}},
        ),
        Node("block", "Block", [], [], None, {"children_ids": ["a", "b"]}),
    ]
    return Graph("g", "g", tensors, nodes, [0], [2])


def test_the_keys_live_in_the_model() -> None:
    assert TIME_KEY == time_key() == "performance.time.cpu"
    assert ORT_TIME_KEY == time_key("onnxruntime") == "performance.time.onnxruntime"
    assert TIME_KEYS == {"xocview": TIME_KEY, "onnxruntime": ORT_TIME_KEY}
    assert [engine_label(e) for e in ("cpu", "onnxruntime", "gpu")] == [
        "xocview",
        "onnxruntime",
        "gpu",
    ]


def test_each_engine_reads_its_own_times_and_cpu_stays_the_default() -> None:
    g = timed_graph()
    cpu = node_times_ms(g)
    assert cpu.tolist()[:1] == [2.0] and np.isnan(cpu[1]) and cpu[2] == 2.0
    assert np.array_equal(cpu, node_times_ms(g, engine="cpu"), equal_nan=True)
    assert node_times_ms(g, engine="onnxruntime").tolist() == [0.5, 0.25, 0.75]
    assert np.isnan(own_times_ms(g, "onnxruntime")[2])  # a plain group has no time of its own
    assert stored_time(g.nodes[0].metadata, "onnxruntime") == 0.5
    assert np.isnan(stored_time(g.nodes[0].metadata, "gpu"))
    assert not np.isfinite(node_times_ms(g, engine="gpu")).any()


def test_time_sources_lists_the_engines_with_times_cpu_first() -> None:
    g = timed_graph()
    assert time_sources(g) == ["cpu", "onnxruntime"]
    g.nodes[1].metadata["performance"]["time"]["gpu"] = 1.0
    g.nodes[1].metadata["performance"]["time"]["flag"] = True  # not a time
    g.nodes[0].metadata["performance"]["time"]["cpu"] = "fast"  # nor this
    assert time_sources(g) == ["gpu", "onnxruntime"]
    g.nodes[0].metadata["performance"]["time"]["cpu"] = 0
    assert time_sources(g) == ["cpu", "gpu", "onnxruntime"]
    for nd in g.nodes:
        nd.metadata.pop("performance", None)
    assert time_sources(g) == []
