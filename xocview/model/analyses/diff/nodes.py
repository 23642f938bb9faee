"""What changed on each matched node, and the nodes only one side has.

A node's own changes are its op type, attributes, metadata, parent group, the inputs it reads
and the shapes and dtypes of what it writes. Changes that something else explains are left to
that something:

- an input that now reads another tensor because the node that used to stand between was
  removed (a bypass) or a node was put in between (an insert), or because the tensor was
  renamed: the removal, the insert or the rename is the finding;
- the shape or dtype of a graph input or output: reported with the graph's inputs and outputs;
- an output shape or dtype that changed only because an input's did (a batch size change runs
  through the whole graph): such nodes are listed apart (``follow_on``), not as findings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xocview.model.analyses.diff.result import (
    ABSENT,
    NODE_ADDED,
    NODE_CHANGED,
    NODE_REMOVED,
    Change,
    Finding,
)
from xocview.model.analyses.diff.sides import COMMUTATIVE, Side
from xocview.model.analyses.diff.values import (
    dict_changes,
    node_metadata,
    tensor_changes,
    tensors_alike,
)
from xocview.model.graph import Node

__all__ = ["NodeReport", "compare_nodes"]

_TRACE = 8  # removed or inserted nodes followed back from an input, at most


@dataclass(frozen=True)
class NodeReport:
    changed: list[Finding]
    removed: list[Finding]
    added: list[Finding]
    follow_on: list[str]  # new ids
    changed_pairs: list[tuple[int, int]]


class _Pairs:
    """The two sides and their maps, and what each pair comparison needs."""

    def __init__(
        self, a: Side, b: Side, maps: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
    ) -> None:
        self.a, self.b = a, b
        self.ab, self.ba, self.tab, self.tba = maps
        old, new = a.graph, b.graph
        self.io_a = set(old.inputs) | set(old.outputs)
        self.io_b = set(new.inputs) | set(new.outputs)
        self.up_a, self.up_b = _source_parent(a), _source_parent(b)
        self.differs = _tensor_differs(a, b, self.tab)

    def suspects(self, ia: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of the matched old nodes ``ia``, those whose op, attributes, tensors or parent may
        have changed, and those whose id or metadata differ: a few array passes spare the
        node-by-node comparison for the rest."""
        a, b = self.a, self.b
        jb = self.ab[ia]
        sus = a.fine[ia] != b.fine[jb]  # op type, attributes, input and output counts
        mapped = np.append(self.tab, -1)  # the anonymous tensor maps to nothing
        differs = np.append(self.differs, False)
        for ptr_a, flat_a, ptr_b, flat_b in (
            (a.in_ptr, a.entries.canon_tensor, b.in_ptr, b.entries.canon_tensor),
            (a.out_ptr, a.out_tensor, b.out_ptr, b.out_tensor),
        ):
            m = np.minimum(np.diff(ptr_a)[ia], np.diff(ptr_b)[jb])
            row = np.repeat(np.arange(len(ia)), m)
            place = np.arange(len(row)) - np.repeat(np.cumsum(m) - m, m)
            ta, tb = flat_a[ptr_a[ia][row] + place], flat_b[ptr_b[jb][row] + place]
            sus[row[(mapped[ta] != tb) | differs[ta]]] = True
        up = self.up_a[ia]
        sus |= np.where(up >= 0, self.ab[np.maximum(up, 0)], -1) != self.up_b[jb]
        old, new = a.graph.nodes, b.graph.nodes
        meta = np.fromiter(
            (
                old[i].id != new[j].id or old[i].metadata != new[j].metadata
                for i, j in zip(ia.tolist(), jb.tolist(), strict=True)
            ),
            dtype=bool,
            count=len(ia),
        )
        return ia[sus], ia[meta & ~sus]

    def metadata_changes(self, i: int, j: int) -> list[Change]:
        na, nb = self.a.graph.nodes[i], self.b.graph.nodes[j]
        meta_a, meta_b = node_metadata(na), node_metadata(nb)
        return dict_changes("metadata", meta_a, meta_b) if meta_a != meta_b else []

    def changes(self, i: int, j: int) -> tuple[list[Change], bool]:
        """The changes of old node i against new node j, and whether they are only output
        shapes and dtypes that follow from an input's."""
        na, nb = self.a.graph.nodes[i], self.b.graph.nodes[j]
        out: list[Change] = []
        if na.op_type != nb.op_type:
            out.append(Change("op_type", "", na.op_type, nb.op_type))
        if na.attributes != nb.attributes:
            out.extend(dict_changes("attribute", na.attributes, nb.attributes))
        if not (na.id == nb.id and na.metadata == nb.metadata):
            meta_a, meta_b = node_metadata(na), node_metadata(nb)
            if meta_a != meta_b:
                out.extend(dict_changes("metadata", meta_a, meta_b))
        out.extend(self._parent(i, j))
        out.extend(self._inputs(i, j))
        own = len(out)
        out.extend(self._outputs(i, j))
        follows = own == 0 and len(out) > 0 and self._input_shape_changed(i)
        return out, follows

    def _parent(self, i: int, j: int) -> list[Change]:
        pa, pb = int(self.up_a[i]), int(self.up_b[j])
        if (pa >= 0 and self.ab[pa] < 0) or (pb >= 0 and self.ba[pb] < 0):
            return []  # the group itself was added or removed: that is the finding
        if (self.ab[pa] if pa >= 0 else -1) == pb:
            return []
        old = self.a.graph.nodes[pa].id if pa >= 0 else ABSENT
        new = self.b.graph.nodes[pb].id if pb >= 0 else ABSENT
        return [Change("parent", "", old, new)]

    def _inputs(self, i: int, j: int) -> list[Change]:
        a, b = self.a, self.b
        ins_a = a.entries.tensor[a.in_ptr[i] : a.in_ptr[i + 1]].tolist()
        ins_b = b.entries.tensor[b.in_ptr[j] : b.in_ptr[j + 1]].tolist()
        if a.graph.nodes[i].op_type in COMMUTATIVE and b.graph.nodes[j].op_type in COMMUTATIVE:
            ins_b = self._aligned(ins_a, ins_b)
        out: list[Change] = []
        if len(ins_a) != len(ins_b):
            out.append(Change("inputs", "", self._ids_a(ins_a), self._ids_b(ins_b)))
        for k, (ta, tb) in enumerate(zip(ins_a, ins_b, strict=False)):
            key = f"input[{k}]"
            if ta < len(self.tab) and self.tab[ta] == tb:
                if a.producer[ta] < 0 and ta not in self.io_a and self.differs[ta]:
                    ten_a, ten_b = a.graph.tensors[ta], b.graph.tensors[tb]
                    out.extend(tensor_changes(ten_a, ten_b, key))
            elif not self._explained(ta, tb):
                out.append(Change("input", "", self._id_a(ta), self._id_b(tb), key))
        return out

    def _aligned(self, ins_a: list[int], ins_b: list[int]) -> list[int]:
        """``ins_b`` reordered to follow ``ins_a`` where it can (operands of an Add or a Mul
        may be swapped): the same tensor first, then one a removal or insert explains."""
        rest = list(ins_b)
        out: list[int | None] = [None] * len(ins_a)
        for same in (True, False):
            for k, ta in enumerate(ins_a):
                if out[k] is not None:
                    continue
                for tb in rest:
                    mapped = ta < len(self.tab) and self.tab[ta] == tb
                    if mapped if same else self._explained(ta, tb):
                        out[k] = tb
                        rest.remove(tb)
                        break
        left = iter(rest)
        placed = [tb if tb is not None else next(left, None) for tb in out]
        return [tb for tb in placed if tb is not None] + list(left)

    def _outputs(self, i: int, j: int) -> list[Change]:
        a, b = self.a, self.b
        outs_a = a.out_tensor[a.out_ptr[i] : a.out_ptr[i + 1]].tolist()
        outs_b = b.out_tensor[b.out_ptr[j] : b.out_ptr[j + 1]].tolist()
        out: list[Change] = []
        if len(outs_a) != len(outs_b):
            out.append(Change("outputs", "", self._ids_a(outs_a), self._ids_b(outs_b)))
        for k, (ta, tb) in enumerate(zip(outs_a, outs_b, strict=False)):
            if ta in self.io_a or tb in self.io_b or ta >= len(self.tab) or self.tab[ta] != tb:
                continue
            if self.differs[ta]:
                ten_a, ten_b = a.graph.tensors[ta], b.graph.tensors[tb]
                out.extend(tensor_changes(ten_a, ten_b, f"output[{k}]"))
        return out

    def _input_shape_changed(self, i: int) -> bool:
        ins = self.a.entries.tensor[self.a.in_ptr[i] : self.a.in_ptr[i + 1]]
        ins = ins[ins < len(self.differs)]
        return bool(self.differs[ins].any())

    def _explained(self, ta: int, tb: int) -> bool:
        """Whether old tensor ``ta`` and new tensor ``tb`` are one value apart from removed
        nodes in front of ``ta`` or added nodes in front of ``tb`` (first inputs followed)."""
        mapped = {int(self.tab[t]) for t in _trace(self.a, self.ab, ta) if t < len(self.tab)}
        return any(t in mapped for t in _trace(self.b, self.ba, tb))

    def _id_a(self, t: int) -> str:
        return self.a.graph.tensors[t].id if t < len(self.a.graph.tensors) else "?"

    def _id_b(self, t: int) -> str:
        return self.b.graph.tensors[t].id if t < len(self.b.graph.tensors) else "?"

    def _ids_a(self, ts: list[int]) -> list[str]:
        return [self._id_a(t) for t in ts]

    def _ids_b(self, ts: list[int]) -> list[str]:
        return [self._id_b(t) for t in ts]


