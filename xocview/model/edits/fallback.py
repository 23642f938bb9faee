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

Answers are remembered like ONNX's (``onnx_infer``): by op, domain and its opset, attributes,
input types and known input values, so a 20k-node walk asks once per distinct block.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from xocview.model.dtypes import DTYPES
from xocview.model.edits import onnx_infer
from xocview.model.edits.onnx_infer import TType, values_key
from xocview.model.edits.small_values import SmallValues, feeds_data
from xocview.model.graph import Graph, Node

__all__ = ["Answer", "Probe", "clear_memo", "infer_ids", "register", "registered", "unregister"]

Answer = Sequence[tuple[str, Sequence[int]] | None]
Probe = Callable[[Graph, Node, Sequence[TType], Sequence[np.ndarray | None]], Answer | None]

_PROBES: list[Probe] = []
MEMO_LIMIT = 1 << 14  # remembered answers, dropped all at once past this
# answers as output type ids by node key, input type ids and known values (see _TABLE)
_MEMO: dict[Hashable, tuple[int, ...] | None] = {}


def register(probe: Probe) -> None:
    """Ask ``probe`` about the nodes ONNX cannot type (once, however often it is registered)."""
    if probe not in _PROBES:
        _PROBES.append(probe)
        _MEMO.clear()


def unregister(probe: Probe) -> None:
    """Stop asking ``probe`` (tests; a tool that wants ONNX's answers alone)."""
    if probe in _PROBES:
        _PROBES.remove(probe)
        _MEMO.clear()


def registered() -> tuple[Probe, ...]:
    return tuple(_PROBES)


def clear_memo() -> None:
    """Forget every remembered answer (for benchmarks that time a cold start)."""
    _MEMO.clear()


def _known(ttype: TType) -> bool:
    return not ttype[3] and ttype[0] != "undefined" and min(ttype[1], default=0) >= 0


# The type table the memo's ids belong to: its first entry, kept alive so that ``is`` tells a
# table onnx_infer has cleared and numbered again (the ids then name other types).
_TABLE: list[TType | None] = [None]
_MISSING = object()


def infer_ids(
    graph: Graph,
    node: Node,
    in_ids: Sequence[int],
    values: SmallValues,
    opsets: Mapping[str, int],
) -> tuple[int, ...] | None:
    """The type ids of ``node``'s outputs as the registered probes tell them (-1 for one they
    cannot tell); None when there is no probe, an input is not fully known or no probe
    answers."""
    table = onnx_infer.TYPES
    if not _PROBES or not table or min(in_ids, default=0) < 0:
        return None
    if table[0] is not _TABLE[0]:
        _MEMO.clear()
        _TABLE[0] = table[0]
    data: list[np.ndarray | None] | None = None
    if not onnx_infer.INTEGER_TYPES.isdisjoint(in_ids):
        op = node.op_type
        data = [
            values.of(t) if feeds_data(op, table[k][0]) else None
            for t, k in zip(node.inputs, in_ids, strict=True)
        ]
    key = (_node_key(node, opsets), tuple(in_ids), None if data is None else values_key(data))
    found = _MEMO.get(key, _MISSING)
    if found is _MISSING:
        if len(_MEMO) >= MEMO_LIMIT:
            _MEMO.clear()
        types = [table[k] for k in in_ids]
        answer = None
        if all(map(_known, types)):
            answer = _ask(graph, node, types, data or [None] * len(types))
        found = _MEMO[key] = None if answer is None else _ids(answer)
    return found  # type: ignore[return-value]


def _node_key(node: Node, opsets: Mapping[str, int]) -> Hashable:
    """What of the node decides the answer: the op of its domain at the graph's opset of that
    domain, its attributes (ONNX's, and the others, which the reader keeps in metadata), the
    optional inputs and outputs it leaves out, its output count."""
    meta = node.metadata
    domain = meta.get("domain", "")
    opset = opsets.get("" if domain == "ai.onnx" else domain) if isinstance(domain, str) else None
    extra = meta.get("attributes")
    gaps = None
    if "omitted_inputs" in meta or "omitted_outputs" in meta:
        gaps = repr((meta.get("omitted_inputs"), meta.get("omitted_outputs")))
    return (
        node.op_type,
        domain if isinstance(domain, str) else repr(domain),
        opset,
        repr(node.attributes) if node.attributes else None,
        repr(extra) if extra else None,
        gaps,
        len(node.outputs),
    )


def _ids(answer: tuple[TType | None, ...]) -> tuple[int, ...]:
    return tuple(-1 if t is None else onnx_infer.type_id(t) for t in answer)


def _ask(
    graph: Graph, node: Node, types: list[TType], data: list[np.ndarray | None]
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
