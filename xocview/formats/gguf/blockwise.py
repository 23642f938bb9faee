"""Q8_0 and Q4_0 weights drawn as what they are: ONNX DequantizeLinear (opset 21+) of int8
values with one float32 scale per 32 along the row (``block_size`` 32, ``axis`` 1).

Both are exact: GGML computes ``d * q`` in float32 from a float16 scale ``d`` and an int8
``q`` (Q4_0: a 4-bit ``q - 8``), and DequantizeLinear computes ``x * scale`` in float32 from
the same numbers. The other types (k-quants with their 6-bit sub-scales and minimums, IQ
grids) have no such form and stay float32 weights dequantized on demand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from xocview.formats.gguf.header import TensorInfo
from xocview.formats.llm.gguf_names import Mapped, unpermute
from xocview.model import Graph, Node, Tensor

__all__ = ["EXACT", "blockwise"]

BLOCK = 32
# type -> bytes a block (a float16 scale, then its values)
EXACT = {"Q8_0": 34, "Q4_0": 18}
Place = tuple[TensorInfo, Mapped, Callable[[], np.ndarray]]  # the tensor, where, its bytes


def split(kind: str, raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 values [rows, cols] and float32 scales [rows, cols / 32] of Q8_0 or Q4_0 bytes."""
    blocks = raw.reshape(-1, EXACT[kind])
    scale = blocks[:, :2].view(np.float16).astype(np.float32).reshape(rows, cols // BLOCK)
    if kind == "Q8_0":
        return blocks[:, 2:].view(np.int8).reshape(rows, cols), scale
    qs = blocks[:, 2:]  # the low nibbles are a block's first 16 values, the high its last
    values = np.concatenate([qs & 0x0F, qs >> 4], axis=1).view(np.int8) - np.int8(8)
    return values.reshape(rows, cols), scale


def _reader(kind: str, place: Place, rows: int, cols: int, which: int) -> Callable[[], np.ndarray]:
    _, m, raw = place

    def read() -> np.ndarray:
        out = split(kind, raw(), rows, cols)[which]
        return unpermute(out, m.heads) if m.heads else out

    return read


def blockwise(graph: Graph, places: Mapping[str, Place]) -> None:
    """Each bound 2-D Q8_0/Q4_0 weight becomes the output of a DequantizeLinear node placed
    before its first reader (in that reader's group), its inputs the file's values and scales."""
    first: dict[int, int] = {}
    for k, node in enumerate(graph.nodes):
        for read in node.inputs:
            first.setdefault(read, k)
    before: dict[int, list[Node]] = {}
    for ti, t in enumerate(graph.tensors[:]):  # the loop appends values and scales
        place = places.get(t.id) if t.kind == "weight" and ti in first else None
        if place is None or place[0].kind.name not in EXACT or len(t.shape) != 2:
            continue
        at = first[ti]
        parent = graph.nodes[at].metadata.get("parent_id")
        before.setdefault(at, []).append(_dequantize_node(graph, ti, place, parent))
    if not before:
        return
    groups = {n.id: n for n in graph.nodes if "children_ids" in n.metadata}
    nodes: list[Node] = []
    for k, node in enumerate(graph.nodes):
        for new in before.get(k, ()):
            nodes.append(new)
            parent = groups.get(new.metadata.get("parent_id", ""))
            if parent is not None:
                kids = parent.metadata["children_ids"]
                kids.insert(kids.index(node.id) if node.id in kids else len(kids), new.id)
        nodes.append(node)
    graph.nodes[:] = nodes
    graph.invalidate()


def _dequantize_node(graph: Graph, ti: int, place: Place, parent: Any) -> Node:
    """The weight ``ti`` turned into DequantizeLinear's output; its values and scales added
    as the weights read from the file."""
    t = graph.tensors[ti]
    kind = place[0].kind.name
    rows, cols = t.shape
    meta = {k: v for k, v in t.metadata.items() if k != "values"}
    values = _reader(kind, place, rows, cols, 0)
    q = Tensor(t.id + ".values", "weight", [rows, cols], "int8", dict(meta), values)
    scales = _reader(kind, place, rows, cols, 1)
    scale = Tensor(t.id + ".scales", "weight", [rows, cols // BLOCK], "float32", meta, scales)
    graph.tensors.extend([q, scale])
    t.kind, t._data = "activation", None
    t.metadata["values"] = f"{kind}: DequantizeLinear of int8 values and float32 scales per 32"
    node_meta: dict[str, Any] = {"parent_id": parent} if parent is not None else {}
    inputs = [len(graph.tensors) - 2, len(graph.tensors) - 1]
    attrs = {"axis": 1, "block_size": BLOCK}
    return Node(t.id + "/DequantizeLinear", "DequantizeLinear", inputs, [ti], attrs, node_meta)
