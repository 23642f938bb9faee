"""The graph an LLM builder writes (``Builder``): tensors, nodes, the model's module groups
and its stored weights bound by name, once each."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.llm.config import LlmConfig
from xocview.formats.llm.templates import Template
from xocview.model import Graph, Node, Tensor

__all__ = ["PAST", "SEQ", "TOTAL", "Builder", "StoredTensor", "norm", "norm_weight", "positions"]

# Symbolic dimensions, written as -1 with their names in ``shape_symbols``: the prompt's
# length, the KV cache's length before it (a feed made for a run starts it empty) and after.
SEQ, PAST, TOTAL = -1, -2, -3
SYMBOLS = {SEQ: "seq", PAST: "past_sequence_length", TOTAL: "total_sequence_length"}
# (shape, dtype, lazy values) of one stored tensor, by its name in the file
StoredTensor = tuple[list[int], str, Callable[[], np.ndarray]]


class Builder:
    """The graph being written: tensors, nodes, groups and the weights bound so far."""

    def __init__(self, graph: Graph, weights: Mapping[str, StoredTensor], file: str) -> None:
        self.g, self.weights, self.file = graph, weights, file
        self.bound: dict[str, int] = {}
        self.children: dict[str, list[str]] = {}
        self.ids: set[str] = set()
        self.cache_outputs: list[int] = []  # present.{i}.key/value, after the logits

    def name(self, wanted: str) -> str | None:
        """The stored name of a tensor; files saved from a base model drop the first part."""
        if wanted in self.weights:
            return wanted
        short = wanted.partition(".")[2]
        return short if short in self.weights else None

    def has(self, wanted: str) -> bool:
        return self.name(wanted) is not None

    def weight(self, wanted: str, parent: str | None) -> int:
        """The tensor of a stored weight (float32: a Cast for half types), bound once."""
        name = self.name(wanted)
        if name is None:
            raise FormatError(self.file, wanted, "no such tensor", "a tensor the config implies")
        if name in self.bound:
            return self.bound[name]
        shape, dtype, values = self.weights[name]
        t = self.tensor(name, list(shape), dtype, "weight", values)
        if dtype != "float32":
            t = self.op("Cast", [t], {"to": 1}, name + "/Cast", parent, list(shape))
        self.bound[name] = t
        return t

    def tensor(
        self,
        tid: str,
        shape: list[int],
        dtype: str = "float32",
        kind: str = "activation",
        data: Callable[[], np.ndarray] | np.ndarray | None = None,
    ) -> int:
        meta: dict[str, Any] = {}
        if any(d in SYMBOLS for d in shape):
            meta["shape_symbols"] = [SYMBOLS.get(d, "") for d in shape]
            shape = [-1 if d in SYMBOLS else d for d in shape]
        self.g.tensors.append(Tensor(self.unique(tid), kind, shape, dtype, meta, data))
        return len(self.g.tensors) - 1

    def const(self, tid: str, values: Sequence[int] | int) -> int:
        data = np.asarray(values, dtype=np.int64)
        return self.tensor(tid, list(data.shape), "int64", "weight", data)

    def scalar(self, tid: str, value: float) -> int:
        return self.tensor(tid, [], "float32", "weight", np.asarray(value, dtype=np.float32))

    def ops(
        self,
        op_type: str,
        inputs: Sequence[int | None],
        attrs: dict[str, Any] | None,
        node_id: str,
        parent: str | None,
        shapes: Sequence[list[int]],
        dtype: str | Sequence[str] = "float32",
    ) -> list[int]:
        """One node; its outputs ``{node_id}:k`` with the given shapes (and dtypes)."""
        nid = self.unique(node_id)
        dtypes = [dtype] * len(shapes) if isinstance(dtype, str) else list(dtype)
        outs = [
            self.tensor(f"{nid}:{k}", list(s), t)
            for k, (s, t) in enumerate(zip(shapes, dtypes, strict=True))
        ]
        self.node(op_type, inputs, attrs, nid, parent, outs)
        return outs

    def node(
        self,
        op_type: str,
        inputs: Sequence[int | None],
        attrs: dict[str, Any] | None,
        nid: str,
        parent: str | None,
        outs: list[int],
    ) -> None:
        """A node writing tensors made before it (graph outputs, named ones); ``nid`` is
        already unique."""
        meta: dict[str, Any] = {}
        if None in inputs:
            meta["omitted_inputs"] = [k for k, t in enumerate(inputs) if t is None]
        if parent is not None:
            meta["parent_id"] = parent
            self.children[parent].append(nid)
        present = [t for t in inputs if t is not None]
        self.g.nodes.append(Node(nid, op_type, present, outs, dict(attrs or {}), meta))

    def op(
        self,
        op_type: str,
        inputs: Sequence[int | None],
        attrs: dict[str, Any] | None,
        node_id: str,
        parent: str | None,
        shape: list[int],
        dtype: str = "float32",
    ) -> int:
        return self.ops(op_type, inputs, attrs, node_id, parent, [shape], dtype)[0]

    def group(self, gid: str, label: str, parent: str | None) -> str:
        """A module of the model holding the nodes that follow it."""
        parts = gid.split(".")
        short = ".".join(parts[-2:]) if parts[-1].isdigit() and len(parts) > 1 else parts[-1]
        # a closed box's title: "layers.3", "self_attn"; the class stays its op type
        meta: dict[str, Any] = {"module": gid, "name": short}
        if parent is not None:
            meta["parent_id"] = parent
            self.children[parent].append(gid)
        self.children[gid] = []
        self.g.nodes.append(Node(self.unique(gid), label, [], [], {}, meta))
        return gid

    def finish(self) -> None:
        for node in self.g.nodes:
            if node.id in self.children:
                node.metadata["children_ids"] = self.children[node.id]

    def unique(self, wanted: str) -> str:
        out, n = wanted, 1
        while out in self.ids:
            n += 1
            out = f"{wanted}#{n}"
        self.ids.add(out)
        return out


def norm_weight(b: Builder, tpl: Template, module: str, parent: str | None) -> int:
    """A norm's scale: its weight, plus one for Gemma (folded once by the executor)."""
    w = b.weight(module + ".weight", parent)
    if tpl.norm_offset:
        one = b.scalar(module + "/offset", tpl.norm_offset)
        w = b.op("Add", [w, one], None, module + "/offset", parent, list(b.g.tensors[w].shape))
    return w


