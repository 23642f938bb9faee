"""xocview/model/index.py: producers, consumers, edges and the topological order."""

from __future__ import annotations

import gc
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.model.conftest import chain, graph, ids, node, tensor
from xocview.model import Graph, GraphIndex, Hierarchy


def _edges(ix: GraphIndex) -> list[tuple[int, int, int]]:
    return list(
        zip(ix.edge_src.tolist(), ix.edge_dst.tolist(), ix.edge_tensor.tolist(), strict=True)
    )


def _is_topological(g: Graph, order: list[int]) -> bool:
    where = {u: k for k, u in enumerate(order)}
    ix = g.index
    return all(where[s] < where[d] for s, d, _ in _edges(ix) if s in where and d in where)


def diamond() -> Graph:
    """x -> a -> (b, c) -> d -> y: a's output feeds two nodes, d reads both branches."""
    tensors = [tensor("x", "input"), tensor("ta"), tensor("tb"), tensor("tc")]
    tensors.append(tensor("y", "output"))
    nodes = [
        node("a", "Relu", [0], [1]),
        node("b", "Neg", [1], [2]),
        node("c", "Abs", [1], [3]),
        node("d", "Add", [2, 3], [4]),
    ]
    return graph(tensors, nodes, [0], [4])


# -- CSR of node inputs and outputs ------------------------------------------------------------


def test_node_inputs_and_outputs_as_csr_keep_repeats_and_order() -> None:
    g = graph(
        [tensor("a", "input"), tensor("b"), tensor("c")],
        [node("n0", "Add", [0, 0], [1]), node("n1", "Split", [1], [2]), node("n2", "Const")],
    )
    ix = g.index
    assert ix.node_in_ptr.tolist() == [0, 2, 3, 3]
    assert ix.node_in.tolist() == [0, 0, 1]
    assert ix.node_out_ptr.tolist() == [0, 1, 2, 2]
    assert ix.inputs_of(0).tolist() == [0, 0]
    assert ix.outputs_of(1).tolist() == [2]
    assert ix.inputs_of(2).tolist() == [] and ix.outputs_of(2).tolist() == []
    assert (ix.num_nodes, ix.num_tensors) == (3, 3)
    assert ix.node_in.dtype == np.int64 and ix.producer.dtype == np.int64


# -- producers ---------------------------------------------------------------------------------


def test_producer_of_each_tensor() -> None:
    ix = chain(3).index
    # x and w have no producer; t1, t2, t3 are written by n0, n1, n2
    assert ix.producer.tolist() == [-1, -1, 0, 1, 2]
    assert ix.extra_producers == []


def test_the_first_producer_in_file_order_wins_and_later_ones_are_extra() -> None:
    g = graph(
        [tensor("x", "input"), tensor("a"), tensor("b")],
        [
            node("n0", "Relu", [0], [2]),
            node("n1", "Neg", [0], [1]),
            node("n2", "Abs", [0], [1, 2]),
            node("n3", "Exp", [0], [1]),
        ],
    )
    ix = g.index
    assert ix.producer.tolist() == [-1, 1, 0]
    assert sorted(ix.extra_producers) == [(1, 2), (1, 3), (2, 2)]


def test_a_node_writing_one_tensor_twice_is_its_only_producer() -> None:
    g = graph([tensor("x", "input"), tensor("a")], [node("n0", "Split", [0], [1, 1])])
    assert g.index.producer.tolist() == [-1, 0]
    assert g.index.extra_producers == []


# -- consumers ---------------------------------------------------------------------------------


def test_consumers_are_distinct_and_ascending() -> None:
    g = graph(
        [tensor("x", "input"), tensor("y"), tensor("unused")],
        [
            node("first", "Neg", [0], []),
            node("n0", "Add", [0, 0], [1]),  # reads x twice: one consumer
            node("n1", "Mul", [1, 0], []),
            node("n2", "Relu", [0], []),
        ],
    )
    ix = g.index
    assert ix.consumers_of(0).tolist() == [0, 1, 2, 3]
    assert ix.consumers_of(1).tolist() == [2]
    assert ix.consumers_of(2).tolist() == []
    assert ix.consumer_ptr.tolist() == [0, 4, 5, 5]


def test_consumers_come_out_grouped_by_tensor_whatever_order_inputs_are_listed_in() -> None:
    g = graph(
        [tensor("x", "input"), tensor("a", "input"), tensor("b", "input")],
        [node("n0", "Op", [2, 1]), node("n1", "Op", [1]), node("n2", "Op", [2, 1, 2, 0])],
    )
    ix = g.index
    assert ix.consumers_of(0).tolist() == [2]
    assert ix.consumers_of(1).tolist() == [0, 1, 2]
    assert ix.consumers_of(2).tolist() == [0, 2]
    assert ix.consumers.tolist() == [2, 0, 1, 2, 0, 2]


