"""The shared graph model: Graph, Tensor, Node, derived indexes, hierarchy and validation."""

from xocview.model.dotted import expand_dotted, flatten_dotted
from xocview.model.dtypes import DTYPES, canonical_dtype
from xocview.model.graph import TENSOR_KINDS, Graph, Node, Tensor
from xocview.model.hierarchy import Hierarchy, VisibleGraph, visible_graph
from xocview.model.index import GraphIndex
from xocview.model.validate import Finding, validate

__all__ = [
    "DTYPES",
    "TENSOR_KINDS",
    "Finding",
    "Graph",
    "GraphIndex",
    "Hierarchy",
    "Node",
    "Tensor",
    "VisibleGraph",
    "canonical_dtype",
    "expand_dotted",
    "flatten_dotted",
    "validate",
    "visible_graph",
]
