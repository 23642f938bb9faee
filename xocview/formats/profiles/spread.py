"""Time that a profile gives a whole group, put onto the group's leaves.

DESIGN.md makes a group's time the sum of its leaves' and never stores one on a group: the
canvas and the Profile pane derive it. So a time measured for a group (a module's op that no
single node of its scope stands for) is spread over the group's leaves in proportion to their
FLOPs (``opfacts.flops``, unknown dimensions taken as 1): a MatMul gets most of it, a Reshape
none. Where no leaf has FLOPs (a group of data movement), the leaves that are not Constant
nodes share it equally. The group's sum is then exactly the time measured.
"""

from __future__ import annotations

from collections.abc import Sequence

from xocview.model import Graph
from xocview.model.analyses import opfacts

__all__ = ["Spreader"]

_FREE = frozenset({"Constant", "Identity"})  # no work of their own: no share of an equal split


class Spreader:
    """Adds times onto leaves of one graph; FLOPs are looked up once per leaf."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._flops: dict[int, float] = {}

    def flops(self, leaf: int) -> float:
        if leaf not in self._flops:
            f = opfacts.flops(self.graph, leaf, unknown_dims=1)
            self._flops[leaf] = float(f) if f is not None and f > 0 else 0.0
        return self._flops[leaf]

    def shares(self, leaves: Sequence[int]) -> list[float]:
        """Each leaf's share (they add up to 1; empty for no leaves)."""
        if not leaves:
            return []
        weights = [self.flops(i) for i in leaves]
        total = sum(weights)
        if total <= 0:
            ops = [self.graph.nodes[i].op_type for i in leaves]
            weights = [0.0 if op in _FREE else 1.0 for op in ops]
            total = sum(weights)
            if total <= 0:
                weights, total = [1.0] * len(leaves), float(len(leaves))
        return [w / total for w in weights]

    def add(self, values: dict[str, float], leaves: Sequence[int], amount: float) -> None:
        """Add ``amount`` to ``values`` (by node id) over ``leaves``, by their shares."""
        for leaf, share in zip(leaves, self.shares(leaves), strict=True):
            if share > 0:
                node_id = self.graph.nodes[leaf].id
                values[node_id] = values.get(node_id, 0.0) + amount * share
