"""Chains of nodes run as one step, as inference runtimes run them.

- **Conv -> per-channel affine ops -> Relu or Clip**: a BatchNormalization, or a Mul, Add,
  Sub or Div by a per-channel constant, after a Conv is an affine map of each output channel; folded
  into the Conv's weights and bias (once: the weights stay the same between passes) it costs
  nothing, where run on its own it reads and writes the whole activation again. A Relu or a
  Clip (MobileNet's Relu6) after them is applied in place on the Conv's fresh output.
- **affine ops -> Relu without a Conv** (DenseNet's BatchNormalization -> Mul -> Add -> Relu
  after a Concat): one multiply-add per element and the Relu in place.
- **a fresh result -> Relu** (the residual Sum of a ResNet block): the Relu in place.

A chain must be private: each tensor inside it read by the next node only and not returned.
Where a constant turns out not to be per-channel (it is seen on the first call), the step
runs each node's own kernel in turn: still one step, the same outputs.

The heat map keeps one colour per node of the file: the step's time is split back over its
nodes in proportion to their FLOPs (``Chain.shares``), and the result says which nodes were
fused (``RunResult.fused``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.executor.feeds import shape_known
from xocview.executor.ops.activation import clip_bounds, clipped
from xocview.executor.registry import Kernel
from xocview.model import Graph

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = ["Chain", "Link", "fuse_chains", "known_shape"]

_AFFINE = ("BatchNormalization", "Mul", "Add", "Sub", "Div")
_FLOAT32_MAX = 3.4028234663852886e38  # Clip-6's default bounds
# ops whose kernels return a new array: a Relu after them may work in place
_FRESH = ("Add", "Sub", "Mul", "Div", "Sum", "Concat", "MatMul", "Gemm", "BatchNormalization")


@dataclasses.dataclass(frozen=True)
class Link:
    """A node after the chain's head: its op, its kernel, and where the chain's tensor goes
    among its inputs (its other inputs are constants, passed to the step after the head's)."""

    op_type: str
    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    params: int  # constant inputs it takes
    position: int  # index of the chain's tensor among the node's inputs

    def apply(self, y: np.ndarray, params: Sequence[Any]) -> Any:
        args = list(params)
        args.insert(self.position, y)
        return self.fn(*args, **self.kwargs)


class Chain:
    """The kernel of a fused chain. ``head`` is the first node's kernel (None when the first
    node is itself an affine link); ``conv`` says the head is a Conv whose weights take the
    affine links; ``tail`` the Relu or Clip that ends the chain, if one does (applied in place
    where the array is the chain's own)."""

    def __init__(
        self,
        head: Callable[..., Any] | None,
        head_kwargs: dict[str, Any],
        head_inputs: int,
        conv: bool,
        links: list[Link],
        tail: Link | None,
    ) -> None:
        self.head, self.head_kwargs, self.head_inputs = head, head_kwargs, head_inputs
        self.conv, self.links, self.tail = conv, links, tail
        # the fold of the last call: identities of the arrays it was made from, then the
        # per-channel (a, c) (None: not per-channel) and, after a Conv, the scaled weights
        self._key: tuple[int, ...] | None = None
        self._map: tuple[np.ndarray, np.ndarray] | None = None
        self._weights: np.ndarray | None = None
        # the tail's bounds for the last call's dtype and bound arrays
        self._bounds: tuple[tuple[Any, ...], tuple[Any, Any]] | None = None
        self.flops: list[float] | None = None  # per fused node, from the first call's shapes

    def __call__(self, *args: Any) -> Any:
        head_args, params = args[: self.head_inputs], args[self.head_inputs :]
        if self.conv:
            y = self._conv(head_args, params)
        elif self.head is None:
            y = self._affine(head_args[0], params)
        else:
            y = self.head(*head_args, **self.head_kwargs)
        if self.tail is not None:
            # the Conv's output and the folded multiply-add's are arrays made here: no need to
            # look for overlap with the inputs on every call
            made = self._map is not None or (self.conv and not self.links)
            y = self._clip(y, params[len(params) - self.tail.params :], args, made)
        if self.flops is None:
            self._count(head_args, y)
        return y

    def _clip(self, y: Any, bounds: Sequence[Any], args: Sequence[Any], made: bool) -> Any:
        """The Relu or Clip that ends the chain, in place on an array the chain made."""
        tail = self.tail
        assert tail is not None
        if not (isinstance(y, np.ndarray) and y.dtype.kind == "f"):
            return tail.apply(y, bounds)
        key = (y.dtype, *(id(b) for b in bounds))
        if self._bounds is None or self._bounds[0] != key:
            if tail.op_type == "Relu":
                limits: tuple[Any, Any] = (y.dtype.type(0), None)
            elif tail.params:  # Clip-11 on: bounds as inputs
                limits = clip_bounds(y.dtype, *bounds)
            else:  # Clip-6: attributes
                limits = clip_bounds(
                    y.dtype,
                    tail.kwargs.get("min", -_FLOAT32_MAX),
                    tail.kwargs.get("max", _FLOAT32_MAX),
                )
            self._bounds = (key, limits)
        low, high = self._bounds[1]
        if made or _fresh(y, args):
            return clipped(y, low, high, out=y)
        return clipped(y, low, high)  # not ours to overwrite (a view of an input or constant)

    def _conv(self, head_args: Sequence[Any], params: Sequence[Any]) -> Any:
        x, w, b = head_args
        assert self.head is not None
        if not self.links:
            return self.head(x, w, b, **self.head_kwargs)
        key = tuple(id(v) for v in (w, b, *params))
        if key != self._key:
            self._key, self._map, self._weights = key, None, None
            folded = _affine_map(self.links, params, w.shape[0], w.ndim)
            bias = np.zeros(w.shape[0]) if b is None else np.asarray(b, np.float64).reshape(-1)
            if folded is not None and bias.shape == (w.shape[0],) and w.dtype.kind == "f":
                a, c = folded
                scaled = w.astype(np.float64) * a.reshape((-1,) + (1,) * (w.ndim - 1))
                self._weights = scaled.astype(w.dtype)
                self._map = (a, (c + a * bias).astype(w.dtype))
        if self._map is None or self._weights is None:
            return self._apply_links(self.head(x, w, b, **self.head_kwargs), params)
        return self.head(x, self._weights, self._map[1], **self.head_kwargs)

    def _affine(self, x: Any, params: Sequence[Any]) -> Any:
        if not (isinstance(x, np.ndarray) and x.ndim >= 2 and x.dtype.kind == "f"):
            return self._apply_links(x, params)
        key = (id(x.dtype), x.shape[1], x.ndim, *(id(p) for p in params))
        if key != self._key:
            self._key, self._map = key, None
            folded = _affine_map(self.links, params, x.shape[1], x.ndim)
            if folded is not None:
                shape = (-1,) + (1,) * (x.ndim - 2)
                a, c = folded
                self._map = (a.astype(x.dtype).reshape(shape), c.astype(x.dtype).reshape(shape))
        if self._map is None:
            return self._apply_links(x, params)
        y = np.multiply(x, self._map[0])
        y += self._map[1]
        return y

    def _apply_links(self, y: Any, params: Sequence[Any]) -> Any:
        """Each node's own kernel in turn: for constants that are not per-channel."""
        at = 0
        for link in self.links:
            y = link.apply(y, params[at : at + link.params])
            at += link.params
        return y

    def _count(self, head_args: Sequence[Any], y: Any) -> None:
        size = float(np.size(y))
        flops: list[float] = []
        if self.conv:
            w = head_args[1]
            flops.append(2.0 * (w.size // max(1, w.shape[0])) * size)
        elif self.head is not None:
            flops.append(size * max(1, self.head_inputs - 1))
        flops += [(2.0 if k.op_type == "BatchNormalization" else 1.0) * size for k in self.links]
        if self.tail is not None:
            flops.append(size)
        self.flops = flops

    def shares(self) -> list[float] | None:
        """Each fused node's share of the step's time (by FLOPs); None before the first call."""
        if not self.flops:
            return None
        total = sum(self.flops) or 1.0
        return [f / total for f in self.flops]


def _fresh(y: np.ndarray, inputs: Sequence[Any]) -> bool:
    """An array the kernel made (a new buffer, or a view of one): writeable and overlapping
    none of its inputs, constants included."""
    return y.flags.writeable and not any(
        isinstance(v, np.ndarray) and np.may_share_memory(y, v) for v in inputs
    )


def _per_channel(p: Any, channels: int, rank: int) -> np.ndarray | None:
    """A constant's values per channel (float64, length ``channels``) when it broadcasts
    along axis 1 of a rank-``rank`` tensor only; else None."""
    p = np.asarray(p)
    if p.dtype.kind not in "fiu" or p.ndim > rank:
        return None
    shape = (1,) * (rank - p.ndim) + p.shape
    if any(d != 1 for k, d in enumerate(shape) if k != 1) or shape[1] not in (1, channels):
        return None
    return np.broadcast_to(p.reshape(-1).astype(np.float64), (channels,))


def _affine_map(
    links: Sequence[Link], params: Sequence[Any], channels: int, rank: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """(a, c) in float64 with links(y) = a * y + c per channel, or None."""
    a, c = np.ones(channels), np.zeros(channels)
    at = 0
    for link in links:
        ps = params[at : at + link.params]
        at += link.params
        if link.op_type == "BatchNormalization":
            if not all(np.ndim(p) == 1 and np.size(p) in (1, channels) for p in ps):
                return None
            scale, beta, mean, var = (
                np.broadcast_to(np.asarray(p, np.float64), (channels,)) for p in ps
            )
            k = scale / np.sqrt(var + float(link.kwargs.get("epsilon", 1e-5)))
            a, c = a * k, (c - mean) * k + beta
            continue
        v = _per_channel(ps[0], channels, rank)
        if v is None:
            return None
        if link.op_type == "Mul":
            a, c = a * v, c * v
        elif link.op_type == "Add":
            c = c + v
        elif link.op_type == "Sub":
            c = c - v
        else:  # Div
            with np.errstate(divide="ignore", invalid="ignore"):
                a, c = a / v, c / v
    return a, c


def fuse_chains(
    steps: list[Step], graph: Graph, constant: np.ndarray, outputs: Sequence[int]
) -> list[Step]:
    """``steps`` with each private chain (see the module's doc) made one step."""
    readers = np.zeros(len(graph.tensors) + 1, dtype=np.int64)
    reader_of: dict[int, int] = {}
    for k, step in enumerate(steps):
        for t in [*step.inputs, *step.captures]:
            if t is not None:
                readers[t] += 1
        for t in step.inputs:
            if t is not None:
                reader_of[t] = k
    returned = set(outputs)

    def next_step(t: int) -> Step | None:
        """The one step that reads ``t``, when ``t`` is private to it."""
        if readers[t] != 1 or t in returned or t not in reader_of:
            return None
        return steps[reader_of[t]]

    gone: set[int] = set()
    replaced: dict[int, Step] = {}
    for k, step in enumerate(steps):
        if id(step) in gone or step.kernel is None or len(step.outputs) != 1:
            continue
        head = _head(step, graph, constant)
        if head is None:
            continue
        kind, link = head
        chain, links = [step], [] if link is None else [link]
        out = step.outputs[0][1]
        nxt = next_step(out)
        if kind != "fresh":
            while nxt is not None and id(nxt) not in gone:
                follower = _link(nxt, out, constant)
                if follower is None:
                    break
                chain.append(nxt)
                links.append(follower)
                out = nxt.outputs[0][1]
                nxt = next_step(out)
        tail = None if nxt is None or id(nxt) in gone else _tail(nxt, out, constant)
        if tail is not None:
            assert nxt is not None
            chain.append(nxt)
            out = nxt.outputs[0][1]
        if len(chain) == 1:
            continue
        replaced[k] = _fused_step(step, chain, kind, links, tail, out)
        gone.update(id(s) for s in chain[1:])
    if not replaced:
        return steps
    return [replaced.get(k, s) for k, s in enumerate(steps) if id(s) not in gone]


def _head(step: Step, graph: Graph, constant: np.ndarray) -> tuple[str, Link | None] | None:
    """How a chain may start at ``step``: ("conv", None), ("affine", its link), ("fresh",
    None), or None."""
    if step.op_type == "Conv":
        weights = [t for t in step.inputs[1:3] if t is not None]
        if len(step.inputs) >= 2 and all(constant[t] and known_shape(graph, t) for t in weights):
            return "conv", None
        return None
    x = _variable_input(step, constant)
    if x is not None:
        link = _link(step, x, constant)
        if link is not None:
            return "affine", link
    if step.op_type in _FRESH:
        return "fresh", None
    return None


def _variable_input(step: Step, constant: np.ndarray) -> int | None:
    """The one input that is not constant, when exactly one is."""
    variable = [t for t in step.inputs if t is not None and not constant[t]]
    return variable[0] if len(variable) == 1 else None


def _link(step: Step, t: int, constant: np.ndarray) -> Link | None:
    """``step`` as an affine link fed by tensor ``t``, or None."""
    if step.op_type not in _AFFINE or step.kernel is None or len(step.outputs) != 1:
        return None
    if step.num_outputs != 1:
        return None
    others = [u for u in step.inputs if u != t]
    if t not in step.inputs or step.inputs.count(t) != 1:
        return None
    if not all(u is not None and constant[u] for u in others):
        return None
    position = step.inputs.index(t)
    if step.op_type == "BatchNormalization":
        if step.kwargs.get("training_mode") or len(step.inputs) != 5 or position != 0:
            return None
    elif len(step.inputs) != 2 or (step.op_type in ("Sub", "Div") and position != 0):
        return None
    return Link(step.op_type, step.kernel.fn, dict(step.kwargs), len(others), position)


def _tail(step: Step, t: int, constant: np.ndarray) -> Link | None:
    """``step`` as the Relu or Clip (opset 6 on, constant bounds) that ends a chain at ``t``."""
    if step.op_type not in ("Relu", "Clip") or step.kernel is None or len(step.outputs) != 1:
        return None
    if step.inputs[:1] != [t] or (step.op_type == "Clip" and step.kernel.since < 6):
        return None
    bounds = step.inputs[1:]
    if not all(u is None or constant[u] for u in bounds):
        return None
    return Link(step.op_type, step.kernel.fn, dict(step.kwargs), len(bounds), 0)


def _fused_step(
    step: Step, chain: list[Step], kind: str, links: list[Link], tail: Link | None, out: int
) -> Step:
    """The step that runs ``chain``: the head's inputs, then each link's constants."""
    assert step.kernel is not None
    if kind == "conv":
        head_in: list[int | None] = list(step.inputs) + [None] * (3 - len(step.inputs))
        head_in = head_in[:3]
    elif kind == "affine":
        head_in = [chain[0].inputs[links[0].position]]
    else:
        head_in = list(step.inputs)
    ins = list(head_in)
    link_steps = chain[1:] if kind != "affine" else chain
    for s, link in zip(link_steps, links, strict=False):
        ins += [u for k, u in enumerate(s.inputs) if k != link.position]
    if tail is not None:
        ins += chain[-1].inputs[1:]
    fn = Chain(
        step.kernel.fn if kind != "affine" else None,
        dict(step.kwargs),
        len(head_in),
        kind == "conv",
        links,
        tail,
    )
    kernel = Kernel("+".join(s.op_type for s in chain), 0, fn, False)
    return dataclasses.replace(
        step,
        kernel=kernel,
        problem=None,
        inputs=ins,
        outputs=[(0, out)],
        num_outputs=1,
        kwargs={},
        fused_with=[(s.node_id, s.op_type) for s in chain[1:]],
        hidden=[s.outputs[0][1] for s in chain[:-1]],
    )


def known_shape(graph: Graph, t: int) -> bool:
    """A tensor whose shape the file gives in full: a weight the run makes from its reader's
    position (shape inference by input index) must stay with its own node."""
    tensor = graph.tensors[t]
    return shape_known(tensor) and all(isinstance(d, int) and d >= 0 for d in tensor.shape)