def compare_nodes(
    a: Side, b: Side, maps: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
) -> NodeReport:
    """Findings of the matched nodes that changed and of the nodes on one side only, each
    list in topological order."""
    pairs = _Pairs(a, b, maps)
    ab, ba = pairs.ab, pairs.ba
    found_at: dict[int, list[Change]] = {}
    follow_on: list[str] = []
    old, new = a.graph.nodes, b.graph.nodes
    shown_a = ~a.section & ~a.derived
    suspects, names = pairs.suspects(np.flatnonzero((ab >= 0) & shown_a))
    for i in names.tolist():
        found = pairs.metadata_changes(i, int(ab[i]))
        if found:
            found_at[i] = found
    for i in suspects.tolist():
        found, follows = pairs.changes(i, int(ab[i]))
        if follows:
            follow_on.append(new[int(ab[i])].id)
        elif found:
            found_at[i] = found
    changed_at = _in_order(a, list(found_at))
    changed = [_changed(old[i], new[int(ab[i])], found_at[i]) for i in changed_at]
    removed = [
        Finding(NODE_REMOVED, old[i].op_type, old[i].id, None, (), (old[i].id,), _near(a, b, ab, i))
        for i in _in_order(a, np.flatnonzero((ab < 0) & shown_a).tolist())
    ]
    shown_b = ~b.section & ~b.derived
    added = [
        Finding(NODE_ADDED, new[j].op_type, None, new[j].id, (), _near(b, a, ba, j), (new[j].id,))
        for j in _in_order(b, np.flatnonzero((ba < 0) & shown_b).tolist())
    ]
    changed_pairs = [(i, int(ab[i])) for i in changed_at]
    return NodeReport(changed, removed, added, follow_on, changed_pairs)


