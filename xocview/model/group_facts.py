"""What a group holds: its operators (the op mix), the tensors that cross its border, its
parameters and FLOPs.

A collapsed group is drawn as one box and its inspector stands for everything inside it, so
both say what that is: ``Attention: 14 ops`` on the box, and in the inspector the tensors that
flow in and out (a scope made from exporter names has no inputs or outputs of its own: they
are its members' edges across the border), the op counts, the parameters and the FLOPs.
The op mix of every group is made at once (numpy over the hierarchy: 100k nodes in tens of
milliseconds) and kept with the graph's index; the rest is asked for one group at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xocview.model.analyses import opfacts
from xocview.model.analyses.parameters import is_parameter, parameter_size
from xocview.model.graph import Graph
from xocview.model.hierarchy import Hierarchy

__all__ = ["Border", "OpMix", "border", "group_flops", "group_parameters", "inside", "mix_label"]

_I = np.int64
_MATMUL = ("MatMul", "Gemm", "Einsum", "FusedMatMul", "MatMulInteger", "QLinearMatMul")
_ATTENTION = ("Attention", "MultiHeadAttention", "GroupQueryAttention", "PackedAttention")
_NORMS = (
    "LayerNormalization",
    "SimplifiedLayerNormalization",
    "SkipLayerNormalization",
    "SkipSimplifiedLayerNormalization",
    "RMSNormalization",
    "BatchNormalization",
    "InstanceNormalization",
    "GroupNormalization",
)
_ACTIVATIONS = ("Relu", "Gelu", "FastGelu", "BiasGelu", "Erf", "Sigmoid", "Tanh", "QuickGelu")
_MIX_CHARS = 26  # a box's op-mix line stays about as wide as a title


@dataclass(frozen=True)
class OpMix:
    """Every group's operators: for group g, ``names[codes[ptr[g]:ptr[g+1]]]`` with
    ``counts`` alike, most frequent first (the leaves below g at any depth; constant-making
    nodes such as Constant are not operators here, as they are folded into their readers)."""

    ptr: np.ndarray
    codes: np.ndarray
    counts: np.ndarray
    names: list[str]

    def of(self, group: int) -> list[tuple[str, int]]:
        """``[(op type, count), ...]`` of ``group``, most frequent first."""
        a, b = int(self.ptr[group]), int(self.ptr[group + 1])
        return [
            (self.names[c], int(n))
            for c, n in zip(self.codes[a:b].tolist(), self.counts[a:b].tolist(), strict=True)
        ]

    def total(self, group: int) -> int:
        a, b = int(self.ptr[group]), int(self.ptr[group + 1])
        return int(self.counts[a:b].sum())

    @staticmethod
    def of_graph(graph: Graph) -> OpMix:
        """The op mix of ``graph`` as it is now, made once per graph state."""
        derived = graph.index.derived
        found = derived.get("group_facts.op_mix")
        if not isinstance(found, OpMix):
            found = derived["group_facts.op_mix"] = _op_mix(graph, Hierarchy.of(graph))
        return found


def _op_mix(graph: Graph, h: Hierarchy) -> OpMix:
    """Pairs (ancestor, op code) for every leaf and each group above it, counted at once."""
    n = len(graph.nodes)
    leaves = np.flatnonzero(~h.is_group)
    table: dict[str, int] = {}
    nodes = graph.nodes
    code = np.fromiter(
        (table.setdefault(nodes[i].op_type, len(table)) for i in leaves.tolist()),
        dtype=_I,
        count=len(leaves),
    )
    names = list(table)
    counted = ~np.array([opfacts.is_constant_source(s) for s in names], dtype=bool)
    keep = counted[code] if len(names) else np.zeros(0, dtype=bool)
    at, code = h.parent[leaves[keep]], code[keep].astype(_I)
    groups: list[np.ndarray] = []
    codes: list[np.ndarray] = []
    while at.size:
        up = at >= 0
        at, code = at[up], code[up]
        groups.append(at)
        codes.append(code)
        at = h.parent[at]
    k = max(len(names), 1)
    key = np.concatenate([g * k + c for g, c in zip(groups, codes, strict=True)] or [[]])
    uniq, counts = np.unique(key.astype(_I), return_counts=True)
    g_of, c_of = uniq // k, uniq % k
    order = np.lexsort((c_of, -counts, g_of))  # by group, then most frequent, then first met
    g_of, c_of, counts = g_of[order], c_of[order], counts[order]
    ptr = np.searchsorted(g_of, np.arange(n + 1, dtype=_I)).astype(_I)
    return OpMix(ptr, c_of.astype(_I), counts.astype(_I), names)


def mix_label(mix: list[tuple[str, int]]) -> str:
    """A group box's line for its op mix: ``Attention: 14 ops`` where the mix is one known
    block (one attention without a norm, a norm alone, an MLP), else the dominant ops
    (``212 ops: 48 MatMul, 36 Add``, counts of one left out); ``Conv`` for a lone op."""
    total = sum(n for _, n in mix)
    if total == 0:
        return "no ops"
    if len(mix) == 1:
        op, n = mix[0]
        return op if n == 1 else f"{n} {op}"
    count = dict(mix)
    kind = _block_kind(count)
    if kind:
        return f"{kind}: {total} ops"
    parts = [op if n == 1 else f"{n} {op}" for op, n in mix]
    text = f"{total} ops: {parts[0]}"
    for part in parts[1:]:  # as many of the most frequent as the line holds
        if len(text) + 2 + len(part) > _MIX_CHARS:
            break
        text = f"{text}, {part}"
    return text


def _block_kind(count: dict[str, int]) -> str:
    """The name of a well-known block the op counts make, or ``""``."""

    def has(ops: tuple[str, ...]) -> int:
        return sum(count.get(op, 0) for op in ops)

    attention = has(_ATTENTION) + count.get("Softmax", 0)
    norm = has(_NORMS) + min(count.get("ReduceMean", 0), count.get("Sqrt", 0))
    matmuls = has(_MATMUL)
    if attention and (matmuls >= 2 or has(_ATTENTION)):
        if attention > 1:
            return f"{attention}x attention"
        return "Attention" if not norm else "Attention block"
    if norm == 1 and not matmuls and not attention and sum(count.values()) <= 10:
        return "Norm"
    if matmuls >= 2 and has(_ACTIVATIONS) and not attention and not norm:
        return "MLP" if sum(count.values()) <= 12 else ""
    return ""


def inside(h: Hierarchy, group: int) -> np.ndarray:
    """Per node position, whether it lies below ``group`` at any depth (the group excluded)."""
    mask = np.zeros(len(h.parent), dtype=bool)
    top = int(h.depth[group])
    below = np.flatnonzero(h.depth > top)
    if not below.size:
        return mask
    mask[group] = True
    order = below[np.argsort(h.depth[below], kind="stable")]  # parents before their children
    depth = h.depth[order]
    starts = np.searchsorted(depth, np.arange(top + 1, int(depth[-1]) + 2))
    for a, b in zip(starts[:-1].tolist(), starts[1:].tolist(), strict=True):
        at = order[a:b]
        mask[at] = mask[h.parent[at]]
    mask[group] = False
    return mask


@dataclass(frozen=True)
class Border:
    """Tensor positions crossing a group's border, in tensor order: ``inputs`` read inside
    and made outside (graph inputs included, weights not), ``outputs`` made inside and read
    outside or by the graph's caller, ``weights`` the parameters read inside."""

    inputs: np.ndarray
    outputs: np.ndarray
    weights: np.ndarray


