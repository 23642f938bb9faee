"""Metadata that ONNX has no field for, kept in one model ``metadata_props`` entry.

The entry ``xocview.metadata`` holds JSON::

    {"graph": {KEY: VALUE, ...},            graph metadata other than the model's own fields
     "nodes": {NODE_ID: {KEY: VALUE}, ...},  node metadata such as performance.time.cpu
     "tensors": {TENSOR_ID: {KEY: VALUE}},   tensor metadata other than its type's notes
     "unnamed": [NODE_ID, ...]}              nodes the writer named after their ids

Keys the ONNX reader derives from the file itself (a node's name, domain, doc string,
metadata_props, omitted inputs, parents and children; a tensor's dim symbols) are left out:
the file holds them. The reader puts the rest back on the nodes and tensors of those ids, so
that a graph saved as ONNX and opened again has the metadata it had.
"""

from __future__ import annotations

import json
from typing import Any

from xocview.formats.json_text import loads as load_json
from xocview.model import Graph

__all__ = ["GRAPH_FIELDS", "KEY", "NODE_FIELDS", "TENSOR_FIELDS", "pack", "parse", "restore"]

KEY = "xocview.metadata"

# Metadata keys that an ONNX file holds in fields of its own (or that the reader derives).
GRAPH_FIELDS = frozenset(
    {
        "ir_version",
        "producer_name",
        "producer_version",
        "domain",
        "doc_string",
        "model_version",
        "opset_import",
        "metadata_props",
        "graph_doc_string",
        "functions",
        "reader_notes",  # what the reader held back (unexpanded calls): true of the source only
        "kept_functions",  # the functions of unexpanded calls, written as functions
    }
)
NODE_FIELDS = frozenset(
    {
        "name",
        "domain",
        "doc_string",
        "metadata_props",
        "attributes",
        "omitted_inputs",
        "omitted_outputs",
        "parent_id",
        "children_ids",
        "subgraph",
        "function",
    }
)
TENSOR_FIELDS = frozenset(
    {"shape_symbols", "rank_unknown", "type", "sparse", "subgraph_of", "external_data"}
)


def pack(
    graph: Graph,
    nodes: dict[int, frozenset[str]],
    tensors: list[int],
    unnamed: list[str],
) -> str | None:
    """The entry's JSON text, or None when there is nothing to keep.

    ``nodes`` maps each written node's position to the metadata keys the file holds for it
    (``NODE_FIELDS`` less those the writer could not put in the file); its other keys are
    kept here. ``tensors`` are the positions of the tensors written.
    """
    doc: dict[str, Any] = {}
    extra = {k: v for k, v in graph.metadata.items() if k not in GRAPH_FIELDS}
    if extra:
        doc["graph"] = extra
    node_doc: dict[str, Any] = {}
    for i, held in nodes.items():
        node = graph.nodes[i]
        kept = {k: v for k, v in node.metadata.items() if k not in held}
        if kept:
            node_doc[node.id] = kept
    if node_doc:
        doc["nodes"] = node_doc
    tensor_doc: dict[str, Any] = {}
    for t in tensors:
        tensor = graph.tensors[t]
        kept = {k: v for k, v in tensor.metadata.items() if k not in TENSOR_FIELDS}
        if tensor.kind == "weight" and tensor.has_data:
            kept.pop("doc_string", None)  # the initializer holds it
        if kept:
            tensor_doc[tensor.id] = kept
    if tensor_doc:
        doc["tensors"] = tensor_doc
    if unnamed:
        doc["unnamed"] = unnamed
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")) if doc else None


def parse(text: str) -> dict[str, Any] | None:
    """The entry's document, or None when the text is not one (someone else's entry of
    that name stays an ordinary metadata_props entry)."""
    try:
        doc = load_json(text)  # one nested past MAX_DEPTH too (JsonTooDeep is a ValueError)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def restore(graph: Graph, doc: dict[str, Any]) -> None:
    """Put the entry's metadata back on the graph, its nodes and tensors (the file's own
    fields win over a key of the same name)."""
    _merge(graph.metadata, doc.get("graph"))
    nodes = {n.id: n for n in graph.nodes}
    for nid, extra in _dict(doc.get("nodes")).items():
        node = nodes.get(nid)
        if node is not None and isinstance(extra, dict):
            kept = {k: v for k, v in extra.items() if k not in _HIERARCHY}
            node.metadata = {**kept, **node.metadata}
    unnamed = doc.get("unnamed")
    for nid in unnamed if isinstance(unnamed, list) else []:
        node = nodes.get(nid) if isinstance(nid, str) else None
        name = node.metadata.get("name") if node is not None else None
        if node is not None and isinstance(name, str) and nid.endswith(name):
            node.metadata = {k: v for k, v in node.metadata.items() if k != "name"}
    tensors = {t.id: t for t in graph.tensors}
    for tid, extra in _dict(doc.get("tensors")).items():
        tensor = tensors.get(tid)
        if tensor is not None and isinstance(extra, dict):
            tensor.metadata = {**extra, **tensor.metadata}


# The file's structure decides these: an entry never makes a node a group or a child.
_HIERARCHY = frozenset({"parent_id", "children_ids", "derived"})


def _merge(target: dict[str, Any], extra: Any) -> None:
    for k, v in _dict(extra).items():
        target.setdefault(k, v)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
