"""Keras's MultiHeadAttention as ONNX operators: its query, key, value and output
``EinsumDense`` projections as MatMuls on reshaped kernels, the heads split by
Reshape/Transpose, scaled dot-product scores, Softmax, and the heads merged back.

Keras 3 files list the four projections by name (key, output, query, value), legacy ``.h5``
files in Keras's order (query, key, value, attention_output); both are put in Keras's order.
Inputs come by position or by keyword (the call's ``tensor_kwargs``); ``use_causal_mask`` is
a constant mask. Calls with an attention mask, more than one attention axis or a multi-axis
output are left unmapped.
"""

from __future__ import annotations

import math

from xocview.formats.keras.call import Call, NotMapped
from xocview.formats.keras.common import by_sublayer

__all__ = ["ATTENTION"]

_PARTS = ("query", "key", "value", "output", "attention_output")


def _project(c: Call, x: int, kernel: int, bias: int | None, heads_first: bool) -> int:
    """``x`` (batch, steps, dim) through an einsum kernel (dim, heads, size) split into heads:
    (batch, heads, steps, size), or (batch, heads, size, steps) for the keys."""
    dim, heads, size = c.tensors[kernel].shape
    k = c.op("Reshape", [kernel, c.ints([dim, heads * size], "kernel")])
    y = c.op("MatMul", [x, k])
    if bias is not None:
        y = c.op("Add", [y, c.op("Reshape", [bias, c.ints([heads * size], "bias")])])
    y = c.op("Reshape", [y, c.ints([0, 0, heads, size], "heads")])
    return c.op("Transpose", [y], {"perm": [0, 2, 1, 3] if heads_first else [0, 2, 3, 1]})


def _inputs(c: Call) -> tuple[int, int, int]:
    """query, value and key, by position (query, value, key) or by keyword; the key is the
    value when not given. A mask passed in is not mapped."""
    call = c.cfg("@call", {})
    names = call.get("tensor_kwargs", []) if isinstance(call, dict) else []
    xs = c.xs
    if not isinstance(names, list) or len(names) > len(xs):
        raise NotMapped("the call's tensors by keyword are not listed")
    positional = xs[: len(xs) - len(names)]
    given = dict(zip(("query", "value", "key"), positional, strict=False))
    for name, t in zip(names, xs[len(xs) - len(names) :], strict=True):
        if name in given or name not in ("query", "value", "key"):
            raise NotMapped(f"called with {name!r} (only query, value and key are mapped)")
        given[name] = t
    if len(positional) > 3 or "query" not in given or "value" not in given:
        raise NotMapped(f"called with {len(xs)} tensors (an attention mask is not mapped)")
    return given["query"], given["value"], given.get("key", given["value"])


def _causal(c: Call, scores: int, query: int, value: int) -> int:
    """Keras's ``use_causal_mask``: query step i sees value steps j <= i; the others' scores
    become -1e9 before the Softmax. The steps are counted when run (tf.keras 2 records no
    shapes)."""
    steps = []
    for t, axes in ((query, [1]), (value, [0])):
        n = c.op("Gather", [c.op("Shape", [t], dtype="int64"), c.const(1, "int64", "axis")])
        r = c.op("Range", [c.const(0, "int64", "zero"), n, c.const(1, "int64", "one")])
        steps.append(c.op("Unsqueeze", [r, c.ints(axes, "axes")]))
    keep = c.op("GreaterOrEqual", steps)
    return c.op("Where", [keep, scores, c.const(-1e9, c.dtype(scores), "masked")])


def _mha(c: Call) -> int:
    if c.cfg("attention_axes", None) not in (None, [1], (1,)):
        raise NotMapped(f"attention_axes {c.cfg('attention_axes')}")
    call = c.cfg("@call", {})
    causal = bool(call.get("use_causal_mask", False)) if isinstance(call, dict) else False
    bias = bool(c.cfg("use_bias", True))
    ws = by_sublayer(c, lambda p: p[-3] if p[-2] == "vars" else p[-2], _PARTS)
    if len(ws) != (8 if bias else 4):
        raise NotMapped(f"{len(ws)} weights, expected {8 if bias else 4}")
    kernels = ws[0::2] if bias else ws
    biases = ws[1::2] if bias else [None] * 4
    shapes = [c.tensors[k].shape for k in kernels]
    if any(len(s) != 3 for s in shapes):
        raise NotMapped("projections that are not (dim, heads, size) or (heads, size, out)")
    query, value, key = _inputs(c)
    known = [t for t in (query, value, key) if not c.tensors[t].metadata.get("rank_unknown")]
    if any(c.rank(t) != 3 for t in known):
        raise NotMapped("attention over inputs that are not (batch, steps, features)")
    q = _project(c, query, kernels[0], biases[0], True)
    k = _project(c, key, kernels[1], biases[1], False)
    v = _project(c, value, kernels[2], biases[2], True)
    q = c.op("Mul", [q, c.const(1.0 / math.sqrt(shapes[0][2]), c.dtype(query), "scale")])
    scores = c.op("MatMul", [q, k])
    if causal:
        scores = _causal(c, scores, query, value)
    scores = c.op("Softmax", [scores], {"axis": -1})
    y = c.op("Transpose", [c.op("MatMul", [scores, v])], {"perm": [0, 2, 1, 3]})
    heads, size, out = shapes[3]
    y = c.op("Reshape", [y, c.ints([0, 0, heads * size], "merged")])
    w = c.op("Reshape", [kernels[3], c.ints([heads * size, out], "kernel")])
    y = c.op("MatMul", [y, w])
    return y if biases[3] is None else c.op("Add", [y, biases[3]])


ATTENTION = {"MultiHeadAttention": _mha}