def norm(b: Builder, cfg: LlmConfig, tpl: Template, module: str, x: int, parent: str | None) -> int:
    """RMSNormalization, or LayerNormalization with its bias, over the last axis."""
    w = norm_weight(b, tpl, module, parent)
    if tpl.norm == "rms":
        return b.op(
            "RMSNormalization",
            [x, w],
            {"axis": -1, "epsilon": cfg.eps},
            module,
            parent,
            [1, SEQ, cfg.hidden],
        )
    bias = b.weight(module + ".bias", parent)
    return b.op(
        "LayerNormalization",
        [x, w, bias],
        {"axis": -1, "epsilon": cfg.eps},
        module,
        parent,
        [1, SEQ, cfg.hidden],
    )


def positions(
    b: Builder, like: int, past: int | None, gid: str, parent: str | None
) -> tuple[int, int]:
    """(position_ids [1, seq] = Range(past, past + seq), past + seq) from the KV cache's
    length and the prompt's (axis 1 of ``like``), in a group of its own so that the view
    shows what they are for, not this arithmetic."""
    g = b.group(gid, "PositionIds", parent)
    n = _length(b, like, 1, f"{gid}/seq", g)
    if past is None:
        start = b.const(f"{gid}/start", 0)
    else:
        start = _length(b, past, 2, f"{gid}/past", g)
        n = b.op("Add", [start, n], None, f"{gid}/end", g, [], "int64")
    one = b.const(f"{gid}/step", 1)
    r = b.op("Range", [start, n, one], None, f"{gid}/Range", g, [SEQ], "int64")
    axes = b.const(f"{gid}/axes", [0])
    pos = b.op("Unsqueeze", [r, axes], None, f"{gid}/position_ids", g, [1, SEQ], "int64")
    return pos, n


def _length(b: Builder, t: int, axis: int, node_id: str, g: str) -> int:
    """Dimension ``axis`` of tensor ``t``, a scalar."""
    rank = len(b.g.tensors[t].shape)
    shape = b.op("Shape", [t], None, node_id + "/Shape", g, [rank], "int64")
    at = b.const(node_id + "/axis", axis)
    return b.op("Gather", [shape, at], {"axis": 0}, node_id + "/Gather", g, [], "int64")
