"""What a comparison found: findings, per-node statuses, the maps, and the JSON report.

JSON report (``GraphDiff.to_json``; ``"format": "xocview-diff"``, ``"version": 1``)::

    {
      "format": "xocview-diff", "version": 1,
      "equal": false,                       # no findings
      "old": {"graph": id, "name": name, "nodes": n, "tensors": n},   # the CLI adds "file"
      "new": {...},
      "counts": {kind: n, ...},             # every kind of KINDS, zeros included
      "matched": {"nodes": n, "same_id": n, "tensors": n},
      "findings": [
        {"kind": "node changed",            # one of KINDS
         "subject": "LRN",                  # op type; tensor kind for tensors; graph name
         "old": "LRN_3", "new": "LRN_3",    # ids (node, tensor, or graph); absent on one
                                            # side for added and removed things
         "changes": [{"what": "attribute", "key": "alpha", "old": 1e-4, "new": 2e-4}],
                                            # "old"/"new" absent when added/removed; "where"
                                            # (input[k]/output[k]) and "tensor" (its id) on
                                            # changes of one of the node's tensors
         "old_nodes": ["LRN_3"], "new_nodes": ["LRN_3"]}      # nodes to show for it
      ],
      "renamed_nodes": [[old_id, new_id], ...],   # matched nodes whose ids differ
      "follow_on_shapes": [new_id, ...],    # nodes whose output shapes changed only because
                                            # their inputs' shapes did (not findings)
      "times": {engine: {"old_ms": x, "new_ms": y, "nodes": n}, ...}   # engines both carry
    }

``what`` is one of op_type, attribute, metadata, shape, dtype, input (the tensor read at
``where`` is another one), inputs, outputs (their number changed: old and new id lists),
parent; ``key`` names the attribute or the dotted metadata key.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xocview.model.analyses.summary import format_shape
from xocview.model.graph import Graph

__all__ = [
    "ABSENT",
    "ADDED",
    "CHANGED",
    "GRAPH_CHANGED",
    "INPUT_ADDED",
    "INPUT_CHANGED",
    "INPUT_REMOVED",
    "KINDS",
    "NODE_ADDED",
    "NODE_CHANGED",
    "NODE_REMOVED",
    "OUTPUT_ADDED",
    "OUTPUT_CHANGED",
    "OUTPUT_REMOVED",
    "REMOVED",
    "SAME",
    "STATUS_NAMES",
    "TENSOR_RENAMED",
    "Change",
    "Finding",
    "GraphDiff",
]

GRAPH_CHANGED = "graph changed"
INPUT_ADDED, INPUT_REMOVED, INPUT_CHANGED = "input added", "input removed", "input changed"
OUTPUT_ADDED, OUTPUT_REMOVED, OUTPUT_CHANGED = "output added", "output removed", "output changed"
NODE_REMOVED, NODE_ADDED, NODE_CHANGED = "node removed", "node added", "node changed"
TENSOR_RENAMED = "tensor renamed"
KINDS = (
    GRAPH_CHANGED,
    INPUT_ADDED,
    INPUT_REMOVED,
    INPUT_CHANGED,
    OUTPUT_ADDED,
    OUTPUT_REMOVED,
    OUTPUT_CHANGED,
    NODE_REMOVED,
    NODE_ADDED,
    NODE_CHANGED,
    TENSOR_RENAMED,
)

SAME, ADDED, REMOVED, CHANGED = 0, 1, 2, 3
STATUS_NAMES = ("same", "added", "removed", "changed")
_TEXT_WIDTH = 80


class _Absent:
    """The value of an attribute or key on the side that lacks it."""

    def __repr__(self) -> str:
        return "(absent)"


ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Change:
    """One difference of a matched thing: ``what`` changed at ``key``, from ``old`` to ``new``;
    ``where`` is the node's slot (``input[1]``, ``output[0]``) for a change of one of its
    tensors, ``tensor`` that tensor's id (on the new side)."""

    what: str
    key: str = ""
    old: Any = ABSENT
    new: Any = ABSENT
    where: str = ""
    tensor: str | None = None

    def text(self) -> str:
        """``attribute alpha: 0.0001 -> 0.0002``, ``output[0] 'y' shape: 1x8 -> 2x8``."""
        tensor = f"'{self.tensor}'" if self.tensor is not None else ""
        what = "" if self.what == "input" else self.what  # "input[1]: 'a' -> 'b'"
        place = " ".join(p for p in (self.where, tensor, what, self.key) if p)
        show = _shape_text if self.what == "shape" else _value_text
        if self.old is ABSENT:
            return f"{place}: added {show(self.new)}"
        if self.new is ABSENT:
            return f"{place}: removed (was {show(self.old)})"
        return f"{place}: {show(self.old)} -> {show(self.new)}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"what": self.what, "key": self.key}
        if self.where:
            out["where"] = self.where
        if self.tensor is not None:
            out["tensor"] = self.tensor
        if self.old is not ABSENT:
            out["old"] = self.old
        if self.new is not ABSENT:
            out["new"] = self.new
        return out


