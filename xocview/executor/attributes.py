"""Node attributes as kernel keyword arguments: JSON values in, numpy arrays for tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from xocview.model import Node
from xocview.model.dtypes import DTYPES

__all__ = ["kernel_kwargs", "tensor_attribute"]


def tensor_attribute(node: Node, name: str, value: dict[str, Any]) -> np.ndarray:
    """A tensor attribute (``{"tensor": {dtype, shape, values}}``) as an array.

    Raises ValueError when the file kept only its dtype and shape (large tensors), naming the
    attribute.
    """
    spec = value["tensor"]
    if not isinstance(spec, dict):
        raise ValueError(f"attribute {name!r}: expected a tensor object, got {type(spec).__name__}")
    info = DTYPES.get(str(spec.get("dtype")))
    if info is None or info.numpy is None:
        raise ValueError(f"attribute {name!r}: tensor dtype {spec.get('dtype')} is not supported")
    if "values" not in spec:
        raise ValueError(
            f"attribute {name!r}: the tensor's values were not kept (only dtype and shape)"
        )
    try:
        values = spec["values"]
        if info.numpy.startswith("complex"):
            values = [complex(re, im) for re, im in values]
        shape = [int(d) for d in spec.get("shape", [])]
        return np.array(values, dtype=info.numpy).reshape(shape)
    except (TypeError, ValueError, OverflowError) as e:  # a damaged file's values or shape
        raise ValueError(
            f"attribute {name!r}: tensor values do not fit dtype {info.name} and shape "
            f"{spec.get('shape')} ({type(e).__name__}: {e})"
        ) from e


def kernel_kwargs(node: Node) -> dict[str, Any]:
    """The node's ONNX attributes ready for its kernel (tensors decoded once, before the run)."""
    out: dict[str, Any] = {}
    for name, value in node.attributes.items():
        if isinstance(value, dict) and "tensor" in value:
            out[name] = tensor_attribute(node, name, value)
        else:
            out[name] = value
    return out