# -- edges -------------------------------------------------------------------------------------


def test_one_edge_per_tensor_and_consumer_with_a_producer() -> None:
    ix = diamond().index
    assert sorted(_edges(ix)) == [(0, 1, 1), (0, 2, 1), (1, 3, 2), (2, 3, 3)]


def test_a_tensor_read_twice_by_one_node_gives_one_edge() -> None:
    g = graph(
        [tensor("x", "input"), tensor("a"), tensor("y", "output")],
        [node("n0", "Relu", [0], [1]), node("n1", "Mul", [1, 1], [2])],
    )
    assert _edges(g.index) == [(0, 1, 1)]


def test_two_tensors_between_the_same_nodes_give_two_edges() -> None:
    g = graph(
        [tensor("x", "input"), tensor("a"), tensor("b"), tensor("y", "output")],
        [node("n0", "Split", [0], [1, 2]), node("n1", "Add", [1, 2], [3])],
    )
    assert sorted(_edges(g.index)) == [(0, 1, 1), (0, 1, 2)]


def test_tensors_without_producer_give_no_edges() -> None:
    ix = chain(2).index
    assert 0 not in ix.edge_tensor.tolist() and 1 not in ix.edge_tensor.tolist()


# -- topological order -------------------------------------------------------------------------


def test_file_order_is_kept_when_it_is_already_topological() -> None:
    g = graph(
        [tensor("x", "input"), tensor("a"), tensor("b"), tensor("c")],
        [
            node("n0", "Relu", [0], [1]),
            node("free", "Const", [], [3]),  # unconnected: topologically anywhere
            node("n1", "Neg", [1], [2]),
        ],
    )
    assert g.index.topo_order.tolist() == [0, 1, 2]
    assert not g.index.has_cycle
    assert diamond().index.topo_order.tolist() == [0, 1, 2, 3]


def test_a_reordered_graph_gets_a_valid_topological_order() -> None:
    g = diamond()
    g.nodes[:] = [g.nodes[3], g.nodes[2], g.nodes[0], g.nodes[1]]  # d, c, a, b
    g.invalidate()
    order = g.index.topo_order.tolist()
    assert sorted(order) == [0, 1, 2, 3]
    assert _is_topological(g, order)
    # Kahn's algorithm with the smallest free position first: a, then c (1) before b (3), d
    assert ids(g, order) == ["a", "c", "b", "d"]
    assert not g.index.has_cycle


def test_reversed_chain_runs_from_its_start() -> None:
    g = chain(4)
    g.nodes.reverse()
    g.invalidate()
    assert ids(g, g.index.topo_order) == ["n0", "n1", "n2", "n3"]


def test_a_cycle_leaves_its_nodes_and_those_behind_it_out() -> None:
    # n0 -> n1 -> n2 -> n1 (cycle n1, n2), n2 -> n3 (behind the cycle), n4 free
    g = graph(
        [tensor("x", "input"), tensor("a"), tensor("b"), tensor("c"), tensor("d")],
        [
            node("n0", "Relu", [0], [1]),
            node("n1", "Add", [1, 3], [2]),
            node("n2", "Neg", [2], [3]),
            node("n3", "Abs", [3], [4]),
            node("n4", "Const", [], []),
        ],
    )
    ix = g.index
    assert ix.has_cycle
    assert ix.topo_order.tolist() == [0, 4]


def test_a_node_reading_its_own_output_is_a_cycle() -> None:
    g = graph([tensor("a")], [node("n0", "Relu", [0], [0])])
    assert _edges(g.index) == [(0, 0, 0)]
    assert g.index.has_cycle and g.index.topo_order.tolist() == []


def test_empty_graph() -> None:
    ix = graph([], []).index
    assert ix.topo_order.tolist() == [] and not ix.has_cycle
    assert ix.producer.tolist() == [] and ix.consumer_ptr.tolist() == [0]
    assert _edges(ix) == []


@st.composite
def _dags(draw: st.DrawFn) -> tuple[Graph, list[int]]:
    """A random DAG written in a shuffled order, and that order (file position -> rank)."""
    n = draw(st.integers(min_value=1, max_value=12))
    tensors = [tensor(f"t{i}") for i in range(n)]
    nodes = []
    for i in range(n):  # node i writes t_i and reads some t_j with j < i
        reads = draw(st.lists(st.integers(min_value=0, max_value=i - 1), max_size=3)) if i else []
        nodes.append(node(f"n{i}", "Op", reads, [i]))
    perm = draw(st.permutations(range(n)))
    return graph(tensors, [nodes[k] for k in perm]), list(perm)


