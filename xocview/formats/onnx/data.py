"""Does an ONNX tensor's data match its dims and element type? Checked before anything is read.

A damaged or hostile file can claim dims of 10^9 x 10^9 backed by 16 bytes, an element type
that does not exist, or typed values of the wrong count. Every reader asks here first, with
counts in Python integers (no overflow) and sizes taken from the fields' lengths, so that no
array the dims claim is ever allocated before the bytes are known to be there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import onnx

__all__ = [
    "KNOWN_TYPES",
    "Problem",
    "data_problem",
    "element_bits",
    "header_problem",
    "needed_bytes",
]

# (what is wrong, what was expected)
Problem = tuple[str, str]

_T = onnx.TensorProto
KNOWN_TYPES: dict[int, str] = {v: k for k, v in _T.DataType.items() if v != _T.UNDEFINED}
_BITS: dict[int, int] = {_T.INT4: 4, _T.UINT4: 4, _T.FLOAT4E2M1: 4}
for _name, _bits in (("INT2", 2), ("UINT2", 2), ("FLOAT6E2M3", 6), ("FLOAT6E3M2", 6)):
    if hasattr(_T, _name):  # types of recent ONNX releases
        _BITS[getattr(_T, _name)] = _bits
_PAIRS: set[int] = {_T.COMPLEX64, _T.COMPLEX128}  # two typed values (real, imaginary) per element


def element_bits(data_type: int) -> int:
    """Bits one element takes in raw data (4 for INT4, 32 for FLOAT, ...); 0 for STRING."""
    bits = _BITS.get(data_type)
    if bits is not None:
        return bits
    if data_type == _T.STRING:
        return 0
    return int(onnx.helper.tensor_dtype_to_np_dtype(data_type).itemsize) * 8


def needed_bytes(data_type: int, count: int) -> int:
    """Bytes of raw data that ``count`` elements of ``data_type`` take (packed types round up)."""
    return (count * element_bits(data_type) + 7) // 8


def _typed_count(data_type: int, count: int) -> int:
    """How many values the typed field (float_data, int32_data, ...) holds for ``count``."""
    bits = _BITS.get(data_type)
    if bits in (2, 4):  # packed into int32_data, 8 // bits per entry
        per = 8 // bits
        return (count + per - 1) // per
    return 2 * count if data_type in _PAIRS else count


def _type_name(data_type: int) -> str:
    return KNOWN_TYPES.get(data_type, "UNDEFINED" if data_type == 0 else str(data_type))


def header_problem(data_type: int, dims: Sequence[int]) -> Problem | None:
    """What is wrong with an element type and dims alone (no data looked at), or None."""
    if data_type not in KNOWN_TYPES:
        what = "UNDEFINED (0)" if data_type == _T.UNDEFINED else f"unknown ({data_type})"
        return f"element type {what}", "one of ONNX's element types (FLOAT = 1, INT64 = 7, ...)"
    for k, d in enumerate(dims):
        if d < 0:
            return f"dims[{k}] is {d}", "dimensions >= 0"
    return None


def data_problem(tensor: onnx.TensorProto) -> Problem | None:
    """What is wrong with a tensor whose values are in the model, or None when they fit.

    External tensors get their header checked only: the bytes are checked by their reader.
    """
    dims = list(tensor.dims)
    found = header_problem(tensor.data_type, dims)
    if found is not None or tensor.data_location == _T.EXTERNAL:
        return found
    if tensor.HasField("segment"):
        return "a segment of a tensor", "a whole tensor (segments are not supported)"
    data_type = tensor.data_type
    count = math.prod(dims)
    shape = f"dims {dims} of {_type_name(data_type)}"
    if tensor.HasField("raw_data"):
        if data_type == _T.STRING:
            return "STRING values in raw_data", "string_data"
        have, need = len(tensor.raw_data), needed_bytes(data_type, count)
        if have != need:
            return f"raw_data has {have:,} bytes", f"{need:,} bytes for {shape}"
        return None
    field = onnx.helper.tensor_dtype_to_field(data_type)
    have, need = len(getattr(tensor, field)), _typed_count(data_type, count)
    if have != need:
        return f"{field} has {have:,} values", f"{need:,} for {shape}"
    return None
