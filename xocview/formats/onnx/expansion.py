"""How far the reader expands calls of model-local functions, decided before expanding any.

A function whose body calls the next one twice, 30 levels deep, is a 2 KB file that stands
for 2^30 nodes: expanded, it would hold the reader (and onnx's shape inference, which expands
calls in C++ while holding the interpreter lock) for ever. So the expanded size is counted
first over the call graph (a function's size is its own nodes plus its callees' sizes, per
level of nesting; a recursive function just gets deeper) and calls are expanded only as deep
as the node budget allows; deeper calls stay single nodes, and the notes name the functions
left so. Shape inference runs only when the fully expanded model is small enough.
"""

from __future__ import annotations

import base64
import binascii
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import onnx
from google.protobuf.message import DecodeError

from xocview.errors import shorten
from xocview.formats.onnx.attrs import GRAPH_TYPES, bodies
from xocview.formats.onnx.text import text

__all__ = [
    "INFERENCE_NODE_LIMIT",
    "KEPT_KEY",
    "MAX_EXPANDED_NODES",
    "MAX_FUNCTION_DEPTH",
    "FnKey",
    "Plan",
    "function_label",
    "keep_functions",
    "kept_functions",
    "plan",
]

KEPT_KEY = "kept_functions"  # graph metadata: base64 FunctionProtos of unexpanded calls

FnKey = tuple[str, str, str]  # domain, name, overload: how a node names the function it calls

# Calls are expanded while the graph stays within this many nodes (or within the file's own
# node count, when the file alone holds more): what the viewer lays out and draws in seconds.
MAX_EXPANDED_NODES = 200_000
# ... and within this many times the nodes the file itself holds (at least MIN_EXPANDED_NODES),
# so that what a file costs stays in proportion to its size: a transformer whose one layer
# function is called by 272 calls expands in full, a 2 KB file of 60 nodes to 20,000 at most.
EXPANSION_FACTOR = 200
MIN_EXPANDED_NODES = 20_000
# Calls nested deeper than this are never expanded (a recursive function stops here).
MAX_FUNCTION_DEPTH = 16
# onnx's shape inference expands every call, without a depth limit: it runs only when the fully
# expanded model has at most this many nodes, and EXPANSION_FACTOR times the file's own (and no
# function calls itself).
INFERENCE_NODE_LIMIT = 1_000_000
_CAP = INFERENCE_NODE_LIMIT + 1  # sizes are counted up to this, so they stay small integers


@dataclass
class _Body:
    """What a graph (with the graphs inside it) holds: nodes, and calls by function."""

    nodes: int = 0
    calls: Counter[FnKey] = field(default_factory=Counter)


@dataclass(frozen=True)
class Plan:
    """``depth``: calls nested this deep or deeper are not expanded; ``nodes``: the graph's
    node count so; ``infer``: whether shape inference may run; ``notes``: what was held back,
    one sentence each, naming the functions; ``kept``: the functions an unexpanded call needs
    (with the functions they call), which a saved file must carry as they are."""

    depth: int
    nodes: int
    infer: bool
    notes: tuple[str, ...]
    kept: tuple[FnKey, ...] = ()


def function_label(key: FnKey) -> str:
    domain, name = text(key[0]), text(key[1])
    return shorten(f"{domain}.{name}" if domain else name)


def plan(model: onnx.ModelProto, budget: int | None = None) -> Plan:
    """How deep to expand the calls of ``model``'s local functions, from its call graph;
    ``budget``: the nodes allowed (unless given: ``EXPANSION_FACTOR`` times the file's own
    nodes, within ``MIN_EXPANDED_NODES`` and ``MAX_EXPANDED_NODES``)."""
    functions = {(f.domain, f.name, getattr(f, "overload", "")): f for f in model.functions}
    if not functions:
        return Plan(MAX_FUNCTION_DEPTH, 0, True, ())  # nothing to expand
    refs = {key: _references(fn) for key, fn in functions.items()}
    main = _summary(model.graph.node, functions, refs)
    own = {key: _summary(fn.node, functions, refs) for key, fn in functions.items()}
    in_file = main.nodes + sum(body.nodes for body in own.values())
    in_proportion = max(MIN_EXPANDED_NODES, EXPANSION_FACTOR * in_file)
    if budget is None:
        budget = min(MAX_EXPANDED_NODES, in_proportion)
    infer_limit = min(INFERENCE_NODE_LIMIT, in_proportion)
    sizes = _sizes_by_remaining(own, MAX_FUNCTION_DEPTH)
    allowed = max(budget, main.nodes)
    depth, total = 0, main.nodes
    for d in range(MAX_FUNCTION_DEPTH, 0, -1):
        n = _expanded(main, sizes[d - 1])
        if n <= allowed:
            depth, total = d, n
            break
    full = _fully_expanded(main, own)
    notes: list[str] = []
    cut = _called_at(main, own, depth)
    if cut:
        notes.append(_cut_note(cut, depth, allowed))
    infer = full is not None and full <= infer_limit
    if not infer:
        why = (
            "a function calls itself"
            if full is None
            else f"the expanded model would have over {infer_limit:,} nodes"
        )
        notes.append(f"shape inference not run: {why}; types are those the file declares")
    kept = _reachable(_Body(calls=Counter(cut)), own) if cut else set()
    return Plan(depth, total, infer, tuple(notes), tuple(sorted(kept)))


def _cut_note(cut: list[FnKey], depth: int, allowed: int) -> str:
    names = ", ".join(f"'{function_label(k)}'" for k in cut[:3])
    more = f" and {len(cut) - 3} more" if len(cut) > 3 else ""
    where = f"nested {depth} deep" if depth else "in the graph"
    why = (
        f"calls nest no deeper than {MAX_FUNCTION_DEPTH} levels"
        if depth == MAX_FUNCTION_DEPTH
        else f"expanding them would make over {allowed:,} nodes"
    )
    return f"calls of function {names}{more} {where} are shown as single nodes, not expanded: {why}"


