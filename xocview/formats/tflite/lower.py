"""What one TFLite operator's mapping writes (``Lower``): the shared ONNX emitter reading the
operator's inputs by position and its options by field name.

A mapping reads inputs by position (``e.x(1)``, ``e.value(1)`` for a constant's values), its
options by field name (``e.opt("stride_h")``), and writes ONNX nodes with ``e.op``; ``e.last``
writes the op that makes the operator's output, followed by the fused activation when the
options name one. A mapping that cannot write an operator raises ``NotMapped`` with the
reason; the operator then stays a ``tflite`` node that the executor refuses by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xocview.formats.onnx_emit import FLOATS, MISSING, NotMapped, PositionalEmit, lookup
from xocview.model import Tensor

__all__ = ["FLOATS", "Lower", "NotMapped"]


class Lower(PositionalEmit):
    """One operator's mapping in progress."""

    known_transposes = True  # weights drawn with their sizes

    def __init__(
        self,
        tensors: list[Tensor],
        node_id: str,
        ins: list[int | None],
        outs: list[int],
        options: dict[str, Any],
    ) -> None:
        super().__init__(tensors, node_id, ins, outs)
        self.options = options

    def opt(self, name: str, default: Any = MISSING) -> Any:
        return lookup(self.options, name, default, "option")

    def last(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None = None
    ) -> None:
        """Write the op that makes output 0, then the fused activation if there is one."""
        act = self.options.get("fused_activation_function", "NONE")
        if act in ("NONE", 0, None):
            self.op(op_type, inputs, attrs, out=[self.outs[0]])
            return
        self.activation(self.op1(op_type, inputs, attrs=attrs), str(act), self.outs[0])

    def activation(self, t: int, act: str, out: int) -> None:
        """``act`` (an ActivationFunctionType name) of ``t`` written into ``out``."""
        if act == "RELU":
            self.op("Relu", [t], out=[out])
        elif act in ("RELU6", "RELU_N1_TO_1"):
            low = 0.0 if act == "RELU6" else -1.0
            high = 6.0 if act == "RELU6" else 1.0
            dt = self.dtype(t)
            self.op("Clip", [t, self.const(low, dt, "min"), self.const(high, dt, "max")], out=[out])
        elif act == "TANH":
            self.op("Tanh", [t], out=[out])
        else:
            raise NotMapped(f"fused activation {act} has no ONNX form here")
