"""Findings about the graph as a whole: its metadata, its inputs and outputs, renamed tensors.

Graph ids and names are not compared: loaders take them from file names when the file has
none. A graph input or output is matched through the tensor map, so a renamed input is one
``tensor renamed`` finding, not an input removed and another added.
"""

from __future__ import annotations

import numpy as np

from xocview.model.analyses.diff.result import (
    GRAPH_CHANGED,
    INPUT_ADDED,
    INPUT_CHANGED,
    INPUT_REMOVED,
    OUTPUT_ADDED,
    OUTPUT_CHANGED,
    OUTPUT_REMOVED,
    TENSOR_RENAMED,
    Finding,
)
from xocview.model.analyses.diff.sides import Side
from xocview.model.analyses.diff.values import dict_changes, tensor_changes
from xocview.model.analyses.summary import format_shape
from xocview.model.dotted import flatten_dotted
from xocview.model.graph import Graph, Tensor

__all__ = ["graph_findings", "io_findings", "rename_findings"]

_GRAPH_SKIP = frozenset({"performance"})
_SHOWN = 4  # nodes named for a tensor finding, at most


def graph_findings(old: Graph, new: Graph) -> list[Finding]:
    """The graph's own metadata, key by key (measured times aside)."""
    meta_a = flatten_dotted({k: v for k, v in old.metadata.items() if k not in _GRAPH_SKIP})
    meta_b = flatten_dotted({k: v for k, v in new.metadata.items() if k not in _GRAPH_SKIP})
    changes = dict_changes("metadata", meta_a, meta_b) if meta_a != meta_b else []
    if not changes:
        return []
    return [Finding(GRAPH_CHANGED, "graph", old.id, new.id, tuple(changes))]


def io_findings(
    a: Side, b: Side, tab: np.ndarray, tba: np.ndarray
) -> tuple[list[Finding], list[Finding]]:
    """Findings of the graph inputs, and of the graph outputs, each side matched by tensor."""
    found = []
    for (ga, gb), kinds in (
        ((a.graph.inputs, b.graph.inputs), (INPUT_REMOVED, INPUT_ADDED, INPUT_CHANGED)),
        ((a.graph.outputs, b.graph.outputs), (OUTPUT_REMOVED, OUTPUT_ADDED, OUTPUT_CHANGED)),
    ):
        found.append(_io(a, b, tab, tba, list(ga), list(gb), kinds))
    return found[0], found[1]


def _io(
    a: Side,
    b: Side,
    tab: np.ndarray,
    tba: np.ndarray,
    ga: list[int],
    gb: list[int],
    kinds: tuple[str, str, str],
) -> list[Finding]:
    removed, added, changed = kinds
    ta, tb = a.graph.tensors, b.graph.tensors
    in_b = {t for t in gb if 0 <= t < len(tb)}
    out: list[Finding] = []
    hit: set[int] = set()
    for t in (t for t in ga if 0 <= t < len(ta)):
        u = int(tab[t])
        if u < 0 or u not in in_b:
            out.append(Finding(removed, _about(ta[t]), ta[t].id, None, (), _users(a, t), ()))
            continue
        hit.add(u)
        changes = tensor_changes(ta[t], tb[u])
        if changes:
            users_a, users_b = _users(a, t), _users(b, u)
            out.append(
                Finding(
                    changed, _about(tb[u]), ta[t].id, tb[u].id, tuple(changes), users_a, users_b
                )
            )
    for u in sorted(in_b - hit, key=gb.index):
        out.append(Finding(added, _about(tb[u]), None, tb[u].id, (), (), _users(b, u)))
    return out


def rename_findings(a: Side, b: Side, tab: np.ndarray) -> list[Finding]:
    """One finding per matched tensor whose id differs, in old tensor order."""
    ta, tb = a.graph.tensors, b.graph.tensors
    out = []
    for t in np.flatnonzero(tab >= 0).tolist():
        u = int(tab[t])
        if ta[t].id != tb[u].id:
            out.append(
                Finding(
                    TENSOR_RENAMED, tb[u].kind, ta[t].id, tb[u].id, (), _users(a, t), _users(b, u)
                )
            )
    return out


def _about(tensor: Tensor) -> str:
    return f"{tensor.dtype} {format_shape(list(tensor.shape))}"


def _users(side: Side, t: int) -> tuple[str, ...]:
    """The producer of tensor ``t`` and its first readers: the nodes to show for it."""
    nodes = side.graph.nodes
    e = side.entries
    found = [] if side.producer[t] < 0 else [int(side.producer[t])]
    readers = e.owner[e.by_tensor[e.tensor_ptr[t] : e.tensor_ptr[t + 1]]].tolist()
    for r in readers:
        if r not in found:
            found.append(r)
        if len(found) >= _SHOWN:
            break
    return tuple(nodes[k].id for k in found)
