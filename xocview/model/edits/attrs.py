"""Edits of node attributes (checked against the ONNX schema's types) and of metadata."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from xocview.errors import EditError
from xocview.model.edits.lookup import (
    HIERARCHY_KEYS,
    check_json,
    deleted_path,
    key_parts,
    node_pos,
    set_path,
    tensor_pos,
)
from xocview.model.edits.reinfer import edit_with_types
from xocview.model.edits.steps import Edit, Ref, SetField

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = [
    "EXTRA_ATTRIBUTES_KEY",
    "add_attribute",
    "attribute_type",
    "check_attribute_value",
    "delete_metadata",
    "nodes_metadata_steps",
    "remove_attribute",
    "set_attribute",
    "set_metadata",
]

# Where an attribute the op's schema does not define is kept (as the ONNX loader does).
EXTRA_ATTRIBUTES_KEY = "attributes"
EDITABLE_TYPES = ("INT", "FLOAT", "STRING", "INTS", "FLOATS", "STRINGS")


def _type_name(attr_type: Any) -> str:
    return str(attr_type.name)  # OpSchema.AttrType members: INT, FLOATS, TENSOR, ...


@lru_cache(maxsize=1)
def _attr_types() -> dict[str, dict[str, str]]:
    """op_type -> attribute -> ONNX AttrType name; the newest default-domain schema wins,
    an attribute found only in older versions or other domains keeps the type it had there."""
    import onnx.defs

    def rank(s: Any) -> tuple[bool, int]:
        return (s.domain in ("", "ai.onnx"), s.since_version)

    table: dict[str, dict[str, str]] = {}
    for schema in sorted(onnx.defs.get_all_schemas_with_history(), key=rank):
        attrs = table.setdefault(schema.name, {})
        attrs.update({name: _type_name(a.type) for name, a in schema.attributes.items()})
    return table


def attribute_type(op_type: str, name: str) -> str | None:
    """The ONNX type name (INT, FLOATS, TENSOR, ...) of an op's attribute; None off-schema."""
    return _attr_types().get(op_type, {}).get(name)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def check_attribute_value(op_type: str, name: str, value: Any) -> Any:
    """``value`` in the form the schema's type asks for (ints stay ints, floats become floats).

    Raises EditError for a value of the wrong type and for TENSOR/GRAPH-like attributes, which
    are read-only. An attribute the schema does not know takes any JSON value.
    """
    kind = attribute_type(op_type, name)
    place = f"attribute '{name}' of {op_type}"
    if kind is None:
        check_json(value, place)
        return value
    if kind not in EDITABLE_TYPES:
        raise EditError(
            f"{place} is of type {kind} and read-only here; "
            "only int, float, string and lists of them can be edited"
        )
    scalar = kind.rstrip("S")
    checks = {"INT": (_is_int, "an integer"), "FLOAT": (_is_number, "a number")}
    ok, wanted = checks.get(scalar, (lambda v: isinstance(v, str), "a string"))
    if kind.endswith("S"):
        if not isinstance(value, list) or not all(ok(v) for v in value):
            raise EditError(f"{place} must be a list of {kind.lower()[:-1]}s, not {value!r}")
        return [float(v) for v in value] if scalar == "FLOAT" else list(value)
    if not ok(value):
        raise EditError(f"{place} must be {wanted} ({kind}), not {value!r}")
    return float(value) if scalar == "FLOAT" else value


def set_attribute(graph: Graph, node_id: str, name: str, value: Any) -> Edit:
    """Set (or add) attribute ``name`` of a node.

    It goes into ``attributes`` when the op's ONNX schema defines it or the node already has
    it there, else into ``metadata.attributes``. Raises EditError for an unknown node, an empty
    name, a value of the wrong type, or a read-only (tensor, graph) attribute.
    """
    pos = node_pos(graph, node_id)
    node = graph.nodes[pos]
    if not isinstance(name, str) or not name:
        raise EditError(f"node '{node_id}': attribute name {name!r} is empty; give a name")
    value = check_attribute_value(node.op_type, name, value)
    ref: Ref = ("node", pos)
    if attribute_type(node.op_type, name) is not None or name in node.attributes:
        new = dict(node.attributes)
        new[name] = value
        step = SetField(ref, "attributes", node.attributes, new)
    else:
        parts = [EXTRA_ATTRIBUTES_KEY, *key_parts(name)]
        meta = set_path(node.metadata, parts, value, f"node '{node_id}' metadata")
        step = SetField(ref, "metadata", node.metadata, meta)
    # what the node computes may change: its outputs and all downstream are inferred again
    return edit_with_types(graph, f"set attribute {name} of '{node_id}'", (step,), nodes=[pos])


