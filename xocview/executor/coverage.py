"""Before a run: every tensor it reads or returns has a source, so nothing comes back invented.

The runtime fills inputs and weights without values with seeded random data. A tensor that is
neither, and that no running node makes (the output of a node with a subgraph whose body the
plan leaves out, of a group whose leaves do not make it, or of nothing at all), must not be
filled that way: the run would return random numbers as if the graph had computed them.
"""

from __future__ import annotations

from xocview.errors import RunError
from xocview.executor.plan import Plan, subgraph_holders
from xocview.model import Graph, Hierarchy

__all__ = ["check_order", "check_sources"]


def _has_source(graph: Graph, t: int, inputs: set[int]) -> bool:
    tensor = graph.tensors[t]
    return t in inputs or tensor.kind in ("input", "weight") or tensor.has_data


def check_sources(graph: Graph, plan: Plan) -> None:
    """Refuse a plan that reads or returns a tensor no input, weight or running node gives.

    Raises RunError naming the first such tensor, who wanted it and why nothing makes it.
    """
    inputs = set(graph.inputs)
    lacking = [t for t in plan.constants if not _has_source(graph, t, inputs)]
    if not lacking:
        return
    t = lacking[0]
    tensor = graph.tensors[t]
    more = f" (and {len(lacking) - 1} more such tensors)" if len(lacking) > 1 else ""
    raise RunError(
        f"{_role(graph, plan, t)} {tensor.id!r} has no value: {_why(graph, t)}{more}; expected "
        "every tensor a run reads or returns to be a graph input, a weight, or made by a node "
        "that runs"
    )


def check_order(graph: Graph, plan: Plan) -> None:
    """Refuse a plan whose leaves include nodes on a cycle: no order runs them after their
    inputs, and leaving them out would return what they should have made as missing or random.

    Raises RunError naming a node on the cycle.
    """
    if plan.cyclic:
        node = graph.nodes[plan.cyclic[0]]
        more = f" (with {len(plan.cyclic) - 1} other nodes)" if len(plan.cyclic) > 1 else ""
        raise RunError(
            f"node {node.id!r} ({node.op_type}) cannot be ordered{more}: it is on a "
            "cycle (it reads, directly or through other nodes, a tensor it makes) or after one; "
            "expected a graph without cycles"
        )


def _role(graph: Graph, plan: Plan, t: int) -> str:
    """'graph output' or 'input of node ...': what needs the tensor."""
    if t in plan.outputs:
        return "graph output"
    for step in plan.folded + plan.steps:
        if t in step.inputs:
            return f"node {step.node_id!r} ({step.op_type}) reads tensor"
    return "tensor"


def _why(graph: Graph, t: int) -> str:
    """Why no running node makes tensor ``t``."""
    p = int(graph.index.producer[t])
    if p < 0:
        return "no node produces it"
    node = graph.nodes[p]
    hierarchy = Hierarchy.of(graph)
    holders = subgraph_holders(graph, hierarchy)
    outer = [a for a in hierarchy.ancestors(p) if holders[a]]
    if outer:
        holder = graph.nodes[outer[-1]]
        return (
            f"node {node.id!r} ({node.op_type}) that makes it is inside the subgraph of "
            f"{holder.id!r} ({holder.op_type}), which the executor does not run"
        )
    if hierarchy.is_group[p]:
        return f"it is an output of group {node.id!r} ({node.op_type}) that none of its leaves make"
    return f"node {node.id!r} ({node.op_type}) that makes it does not run"
