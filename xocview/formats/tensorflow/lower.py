"""TensorFlow ops run as ONNX ops: what one op's mapping writes (``TfEmit``, the shared ONNX
emitter reading a TF op); ``mapping.lower_graph`` is the pass that rewrites a built graph.

A mapping reads the op's inputs by position (``e.x(1)``, ``e.value(1)`` for a constant's
values, followed through Identity and ReadVariableOp), its attributes by name
(``e.attr("strides")``), and writes ONNX nodes with ``e.op``; ``e.last`` writes the op that
makes output 0. What it writes is kept aside until it succeeds: a mapping that cannot write an
op raises ``NotMapped`` with the reason, and the op stays a ``tensorflow`` node that the
executor refuses by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xocview.formats.onnx_emit import MISSING, NotMapped, PositionalEmit, lookup
from xocview.formats.unique_ids import unique
from xocview.model import Tensor

__all__ = ["NotMapped", "TfEmit"]

_DOMAIN = "tensorflow"
_COPIES = frozenset({"Identity", "ReadVariableOp", "StopGradient", "Snapshot"})
# What a mapping raises when the file's operands do not fit it: the op stays unmapped.
_ARGUMENT_ERRORS = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError)


class TfEmit(PositionalEmit):
    """One TF op's mapping in progress; its new tensors' ids are unique in the whole graph."""

    def __init__(
        self,
        tensors: list[Tensor],
        node_id: str,
        ins: list[int],
        outs: list[int],
        attrs: dict[str, Any],
        through: dict[int, int] | None = None,
        tensor_ids: set[str] | None = None,
    ) -> None:
        super().__init__(tensors, node_id, ins, outs)
        self.attrs = attrs
        self.through = through or {}
        self.tensor_ids = tensor_ids if tensor_ids is not None else {t.id for t in tensors}

    # -- reading the op ------------------------------------------------------------------------

    def attr(self, name: str, default: Any = MISSING) -> Any:
        return lookup(self.attrs, name, default, "attribute")

    def root(self, t: int) -> int:
        """The tensor ``t`` copies through Identity-like ops (itself when none)."""
        for _ in range(len(self.through) + 1):
            if t not in self.through:
                break
            t = self.through[t]
        return t

    def int1(self, k: int) -> int:
        got = self.ints(k)
        if len(got) != 1:
            raise NotMapped(f"input {k} holds {len(got)} values, not one")
        return got[0]

    def shape(self, t: int) -> list[int]:
        """A tensor's shape when the file gives it (a frozen graph's activations rarely do)."""
        tensor = self.tensors[self.root(t)]
        known = tensor.kind in ("weight", "input") or bool(tensor.shape)
        if tensor.metadata.get("rank_unknown") or not known:
            raise NotMapped(f"the shape of {tensor.id!r} is not in the file")
        return list(tensor.shape)

    # -- writing -------------------------------------------------------------------------------

    def last(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None = None
    ) -> None:
        """Write the op that makes the TF op's output 0."""
        if not self.outs:
            raise NotMapped("the op has no output")
        self.op(op_type, inputs, attrs, out=[self.outs[0]])

    def _tensor_id(self, label: str) -> str:
        return unique(f"{self.id}/{label}", self.tensor_ids)
