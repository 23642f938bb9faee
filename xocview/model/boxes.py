"""How many boxes a node adds to the default drawing when it is visible: 1, or 0 for a
constant-making leaf that the drawing folds into its readers (as Netron does).

Sizing levels by boxes rather than nodes keeps a 400-box CNN whole although its exporter wrote
a ``ConstantOfShape`` per weight (resnet50: 415 nodes, 176 boxes); the first view and the
section groups count the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xocview.model.graph import Graph
    from xocview.model.hierarchy import Hierarchy

__all__ = ["CONSTANT_OPS", "OP_GROUPS", "BoxCounts", "box_weights", "folded_constants", "op_groups"]

# Operators that only make a constant, folded with the weights when all they read are weights
# (the ONNX light models make every weight with ConstantOfShape from a shape initializer;
# TorchScript exports pass a shared weight through Identity; a torch Linear reads its weight
# through a Transpose; a bfloat16 checkpoint's weights run through a Cast to float32).
CONSTANT_OPS = frozenset({"Constant", "ConstantOfShape", "Identity", "Transpose", "Cast"})
# ``derived`` marks of a group that is one source operator written as several ONNX ops (an
# ATen ``linear``, a TFLite CONV_2D, a TF Conv2D, a Keras Dense): one box to the reader.
OP_GROUPS = frozenset({"aten", "tflite", "tensorflow", "keras"})


def op_groups(graph: Graph) -> np.ndarray:
    """Per node position, whether it is a group standing for one source operator."""
    nodes = graph.nodes
    return np.fromiter(
        (nd.metadata.get("derived") in OP_GROUPS for nd in nodes), dtype=bool, count=len(nodes)
    )


def folded_constants(graph: Graph, is_group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which nodes fold into their readers, and which tensors are folded (weights, and what
    those nodes make): a leaf of ``CONSTANT_OPS`` whose inputs are all folded and whose
    outputs are all activations. The drawing and the box counts both read this.

    Candidates are found by op type at once; only they are visited, in file order, so that a
    constant made from a folded constant folds too.
    """
    nodes, tensors = graph.nodes, graph.tensors
    n, nt = len(nodes), len(tensors)
    folded = np.fromiter((t.kind == "weight" for t in tensors), dtype=bool, count=nt)
    node_folded = np.zeros(n, dtype=bool)
    const = np.fromiter((nd.op_type in CONSTANT_OPS for nd in nodes), dtype=bool, count=n)
    for i in np.flatnonzero(const & ~is_group[:n]).tolist():
        node = nodes[i]
        if all(0 <= t < nt and folded[t] for t in node.inputs) and all(
            0 <= t < nt and tensors[t].kind == "activation" for t in node.outputs
        ):
            node_folded[i] = True
            folded[node.outputs] = True
    return node_folded, folded


def box_weights(graph: Graph, hierarchy: Hierarchy) -> np.ndarray:
    """Per node position, 0 for a node the drawing folds (``folded_constants``), else 1."""
    return (~folded_constants(graph, hierarchy.is_group)[0]).astype(np.int64)


@dataclass(frozen=True)
class BoxCounts:
    """How many boxes each level of a hierarchy draws, for choosing what to open or group.

    ``weight``: per node, ``box_weights``. ``has_io``: the node has inputs or outputs of its
    own (an If with bodies stays a box when open; a scope becomes a frame). ``inside[g + 1]``:
    boxes directly in group g (``inside[0]``: the top level). ``total``: boxes under each node
    when everything is open (a leaf: its weight), an operator's group (``OP_GROUPS``) counting
    as the one box it is to the reader, so a layer around one such group stays a box.
    """

    weight: np.ndarray
    has_io: np.ndarray
    inside: np.ndarray
    total: np.ndarray
    atom: np.ndarray  # op_groups: a group that is one source op

    @staticmethod
    def of(graph: Graph, h: Hierarchy) -> BoxCounts:
        n = len(graph.nodes)
        index = graph.index
        has_io = np.diff(index.node_in_ptr[: n + 1]) + np.diff(index.node_out_ptr[: n + 1]) > 0
        weight = box_weights(graph, h)
        inside = np.bincount(h.parent + 1, weights=weight, minlength=n + 1).astype(np.int64)
        atom = op_groups(graph)
        total = np.where(h.is_group & ~atom, 0.0, np.where(atom, 1.0, weight)).astype(np.float64)
        in_atom = np.zeros(n, dtype=bool)
        in_atom[h.parent >= 0] = atom[h.parent[h.parent >= 0]]
        for depth in range(int(h.depth.max(initial=0)), 0, -1):
            at = np.flatnonzero((h.depth == depth) & ~in_atom)
            np.add.at(total, h.parent[at], total[at])
        return BoxCounts(weight, has_io, inside, total, atom)

    def grows(self) -> np.ndarray:
        """Boxes added by opening each group: what it holds, less its own box when it turns
        into a frame."""
        return self.inside[1:] - np.where(self.has_io, 0, 1)
