"""The schedule of a run: leaves in topological order, their kernels, arguments and frees.

Built once before the timed passes so that the node loop does nothing but call kernels. A
node whose op has no kernel still gets a step (with the reason) so that a run stops exactly
there, keeping the timings of the nodes before it. Each node's own step (kernel, argument
positions, keywords) is made by steps.node_step; here they are ordered, their bodies planned,
constant steps split off and chains fused.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xocview.executor.activation_fusion import fuse_activations
from xocview.executor.bodies import FRESH_OPS, Body, BodyIndex, order_with_captures
from xocview.executor.fusion import fuse_chains
from xocview.executor.steps import (
    Step,
    graph_attribute,
    graph_attributes,
    graph_opset,
    graph_opsets,
    node_step,
)
from xocview.model import Graph, Hierarchy

__all__ = [
    "CONTROL_FLOW",
    "Plan",
    "Step",
    "all_steps",
    "graph_attribute",
    "graph_attributes",
    "graph_opset",
    "graph_opsets",
    "make_plan",
    "subgraph_holders",
    "unsupported_ops",
]

# Ops whose bodies are subgraphs; their body nodes are not run as leaves of the outer graph.
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})


@dataclass
class Plan:
    steps: list[Step]  # the timed steps, in order
    constants: list[int]  # tensors no step makes: inputs and weights
    outputs: list[int]  # tensors reported as the run's outputs
    folded: list[Step] = field(default_factory=list)  # run once before the timed passes
    cyclic: list[int] = field(default_factory=list)  # leaves left out of the order: on cycles


class _Bodies:
    """Plans the bodies of subgraph holders, each body's steps made by ``node_step`` in turn."""

    def __init__(
        self, graph: Graph, hierarchy: Hierarchy, holders: np.ndarray, opsets: dict[str, int]
    ) -> None:
        self.graph, self.holders, self.opsets = graph, holders, opsets
        self.index = BodyIndex(graph, hierarchy, holders)

    def step(self, i: int) -> Step:
        nested = self if self.holders[i] else None
        return node_step(self.graph, i, self.graph.nodes[i], self.opsets, nested)

    def plan(self, holder: int) -> dict[str, Body | list[Body]]:
        attributes = graph_attributes(self.graph.nodes[holder])
        if not attributes:  # children marked as a body but no graph attribute names them
            raise ValueError("its subgraph has no graph attribute naming its inputs and outputs")
        bodies = self.index.bodies(holder, attributes, self.step)
        for body in _flat(bodies):
            _add_frees(body.steps, body.outputs)
        return bodies


def _flat(bodies: dict[str, Body | list[Body]]) -> list[Body]:
    return [b for v in bodies.values() for b in (v if isinstance(v, list) else [v])]


def subgraph_holders(graph: Graph, hierarchy: Hierarchy) -> np.ndarray:
    """Nodes that carry subgraphs (If/Loop/Scan, or any op with a graph-valued attribute, or
    whose children are marked as a ``subgraph`` body): none of them can run, and their bodies'
    nodes are not leaves of the outer graph."""
    n = len(graph.nodes)
    holds = np.fromiter(
        (nd.op_type in CONTROL_FLOW or graph_attribute(nd) is not None for nd in graph.nodes),
        bool,
        n,
    )
    in_body = np.fromiter(("subgraph" in nd.metadata for nd in graph.nodes), bool, n)
    parents = hierarchy.parent[in_body]
    holds[parents[parents >= 0]] = True
    return holds


def _under(hierarchy: Hierarchy, holders: np.ndarray) -> np.ndarray:
    """Nodes below one of ``holders`` (at any depth)."""
    inside = np.zeros(len(holders), dtype=bool)
    for i in np.argsort(hierarchy.depth, kind="stable"):
        p = hierarchy.parent[i]
        if p >= 0 and (holders[p] or inside[p]):
            inside[i] = True
    return inside


