"""TensorFlow files read without TensorFlow: the format contract.

A frozen GraphDef (``.pb`` binary, ``.pbtxt`` text) is the graph; a SavedModel's
``saved_model.pb`` (or its folder, opened through that file by ``Source``) is its first
MetaGraph's graph cut to what the serving signature computes, with the variables read from
``variables/``.
Binary protobuf has no magic number, so a ``.pb`` is told by the shape of its first fields.
"""

from __future__ import annotations

import re
from typing import Any

from google.protobuf import text_format
from google.protobuf.message import DecodeError

from xocview.errors import FormatError
from xocview.formats.source import Source
from xocview.formats.tensorflow.build import Builder
from xocview.formats.tensorflow.mapping import lower_graph
from xocview.formats.tensorflow.protos import message
from xocview.formats.tensorflow.saved_model import saved_model_graph
from xocview.model import Graph
from xocview.model.bodies import mark_body_inputs
from xocview.model.unread import drop_unread_weights

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]

NAME = "TensorFlow"
EXTENSIONS = (".pb", ".pbtxt", ".graphdef")
SAVED_MODEL = "saved_model.pb"

_TEXT_GRAPH = re.compile(rb"^\s*(node|library|versions)\s*\{", re.M)
_TEXT_SAVED = re.compile(rb"^\s*(saved_model_schema_version\s*:|meta_graphs\s*\{)", re.M)


def _varint(head: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while at < len(head) and shift < 64:
        b = head[at]
        value |= (b & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not b & 0x80:
            return value, at
    return -1, at


def _kind(head: bytes) -> str | None:
    """ "graph" or "saved" for a binary GraphDef or SavedModel by its first fields, "text-…"
    for their text forms, None otherwise."""
    if _TEXT_SAVED.search(head[:4096]):
        return "text-saved"
    if _TEXT_GRAPH.search(head[:4096]) and head[:1] != b"\x0a":
        return "text-graph"
    if head[:1] == b"\x0a":  # GraphDef.node (field 1, bytes) whose NodeDef starts with name
        size, at = _varint(head, 1)
        return "graph" if size > 0 and head[at : at + 1] == b"\x0a" else None
    if head[:3] == b"\x08\x01\x12":  # SavedModel: schema version 1, then a MetaGraphDef
        _, at = _varint(head, 3)
        return "saved" if head[at : at + 1] == b"\x0a" else None
    return None


def sniff(source: Source) -> str | None:
    """None for a GraphDef or SavedModel protobuf, binary or text, else why not."""
    if _kind(source.head) is not None:
        return None
    if source.path.name == SAVED_MODEL:
        return None
    return "not a GraphDef or SavedModel protobuf (first field)"


def _parse(source: Source, kind: str) -> Any:
    cls = message("SavedModel" if kind.endswith("saved") else "GraphDef")
    msg = cls()
    if kind.startswith("text"):
        try:
            text_format.Parse(source.data.decode("utf-8"), msg, allow_unknown_field=True)
        except (text_format.ParseError, UnicodeDecodeError) as e:
            raise FormatError(
                source.name, _text_place(e), _text_problem(e), f"{cls.__name__} text"
            ) from None
        return msg
    try:
        msg.ParseFromString(source.data)
    except (DecodeError, RecursionError) as e:
        raise FormatError(
            source.name, "", f"does not parse ({e})", f"a {cls.__name__} protobuf"
        ) from None
    return msg


def _text_place(e: Exception) -> str:
    line = getattr(e, "GetLine", lambda: None)()
    col = getattr(e, "GetColumn", lambda: None)()
    return f"line {line}:{col}" if line else ""


def _text_problem(e: Exception) -> str:
    text = str(e)
    return text.split(" : ", 1)[-1] if " : " in text else text


def load(source: Source) -> Graph:
    """The graph: a GraphDef's nodes, or a SavedModel's serving signature."""
    kind = _kind(source.head) or ("saved" if source.path.name == SAVED_MODEL else "graph")
    msg = _parse(source, kind)
    if kind.endswith("saved"):
        return saved_model_graph(msg, source)
    return graph_def_graph(msg, source.name, source.path.stem or source.path.name)


def graph_def_graph(gd: Any, file: str, title: str) -> Graph:
    """A frozen GraphDef: every node, the Placeholders as inputs, the sinks as outputs."""
    if not gd.node:
        raise FormatError(file, "node", "the graph has no node", "at least one NodeDef")
    b = Builder(file, gd.library)
    b.level(gd.node, "node")
    tensors, nodes, inputs, outputs = b.finish(b.sinks())
    meta: dict[str, Any] = {"opset_import": [{"domain": "", "version": 20}]}
    info: dict[str, Any] = {"producer": gd.versions.producer} if gd.HasField("versions") else {}
    if gd.library.function:
        info["functions"] = len(gd.library.function)
    if b.dropped:
        info["control_nodes_dropped"] = b.dropped
    if info:
        meta["tensorflow"] = info
    graph = lower_graph(Graph(title, title, tensors, nodes, inputs, outputs, meta))
    drop_unread_weights(graph)  # Consts the mappings took into attributes
    mark_body_inputs(graph)  # Loop and If body inputs, as ONNX bodies have them
    return graph
