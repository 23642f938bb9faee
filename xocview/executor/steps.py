"""One node as a step of a run: its kernel for the graph's opset, its argument positions
(None where an optional input is omitted), its keyword arguments, and why it cannot run.

make_plan (plan.py) orders these steps, plans bodies, folds constants and fuses chains.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from xocview.executor.attributes import kernel_kwargs
from xocview.executor.bodies import Body
from xocview.executor.registry import (
    SHARED_DOMAINS,
    Kernel,
    UnsupportedOp,
    lookup,
    lookup_fitting,
)
from xocview.model import Graph, Node
from xocview.model.schema import schema_attributes

__all__ = [
    "BodyPlanner",
    "Step",
    "graph_attribute",
    "graph_attributes",
    "graph_opset",
    "graph_opsets",
    "node_step",
]

_DEFAULT_DOMAINS = ("", "ai.onnx")
# Domains whose ops have kernels, each versioned by its own opset import (onnxruntime's
# com.microsoft ops are kept apart in the table: see registry).
_KERNEL_DOMAINS = frozenset({*SHARED_DOMAINS, "com.microsoft"})


class BodyPlanner(Protocol):
    """Plans the subgraphs a holder node runs (plan.py's _Bodies)."""

    def plan(self, holder: int) -> dict[str, Body | list[Body]]: ...


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


def node_step(
    graph: Graph, pos: int, node: Node, opsets: dict[str, int], bodies: BodyPlanner | None
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
        if node.metadata.get("derived") == "weights":
            raise UnsupportedOp(
                f"{node.op_type!r} is a module of a weights file (its tensors, no operator); "
                "the file holds no graph to run: open a graph of the same model (ONNX, .pt2)"
            )
        if domain not in _KERNEL_DOMAINS:
            why = node.metadata.get("not_mapped")  # a reader says why the op has no ONNX form
            reason = f": {why}" if isinstance(why, str) and why else ""
            raise UnsupportedOp(f"no kernel for op {node.op_type!r} of domain {domain!r}{reason}")
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
