"""GGML tensor types: their block layouts, and dequantization to float32 on demand.

A GGUF tensor is stored as blocks along its innermost axis (GGML's ``ne[0]``): a plain type is
one value a block, a quantized one packs 32 or 256 values with their scales. Each dequantizer
takes the blocks as a ``(n, type_size)`` uint8 array and returns ``(n, block_size)`` float32,
vectorised over the blocks (the layouts are those of ggml-quants.c, checked in the tests
against the ``gguf`` package's own reference dequantizers). A large tensor is done in chunks
so the temporaries stay a few tens of MB whatever its size.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = [
    "GGML_TYPES",
    "QK_K",
    "GGMLType",
    "bits",
    "dequantize",
    "e8m0_half",
    "nibbles",
    "tensor_bytes",
]

QK_K = 256
_F16 = np.dtype("<f2")
# Blocks dequantized at once: ~16 MB of float32 output a chunk.
_CHUNK_VALUES = 1 << 22

Dequantizer = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class GGMLType:
    """One GGML type: ``plain`` is the numpy dtype of an unquantized one (read as a view);
    ``dequant`` turns a quantized one's blocks into float32 (None: not read here)."""

    code: int
    name: str
    block_size: int
    type_size: int
    plain: np.dtype | None = None
    dequant: Dequantizer | None = None


def _scale(raw: np.ndarray) -> np.ndarray:
    """A column of little-endian float16 scales (bytes ``(n, 2)``) as float32 ``(n, 1)``."""
    return np.ascontiguousarray(raw).view(_F16).astype(np.float32)


def nibbles(qs: np.ndarray, groups: int, width: int) -> np.ndarray:
    """Low nibbles of each ``width``-byte group, then its high nibbles: ``(n, groups*2*width)``."""
    n = qs.shape[0]
    q = qs.reshape(n, groups, 1, width) >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)
    return (q & np.uint8(0x0F)).reshape(n, -1)


def bits(raw: np.ndarray, count: int) -> np.ndarray:
    """Bit i of a little-endian bit field (bytes ``(n, count//8)``) as ``(n, count)`` uint8."""
    return np.unpackbits(np.ascontiguousarray(raw), axis=-1, count=count, bitorder="little")


def _q8_0(b: np.ndarray) -> np.ndarray:
    return _scale(b[:, :2]) * b[:, 2:].view(np.int8).astype(np.float32)


def _q4_0(b: np.ndarray) -> np.ndarray:
    q = nibbles(b[:, 2:], 1, 16).astype(np.float32) - 8.0
    return _scale(b[:, :2]) * q


def _q4_1(b: np.ndarray) -> np.ndarray:
    return _scale(b[:, :2]) * nibbles(b[:, 4:], 1, 16).astype(np.float32) + _scale(b[:, 2:4])


