"""onnxruntime's quantized products (com.microsoft): DynamicQuantizeMatMul, MatMulIntegerToFloat
and QGemm (8-bit operands, int32 accumulation), and MatMulNBits (block-quantized 2/4/8-bit
weights); GatherBlockQuantized, the block-quantized Gather, is in contrib_qgather.py.

Integer products are summed in float64, exact below 2**53 and handed to BLAS, as
QLinearMatMul does; the result is scaled in float32, as onnxruntime's output processors do.
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.contrib_qlinear import MS, per_tensor_scale, per_tensor_zero
from xocview.executor.ops.quantize import (
    EIGHT_BIT,
    check_dtype,
    check_float,
    dynamic_quantize_linear,
    quantize_rounded,
)
from xocview.executor.registry import kernel

__all__ = [
    "dynamic_quantize_matmul",
    "matmul_integer_to_float",
    "matmul_nbits",
    "qgemm",
    "unpack_bits",
]

F32 = np.float32


def _per_column(op: str, name: str, p: np.ndarray | None, n: int) -> np.ndarray | None:
    """A scale or zero point of B: one value, or one per column of B (N entries)."""
    if p is None or p.size == 1:
        return None if p is None else p.reshape(())
    if p.ndim == 1 and p.shape[0] == n:
        return p
    raise ValueError(f"{op}: {name} has shape {list(p.shape)}; expected a scalar or [{n}]")


def _integer_matmul(
    op: str,
    a: np.ndarray,
    a_zero: np.ndarray | int,
    b: np.ndarray,
    b_zero_point: np.ndarray | None,
) -> np.ndarray:
    """(a - a_zero) @ (b - b_zero) with numpy's matmul broadcasting, exact in float64."""
    check_dtype(op, "B", b, EIGHT_BIT)
    if b.ndim < 1 or a.ndim < 1:
        raise ValueError(f"{op}: A and B must have rank 1 or more")
    bz = _per_column(op, "b_zero_point", b_zero_point, b.shape[-1])
    a64 = a.astype(np.float64) - np.asarray(a_zero, dtype=np.float64)
    b64 = b.astype(np.float64)
    if bz is not None:
        check_dtype(op, "b_zero_point", bz, (b.dtype,))
        b64 = b64 - bz.astype(np.float64)
    if a64.shape[-1] != b64.shape[-2 if b64.ndim > 1 else 0]:
        raise ValueError(f"{op}: A {list(a.shape)} and B {list(b.shape)} do not multiply")
    return np.matmul(a64, b64)


