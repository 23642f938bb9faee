"""Values imported from a profile, stored under one metadata key of many nodes as one edit.

The imported values replace what the nodes stored under that key before, on every node: a
node the new profile does not time loses the old value, so the key holds exactly one profile
and a re-import never mixes two. Undo restores each node's metadata as it was.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

from xocview.errors import EditError
from xocview.model.edits.attrs import nodes_metadata_steps
from xocview.model.edits.lookup import deleted_path, key_parts
from xocview.model.edits.steps import Edit, SetField, Step

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = ["import_values"]


def import_values(graph: Graph, key: str, values: Mapping[str, float], description: str) -> Edit:
    """Set the dotted ``key`` (``performance.time.torch``) of the nodes in ``values`` and
    remove it from every other node, as one undo step described by ``description``.

    Raises EditError, before anything changes, when there is nothing to import, a value is
    not a finite number, a node id is unknown or the key's path runs through a non-table.
    """
    if not values:
        raise EditError(f"no values to store under {key}; import a profile of this graph")
    for node_id, value in values.items():
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or not math.isfinite(value):
            raise EditError(f"node '{node_id}': {value!r} is not a finite number; give a number")
    steps: list[Step] = [*nodes_metadata_steps(graph, key, dict(values))]
    parts = key_parts(key)
    for pos, node in enumerate(graph.nodes):
        if node.id not in values and _holds(node.metadata, parts):
            place = f"node '{node.id}' metadata"
            new = deleted_path(node.metadata, parts, place)
            steps.append(SetField(("node", pos), "metadata", node.metadata, new))
    edit = Edit(description, tuple(steps))
    edit.apply(graph)
    return edit


def _holds(metadata: Mapping[str, object], parts: list[str]) -> bool:
    """True when the nested path ``parts`` leads to a value."""
    level: object = metadata
    for part in parts:
        if not isinstance(level, Mapping) or part not in level:
            return False
        level = level[part]
    return True
