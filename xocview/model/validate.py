"""The validator: every problem of a graph, each with its place, in one pass.

Loading stops only at what makes a model impossible to build; everything a model can hold but
the spec forbids (duplicate ids, cycles, a tensor produced twice, hierarchy mismatches,
attributes outside the ONNX schema) is found here and listed by ``xocview check``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from xocview.errors import shorten_message
from xocview.model.dtypes import DTYPES
from xocview.model.graph import TENSOR_KINDS
from xocview.model.hierarchy import MAX_GROUP_DEPTH, Hierarchy
from xocview.model.schema import schema_attributes

if TYPE_CHECKING:
    from collections.abc import Sequence

    from xocview.model.graph import Graph, Node, Tensor

__all__ = ["OUTPUT_WITHOUT_PRODUCER", "PRODUCED_TWICE", "Finding", "validate"]

# Rules that a format reader may find too (Finding.fault), so that check reports them once.
OUTPUT_WITHOUT_PRODUCER = "output-without-producer"  # about a tensor id
PRODUCED_TWICE = "input-or-weight-produced"  # about a tensor id: a node writes a given value

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Finding:
    """One problem: where it is (a JSON path into the XOC form) and what is wrong."""

    severity: Severity
    place: str
    message: str
    # The fault as a key (a rule and the id it is about) when one fault can be found by two
    # checkers at different places, e.g. a format reader and the model validation.
    fault: tuple[str, str] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        # Places and messages quote the file's ids and values, which may be megabytes long.
        object.__setattr__(self, "place", shorten_message(self.place))
        object.__setattr__(self, "message", shorten_message(self.message))

    def __str__(self) -> str:
        return f"{self.place}: {self.severity}: {self.message}"


def validate(graph: Graph) -> list[Finding]:
    """All findings for ``graph``, errors and warnings, in file order within each check."""
    out: list[Finding] = []
    _check_ids(graph, out)
    _check_tensors(graph, out)
    refs_ok = _check_references(graph, out)
    if refs_ok:
        _check_producers(graph, out)
        _check_cycles(graph, out)
        _check_kinds(graph, out)
    _check_hierarchy(graph, out)
    _check_nesting(graph, out)
    _check_schema(graph, out)
    return out


def _err(out: list[Finding], place: str, message: str) -> None:
    out.append(Finding("error", place, message))


def _warn(
    out: list[Finding], place: str, message: str, fault: tuple[str, str] | None = None
) -> None:
    out.append(Finding("warning", place, message, fault))


def _check_ids(graph: Graph, out: list[Finding]) -> None:
    groups: tuple[tuple[str, Sequence[Tensor | Node]], ...] = (
        ("tensors", graph.tensors),
        ("nodes", graph.nodes),
    )
    for what, items in groups:
        first: dict[str, int] = {}
        for i, item in enumerate(items):
            if not isinstance(item.id, str) or not item.id:
                _err(out, f"{what}[{i}].id", "id must be a non-empty string")
                continue
            j = first.setdefault(item.id, i)
            if j != i:
                _err(out, f"{what}[{i}].id", f"duplicate id '{item.id}' (first at {what}[{j}])")


def _check_tensors(graph: Graph, out: list[Finding]) -> None:
    for i, t in enumerate(graph.tensors):
        if t.kind not in TENSOR_KINDS:
            _err(
                out,
                f"tensors[{i}].name",
                f"unknown kind '{t.kind}'; expected one of " + ", ".join(TENSOR_KINDS),
            )
        if t.dtype not in DTYPES:
            _err(out, f"tensors[{i}].dtype", f"unknown dtype '{t.dtype}'")
        for k, d in enumerate(t.shape):
            if isinstance(d, bool) or not isinstance(d, int) or d < -1:
                _err(
                    out,
                    f"tensors[{i}].shape[{k}]",
                    f"dimension {d!r} is not an integer >= -1 (-1 marks an unknown size)",
                )


def _check_references(graph: Graph, out: list[Finding]) -> bool:
    n = len(graph.tensors)
    ok = True

    def check(place: str, refs: list[int]) -> None:
        nonlocal ok
        for k, r in enumerate(refs):
            if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < n:
                ok = False
                _err(out, f"{place}[{k}]", f"tensor index {r!r} out of range ({n} tensors)")

    for i, node in enumerate(graph.nodes):
        check(f"nodes[{i}].inputs", node.inputs)
        check(f"nodes[{i}].outputs", node.outputs)
    check("inputs", graph.inputs)
    check("outputs", graph.outputs)
    return ok


def _check_producers(graph: Graph, out: list[Finding]) -> None:
    """A tensor has one producer per body: the then and else branches of an If (and copies of
    a body) may each make the same name, as ONNX allows; a second maker in the same body, or
    in a body inside the first maker's, is an error."""
    index = graph.index
    pairs = dict.fromkeys(index.extra_producers)  # one finding per (tensor, node)
    if not pairs:
        return
    scope, enclosing, level = _body_scopes(graph)
    makers: dict[int, list[int]] = {}
    for t, node in pairs:
        makers.setdefault(t, [int(index.producer[t])]).append(node)
    for t, nodes in makers.items():
        scopes = [scope[i] for i in nodes]
        if len(set(scopes)) == len(nodes) and len({level[s] for s in scopes}) == 1:
            continue  # each in a body of its own, none around another: every copy of a body
        seen: dict[Scope, int] = {}
        for node in sorted(nodes, key=lambda i: (level[scope[i]], i)):  # outer bodies first
            clash = _first_in_chain(scope[node], enclosing, seen)
            seen.setdefault(scope[node], node)
            if clash is None:
                continue
            k = graph.nodes[node].outputs.index(t)
            where = "" if scope[clash] == scope[node] else " in a body around this one"
            _err(
                out,
                f"nodes[{node}].outputs[{k}]",
                f"tensor '{graph.tensors[t].id}' is already produced by nodes[{clash}] "
                f"'{graph.nodes[clash].id}'{where}; a tensor has one producer",
            )


