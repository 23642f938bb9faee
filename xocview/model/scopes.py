"""Groups derived from scoped node names such as ``/encoder/layer.0/attention/MatMul``.

Exporters (PyTorch, TensorFlow) name nodes by the module path that made them. One group per
scope turns a flat 1,000-node graph into a handful of collapsible blocks. The groups are
marked ``derived: "scope"`` in metadata so that nobody mistakes them for source content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

from xocview.model.graph import Graph, Node

__all__ = ["add_named_scope_groups", "add_scope_groups", "scope_of"]


def scope_of(name: str, separator: str = "/") -> tuple[str, ...]:
    """The scope path of a node name: every part but the last, empty parts dropped."""
    return _scope_of(name.rpartition(separator)[0], separator)


@lru_cache(maxsize=65536)
def _scope_of(prefix: str, separator: str) -> tuple[str, ...]:
    return tuple(p for p in prefix.split(separator) if p)


def add_scope_groups(
    graph: Graph, scopes: Sequence[tuple[str, ...] | None], separator: str = "/"
) -> int:
    """Add a group node per scope and parent the nodes to their innermost scope.

    ``scopes[i]`` is node i's scope path (None for nodes that already have a parent or should
    stay where they are). A scope with a single member is skipped, its member going to the
    next scope up, so that long single-child chains do not nest boxes in boxes. Returns the
    number of groups added. Raises ValueError when ``scopes`` and the nodes differ in length.
    """
    if len(scopes) != len(graph.nodes):
        raise ValueError(f"{len(scopes)} scopes for {len(graph.nodes)} nodes")
    return _add_groups(graph, _members(scopes), separator)


def add_named_scope_groups(
    graph: Graph, by_prefix: Mapping[str, list[int]], separator: str = "/"
) -> int:
    """``add_scope_groups`` for nodes grouped by the part of their names before the last
    separator (``"/a/b"`` for ``"/a/b/MatMul"``), each group's positions in node order.

    Each of these nodes goes to the scope of its name (``scope_of``). Loaders can group names
    as they read them, which spares building a scope path per node.
    """
    members: dict[tuple[str, ...], list[int]] = {}
    merged: set[tuple[str, ...]] = set()  # scopes spelled several ways ("/a/b", "a//b")
    for prefix, positions in by_prefix.items():
        scope = _scope_of(prefix, separator)
        if not scope:
            continue
        if scope in members:
            members[scope] = members[scope] + positions
            merged.add(scope)
        else:
            members[scope] = positions
    for scope in merged:
        members[scope].sort()  # node order
    return _add_groups(graph, members, separator)


def _add_groups(graph: Graph, members: dict[tuple[str, ...], list[int]], separator: str) -> int:
    """The groups for ``members``: each scope's node positions, in node order.

    Works per scope rather than per node: nodes of one scope are taken together.
    """
    nodes = graph.nodes
    size = _sizes(members)
    ordered = sorted(size)  # a scope comes before the scopes inside it
    home: dict[tuple[str, ...], tuple[str, ...] | None] = {}  # innermost kept scope at or above
    kept: list[tuple[str, ...]] = []
    for scope in ordered:
        if size[scope] > 1:
            home[scope] = scope
            kept.append(scope)
        else:
            home[scope] = home[scope[:-1]] if len(scope) > 1 else None
    if not kept:
        return 0
    group_id = _group_ids(kept, {nd.id for nd in nodes}, separator)
    held: dict[tuple[str, ...], list[int]] = {}  # positions of each group's nodes
    merged: set[tuple[str, ...]] = set()  # groups also holding single-member scopes' nodes
    for scope, positions in members.items():
        target = home[scope]
        if target is None:
            continue
        if target in held:
            held[target] = held[target] + positions
            merged.add(target)
        else:
            held[target] = positions
    for target in merged:
        held[target].sort()  # node order
    children: dict[tuple[str, ...], list[str]] = {}
    for scope in kept:
        gid = group_id[scope]
        ids: list[str] = []
        for i in held.get(scope, ()):
            node = nodes[i]
            node.metadata["parent_id"] = gid
            ids.append(node.id)
        children[scope] = ids
    groups: list[Node] = []
    for scope in kept:
        gid = group_id[scope]
        metadata: dict[str, object] = {"name": scope[-1], "scope": gid, "derived": "scope"}
        parent = home[scope[:-1]] if len(scope) > 1 else None
        if parent is not None:
            metadata["parent_id"] = group_id[parent]
            children[parent].append(gid)
        metadata["children_ids"] = children[scope]
        groups.append(Node(gid, "Scope", [], [], {}, metadata))
    nodes.extend(groups)
    graph.invalidate()
    return len(groups)


def _members(scopes: Sequence[tuple[str, ...] | None]) -> dict[tuple[str, ...], list[int]]:
    """The positions of each scope's nodes, in node order."""
    members: dict[tuple[str, ...], list[int]] = {}
    for i, scope in enumerate(scopes):
        if scope:
            if scope in members:
                members[scope].append(i)
            else:
                members[scope] = [i]
    return members


def _sizes(members: dict[tuple[str, ...], list[int]]) -> dict[tuple[str, ...], int]:
    """Every scope and its enclosing ones, with its count of direct members (nodes and scopes)."""
    size = {scope: len(positions) for scope, positions in members.items()}
    counted: set[tuple[str, ...]] = set()  # scopes already counted in their parent
    for scope in members:
        while len(scope) > 1 and scope not in counted:
            counted.add(scope)
            scope = scope[:-1]
            size[scope] = size.get(scope, 0) + 1
    return size


def _group_ids(
    kept: list[tuple[str, ...]], taken: set[str], separator: str
) -> dict[tuple[str, ...], str]:
    """An id per group: the scope path, made unique against node ids and earlier groups."""
    group_id: dict[tuple[str, ...], str] = {}
    for scope in kept:
        gid = separator + separator.join(scope)
        while gid in taken:
            gid += "#scope"
        taken.add(gid)
        group_id[scope] = gid
    return group_id
