"""The schedule of a run: leaves in topological order, their kernels, arguments and frees.

Built once before the timed passes so that the node loop does nothing but call kernels. A
node whose op has no kernel still gets a step (with the reason) so that a run stops exactly
there, keeping the timings of the nodes before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xocview.executor.attributes import kernel_kwargs
from xocview.executor.registry import Kernel, UnsupportedOp, lookup, lookup_fitting
from xocview.model import Graph, Hierarchy, Node

__all__ = ["CONTROL_FLOW", "Plan", "Step", "graph_opset", "make_plan", "unsupported_ops"]

# Ops whose bodies are subgraphs; their body nodes are not run as leaves of the outer graph.
CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})
_DEFAULT_DOMAINS = ("", "ai.onnx")
# Ops that give a new value on every call: never computed once and kept.
_NOT_FOLDED = frozenset(
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
class Step:
    """One leaf node: kernel, input tensor positions (None where omitted), outputs, frees."""

    node: int
    node_id: str
    op_type: str
    kernel: Kernel | None
    problem: str | None
    inputs: list[int | None]
    outputs: list[tuple[int, int]]  # (kernel output index, tensor position)
    num_outputs: int
    kwargs: dict[str, Any]
    frees: list[int] = field(default_factory=list)
    note: str | None = None  # something the run should tell the user about this node
    slots: list[int] = field(default_factory=list)  # where the runtime reads each input


@dataclass
class Plan:
    steps: list[Step]  # the timed steps, in order
    constants: list[int]  # tensors no step makes: inputs and weights
    outputs: list[int]  # tensors reported as the run's outputs
    folded: list[Step] = field(default_factory=list)  # run once before the timed passes


def graph_opset(graph: Graph) -> int | None:
    """The default-domain opset the graph was written for; None when it names none."""
    for entry in graph.metadata.get("opset_import", ()):
        if isinstance(entry, dict) and entry.get("domain") in _DEFAULT_DOMAINS:
            version = entry.get("version")
            if isinstance(version, int):
                return version
    return None


def _positions(present: list[int], omitted: Any) -> list[int | None]:
    """The node's argument list with None at the positions the file left empty."""
    if not omitted:
        return list(present)
    out: list[int | None] = []
    rest = iter(present)
    total = len(present) + len(omitted)
    skip = set(omitted)
    for k in range(total):
        out.append(None if k in skip else next(rest))
    return out


def _step(graph: Graph, pos: int, node: Node, opset: int | None) -> Step:
    ins = _positions(node.inputs, node.metadata.get("omitted_inputs"))
    outs = _positions(node.outputs, node.metadata.get("omitted_outputs"))
    kernel: Kernel | None = None
    problem: str | None = None
    note: str | None = None
    kwargs: dict[str, Any] = {}
    domain = node.metadata.get("domain", "")
    try:
        if node.op_type in CONTROL_FLOW:
            raise UnsupportedOp(f"control-flow op {node.op_type!r} is not run by the executor")
        if domain not in _DEFAULT_DOMAINS:
            raise UnsupportedOp(f"no kernel for op {node.op_type!r} of domain {domain!r}")
        if opset is None:
            kernel = lookup_fitting(node.op_type, len(ins), node.attributes)
            most = kernel.max_inputs
            if most is not None and len(ins) > most:  # MXNet's label inputs of output layers
                note = (
                    f"node {node.id!r} ({node.op_type}): reads {len(ins)} inputs, the op takes "
                    f"{most}; the rest are not used"
                )
                ins = ins[:most]
        else:
            kernel = lookup(node.op_type, opset)
        kwargs = kernel_kwargs(node)
        if kernel.wants_num_outputs:
            kwargs["num_outputs"] = len(outs)
    except (UnsupportedOp, ValueError) as e:
        kernel, problem = None, str(e)
    pairs = [(k, t) for k, t in enumerate(outs) if t is not None]
    return Step(
        pos, node.id, node.op_type, kernel, problem, ins, pairs, len(outs), kwargs, note=note
    )