def _five_bit(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Values 0..31 of a 32-value block: 4 low bits from nibbles, the fifth from a bit field."""
    return (nibbles(low, 1, 16) | (bits(high, 32) << np.uint8(4))).astype(np.float32)


def _q5_0(b: np.ndarray) -> np.ndarray:
    return _scale(b[:, :2]) * (_five_bit(b[:, 6:], b[:, 2:6]) - 16.0)


def _q5_1(b: np.ndarray) -> np.ndarray:
    return _scale(b[:, :2]) * _five_bit(b[:, 8:], b[:, 4:8]) + _scale(b[:, 2:4])


def _q2_k(b: np.ndarray) -> np.ndarray:
    n = b.shape[0]
    scales, qs = b[:, :16], b[:, 16:80]
    d, dmin = _scale(b[:, 80:82]), _scale(b[:, 82:84])
    dl = (d * (scales & 0x0F).astype(np.float32)).reshape(n, 16, 1)
    ml = (dmin * (scales >> 4).astype(np.float32)).reshape(n, 16, 1)
    shift = np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    q = ((qs.reshape(n, 2, 1, 32) >> shift) & np.uint8(3)).reshape(n, 16, 16)
    return (dl * q.astype(np.float32) - ml).reshape(n, QK_K)


def _q3_k(b: np.ndarray) -> np.ndarray:
    n = b.shape[0]
    hmask, qs, packed, d = b[:, :32], b[:, 32:96], b[:, 96:108], _scale(b[:, 108:110])
    low = (packed[:, :8].reshape(n, 1, 8) >> np.array([0, 4], np.uint8).reshape(1, 2, 1)) & 0x0F
    high = (packed[:, 8:].reshape(n, 1, 4) >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 4, 1)) & 3
    sc = (low.reshape(n, 16) | (high.reshape(n, 16) << np.uint8(4))).astype(np.float32) - 32.0
    shift = np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    ql = ((qs.reshape(n, 2, 1, 32) >> shift) & np.uint8(3)).reshape(n, 16, 16)
    # hmask bit j of byte i is value 32*j + i's "no minus 4" flag
    qh = (hmask.reshape(n, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1
    q = ql.astype(np.float32) - 4.0 * (1 - qh.reshape(n, 16, 16)).astype(np.float32)
    return ((d * sc).reshape(n, 16, 1) * q).reshape(n, QK_K)


def _k_scales(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K's eight 6-bit scales and mins packed in 12 bytes, each ``(n, 8)`` float32."""
    n = packed.shape[0]
    p = packed.reshape(n, 3, 4)
    d, m, md = p[:, 0], p[:, 1], p[:, 2]
    sc = np.concatenate([d & 0x3F, (md & 0x0F) | ((d >> 2) & 0x30)], axis=-1)
    mn = np.concatenate([m & 0x3F, (md >> 4) | ((m >> 2) & 0x30)], axis=-1)
    return sc.astype(np.float32), mn.astype(np.float32)


def _q4_k(b: np.ndarray) -> np.ndarray:
    n = b.shape[0]
    sc, mn = _k_scales(b[:, 4:16])
    dl = (_scale(b[:, :2]) * sc).reshape(n, 8, 1)
    ml = (_scale(b[:, 2:4]) * mn).reshape(n, 8, 1)
    q = nibbles(b[:, 16:], 4, 32).reshape(n, 8, 32).astype(np.float32)
    return (dl * q - ml).reshape(n, QK_K)


def _q5_k(b: np.ndarray) -> np.ndarray:
    n = b.shape[0]
    sc, mn = _k_scales(b[:, 4:16])
    dl = (_scale(b[:, :2]) * sc).reshape(n, 8, 1)
    ml = (_scale(b[:, 2:4]) * mn).reshape(n, 8, 1)
    low = nibbles(b[:, 48:], 4, 32).reshape(n, 8, 32)
    qh = (b[:, 16:48].reshape(n, 1, 32) >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1
    q = (low | (qh << np.uint8(4))).astype(np.float32)
    return (dl * q - ml).reshape(n, QK_K)


def _q6_k(b: np.ndarray) -> np.ndarray:
    n = b.shape[0]
    ql, qh, scales, d = b[:, :128], b[:, 128:192], b[:, 192:208], _scale(b[:, 208:210])
    low = nibbles(ql, 2, 64).reshape(n, 8, 32)
    shift = np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    high = ((qh.reshape(n, 2, 1, 32) >> shift) & np.uint8(3)).reshape(n, 8, 32)
    q = (low | (high << np.uint8(4))).astype(np.float32) - 32.0
    dl = (d * scales.view(np.int8).astype(np.float32)).reshape(n, 16, 1)
    return (dl * q.reshape(n, 16, 16)).reshape(n, QK_K)


def _q8_k(b: np.ndarray) -> np.ndarray:
    d = np.ascontiguousarray(b[:, :4]).view("<f4")
    return d * b[:, 4:260].view(np.int8).astype(np.float32)


# IQ4_NL/IQ4_XS's non-linear 4-bit levels, and MXFP4's e2m1 values doubled
# ggml's int8 code books: IQ4's non-linear levels, and MXFP4's E2M1 values doubled
IQ4_LEVELS = np.array(
    [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.int8
)
E2M1_DOUBLED = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.int8)
_IQ4_LEVELS = IQ4_LEVELS.astype(np.float32)
_E2M1_DOUBLED = E2M1_DOUBLED.astype(np.float32)


def _iq4_nl(b: np.ndarray) -> np.ndarray:
    return _scale(b[:, :2]) * _IQ4_LEVELS[nibbles(b[:, 2:], 1, 16)]


def _iq4_xs(b: np.ndarray) -> np.ndarray:
    n = b.shape[0]
    low = nibbles(b[:, 4:8].reshape(n, 4, 1), 4, 1).reshape(n, 4, 2).reshape(n, 8)
    high = np.ascontiguousarray(b[:, 2:4]).view("<u2") >> np.arange(0, 16, 2, dtype=np.uint16)
    sc = (low | ((high & 3).astype(np.uint8) << np.uint8(4))).astype(np.float32) - 32.0
    q = _IQ4_LEVELS[nibbles(b[:, 8:], 8, 16)].reshape(n, 8, 32)
    return ((_scale(b[:, :2]) * sc).reshape(n, 8, 1) * q).reshape(n, QK_K)


def e8m0_half(e: np.ndarray) -> np.ndarray:
    """Half the E8M0 scale 2^(e-127) of exponent bytes ``e``, as float32 built from its bits
    (ggml_e8m0_to_fp32_half; subnormal for e 0 and 1)."""
    e = e.astype(np.uint32)
    f32 = np.where(e < 2, np.uint32(0x00200000) << e, (e - np.uint32(1)) << np.uint32(23))
    return f32.astype(np.uint32).view(np.float32)


def _mxfp4(b: np.ndarray) -> np.ndarray:
    return e8m0_half(b[:, :1]) * _E2M1_DOUBLED[nibbles(b[:, 1:], 1, 16)]


def _bf16(b: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(b).view("<u2").astype(np.uint32) << 16).view(np.float32)


_TABLE: tuple[GGMLType, ...] = (
    GGMLType(0, "F32", 1, 4, plain=np.dtype("<f4")),
    GGMLType(1, "F16", 1, 2, plain=_F16),
    GGMLType(2, "Q4_0", 32, 18, dequant=_q4_0),
    GGMLType(3, "Q4_1", 32, 20, dequant=_q4_1),
    GGMLType(6, "Q5_0", 32, 22, dequant=_q5_0),
    GGMLType(7, "Q5_1", 32, 24, dequant=_q5_1),
    GGMLType(8, "Q8_0", 32, 34, dequant=_q8_0),
    GGMLType(9, "Q8_1", 32, 40),
    GGMLType(10, "Q2_K", QK_K, 84, dequant=_q2_k),
    GGMLType(11, "Q3_K", QK_K, 110, dequant=_q3_k),
    GGMLType(12, "Q4_K", QK_K, 144, dequant=_q4_k),
    GGMLType(13, "Q5_K", QK_K, 176, dequant=_q5_k),
    GGMLType(14, "Q6_K", QK_K, 210, dequant=_q6_k),
    GGMLType(15, "Q8_K", QK_K, 292, dequant=_q8_k),
    GGMLType(16, "IQ2_XXS", QK_K, 66),
    GGMLType(17, "IQ2_XS", QK_K, 74),
    GGMLType(18, "IQ3_XXS", QK_K, 98),
    GGMLType(19, "IQ1_S", QK_K, 50),
    GGMLType(20, "IQ4_NL", 32, 18, dequant=_iq4_nl),
    GGMLType(21, "IQ3_S", QK_K, 110),
    GGMLType(22, "IQ2_S", QK_K, 82),
    GGMLType(23, "IQ4_XS", QK_K, 136, dequant=_iq4_xs),
    GGMLType(24, "I8", 1, 1, plain=np.dtype("i1")),
    GGMLType(25, "I16", 1, 2, plain=np.dtype("<i2")),
    GGMLType(26, "I32", 1, 4, plain=np.dtype("<i4")),
    GGMLType(27, "I64", 1, 8, plain=np.dtype("<i8")),
    GGMLType(28, "F64", 1, 8, plain=np.dtype("<f8")),
    GGMLType(29, "IQ1_M", QK_K, 56),
    GGMLType(30, "BF16", 1, 2, dequant=_bf16),
    GGMLType(34, "TQ1_0", QK_K, 54),
    GGMLType(35, "TQ2_0", QK_K, 66),
    GGMLType(39, "MXFP4", 32, 17, dequant=_mxfp4),
)
GGML_TYPES: dict[int, GGMLType] = {t.code: t for t in _TABLE}


def tensor_bytes(kind: GGMLType, count: int) -> int:
    """Bytes of ``count`` values stored as ``kind`` (``count`` a multiple of its block)."""
    return count // kind.block_size * kind.type_size


def dequantize(kind: GGMLType, raw: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """The float32 values of a quantized tensor's bytes ``raw`` (uint8), in ``shape``."""
    if kind.dequant is None:
        raise ValueError(kind.name)
    blocks = raw.reshape(-1, kind.type_size)
    out = np.empty((blocks.shape[0], kind.block_size), np.float32)
    step = max(1, _CHUNK_VALUES // kind.block_size)
    for start in range(0, blocks.shape[0], step):  # chunks of ~4M values, not blocks
        out[start : start + step] = kind.dequant(blocks[start : start + step])
    return out.reshape(shape)
