"""Facts about a graph for a one-screen summary: counts, op histogram, boundary tensors."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from xocview.model.analyses.parameters import graph_parameters
from xocview.model.graph import TENSOR_KINDS, Graph, Tensor
from xocview.model.hierarchy import Hierarchy

__all__ = ["GraphSummary", "format_shape", "parse_shape", "shape_text", "summarize"]


@dataclass(frozen=True)
class GraphSummary:
    id: str
    name: str
    num_nodes: int
    num_groups: int
    hierarchy_depth: int
    num_tensors: int
    tensor_kinds: dict[str, int]
    op_histogram: list[tuple[str, int]]
    inputs: list[Tensor]
    outputs: list[Tensor]
    parameters: int
    unsized_weights: int
    metadata_keys: list[str]


def format_shape(shape: list[int], rank_known: bool = True) -> str:
    """``1x3x224x224``; unknown dimensions as ``?``, a scalar as ``scalar``, no shape as ``?``."""
    if not rank_known:
        return "?"
    if not shape:
        return "scalar"
    return "x".join("?" if d < 0 else str(d) for d in shape)


def parse_shape(text: str) -> list[int]:
    """The shape a person typed: ``1,3,224,224``, ``1x3x224x224`` or ``[1, 3, 224, 224]``;
    ``?`` or -1 for an unknown size, empty or ``scalar`` for a scalar. Raises ValueError
    saying what was expected."""
    body = text.strip().strip("[]()").strip()
    if body in ("", "scalar"):
        return []
    parts = [p for p in re.split(r"[,x×\s]+", body) if p]
    try:
        return [-1 if p == "?" else int(p) for p in parts]
    except ValueError:
        raise ValueError(
            f"shape {text!r} is not sizes separated by commas or x, such as 1,3,224,224"
        ) from None


def shape_text(tensor: Tensor) -> str:
    """The tensor's shape for people, minding shapes that loaders could not learn."""
    return format_shape(tensor.shape, not tensor.metadata.get("rank_unknown"))


def summarize(graph: Graph) -> GraphSummary:
    """Counts over the leaves (groups are listed apart); parameters as ``graph_parameters``
    counts them (``unsized_weights``: parameter tensors whose shape nobody knows)."""
    h = Hierarchy.of(graph)
    leaves = [nd for nd, g in zip(graph.nodes, h.is_group.tolist(), strict=True) if not g]
    kinds = Counter(t.kind for t in graph.tensors)
    params, unsized = graph_parameters(graph)
    n_tensors = len(graph.tensors)
    return GraphSummary(
        id=graph.id,
        name=graph.name,
        num_nodes=len(graph.nodes),
        num_groups=int(h.is_group.sum()),
        hierarchy_depth=h.max_depth,
        num_tensors=n_tensors,
        tensor_kinds={k: kinds.get(k, 0) for k in TENSOR_KINDS},
        op_histogram=Counter(nd.op_type for nd in leaves).most_common(),
        inputs=[graph.tensors[i] for i in graph.inputs if 0 <= i < n_tensors],
        outputs=[graph.tensors[i] for i in graph.outputs if 0 <= i < n_tensors],
        parameters=params,
        unsized_weights=unsized,
        metadata_keys=list(graph.metadata),
    )
