"""Where each node of the shared model goes in an ONNX file, and in which order.

The reader turns ONNX constructs into groups; writing turns them back. Each node has a role:

- ``leaf``: an operator, written as a NodeProto;
- ``holder``: an operator with graph-valued attributes (If, Loop, Scan), written as a NodeProto
  whose bodies are its children (each child names its body in metadata ``subgraph``);
- ``call``: a group standing for a call of a model-local function (metadata ``function``),
  written as a call node, its children becoming the function's body;
- ``group``: any other group (scopes, sections, the user's groups): not written, its members
  go where the group is.

Each written node lives in a *scope*: the main graph (``TOP``), one body of a holder
(``(holder, "then_branch")``) or a call's function body (``(call, "")``). Within a scope the
nodes are ordered topologically, a holder or call counting everything its bodies read. A
call's parameters are what its body reads from outside and makes for outside.
"""

from __future__ import annotations

import heapq
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.model import Graph, Hierarchy, Node

__all__ = ["TOP", "Nesting", "Scope", "graph_values"]

Scope = tuple[int, str]
TOP: Scope = (-1, "")


def graph_values(node: Node) -> dict[str, Any]:
    """The node's graph-valued attributes (``{"graph": name, ...}`` or a list of them), by
    name: its schema attributes and the source's others (in metadata ``attributes``)."""
    out: dict[str, Any] = {}
    extra = node.metadata.get("attributes")
    for table in (node.attributes, extra if isinstance(extra, dict) else {}):
        for name, value in table.items():
            if _is_graph(value) or (
                isinstance(value, list) and value and all(_is_graph(v) for v in value)
            ):
                out.setdefault(name, value)
    return out


def _is_graph(value: Any) -> bool:
    return isinstance(value, dict) and "graph" in value


def _role(node: Node, is_group: bool) -> str:
    if graph_values(node):
        return "holder"
    if not is_group:
        return "leaf"
    fn = node.metadata.get("function")
    return "call" if isinstance(fn, dict) and isinstance(fn.get("name"), str) else "group"


