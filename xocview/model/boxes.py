"""How many boxes a node adds to the default drawing when it is visible: 1, or 0 for a
constant-making leaf that the drawing folds into its readers (as Netron does).

Sizing levels by boxes rather than nodes keeps a 400-box CNN whole although its exporter wrote
a ``ConstantOfShape`` per weight (resnet50: 415 nodes, 176 boxes); the first view and the
section groups count the same way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xocview.model.graph import Graph
    from xocview.model.hierarchy import Hierarchy

__all__ = ["CONSTANT_OPS", "box_weights"]

# Operators that only make a constant, folded with the weights when all they read are weights
# (the ONNX light models make every weight with ConstantOfShape from a shape initializer;
# TorchScript exports pass a shared weight through Identity).
CONSTANT_OPS = frozenset({"Constant", "ConstantOfShape", "Identity"})


def box_weights(graph: Graph, hierarchy: Hierarchy) -> np.ndarray:
    """Per node position, 0 for a leaf of ``CONSTANT_OPS`` that reads only weights and makes
    only activations (what the drawing folds), else 1 (int64)."""
    nodes, tensors, index = graph.nodes, graph.tensors, graph.index
    n, nt = len(nodes), len(tensors)
    const = np.fromiter((nd.op_type in CONSTANT_OPS for nd in nodes), dtype=bool, count=n)
    const &= ~hierarchy.is_group
    if not const.any():
        return np.ones(n, dtype=np.int64)
    kinds = [t.kind for t in tensors]
    weight = np.fromiter((k == "weight" for k in kinds), dtype=bool, count=nt)
    activation = np.fromiter((k == "activation" for k in kinds), dtype=bool, count=nt)
    const &= ~_any_not(index.node_in_ptr, index.node_in, weight, n)
    const &= ~_any_not(index.node_out_ptr, index.node_out, activation, n)
    return (~const).astype(np.int64)


def _any_not(ptr: np.ndarray, flat: np.ndarray, ok: np.ndarray, n: int) -> np.ndarray:
    """Per node, whether any of its CSR tensors (``ptr``/``flat``) is out of range or not ``ok``."""
    owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr[: n + 1]))
    inside = (flat >= 0) & (flat < len(ok))
    bad = ~inside
    bad[inside] = ~ok[flat[inside]]
    return np.bincount(owner[bad], minlength=n) > 0