def add_attribute(graph: Graph, node_id: str, name: str, value: Any) -> Edit:
    """``set_attribute`` for an attribute the node does not have yet; refuses an existing one."""
    node = graph.nodes[node_pos(graph, node_id)]
    extra = node.metadata.get(EXTRA_ATTRIBUTES_KEY)
    if name in node.attributes or (isinstance(extra, dict) and name in extra):
        raise EditError(
            f"node '{node_id}' already has attribute '{name}'; set its value instead of adding it"
        )
    return set_attribute(graph, node_id, name, value)


def remove_attribute(graph: Graph, node_id: str, name: str) -> Edit:
    """Remove an attribute from ``attributes`` (or, failing that, from ``metadata.attributes``).

    Raises EditError for an unknown node or attribute and for a read-only attribute.
    """
    pos = node_pos(graph, node_id)
    node = graph.nodes[pos]
    kind = attribute_type(node.op_type, name)
    if name in node.attributes:
        if kind is not None and kind not in EDITABLE_TYPES:
            raise EditError(
                f"attribute '{name}' of {node.op_type} is of type {kind} and read-only here; "
                "it cannot be removed"
            )
        new = {k: v for k, v in node.attributes.items() if k != name}
        step = SetField(("node", pos), "attributes", node.attributes, new)
    else:
        extra = node.metadata.get(EXTRA_ATTRIBUTES_KEY)
        if not isinstance(extra, dict) or name not in extra:
            known = ", ".join(repr(k) for k in node.attributes) or "none"
            raise EditError(
                f"node '{node_id}' has no attribute '{name}' (its attributes: {known}); "
                "give one of them"
            )
        meta = deleted_path(node.metadata, [EXTRA_ATTRIBUTES_KEY, name], f"node '{node_id}'")
        step = SetField(("node", pos), "metadata", node.metadata, meta)
    return edit_with_types(graph, f"remove attribute {name} of '{node_id}'", (step,), nodes=[pos])


def _owner(graph: Graph, node: str | None, tensor: str | None) -> tuple[Ref, dict[str, Any], str]:
    if node is not None and tensor is not None:
        raise EditError("give a node or a tensor whose metadata to edit, not both")
    if node is not None:
        pos = node_pos(graph, node)
        return ("node", pos), graph.nodes[pos].metadata, f"node '{node}' metadata"
    if tensor is not None:
        pos = tensor_pos(graph, tensor)
        return ("tensor", pos), graph.tensors[pos].metadata, f"tensor '{tensor}' metadata"
    return ("graph", 0), graph.metadata, "graph metadata"


def _refuse_hierarchy(ref: Ref, parts: list[str], place: str) -> None:
    if ref[0] == "node" and parts[0] in HIERARCHY_KEYS:
        raise EditError(
            f"{place}: '{parts[0]}' links the hierarchy; group or ungroup nodes to change it"
        )


def set_metadata(
    graph: Graph, key: str, value: Any, *, node: str | None = None, tensor: str | None = None
) -> Edit:
    """Set ``value`` at a dotted ``key`` (``perf.time.cpu``) in the metadata of a node, a tensor
    or (with neither given) the graph; levels are made as needed.

    Raises EditError for an unknown id, a value without a JSON form, a level on the path that
    holds a non-table value, and a node's ``parent_id``/``children_ids`` (use grouping).
    """
    ref, meta, place = _owner(graph, node, tensor)
    parts = key_parts(key)
    _refuse_hierarchy(ref, parts, place)
    check_json(value, f"{place}.{key}")
    new = set_path(meta, parts, value, place)
    edit = Edit(f"set {key} in {place}", (SetField(ref, "metadata", meta, new),))
    edit.apply(graph)
    return edit


def delete_metadata(
    graph: Graph, key: str, *, node: str | None = None, tensor: str | None = None
) -> Edit:
    """Delete the dotted ``key`` (a leaf or a whole table) from a node's, tensor's or the graph's
    metadata; tables left empty go too. Raises EditError when the key is not there."""
    ref, meta, place = _owner(graph, node, tensor)
    parts = key_parts(key)
    _refuse_hierarchy(ref, parts, place)
    new = deleted_path(meta, parts, place)
    edit = Edit(f"delete {key} from {place}", (SetField(ref, "metadata", meta, new),))
    edit.apply(graph)
    return edit


def nodes_metadata_steps(graph: Graph, key: str, values: dict[str, Any]) -> list[SetField]:
    """Steps that set the dotted ``key`` of many nodes (``{node id: value}``), checked, not
    applied: what a profiling run records is one undo step, not thousands. Raises EditError
    like ``set_metadata`` for an unknown id or a value without a JSON form."""
    parts = key_parts(key)
    steps: list[SetField] = []
    for node_id, value in values.items():
        pos = node_pos(graph, node_id)
        place = f"node '{node_id}' metadata"
        _refuse_hierarchy(("node", pos), parts, place)
        check_json(value, f"{place}.{key}")
        meta = graph.nodes[pos].metadata
        steps.append(SetField(("node", pos), "metadata", meta, set_path(meta, parts, value, place)))
    return steps
