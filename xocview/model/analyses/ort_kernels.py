"""onnxruntime's profile (the trace events that ``SessionOptions.enable_profiling`` writes) as
kernel times per node of our graph.

Pure functions on parsed JSON and the graph: the onnxruntime engine (``executor``) and the
profile import (``formats.profiles``), which may not import each other, share them here. Reading
needs no onnxruntime, so a profile made on another machine can be put onto a graph as well as
one made here. onnxruntime renames what its optimizers fuse; the names still point at
an original node in four ways (seen with onnxruntime 1.32):

- ``<node>/<Name>Fusion...``: a fusion named after one of the nodes it took in (MatMul + Add ->
  ``<MatMul>/MatMulAddFusion``, LayerNorm -> ``<Mul>/LayerNormFusion/``);
- ``<tensor>_nchwc``: the NCHWc layout transformer names a Conv or pool after its first output
  tensor, which after a Conv + Relu fusion is the Relu's; the kernel's own op (``op_name``)
  picks the Conv back out of the nodes that lead to that tensor. A BatchNormalization or Mul
  it turns into a Conv is ``<its output>_bn_nchwc`` or ``<its output>_mul_nchwc``;
- ``fused <node>``: a Gemm with its activation (FusedGemm);
- ``_token_<n>`` at the end: a name made unique by ``Graph::GenerateNodeName``.

What no rule places (``ReorderInput``, the Reshapes around a Gemm, ``Gelu``,
``/QuickGeluFusion/``) is returned as unmatched, never dropped.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.model.analyses.profile import subgraph_holders
from xocview.model.graph import Graph
from xocview.model.hierarchy import Hierarchy

__all__ = [
    "Attribution",
    "Kernel",
    "OrtProfile",
    "attribute",
    "median_times",
    "parse_profile",
]

KERNEL = "_kernel_time"
FENCES = ("_fence_before", "_fence_after")  # waits around a kernel, not its time
_TOKEN = re.compile(r"_token_\d+$")
_NCHWC = "_nchwc"
_FUSED = "fused "
_WALK_BACK = 3  # producers searched behind an NCHWc kernel's tensor for a node of its op

Durations = list[float | None]  # seconds per run; None where the kernel did not run


@dataclass
class Kernel:
    """One node as onnxruntime ran it: its time in each run (summed over the run's calls, as
    a Loop body's node runs once per iteration)."""

    name: str
    op_name: str
    provider: str
    durations: Durations


@dataclass
class OrtProfile:
    """The kernels by name, in order of first appearance, and each run's wall time (the
    ``model_run`` events; empty in a profile without them, whose runs are then told apart by
    how often each kernel appears). ``other`` names Node events that are neither kernel times
    nor fences."""

    kernels: dict[str, Kernel] = field(default_factory=dict)
    run_times: list[float] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    @property
    def runs(self) -> int:
        return max((len(k.durations) for k in self.kernels.values()), default=len(self.run_times))


def parse_profile(data: Any, source: str = "profile") -> OrtProfile:
    """The kernels of a parsed profile: a list of trace events (or ``{"traceEvents": [...]}``).

    Raises FormatError naming the event that is not a trace event of the expected form.
    """
    events = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(events, list):
        raise FormatError(source, "", "not a list of trace events", "onnxruntime's profile")
    runs: list[tuple[float, float]] = []
    nodes: list[tuple[float, str, float, Mapping[str, Any]]] = []
    for k, event in enumerate(events):
        if not isinstance(event, dict):
            raise FormatError(source, f"[{k}]", "not an object", "a trace event")
        cat, name = event.get("cat"), event.get("name")
        if cat not in ("Node", "Session") or not isinstance(name, str):
            continue
        if cat == "Session" and name != "model_run":
            continue
        ts, dur = _number(event, "ts", source, k), _number(event, "dur", source, k)
        if cat == "Session":
            runs.append((ts, dur))
        else:
            args = event.get("args")
            nodes.append((ts, name, dur, args if isinstance(args, dict) else {}))
    runs.sort()
    nodes.sort(key=lambda e: e[0])
    profile = OrtProfile(run_times=[dur / 1e6 for _, dur in runs])
    starts = [ts for ts, _ in runs]
    seen: dict[str, int] = {}
    for ts, name, dur, args in nodes:
        if not name.endswith(KERNEL):
            if not name.endswith(FENCES):
                profile.other.append(name)
            continue
        base = name[: -len(KERNEL)]
        if starts:
            run = max(0, bisect_right(starts, ts) - 1)
        else:  # no run events: the n-th appearance of a kernel is in the n-th run
            run = seen[base] = seen.get(base, -1) + 1
        kernel = profile.kernels.get(base)
        if kernel is None:
            op, provider = str(args.get("op_name", "")), str(args.get("provider", ""))
            kernel = profile.kernels[base] = Kernel(base, op, provider, [])
        _add(kernel.durations, run, dur / 1e6)
    total = profile.runs
    for kernel in profile.kernels.values():
        kernel.durations.extend([None] * (total - len(kernel.durations)))
    return profile


def _number(event: Mapping[str, Any], key: str, source: str, k: int) -> float:
    value = event.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FormatError(source, f"[{k}].{key}", f"{value!r} is not a number", "microseconds")
    return float(value)


def _add(durations: Durations, run: int, seconds: float) -> None:
    if len(durations) <= run:
        durations.extend([None] * (run + 1 - len(durations)))
    durations[run] = (durations[run] or 0.0) + seconds


@dataclass
class Attribution:
    """Kernel times put onto a graph: seconds per run for each node id that a kernel names
    (own time: an If's or Loop's without its bodies'), the kernels each node got, and the
    kernels that name no node."""

    times: dict[str, Durations] = field(default_factory=dict)
    kernels: dict[str, list[str]] = field(default_factory=dict)
    unmatched: list[Kernel] = field(default_factory=list)

    def matched_share(self, profile: OrtProfile) -> tuple[float, float]:
        """The share of the kernels that a node got, by count and by summed time."""
        lost = {k.name for k in self.unmatched}
        count = 1 - len(lost) / len(profile.kernels) if profile.kernels else 1.0
        total = sum(_sum(k.durations) for k in profile.kernels.values())
        missed = sum(_sum(k.durations) for k in self.unmatched)
        return count, (1 - missed / total if total > 0 else 1.0)


def _sum(durations: Durations) -> float:
    return sum(d for d in durations if d is not None)


def attribute(profile: OrtProfile, graph: Graph) -> Attribution:
    """Each kernel's times onto the node of ``graph`` its name points at (see the module's
    docstring); kernels that point at the same node add up."""
    h = Hierarchy.of(graph)
    holders = subgraph_holders(graph, h)
    runs = ~h.is_group | holders
    ids = {graph.nodes[i].id: i for i in np.flatnonzero(runs).tolist()}
    out = Attribution()
    later: list[Kernel] = []
    for kernel in profile.kernels.values():
        node = _named(kernel.name, ids)
        if node is None:
            later.append(kernel)
        else:
            _credit(out, node, kernel)
    for kernel in later:  # after the named ones: those claim their nodes first
        node = _by_tensor(kernel, graph, ids, out.times)
        if node is None:
            out.unmatched.append(kernel)
        else:
            _credit(out, node, kernel)
    _own_times(out.times, graph, h, holders)
    return out


def _credit(out: Attribution, node: str, kernel: Kernel) -> None:
    have = out.times.get(node)
    if have is None:
        out.times[node] = list(kernel.durations)
    else:
        out.times[node] = [
            None if a is None and b is None else (a or 0.0) + (b or 0.0)
            for a, b in zip(have, kernel.durations, strict=True)
        ]
    out.kernels.setdefault(node, []).append(kernel.name)


def _variants(name: str) -> list[str]:
    """The name, and the name without what onnxruntime adds to make one: a ``_token_<n>``
    suffix and the ``fused `` of a FusedGemm."""
    bare = _TOKEN.sub("", name)
    out = [name, bare]
    out += [n[len(_FUSED) :] for n in (name, bare) if n.startswith(_FUSED)]
    return list(dict.fromkeys(out))


def _named(name: str, ids: Mapping[str, int]) -> str | None:
    """The node a kernel is named after: itself, or the node a fusion kept the name of."""
    for candidate in _variants(name):
        if candidate in ids:
            return candidate
        cut = candidate.rfind("/")
        while cut > 0:  # "<node>/...Fusion..."; node ids may hold "/" themselves
            if candidate[:cut] in ids:
                return candidate[:cut]
            cut = candidate.rfind("/", 0, cut)
    return None


def _by_tensor(
    kernel: Kernel, graph: Graph, ids: Mapping[str, int], taken: Mapping[str, object]
) -> str | None:
    """An NCHWc kernel's node (see the module's docstring); None for other kernels."""
    index = graph.index
    for name in _variants(kernel.name):
        if not name.endswith(_NCHWC):
            continue
        tensor = name[: -len(_NCHWC)]
        if index.has_tensor(tensor):
            return _of_op(graph, tensor, kernel.op_name, ids, taken)
        # "<tensor>_bn_nchwc", "<tensor>_mul_nchwc": a BatchNormalization or Mul made a Conv
        tensor = tensor.rpartition("_")[0]
        if tensor and index.has_tensor(tensor):
            producer = int(index.producer[index.tensor_position(tensor)])
            if producer >= 0 and graph.nodes[producer].id in ids:
                return graph.nodes[producer].id
    return None


def _of_op(
    graph: Graph, tensor: str, op: str, ids: Mapping[str, int], taken: Mapping[str, object]
) -> str | None:
    """Of the producers up to ``_WALK_BACK`` steps behind ``tensor``, the nearest of ``op``
    that no kernel named (the Conv of a Conv + Relu); else the tensor's producer."""
    index = graph.index
    first = int(index.producer[index.tensor_position(tensor)])
    if first < 0 or graph.nodes[first].id not in ids:
        return None
    frontier, seen = [first], {first}
    for _ in range(_WALK_BACK + 1):
        for p in frontier:
            node = graph.nodes[p]
            if node.op_type == op and node.id not in taken:
                return node.id
        behind = [int(index.producer[t]) for p in frontier for t in index.inputs_of(p).tolist()]
        frontier = [q for q in dict.fromkeys(behind) if q >= 0 and q not in seen]
        seen.update(frontier)
    return graph.nodes[first].id


def _own_times(
    times: dict[str, Durations], graph: Graph, h: Hierarchy, holders: np.ndarray
) -> None:
    """onnxruntime times an If or Loop with its bodies; like the bundled executor we keep its
    own share, so that a subtree's times add up to what it took."""
    inclusive = dict(times)
    for g in np.flatnonzero(holders).tolist():
        holder = graph.nodes[g].id
        if holder not in times:
            continue
        inner = [inclusive.get(graph.nodes[c].id) for c in h.children(g).tolist()]
        own: Durations = []
        for k, d in enumerate(times[holder]):
            spent = sum((c[k] or 0.0) for c in inner if c is not None)
            own.append(None if d is None else max(0.0, d - spent))
        times[holder] = own


def median_times(
    times: Mapping[str, Sequence[float | None]], first: int = 0
) -> dict[str, tuple[float, float]]:
    """Per node, the median over runs ``first``... in which it ran, and the slowest over the
    fastest of them (1.0 with one run or a fastest of 0)."""
    out: dict[str, tuple[float, float]] = {}
    for node, durations in times.items():
        ran = [d for d in durations[first:] if d is not None]
        if ran:
            low = min(ran)
            out[node] = (float(np.median(ran)), max(ran) / low if low > 0 else 1.0)
    return out
