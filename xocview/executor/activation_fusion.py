"""Activations that exports spell out node by node, run as one step.

Exporters write SiLU as Sigmoid and Mul, the exact GELU as Div, Erf, Add, Mul and Mul, its
tanh form as eight nodes, HardSwish (before opset 14) as HardSigmoid and Mul; each node
streams the whole activation through memory and allocates its result. A *cluster* is a set of
such element-wise nodes fed by one tensor and size-1 constants, whose inner tensors nobody
else reads, with a single tensor leaving it. On its first call the cluster's own kernels run
on a probe of values from -12 to 12 (and a few far out), and the result is compared with
what the kernels of the KNOWN activations compute; a match runs that kernel instead: one call,
over cache-sized blocks where it is exp- or erf-based. Recognising the function by its values
rather than by the shape of the nodes makes the order of the factors, Div by sqrt 2 or Mul by
its inverse, and Pow or Mul for the cube all the same. A cluster that matches nothing, or
meets a dtype other than float32 or constants that are not scalars, runs its nodes' kernels
in turn: still one step, the same outputs.

The heat map splits the step's time evenly over its nodes (each reads and writes the same
number of elements), and the result says which nodes were fused (``RunResult.fused``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.executor.fusion import known_shape
from xocview.executor.ops.activation import gelu, hard_swish, sigmoid, silu
from xocview.executor.ops.contrib_activation import quick_gelu
from xocview.executor.registry import Kernel

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = ["ActivationCluster", "fuse_activations"]

_UNARY = frozenset(
    {"Sigmoid", "Tanh", "Erf", "Exp", "Neg", "Sqrt", "Reciprocal", "HardSigmoid", "HardSwish"}
    | {"Softplus", "Relu", "Gelu", "Abs", "Log"}
)
# a cluster without one of these cannot be one of the KNOWN activations
_CURVES = frozenset({"Sigmoid", "Tanh", "Erf", "Exp", "HardSigmoid", "HardSwish", "Gelu"})
_BINARY = frozenset({"Add", "Sub", "Mul", "Div", "Pow"})
MAX_NODES = 12

# name -> the kernel that computes it in one step (the same kernels as the ops of those names)
KNOWN: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "SiLU": silu,
    "Gelu": gelu,
    "Gelu(tanh)": functools.partial(gelu, approximate="tanh"),
    "QuickGelu": quick_gelu,
    "HardSwish": hard_swish,
    "Sigmoid": sigmoid,
}
_FAR = [-100.0, -60.0, -30.0, -1e-4, 0.0, 1e-4, 30.0, 60.0, 100.0]
PROBE = np.concatenate([np.linspace(-12.0, 12.0, 4801), _FAR]).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class Member:
    """One node of a cluster: its kernel, and where each argument comes from: ("x", 0) the
    cluster's input, ("v", k) member k's output, ("c", j) the step's constant input j."""

    op_type: str
    fn: Callable[..., Any]
    kwargs: dict[str, Any]
    sources: tuple[tuple[str, int], ...]


class ActivationCluster:
    """The kernel of a fused cluster: ``fn(x, *constants)``."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members
        self._key: tuple[Any, ...] | None = None
        self.known: str | None = None  # the activation recognised for the last call's key

    def __call__(self, x: Any, *constants: Any) -> Any:
        key = (getattr(x, "dtype", None), np.ndim(x), *(id(c) for c in constants))
        if key != self._key:
            self._key, self.known = key, self._identify(x, constants)
        if self.known is None:
            return self.replay(x, constants)
        return KNOWN[self.known](x)

    def replay(self, x: Any, constants: Sequence[Any]) -> Any:
        """Each member's own kernel in turn."""
        made: list[Any] = []
        for m in self.members:
            args = [x if s == "x" else made[k] if s == "v" else constants[k] for s, k in m.sources]
            made.append(m.fn(*args, **m.kwargs))
        return made[-1]

    def _identify(self, x: Any, constants: Sequence[Any]) -> str | None:
        """The known activation the members compute on a probe, for float32 inputs and
        scalar constants that leave x's shape as it is; else None."""
        if not (isinstance(x, np.ndarray) and x.dtype == np.float32):
            return None
        if not all(
            isinstance(c, np.ndarray | np.generic) and np.size(c) == 1 and np.ndim(c) <= x.ndim
            for c in constants
        ):
            return None
        probe = PROBE.reshape((1,) * max(x.ndim - 1, 0) + (-1,))
        try:
            with np.errstate(all="ignore"):
                got = np.asarray(self.replay(probe, constants))
        except Exception:  # a member refusing the probe: the nodes run as they are
            return None
        if got.dtype != np.float32 or got.shape != probe.shape:
            return None
        for name, known in KNOWN.items():
            with np.errstate(all="ignore"):
                want = known(probe)
            if np.allclose(got, want, rtol=1e-5, atol=1e-5):
                return name
        return None

    def shares(self) -> list[float]:
        """Each node's share of the step's time: even, as each passes over the same elements."""
        return [1.0 / len(self.members)] * len(self.members)


