"""Derived index arrays: ids, producers, consumers, node-to-node edges and topological order.

Built once per graph state with numpy (as NNVM's IndexedGraph does with CSR arrays) and thrown
away by ``Graph.invalidate()`` after an edit, so that 100k-node graphs stay fast. References out
of range are skipped here; the validator reports them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from itertools import chain

import numpy as np

from xocview.model.graph import Graph, set_index_type

__all__ = ["GraphIndex"]

_I = np.int64


def _csr(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Row pointers and flat values of a list of integer lists."""
    lengths = np.fromiter((len(x) for x in lists), dtype=_I, count=len(lists))
    ptr = np.zeros(len(lists) + 1, dtype=_I)
    np.cumsum(lengths, out=ptr[1:])
    flat = np.fromiter(chain.from_iterable(lists), dtype=_I, count=int(ptr[-1]))
    return ptr, flat


class GraphIndex:
    """Lookups derived from one state of a Graph.

    Attributes (all numpy int64 arrays unless noted):
      node_in_ptr/node_in:   CSR of each node's input tensors (as written, repeats kept)
      node_out_ptr/node_out: CSR of each node's output tensors
      producer:              producing node of each tensor, -1 when none (first producer wins)
      extra_producers:       (tensor, node) pairs of second and later producers (list)
      consumer_ptr/consumers: CSR of the distinct consumer nodes of each tensor, ascending
      edge_src/edge_dst/edge_tensor: one data edge per (tensor, consuming node) with a producer
      topo_order:            nodes in a topological order (file order where it already is one);
                             nodes on or behind a cycle are missing from it
    """

    def __init__(self, graph: Graph) -> None:
        nodes, n_tensors = graph.nodes, len(graph.tensors)
        n = len(nodes)
        self.num_nodes = n
        self.num_tensors = n_tensors
        self._node_pos: dict[str, int] | None = None
        self._tensor_pos: dict[str, int] | None = None
        # The lists, not the graph: a graph holding its index and the index holding the graph
        # would be a cycle, and a 100k-node graph freed only by the cyclic collector takes
        # seconds (every one of its objects traversed) instead of being freed as it goes.
        self._nodes, self._tensors = graph.nodes, graph.tensors
        # Other facts of this graph state, made once by whoever needs them (the hierarchy)
        self.derived: dict[str, object] = {}

        self.node_in_ptr, self.node_in = _csr([nd.inputs for nd in nodes])
        self.node_out_ptr, self.node_out = _csr([nd.outputs for nd in nodes])
        in_owner = np.repeat(np.arange(n, dtype=_I), np.diff(self.node_in_ptr))
        out_owner = np.repeat(np.arange(n, dtype=_I), np.diff(self.node_out_ptr))

        ok = (self.node_out >= 0) & (self.node_out < n_tensors)
        out_t, out_n = self.node_out[ok], out_owner[ok]
        self.producer = np.full(n_tensors, -1, dtype=_I)
        # The first producer in file order is the one kept (return_index gives first places).
        produced, first = np.unique(out_t, return_index=True)
        self.producer[produced] = out_n[first]
        dup = out_n != self.producer[out_t]
        self.extra_producers: list[tuple[int, int]] = list(
            zip(out_t[dup].tolist(), out_n[dup].tolist(), strict=True)
        )

        ok = (self.node_in >= 0) & (self.node_in < n_tensors)
        key = np.unique(self.node_in[ok] * max(n, 1) + in_owner[ok])
        cons_t, cons_n = np.divmod(key, max(n, 1))
        self.consumers = cons_n
        self.consumer_ptr = np.zeros(n_tensors + 1, dtype=_I)
        np.cumsum(np.bincount(cons_t, minlength=n_tensors), out=self.consumer_ptr[1:])

        src = self.producer[cons_t]
        has = src >= 0
        self.edge_src, self.edge_dst, self.edge_tensor = src[has], cons_n[has], cons_t[has]
        self.topo_order = self._topological_order()

    # -- lookups -------------------------------------------------------------------------------

    def node_positions(self) -> dict[str, int]:
        """Node id -> position, for loops over many ids (read it, never write)."""
        if self._node_pos is None:
            self._node_pos = _positions(nd.id for nd in self._nodes)
        return self._node_pos

    def node_position(self, node_id: str) -> int:
        if self._node_pos is None:
            self._node_pos = _positions(nd.id for nd in self._nodes)
        try:
            return self._node_pos[node_id]
        except KeyError:
            raise KeyError(f"no node with id '{node_id}'") from None

    def tensor_position(self, tensor_id: str) -> int:
        if self._tensor_pos is None:
            self._tensor_pos = _positions(t.id for t in self._tensors)
        try:
            return self._tensor_pos[tensor_id]
        except KeyError:
            raise KeyError(f"no tensor with id '{tensor_id}'") from None

    def has_node(self, node_id: str) -> bool:
        try:
            self.node_position(node_id)
        except KeyError:
            return False
        return True

    def has_tensor(self, tensor_id: str) -> bool:
        try:
            self.tensor_position(tensor_id)
        except KeyError:
            return False
        return True

    def consumers_of(self, tensor: int) -> np.ndarray:
        return self.consumers[self.consumer_ptr[tensor] : self.consumer_ptr[tensor + 1]]

    def inputs_of(self, node: int) -> np.ndarray:
        return self.node_in[self.node_in_ptr[node] : self.node_in_ptr[node + 1]]

    def outputs_of(self, node: int) -> np.ndarray:
        return self.node_out[self.node_out_ptr[node] : self.node_out_ptr[node + 1]]

    @property
    def has_cycle(self) -> bool:
        return len(self.topo_order) < self.num_nodes

    # -- derived order -------------------------------------------------------------------------

    def _topological_order(self) -> np.ndarray:
        n, src, dst = self.num_nodes, self.edge_src, self.edge_dst
        if bool(np.all(src < dst)):  # file order already is one: the common case, O(E)
            return np.arange(n, dtype=_I)
        order_e = np.argsort(src, kind="stable")
        succ = dst[order_e].tolist()
        ptr = np.zeros(n + 1, dtype=_I)
        np.cumsum(np.bincount(src, minlength=n), out=ptr[1:])
        ptr_l = ptr.tolist()
        indeg = np.bincount(dst, minlength=n).tolist()
        heap = [i for i in range(n) if indeg[i] == 0]  # ascending, so already a heap
        order: list[int] = []
        pop, push = heapq.heappop, heapq.heappush
        while heap:
            u = pop(heap)
            order.append(u)
            for v in succ[ptr_l[u] : ptr_l[u + 1]]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    push(heap, v)
        return np.asarray(order, dtype=_I)


def _positions(ids: Iterable[str]) -> dict[str, int]:
    """First position of each id (later duplicates are the validator's business)."""
    pos: dict[str, int] = {}
    for i, key in enumerate(ids):
        pos.setdefault(key, i)
    return pos


set_index_type(GraphIndex)
