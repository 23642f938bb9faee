"""Find nodes and tensors by id, op type, attribute, shape, dtype or metadata (text or regex).

The index joins every field's text into one string, so that a query is one scan by the regex
engine in C rather than a Python loop over the fields (100k-node graphs stay interactive);
each candidate is then confirmed against its own field, so the answer is the field-by-field one.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

from xocview.errors import XocviewError
from xocview.model.analyses.opfacts import key_attributes
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

    ``where`` names the first field that matched ("id", "op type", "attribute kernel_shape",
    "shape", "dtype", "metadata kind_hint", ...), ``text`` is that field's value (for an
    attribute, its value as the inspector shows it, whether its name or its value matched).
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


# An attribute value longer than this is searched by its beginning only (a tensor's values).
_VALUE_CHARS = 1000
# Patterns that look past a field's own text (its start or end, or around it) do not scan the
# joined text faithfully; they take the field-by-field loop.
_LOOKS_AROUND = re.compile(r"\\[AZ]|\(\?[<=!]")


def _attribute_fields(name: str, value: Any) -> list[tuple[str, str, str]]:
    """(where, searched text, shown text) for an attribute's name and value.

    The value is shown as the inspector shows it: JSON for lists and numbers (``[3, 3]``), a
    string as it is, ``{n}`` or ``[n]`` for nested values; a list of sizes is also found in the
    ``3x3`` spelling that node boxes use.
    """
    where = f"attribute {name}"
    if isinstance(value, dict):
        shown = f"{{{len(value)}}}"
    elif isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
        shown = f"[{len(value)}]"
    else:
        shown = _text(value)[:_VALUE_CHARS]
    fields = [(where, name, shown), (where, shown, shown)]
    if isinstance(value, list) and 1 < len(value) <= 8 and all(type(v) is int for v in value):
        fields.append((where, "x".join(map(str, value)), shown))
    return fields


class _Fields:
    """The index's columns, one entry per field, filled item by item."""

    def __init__(self) -> None:
        self.owner: list[int] = []  # the item (position in ``items``) the field belongs to
        self.where: list[str] = []
        self.texts: list[str] = []
        self.shown: list[str] = []
        self.items: list[tuple[str, int]] = []  # ("node" | "tensor", position)
        self.first: list[int] = []  # per item: its first field
        # Attribute fields by (name, repr(value)): graphs repeat the same few values.
        self._memo: dict[tuple[str, str], list[tuple[str, str, str]]] = {}

    def item(self, kind: str, pos: int) -> int:
        self.items.append((kind, pos))
        self.first.append(len(self.texts))
        return len(self.items) - 1

    def add(self, owner: int, where: str, text: str, shown: str | None = None) -> None:
        self.owner.append(owner)
        self.where.append(where)
        self.texts.append(text)
        self.shown.append(text if shown is None else shown)

    def attributes(self, owner: int, attributes: dict[str, Any]) -> None:
        for name, value in attributes.items():
            key = (name, repr(value)) if not isinstance(value, dict) else None
            fields = self._memo.get(key) if key is not None else None
            if fields is None:
                fields = _attribute_fields(name, value)
                if key is not None and len(key[1]) < 200:
                    self._memo[key] = fields
            for where, text, shown in fields:
                self.add(owner, where, text, shown)

    def metadata(self, owner: int, metadata: dict[str, Any]) -> None:
        if metadata:
            for where, text in _metadata_fields(metadata):
                self.add(owner, where, text)


class SearchIndex:
    """Every searchable field of ``graph`` as text, gathered once so that a query is one pass.

    Build a new index after the graph changes; it keeps no link to later edits.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        f = _Fields()
        for i, node in enumerate(graph.nodes):
            k = f.item("node", i)
            f.add(k, "id", node.id)
            f.add(k, "op type", node.op_type)
            f.attributes(k, node.attributes)
            drawn = key_attributes(node) if node.attributes else ""
            if drawn:  # the attribute text on the box ("7x7 /2"), as the user reads it; after
                f.add(k, "box text", drawn)  # the attributes, which name what matched
            f.metadata(k, node.metadata)
        for t, tensor in enumerate(graph.tensors):
            k = f.item("tensor", t)
            f.add(k, "id", tensor.id)
            f.add(k, "shape", shape_text(tensor))
            f.add(k, "dtype", tensor.dtype)
            f.metadata(k, tensor.metadata)
        f.first.append(len(f.texts))
        self._f = f
        # One line per field; a field's own newlines stay (candidates are confirmed anyway).
        self._starts = list(accumulate((len(t) + 1 for t in f.texts), initial=0))
        self._joined = "\n".join(f.texts)

    def search(
        self, query: str, regex: bool = False, case_sensitive: bool = False, limit: int = MAX_HITS
    ) -> SearchResult:
        """Nodes and tensors with a field that ``query`` matches (case-insensitive by default).

        An empty query matches nothing. At most ``limit`` hits are kept, each item once, with
        the first field of it that matched. Raises SearchError for an invalid regular expression.
        """
        result = SearchResult()
        if not query:
            return result
        pattern = compile_query(query, regex, case_sensitive)
        f = self._f
        for k in self._matching_fields(pattern, query, regex):
            if len(result.hits) == limit:
                result.truncated = True
                break
            kind, pos = f.items[f.owner[k]]
            item = self.graph.nodes[pos] if kind == "node" else self.graph.tensors[pos]
            result.hits.append(Hit(kind, pos, item.id, f.where[k], f.shown[k]))
        return result

    def _matching_fields(self, pattern: re.Pattern[str], query: str, regex: bool) -> Iterator[int]:
        """The first matching field of each matching item, in index order."""
        match = pattern.search
        texts, owner, first = self._f.texts, self._f.owner, self._f.first
        n = len(texts)
        if regex and _LOOKS_AROUND.search(query):
            k = 0
            while k < n:
                if match(texts[k]):
                    yield k
                    k = first[owner[k] + 1]
                else:
                    k += 1
            return
        scan = re.compile(pattern.pattern, pattern.flags | re.MULTILINE).search
        joined, starts = self._joined, self._starts
        at = 0
        while (m := scan(joined, at)) is not None:
            k = bisect.bisect_right(starts, m.start()) - 1
            if k >= n:  # an empty match at the very end
                return
            if match(texts[k]):
                yield k
                k = first[owner[k] + 1]
            else:  # the match ran across fields: go on with the next field
                k += 1
            if k >= n:
                return
            at = starts[k]


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
