"""Kernels on the types numpy lacks (bfloat16, float8, float4, int4, int2): computed wide.

ml_dtypes gives these types numpy arrays, but numpy has no fast loops for them (einsum refuses
them, matmul crawls) and most kernels widen intermediate values anyway. So a kernel sees its
narrow inputs widened (floats to float32, ints to int8/uint8, exactly: every narrow value has a
wide twin), and its outputs of the widened type are narrowed back to the input's type, as
onnxruntime computes bfloat16 in float32. Kernels for which the type itself is the point (Cast,
QuantizeLinear, BitCast, ...) are registered ``exact_types`` and see the arrays as they are.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["widened"]


def _wide(dtype: np.dtype) -> np.dtype:
    """The numpy type that holds every value of an ml_dtypes type exactly."""
    name = dtype.name
    if name.startswith("uint"):
        return np.dtype(np.uint8)
    if name.startswith("int"):
        return np.dtype(np.int8)
    return np.dtype(np.float32)


def widened(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` running on widened copies of its narrow inputs, narrowing its outputs back.

    The narrow type to go back to is the inputs' one; with inputs of two narrow types (rare:
    a bfloat16 tensor and a float8 one) the outputs stay wide, as nothing says which to take.
    """

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        narrow: set[np.dtype] = set()
        for a in args:
            if type(a) is np.ndarray and a.dtype.kind == "V":
                narrow.add(a.dtype)
        if not narrow:
            return fn(*args, **kwargs)
        wide = [
            a.astype(_wide(a.dtype)) if type(a) is np.ndarray and a.dtype in narrow else a
            for a in args
        ]
        out = fn(*wide, **kwargs)
        if len(narrow) != 1:
            return out
        (back,) = narrow
        target = _wide(back)
        if type(out) is tuple:
            return tuple(_narrow(o, target, back) for o in out)
        return _narrow(out, target, back)

    return run


def _narrow(value: Any, wide: np.dtype, back: np.dtype) -> Any:
    if isinstance(value, np.ndarray) and value.dtype == wide:
        return value.astype(back)
    return value
