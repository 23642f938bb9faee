"""A Chrome trace (what ``torch.profiler.profile(...).export_chrome_trace`` writes) put onto the
graph exported from the same model.

The events attributed are the outermost op events of each thread (``aten::linear``, not the
``aten::addmm`` inside it, whose time is already in its parent's); an outer event that is
neither an ATen op nor named after a node (a runtime's ``run``) is split into the op events
inside it, except the backward pass's (``autograd::engine::evaluate_function: ...``), which no
node of an inference export stands for. Each is matched, in this order:

1. by name: an event named after a node (its id or its source name) times that node;
2. by module and kind: the module call around it (``module_tree``) gives the scope, and the
   op's kind picks the node in that scope (``claims``): ``aten::linear`` -> the scope's next
   MatMul/Gemm and its bias Add;
3. by module alone: an op that no node of its kind stands for (``aten::to``, a LayerNorm the
   export decomposed) times its module's scope as a whole, spread over the scope's nodes by
   FLOPs (``spread``); never the model's own scope, where a spread would say nothing;
4. else it is unmatched, and listed.

A node's value is its time per pass of the model, in milliseconds: the pass count is the
number of calls of the model's module, else of ``ProfilerStep#`` ranges, else how often the
claims of a profile without modules started over, else 1.
"""

from __future__ import annotations

from typing import Any

from xocview.errors import FormatError
from xocview.formats.profiles.aten_ops import aten_name, onnx_kinds
from xocview.formats.profiles.claims import Claims, ScopeNodes
from xocview.formats.profiles.graph_scopes import GraphScopes
from xocview.formats.profiles.module_tree import ModuleTree
from xocview.formats.profiles.result import ImportedProfile, unmatched_by_name
from xocview.formats.profiles.spread import Spreader
from xocview.formats.profiles.trace_events import Span, read_trace, trace_events
from xocview.formats.source import Source
from xocview.model import Graph, Hierarchy

__all__ = ["DEFAULT_SOURCE", "NAME", "read", "sniff"]

NAME = "Chrome trace"
DEFAULT_SOURCE = "torch"
_NOT_OPS = ("python_function", "user_annotation", "gpu_user_annotation", "Trace")
_STEP = "ProfilerStep#"
_BACKWARD = "autograd::"  # a backward op: the exported graph has no node of it


def sniff(source: Source) -> str | None:
    """None when the file is a Chrome trace (events with a ``ph`` phase), else why not."""
    if not source.looks_like_json():
        return "not a JSON object or array"
    data: Any = source.json
    if isinstance(data, dict) and "traceEvents" not in data:
        return "no 'traceEvents' list"
    try:
        events, _ = trace_events(data, source.name)
    except FormatError as e:
        return f"{e.place}: {e.problem}" if e.place else e.problem
    if not any(isinstance(e, dict) and "ph" in e for e in events[:1000]):
        return "no trace events (objects with a 'ph' phase)"
    return None


def read(source: Source, graph: Graph, name: str | None = None) -> ImportedProfile:
    """Each node's time per pass (ms) from the trace's op events; FormatError names an event
    that is not an object or whose ``ts``/``dur`` is not a number."""
    trace = read_trace(source.json, source.name)
    torch = any(s.name.startswith("aten::") for s in trace.spans)
    out = ImportedProfile(NAME, name or (DEFAULT_SOURCE if torch else "trace"), True)
    out.what = "trace events"
    _Matcher(graph, trace.spans, out).run()
    for phase, count in sorted(trace.skipped.items()):
        what = "B/E events without their pair" if phase == "unpaired" else f"'{phase}' events"
        out.notes.append(f"{count:,} {what} carry no duration of work (left out)")
    return out