def _summary(
    nodes: Iterable[onnx.NodeProto],
    functions: dict[FnKey, onnx.FunctionProto],
    refs: dict[FnKey, Counter[str]],
) -> _Body:
    """The nodes of a body (its nodes' subgraphs included) and the calls among them. A graph
    given to a call counts once for each place the function's body refers to it (where the
    reader copies it), at the call's own level (one too shallow: more, never fewer)."""
    out = _Body()
    stack = [(iter(nodes), 1)]
    while stack:
        it, weight = stack[-1]
        node = next(it, None)
        if node is None:
            stack.pop()
            continue
        out.nodes = min(out.nodes + weight, _CAP)
        key = (node.domain, node.op_type, getattr(node, "overload", ""))
        called = refs.get(key)
        if called is not None:
            out.calls[key] = min(out.calls[key] + weight, _CAP)
        for attr in node.attribute if node.attribute else ():
            if attr.type not in GRAPH_TYPES:
                continue
            times = weight if called is None else min(weight * called[attr.name], _CAP)
            if times:
                graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs
                stack.extend((iter(g.node), times) for g in graphs)
    return out


def _references(fn: onnx.FunctionProto) -> Counter[str]:
    """How many graph-valued attributes of the function's body (at any depth) refer to each
    of the call's attributes."""
    out: Counter[str] = Counter()
    stack = [iter(fn.node)]
    while stack:
        node = next(stack[-1], None)
        if node is None:
            stack.pop()
            continue
        for attr in node.attribute if node.attribute else ():
            if attr.type in GRAPH_TYPES and attr.ref_attr_name:
                out[attr.ref_attr_name] += 1
        if node.attribute:
            stack.extend(iter(g.node) for g in bodies(node))
    return out


def _sizes_by_remaining(own: dict[FnKey, _Body], levels: int) -> list[dict[FnKey, int]]:
    """``sizes[r][f]``: the nodes of ``f``'s body when calls in it may expand ``r`` levels
    deeper; counted up to ``_CAP``."""
    sizes = [{key: min(body.nodes, _CAP) for key, body in own.items()}]
    for _ in range(levels):
        below = sizes[-1]
        sizes.append(
            {
                key: min(body.nodes + sum(n * below[c] for c, n in body.calls.items()), _CAP)
                for key, body in own.items()
            }
        )
    return sizes


def _expanded(main: _Body, callee_sizes: dict[FnKey, int]) -> int:
    return main.nodes + sum(n * callee_sizes[c] for c, n in main.calls.items())


def _fully_expanded(main: _Body, own: dict[FnKey, _Body]) -> int | None:
    """The node count with every call expanded (as shape inference does), up to ``_CAP``;
    None when a function calls itself, directly or not."""
    callers: dict[FnKey, list[FnKey]] = {key: [] for key in own}
    waiting = {key: len(body.calls) for key, body in own.items()}
    for key, body in own.items():
        for callee in body.calls:
            callers[callee].append(key)
    ready = [key for key, n in waiting.items() if n == 0]
    size: dict[FnKey, int] = {}
    while ready:  # callees before callers
        key = ready.pop()
        body = own[key]
        size[key] = min(body.nodes + sum(n * size[c] for c, n in body.calls.items()), _CAP)
        for caller in callers[key]:
            waiting[caller] -= 1
            if waiting[caller] == 0:
                ready.append(caller)
    reachable = _reachable(main, own)
    if any(key not in size for key in reachable):
        return None  # on a cycle (or calling one), and called
    return min(_expanded(main, size), _CAP)


def _reachable(main: _Body, own: dict[FnKey, _Body]) -> set[FnKey]:
    seen: set[FnKey] = set(main.calls)
    stack = list(seen)
    while stack:
        for callee in own[stack.pop()].calls:
            if callee not in seen:
                seen.add(callee)
                stack.append(callee)
    return seen


def _called_at(main: _Body, own: dict[FnKey, _Body], depth: int) -> list[FnKey]:
    """The functions called ``depth`` levels of calls down (0: by the graph itself), sorted
    by name."""
    level = set(main.calls)
    for _ in range(depth):
        level = {c for key in level for c in own[key].calls}
    return sorted(level, key=function_label)


def keep_functions(model: onnx.ModelProto, kept: Iterable[FnKey]) -> list[str]:
    """The kept functions, serialized as they are (base64), for the graph's metadata."""
    wanted = set(kept)
    return [
        base64.b64encode(f.SerializeToString()).decode("ascii")
        for f in model.functions
        if (f.domain, f.name, getattr(f, "overload", "")) in wanted
    ]


def kept_functions(
    metadata: dict[str, Any], written: Iterable[onnx.FunctionProto]
) -> list[onnx.FunctionProto]:
    """The functions the reader kept for unexpanded calls that the writer did not rebuild from
    an expanded call (a function rebuilt under the same name wins); entries that do not
    decode are left out."""
    entries = metadata.get(KEPT_KEY)
    if not isinstance(entries, list):
        return []
    taken = {(f.domain, f.name, getattr(f, "overload", "")) for f in written}
    out: list[onnx.FunctionProto] = []
    for entry in entries:
        fn = onnx.FunctionProto()
        try:
            fn.ParseFromString(base64.b64decode(entry, validate=True))
        except (TypeError, ValueError, binascii.Error, DecodeError):
            continue
        key = (fn.domain, fn.name, getattr(fn, "overload", ""))
        if key not in taken:
            taken.add(key)
            out.append(fn)
    return out