Scope = tuple[int, str]
_TOP_SCOPE: Scope = (-1, "")


def _body_scopes(
    graph: Graph,
) -> tuple[list[Scope], dict[Scope, Scope], dict[Scope, int]]:
    """The body each node is in, as (holder position, body name) (the graph itself:
    ``(-1, "")``); a node in a plain group is in the group's body. And the body around each
    body, and how many bodies deep each is."""
    h = Hierarchy.of(graph)
    scope = [_TOP_SCOPE] * len(graph.nodes)
    enclosing: dict[Scope, Scope] = {}
    level = {_TOP_SCOPE: 0}
    for i in np.argsort(h.depth, kind="stable").tolist():
        p = int(h.parent[i])
        if p < 0:
            continue
        label = graph.nodes[i].metadata.get("subgraph")
        if isinstance(label, str):
            scope[i] = (p, label)
            if scope[i] not in enclosing:
                enclosing[scope[i]] = scope[p]
                level[scope[i]] = level[scope[p]] + 1
        else:
            scope[i] = scope[p]
    return scope, enclosing, level


def _first_in_chain(
    start: Scope, enclosing: dict[Scope, Scope], seen: dict[Scope, int]
) -> int | None:
    """The node ``seen`` for ``start`` or for a body around it, if any."""
    s: Scope | None = start
    while s is not None:
        if s in seen:
            return seen[s]
        s = enclosing.get(s)
    return None


def _check_cycles(graph: Graph, out: list[Finding]) -> None:
    index = graph.index
    if not index.has_cycle:
        return
    left = np.setdiff1d(np.arange(index.num_nodes), index.topo_order)
    keep = np.isin(index.edge_src, left) & np.isin(index.edge_dst, left)
    import networkx as nx  # a quarter second to import, for cyclic graphs alone

    g = nx.DiGraph()
    g.add_edges_from(zip(index.edge_src[keep].tolist(), index.edge_dst[keep].tolist(), strict=True))
    for comp in sorted(nx.strongly_connected_components(g), key=min):
        start = min(comp)
        if len(comp) == 1 and not g.has_edge(start, start):
            continue
        cycle = [u for u, _ in nx.find_cycle(g.subgraph(comp), source=start)]
        names = " -> ".join(f"'{graph.nodes[u].id}'" for u in [*cycle, cycle[0]])
        _err(out, f"nodes[{cycle[0]}]", f"cycle through {len(cycle)} nodes: {names}")


