"""Subgraphs in a plan: the bodies of If, Loop, Scan (and any op with a graph attribute).

A body is planned like the outer graph (its leaves in order, each with its kernel and frees)
and handed to its holder's kernel as a keyword argument; the runtime binds it to a callable
that runs the body on given values. A body reads outer tensors by position (its *captures*):
the holder counts them as inputs, so the outer plan orders and keeps them for it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.model import Graph, Hierarchy

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = ["FRESH_OPS", "Body", "BodyIndex", "order_with_captures"]

# Ops that give a new value on every call, whatever their inputs.
FRESH_OPS = frozenset(
    {
        "RandomNormal",
        "RandomUniform",
        "RandomNormalLike",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
    }
)


@dataclass
class Body:
    """One graph attribute of one node, planned."""

    holder: str  # the node id, for messages
    attribute: str
    inputs: list[int]  # formal inputs, in order: the holder binds values to them
    outputs: list[int]  # formal outputs, in order
    steps: list[Step] = field(default_factory=list)
    captures: list[int] = field(default_factory=list)  # outer tensors the body reads
    made: list[int] = field(default_factory=list)  # outputs its steps make: cleared after a call
    # whether the first output (a Loop body's condition) can differ between iterations
    first_output_varies: bool = True
    # whether the first output is the condition input (input 1) given back, at most through
    # Identity steps: such a loop's iterations are known before its first one
    passes_condition: bool = False


class BodyIndex:
    """Which body each node belongs to: (holder position, attribute) of its nearest holder."""

    def __init__(self, graph: Graph, hierarchy: Hierarchy, holders: np.ndarray) -> None:
        self.graph, self.holders = graph, holders
        n = len(graph.nodes)
        self.owner = np.full(n, -1, dtype=np.int64)
        self.attribute: list[str | None] = [None] * n
        members: dict[tuple[int, str | None], list[int]] = {}
        runnable = ~hierarchy.is_group | holders
        for i in np.argsort(hierarchy.depth, kind="stable").tolist():
            p = int(hierarchy.parent[i])
            if p < 0:
                continue
            if holders[p]:
                self.owner[i] = p
                self.attribute[i] = graph.nodes[i].metadata.get("subgraph")
            else:
                self.owner[i] = self.owner[p]
                self.attribute[i] = self.attribute[p]
            if self.owner[i] >= 0 and runnable[i]:
                members.setdefault((int(self.owner[i]), self.attribute[i]), []).append(i)
        rank = np.empty(n, dtype=np.int64)
        rank[graph.index.topo_order] = np.arange(len(graph.index.topo_order))
        self.members = {k: sorted(v, key=lambda i: rank[i]) for k, v in members.items()}

    def bodies(
        self, holder: int, attributes: dict[str, Any], make_step: Callable[[int], Step]
    ) -> dict[str, Body | list[Body]]:
        """The planned bodies of node ``holder``, by attribute (a list for a GRAPHS one).

        Raises ValueError when a body does not name its inputs and outputs (a file saved
        before they were kept), naming the attribute.
        """
        out: dict[str, Body | list[Body]] = {}
        for name, value in attributes.items():
            if isinstance(value, list):
                out[name] = [
                    self._body(holder, f"{name}[{k}]", v, make_step) for k, v in enumerate(value)
                ]
            else:
                out[name] = self._body(holder, name, value, make_step)
        return out

    def _body(
        self, holder: int, name: str, value: dict[str, Any], make_step: Callable[[int], Step]
    ) -> Body:
        graph = self.graph
        node_id = graph.nodes[holder].id
        ins, outs = value.get("inputs"), value.get("outputs")
        if not isinstance(ins, list) or not isinstance(outs, list):
            raise ValueError(
                f"graph attribute {name!r} does not name its inputs and outputs; reopen the "
                "model from its ONNX file to run it"
            )
        index = graph.index
        missing = [t for t in [*ins, *outs] if not isinstance(t, str) or not index.has_tensor(t)]
        if missing:
            raise ValueError(f"graph attribute {name!r} names unknown tensor {missing[0]!r}")
        body = Body(
            node_id,
            name,
            [index.tensor_position(t) for t in ins],
            [index.tensor_position(t) for t in outs],
        )
        steps = [make_step(i) for i in self.members.get((holder, name), [])]
        body.steps = order_with_captures(steps)
        made: set[int] = {t for s in body.steps for _, t in s.outputs}
        read: set[int] = {t for s in body.steps for t in [*s.inputs, *s.captures] if t is not None}
        inner = made | set(body.inputs)
        body.captures = sorted((read | set(body.outputs)) - inner)
        body.made = [t for t in dict.fromkeys(body.outputs) if t in made]
        body.first_output_varies = _first_output_varies(body)
        body.passes_condition = _passes_condition(body)
        return body


def _passes_condition(body: Body) -> bool:
    """Whether the body's first output is its input 1 (a Loop's condition), directly or
    through a chain of Identity steps."""
    if not body.outputs or len(body.inputs) < 2:
        return False
    maker = {t: s for s in body.steps for _, t in s.outputs}
    t: int | None = body.outputs[0]
    seen: set[int] = set()
    while t is not None and t != body.inputs[1]:
        s = maker.get(t)
        if s is None or s.op_type != "Identity" or t in seen or not s.inputs:
            return False
        seen.add(t)
        t = s.inputs[0]
    return t is not None


def _first_output_varies(body: Body) -> bool:
    """Whether the body's first output may change from one call to the next: whether it is
    made from the loop's iteration number or carried values (inputs 0 and 2...), by an op
    that draws random values, or by a step with bodies of its own. A Loop condition that does
    not vary (the condition passed through, a constant, an outer tensor) never ends the loop
    once it was true.

    Steps are in an order where each comes after what it reads; a body whose steps could
    not be so ordered counts as varying (nothing is then refused on its account).
    """
    if not body.outputs or len(body.inputs) < 2:
        return True
    varying = {body.inputs[0], *body.inputs[2:]}
    maker = {t: k for k, s in enumerate(body.steps) for _, t in s.outputs}
    for k, s in enumerate(body.steps):
        reads = {t for t in [*s.inputs, *s.captures] if t is not None}
        if any(maker.get(t, -1) >= k for t in reads):
            return True  # read before it is made: a cycle, no order to reason about
        if s.op_type in FRESH_OPS or s.bodies or reads & varying:  # bodies: not looked into
            varying.update(t for _, t in s.outputs)
    return body.outputs[0] in varying


def order_with_captures(steps: list[Step]) -> list[Step]:
    """``steps`` (in topological order of their own inputs) reordered so that a step whose
    bodies read an outer tensor comes after the step that makes it; unchanged when no step
    captures anything, and otherwise as close to the given order as the captures allow."""
    if not any(s.captures for s in steps):
        return steps
    maker = {t: k for k, s in enumerate(steps) for _, t in s.outputs}
    users: list[list[int]] = [[] for _ in steps]
    waiting = [0] * len(steps)
    for k, s in enumerate(steps):
        for t in {t for t in [*s.inputs, *s.captures] if t is not None}:
            m = maker.get(t)
            if m is not None and m != k:
                users[m].append(k)
                waiting[k] += 1
    ready = [k for k, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for u in users[k]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    seen = set(order)
    order.extend(k for k in range(len(steps)) if k not in seen)  # on a cycle: as given
    return [steps[k] for k in order]