def fuse_activations(
    steps: list[Step], graph: Any, constant: np.ndarray, outputs: Sequence[int]
) -> list[Step]:
    """``steps`` with each activation cluster (see the module's doc) made one step."""
    readers: dict[int, list[int]] = {}
    pinned: set[int] = set(outputs)  # returned, or read by a body: must stay a tensor
    for k, step in enumerate(steps):
        for t in step.inputs:
            if t is not None:
                readers.setdefault(t, []).append(k)
        pinned.update(step.captures)
    taken: set[int] = set()
    replaced: dict[int, Step] = {}

    def scalar(t: int) -> bool:
        """A constant of one element by the shape the file gives it."""
        shape = graph.tensors[t].shape
        return bool(constant[t]) and known_shape(graph, t) and all(d == 1 for d in shape)

    for k, step in enumerate(steps):
        if k in taken or not _eligible(step, scalar, constant):
            continue
        roots = [t for t in step.inputs if t is not None and not constant[t]]
        if len(set(roots)) != 1:
            continue
        cluster = _cluster(roots[0], k, steps, readers, scalar, constant, taken)
        best = _best_cut(cluster, steps, readers, pinned)
        if best is None or not any(steps[m].op_type in _CURVES for m in best):
            continue
        replaced[best[0]] = _fused_step(roots[0], best, steps, constant)
        taken.update(best)
    if not replaced:
        return steps
    return [replaced.get(k, s) for k, s in enumerate(steps) if k in replaced or k not in taken]


def _eligible(step: Step, scalar: Callable[[int], bool], constant: np.ndarray) -> bool:
    """An element-wise op whose constant inputs, if any, are scalars."""
    if step.kernel is None or len(step.outputs) != 1 or step.num_outputs != 1 or step.bodies:
        return False
    if step.op_type in _UNARY:
        return len(step.inputs) == 1 and step.inputs[0] is not None
    if step.op_type not in _BINARY or len(step.inputs) != 2 or None in step.inputs:
        return False
    return all(scalar(t) or not constant[t] for t in step.inputs if t is not None)


def _cluster(
    root: int,
    first: int,
    steps: list[Step],
    readers: dict[int, list[int]],
    scalar: Callable[[int], bool],
    constant: np.ndarray,
    taken: set[int],
) -> list[int]:
    """Steps from ``first`` on computed from ``root`` and scalar constants only, in order."""
    inside, members = {root}, [first]
    inside.add(steps[first].outputs[0][1])
    grown = True
    while grown and len(members) < MAX_NODES:
        grown = False
        for t in list(inside):
            for r in readers.get(t, []):
                if (
                    r in members
                    or r in taken
                    or r < first
                    or not _eligible(steps[r], scalar, constant)
                ):
                    continue
                if all(u in inside or scalar(u) for u in steps[r].inputs if u is not None):
                    members.append(r)
                    inside.add(steps[r].outputs[0][1])
                    grown = True
    return sorted(members)


def _best_cut(
    members: list[int], steps: list[Step], readers: dict[int, list[int]], pinned: set[int]
) -> list[int] | None:
    """The largest part of ``members`` (two steps at least) made of one member and the members
    it is computed from, where every tensor but that member's output is read inside only."""
    made = {steps[k].outputs[0][1]: k for k in members}
    best: list[int] = []
    for last in reversed(members):
        part, todo = {last}, [last]
        while todo:
            for u in steps[todo.pop()].inputs:
                k = made.get(u) if u is not None else None
                if k is not None and k not in part:
                    part.add(k)
                    todo.append(k)
        if len(part) <= max(1, len(best)):
            continue
        inner = [steps[k].outputs[0][1] for k in part if k != last]
        if all(t not in pinned and all(r in part for r in readers.get(t, [])) for t in inner):
            best = sorted(part)
    return best or None


def _fused_step(root: int, part: list[int], steps: list[Step], constant: np.ndarray) -> Step:
    """One step running ``part``: its inputs are the root, then each member's constants."""
    where = {steps[k].outputs[0][1]: i for i, k in enumerate(part)}
    ins: list[int | None] = [root]
    members: list[Member] = []
    for k in part:
        s = steps[k]
        assert s.kernel is not None
        sources: list[tuple[str, int]] = []
        for u in s.inputs:
            assert u is not None
            if u == root:
                sources.append(("x", 0))
            elif u in where and where[u] < len(members):
                sources.append(("v", where[u]))
            else:
                sources.append(("c", len(ins) - 1))
                ins.append(u)
        fn = s.kernel.call  # narrow types computed wide, as the runtime calls it
        members.append(Member(s.op_type, fn, dict(s.kwargs), tuple(sources)))
    head, rest = steps[part[0]], [steps[k] for k in part[1:]]
    kernel = Kernel("+".join(steps[k].op_type for k in part), 0, ActivationCluster(members), False)
    return dataclasses.replace(
        head,
        kernel=kernel,
        problem=None,
        inputs=ins,
        outputs=[(0, rest[-1].outputs[0][1])],
        num_outputs=1,
        kwargs={},
        fused_with=[(s.node_id, s.op_type) for s in rest],
        hidden=[steps[k].outputs[0][1] for k in part[:-1]],
    )