class _Matcher:
    """One trace matched onto one graph (see the module's docstring)."""

    def __init__(self, graph: Graph, spans: list[Span], out: ImportedProfile) -> None:
        self.graph, self.spans, self.out = graph, spans, out
        self.scopes = GraphScopes(graph)
        self.tree = ModuleTree(spans, self.scopes)
        self.spreader = Spreader(graph)
        self.present = {node.op_type for node in graph.nodes}
        self.names: dict[str, int] = {}
        for i, node in enumerate(graph.nodes):
            self.names.setdefault(node.id, i)
            label = node.metadata.get("name")
            if isinstance(label, str):
                self.names.setdefault(label, i)
        self.ms: dict[str, float] = {}  # microseconds summed, per node id
        self.split = 0
        self.group_us = 0.0
        self.units, self.nested = self._units()
        self.kinds = {u: self._kinds(self.spans[u].name) for u in self.units}
        for u in self.units:
            self.tree.add_kinds(u, self.kinds[u][2])
        self.tree.align()
        self.matched = {lb.scope for lb in self.tree.labels.values() if lb.scope is not None}
        self.nodes: dict[str, ScopeNodes] = {}
        self.root = Claims(self._nodes(""), self.scopes, wrap=True)
        self.calls: dict[int, Claims] = {}  # by the module call (context span) they belong to

    def run(self) -> None:
        units = self.units
        lost: list[tuple[str, float]] = []
        total = 0.0
        for u in units:
            span = self.spans[u]
            total += span.dur
            if not self._place(u, span, self.kinds[u]):
                lost.append((span.name, span.dur))
        passes, how = self._passes()
        scale = 1e-3 / passes  # microseconds over the trace -> ms per pass
        out = self.out
        out.values = {k: round(v * scale, 6) for k, v in self.ms.items() if v > 0}
        out.events = len(units)
        out.matched = len(units) - len(lost)
        out.total_ms = total * scale
        out.matched_ms = max(0.0, total - sum(d for _, d in lost)) * scale
        out.group_ms = self.group_us * scale
        out.unmatched = unmatched_by_name((n, d * scale) for n, d in lost)
        self._notes(passes, how, self.nested)

    # -- which events -----------------------------------------------------------------------

    def _units(self) -> tuple[list[int], int]:
        """The outermost op events (split where they stand for nothing themselves) and how
        many op events run inside them."""
        is_op = [
            s.cat not in _NOT_OPS and i not in self.tree.label_of for i, s in enumerate(self.spans)
        ]
        op_up = [-1] * len(self.spans)
        children: dict[int, list[int]] = {}
        for i, span in enumerate(self.spans):
            p = span.parent
            op_up[i] = -1 if p < 0 else (p if is_op[p] else op_up[p])
            if is_op[i] and op_up[i] >= 0:
                children.setdefault(op_up[i], []).append(i)
        stack = [i for i in range(len(self.spans)) if is_op[i] and op_up[i] < 0][::-1]
        units: list[int] = []
        while stack:
            i = stack.pop()
            name = self.spans[i].name
            if (
                i in children
                and aten_name(name) is None
                and name not in self.names
                and not name.startswith(_BACKWARD)
            ):
                self.split += 1
                stack.extend(reversed(children[i]))
            else:
                units.append(i)
        nested = sum(is_op) - len(units) - self.split
        return units, nested

    def _kinds(self, name: str) -> tuple[str, tuple[tuple[str, ...], tuple[str, ...]], list[str]]:
        """The event's ATen op, its ONNX kinds (follow-ups too) and the kinds present in the
        graph that stand for it (what the module alignment compares)."""
        aten = aten_name(name) or ""
        primary, then = onnx_kinds(aten) if aten else ((), ())
        sign = [k for k in primary if k in self.present][:1]
        sign += [k for k in then if k in self.present][:1]
        return aten, (primary, then), sign

    # -- where each goes ---------------------------------------------------------------------

    def _place(self, u: int, span: Span, kinds: tuple[str, Any, list[str]]) -> bool:
        """Put one event's time onto the graph; False when nothing takes it."""
        named = self.names.get(span.name)
        if named is not None:
            if Hierarchy.of(self.graph).is_group[named]:
                self._to_group(self._leaves_under(named), span.dur)
            else:
                self.spreader.add(self.ms, [named], span.dur)
            return True
        aten, (primary, then), _ = kinds
        if not aten:
            return False
        where = self.tree.scope_of(u)
        if where is None:
            taken = self.root.take(aten, primary, then)
        else:
            key, call = where
            claims = self.calls.get(call)
            if claims is None:
                claims = self.calls[call] = Claims(self._nodes(key), self.scopes)
            taken = claims.take(aten, primary, then)
        if taken:
            self.spreader.add(self.ms, taken, span.dur)
            return True
        if where is None or where[0] == "":
            return False  # the model as a whole: spread over every node, it would say nothing
        nodes = self._nodes(where[0])
        self._to_group(nodes.leaves or self.scopes.subtree_leaves(where[0]), span.dur)
        return True

    def _nodes(self, key: str) -> ScopeNodes:
        if key not in self.nodes:
            self.nodes[key] = ScopeNodes.of(self.scopes, key, self.matched)
        return self.nodes[key]

    def _to_group(self, leaves: list[int], dur: float) -> None:
        self.out.to_groups += 1
        self.group_us += dur
        self.spreader.add(self.ms, leaves, dur)

    def _leaves_under(self, group: int) -> list[int]:
        h = Hierarchy.of(self.graph)
        out: list[int] = []
        stack = [group]
        while stack:
            g = stack.pop()
            for c in h.children(g).tolist():
                (stack if h.is_group[c] else out).append(c)
        return sorted(out)

    # -- the account -------------------------------------------------------------------------

    def _passes(self) -> tuple[int, str]:
        roots = self.tree.roots()
        if len(roots) == 1 and self.tree.labels[roots[0]].scope == "":
            return self.tree.labels[roots[0]].calls, f"calls of the model ({roots[0]})"
        steps = sum(1 for s in self.spans if s.name.startswith(_STEP))
        if steps:
            return steps, f"{_STEP} ranges"
        if self.root.laps:
            return max(self.root.laps.values()) + 1, "times the ops ran through the graph"
        return 1, "no pass marked: the trace's totals"

    def _notes(self, passes: int, how: str, nested: int) -> None:
        notes = self.out.notes
        notes.append(f"{passes:,} pass{'es' * (passes != 1)} ({how}): values are per pass")
        labels = self.tree.labels
        modules = [lb for lb in labels.values() if lb.cls]
        if labels:
            found = sum(lb.scope is not None for lb in labels.values())
            notes.append(f"{found:,} of {len(labels):,} modules and ranges matched a scope")
        else:
            notes.append(
                "no module ranges (profile with with_stack=True, or record_function ranges "
                "named by module path): ops matched by kind in graph order"
            )
        if nested:
            notes.append(f"{nested:,} op events inside others (their time is their parent's)")
        if self.split:
            notes.append(f"{self.split:,} outer events split into the op events inside them")
        frames = sum(s.cat == "python_function" for s in self.spans)
        frames -= sum(lb.calls for lb in modules)
        if frames > 0:
            notes.append(f"{frames:,} Python stack frames (not ops) left out")
        if self.tree.ranges:
            notes.append(f"{self.tree.ranges:,} ranges that name no scope (passed through)")
