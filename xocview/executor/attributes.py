"""Node attributes as kernel keyword arguments: JSON values in, numpy arrays for tensors."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np

from xocview.errors import shorten
from xocview.executor.failures import exception_free
from xocview.model import Node
from xocview.model.attribute_tensor import AttributeTensor
from xocview.model.dtypes import DTYPES, numpy_type
from xocview.model.schema import attribute_types

__all__ = [
    "check_attribute_types",
    "check_attribute_values",
    "kernel_kwargs",
    "tensor_attribute",
]


def tensor_attribute(node: Node, name: str, value: dict[str, Any]) -> np.ndarray:
    """A tensor attribute (``{"tensor": {dtype, shape, values}}``) as an array.

    Raises ValueError when the file kept only its dtype and shape (large tensors), naming the
    attribute.
    """
    spec = value["tensor"]
    if not isinstance(spec, dict):
        raise ValueError(f"attribute {name!r}: expected a tensor object, got {type(spec).__name__}")
    info = DTYPES.get(str(spec.get("dtype")))
    dtype = numpy_type(info.name) if info is not None else None
    if info is None or dtype is None:
        raise ValueError(f"attribute {name!r}: tensor dtype {spec.get('dtype')} is not supported")
    if "values" not in spec:
        if isinstance(spec, AttributeTensor) and spec.has_data:
            return _read(name, spec, dtype)
        raise ValueError(
            f"attribute {name!r}: the tensor's values were not kept (only dtype and shape)"
        )
    try:
        values = spec["values"]
        if dtype.kind == "c":
            values = [complex(re, im) for re, im in values]
        shape = [int(d) for d in spec.get("shape", [])]
        return np.array(values, dtype=dtype).reshape(shape)
    except (TypeError, ValueError, OverflowError) as e:  # a damaged file's values or shape
        raise ValueError(
            f"attribute {name!r}: tensor values do not fit dtype {info.name} and shape "
            f"{spec.get('shape')} ({exception_free(str(e))})"
        ) from e


def _read(name: str, spec: AttributeTensor, dtype: np.dtype) -> np.ndarray:
    """The values a large (or external) tensor attribute reads from the model's file on first
    use; FormatError from the reader (missing or damaged data) names the file and the place."""
    values = spec.array()
    shape = [int(d) for d in spec.get("shape", [])]
    if list(values.shape) != shape:
        raise ValueError(
            f"attribute {name!r}: its values have shape {list(values.shape)}; expected {shape}"
        )
    return values if values.dtype == dtype or dtype.kind == "O" else values.astype(dtype)


def _is_int(v: Any) -> bool:
    """An integer that fits ONNX's int64 (a damaged file's 10**30 does not)."""
    return isinstance(v, np.integer) or (isinstance(v, int) and -(2**63) <= v < 2**63)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating))


# What a JSON value of each ONNX attribute type looks like in the shared model.
_FITS: dict[str, Any] = {
    "INT": _is_int,
    "FLOAT": _is_number,
    "STRING": lambda v: isinstance(v, str),
    "INTS": lambda v: isinstance(v, list) and all(_is_int(x) for x in v),
    "FLOATS": lambda v: isinstance(v, list) and all(_is_number(x) for x in v),
    "STRINGS": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "TENSOR": lambda v: isinstance(v, dict) and "tensor" in v,
}
_WORDS = {
    "INT": "an integer of int64 range",
    "FLOAT": "a number",
    "STRING": "a string",
    "INTS": "a list of integers of int64 range",
    "FLOATS": "a list of numbers",
    "STRINGS": "a list of strings",
    "TENSOR": "a tensor",
}


@cache
def _checks(op_type: str) -> dict[str, tuple[tuple[Callable[[Any], bool], ...], str]]:
    """Per attribute of ``op_type`` whose ONNX types have a JSON form: the tests a value may
    pass and the words for what was expected. Made once per op type."""
    types = attribute_types(op_type) or {}
    return {
        name: (
            tuple(_FITS[k] for k in sorted(kinds)),
            " or ".join(sorted(_WORDS[k] for k in kinds)),
        )
        for name, kinds in types.items()
        if kinds <= _FITS.keys()  # graph, sparse and type values: the kernel decides
    }


def check_attribute_types(node: Node) -> None:
    """ValueError naming the first attribute whose value has the wrong ONNX type.

    A damaged file's ``strides: {"k": 1}`` would otherwise reach the kernel and fail there with
    a Python message (``int() argument must be ...``) instead of saying what was expected.
    """
    checks = _checks(node.op_type)
    if not checks:
        return
    for name, value in node.attributes.items():
        check = checks.get(name)
        if check is None:
            continue  # not the schema's: the kernel's keywords decide
        fits, wanted = check
        if not any(fit(value) for fit in fits):
            raise ValueError(f"attribute {name!r} is {shorten(repr(value), 40)}; expected {wanted}")


# Attributes whose every entry must be at least this, whatever the op (a window's size, its
# steps, its dilation, padding that ONNX only ever adds); Pad's own pads may crop.
_AT_LEAST = {
    "strides": 1,
    "dilations": 1,
    "kernel_shape": 1,
    "group": 1,
    "offset_group": 1,
    "blocksize": 1,
    "pads": 0,
    "output_padding": 0,
    "p": 1,  # LpPool, GlobalLpPool, LpNormalization: the root of the p-norm
}
_MAY_CROP = frozenset({"Pad"})
_LRN_SIZE = 1


def check_attribute_values(node: Node) -> None:
    """ValueError naming the first attribute whose value no kernel can compute with: strides,
    dilations and window sizes under 1 (a stride of 0 divides by zero), negative padding of a
    window, LRN's ``size`` and a p-norm's ``p`` under 1. Checked once before the run, for every
    op alike."""
    for name, value in node.attributes.items():
        least = _LRN_SIZE if name == "size" and node.op_type == "LRN" else _AT_LEAST.get(name)
        if least is None or (name == "pads" and node.op_type in _MAY_CROP):
            continue
        entries = value if isinstance(value, list) else [value]
        bad = [v for v in entries if isinstance(v, int | float | np.number) and not v >= least]
        if bad:
            raise ValueError(
                f"attribute {name!r} is {shorten(repr(value), 40)}; expected "
                + ("every entry " if isinstance(value, list) else "")
                + f"{least} or more"
            )


def kernel_kwargs(node: Node) -> dict[str, Any]:
    """The node's ONNX attributes ready for its kernel (tensors decoded once, before the run)."""
    check_attribute_types(node)
    check_attribute_values(node)
    out: dict[str, Any] = {}
    for name, value in node.attributes.items():
        if isinstance(value, dict) and "tensor" in value:
            out[name] = tensor_attribute(node, name, value)
        else:
            out[name] = value
    return out