def _check_kinds(graph: Graph, out: list[Finding]) -> None:
    index = graph.index
    for k, t in enumerate(graph.inputs):
        if graph.tensors[t].kind != "input":
            _warn(
                out,
                f"inputs[{k}]",
                f"graph input '{graph.tensors[t].id}' has kind "
                f"'{graph.tensors[t].kind}'; expected kind 'input'",
            )
    for k, t in enumerate(graph.outputs):
        if index.producer[t] < 0 and graph.tensors[t].kind != "input":
            tid = graph.tensors[t].id
            out.append(
                Finding(
                    "warning",
                    f"outputs[{k}]",
                    f"graph output '{tid}' has no producer",
                    (OUTPUT_WITHOUT_PRODUCER, tid),
                )
            )
    for i, ten in enumerate(graph.tensors):
        if ten.kind == "activation" and index.producer[i] < 0 and len(index.consumers_of(i)):
            _warn(
                out,
                f"tensors[{i}]",
                f"activation '{ten.id}' is consumed but never produced (dangling input)",
            )
        elif ten.kind in ("input", "weight") and index.producer[i] >= 0:
            p = int(index.producer[i])
            _warn(
                out,
                f"tensors[{i}]",
                f"{ten.kind} '{ten.id}' is produced by nodes[{p}] "
                f"'{graph.nodes[p].id}'; expected kind 'activation' or 'output'",
                (PRODUCED_TWICE, ten.id),
            )


def _check_hierarchy(graph: Graph, out: list[Finding]) -> None:
    pos: dict[str, int] = {}
    for i, node in enumerate(graph.nodes):
        pos.setdefault(node.id, i)
    parent_of: dict[int, int] = {}
    for i, node in enumerate(graph.nodes):
        place = f"nodes[{i}].metadata"
        pid = node.metadata.get("parent_id")
        if pid is not None:
            if not isinstance(pid, str) or pid not in pos:
                _err(out, f"{place}.parent_id", f"parent {pid!r} is not a node id")
            elif pos[pid] == i:
                _err(out, f"{place}.parent_id", f"node '{node.id}' names itself as its parent")
            else:
                parent_of[i] = pos[pid]
                kids = graph.nodes[pos[pid]].metadata.get("children_ids")
                if not isinstance(kids, list) or node.id not in kids:
                    _err(
                        out,
                        f"{place}.parent_id",
                        f"parent '{pid}' (nodes[{pos[pid]}]) does "
                        f"not list '{node.id}' in its children_ids",
                    )
        kids = node.metadata.get("children_ids")
        if kids is None:
            continue
        if not isinstance(kids, list):
            _err(out, f"{place}.children_ids", "children_ids must be a list of node ids")
            continue
        for k, kid in enumerate(kids):
            if not isinstance(kid, str) or kid not in pos:
                _err(out, f"{place}.children_ids[{k}]", f"child {kid!r} is not a node id")
                continue
            if graph.nodes[pos[kid]].metadata.get("parent_id") != node.id:
                _err(
                    out,
                    f"{place}.children_ids[{k}]",
                    f"child '{kid}' (nodes[{pos[kid]}]) does not name '{node.id}' as its parent_id",
                )
    _check_hierarchy_cycles(graph, parent_of, out)


def _check_hierarchy_cycles(graph: Graph, parent_of: dict[int, int], out: list[Finding]) -> None:
    state: dict[int, int] = {}  # 1 = on the current walk, 2 = known to reach a root
    for start in parent_of:
        walk: list[int] = []
        u: int | None = start
        while u is not None and u not in state:
            state[u] = 1
            walk.append(u)
            u = parent_of.get(u)
        if u is not None and state[u] == 1:
            loop = walk[walk.index(u) :]
            names = " -> ".join(f"'{graph.nodes[v].id}'" for v in [*loop, loop[0]])
            _err(out, f"nodes[{u}].metadata.parent_id", f"hierarchy cycle: {names}")
        for v in walk:
            state[v] = 2


def _check_nesting(graph: Graph, out: list[Finding]) -> None:
    """One warning where groups nest deeper than the hierarchy shows (``MAX_GROUP_DEPTH``):
    at the first node it flattened."""
    h = Hierarchy.of(graph)
    if h.nesting <= MAX_GROUP_DEPTH:
        return
    i = h.first_flattened
    into = graph.nodes[int(h.parent[i])].id
    _warn(
        out,
        f"nodes[{i}].metadata.parent_id",
        f"groups nested {h.nesting:,} deep; levels past {MAX_GROUP_DEPTH} are shown "
        f"flattened into group '{into}'",
    )


def _check_schema(graph: Graph, out: list[Finding]) -> None:
    for i, node in enumerate(graph.nodes):
        if not node.attributes:
            continue
        allowed = schema_attributes(node.op_type)
        if allowed is None:
            continue
        for name in node.attributes:
            if name not in allowed:
                _err(
                    out,
                    f"nodes[{i}].attributes.{name}",
                    f"'{name}' is not an attribute of ONNX {node.op_type}; "
                    "non-schema attributes belong in metadata",
                )
