"""The undo machinery of edits: an Edit is a list of primitive steps, each with an exact inverse.

Steps address what they change by position (``("node", 3)``, ``("tensor", 7)``, ``("graph",
0)``), never by object, so an Edit applies to any graph equal to the one it was planned on.
A step replaces a whole field value (a new list or dict, never a change in place) or inserts or
removes one node or tensor. Removing a tensor at position p renumbers every tensor index above
p down by one (inserting renumbers up), so the inverse of a removal restores every index; a
planner removes a tensor only once nothing refers to it any more. None of this can fail: the
planners check everything before they build the steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from xocview.model.graph import Graph, Node, Tensor

__all__ = [
    "Edit",
    "InsertNode",
    "InsertTensor",
    "Ref",
    "RemoveNode",
    "RemoveTensor",
    "SetField",
    "SetTypes",
    "Step",
]

Ref = tuple[Literal["graph", "node", "tensor"], int]


def _target(graph: Graph, ref: Ref) -> Any:
    kind, pos = ref
    if kind == "node":
        return graph.nodes[pos]
    if kind == "tensor":
        return graph.tensors[pos]
    return graph


@dataclass(frozen=True)
class SetField:
    """Replace ``field`` of the node, tensor or graph at ``ref``: ``old`` -> ``new``."""

    ref: Ref
    field: str
    old: Any
    new: Any

    def do(self, graph: Graph) -> None:
        setattr(_target(graph, self.ref), self.field, self.new)

    def undo(self, graph: Graph) -> None:
        setattr(_target(graph, self.ref), self.field, self.old)


@dataclass(frozen=True)
class InsertNode:
    """Insert ``node`` at ``pos`` in ``graph.nodes`` (nodes are referred to by id, not index)."""

    pos: int
    node: Node

    def do(self, graph: Graph) -> None:
        graph.nodes.insert(self.pos, self.node)

    def undo(self, graph: Graph) -> None:
        del graph.nodes[self.pos]


@dataclass(frozen=True)
class RemoveNode:
    """Remove the node at ``pos``; ``node`` is kept to put it back."""

    pos: int
    node: Node

    def do(self, graph: Graph) -> None:
        del graph.nodes[self.pos]

    def undo(self, graph: Graph) -> None:
        graph.nodes.insert(self.pos, self.node)


@dataclass(frozen=True)
class InsertTensor:
    """Insert ``tensor`` at ``pos``; every tensor index >= pos moves up by one."""

    pos: int
    tensor: Tensor

    def do(self, graph: Graph) -> None:
        _renumber(graph, self.pos, +1)
        graph.tensors.insert(self.pos, self.tensor)

    def undo(self, graph: Graph) -> None:
        del graph.tensors[self.pos]
        _renumber(graph, self.pos + 1, -1)


@dataclass(frozen=True)
class RemoveTensor:
    """Remove the unreferenced tensor at ``pos``; every index above it moves down by one."""

    pos: int
    tensor: Tensor

    def do(self, graph: Graph) -> None:
        del graph.tensors[self.pos]
        _renumber(graph, self.pos + 1, -1)

    def undo(self, graph: Graph) -> None:
        _renumber(graph, self.pos, +1)
        graph.tensors.insert(self.pos, self.tensor)


# One tensor's type as an edit keeps it: dtype, shape and metadata (which holds the dim
# symbols and the unknown-rank note).
TensorType = tuple[str, list[int], dict[str, Any]]


@dataclass(frozen=True)
class SetTypes:
    """Replace the dtype, shape and metadata of many tensors at once: what re-inference after
    an edit changed (one step, not three SetFields per tensor for 20k tensors)."""

    positions: tuple[int, ...]
    old: tuple[TensorType, ...]
    new: tuple[TensorType, ...]

    def do(self, graph: Graph) -> None:
        _set_types(graph, self.positions, self.new)

    def undo(self, graph: Graph) -> None:
        _set_types(graph, self.positions, self.old)


def _set_types(graph: Graph, positions: tuple[int, ...], types: tuple[TensorType, ...]) -> None:
    tensors = graph.tensors
    for pos, (dtype, shape, metadata) in zip(positions, types, strict=True):
        t = tensors[pos]
        t.dtype, t.shape, t.metadata = dtype, shape, metadata


Step = SetField | SetTypes | InsertNode | RemoveNode | InsertTensor | RemoveTensor


def _renumber(graph: Graph, start: int, delta: int) -> None:
    """Add ``delta`` to every tensor index >= ``start`` (new lists, never a change in place)."""
    if start >= len(graph.tensors) + (1 if delta < 0 else 0):
        return  # nothing sits at or above start (removal at the end, append)

    def moved(refs: list[int]) -> list[int] | None:
        if not any(r >= start for r in refs):
            return None
        return [r + delta if r >= start else r for r in refs]

    for node in graph.nodes:
        for field in ("inputs", "outputs"):
            new = moved(getattr(node, field))
            if new is not None:
                setattr(node, field, new)
    for field in ("inputs", "outputs"):
        new = moved(getattr(graph, field))
        if new is not None:
            setattr(graph, field, new)


@dataclass(frozen=True)
class Edit:
    """One undoable change: ``apply`` runs the steps, ``revert`` runs their inverses backwards.

    Edit functions (``set_attribute``, ``delete_node``, ...) check the request, build the
    steps, apply them and return the Edit; an undo stack keeps it and calls ``revert(graph)``
    to undo and ``apply(graph)`` to redo. Both call ``graph.invalidate()``. Applying and
    reverting must follow the stack's order: each Edit expects the graph as it left it.
    """

    description: str
    steps: tuple[Step, ...]

    def apply(self, graph: Graph) -> None:
        for step in self.steps:
            step.do(graph)
        graph.invalidate()

    def revert(self, graph: Graph) -> None:
        for step in reversed(self.steps):
            step.undo(graph)
        graph.invalidate()

    def __str__(self) -> str:
        return self.description