def _scaled(acc: np.ndarray, multiplier: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """float32(acc) * multiplier (+ bias), as onnxruntime's scale-bias output processor."""
    y = acc.astype(F32) * multiplier.astype(F32)
    if bias is not None:
        y = y + bias.astype(F32)
    return y.astype(F32, copy=False)


@kernel("DynamicQuantizeMatMul", domain=MS)
def dynamic_quantize_matmul(
    A: np.ndarray,
    B: np.ndarray,
    b_scale: np.ndarray,
    b_zero_point: np.ndarray | None = None,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """A quantized to uint8 as DynamicQuantizeLinear does (its range widened to 0, scale
    range / 255), multiplied with B in integers, scaled by a_scale * b_scale, plus bias."""
    op = "DynamicQuantizeMatMul"
    check_dtype(op, "A", A, (np.dtype(np.float32),))
    check_float(op, "b_scale", b_scale)
    qa, a_scale, a_zero = dynamic_quantize_linear(A)
    acc = _integer_matmul(op, qa, a_zero, B, b_zero_point)
    bs = _per_column(op, "b_scale", b_scale, B.shape[-1])
    assert bs is not None
    return _scaled(acc, a_scale * bs.astype(F32), bias)


@kernel("MatMulIntegerToFloat", domain=MS)
def matmul_integer_to_float(
    A: np.ndarray,
    B: np.ndarray,
    a_scale: np.ndarray,
    b_scale: np.ndarray,
    a_zero_point: np.ndarray | None = None,
    b_zero_point: np.ndarray | None = None,
    bias: np.ndarray | None = None,
) -> np.ndarray:
    """(A - a_zero_point) @ (B - b_zero_point) * a_scale * b_scale + bias, as float32; B's
    scale and zero point may hold one value per column."""
    op = "MatMulIntegerToFloat"
    check_dtype(op, "A", A, EIGHT_BIT)
    out = a_scale.dtype
    zero = per_tensor_zero(op, "a_zero_point", a_zero_point, A.dtype)
    acc = _integer_matmul(op, A, zero, B, b_zero_point)
    bs = _per_column(op, "b_scale", b_scale, B.shape[-1])
    assert bs is not None
    check_float(op, "b_scale", bs)
    y = _scaled(acc, per_tensor_scale(op, "a_scale", a_scale) * bs.astype(F32), bias)
    return y.astype(out, copy=False)


@kernel("QGemm", domain=MS)
def qgemm(
    A: np.ndarray,
    a_scale: np.ndarray,
    a_zero_point: np.ndarray,
    B: np.ndarray,
    b_scale: np.ndarray,
    b_zero_point: np.ndarray,
    C: np.ndarray | None = None,
    y_scale: np.ndarray | None = None,
    y_zero_point: np.ndarray | None = None,
    *,
    alpha: float = 1.0,
    transA: int = 0,
    transB: int = 0,
) -> np.ndarray:
    """acc = C + (A - a_zero) @ (B - b_zero) in integers (int32 C broadcast to (M, N)), then
    acc * (alpha * a_scale * b_scale) as float32, or with y_scale requantized:
    saturate(rint(acc * (alpha * a_scale * b_scale / y_scale)) + y_zero)."""
    op = "QGemm"
    check_dtype(op, "A", A, EIGHT_BIT)
    if A.ndim != 2 or B.ndim != 2:
        raise ValueError(f"{op}: A {list(A.shape)} and B {list(B.shape)} must be matrices")
    a = A.T if transA else A
    b = B.T if transB else B
    zero = per_tensor_zero(op, "a_zero_point", a_zero_point, A.dtype)
    acc = _integer_matmul(op, a, zero, b, b_zero_point)
    if C is not None:
        check_dtype(op, "C", C, (np.dtype(np.int32),))
        acc = acc + C.astype(np.float64)
    bs = _per_column(op, "b_scale", b_scale, b.shape[-1])
    assert bs is not None
    scale = F32(alpha) * per_tensor_scale(op, "a_scale", a_scale) * bs.astype(F32)
    if y_scale is None:
        return _scaled(acc, scale, None)
    if y_zero_point is None:
        raise ValueError(f"{op}: y_scale is given without y_zero_point; expected both or neither")
    check_dtype(op, "y_zero_point", y_zero_point, EIGHT_BIT)
    scale = scale / per_tensor_scale(op, "y_scale", y_scale)
    zero_y = per_tensor_zero(op, "y_zero_point", y_zero_point, y_zero_point.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        q = acc.astype(F32) * scale.astype(F32)
    return quantize_rounded(q, np.asarray(float(zero_y)), y_zero_point.dtype)


# --- MatMulNBits ---------------------------------------------------------------------------------


def unpack_bits(packed: np.ndarray, bits: int) -> np.ndarray:
    """uint8 bytes holding 8 // bits values each, low bits first, as one value per item along
    a new last axis merged into the old one (shape [..., n * 8 // bits])."""
    per = 8 // bits
    shifts = (np.arange(per, dtype=np.uint8) * bits).astype(np.uint8)
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(*packed.shape[:-1], packed.shape[-1] * per)


def _nbits_weight(
    B: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray | None,
    K: int,
    N: int,
    bits: int,
    block_size: int,
) -> np.ndarray:
    """The dequantized weight, float32 [N, K]: (q - zero_point) * scale per block along K."""
    op = "MatMulNBits"
    blocks = -(-K // block_size)
    q = unpack_bits(B.reshape(N, blocks, -1), bits).reshape(N, -1)[:, :K]
    if scales.size != N * blocks:
        raise ValueError(f"{op}: scales has shape {list(scales.shape)}; expected [{N}, {blocks}]")
    s = scales.astype(F32).reshape(N, blocks)
    if zero_points is None:
        z = np.full((N, blocks), float(1 << (bits - 1)), dtype=F32)
    elif zero_points.dtype == np.uint8:
        per_row = -(-blocks * bits // 8)
        if zero_points.size != N * per_row:
            raise ValueError(
                f"{op}: zero_points has shape {list(zero_points.shape)}; expected packed "
                f"[{N}, {per_row}]"
            )
        z = unpack_bits(zero_points.reshape(N, per_row), bits)[:, :blocks].astype(F32)
    else:
        if zero_points.size != N * blocks:
            raise ValueError(
                f"{op}: zero_points has shape {list(zero_points.shape)}; expected [{N}, {blocks}]"
            )
        z = zero_points.astype(F32).reshape(N, blocks)
    which = np.arange(K) // block_size
    return (q.astype(F32) - z[:, which]) * s[:, which]


def _int8_blocks(a: np.ndarray, block_size: int) -> np.ndarray:
    """``a`` (float32) as int8 per block of ``block_size`` along its last axis, dequantized:
    symmetric, scale = max|a| / 127 per block, values rounded half to even after a multiply by
    1 / scale (onnxruntime's CompInt8 path; an all-zero block stays zero)."""
    k = a.shape[-1]
    blocks = -(-k // block_size)
    padded = np.zeros((*a.shape[:-1], blocks * block_size), dtype=F32)
    padded[..., :k] = a
    grouped = padded.reshape(*a.shape[:-1], blocks, block_size)
    scale = np.abs(grouped).max(axis=-1, keepdims=True) / F32(127)
    nonzero = scale > 0
    inverse = np.where(nonzero, F32(1) / np.where(nonzero, scale, F32(1)), F32(0)).astype(F32)
    q = np.rint(grouped * inverse)
    return (q * scale).astype(F32).reshape(padded.shape)[..., :k]


@kernel("MatMulNBits", domain=MS)
def matmul_nbits(
    A: np.ndarray,
    B: np.ndarray,
    scales: np.ndarray,
    zero_points: np.ndarray | None = None,
    g_idx: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    *,
    K: int,
    N: int,
    accuracy_level: int = 0,
    bits: int = 4,
    block_size: int,
    weight_prepacked: int = 0,
) -> np.ndarray:
    """A @ W.T (+ bias) with W [N, K] dequantized from B's packed blocks of ``block_size``
    along K: (q - zero_point) * scale; zero points packed (uint8) or not (A's type), by
    default 2**(bits - 1). The deprecated g_idx, whose meaning the documentation leaves out,
    is refused unless empty.

    accuracy_level 4 (what onnxruntime-genai's builder writes for the CPU) quantizes A to int8
    by the same blocks along K first, as documented and as onnxruntime does (not for 2-bit
    blocks of 16, which its int8 kernels do not take); other levels work in float32. An
    empty B (a 0 in its shape) stands for an omitted weight: the output is the bias, or zeros.
    """
    op = "MatMulNBits"
    check_float(op, "A", A)
    check_dtype(op, "B", B, (np.dtype(np.uint8),))
    if bits not in (2, 4, 8):
        raise ValueError(f"{op}: bits {bits} is not supported; expected 2, 4 or 8")
    if weight_prepacked:
        raise ValueError(
            f"{op}: weight_prepacked {weight_prepacked} (a GPU layout) is not supported"
        )
    if block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"{op}: block_size {block_size}; expected a power of 2, 16 or more")
    if g_idx is not None and g_idx.size:
        raise ValueError(f"{op}: g_idx (deprecated, undocumented) is not supported")
    if A.ndim < 1 or A.shape[-1] != K:
        raise ValueError(f"{op}: A has shape {list(A.shape)}; expected [..., {K}]")
    shape = (*A.shape[:-1], N)
    if B.size == 0:
        y = np.zeros(shape, dtype=F32)
    else:
        blob = block_size * bits // 8
        want = N * (-(-K // block_size)) * blob
        if B.size != want:
            raise ValueError(
                f"{op}: B has shape {list(B.shape)}; expected [{N}, {-(-K // block_size)}, {blob}]"
            )
        w = _nbits_weight(B, scales, zero_points, K, N, bits, block_size)
        a = A.astype(F32)
        if accuracy_level == 4 and (bits > 2 or block_size >= 32):
            a = _int8_blocks(a, block_size)
        y = np.matmul(a, w.T)
    if bias is not None:
        y = y + bias.astype(F32)
    return y.astype(A.dtype, copy=False)