@dataclass(frozen=True)
class Finding:
    """One reported difference, with the nodes to show for it on each side."""

    kind: str
    subject: str
    old_id: str | None
    new_id: str | None
    changes: tuple[Change, ...] = ()
    old_nodes: tuple[str, ...] = ()
    new_nodes: tuple[str, ...] = ()

    def title(self) -> str:
        """``Conv_3 (Conv)``, or ``a -> b (kind)`` when the two sides name it differently."""
        old, new = self.old_id, self.new_id
        if old is not None and new is not None and old != new:
            return f"{old} -> {new} ({self.subject})"
        return f"{old if old is not None else new} ({self.subject})"

    def text(self) -> str:
        """One line: the kind, the title and the changes."""
        body = "; ".join(c.text() for c in self.changes)
        return f"{self.kind}: {self.title()}" + (f": {body}" if body else "")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "subject": self.subject}
        if self.old_id is not None:
            out["old"] = self.old_id
        if self.new_id is not None:
            out["new"] = self.new_id
        out["changes"] = [c.to_json() for c in self.changes]
        out["old_nodes"], out["new_nodes"] = list(self.old_nodes), list(self.new_nodes)
        return out


@dataclass(frozen=True, eq=False)
class GraphDiff:
    """The comparison of ``old`` with ``new``.

    ``node_map[i]`` is the new position of old node i (-1: removed, or a derived section);
    ``node_map_back`` the reverse; ``tensor_map``/``tensor_map_back`` likewise for tensors.
    ``old_status``/``new_status`` hold SAME, ADDED, REMOVED or CHANGED per node position
    (a derived group's status sums up its members': all added, all removed, any change).
    """

    old: Graph
    new: Graph
    node_map: np.ndarray
    node_map_back: np.ndarray
    tensor_map: np.ndarray
    tensor_map_back: np.ndarray
    old_status: np.ndarray
    new_status: np.ndarray
    findings: tuple[Finding, ...]
    follow_on: tuple[str, ...] = ()
    times: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return not self.findings

    def counts(self) -> dict[str, int]:
        """Findings per kind, every kind of KINDS listed."""
        out = dict.fromkeys(KINDS, 0)
        for f in self.findings:
            out[f.kind] += 1
        return out

    def matched_nodes(self) -> int:
        return int(np.count_nonzero(self.node_map >= 0))

    def renamed_nodes(self) -> list[tuple[str, str]]:
        """Matched nodes whose ids differ, (old id, new id) in old order."""
        old, new = self.old.nodes, self.new.nodes
        return [
            (old[i].id, new[j].id)
            for i, j in enumerate(self.node_map.tolist())
            if j >= 0 and old[i].id != new[j].id
        ]

    def to_json(self) -> dict[str, Any]:
        """The report as JSON values (the schema is in this module's docstring)."""
        renamed = self.renamed_nodes()
        return {
            "format": "xocview-diff",
            "version": 1,
            "equal": self.equal,
            "old": _graph_facts(self.old),
            "new": _graph_facts(self.new),
            "counts": self.counts(),
            "matched": {
                "nodes": self.matched_nodes(),
                "same_id": self.matched_nodes() - len(renamed),
                "tensors": int(np.count_nonzero(self.tensor_map >= 0)),
            },
            "findings": [f.to_json() for f in self.findings],
            "renamed_nodes": [list(p) for p in renamed],
            "follow_on_shapes": list(self.follow_on),
            "times": self.times,
        }


def _graph_facts(graph: Graph) -> dict[str, Any]:
    return {
        "graph": graph.id,
        "name": graph.name,
        "nodes": len(graph.nodes),
        "tensors": len(graph.tensors),
    }


def _value_text(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # a circular structure: not from a file, but say something
        text = repr(value)
    return text if len(text) <= _TEXT_WIDTH else text[: _TEXT_WIDTH - 1] + "\u2026"


def _shape_text(value: Any) -> str:
    if isinstance(value, list) and all(isinstance(d, int) for d in value):
        return format_shape(value)
    return _value_text(value)
