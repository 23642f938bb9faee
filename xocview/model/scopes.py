"""Groups derived from scoped node names such as ``/encoder/layer.0/attention/MatMul``.

Exporters (PyTorch, TensorFlow) name nodes by the module path that made them. One group per
scope turns a flat 1,000-node graph into a handful of collapsible blocks. The groups are
marked ``derived: "scope"`` in metadata so that nobody mistakes them for source content.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
    members: dict[str, list[int]] = {}
    for i, scope in enumerate(scopes):
        if scope:
            key = _path(scope, separator)
            if key in members:
                members[key].append(i)
            else:
                members[key] = [i]
    return _add_groups(graph, members, separator, None)


def add_named_scope_groups(
    graph: Graph,
    by_prefix: Mapping[str, list[int]],
    separator: str = "/",
    taken: set[str] | None = None,
) -> int:
    """``add_scope_groups`` for nodes grouped by the part of their names before the last
    separator (``"/a/b"`` for ``"/a/b/MatMul"``), each group's positions in node order.

    Each of these nodes goes to the scope of its name (``scope_of``). Loaders can group names
    as they read them, which spares building a scope path per node. ``taken``, when given, is
    the set of the graph's node ids (the loader has it at hand); the group ids are added to it.
    """
    double = separator + separator

    def key(prefix: str) -> str:
        if prefix[:1] == separator and prefix[-1:] != separator and double not in prefix:
            return prefix  # already "/a/b": the common case, no splitting
        return _path(_scope_of(prefix, separator), separator)  # "a//b/" -> "/a/b"

    # One scope may be spelled several ways ("/a/b", "a//b").
    members = _gathered((key(prefix), positions) for prefix, positions in by_prefix.items())
    return _add_groups(graph, members, separator, taken)


def _path(scope: tuple[str, ...], separator: str) -> str:
    """The key and group id of a scope: ``/a/b``; empty for the empty scope."""
    return separator + separator.join(scope) if scope else ""


def _gathered(pairs: Iterable[tuple[str | None, list[int]]]) -> dict[str, list[int]]:
    """Node positions gathered by key, empty keys dropped; where a key comes more than once,
    its lists are joined and sorted back into node order."""
    out: dict[str, list[int]] = {}
    joined: set[str] = set()
    for key, positions in pairs:
        if not key:
            continue
        if key in out:
            out[key] = out[key] + positions
            joined.add(key)
        else:
            out[key] = positions
    for key in joined:
        out[key].sort()
    return out


def _add_groups(
    graph: Graph, members: dict[str, list[int]], separator: str, taken: set[str] | None
) -> int:
    """The groups for ``members``: each scope's node positions (in node order) by its path.

    Works per scope rather than per node: nodes of one scope are taken together. Scopes are
    keyed by their path strings (``/a/b``), whose parent is one ``rpartition`` away and whose
    hash Python keeps, rather than by tuples, which hash anew on every lookup.
    """
    nodes = graph.nodes
    size, order = _sizes_and_order(members, separator)
    home: dict[str, str | None] = {}  # innermost kept scope at or above
    kept: list[str] = []
    for scope in order:
        if size[scope] > 1:
            home[scope] = scope
            kept.append(scope)
        else:
            above = scope.rpartition(separator)[0]
            home[scope] = home[above] if above else None
    if not kept:
        return 0
    group_id = _group_ids(kept, {nd.id for nd in nodes} if taken is None else taken)
    # Positions of each group's nodes, single-member scopes' nodes with their home's.
    held = _gathered((home[scope], positions) for scope, positions in members.items())
    children: dict[str, list[str]] = {}
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
        above, _, name = scope.rpartition(separator)
        metadata: dict[str, object] = {"name": name, "scope": gid, "derived": "scope"}
        parent = home[above] if above else None
        if parent is not None:
            metadata["parent_id"] = group_id[parent]
            children[parent].append(gid)
        metadata["children_ids"] = children[scope]
        groups.append(Node(gid, "Scope", [], [], {}, metadata))
    nodes.extend(groups)
    graph.invalidate()
    return len(groups)


def _sizes_and_order(
    members: dict[str, list[int]], separator: str
) -> tuple[dict[str, int], list[str]]:
    """Every scope and its enclosing ones with its count of direct members (nodes and scopes),
    and all of them in order of first mention, each after the scopes that enclose it."""
    size = {scope: len(positions) for scope, positions in members.items()}
    placed: set[str] = set()
    order: list[str] = []
    for scope in members:
        chain: list[str] = []
        while scope and scope not in placed:
            placed.add(scope)
            chain.append(scope)
            scope = scope.rpartition(separator)[0]
            if scope:
                size[scope] = size.get(scope, 0) + 1
        order.extend(reversed(chain))
    return size, order


def _group_ids(kept: list[str], taken: set[str]) -> dict[str, str]:
    """An id per group: the scope path, made unique against node ids and earlier groups."""
    group_id: dict[str, str] = {}
    for scope in kept:
        gid = scope
        while gid in taken:
            gid += "#scope"
        taken.add(gid)
        group_id[scope] = gid
    return group_id
