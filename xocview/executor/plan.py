"""The schedule of a run: leaves in topological order, their kernels, arguments and frees.

Built once before the timed passes so that the node loop does nothing but call kernels. A
node whose op has no kernel still gets a step (with the reason) so that a run stops exactly
there, keeping the timings of the nodes before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xocview.executor.activation_fusion import fuse_activations
from xocview.executor.attributes import kernel_kwargs
from xocview.executor.bodies import FRESH_OPS, Body, BodyIndex, order_with_captures
from xocview.executor.fusion import fuse_chains
from xocview.executor.registry import (
    SHARED_DOMAINS,
    Kernel,
    UnsupportedOp,
    lookup,
    lookup_fitting,
)
from xocview.model import Graph, Hierarchy, Node
from xocview.model.schema import schema_attributes

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
_DEFAULT_DOMAINS = ("", "ai.onnx")
# Domains whose ops have kernels, each versioned by its own opset import (onnxruntime's
# com.microsoft ops are kept apart in the table: see registry).
_KERNEL_DOMAINS = frozenset({*SHARED_DOMAINS, "com.microsoft"})


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
    bodies: list[Body] = field(default_factory=list)  # subgraphs its kernel runs (If, Loop...)
    captures: list[int] = field(default_factory=list)  # outer tensors those bodies read
    # nodes run inside this step (a BatchNormalization and a Relu after a Conv), and the
    # tensors between them that are never made (each has the step's output shape)
    fused_with: list[tuple[str, str]] = field(default_factory=list)
    hidden: list[int] = field(default_factory=list)
    direct: bool = False  # the first pass saw no narrow-typed input: call the kernel as it is


@dataclass
class Plan:
    steps: list[Step]  # the timed steps, in order
    constants: list[int]  # tensors no step makes: inputs and weights
    outputs: list[int]  # tensors reported as the run's outputs
    folded: list[Step] = field(default_factory=list)  # run once before the timed passes
    cyclic: list[int] = field(default_factory=list)  # leaves left out of the order: on cycles


def graph_opset(graph: Graph, domain: str = "") -> int | None:
    """The opset of ``domain`` (default: ONNX's own) the graph was written for; None when it
    names none."""
    return graph_opsets(graph).get("" if domain in _DEFAULT_DOMAINS else domain)


def graph_opsets(graph: Graph) -> dict[str, int]:
    """Domain ("" for ONNX's own) -> the opset version the graph imports."""
    out: dict[str, int] = {}
    for entry in graph.metadata.get("opset_import", ()):
        if isinstance(entry, dict):
            domain, version = entry.get("domain"), entry.get("version")
            if isinstance(domain, str) and isinstance(version, int):
                out.setdefault("" if domain in _DEFAULT_DOMAINS else domain, version)
    return out


def _positions(present: list[int], omitted: Any) -> list[int | None]:
    """The node's argument list with None at the positions the file left empty.

    ``omitted`` comes from the file's metadata: anything but non-negative integers in it is
    ignored, and positions past the end leave the remaining tensors in their order.
    """
    if not omitted or not isinstance(omitted, list):
        return list(present)
    skip = {k for k in omitted if isinstance(k, int) and not isinstance(k, bool) and k >= 0}
    out: list[int | None] = []
    rest = iter(present)
    remaining = len(present)
    for k in range(len(present) + len(skip)):
        if k in skip:
            out.append(None)
        elif remaining:
            out.append(next(rest))
            remaining -= 1
    out.extend(rest)
    return out


def _is_graph_value(value: Any) -> bool:
    """A graph-valued attribute as readers keep it: ``{"graph": name}`` (with the body's
    ``inputs`` and ``outputs``) or a list of them."""
    if isinstance(value, list):
        return bool(value) and all(_is_graph_value(v) for v in value)
    return isinstance(value, dict) and "graph" in value and set(value) <= _GRAPH_KEYS


_GRAPH_KEYS = frozenset({"graph", "inputs", "outputs"})


def graph_attributes(node: Node) -> dict[str, Any]:
    """The node's graph-valued attributes (schema ones and the source's others), by name."""
    out = {k: v for k, v in node.attributes.items() if _is_graph_value(v)}
    extra = node.metadata.get("attributes")
    if isinstance(extra, dict):
        out.update((k, v) for k, v in extra.items() if _is_graph_value(v) and k not in out)
    return out


def graph_attribute(node: Node) -> str | None:
    """The name of the node's first graph-valued attribute (a subgraph the op would run), in its
    schema attributes or among the source's others in metadata; None when it has none."""
    for name, value in node.attributes.items():
        if _is_graph_value(value):
            return name
    extra = node.metadata.get("attributes")
    if isinstance(extra, dict):
        for name, value in extra.items():
            if _is_graph_value(value):
                return name
    return None


def _check_arity(kernel: Kernel, given: int) -> None:
    """A node with fewer inputs than its op needs, or more than it takes, cannot run: said here
    rather than as a Python TypeError from the kernel call."""
    most = kernel.max_inputs
    if given < kernel.min_inputs or (most is not None and given > most):
        takes = (
            f"{kernel.min_inputs}"
            if most == kernel.min_inputs
            else (f"{kernel.min_inputs} to {most}" if most is not None else f"{kernel.min_inputs}+")
        )
        raise ValueError(f"op {kernel.op_type!r} takes {takes} inputs, the node has {given}")


def _check_present(kernel: Kernel, ins: list[int | None]) -> None:
    """An input the op requires may not be left out (an empty name, a dropped reference):
    said here rather than as the kernel's AttributeError on None."""
    if None not in ins:
        return
    optional = kernel.optional_inputs
    for k, t in enumerate(ins):
        if t is None and (not optional[k] if k < len(optional) else kernel.variadic):
            raise ValueError(
                f"input {k} of op {kernel.op_type!r} is required, but the node leaves it out"
            )


def _check_keywords(kernel: Kernel, kwargs: dict[str, Any]) -> None:
    """An attribute the op's kernel does not know (a damaged name), or one it cannot do
    without, is refused by name rather than as the kernel call's TypeError."""
    for name in kernel.required_attributes:
        if name not in kwargs:
            raise ValueError(f"op {kernel.op_type!r} needs attribute {name!r}; it is missing")
    keywords = kernel.keywords
    if keywords is None:
        return
    for name in kwargs:
        if name not in keywords and name not in kernel.positional_names:
            known = sorted({*keywords, *kernel.positional_names} - {"num_outputs"})
            raise ValueError(
                f"attribute {name!r} is not one op {kernel.op_type!r} takes; expected "
                + (", ".join(known) or "none")
            )


def _node_kwargs(node: Node, domain: str) -> dict[str, Any]:
    """The node's attributes for its kernel. The reader keeps the attributes of an op ONNX
    has no schema for (onnxruntime's com.microsoft ops, its SimplifiedLayerNormalization) in
    metadata, having nothing to check them against: they are its kernel's arguments all the
    same."""
    kwargs = kernel_kwargs(node)
    foreign = domain not in SHARED_DOMAINS or schema_attributes(node.op_type) is None
    extra = node.metadata.get("attributes") if foreign else None
    if isinstance(extra, dict):
        for name, value in extra.items():
            kwargs.setdefault(name, value)
    return kwargs


def _step(
    graph: Graph, pos: int, node: Node, opsets: dict[str, int], bodies: _Bodies | None
) -> Step:
    """The node's step; ``bodies`` (for a node that holds subgraphs) plans them into its
    keyword arguments."""
    ins = _positions(node.inputs, node.metadata.get("omitted_inputs"))
    outs = _positions(node.outputs, node.metadata.get("omitted_outputs"))
    kernel: Kernel | None = None
    problem: str | None = None
    note: str | None = None
    kwargs: dict[str, Any] = {}
    planned: list[Body] = []
    domain = node.metadata.get("domain", "")
    try:
        if domain not in _KERNEL_DOMAINS:
            raise UnsupportedOp(f"no kernel for op {node.op_type!r} of domain {domain!r}")
        opset = opsets.get("" if domain in _DEFAULT_DOMAINS else domain)
        if opset is None and domain not in _DEFAULT_DOMAINS and opsets:
            raise UnsupportedOp(
                f"op {node.op_type!r} of domain {domain!r}: the model imports no opset of it"
            )
        if opset is None:
            kernel = lookup_fitting(node.op_type, len(ins), node.attributes, domain)
            most = kernel.max_inputs
            if most is not None and len(ins) > most:  # MXNet's label inputs of output layers
                note = (
                    f"node {node.id!r} ({node.op_type}): reads {len(ins)} inputs, the op takes "
                    f"{most}; the rest are not used"
                )
                ins = ins[:most]
        else:
            kernel = lookup(node.op_type, opset, domain)
        _check_arity(kernel, len(ins))
        _check_present(kernel, ins)
        kwargs = _node_kwargs(node, domain)
        if bodies is not None:
            for name, value in bodies.plan(pos).items():
                kwargs[name] = value
                planned.extend(value if isinstance(value, list) else [value])
        _check_keywords(kernel, kwargs)
        if kernel.wants_num_outputs:
            kwargs["num_outputs"] = len(outs)
    except (UnsupportedOp, ValueError) as e:
        kernel, problem, planned = None, str(e), []
    pairs = [(k, t) for k, t in enumerate(outs) if t is not None]
    captures = sorted({t for b in planned for t in b.captures})
    return Step(
        pos,
        node.id,
        node.op_type,
        kernel,
        problem,
        ins,
        pairs,
        len(outs),
        kwargs,
        note=note,
        bodies=planned,
        captures=captures,
    )


class _Bodies:
    """Plans the bodies of subgraph holders, each body's steps made by ``_step`` in turn."""

    def __init__(
        self, graph: Graph, hierarchy: Hierarchy, holders: np.ndarray, opsets: dict[str, int]
    ) -> None:
        self.graph, self.holders, self.opsets = graph, holders, opsets
        self.index = BodyIndex(graph, hierarchy, holders)

    def step(self, i: int) -> Step:
        nested = self if self.holders[i] else None
        return _step(self.graph, i, self.graph.nodes[i], self.opsets, nested)

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
        steps = [_step(graph, i, graph.nodes[i], opsets, None) for i in order]

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