def make_plan(graph: Graph, fold_constants: bool = True, fuse: bool = True) -> Plan:
    """Steps for the graph's runnable leaves; frees after each tensor's last reader.

    With ``fuse``, chains such as Conv -> BatchNormalization -> Relu run as one step (fusion.py).

    With ``fold_constants``, nodes that read only weights (and what such nodes make) are set
    apart in ``Plan.folded``: the runtime computes them once before the timed passes, as any
    inference runtime does, and keeps their outputs like weights. A graph without inputs (its
    data made from weights, as LightNet's ``create`` ops do) has nothing to fold: all of it is
    the work to time.
    """
    hierarchy = Hierarchy.of(graph)
    holders = subgraph_holders(graph, hierarchy)
    inside = _under(hierarchy, holders)
    skip = hierarchy.is_group | inside
    skip[holders & ~inside] = False  # an outer node with a subgraph stops the run, saying why
    opsets = graph_opsets(graph)
    order = [int(i) for i in graph.index.topo_order if not skip[i]]
    ordered = np.zeros(len(graph.nodes), dtype=bool)
    ordered[graph.index.topo_order] = True
    cyclic = np.flatnonzero(~ordered & ~skip).tolist()
    if holders.any():
        bodies = _Bodies(graph, hierarchy, holders, opsets)
        steps = order_with_captures([bodies.step(i) for i in order])
    else:
        steps = [node_step(graph, i, graph.nodes[i], opsets, None) for i in order]

    produced = np.zeros(len(graph.tensors), dtype=bool)
    everything = all_steps(steps)
    for step in everything:
        for _, t in step.outputs:
            produced[t] = True
    for step in everything:
        for body in step.bodies:
            produced[body.inputs] = True  # bound by the holder on every call
    constant = ~produced
    constant[[t for t in graph.inputs if 0 <= t < len(graph.tensors)]] = False
    folded: list[Step] = []
    if fold_constants and graph.inputs:
        folded, steps = _split_constant_steps(steps, constant)
    outputs = _run_outputs(graph, steps + folded, produced)
    if fuse:
        steps = fuse_activations(steps, graph, constant, outputs)
        steps = fuse_chains(steps, graph, constant, outputs)
    _add_frees(steps, outputs)
    # Inputs and weights that the run reads or returns; what nothing reads is never made.
    used = np.zeros(len(graph.tensors), dtype=bool)
    used[[t for step in all_steps(steps + folded) for t in step.inputs if t is not None]] = True
    used[[t for step in all_steps(steps + folded) for b in step.bodies for t in b.outputs]] = True
    used[outputs] = True
    used[[t for t in graph.inputs if 0 <= t < len(graph.tensors)]] = True
    constants = np.flatnonzero(used & ~produced).tolist()
    return Plan(steps, constants, outputs, folded, cyclic)


def all_steps(steps: list[Step]) -> list[Step]:
    """``steps`` and the steps of their bodies, at any depth."""
    out: list[Step] = []
    todo = list(reversed(steps))
    while todo:
        step = todo.pop()
        out.append(step)
        for body in reversed(step.bodies):
            todo.extend(reversed(body.steps))
    return out


def fold_frees(plan: Plan) -> list[list[int]]:
    """Per folded step, the tensors no later step reads: freed once it has run, so that a
    weight read through a Cast and a Transpose (an LLM's bf16 [out, in] matrices) is held
    once, as the timed steps read it, instead of in all three forms."""
    later = {t for step in all_steps(plan.steps) for t in step.inputs if t is not None}
    later.update(plan.outputs)
    last: dict[int, int] = {}
    for k, step in enumerate(plan.folded):
        for inner in all_steps([step]):
            for t in inner.inputs:
                if t is not None:
                    last[t] = k
    frees: list[list[int]] = [[] for _ in plan.folded]
    for t, k in last.items():
        if t not in later:
            frees[k].append(t)
    return frees


def _split_constant_steps(steps: list[Step], constant: np.ndarray) -> tuple[list[Step], list[Step]]:
    """(steps whose inputs are all constant, the rest); ``constant`` grows with their outputs."""
    folded: list[Step] = []
    rest: list[Step] = []
    for step in steps:
        ins = [t for t in [*step.inputs, *step.captures] if t is not None]
        if step.kernel is not None and step.op_type not in FRESH_OPS and all(constant[ins]):
            folded.append(step)
            for _, t in step.outputs:
                constant[t] = True
        else:
            rest.append(step)
    return folded, rest


def _add_frees(steps: list[Step], outputs: list[int]) -> None:
    """Each tensor a step makes is dropped after its last reader (outputs are kept).

    Dicts, not arrays over every tensor of the graph: a body of two steps is planned in time
    of its steps, not of the graph (65k bodies of a 131k-node graph took 3.5 s)."""
    last_use: dict[int, int] = {}
    made: set[int] = set()
    for s, step in enumerate(steps):
        for t in step.inputs:
            if t is not None:
                last_use[t] = s
        for t in step.captures:
            last_use[t] = s
        for _, t in step.outputs:
            made.add(t)
            last_use[t] = s if last_use.get(t, -1) < s else last_use[t]
    made.difference_update(outputs)
    for dead in sorted(made):
        steps[last_use[dead]].frees.append(dead)


def _run_outputs(graph: Graph, steps: list[Step], produced: np.ndarray) -> list[int]:
    """The graph's outputs; for a graph that declares none, the tensors nobody reads."""
    if graph.outputs:
        return [t for t in graph.outputs if 0 <= t < len(graph.tensors)]
    read = np.zeros(len(graph.tensors), dtype=bool)
    for step in steps:
        read[[t for t in [*step.inputs, *step.captures] if t is not None]] = True
    return [int(t) for t in np.flatnonzero(produced & ~read)]


def unsupported_ops(graph: Graph) -> dict[str, int]:
    """Op types among the graph's runnable leaves that have no kernel, with their counts."""
    counts: dict[str, int] = {}
    plan = make_plan(graph)
    for step in plan.steps + plan.folded:
        if step.kernel is None:
            counts[step.op_type] = counts.get(step.op_type, 0) + 1
    return counts
