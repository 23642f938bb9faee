"""Dropping weights no node reads (``drop_unread_weights``).

A reader that writes a source op as ONNX ops often takes a constant operand's values into an
attribute or a new constant (TF's ``reduction_indices``, a TFLite reshape's shape), leaving
the file's own tensor read by nobody. Kept, it shows in the tensor counts, and Save As ONNX
writes it as an initializer onnxruntime warns about.
"""

from __future__ import annotations

import numpy as np

from xocview.model.graph import Graph

__all__ = ["drop_unread_weights"]


def drop_unread_weights(graph: Graph) -> int:
    """Remove the weights that no node reads and that are no graph input or output; node and
    graph tensor indices are renumbered. Returns how many were removed."""
    if any(isinstance(v, Graph) for node in graph.nodes for v in node.attributes.values()):
        return 0  # a body may read an outer weight by name: leave the graph as it is
    n = len(graph.tensors)
    read = np.zeros(n, dtype=bool)
    for node in graph.nodes:
        read[[t for t in node.inputs if t >= 0]] = True
        read[node.outputs] = True
    read[graph.inputs] = True
    read[graph.outputs] = True
    weight = np.fromiter((t.kind == "weight" for t in graph.tensors), dtype=bool, count=n)
    gone = weight & ~read
    if not gone.any():
        return 0
    new = np.cumsum(~gone) - 1
    keep = np.flatnonzero(~gone).tolist()
    graph.tensors = [graph.tensors[i] for i in keep]
    remap = new.tolist()
    for node in graph.nodes:
        node.inputs = [remap[t] if t >= 0 else t for t in node.inputs]
        node.outputs = [remap[t] for t in node.outputs]
    graph.inputs = [remap[t] for t in graph.inputs]
    graph.outputs = [remap[t] for t in graph.outputs]
    graph.invalidate()
    return int(gone.sum())
