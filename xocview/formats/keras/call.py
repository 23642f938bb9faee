"""One Keras layer call being lowered to ONNX operators (``Call``), kept aside until the
lowering succeeds: the nodes it wrote and the tensors between them.

A lowering reads the layer's config (``c.cfg("units")``), its input tensors (``c.x``,
``c.xs``) and weights (``c.w(k)``) as positions in the graph, writes ONNX nodes with
``c.op`` and returns the tensor that is the layer's output. A lowering that cannot map the
call raises ``NotMapped`` with the reason, and the layer stays a node of domain ``keras``
that the executor refuses by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xocview.model import Node, Tensor
from xocview.model.dtypes import numpy_type

__all__ = ["Call", "NotMapped"]

_MISSING = object()
_BOOL_OUT = frozenset({"Equal", "Less", "Greater", "Not"})


class NotMapped(Exception):
    """This layer's config has no ONNX form here (the reason says which)."""


class Call:
    """One call of a layer: its inputs, weights and config; ``nodes`` written so far."""

    def __init__(
        self,
        tensors: list[Tensor],
        node_id: str,
        config: dict[str, Any],
        inputs: list[int],
        weights: list[int],
    ) -> None:
        self.tensors, self.node_id, self.config = tensors, node_id, config
        self.inputs, self.weights = inputs, weights
        self.nodes: list[Node] = []
        self.made: set[int] = set()
        self.by_rank = False  # wrote ops that work out a rank when run (see Builder.hints)
        self._ids: set[str] = set()

    # -- reading the layer --------------------------------------------------------------------

    def cfg(self, key: str, default: Any = _MISSING) -> Any:
        """A config value; ``default`` when the config leaves it out or null."""
        value = self.config.get(key)
        if value is None:
            if default is _MISSING:
                raise NotMapped(f"config value {key!r} is missing")
            return default
        return value

    @property
    def x(self) -> int:
        if len(self.inputs) != 1:
            raise NotMapped(f"takes one input, called with {len(self.inputs)}")
        return self.inputs[0]

    @property
    def xs(self) -> list[int]:
        if not self.inputs:
            raise NotMapped("called without inputs")
        return self.inputs

    def w(self, k: int) -> int:
        if k >= len(self.weights):
            raise NotMapped(f"weight {k} is not in the weights file")
        return self.weights[k]

    def weight_shape(self, k: int) -> list[int]:
        return list(self.tensors[self.w(k)].shape)

    def rank(self, t: int) -> int:
        tensor = self.tensors[t]
        if tensor.metadata.get("rank_unknown"):
            raise NotMapped(f"the rank of {tensor.id!r} is unknown")
        return len(tensor.shape)

    def dtype(self, t: int) -> str:
        return self.tensors[t].dtype

    # -- writing ------------------------------------------------------------------------------

    def op(
        self,
        op_type: str,
        inputs: Sequence[int],
        attrs: dict[str, Any] | None = None,
        dtype: str | None = None,
    ) -> int:
        """Write one ONNX node with one new output (typed ``dtype``, else as its first input)."""
        like = dtype or ("bool" if op_type in _BOOL_OUT else self.dtype(inputs[0]))
        out = self.fresh(op_type.lower(), like)
        nid = self._id(f"{self.node_id}/{op_type}")
        self.nodes.append(Node(nid, op_type, list(inputs), [out], dict(attrs or {})))
        return out

    def const(self, values: Any, dtype: str, label: str) -> int:
        """A small weight tensor holding ``values``."""
        np_type = numpy_type(dtype)
        if np_type is None:
            raise NotMapped(f"no constant of type {dtype}")
        data = np.asarray(values, dtype=np_type)
        return self.fresh(label, dtype, list(data.shape), data, "weight")

    def ints(self, values: Sequence[int], label: str) -> int:
        return self.const(list(values), "int64", label)

    def fresh(
        self,
        label: str,
        dtype: str,
        shape: list[int] | None = None,
        data: np.ndarray | None = None,
        kind: str = "activation",
    ) -> int:
        """A new tensor of this call (``shape`` None: known when it runs)."""
        metadata: dict[str, Any] = {} if shape is not None else {"rank_unknown": True}
        tid = self._id(f"{self.node_id}/{label}")
        self.tensors.append(Tensor(tid, kind, shape or [], dtype, metadata, data))
        self.made.add(len(self.tensors) - 1)
        return len(self.tensors) - 1

    def _id(self, wanted: str) -> str:
        got, k = wanted, 1
        while got in self._ids:
            k += 1
            got = f"{wanted}_{k}"
        self._ids.add(got)
        return got
