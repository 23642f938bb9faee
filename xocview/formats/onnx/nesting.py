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
from bisect import bisect_left, bisect_right
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


def _role(node: Node, is_group: bool, graphs: dict[str, Any]) -> str:
    if graphs:
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
        h = Hierarchy.of(graph)
        self.parent = h.parent
        self.children: dict[int, list[int]] = {}
        for i, p in enumerate(h.parent.tolist()):
            if p >= 0:
                self.children.setdefault(p, []).append(i)
        # Each holder's graph-valued attributes, found once (every step below asks for them).
        self.graph_values: dict[int, dict[str, Any]] = {}
        self.role: list[str] = []
        for i, (node, is_group) in enumerate(zip(nodes, h.is_group.tolist(), strict=True)):
            graphs = graph_values(node)
            if graphs:
                self.graph_values[i] = graphs
            self.role.append(_role(node, is_group, graphs))
        self.scope: list[Scope] = [TOP] * len(nodes)
        self.members: dict[Scope, list[int]] = {TOP: []}
        self._by_depth = np.argsort(h.depth, kind="stable").tolist()
        for i in self._by_depth:
            p = int(h.parent[i])
            if p >= 0:
                self.scope[i] = self._scope_under(p, i)
            if self.role[i] != "group":
                self.members.setdefault(self.scope[i], []).append(i)
        for positions in self.members.values():
            positions.sort()
        self._parameters: dict[int, tuple[list[int], list[int]]] = {}
        self._first, self._last = self._intervals()
        self._at_first = [0] * len(nodes)  # the node of each preorder number
        for i, f in enumerate(self._first):
            self._at_first[f] = i
        self._note_operators()
        self._reads: dict[int, list[int]] | None = None  # deep reads, made on first use
        self._first_maker: dict[tuple[Scope, int], int | None] = {}

    def _note_operators(self) -> None:
        """What written operators make (outputs; a holder's bodies' parameters too), who reads
        each tensor, and each holder's bodies' outputs: what call parameters are found from."""
        self.made: set[int] = set()
        self._readers: dict[int, set[int]] = {}
        self._body_outputs: dict[int, set[int]] = {}
        # Tensor -> the written nodes that make it (a holder makes its bodies' inputs).
        self._producers: dict[int, list[int]] = {}
        for i, node in enumerate(self.graph.nodes):
            role = self.role[i]
            if role == "group":
                continue
            made = list(node.outputs)
            if role == "holder":
                made += self.body_tensors(i, "inputs")
                self._body_outputs[i] = set(self.body_tensors(i, "outputs"))
            for t in made:
                self._producers.setdefault(t, []).append(i)
            if role == "call":
                continue
            self.made.update(made)
            for t in node.inputs:
                self._readers.setdefault(t, set()).add(i)
        # Bodies may reuse names (both branches of an If, each copy of a body): a tensor can
        # have thousands of makers, of which a query wants those inside one subtree. Their
        # preorder numbers, sorted, find those by bisection.
        first = self._first
        self._maker_firsts = {t: sorted(first[p] for p in ps) for t, ps in self._producers.items()}

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
        bodies = self.graph_values.get(p, {})
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
            if self.role[k] == "holder":
                made.update(self.body_tensors(k, "inputs"))
        return self.deep_reads(i), made

    def deep_reads(self, i: int) -> list[int]:
        """The reads of ``deep_io``, for every node found at once bottom-up (a walk of each
        holder's subtree cost the subtree at every level of nesting)."""
        if self.role[i] == "leaf":
            return list(self.graph.nodes[i].inputs)
        if self._reads is None:
            self._reads = self._all_reads()
        return self._reads[i]

    def _all_reads(self) -> dict[int, list[int]]:
        """Per node with children: its own inputs (when written), then what its children
        read that nothing below it makes, in order of first use."""
        nodes, children = self.graph.nodes, self.children
        first, last = self._first, self._last
        reads: dict[int, list[int]] = {}
        for i in reversed(self._by_depth):  # children before their parents
            kids = children.get(i)
            if not kids:
                continue
            out: dict[int, None] = dict.fromkeys(nodes[i].inputs) if self.written(i) else {}
            lo, hi = first[i], last[i]
            for c in kids:
                for t in reads[c] if c in reads else nodes[c].inputs if self.written(c) else ():
                    if t not in out and not self._makers_between(t, lo, hi):
                        out[t] = None
            reads[i] = list(out)
        return reads

    def _intervals(self) -> tuple[list[int], list[int]]:
        """Preorder number of each node and the last number in its subtree: ``p`` is below
        ``i`` (or is ``i``) when ``first[i] <= first[p] <= last[i]``."""
        n = len(self.graph.nodes)
        first, last = [0] * n, [0] * n
        roots = [i for i in range(n) if self.parent[i] < 0]
        stack: list[tuple[int, bool]] = [(i, False) for i in reversed(roots)]
        count = 0
        while stack:
            i, done = stack.pop()
            if done:
                last[i] = count - 1
                continue
            first[i] = count
            count += 1
            stack.append((i, True))
            stack.extend((k, False) for k in reversed(self.children.get(i, [])))
        return first, last

    def _makers_between(self, t: int, lo: int, hi: int) -> list[int]:
        """The nodes that make ``t`` whose preorder number is in ``lo..hi`` (a subtree)."""
        firsts = self._maker_firsts.get(t)
        if not firsts:
            return []
        at = self._at_first
        return [at[f] for f in firsts[bisect_left(firsts, lo) : bisect_right(firsts, hi)]]

    def _member_of(self, scope: Scope, p: int) -> int | None:
        """The node of ``scope`` that ``p`` is or is inside, if any."""
        while p >= 0:
            if self.scope[p] == scope and self.written(p):
                return p
            p = int(self.parent[p])
        return None

    def body_tensors(self, holder: int, key: str) -> list[int]:
        """The formal ``inputs`` or ``outputs`` of all of a holder's bodies (tensor positions,
        those that exist)."""
        where = self.tensor_at
        out: list[int] = []
        for value in self.graph_values.get(holder, {}).values():
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
        reads = self.deep_reads(i)
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

    def _producer_in(self, scope: Scope, t: int, reader: int) -> int:
        """The first node of ``scope`` that makes ``t`` (itself or inside), else ``reader``."""
        key = (scope, t)
        if key in self._first_maker:
            found = self._first_maker[key]
        else:  # only makers inside the scope's holder can be in the scope
            h = scope[0]
            lo, hi = (self._first[h], self._last[h]) if h >= 0 else (0, len(self._first) - 1)
            members = [self._member_of(scope, p) for p in self._makers_between(t, lo, hi)]
            found = min((m for m in members if m is not None), default=None)
            self._first_maker[key] = found
        return reader if found is None else found

    def ordered(self, scope: Scope) -> list[int]:
        """The written nodes of ``scope`` in a topological order that keeps the nodes' order
        where it can. Raises FormatError naming a node on a cycle."""
        members = self.members.get(scope, [])
        if len(members) < 2:  # one node reading its own output is no cycle (as below)
            return list(members)
        after: dict[int, list[int]] = {}
        waiting = dict.fromkeys(members, 0)
        for m in members:
            for p in {self._producer_in(scope, t, m) for t in self.deep_reads(m)} - {m}:
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