def border(graph: Graph, mask: np.ndarray) -> Border:
    """The tensors crossing the border of the nodes in ``mask`` (see ``inside``)."""
    index = graph.index
    nt = len(graph.tensors)
    cons_t = np.repeat(np.arange(nt, dtype=_I), np.diff(index.consumer_ptr))
    cons_n = index.consumers
    producer = index.producer
    made_inside = np.zeros(nt, dtype=bool)
    has = producer >= 0
    made_inside[has] = mask[producer[has]]
    read_inside = np.zeros(nt, dtype=bool)
    read_inside[cons_t[mask[cons_n]]] = True
    read_outside = np.zeros(nt, dtype=bool)
    read_outside[cons_t[~mask[cons_n]]] = True
    read_outside[np.asarray(graph.outputs, dtype=_I)] = True
    into = np.flatnonzero(read_inside & ~made_inside)
    params = np.array([is_parameter(graph, t) for t in into.tolist()], dtype=bool)
    return Border(
        inputs=into[~params] if params.size else into,
        outputs=np.flatnonzero(made_inside & read_outside),
        weights=into[params] if params.size else into[:0],
    )


def group_parameters(graph: Graph, mask: np.ndarray) -> int:
    """Parameter elements read by the nodes in ``mask`` (each weight once, whoever reads it,
    also a weight made inside by a Constant), as the graph's total counts them."""
    index = graph.index
    reads = np.unique(index.node_in[np.repeat(mask, np.diff(index.node_in_ptr))])
    return sum(parameter_size(graph, t) or 0 for t in reads.tolist() if is_parameter(graph, t))


def group_flops(graph: Graph, mask: np.ndarray, h: Hierarchy) -> tuple[int, int, bool]:
    """FLOPs of the leaves in ``mask`` (unknown dimensions as 1): the total, how many leaves
    have no count, and whether a dimension was assumed."""
    total = unknown = 0
    assumed = False
    for i in np.flatnonzero(mask & ~h.is_group).tolist():
        ops, guessed = opfacts.flops_assuming(graph, i, 1)
        if ops is None:
            unknown += 1
        else:
            total += ops
            assumed = assumed or guessed
    return total, unknown, assumed
