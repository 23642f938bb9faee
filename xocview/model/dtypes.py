"""Element types: the XOC spec's seven names plus ONNX's other types under their ONNX names."""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

import numpy as np

__all__ = ["DTYPES", "DType", "canonical_dtype", "dtype_by_onnx_code", "numpy_type"]


class DType(NamedTuple):
    """One element type; ``bits`` is the storage width (strings have none); ``numpy`` names
    the numpy type, or the ml_dtypes one for the types numpy lacks (see ``numpy_type``)."""

    name: str
    onnx_code: int
    bits: int | None
    numpy: str | None


# The XOC spec names seven types; every other ONNX TensorProto type keeps its lower-cased ONNX
# name ("double", "bfloat16", "float8e4m3fn"), so ONNX -> XOC JSON -> model loses nothing.
DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("undefined", 0, None, None),  # ONNX UNDEFINED: a value whose type nobody knows
        DType("float32", 1, 32, "float32"),
        DType("uint8", 2, 8, "uint8"),
        DType("int8", 3, 8, "int8"),
        DType("uint16", 4, 16, "uint16"),
        DType("int16", 5, 16, "int16"),
        DType("int32", 6, 32, "int32"),
        DType("int64", 7, 64, "int64"),
        DType("string", 8, None, "object"),
        DType("bool", 9, 8, "bool"),
        DType("float16", 10, 16, "float16"),
        DType("double", 11, 64, "float64"),
        DType("uint32", 12, 32, "uint32"),
        DType("uint64", 13, 64, "uint64"),
        DType("complex64", 14, 64, "complex64"),
        DType("complex128", 15, 128, "complex128"),
        DType("bfloat16", 16, 16, "bfloat16"),
        DType("float8e4m3fn", 17, 8, "float8_e4m3fn"),
        DType("float8e4m3fnuz", 18, 8, "float8_e4m3fnuz"),
        DType("float8e5m2", 19, 8, "float8_e5m2"),
        DType("float8e5m2fnuz", 20, 8, "float8_e5m2fnuz"),
        DType("uint4", 21, 4, "uint4"),
        DType("int4", 22, 4, "int4"),
        DType("float4e2m1", 23, 4, "float4_e2m1fn"),
        DType("float8e8m0", 24, 8, "float8_e8m0fnu"),
        DType("uint2", 25, 2, "uint2"),
        DType("int2", 26, 2, "int2"),
        DType("float6e2m3", 27, 6, "float6_e2m3fn"),
        DType("float6e3m2", 28, 6, "float6_e3m2fn"),
    )
}

# Spellings other tools write for the same types (numpy names, ONNX's "float").
_ALIASES = {
    "float": "float32",
    "float64": "double",
    "half": "float16",
    "boolean": "bool",
    "str": "string",
}

_BY_CODE = {d.onnx_code: d for d in DTYPES.values()}


def canonical_dtype(name: str) -> str | None:
    """The canonical spelling of a dtype name, or None when no type has that name."""
    key = name.strip().lower()
    if key in DTYPES:
        return key
    return _ALIASES.get(key)


# The types numpy lacks come from ml_dtypes (a dependency of onnx), as onnx's own numpy_helper
# reads them: the same arrays flow between the loader, the executor and onnx.
_ML_DTYPES = frozenset(
    {
        "bfloat16",
        "float8_e4m3fn",
        "float8_e4m3fnuz",
        "float8_e5m2",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
        "float4_e2m1fn",
        "float6_e2m3fn",
        "float6_e3m2fn",
        "int4",
        "uint4",
        "int2",
        "uint2",
    }
)


@cache
def numpy_type(name: str) -> np.dtype | None:
    """The numpy dtype of one of our dtype names; None for "undefined" and unknown names."""
    info = DTYPES.get(name)
    if info is None or info.numpy is None:
        return None
    if info.numpy in _ML_DTYPES:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, info.numpy))
    return np.dtype(info.numpy)


def dtype_by_onnx_code(code: int) -> DType | None:
    """The dtype of an ONNX ``TensorProto.DataType`` number, or None for an unknown number."""
    return _BY_CODE.get(code)
