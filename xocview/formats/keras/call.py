"""One Keras layer call being lowered to ONNX operators (``Call``): the shared ONNX emitter
reading the layer's config and weights.

A lowering reads the layer's config (``c.cfg("units")``), its input tensors (``c.x``,
``c.xs``) and weights (``c.w(k)``) as positions in the graph, writes ONNX nodes with
``c.op`` (one output each) and returns the tensor that is the layer's output. A lowering that
cannot map the call raises ``NotMapped`` with the reason, and the layer stays a node of domain
``keras`` that the executor refuses by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xocview.formats.onnx_emit import MISSING, NotMapped, OnnxEmit, lookup
from xocview.model import Tensor

__all__ = ["Call", "NotMapped"]


class Call(OnnxEmit):
    """One call of a layer: its inputs, weights and config."""

    def __init__(
        self,
        tensors: list[Tensor],
        node_id: str,
        config: dict[str, Any],
        inputs: list[int],
        weights: list[int],
    ) -> None:
        super().__init__(tensors, node_id)
        self.node_id, self.config = node_id, config
        self.inputs, self.weights = inputs, weights
        self.by_rank = False  # wrote ops that work out a rank when run (see Builder.hints)

    def cfg(self, key: str, default: Any = MISSING) -> Any:
        """A config value; ``default`` when the config leaves it out or null."""
        return lookup(self.config, key, default, "config value")

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

    def op(
        self,
        op_type: str,
        inputs: Sequence[int],
        attrs: dict[str, Any] | None = None,
        dtype: str | None = None,
    ) -> int:
        """Write one ONNX node; its one new output."""
        return self.op1(op_type, inputs, attrs=attrs, dtype=dtype)

    def ints(self, values: Sequence[int], label: str) -> int:
        return self.i64(values, label)
