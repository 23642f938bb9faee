"""Quantized weights drawn as what they are: ONNX DequantizeLinear (opset 21+) of int8 values
with one float32 scale per block along the row (``axis`` 1, ``block_size`` per type, zero
point 0), wherever GGML's dequantization is exactly ``float32(scale) * int8``.

A type qualifies when its float32 result is one product of an int8 value and a per-block
scale that float32 holds exactly; DequantizeLinear then computes the same single rounding:

- Q8_0, Q4_0, Q5_0, IQ4_NL: a float16 ``d`` per 32 times ``q``, ``q - 8``, ``q - 16`` or the
  int8 table ``kvalues_iq4nl[q]``.
- MXFP4: per 32, half the E8M0 scale (``ggml_e8m0_to_fp32_half``, a power of two or a float32
  subnormal) times the int8 table of doubled E2M1 values.
- Q6_K, Q3_K: per 16, ``d * sc`` with ``sc`` an int8 (Q6_K) or a 6-bit ``sc - 32`` (Q3_K),
  times ``q - 32`` (Q6_K) or a 3-bit ``q`` in [-4, 3]; IQ4_XS: per 32, ``d * (ls - 32)``
  times ``kvalues_iq4nl[q]``. GGML (and the gguf package) multiply ``d * sc`` first in
  float32, where an 11-bit mantissa times an integer of at most 8 bits is exact, so the
  scale stored here is GGML's own intermediate.
- Q8_K: a float32 ``d`` per 256 times an int8.

Types with a per-block minimum (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K) compute ``d * q + m`` (Q4_1,
Q5_1) or ``d * sc * q - dmin * m`` (k-quants): the minimum is a float added after the scale,
while DequantizeLinear's zero point is an integer of x's type subtracted before it, and
``m / d`` is in general no integer. Drawing them would take a second op and a per-block
minimum tensor broadcast along the row, so they are not one DequantizeLinear. They, and the
IQ grid types (grid and sign lookups, half-step scales), stay float32 weights dequantized on
demand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from xocview.formats.gguf.header import TensorInfo
from xocview.formats.gguf.quants import (
    E2M1_DOUBLED,
    GGML_TYPES,
    IQ4_LEVELS,
    QK_K,
    bits,
    e8m0_half,
    nibbles,
)
from xocview.formats.llm.gguf_names import Mapped, unpermute
from xocview.model import Graph, Node, Tensor

__all__ = ["EXACT", "blockwise", "split"]

Place = tuple[TensorInfo, Mapped, Callable[[], np.ndarray]]  # the tensor, where, its bytes
# GGML blocks (n, type_size) uint8 -> int8 values (n, K) and float32 scales (n, K / block)
Splitter = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]

# kvalues_iq4nl, and MXFP4's E2M1 values doubled (ggml's kvalues_mxfp4), as int8
# Blocks split at once: ~4M values, so a large tensor's temporaries stay a few tens of MB.
_CHUNK_VALUES = 1 << 22


def _f16(raw: np.ndarray) -> np.ndarray:
    """A column of little-endian float16 scales (bytes ``(n, 2)``) as float32 ``(n, 1)``."""
    return np.ascontiguousarray(raw).view("<f2").astype(np.float32)


def _signed(q: np.ndarray, offset: int) -> np.ndarray:
    """uint8 codes minus ``offset`` as int8 (the codes are below 128)."""
    return q.view(np.int8) - np.int8(offset)


def _q8_0(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return b[:, 2:].view(np.int8), _f16(b[:, :2])


def _q4_0(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _signed(nibbles(b[:, 2:], 1, 16), 8), _f16(b[:, :2])


def _q5_0(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    q = nibbles(b[:, 6:], 1, 16) | (bits(b[:, 2:6], 32) << np.uint8(4))
    return _signed(q, 16), _f16(b[:, :2])


def _iq4_nl(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return IQ4_LEVELS[nibbles(b[:, 2:], 1, 16)], _f16(b[:, :2])


def _mxfp4(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return E2M1_DOUBLED[nibbles(b[:, 1:], 1, 16)], e8m0_half(b[:, :1])


def _q6_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = b.shape[0]
    ql, qh, sc, d = b[:, :128], b[:, 128:192], b[:, 192:208], _f16(b[:, 208:210])
    low = nibbles(ql, 2, 64).reshape(n, 8, 32)
    shift = np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    high = ((qh.reshape(n, 2, 1, 32) >> shift) & np.uint8(3)).reshape(n, 8, 32)
    q = _signed(low | (high << np.uint8(4)), 32).reshape(n, QK_K)
    return q, d * sc.view(np.int8).astype(np.float32)


def _q3_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = b.shape[0]
    hmask, qs, packed, d = b[:, :32], b[:, 32:96], b[:, 96:108], _f16(b[:, 108:110])
    low = (packed[:, :8].reshape(n, 1, 8) >> np.array([0, 4], np.uint8).reshape(1, 2, 1)) & 0x0F
    high = (packed[:, 8:].reshape(n, 1, 4) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 4, 1)) & 3
    sc = _signed(low.reshape(n, 16) | (high.reshape(n, 16) << np.uint8(4)), 32)
    shift = np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    ql = ((qs.reshape(n, 2, 1, 32) >> shift) & np.uint8(3)).reshape(n, QK_K)
    # hmask bit j of byte i: value 32*j + i is not lowered by 4
    qh = (hmask.reshape(n, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1
    q = ql.view(np.int8) - ((qh.reshape(n, QK_K) ^ np.uint8(1)) << np.uint8(2)).view(np.int8)
    return q, d * sc.astype(np.float32)


def _iq4_xs(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = b.shape[0]
    low = nibbles(b[:, 4:8].reshape(n, 4, 1), 4, 1).reshape(n, 4, 2).reshape(n, 8)
    high = np.ascontiguousarray(b[:, 2:4]).view("<u2") >> np.arange(0, 16, 2, dtype=np.uint16)
    ls = _signed(low | ((high & 3).astype(np.uint8) << np.uint8(4)), 32)
    q = IQ4_LEVELS[nibbles(b[:, 8:], 8, 16)]
    return q, _f16(b[:, :2]) * ls.astype(np.float32)


def _q8_k(b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return b[:, 4:260].view(np.int8), np.ascontiguousarray(b[:, :4]).view("<f4")


# type -> (DequantizeLinear's block_size, the splitter of its GGML blocks)
_SPLIT: dict[str, tuple[int, Splitter]] = {
    "Q8_0": (32, _q8_0),
    "Q4_0": (32, _q4_0),
    "Q5_0": (32, _q5_0),
    "IQ4_NL": (32, _iq4_nl),
    "MXFP4": (32, _mxfp4),
    "Q6_K": (16, _q6_k),
    "Q3_K": (16, _q3_k),
    "IQ4_XS": (32, _iq4_xs),
    "Q8_K": (QK_K, _q8_k),
}
# type -> the block_size its DequantizeLinear node carries
EXACT: dict[str, int] = {kind: block for kind, (block, _) in _SPLIT.items()}
_TYPES = {t.name: t for t in GGML_TYPES.values() if t.name in EXACT}


def split(kind: str, raw: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """int8 values ``[rows, cols]`` and float32 scales ``[rows, cols / EXACT[kind]]`` of a
    ``kind`` tensor's bytes, whose product is GGML's float32 dequantization."""
    block, splitter = _SPLIT[kind]
    ggml = _TYPES[kind]
    blocks = raw.reshape(-1, ggml.type_size)
    values = np.empty((blocks.shape[0], ggml.block_size), np.int8)
    scales = np.empty((blocks.shape[0], ggml.block_size // block), np.float32)
    step = max(1, _CHUNK_VALUES // ggml.block_size)
    for start in range(0, blocks.shape[0], step):  # chunks of ~4M values, not blocks
        values[start : start + step], scales[start : start + step] = splitter(
            blocks[start : start + step]
        )
    return values.reshape(rows, cols), scales.reshape(rows, cols // block)


def _reader(kind: str, place: Place, rows: int, cols: int, which: int) -> Callable[[], np.ndarray]:
    _, m, raw = place

    def read() -> np.ndarray:
        out = split(kind, raw(), rows, cols)[which]
        return unpermute(out, m.heads) if m.heads else out

    return read


def blockwise(graph: Graph, places: Mapping[str, Place]) -> None:
    """Each bound 2-D weight of an EXACT type becomes the output of a DequantizeLinear node
    placed before its first reader (in that reader's group), its inputs the file's values and
    scales, read when first used."""
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
    block = EXACT[kind]
    rows, cols = t.shape
    meta = {k: v for k, v in t.metadata.items() if k != "values"}
    values = _reader(kind, place, rows, cols, 0)
    q = Tensor(t.id + ".values", "weight", [rows, cols], "int8", dict(meta), values)
    scales = _reader(kind, place, rows, cols, 1)
    scale = Tensor(t.id + ".scales", "weight", [rows, cols // block], "float32", meta, scales)
    graph.tensors.extend([q, scale])
    t.kind, t._data = "activation", None
    t.metadata["values"] = f"{kind}: DequantizeLinear of int8 values and float32 scales per {block}"
    node_meta: dict[str, Any] = {"parent_id": parent} if parent is not None else {}
    inputs = [len(graph.tensors) - 2, len(graph.tensors) - 1]
    attrs = {"axis": 1, "block_size": block}
    return Node(t.id + "/DequantizeLinear", "DequantizeLinear", inputs, [ti], attrs, node_meta)