def _in_order(side: Side, positions: list[int]) -> list[int]:
    """``positions`` in topological order (file order among equals)."""
    return sorted(positions, key=lambda i: (float(side.rank[i]), i))


def _changed(old: Node, new: Node, found: list[Change]) -> Finding:
    return Finding(NODE_CHANGED, new.op_type, old.id, new.id, tuple(found), (old.id,), (new.id,))


def _near(side: Side, other: Side, to_other: np.ndarray, i: int) -> tuple[str, ...]:
    """The other side's partners of node i's matched producers and readers: where a removed
    node was, or an added one goes, over there."""
    e = side.entries
    ins = e.producer[side.in_ptr[i] : side.in_ptr[i + 1]]
    lo, hi = side.down_ptr[i], side.down_ptr[i + 1]
    outs = e.owner[e.by_producer[lo:hi]]
    near = to_other[np.concatenate([ins[ins >= 0], outs])]
    near = near[near >= 0]
    _, first = np.unique(near, return_index=True)
    return tuple(other.graph.nodes[k].id for k in near[np.sort(first)].tolist()[:4])


def _trace(side: Side, to_other: np.ndarray, t: int) -> list[int]:
    """``t`` and the tensors behind it through unmatched producers, first inputs followed."""
    out = [t]
    for _ in range(_TRACE):
        p = int(side.producer[t])
        if p < 0 or to_other[p] >= 0 or side.in_ptr[p] == side.in_ptr[p + 1]:
            break
        t = int(side.entries.tensor[side.in_ptr[p]])
        out.append(t)
    return out


def _tensor_differs(a: Side, b: Side, tab: np.ndarray) -> np.ndarray:
    """Per old tensor: matched to one whose shape, dtype or metadata differ."""
    out = np.zeros(len(tab), dtype=bool)
    ta, tb = a.graph.tensors, b.graph.tensors
    for t in np.flatnonzero(tab >= 0).tolist():
        out[t] = not tensors_alike(ta[t], tb[int(tab[t])])
    return out


def _source_parent(side: Side) -> np.ndarray:
    """Each node's nearest enclosing group that came from the file (not derived), -1: none."""
    h = side.hierarchy
    parent = h.parent.copy()
    for _ in range(h.max_depth + 1):
        up = (parent >= 0) & side.derived[np.maximum(parent, 0)]
        if not up.any():
            break
        parent[up] = h.parent[parent[up]]
    return parent
