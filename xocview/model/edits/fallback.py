"""A second opinion for the nodes ONNX's inference cannot type after an edit.

Re-inference (``reinfer``) asks ONNX for each node an edit reaches. ONNX has no schema for an
op of another domain (onnxruntime's ``com.microsoft`` FastGelu, SkipLayerNormalization,
Attention...) and so gives nothing: the node's outputs would turn unknown although something
else in the program can compute them. The model must not import that something (the
executor sits above it), so it registers itself here:

    fallback.register(probe)   # probe(graph, node, in_types, in_values) -> outputs | None

``in_types`` are the inputs' ``TType``s, every one fully known (dtype known, every size >= 0;
a node with any other input is never probed); ``in_values`` the values the walk knows of its
small integer inputs (``small_values``), None elsewhere. The answer gives one
``(dtype, shape)`` per output of the node, None for an output it cannot tell; None or an
exception means it cannot tell at all. The executor registers its probe on import
(``xocview/executor/shape_probe.py``), so the GUI, the CLI and scripts that import it have it;
without a probe, such outputs stay unknown as before.

Answers are remembered in ONNX's memo (``onnx_infer.remembered``), under keys of their own: by
op, domain and its opset, attributes, input types and known input values, so a 20k-node walk
asks once per distinct block, and the answers go when the type table they number goes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from xocview.model.dtypes import DTYPES
from xocview.model.edits import onnx_infer
from xocview.model.edits.onnx_infer import TType, memo_key, values_key
from xocview.model.graph import Graph, Node

__all__ = ["Answer", "Probe", "clear_memo", "infer_ids", "register", "registered", "unregister"]

Answer = Sequence[tuple[str, Sequence[int]] | None]
Probe = Callable[[Graph, Node, Sequence[TType], Sequence[np.ndarray | None]], Answer | None]

_PROBES: list[Probe] = []


def register(probe: Probe) -> None:
    """Ask ``probe`` about the nodes ONNX cannot type (once, however often it is registered)."""
    if probe not in _PROBES:
        _PROBES.append(probe)
        clear_memo()


def unregister(probe: Probe) -> None:
    """Stop asking ``probe`` (tests; a tool that wants ONNX's answers alone)."""
    if probe in _PROBES:
        _PROBES.remove(probe)
        clear_memo()


def registered() -> tuple[Probe, ...]:
    return tuple(_PROBES)


def clear_memo() -> None:
    """Forget every remembered answer, the probes' with ONNX's (a cold start; new probes)."""
    onnx_infer.clear_memo()


def _known(ttype: TType) -> bool:
    return not ttype[3] and ttype[0] != "undefined" and min(ttype[1], default=0) >= 0


def infer_ids(
    graph: Graph,
    node: Node,
    in_ids: tuple[int, ...],
    in_data: Sequence[np.ndarray | None] | None,
    opsets: Mapping[str, int],
) -> tuple[int, ...] | None:
    """The type ids of ``node``'s outputs as the registered probes tell them (-1 for one they
    cannot tell), from its inputs' type ids and the values the walk knows of them (None: no
    integer input); None when there is no probe, an input is not fully known or no probe
    answers."""
    if not _PROBES or min(in_ids, default=0) < 0:
        return None
    data = None if in_data is None else values_key(in_data)
    types = [onnx_infer.TYPES[k] for k in in_ids]

    def ask() -> tuple[TType | None, ...] | None:
        if not all(map(_known, types)):
            return None
        return _ask(graph, node, types, in_data or [None] * len(types))

    return onnx_infer.remembered(memo_key(_prefix(node, opsets), node, in_ids, data), ask)


def _prefix(node: Node, opsets: Mapping[str, int]) -> Hashable:
    """What of the node decides the answer beyond ``memo_key``'s attributes, gaps and types:
    the op of its domain at the graph's opset of that domain, and the attributes the reader
    keeps in metadata (the op's own, which ONNX has no schema to name)."""
    meta = node.metadata
    domain = meta.get("domain", "")
    opset = opsets.get("" if domain == "ai.onnx" else domain) if isinstance(domain, str) else None
    extra = meta.get("attributes")
    return (
        "probe",
        node.op_type,
        domain if isinstance(domain, str) else repr(domain),
        opset,
        repr(extra) if extra else None,
    )


def _ask(
    graph: Graph, node: Node, types: list[TType], data: Sequence[np.ndarray | None]
) -> tuple[TType | None, ...] | None:
    """The first answer a probe gives, as one type (or None) per output of the node."""
    for probe in _PROBES:
        try:
            answer = probe(graph, node, types, data)
            if answer is not None:
                return tuple(_ttype(a) for a in list(answer)[: len(node.outputs)])
        except Exception:  # a probe that trips is one that cannot tell: unknown, never a crash
            continue
    return None


def _ttype(answer: Any) -> TType | None:
    if answer is None:
        return None
    dtype, shape = answer
    dims = tuple(int(d) for d in shape)
    if dtype not in DTYPES or min(dims, default=0) < 0:
        return None
    return dtype, dims, None, False
