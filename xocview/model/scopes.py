"""Groups derived from scoped node names such as ``/encoder/layer.0/attention/MatMul``.

Exporters (PyTorch, TensorFlow) name nodes by the module path that made them. One group per
scope turns a flat 1,000-node graph into a handful of collapsible blocks. The groups are
marked ``derived: "scope"`` in metadata so that nobody mistakes them for source content.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from xocview.model.graph import Graph, Node

__all__ = ["add_scope_groups", "scope_of"]


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
    number of groups added.
    """
    members: dict[tuple[str, ...], list[str]] = {}
    for node, scope in zip(graph.nodes, scopes, strict=True):
        if scope:
            members.setdefault(scope, []).append(node.id)
    # Count every scope's direct members: nodes plus child scopes.
    all_scopes: set[tuple[str, ...]] = set()
    for scope in members:
        for k in range(1, len(scope) + 1):
            all_scopes.add(scope[:k])
    sub: dict[tuple[str, ...], set[tuple[str, ...]]] = {}
    for scope in all_scopes:
        if len(scope) > 1:
            sub.setdefault(scope[:-1], set()).add(scope)

    def size(scope: tuple[str, ...]) -> int:
        return len(members.get(scope, ())) + len(sub.get(scope, ()))

    kept = {s for s in all_scopes if size(s) > 1}
    if not kept:
        return 0
    taken = {nd.id for nd in graph.nodes}
    group_id: dict[tuple[str, ...], str] = {}
    for scope in sorted(kept):
        gid = separator + separator.join(scope)
        while gid in taken:
            gid += "#scope"
        taken.add(gid)
        group_id[scope] = gid

    def home(scope: tuple[str, ...]) -> tuple[str, ...] | None:
        """The innermost kept scope at or above ``scope``."""
        for k in range(len(scope), 0, -1):
            if scope[:k] in kept:
                return scope[:k]
        return None

    children: dict[tuple[str, ...], list[str]] = {s: [] for s in kept}
    home_of = {scope: home(scope) for scope in members}
    for node, scope in zip(graph.nodes, scopes, strict=True):
        target = home_of[scope] if scope else None
        if target is not None:
            node.metadata["parent_id"] = group_id[target]
            children[target].append(node.id)
    groups: list[tuple[tuple[str, ...], Node]] = []
    for scope in sorted(kept):
        parent = home(scope[:-1])
        metadata: dict[str, object] = {
            "name": scope[-1],
            "scope": group_id[scope],
            "derived": "scope",
        }
        if parent is not None:
            metadata["parent_id"] = group_id[parent]
            children[parent].append(group_id[scope])
        groups.append((scope, Node(group_id[scope], "Scope", [], [], {}, metadata)))
    for scope, group in groups:
        group.metadata["children_ids"] = children[scope]
    graph.nodes.extend(group for _, group in groups)
    graph.invalidate()
    return len(groups)
