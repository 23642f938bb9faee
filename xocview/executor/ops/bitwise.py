"""Bit-level kernels: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot and BitCast."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.executor.ops.constants import onnx_numpy_dtype
from xocview.executor.registry import kernel

__all__ = ["bit_cast", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor"]


def _integers_only(op: str, *xs: np.ndarray) -> None:
    """Raise ValueError ("not supported") unless every input is a signed or unsigned integer."""
    for x in xs:
        if x.dtype.kind not in "iu":
            raise ValueError(f"{op}: dtype {x.dtype} is not supported; expected an integer type")


def _bitwise_kernel(
    op_type: str, ufunc: Callable[..., np.ndarray]
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Register ``ufunc`` as the two-input integer op ``op_type`` (opset 18, broadcasting)."""

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        _integers_only(op_type, a, b)
        return np.asarray(ufunc(a, b))

    run.__name__ = run.__qualname__ = f"bitwise_{op_type.removeprefix('Bitwise').lower()}"
    run.__doc__ = f"ONNX {op_type}: numpy's {ufunc.__name__} on integers, with broadcasting."
    kernel(op_type, since=18)(run)
    return run


bitwise_and = _bitwise_kernel("BitwiseAnd", np.bitwise_and)
bitwise_or = _bitwise_kernel("BitwiseOr", np.bitwise_or)
bitwise_xor = _bitwise_kernel("BitwiseXor", np.bitwise_xor)


@kernel("BitwiseNot", since=18)
def bitwise_not(x: np.ndarray) -> np.ndarray:
    """Every bit flipped (two's complement for signed types)."""
    _integers_only("BitwiseNot", x)
    return np.asarray(np.invert(x))


# ml_dtypes' types whose ONNX width is under a byte (numpy holds each in a whole byte).
_SUB_BYTE = frozenset({"int4", "uint4", "int2", "uint2", "float4_e2m1fn"})


@kernel("BitCast", since=26, exact_types=True)
def bit_cast(x: np.ndarray, *, to: int) -> np.ndarray:
    """The input's bytes, read little-endian, reinterpreted as ``to``: a numpy view.

    Strings and the sub-byte types (int4, float4, ...) are refused; the two types must have the
    same width.
    """
    if x.dtype.kind in "OUS":
        raise ValueError(f"BitCast: dtype {x.dtype} is not supported; strings have no bit pattern")
    target = onnx_numpy_dtype(to, "BitCast")
    if target.kind in "OUS":
        raise ValueError("BitCast: to STRING is not supported; strings have no bit pattern")
    for side, dtype in (("input", x.dtype), ("to", target)):
        if dtype.name in _SUB_BYTE:
            raise ValueError(
                f"BitCast: {side} {dtype} is not supported; its values are packed below a byte"
            )
    if target.itemsize != x.dtype.itemsize:
        raise ValueError(
            f"BitCast: {x.dtype} has {x.dtype.itemsize * 8} bits and {target} has "
            f"{target.itemsize * 8}; BitCast needs equal widths"
        )
    little = x.astype(x.dtype.newbyteorder("<"), copy=False)  # no copy on little-endian hosts
    return little.view(target.newbyteorder("<"))
