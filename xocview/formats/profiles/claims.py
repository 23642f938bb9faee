"""Which nodes of a scope an op call of the profiler stands for, in the order the calls ran.

One call of a module runs its scope's nodes once. So the k-th ``aten::linear`` of a call of
``encoder.layer.0.attention`` is the k-th node of a matching kind among the nodes the scope's
own ops make: its direct leaves and the leaves of child scopes that no module call was matched
to (those have no calls of their own to claim them). A node made by the dynamo exporter names
the ATen op that made it, and all nodes of one such op (a Linear's MatMul and Add) go together;
otherwise the op's kinds come from ``aten_ops`` and the export's follow-up node (the bias Add
that reads the MatMul's output) joins the claim. Outside any module (a profile without module
ranges) the whole graph is one context whose claims start over when a kind runs out: the next
pass of the model began.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from xocview.formats.profiles.graph_scopes import GraphScopes

__all__ = ["Claims", "NodeUnit", "ScopeNodes"]


@dataclass(frozen=True)
class NodeUnit:
    """The nodes one op call becomes: the leaves of one FX node (dynamo) or one leaf."""

    leaves: tuple[int, ...]
    kinds: frozenset[str]
    aten: str = ""


@dataclass
class ScopeNodes:
    """The node units a scope's own op calls may claim, indexed by ATen op and op type."""

    units: list[NodeUnit]
    leaves: list[int]
    of_leaf: dict[int, int] = field(default_factory=dict)
    by_aten: dict[str, list[int]] = field(default_factory=dict)
    by_kind: dict[str, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, scopes: GraphScopes, key: str, matched: set[str]) -> ScopeNodes:
        """The units of scope ``key``, whose child scopes in ``matched`` have calls of their
        own; in the order the graph runs them."""
        leaves = sorted(_own_leaves(scopes, key, matched), key=scopes.rank.__getitem__)
        groups: dict[tuple[str, str | int], list[int]] = {}
        for leaf in leaves:
            origin = scopes.origin.get(leaf)
            tag: tuple[str, str | int] = ("fx", origin.fx_node) if origin else ("leaf", leaf)
            groups.setdefault(tag, []).append(leaf)
        out = cls([], leaves)
        nodes = scopes.graph.nodes
        for (kind_of_tag, _), members in groups.items():
            aten = scopes.origin[members[0]].aten if kind_of_tag == "fx" else ""
            unit = NodeUnit(tuple(members), frozenset(nodes[i].op_type for i in members), aten)
            k = len(out.units)
            out.units.append(unit)
            for leaf in members:
                out.of_leaf[leaf] = k
            if aten:
                out.by_aten.setdefault(aten, []).append(k)
            for kind in unit.kinds:
                out.by_kind.setdefault(kind, []).append(k)
        return out


def _own_leaves(scopes: GraphScopes, key: str, matched: set[str]) -> Iterable[int]:
    stack = [key]
    while stack:
        scope = scopes.scopes[stack.pop()]
        yield from scope.leaves
        stack.extend(c for c in scope.children if c not in matched)


class Claims:
    """The units one call (one context) has claimed; ``wrap`` starts a kind over when it runs
    out (a context that spans passes of the model)."""

    def __init__(self, nodes: ScopeNodes, scopes: GraphScopes, wrap: bool = False) -> None:
        self.nodes, self.scopes, self.wrap = nodes, scopes, wrap
        self.taken: set[int] = set()
        self.laps: Counter[str] = Counter()  # how often each kind started over

    def take(self, aten: str, primary: tuple[str, ...], then: tuple[str, ...]) -> list[int]:
        """The leaves the next call of ``aten`` stands for; empty when the scope has none."""
        k = self._first(aten, primary)
        if k is None and self.wrap and self._restart(aten, primary):
            k = self._first(aten, primary)
        if k is None:
            return []
        self.taken.add(k)
        unit = self.nodes.units[k]
        leaves = list(unit.leaves)
        if then and not unit.aten:
            follow = self._follower(unit, then)
            if follow is not None:
                self.taken.add(follow)
                leaves += self.nodes.units[follow].leaves
        return leaves

    def _candidates(self, aten: str, primary: tuple[str, ...]) -> list[list[int]]:
        """The units that name this ATen op (dynamo); without any, those of its kinds."""
        if aten in self.nodes.by_aten:
            return [self.nodes.by_aten[aten]]
        return [self.nodes.by_kind.get(kind, []) for kind in primary]

    def _first(self, aten: str, primary: tuple[str, ...]) -> int | None:
        for found in self._candidates(aten, primary):
            for k in found:
                if k not in self.taken:
                    return k
        return None

    def _restart(self, aten: str, primary: tuple[str, ...]) -> bool:
        had = {k for found in self._candidates(aten, primary) for k in found}
        if not had:
            return False
        self.taken -= had
        self.laps[aten] += 1
        return True

    def _follower(self, unit: NodeUnit, then: tuple[str, ...]) -> int | None:
        """The untaken unit of a ``then`` kind that reads an output of ``unit``."""
        index, graph = self.scopes.graph.index, self.scopes.graph
        for leaf in unit.leaves:
            for t in index.outputs_of(leaf).tolist():
                for c in index.consumers_of(t).tolist():
                    k = self.nodes.of_leaf.get(c)
                    if k is None or k in self.taken:
                        continue
                    if graph.nodes[c].op_type in then:
                        return k
        return None
