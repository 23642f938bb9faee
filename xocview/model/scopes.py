"""Groups derived from scoped node names such as ``/encoder/layer.0/attention/MatMul``.

Exporters (PyTorch, TensorFlow) name nodes by the module path that made them. One group per
scope turns a flat 1,000-node graph into a handful of collapsible blocks. The groups are
marked ``derived: "scope"`` in metadata so that nobody mistakes them for source content.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

from xocview.model.graph import Graph, Node
from xocview.model.hierarchy import MAX_GROUP_DEPTH

K = TypeVar("K", bound=Hashable)

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


def _gathered(pairs: Iterable[tuple[K | None, list[int]]]) -> dict[K, list[int]]:
    """Node positions gathered by key, keys None and "" dropped; where a key comes more than
    once, its lists are joined and sorted back into node order."""
    out: dict[K, list[int]] = {}
    joined: set[K] = set()
    for key, positions in pairs:
        if key is None or key == "":
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

    Works per scope rather than per node: nodes of one scope are taken together. The scopes
    form a tree of parts (``_ScopeTree``), so that a path of 50,000 parts costs 50,000 small
    entries rather than 50,000 prefixes of up to 50,000 parts each.
    """
    nodes = graph.nodes
    tree = _ScopeTree(members, separator)
    home, kept = tree.homes()
    if not kept:
        return 0
    paths = [tree.path(s) for s in kept]
    ids = _group_ids(paths, {nd.id for nd in nodes} if taken is None else taken)
    gid_of = dict(zip(kept, ids, strict=True))
    # Positions of each group's nodes, single-member scopes' nodes with their home's.
    held = _gathered(
        (home[s] if home[s] >= 0 else None, positions) for s, positions in tree.direct.items()
    )
    children: dict[int, list[str]] = {}
    for s in kept:
        gid = gid_of[s]
        kids: list[str] = []
        for i in held.get(s, ()):
            node = nodes[i]
            node.metadata["parent_id"] = gid
            kids.append(node.id)
        children[s] = kids
    groups: list[Node] = []
    for s in kept:
        gid = gid_of[s]
        metadata: dict[str, object] = {"name": tree.part[s], "scope": gid, "derived": "scope"}
        above = tree.up[s]
        parent = home[above] if above >= 0 else -1
        if parent >= 0:
            metadata["parent_id"] = gid_of[parent]
            children[parent].append(gid)
        metadata["children_ids"] = children[s]
        groups.append(Node(gid, "Scope", [], [], {}, metadata))
    nodes.extend(groups)
    graph.invalidate()
    return len(groups)


class _ScopeTree:
    """The scopes of ``members`` and all that enclose them, as a tree of parts.

    Scope ``s`` is named ``part[s]`` and sits in ``up[s]`` (-1: the top); ``size[s]`` counts
    its direct members (nodes and scopes) and ``direct[s]`` its nodes' positions. Scopes are
    numbered in order of first mention, each after the scopes that enclose it. Parts past
    ``MAX_GROUP_DEPTH`` are not read: a node scoped deeper goes to the scope at that depth, so
    that no derived group nests deeper than the hierarchy shows.
    """

    def __init__(self, members: dict[str, list[int]], separator: str) -> None:
        self.separator = separator
        self.part: list[str] = []
        self.up: list[int] = []
        self.size: list[int] = []
        self.direct: dict[int, list[int]] = {}
        made: dict[tuple[int, str], int] = {}
        joined: set[int] = set()
        for key, positions in members.items():
            s = -1
            # "/a/b/..." -> "", "a", "b", ...: at most MAX_GROUP_DEPTH parts, the rest unsplit.
            for part in key.split(separator, MAX_GROUP_DEPTH + 1)[1 : MAX_GROUP_DEPTH + 1]:
                child = made.get((s, part))
                if child is None:
                    child = made[(s, part)] = len(self.part)
                    self.part.append(part)
                    self.up.append(s)
                    self.size.append(0)
                    if s >= 0:
                        self.size[s] += 1
                s = child
            if s in self.direct:  # one scope spelled two ways, or cut at the depth limit
                self.direct[s] = self.direct[s] + positions
                joined.add(s)
            else:
                self.direct[s] = positions
            self.size[s] += len(positions)
        for s in joined:
            self.direct[s].sort()  # back in node order

    def homes(self) -> tuple[list[int], list[int]]:
        """Per scope, the innermost kept scope at or above it (-1: none), and the kept scopes:
        those of more than one member (a single member goes to the next kept scope up)."""
        home: list[int] = []
        kept: list[int] = []
        for s, above in enumerate(self.up):
            if self.size[s] > 1:
                home.append(s)
                kept.append(s)
            else:
                home.append(home[above] if above >= 0 else -1)
        return home, kept

    def path(self, s: int) -> str:
        """The key and group id of scope ``s``: ``/a/b``."""
        parts: list[str] = []
        while s >= 0:
            parts.append(self.part[s])
            s = self.up[s]
        return self.separator + self.separator.join(reversed(parts))


def _group_ids(paths: list[str], taken: set[str]) -> list[str]:
    """An id per group: its scope path, made unique against node ids and earlier groups."""
    out: list[str] = []
    for gid in paths:
        while gid in taken:
            gid += "#scope"
        taken.add(gid)
        out.append(gid)
    return out