class Nesting:
    """Roles, scopes and the written order of a graph's nodes.

    Raises FormatError (naming the node) for a body node whose holder has several bodies but
    which does not say which it belongs to, and for nodes on a cycle.
    """

    def __init__(self, graph: Graph, file: str) -> None:
        self.graph, self.file = graph, file
        nodes = graph.nodes
        self.tensor_at = {t.id: k for k, t in reversed(list(enumerate(graph.tensors)))}
        h = Hierarchy(graph)
        self.parent = h.parent
        self.children: dict[int, list[int]] = {}
        for i, p in enumerate(h.parent.tolist()):
            if p >= 0:
                self.children.setdefault(p, []).append(i)
        self.role = [_role(node, bool(h.is_group[i])) for i, node in enumerate(nodes)]
        self.scope: list[Scope] = [TOP] * len(nodes)
        self.members: dict[Scope, list[int]] = {TOP: []}
        for i in np.argsort(h.depth, kind="stable").tolist():
            p = int(h.parent[i])
            if p >= 0:
                self.scope[i] = self._scope_under(p, i)
            if self.role[i] != "group":
                self.members.setdefault(self.scope[i], []).append(i)
        for positions in self.members.values():
            positions.sort()
        self._parameters: dict[int, tuple[list[int], list[int]]] = {}
        self._note_operators()

    def _note_operators(self) -> None:
        """What written operators make (outputs; a holder's bodies' parameters too), who reads
        each tensor, and each holder's bodies' outputs: what call parameters are found from."""
        self.made: set[int] = set()
        self._readers: dict[int, set[int]] = {}
        self._body_outputs: dict[int, set[int]] = {}
        for i, node in enumerate(self.graph.nodes):
            if self.role[i] not in ("leaf", "holder"):
                continue
            self.made.update(node.outputs)
            for t in node.inputs:
                self._readers.setdefault(t, set()).add(i)
            if self.role[i] == "holder":
                self.made.update(self.body_tensors(i, "inputs"))
                self._body_outputs[i] = set(self.body_tensors(i, "outputs"))

    def written(self, i: int) -> bool:
        return self.role[i] != "group"

    def _scope_under(self, p: int, i: int) -> Scope:
        role = self.role[p]
        if role == "call":
            return (p, "")
        if role != "holder":
            return self.scope[p]
        label = self.graph.nodes[i].metadata.get("subgraph")
        if isinstance(label, str):
            return (p, label)
        bodies = graph_values(self.graph.nodes[p])
        if len(bodies) == 1:
            ((name, value),) = bodies.items()
            if not isinstance(value, list):
                return (p, name)
        holder, node = self.graph.nodes[p], self.graph.nodes[i]
        raise FormatError(
            self.file,
            f"node '{node.id}'",
            f"it is inside {holder.op_type} '{holder.id}' but does not say which body",
            "metadata 'subgraph' naming the body (e.g. 'then_branch')",
        )

    # -- what a written node reads and writes, bodies included ----------------------------------

    def subtree(self, i: int) -> list[int]:
        """Every node below ``i`` (not ``i`` itself), parents before their children."""
        out: list[int] = []
        stack = list(reversed(self.children.get(i, [])))
        while stack:
            k = stack.pop()
            out.append(k)
            stack.extend(reversed(self.children.get(k, [])))
        return out

    def deep_io(self, i: int) -> tuple[list[int], set[int]]:
        """What a written node reads from its scope (in order of first use) and what it
        writes: a leaf's own inputs and outputs; a holder's and a call's together with
        everything their bodies read from outside and write."""
        node = self.graph.nodes[i]
        if self.role[i] == "leaf":
            return list(node.inputs), set(node.outputs)
        inside = [k for k in self.subtree(i) if self.written(k)]
        nodes = self.graph.nodes
        made: set[int] = set()
        for k in [i, *inside]:
            made.update(nodes[k].outputs)
        for k in [i, *inside]:
            if self.role[k] == "holder":
                made.update(self.body_tensors(k, "inputs"))
        reads: dict[int, None] = dict.fromkeys(node.inputs)
        for k in inside:
            for t in nodes[k].inputs:
                if t not in made:
                    reads.setdefault(t)
        return list(reads), made

    def body_tensors(self, holder: int, key: str) -> list[int]:
        """The formal ``inputs`` or ``outputs`` of all of a holder's bodies (tensor positions,
        those that exist)."""
        where = self.tensor_at
        out: list[int] = []
        for value in graph_values(self.graph.nodes[holder]).values():
            for v in value if isinstance(value, list) else [value]:
                ids = v.get(key) if isinstance(v, dict) else None
                for tid in ids if isinstance(ids, list) else []:
                    t = where.get(tid) if isinstance(tid, str) else None
                    if t is not None:
                        out.append(t)
        return out

    def call_parameters(self, i: int) -> tuple[list[int], list[int]]:
        """A call's parameters: what its body reads from outside (in order of first use) and
        what it makes that is read outside the call or is a graph or body output."""
        found = self._parameters.get(i)
        if found is None:
            found = self._parameters[i] = self._find_parameters(i)
        return found

    def _find_parameters(self, i: int) -> tuple[list[int], list[int]]:
        reads, _ = self.deep_io(i)
        inside = set(self.subtree(i))
        needed = set(self.graph.outputs)
        for h, outs in self._body_outputs.items():
            if h not in inside:
                needed |= outs
        outputs: dict[int, None] = {}
        nodes = self.graph.nodes
        for k in sorted(inside):
            if self.role[k] in ("leaf", "holder"):
                for t in nodes[k].outputs:
                    if t in needed or self._readers.get(t, set()) - inside:
                        outputs.setdefault(t)
        return reads, list(outputs)

    def ordered(self, scope: Scope) -> list[int]:
        """The written nodes of ``scope`` in a topological order that keeps the nodes' order
        where it can. Raises FormatError naming a node on a cycle."""
        members = self.members.get(scope, [])
        io = {m: self.deep_io(m) for m in members}
        producer: dict[int, int] = {}
        for m in members:
            for t in io[m][1]:
                producer.setdefault(t, m)
        after: dict[int, list[int]] = {}
        waiting = dict.fromkeys(members, 0)
        for m in members:
            for p in {producer.get(t, m) for t in io[m][0]} - {m}:
                after.setdefault(p, []).append(m)
                waiting[m] += 1
        ready = [m for m in members if waiting[m] == 0]
        heapq.heapify(ready)
        out: list[int] = []
        while ready:
            m = heapq.heappop(ready)
            out.append(m)
            for n in after.get(m, ()):
                waiting[n] -= 1
                if waiting[n] == 0:
                    heapq.heappush(ready, n)
        if len(out) < len(members):
            stuck = min(m for m in members if waiting[m] > 0)
            raise FormatError(
                self.file,
                f"node '{self.graph.nodes[stuck].id}'",
                "it is on a cycle: it reads, through other nodes, what it writes",
                "a graph without cycles (ONNX graphs are sorted topologically)",
            )
        return out
