"""The executor's own shape rules for the nodes ONNX cannot type after an edit.

ONNX has no schema for onnxruntime's ``com.microsoft`` ops (FastGelu, SkipLayerNormalization,
Attention, MatMulNBits...), so after an edit upstream re-inference would leave their outputs
unknown. Their kernels here compute them: ``probe`` runs the node's kernel on placeholder
inputs of the known types and reads the outputs' dtypes and shapes. It is registered with the
model's re-inference (``xocview.model.edits.fallback``) when ``xocview.executor`` is imported.

Placeholders: a weight's stored values (they may decide shapes), the values the walk knows of
small integer inputs, zeros otherwise; numpy's warnings on them are silenced. A node is not
probed (its outputs stay unknown) when its inputs hold more than ``PROBE_ELEMENTS`` values in
all, when it runs bodies (If, Loop, Scan) or is random or slow by nature (``_NOT_PROBED``),
when an input whose values decide the output's shape has none known (``_VALUE_INPUTS``), or
when the registry has no kernel for it. Anything the kernel raises means unknown too.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from xocview.executor.steps import graph_attribute, graph_opsets, node_step
from xocview.model import Graph, Node
from xocview.model.dtypes import DTYPES, numpy_type
from xocview.model.edits import fallback
from xocview.model.edits.onnx_infer import TType

__all__ = ["PROBE_ELEMENTS", "probe", "register"]

PROBE_ELEMENTS = 1 << 20  # input values a probe may make and run a kernel on, in all
# Ops a probe does not run, whatever their size: random ones (their outputs are draws), those
# with bodies, and those that loop in Python over time steps.
_NOT_PROBED = frozenset(
    {
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Bernoulli",
        "Multinomial",
        "Dropout",
        "If",
        "Loop",
        "Scan",
        "LSTM",
        "GRU",
        "RNN",
        "DynamicQuantizeLSTM",
        "Tokenizer",
    }
)
# (domain, op) -> input positions whose values (not only their types) decide an output's
# shape: without them known, zeros would give a wrong shape, so the node is not probed.
_VALUE_INPUTS: dict[tuple[str, str], tuple[int, ...]] = {
    ("com.microsoft", "GroupQueryAttention"): (5, 6),  # seqlens_k, total_sequence_length
}

Answer = list[tuple[str, tuple[int, ...]] | None]


@cache
def _dtype_names() -> dict[np.dtype, str]:
    """numpy dtype -> our dtype name (float64 is "double", ml_dtypes' types their ONNX names)."""
    out: dict[np.dtype, str] = {}
    for name in DTYPES:
        np_type = numpy_type(name)
        if np_type is not None and np_type.kind != "O":
            out.setdefault(np_type, name)
    return out


def probe(
    graph: Graph,
    node: Node,
    in_types: Sequence[TType],
    in_values: Sequence[np.ndarray | None],
) -> Answer | None:
    """One (dtype, shape) per output of ``node`` from its kernel run on placeholder inputs of
    ``in_types`` (None for an output the kernel leaves out); None when the node is not probed
    (see the module's docstring)."""
    if node.op_type in _NOT_PROBED or graph_attribute(node) is not None:
        return None
    if sum(math.prod(t[1]) for t in in_types) > PROBE_ELEMENTS:
        return None
    step = node_step(graph, -1, node, graph_opsets(graph), None)
    if step.kernel is None:
        return None
    known = {t: v for t, v in zip(node.inputs, in_values, strict=True) if v is not None}
    domain = node.metadata.get("domain", "")
    for k in _VALUE_INPUTS.get((str(domain), node.op_type), ()):
        if k < len(step.inputs) and step.inputs[k] is not None and step.inputs[k] not in known:
            return None
    types = dict(zip(node.inputs, in_types, strict=True))
    args = [None if t is None else _placeholder(graph, t, types[t], known) for t in step.inputs]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        out = step.kernel.call(*args, **step.kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    names = _dtype_names()
    found: dict[int, tuple[str, tuple[int, ...]] | None] = {}
    for k, t in step.outputs:
        value = outs[k] if k < len(outs) else None
        if isinstance(value, np.ndarray) and value.dtype in names:
            found[t] = names[value.dtype], tuple(int(d) for d in value.shape)
    return [found.get(t) for t in node.outputs]


def _placeholder(
    graph: Graph, t: int, ttype: TType, known: dict[int, np.ndarray]
) -> np.ndarray | None:
    """An input of type ``ttype``: its known values, a weight's stored ones, or zeros."""
    dtype, shape = ttype[0], ttype[1]
    np_type = numpy_type(dtype)
    if np_type is None or np_type.kind == "O":
        raise ValueError("no placeholder for this dtype")  # strings: their values decide
    value: Any = known.get(t)
    tensor = graph.tensors[t]
    if value is None and tensor.kind == "weight" and tensor.has_data:
        value = tensor.data
    if isinstance(value, np.ndarray) and value.shape == shape and value.dtype == np_type:
        return value
    return np.zeros(shape, dtype=np_type)


def register() -> None:
    """Let re-inference after an edit ask ``probe`` (see ``xocview.model.edits.fallback``)."""
    fallback.register(probe)
