"""Conv -> BatchNormalization -> Relu chains run as one step, as inference runtimes run them.

A BatchNormalization after a Conv is a per-channel affine map: folded into the Conv's weights
and bias (once, the first time the step runs: the weights stay the same between passes) it
costs nothing, where run on its own it reads and writes the whole activation twice. A Relu
after them is applied in place on the Conv's fresh output. The chain must be private: each
intermediate tensor read by the next node only and not returned.

The heat map keeps one colour per node of the file: the fused step's time is split back over
its nodes in proportion to their FLOPs (``Fused.shares``), and the result says which nodes were
fused (``RunResult.fused``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.executor.registry import Kernel
from xocview.model import Graph

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = ["Fused", "fuse_conv_chains"]


class Fused:
    """The kernel of a fused chain: the Conv's, with the BatchNormalization folded into its
    weights (cached by the identity of the weight arrays) and the Relu applied in place."""

    def __init__(
        self,
        conv: Callable[..., Any],
        conv_kwargs: dict[str, Any],
        epsilon: float | None,
        relu: bool,
    ) -> None:
        self.conv, self.conv_kwargs = conv, conv_kwargs
        self.epsilon, self.relu = epsilon, relu
        self._folded: tuple[tuple[int, ...], np.ndarray, np.ndarray | None] | None = None
        self.flops: list[float] | None = None  # per fused node, from the first call's shapes

    def __call__(self, x: np.ndarray, w: np.ndarray, b: np.ndarray | None, *bn: Any) -> Any:
        if self.epsilon is not None:
            w, b = self._fold(w, b, *bn)
        y = self.conv(x, w, b, **self.conv_kwargs)
        if self.relu:
            np.maximum(y, 0, out=y)
        if self.flops is None:
            per_output = 2.0 * (w.size // max(1, w.shape[0]))
            self.flops = [per_output * y.size]
            if self.epsilon is not None:
                self.flops.append(2.0 * y.size)
            if self.relu:
                self.flops.append(1.0 * y.size)
        return y

    def _fold(
        self, w: np.ndarray, b: np.ndarray | None, scale: Any, beta: Any, mean: Any, var: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        """W * a per output channel and (b - mean) * a + beta, a = scale / sqrt(var + eps);
        in float64, rounded once to W's dtype."""
        key = tuple(id(v) for v in (w, b, scale, beta, mean, var))
        if self._folded is None or self._folded[0] != key:
            eps = float(self.epsilon or 0.0)
            a = np.asarray(scale, np.float64) / np.sqrt(np.asarray(var, np.float64) + eps)
            bias = np.zeros(w.shape[0]) if b is None else np.asarray(b, np.float64)
            c = (bias - np.asarray(mean, np.float64)) * a + np.asarray(beta, np.float64)
            w2 = (w.astype(np.float64) * a.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
            self._folded = (key, w2, c.astype(w.dtype))
        return self._folded[1], self._folded[2]  # type: ignore[return-value]

    def shares(self) -> list[float] | None:
        """Each fused node's share of the step's time (by FLOPs); None before the first call."""
        if not self.flops:
            return None
        total = sum(self.flops) or 1.0
        return [f / total for f in self.flops]


def _private(t: int, readers: np.ndarray, outputs: set[int]) -> bool:
    return readers[t] == 1 and t not in outputs


def fuse_conv_chains(
    steps: list[Step], graph: Graph, constant: np.ndarray, outputs: Sequence[int]
) -> list[Step]:
    """``steps`` with each private Conv [-> BatchNormalization] [-> Relu] chain made one step:
    the Conv's weights and bias constant, the BatchNormalization in inference with constant
    per-channel (1-D) parameters."""
    num_tensors = len(graph.tensors)

    readers = np.zeros(num_tensors + 1, dtype=np.int64)
    for step in steps:
        for t in [*step.inputs, *step.captures]:
            if t is not None:
                readers[t] += 1
    returned = set(outputs)
    reader_of: dict[int, int] = {}
    for k, step in enumerate(steps):
        for t in step.inputs:
            if t is not None:
                reader_of[t] = k
    gone: set[int] = set()
    replaced: dict[int, Step] = {}
    for k, step in enumerate(steps):
        if step.op_type != "Conv" or step.kernel is None or len(step.outputs) != 1:
            continue
        weights = [t for t in step.inputs[1:3] if t is not None]
        if len(step.inputs) < 2 or not all(constant[t] and _known(graph, t) for t in weights):
            continue
        chain = [step]
        out = step.outputs[0][1]
        bn: Step | None = None
        nxt = _next(steps, reader_of, out, readers, returned)
        if (
            nxt is not None
            and _foldable_bn(nxt, graph, constant)
            and _per_channel(step, nxt, graph)
        ):
            bn = nxt
            chain.append(bn)
            out = bn.outputs[0][1]
            nxt = _next(steps, reader_of, out, readers, returned)
        relu = nxt is not None and nxt.op_type == "Relu" and nxt.kernel is not None
        if relu:
            assert nxt is not None
            chain.append(nxt)
            out = nxt.outputs[0][1]
        if len(chain) == 1:
            continue
        hidden = [s.outputs[0][1] for s in chain[:-1]]
        conv_in = list(step.inputs) + [None] * (3 - len(step.inputs))
        ins = conv_in[:3] + (list(bn.inputs[1:5]) if bn is not None else [])
        epsilon = float(bn.kwargs.get("epsilon", 1e-5)) if bn is not None else None
        assert step.kernel is not None
        fused = Fused(step.kernel.fn, dict(step.kwargs), epsilon, relu)
        kernel = Kernel("+".join(s.op_type for s in chain), 0, fused, False)
        replaced[k] = dataclasses.replace(
            step,
            kernel=kernel,
            problem=None,
            inputs=ins,
            outputs=[(0, out)],
            num_outputs=1,
            kwargs={},
            fused_with=[(s.node_id, s.op_type) for s in chain[1:]],
            hidden=hidden,
        )
        gone.update(id(s) for s in chain[1:])
    if not replaced:
        return steps
    return [replaced.get(k, s) for k, s in enumerate(steps) if id(s) not in gone]


def _next(
    steps: list[Step], reader_of: dict[int, int], t: int, readers: np.ndarray, returned: set[int]
) -> Step | None:
    """The one step that reads ``t``, when ``t`` is private to it."""
    if not _private(t, readers, returned) or t not in reader_of:
        return None
    step = steps[reader_of[t]]
    return step if step.inputs and step.inputs[0] == t else None


def _foldable_bn(step: Step, graph: Graph, constant: np.ndarray) -> bool:
    """An inference BatchNormalization with one output and constant per-channel parameters."""
    if step.op_type != "BatchNormalization" or step.kernel is None or len(step.outputs) != 1:
        return False
    if step.num_outputs != 1 or step.kwargs.get("training_mode") or len(step.inputs) != 5:
        return False
    params = step.inputs[1:5]
    if not all(t is not None and constant[t] and _known(graph, t) for t in params):
        return False
    return all(len(graph.tensors[t].shape) == 1 for t in params if t is not None)


def _per_channel(conv: Step, bn: Step, graph: Graph) -> bool:
    """The BatchNormalization's parameters run along the Conv's output channels: W is
    (C_out, C_in / group, *kernel) with C_out the parameters' length (LightNet keeps a leading
    1 on its weights: those stay unfused)."""
    w, scale = conv.inputs[1], bn.inputs[1]
    if w is None or scale is None:
        return False
    shape = graph.tensors[w].shape
    return len(shape) >= 3 and shape[0] == graph.tensors[scale].shape[0]


def _known(graph: Graph, t: int) -> bool:
    """A tensor whose shape the file gives in full: a weight the run makes from its reader's
    position (shape inference by input index) must stay with its own node."""
    tensor = graph.tensors[t]
    return not tensor.metadata.get("rank_unknown") and all(
        isinstance(d, int) and d >= 0 for d in tensor.shape
    )
