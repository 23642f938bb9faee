"""Find nodes and tensors by id, op type, shape, dtype or metadata value (plain text or regex)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from xocview.errors import XocviewError
from xocview.model.analyses.summary import shape_text
from xocview.model.dotted import flatten_dotted
from xocview.model.graph import Graph

__all__ = [
    "MAX_HITS",
    "Hit",
    "SearchError",
    "SearchIndex",
    "SearchResult",
    "compile_query",
    "search",
]

MAX_HITS = 1000

# Hierarchy plumbing names other nodes: matching it would list every child of a group
# (and a group for each of its children's names), which is noise, not a fact about the node.
_SKIPPED_KEYS = frozenset({"parent_id", "children_ids", "level"})


class SearchError(XocviewError):
    """The query is not a valid regular expression; the message says where and how to fix it."""


@dataclass(frozen=True)
class Hit:
    """One matching node or tensor: ``kind`` is "node" or "tensor", ``position`` its index.

    ``where`` names the first field that matched ("id", "op type", "shape", "dtype",
    "metadata kind_hint", ...), ``text`` is that field's value.
    """

    kind: str
    position: int
    id: str
    where: str
    text: str


@dataclass
class SearchResult:
    """Hits in graph order (nodes, then tensors); ``truncated`` when more than the cap matched."""

    hits: list[Hit] = field(default_factory=list)
    truncated: bool = False


def compile_query(query: str, regex: bool = False, case_sensitive: bool = False) -> re.Pattern[str]:
    """The pattern for ``query``: a literal substring unless ``regex``.

    Raises SearchError when ``regex`` is set and ``query`` does not compile.
    """
    flags = 0 if case_sensitive else re.IGNORECASE
    if not regex:
        return re.compile(re.escape(query), flags)
    try:
        return re.compile(query, flags)
    except re.error as e:
        raise SearchError(
            f"regex {query!r}: {e}; expected a Python regular expression "
            "(or untick Regex to search for the plain text)"
        ) from e


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _metadata_fields(metadata: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for key, value in flatten_dotted(metadata).items():
        if key not in _SKIPPED_KEYS:
            yield f"metadata {key}", _text(value)


def _node_fields(graph: Graph, i: int) -> Iterator[tuple[str, str]]:
    node = graph.nodes[i]
    yield "id", node.id
    yield "op type", node.op_type
    yield from _metadata_fields(node.metadata)


def _tensor_fields(graph: Graph, t: int) -> Iterator[tuple[str, str]]:
    tensor = graph.tensors[t]
    yield "id", tensor.id
    yield "shape", shape_text(tensor)
    yield "dtype", tensor.dtype
    yield from _metadata_fields(tensor.metadata)


class SearchIndex:
    """Every searchable field of ``graph`` as text, gathered once so that a query is one pass.

    Build a new index after the graph changes; it keeps no link to later edits.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        rows: list[tuple[str, int, str, str]] = []
        for i in range(len(graph.nodes)):
            rows += [("node", i, where, text) for where, text in _node_fields(graph, i)]
        for t in range(len(graph.tensors)):
            rows += [("tensor", t, where, text) for where, text in _tensor_fields(graph, t)]
        self._rows = rows

    def search(
        self, query: str, regex: bool = False, case_sensitive: bool = False, limit: int = MAX_HITS
    ) -> SearchResult:
        """Nodes and tensors with a field that ``query`` matches (case-insensitive by default).

        An empty query matches nothing. At most ``limit`` hits are kept, each item once.
        Raises SearchError for an invalid regular expression.
        """
        result = SearchResult()
        if not query:
            return result
        match = compile_query(query, regex, case_sensitive).search
        last: tuple[str, int] = ("", -1)
        for kind, pos, where, text in self._rows:
            if (kind, pos) == last or not match(text):
                continue
            if len(result.hits) == limit:
                result.truncated = True
                break
            last = (kind, pos)
            item = self.graph.nodes[pos] if kind == "node" else self.graph.tensors[pos]
            result.hits.append(Hit(kind, pos, item.id, where, text))
        return result


def search(
    graph: Graph,
    query: str,
    regex: bool = False,
    case_sensitive: bool = False,
    limit: int = MAX_HITS,
) -> SearchResult:
    """One query without keeping an index (see SearchIndex.search).

    Raises SearchError for an invalid regular expression.
    """
    return SearchIndex(graph).search(query, regex, case_sensitive, limit)