@settings(max_examples=60, deadline=None)
@given(_dags())
def test_property_any_dag_in_any_file_order_gets_a_full_topological_order(
    case: tuple[Graph, list[int]],
) -> None:
    g, _ = case
    order = g.index.topo_order.tolist()
    assert sorted(order) == list(range(len(g.nodes)))
    assert _is_topological(g, order)


# -- bad references ----------------------------------------------------------------------------


def test_out_of_range_references_are_skipped() -> None:
    g = chain(2)
    g.nodes[1].inputs = [2, 99, -1]
    g.nodes[1].outputs = [3, 7, -5]
    g.invalidate()
    ix = g.index
    assert ix.node_in.tolist() == [0, 1, 2, 99, -1]  # the CSR keeps what is written
    assert ix.producer.tolist() == [-1, -1, 0, 1]
    assert ix.consumers_of(2).tolist() == [1]
    assert ix.consumer_ptr.tolist() == [0, 1, 2, 3, 3]
    assert _edges(ix) == [(0, 1, 2)]
    assert ix.topo_order.tolist() == [0, 1]


def test_a_graph_whose_references_are_all_bad_still_indexes() -> None:
    g = graph([], [node("n0", "Relu", [3], [4]), node("n1", "Relu", [-2], [0])])
    ix = g.index
    assert ix.producer.tolist() == []
    assert _edges(ix) == []
    assert ix.topo_order.tolist() == [0, 1]


# -- rebuilding and lookups --------------------------------------------------------------------


def test_the_index_is_built_once_and_rebuilt_after_invalidate() -> None:
    g = chain(2)
    first = g.index
    assert g.index is first
    g.nodes.append(node("n2", "Relu", [3], [0]))  # a new node that reads t2
    assert g.index is first and first.num_nodes == 2  # stale until invalidated
    g.invalidate()
    ix = g.index
    assert ix is not first
    assert ix.num_nodes == 3
    assert ix.consumers_of(3).tolist() == [2]
    assert ix.producer[0] == 2


def test_invalidate_after_rewiring_moves_the_edges() -> None:
    g = chain(3)
    assert _edges(g.index) == [(0, 1, 2), (1, 2, 3)]
    g.nodes[2].inputs = [2]  # n2 now reads n0's output instead of n1's
    g.invalidate()
    assert sorted(_edges(g.index)) == [(0, 1, 2), (0, 2, 2)]
    assert g.index.consumers_of(3).tolist() == []


def test_node_and_tensor_lookups_by_id() -> None:
    g = chain(3)
    assert g.node("n2") is g.nodes[2]
    assert g.tensor("w") is g.tensors[1]
    assert g.index.node_position("n1") == 1
    assert g.index.tensor_position("t3") == 4
    assert g.index.has_node("n0") and not g.index.has_node("x")


def test_a_duplicated_id_finds_its_first_holder() -> None:
    g = graph([tensor("a"), tensor("a")], [node("n", "Relu"), node("n", "Neg")])
    assert g.node("n").op_type == "Relu"
    assert g.index.tensor_position("a") == 0


def test_missing_ids_raise_key_error_naming_them() -> None:
    g = chain(2)
    with pytest.raises(KeyError, match=r"^\"no node with id 'nope'\"$"):
        g.node("nope")
    with pytest.raises(KeyError, match=r"^\"no tensor with id 'n0'\"$"):
        g.tensor("n0")  # a node id is not a tensor id


def test_lookups_follow_a_renamed_id_after_invalidate() -> None:
    g = chain(2)
    assert g.node("n1").op_type == "Relu"
    g.nodes[1].id = "renamed"
    g.tensors[0].id = "input0"
    g.invalidate()
    assert g.node("renamed") is g.nodes[1]
    assert g.tensor("input0") is g.tensors[0]
    with pytest.raises(KeyError, match="no node with id 'n1'"):
        g.node("n1")
    with pytest.raises(KeyError, match="no tensor with id 'x'"):
        g.tensor("x")


def test_a_graph_and_its_index_make_no_reference_cycle() -> None:
    # A cycle would leave a 100k-node graph to the cyclic collector: seconds to free.
    g = chain(4)
    g.index.node_position(g.nodes[1].id)
    g.index.tensor_position(g.tensors[0].id)
    Hierarchy.of(g)
    referrers = gc.get_referrers(g)
    assert all(isinstance(r, types.FrameType) for r in referrers), referrers
