"""onnxruntime's GatherBlockQuantized (com.microsoft): a Gather from a block-quantized table
(int4, uint4, uint8 packing 2, 4 or 8 bits, float8 or float4), dequantized on the way out.

Only the gathered slices are dequantized: an embedding table stays quantized in memory.
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.contrib_qlinear import MS
from xocview.executor.ops.contrib_qmatmul import unpack_bits
from xocview.executor.ops.quantize import check_float
from xocview.executor.registry import kernel
from xocview.model.dtypes import numpy_type

__all__ = ["gather_block_quantized"]

F32 = np.float32


def _ml(name: str) -> np.dtype:
    dtype = numpy_type(name)
    assert dtype is not None, name
    return dtype


_INT4 = (_ml("int4"), _ml("uint4"))
_FLOATS = tuple(
    _ml(n) for n in ("float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz", "float4e2m1")
)


def _axis(op: str, name: str, axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: {name} {axis} is out of range for rank {rank}")
    return axis % rank


def _values(
    op: str, data: np.ndarray, zero_points: np.ndarray | None, bits: int, qa: int
) -> tuple[np.ndarray, np.ndarray | None]:
    """The quantized values as float32 (uint8 bytes unpacked along the last axis) and their
    zero points likewise (None: none)."""
    if data.dtype in _FLOATS:
        if zero_points is not None:
            raise ValueError(f"{op}: zero_points must be omitted for {data.dtype} data")
        return data.astype(F32), None
    if data.dtype in _INT4:
        if bits != 4:
            raise ValueError(f"{op}: bits {bits} with {data.dtype} data; expected 4")
        zero = np.zeros((), F32) if zero_points is None else zero_points.astype(F32)
        return data.astype(F32), zero
    if data.dtype != np.uint8:
        raise ValueError(
            f"{op}: data of dtype {data.dtype} is not supported; expected int4, uint4, uint8, "
            "float8 or float4e2m1"
        )
    if bits not in (2, 4, 8):
        raise ValueError(f"{op}: bits {bits} is not supported; expected 2, 4 or 8")
    if qa != data.ndim - 1:
        raise ValueError(f"{op}: uint8 data must be quantized along its last axis")
    per = 8 // bits
    values = unpack_bits(data, bits).astype(F32) if per > 1 else data.astype(F32)
    if zero_points is None:
        return values, np.full((), float(1 << (bits - 1)), F32)
    zero = unpack_bits(zero_points, bits) if per > 1 else zero_points
    return values, zero.astype(F32)


@kernel("GatherBlockQuantized", domain=MS, exact_types=True)
def gather_block_quantized(
    data: np.ndarray,
    indices: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray | None = None,
    *,
    bits: int = 4,
    block_size: int = 128,
    gather_axis: int = 0,
    quantize_axis: int = 1,
) -> np.ndarray:
    """Gather(data, indices, gather_axis) dequantized as (q - zero_point) * scale, one scale
    per block of ``block_size`` along ``quantize_axis`` (0 for float8/float4: the whole
    axis). Default zero points: 0 for int4/uint4, 2**(bits - 1) for uint8. An index out of
    range gives zeros. The output has the scales' type."""
    op = "GatherBlockQuantized"
    check_float(op, "scales", scales)
    if indices.dtype not in (np.int32, np.int64):
        raise ValueError(f"{op}: indices of dtype {indices.dtype}; expected int32 or int64")
    rank = data.ndim
    if rank < 1 or scales.ndim != rank:
        raise ValueError(f"{op}: scales has rank {scales.ndim}, data {rank}; they must agree")
    ga = _axis(op, "gather_axis", gather_axis, rank)
    qa = _axis(op, "quantize_axis", quantize_axis, rank)
    values, zero = _values(op, data, zero_points, bits, qa)
    span = values.shape[qa]
    size = block_size or span
    if (block_size == 0 and data.dtype not in _FLOATS) or size < 1:
        raise ValueError(f"{op}: block_size {block_size}; expected a power of 2, 16 or more")
    n = data.shape[ga]
    idx = indices.astype(np.int64)
    valid = (idx >= -n) & (idx < n)
    idx = np.where(valid, idx % max(n, 1), 0)
    params = [scales.astype(F32)] + ([] if zero is None or zero.ndim == 0 else [zero])
    picked = []
    for p in params:  # along the gather axis: the index's row, or its block on the same axis
        at = idx // size if ga == qa else idx
        p = np.take(p, np.minimum(at, p.shape[ga] - 1) if p.shape[ga] > 1 else 0 * at, axis=ga)
        picked.append(p)
    q = np.take(values, idx, axis=ga)
    out_qa = qa if qa < ga else qa + idx.ndim - 1
    if ga != qa:
        picked = [_spread(p, out_qa, size, q.shape[out_qa]) for p in picked]
    scale = picked[0]
    centre = picked[1] if len(picked) > 1 else (zero if zero is not None else None)
    y = (q - centre) * scale if centre is not None else q * scale
    keep = valid.reshape(valid.shape + (1,) * (rank - 1 - ga))
    y = np.where(keep, y, F32(0)) if not valid.all() else y
    return y.astype(scales.dtype, copy=False)


def _spread(p: np.ndarray, axis: int, size: int, length: int) -> np.ndarray:
    """Per-block parameters repeated ``size`` times along ``axis`` and cut to ``length``."""
    if p.shape[axis] == 1:
        return p
    full = np.repeat(p, size, axis=axis)
    return full[(slice(None),) * axis + (slice(0, length),)]
