"""Graph, Tensor and Node: the in-memory XOC model that every format loads into."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from xocview.model.index import GraphIndex

__all__ = ["TENSOR_KINDS", "Graph", "Node", "Tensor"]

TENSOR_KINDS = ("input", "output", "weight", "activation")

LazyData = Callable[[], np.ndarray]

# The index is built from a graph and its module imports this one, never the reverse: it
# registers its class here (set_index_type) when xocview.model is imported.
_index_type: Callable[[Graph], GraphIndex] | None = None


def set_index_type(factory: Callable[[Graph], GraphIndex]) -> None:
    """Called once by xocview.model.index: what ``Graph.index`` builds."""
    global _index_type
    _index_type = factory


class Tensor:
    """A value in the graph; ``kind`` is the XOC JSON ``name`` (input/output/weight/activation).

    ``data`` holds a weight's values: an array, or a zero-argument callable that reads them on
    first use so that opening a large model does not read its weights. XOC JSON has no field for
    values, so they take no part in equality.
    """

    __slots__ = ("_data", "dtype", "id", "kind", "metadata", "shape")

    def __init__(
        self,
        id: str,
        kind: str,
        shape: list[int],
        dtype: str,
        metadata: dict[str, Any] | None = None,
        data: np.ndarray | LazyData | None = None,
    ) -> None:
        self.id = id
        self.kind = kind
        self.shape = shape
        self.dtype = dtype
        self.metadata = {} if metadata is None else metadata
        self._data = data

    @property
    def has_data(self) -> bool:
        return self._data is not None

    @property
    def data(self) -> np.ndarray | None:
        """The values, read (once) on first access when they were loaded lazily."""
        if self._data is not None and not isinstance(self._data, np.ndarray):
            self._data = self._data()
        return self._data

    @data.setter
    def data(self, value: np.ndarray | LazyData | None) -> None:
        self._data = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tensor):
            return NotImplemented
        return (
            self.id == other.id
            and self.kind == other.kind
            and list(self.shape) == list(other.shape)
            and self.dtype == other.dtype
            and self.metadata == other.metadata
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Tensor({self.id!r}, {self.kind}, {list(self.shape)}, {self.dtype})"


class Node:
    """An operator; ``op_type`` is the XOC JSON ``name``, inputs/outputs index Graph.tensors."""

    __slots__ = ("attributes", "id", "inputs", "metadata", "op_type", "outputs")

    def __init__(
        self,
        id: str,
        op_type: str,
        inputs: list[int],
        outputs: list[int],
        attributes: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.op_type = op_type
        self.inputs = inputs
        self.outputs = outputs
        self.attributes = {} if attributes is None else attributes
        self.metadata = {} if metadata is None else metadata

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Node):
            return NotImplemented
        return (
            self.id == other.id
            and self.op_type == other.op_type
            and list(self.inputs) == list(other.inputs)
            and list(self.outputs) == list(other.outputs)
            and self.attributes == other.attributes
            and self.metadata == other.metadata
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Node({self.id!r}, {self.op_type}, in={list(self.inputs)}, out={list(self.outputs)})"
        )


class Graph:
    """A whole computation graph.

    Derived lookups (ids, producers, consumers, topological order) live in ``index``, built on
    first use; code that changes the graph calls ``invalidate()`` so the next use rebuilds it.
    """

    __slots__ = ("_index", "id", "inputs", "metadata", "name", "nodes", "outputs", "tensors")

    def __init__(
        self,
        id: str,
        name: str,
        tensors: list[Tensor] | None = None,
        nodes: list[Node] | None = None,
        inputs: list[int] | None = None,
        outputs: list[int] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.tensors = [] if tensors is None else tensors
        self.nodes = [] if nodes is None else nodes
        self.inputs = [] if inputs is None else inputs
        self.outputs = [] if outputs is None else outputs
        self.metadata = {} if metadata is None else metadata
        self._index: GraphIndex | None = None

    @property
    def index(self) -> GraphIndex:
        """Derived arrays for the current contents (rebuilt after ``invalidate()``)."""
        if self._index is None:
            if _index_type is None:  # xocview.model imports the index module, which sets it
                raise RuntimeError("import xocview.model (not only xocview.model.graph)")
            self._index = _index_type(self)
        return self._index

    def invalidate(self) -> None:
        """Forget derived data; call after any change to nodes, tensors or their links."""
        self._index = None

    def snapshot(self) -> Graph:
        """A copy for readers in another thread (a run) while edits go on here.

        Edits replace field values and never change a list or dict in place, so the copy shares
        them; only the Graph, Node and Tensor objects are new. Weight values are shared too.
        """
        tensors = []
        for t in self.tensors:
            c = Tensor(t.id, t.kind, t.shape, t.dtype, t.metadata)
            c._data = t._data
            tensors.append(c)
        nodes = [
            Node(n.id, n.op_type, n.inputs, n.outputs, n.attributes, n.metadata) for n in self.nodes
        ]
        return Graph(
            self.id, self.name, tensors, nodes, list(self.inputs), list(self.outputs), self.metadata
        )

    def node(self, node_id: str) -> Node:
        """The node with this id; KeyError names the id when there is none."""
        return self.nodes[self.index.node_position(node_id)]

    def tensor(self, tensor_id: str) -> Tensor:
        """The tensor with this id; KeyError names the id when there is none."""
        return self.tensors[self.index.tensor_position(tensor_id)]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Graph):
            return NotImplemented
        return (
            self.id == other.id
            and self.name == other.name
            and self.metadata == other.metadata
            and list(self.inputs) == list(other.inputs)
            and list(self.outputs) == list(other.outputs)
            and self.tensors == other.tensors
            and self.nodes == other.nodes
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Graph({self.id!r}, {len(self.nodes)} nodes, {len(self.tensors)} tensors)"