def _under_control_flow(graph: Graph, hierarchy: Hierarchy) -> np.ndarray:
    """Nodes inside an If/Loop/Scan body (at any depth)."""
    n = len(graph.nodes)
    inside = np.zeros(n, dtype=bool)
    control = np.fromiter((nd.op_type in CONTROL_FLOW for nd in graph.nodes), bool, n)
    for i in np.argsort(hierarchy.depth, kind="stable"):
        p = hierarchy.parent[i]
        if p >= 0 and (control[p] or inside[p]):
            inside[i] = True
    return inside


def make_plan(graph: Graph, fold_constants: bool = True) -> Plan:
    """Steps for the graph's runnable leaves; frees after each tensor's last reader.

    With ``fold_constants``, nodes that read only weights (and what such nodes make) are set
    apart in ``Plan.folded``: the runtime computes them once before the timed passes, as any
    inference runtime does, and keeps their outputs like weights. A graph without inputs (its
    data made from weights, as LightNet's ``create`` ops do) has nothing to fold: all of it is
    the work to time.
    """
    hierarchy = Hierarchy(graph)
    skip = hierarchy.is_group.copy()
    skip |= _under_control_flow(graph, hierarchy)
    control = [i for i, nd in enumerate(graph.nodes) if nd.op_type in CONTROL_FLOW]
    skip[control] = False  # the control-flow node itself stops the run with its reason
    opset = graph_opset(graph)
    order = [int(i) for i in graph.index.topo_order if not skip[i]]
    steps = [_step(graph, i, graph.nodes[i], opset) for i in order]

    produced = np.zeros(len(graph.tensors), dtype=bool)
    for step in steps:
        for _, t in step.outputs:
            produced[t] = True
    constant = ~produced
    constant[[t for t in graph.inputs if 0 <= t < len(graph.tensors)]] = False
    folded: list[Step] = []
    if fold_constants and graph.inputs:
        folded, steps = _split_constant_steps(steps, constant)
    outputs = _run_outputs(graph, steps + folded, produced)
    _add_frees(steps, len(graph.tensors), outputs)
    constants = [t for t in range(len(graph.tensors)) if not produced[t]]
    return Plan(steps, constants, outputs, folded)


def _split_constant_steps(steps: list[Step], constant: np.ndarray) -> tuple[list[Step], list[Step]]:
    """(steps whose inputs are all constant, the rest); ``constant`` grows with their outputs."""
    folded: list[Step] = []
    rest: list[Step] = []
    for step in steps:
        ins = [t for t in step.inputs if t is not None]
        if step.kernel is not None and step.op_type not in _NOT_FOLDED and all(constant[ins]):
            folded.append(step)
            for _, t in step.outputs:
                constant[t] = True
        else:
            rest.append(step)
    return folded, rest


def _add_frees(steps: list[Step], num_tensors: int, outputs: list[int]) -> None:
    """Each tensor a step makes is dropped after its last reader (outputs are kept)."""
    made = np.zeros(num_tensors, dtype=bool)
    last_use = np.full(num_tensors, -1, dtype=np.int64)
    for s, step in enumerate(steps):
        for t in step.inputs:
            if t is not None:
                last_use[t] = s
        for _, t in step.outputs:
            made[t] = True
            last_use[t] = max(last_use[t], s)
    made[outputs] = False
    for dead in np.flatnonzero(made).tolist():
        steps[int(last_use[dead])].frees.append(dead)


def _run_outputs(graph: Graph, steps: list[Step], produced: np.ndarray) -> list[int]:
    """The graph's outputs; for a graph that declares none, the tensors nobody reads."""
    if graph.outputs:
        return [t for t in graph.outputs if 0 <= t < len(graph.tensors)]
    read = np.zeros(len(graph.tensors), dtype=bool)
    for step in steps:
        read[[t for t in step.inputs if t is not None]] = True
    return [int(t) for t in np.flatnonzero(produced & ~read)]


def unsupported_ops(graph: Graph) -> dict[str, int]:
    """Op types among the graph's runnable leaves that have no kernel, with their counts."""
    counts: dict[str, int] = {}
    plan = make_plan(graph)
    for step in plan.steps + plan.folded:
        if step.kernel is None:
            counts[step.op_type] = counts.get(step.op_type, 0) + 1
    return counts
