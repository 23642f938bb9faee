"""Sizes and shapes typed on the command line (``run --shape/--dim``, ``edit --shape``),
refused when past what a dimension can hold: numpy, onnx and onnxruntime keep dimensions as
int64 and fail with their own errors (not ours, not located) on a larger one."""

from __future__ import annotations

import math

from xocview.errors import shorten
from xocview.model.analyses.summary import parse_shape

__all__ = ["MAX_DIM", "MAX_ELEMENTS", "parse_dim", "parse_dims"]

MAX_DIM = 2**63 - 1
# Elements a tensor may hold: its bytes (up to 16 an element) must stay within int64 too.
MAX_ELEMENTS = MAX_DIM // 16


def parse_dim(text: str) -> int:
    """One size; ValueError saying the limit when it is past int64 either way."""
    size = int(text)
    if abs(size) > MAX_DIM:
        raise ValueError(f"the size {shorten(text)} is past the largest dimension, {MAX_DIM:,}")
    return size


def parse_dims(text: str) -> list[int]:
    """A shape (``1,3,224,224``, ``?`` for unknown) as ``parse_shape`` reads it, each size
    within int64."""
    dims = parse_shape(text)
    for d in dims:
        parse_dim(str(d))
    elements = math.prod(d for d in dims if d > 0)
    if elements > MAX_ELEMENTS:
        raise ValueError(
            f"the shape {shorten(text)} holds {elements:.3g} elements, past the {MAX_ELEMENTS:.3g} "
            "an array can hold"
        )
    return dims
