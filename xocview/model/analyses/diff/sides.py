"""One graph as the matcher reads it: integer labels and the input entries as flat arrays.

Both graphs of a comparison share one ``Vocab``, so equal op types, ids and attribute values
get equal numbers on both sides and can be compared as arrays. A tensor reference out of range
(the validator's business) points at one extra, anonymous tensor at the end, so that no array
needs a mask for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.model.analyses.diff.signatures import combine
from xocview.model.graph import Graph
from xocview.model.hierarchy import Hierarchy

__all__ = ["COMMUTATIVE", "Entries", "Side", "Vocab", "make_side"]

_I = np.int64
# Operators whose inputs can be swapped: exporters write Add(bias, x) or Add(x, bias).
COMMUTATIVE = frozenset(
    {"Add", "Mul", "Sum", "Max", "Min", "Mean", "And", "Or", "Xor", "Equal"}
    | {"BitwiseAnd", "BitwiseOr", "BitwiseXor"}
)


class Vocab:
    """Numbers for strings (and other hashable keys), shared by the two sides; 0 is never
    given, so that it can stand for "none"."""

    def __init__(self) -> None:
        self._codes: dict[Any, int] = {}

    def code(self, key: Any) -> int:
        codes = self._codes
        found = codes.get(key)
        if found is None:
            found = codes[key] = len(codes) + 1
        return found

    def codes(self, keys: list[Any]) -> np.ndarray:
        get, codes = self._codes.get, self._codes
        out = np.empty(len(keys), dtype=_I)
        for i, key in enumerate(keys):
            found = get(key)
            if found is None:
                found = codes[key] = len(codes) + 1
            out[i] = found
        return out


@dataclass(frozen=True)
class Entries:
    """Every input entry (a node reading a tensor at a slot), in node order."""

    owner: np.ndarray
    slot: np.ndarray
    key_slot: np.ndarray  # the slot as matching sees it: 0 for every input of Add, Mul, ...
    canon: np.ndarray  # the entry's place in its node's inputs ordered as ``canon_tensor``
    canon_tensor: np.ndarray  # each node's inputs (CSR ``in_ptr``); a commutative op's
    # ordered by what produces them, so that Add(a, b) and Add(b, a) pair a with a
    tensor: np.ndarray
    producer: np.ndarray  # the tensor's producing node, -1 when none
    prod_slot: np.ndarray  # the tensor's place among its producer's outputs
    by_producer: np.ndarray  # the entries that have a producer, ordered by it
    by_tensor: np.ndarray  # all entries ordered by tensor
    tensor_ptr: np.ndarray  # CSR over tensors into ``by_tensor``: each tensor's readers


@dataclass(frozen=True)
class Side:
    """The arrays of one graph that matching and comparing read (positions are the graph's)."""

    graph: Graph
    hierarchy: Hierarchy
    op: np.ndarray  # op type (and domain) number
    fine: np.ndarray  # op type, attributes and arity as one label
    ident: np.ndarray  # node id number
    tensor_ident: np.ndarray  # tensor id number (0 for the anonymous extra tensor)
    tensor_label: np.ndarray  # kind, dtype and shape: what a producer-less tensor looks like
    takes_part: np.ndarray  # matched by structure: every node but a group without inputs/outputs
    derived: np.ndarray  # a group the loader made (scopes, sections), not the file
    section: np.ndarray
    in_ptr: np.ndarray
    out_ptr: np.ndarray
    out_tensor: np.ndarray
    producer: np.ndarray  # per tensor (the extra one included)
    prod_slot: np.ndarray
    down_ptr: np.ndarray  # CSR over nodes into ``entries.by_producer``: each node's readers
    rank: np.ndarray  # place in a topological order, 0..1
    entries: Entries

    @property
    def n(self) -> int:
        return len(self.op)

    @property
    def n_in(self) -> np.ndarray:
        return np.diff(self.in_ptr)

    @property
    def n_out(self) -> np.ndarray:
        return np.diff(self.out_ptr)


def make_side(graph: Graph, vocab: Vocab) -> Side:
    """The arrays of ``graph``, numbered with ``vocab`` (share it with the other side)."""
    index = graph.index
    h = Hierarchy.of(graph)
    nodes, n, n_t = graph.nodes, len(graph.nodes), len(graph.tensors)
    ops = vocab.codes([_op_key(nd.op_type, nd.metadata) for nd in nodes])
    attrs = vocab.codes([_attr_key(nd.attributes) for nd in nodes])
    in_ptr, out_ptr = index.node_in_ptr, index.node_out_ptr
    derived_kind = [nd.metadata.get("derived") for nd in nodes]
    has_io = np.diff(in_ptr) + np.diff(out_ptr) > 0
    out_t = np.where((index.node_out >= 0) & (index.node_out < n_t), index.node_out, n_t)
    producer = np.append(index.producer, -1)
    out_owner = np.repeat(np.arange(n, dtype=_I), np.diff(out_ptr))
    out_slot = np.arange(len(out_t), dtype=_I) - out_ptr[out_owner]
    prod_slot = np.zeros(n_t + 1, dtype=_I)
    first = out_owner == producer[out_t]
    prod_slot[out_t[first]] = out_slot[first]
    tensor_label = np.append(_tensor_labels(graph, producer[:n_t], vocab), 0)
    entries, down_ptr = _entries(graph, ops, producer, prod_slot, tensor_label)
    rank = np.arange(n, dtype=np.float64)
    rank[index.topo_order] = np.arange(len(index.topo_order), dtype=np.float64)
    return Side(
        graph=graph,
        hierarchy=h,
        op=ops,
        fine=combine(ops, attrs, np.diff(in_ptr), np.diff(out_ptr)),
        ident=vocab.codes([("node", nd.id) for nd in nodes]),
        tensor_ident=np.append(vocab.codes([("tensor", t.id) for t in graph.tensors]), 0),
        tensor_label=tensor_label.astype(np.uint64),
        takes_part=~(h.is_group & ~has_io)
        & np.array([k != "section" for k in derived_kind], dtype=bool),
        derived=np.array([k is not None for k in derived_kind], dtype=bool) & h.is_group,
        section=np.array([k == "section" for k in derived_kind], dtype=bool),
        in_ptr=in_ptr,
        out_ptr=out_ptr,
        out_tensor=out_t,
        producer=producer,
        prod_slot=prod_slot,
        down_ptr=down_ptr,
        rank=rank / max(n - 1, 1),
        entries=entries,
    )


def _entries(
    graph: Graph,
    ops: np.ndarray,
    producer: np.ndarray,
    prod_slot: np.ndarray,
    tensor_label: np.ndarray,
) -> tuple[Entries, np.ndarray]:
    """The input entries and, per node, its readers (CSR pointers into ``by_producer``)."""
    index, nodes = graph.index, graph.nodes
    n, n_t, in_ptr = len(nodes), len(graph.tensors), index.node_in_ptr
    in_t = np.where((index.node_in >= 0) & (index.node_in < n_t), index.node_in, n_t)
    owner = np.repeat(np.arange(n, dtype=_I), np.diff(in_ptr))
    slot = np.arange(len(in_t), dtype=_I) - in_ptr[owner]
    e_prod = producer[in_t]
    with_prod = np.flatnonzero(e_prod >= 0)
    down_ptr = np.zeros(n + 1, dtype=_I)
    np.cumsum(np.bincount(e_prod[with_prod], minlength=n), out=down_ptr[1:])
    tensor_ptr = np.zeros(n_t + 2, dtype=_I)
    np.cumsum(np.bincount(in_t, minlength=n_t + 1), out=tensor_ptr[1:])
    comm = np.array(
        [nd.op_type in COMMUTATIVE and not nd.metadata.get("domain") for nd in nodes], dtype=bool
    )
    swappable = comm[owner]
    made_by = np.where(e_prod >= 0, ops[np.maximum(e_prod, 0)], tensor_label[in_t])
    order = np.lexsort((slot, np.where(swappable, made_by, 0), owner))
    canon = np.empty(len(in_t), dtype=_I)
    canon[order] = np.arange(len(in_t), dtype=_I) - in_ptr[owner[order]]
    entries = Entries(
        owner=owner,
        slot=slot,
        key_slot=np.where(swappable, 0, slot),
        canon=canon,
        canon_tensor=in_t[order],
        tensor=in_t,
        producer=e_prod,
        prod_slot=prod_slot[in_t],
        by_producer=with_prod[np.argsort(e_prod[with_prod], kind="stable")],
        by_tensor=np.argsort(in_t, kind="stable"),
        tensor_ptr=tensor_ptr,
    )
    return entries, down_ptr


def _op_key(op_type: str, metadata: dict[str, Any]) -> str:
    domain = metadata.get("domain")
    return f"{domain}::{op_type}" if isinstance(domain, str) and domain else op_type


def _attr_key(attributes: dict[str, Any]) -> str:
    """The attributes as one string (key order aside), to number equal ones alike."""
    if not attributes:
        return ""
    return repr(sorted(attributes.items(), key=lambda kv: kv[0]))


def _tensor_labels(graph: Graph, producer: np.ndarray, vocab: Vocab) -> np.ndarray:
    """Kind, dtype and shape of each tensor without a producer (0 for the others)."""
    out = np.zeros(len(graph.tensors), dtype=_I)
    tensors = graph.tensors
    for t in np.flatnonzero(producer < 0).tolist():
        ten = tensors[t]
        out[t] = vocab.code((ten.kind, ten.dtype, tuple(ten.shape)))
    return out
