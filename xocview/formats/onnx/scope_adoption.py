"""Top-level ONNX nodes left without a name scope, placed in the scope of what they replaced.

The reader groups torch exports' nodes by the scope in their names (``/a/b/Op``). Rewrites
leave nodes without one: onnxruntime's transformer optimizer fuses a block's nodes into one
(``Attention_0``, ``SkipLayerNorm_AddBias_0``) that keeps the output name of the last node it
replaced (``/bert/encoder/layer.0/attention/self/Reshape_3_output_0``), and dynamo splits a
fused QKV projection with an unnamed Split between named nodes. Left at the top, such nodes
would be drawn outside their layer, and the flow would read wrong.
"""

from __future__ import annotations

from xocview.model import Graph

__all__ = ["adopt_loose_nodes"]


def adopt_loose_nodes(graph: Graph, top: list[int], scoped: dict[str, list[int]]) -> None:
    """Give top-level nodes without a scope one, in two ways:

    - the scope in the name of a value it makes, as torch's exporter names values
      (``/scope/Op_output_0``): what a fused node replaced;
    - else the deepest scope its producers and consumers share, when every one of those has
      a scope (nodes that read the graph's inputs or write its outputs stay at the top);
      repeated, so that a chain of such nodes is placed from both of its ends.
    """
    nodes, tensors = graph.nodes, graph.tensors
    prefix_of = {p: prefix for prefix, members in scoped.items() for p in members}
    loose = [
        p
        for p in top
        if p not in prefix_of
        and "children_ids" not in nodes[p].metadata
        and "parent_id" not in nodes[p].metadata
    ]
    if not loose:
        return
    placed: dict[int, str] = {}
    for p in loose:
        prefix = next(
            (s for s in (_value_scope(tensors[t].id) for t in nodes[p].outputs) if s), None
        )
        if prefix is not None:
            placed[p] = prefix
    prefix_of.update(placed)
    rest = [p for p in loose if p not in placed]
    if rest:
        _by_neighbours(graph, top, rest, prefix_of, placed)
        rest = [p for p in rest if p not in placed]
    if rest and _by_weights(graph, rest, set(scoped), prefix_of, placed):
        _by_neighbours(graph, top, [p for p in rest if p not in placed], prefix_of, placed)
    for p, prefix in placed.items():
        members = scoped.setdefault(prefix, [])
        members.append(p)
    for prefix in {placed[p] for p in placed}:
        scoped[prefix].sort()


def _by_neighbours(
    graph: Graph, top: list[int], rest: list[int], prefix_of: dict[int, str], placed: dict[int, str]
) -> None:
    """Place nodes of ``rest`` whose producers and consumers all have a scope, until no more
    can be (each round may give the next nodes of a chain their last unplaced neighbour)."""
    nodes = graph.nodes
    producer: dict[int, int] = {}
    consumers: dict[int, list[int]] = {}
    for p in top:
        for t in nodes[p].outputs:
            producer[t] = p
        for t in nodes[p].inputs:
            consumers.setdefault(t, []).append(p)
    ends = set(graph.inputs) | set(graph.outputs)  # the outside: no scope
    waiting = [
        p
        for p in rest
        if not any(t in ends for t in nodes[p].inputs)
        and not any(t in ends for t in nodes[p].outputs)
    ]
    changed = True
    while waiting and changed:
        changed = False
        still = []
        for p in waiting:
            node = nodes[p]
            near = [producer[t] for t in node.inputs if t in producer]  # weights: no producer
            near += [c for t in node.outputs for c in consumers.get(t, ())]
            if not near or any(q not in prefix_of for q in near):
                still.append(p)
                continue
            common = _common_start([prefix_of[q].split("/") for q in near])
            if len(common) > 1:  # "" and at least one scope
                prefix_of[p] = placed[p] = "/".join(common)
                changed = True
        waiting = still


def _by_weights(
    graph: Graph,
    rest: list[int],
    known: set[str],
    prefix_of: dict[int, str],
    placed: dict[int, str],
) -> bool:
    """Place nodes of ``rest`` that read a matrix named by its module path, as torch names
    parameters (``gpt.h.0.attn.c_attn.weight``), under the scope of that module: below the
    deepest known scope the path starts with (``/gpt/h.0``), the rest of the path added
    (``/attn/c_attn``; a list index stays with its list: ``h.0``). Vectors are not trusted:
    a rewrite shares equal ones between layers (biases of zeros, norms of ones). Returns
    whether any node was placed."""
    nodes, tensors = graph.nodes, graph.tensors
    dotted = {s.lstrip("/").replace("/", "."): s for s in known if s.startswith("/")}
    found = False
    for p in rest:
        for t in nodes[p].inputs:
            tensor = tensors[t]
            if tensor.kind != "weight" or len(tensor.shape) < 2 or "." not in tensor.id:
                continue
            scope = _module_scope(tensor.id.rsplit(".", 1)[0], dotted)
            if scope is not None:
                prefix_of[p] = placed[p] = scope
                found = True
                break
    return found


def _module_scope(module: str, dotted: dict[str, str]) -> str | None:
    """The scope of a dotted module path: the deepest known scope it starts with, then its
    remaining names (None when it starts with none)."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        base = dotted.get(".".join(parts[:k]))
        if base is None:
            continue
        more: list[str] = []
        for part in parts[k:]:
            if part.isdigit() and more:
                more[-1] += "." + part
            else:
                more.append(part)
        return "/".join([base, *more])
    return None


def _value_scope(name: str) -> str | None:
    """``/a/b`` of a value named as torch's exporter names them (``/a/b/Op_output_0``,
    rewrites adding a suffix: ``/a/b/Cast_output_0_int32``), else None."""
    if not name.startswith("/"):
        return None
    prefix, _, last = name.rpartition("/")
    if not prefix or "_output_" not in last:
        return None
    return prefix


def _common_start(paths: list[list[str]]) -> list[str]:
    """The parts all ``paths`` start with."""
    first = paths[0]
    n = min(len(p) for p in paths)
    for k in range(n):
        if any(p[k] != first[k] for p in paths):
            return first[:k]
    return first[:n]
