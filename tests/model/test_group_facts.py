"""A group's facts: its op mix (at any depth), the tensors crossing its border, parameters and
FLOPs, and the op-mix line its box shows."""

from __future__ import annotations

import time

import numpy as np

from xocview.model import Graph, Hierarchy, Node, Tensor
from xocview.model.group_facts import (
    OpMix,
    border,
    group_flops,
    group_parameters,
    inside,
    mix_label,
)


def attention_graph() -> Graph:
    """x -> [block: [attn: MatMul(w1) -> Softmax -> MatMul(w2)] -> Relu] -> Add(x) -> y."""
    f = "float32"
    tensors = [
        Tensor("x", "input", [2, 4], f),
        Tensor("w1", "weight", [4, 4], f),
        Tensor("w2", "weight", [4, 4], f),
        Tensor("a", "activation", [2, 4], f),
        Tensor("s", "activation", [2, 4], f),
        Tensor("m", "activation", [2, 4], f),
        Tensor("r", "activation", [2, 4], f),
        Tensor("y", "output", [2, 4], f),
        Tensor("c", "activation", [1], f),
    ]
    nodes = [
        Node("mm1", "MatMul", [0, 1], [3], None, {"parent_id": "attn"}),
        Node("sm", "Softmax", [3], [4], None, {"parent_id": "attn"}),
        Node("mm2", "MatMul", [4, 2], [5], None, {"parent_id": "attn"}),
        Node("relu", "Relu", [5], [6], None, {"parent_id": "block"}),
        Node("const", "Constant", [], [8], None, {"parent_id": "block"}),
        Node(
            "attn",
            "Scope",
            [],
            [],
            None,
            {"children_ids": ["mm1", "sm", "mm2"], "parent_id": "block"},
        ),
        Node("block", "Scope", [], [], None, {"children_ids": ["attn", "relu", "const"]}),
        Node("add", "Add", [6, 0], [7]),
    ]
    return Graph("g", "g", tensors, nodes, [0], [7])


def test_op_mix_counts_leaves_at_any_depth_most_frequent_first() -> None:
    g = attention_graph()
    mix = OpMix.of_graph(g)
    attn, block = g.index.node_position("attn"), g.index.node_position("block")
    assert mix.of(attn) == [("MatMul", 2), ("Softmax", 1)]
    # the Constant is no operator here (it is folded into its readers on the canvas)
    assert mix.of(block) == [("MatMul", 2), ("Softmax", 1), ("Relu", 1)]
    assert mix.total(block) == 4
    assert mix_label(mix.of(attn)) == "Attention: 3 ops"
    assert mix_label(mix.of(block)) == "Attention: 4 ops"
    assert OpMix.of_graph(g) is mix  # made once per graph state


def test_mix_label_names_the_dominant_ops_within_a_line() -> None:
    assert mix_label([("Conv", 1)]) == "Conv"
    assert mix_label([("Conv", 12)]) == "12 Conv"
    text = mix_label([("Conv", 48), ("Relu", 36), ("BatchNormalization", 12), ("Add", 3)])
    assert text == "99 ops: 48 Conv, 36 Relu"
    assert mix_label([]) == "no ops"
    layer = [("MatMul", 6), ("Add", 5), ("Softmax", 1), ("LayerNormalization", 2), ("Gelu", 1)]
    assert mix_label(layer) == "Attention block: 15 ops"
    assert mix_label([("MatMul", 24), ("Softmax", 12), ("Add", 10)]) == "12x attention: 46 ops"


def test_border_lists_what_flows_in_and_out_and_weights_as_parameters() -> None:
    g = attention_graph()
    h = Hierarchy.of(g)
    for name, ins, outs in (("attn", ["x"], ["m"]), ("block", ["x"], ["r"])):
        mask = inside(h, g.index.node_position(name))
        b = border(g, mask)
        assert [g.tensors[t].id for t in b.inputs] == ins
        assert [g.tensors[t].id for t in b.outputs] == outs
        assert sorted(g.tensors[t].id for t in b.weights) == ["w1", "w2"]
        assert group_parameters(g, mask) == 32
        total, _, assumed = group_flops(g, mask, h)
        assert total > 0 and not assumed
    block = inside(h, g.index.node_position("block"))
    assert sorted(g.nodes[i].id for i in np.flatnonzero(block)) == [
        "attn",
        "const",
        "mm1",
        "mm2",
        "relu",
        "sm",
    ]


def test_a_group_whose_output_is_the_graphs_lists_it() -> None:
    g = attention_graph()
    g.nodes[-1].metadata["parent_id"] = "block"
    g.nodes[6].metadata["children_ids"].append("add")
    g.invalidate()
    mask = inside(Hierarchy.of(g), g.index.node_position("block"))
    assert [g.tensors[t].id for t in border(g, mask).outputs] == ["y"]


def test_op_mix_of_a_deep_wide_graph_is_quick() -> None:
    """20k leaves in 2k groups four levels deep: numpy over the hierarchy, not a walk per
    group (seconds before it was made at once)."""
    f = "float32"
    tensors = [Tensor("x", "input", [1], f)]
    nodes: list[Node] = []
    ops = ("MatMul", "Add", "Softmax", "Relu", "Mul")
    for b in range(2000):
        mid = f"m{b // 10}"
        for k in range(10):
            tensors.append(Tensor(f"t{b}_{k}", "activation", [1], f))
            nodes.append(
                Node(
                    f"n{b}_{k}",
                    ops[k % 5],
                    [len(tensors) - 2],
                    [len(tensors) - 1],
                    None,
                    {"parent_id": f"g{b}"},
                )
            )
        nodes.append(Node(f"g{b}", "Scope", [], [], None, {"parent_id": mid}))
    for m in range(200):
        nodes.append(Node(f"m{m}", "Scope", [], [], None, {"parent_id": f"b{m // 10}"}))
    nodes += [Node(f"b{t}", "Scope", [], []) for t in range(20)]
    g = Graph("g", "g", tensors, nodes, [0], [len(tensors) - 1])
    Hierarchy.of(g)
    start = time.perf_counter()
    mix = OpMix.of_graph(g)
    assert time.perf_counter() - start < 1.0
    assert mix.of(g.index.node_position("b3")) == [(op, 200) for op in ops]
    assert mix.of(g.index.node_position("g7")) == [(op, 2) for op in ops]
