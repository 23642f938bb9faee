"""ONNX models (``.onnx`` protobuf) into the shared model.

Graph inputs become ``input`` tensors, initializers ``weight`` tensors (values read lazily),
graph outputs ``output`` and the rest ``activation``. Types come from ``value_info`` and, where
that is incomplete, from ONNX shape inference run on a weightless copy of the graph. Calls of
model-local functions and If/Loop/Scan nodes become groups holding their bodies' nodes; scoped
node names (``/encoder/layer.0/MatMul``) give derived scope groups.

This module tells and parses the file; ``build`` walks the parsed model into the graph.
"""

from __future__ import annotations

import onnx
from google.protobuf.message import DecodeError

from xocview.errors import FormatError
from xocview.formats.onnx.build import Builder
from xocview.formats.onnx.check import model_findings
from xocview.formats.onnx.external import check_locations
from xocview.formats.onnx.text import NotText, bad_name_error
from xocview.formats.source import Source
from xocview.model import Finding, Graph
from xocview.model.gc_pause import gc_paused

__all__ = ["EXTENSIONS", "NAME", "load", "read_findings", "sniff"]

NAME = "ONNX"
EXTENSIONS = (".onnx",)
EXPANDS_DOTTED_KEYS = True  # metadata_props and custom attribute names go through _expanded

# First bytes of a serialized ModelProto: the tag of one of its fields (ir_version, producer,
# graph, opset_import, ...), since protobuf writes fields in number order.
_FIRST_TAGS = {0x08, 0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72}
_FIRST_TAGS2 = {b"\xa2\x01", b"\xca\x01", b"\xd2\x01"}


def sniff(source: Source) -> str | None:
    """None when the file is an ONNX model, else why not."""
    head = source.head
    if not head:
        return "empty file"
    if source.looks_like_json():
        return "a JSON file, not an ONNX protobuf"
    if head[0] not in _FIRST_TAGS and head[:2] not in _FIRST_TAGS2:
        return "does not start like an ONNX ModelProto"
    if source.path.suffix.lower() in EXTENSIONS:
        return None  # load() gives the precise error for a damaged .onnx file
    try:
        _parse(source)
    except FormatError as e:
        return e.problem
    return None


def load(source: Source) -> Graph:
    """The graph of an ONNX model; FormatError for damaged files and unsafe external data."""
    with gc_paused():
        model = _guarded(source)
        return _build(Builder(source, model))


def read_findings(source: Source) -> tuple[Graph, list[Finding]]:
    """The graph and every fault of the ONNX model (what onnx's checker finds, and more).

    Raises FormatError, as ``load`` does, only for a model that cannot be built at all.
    """
    with gc_paused():
        model = _guarded(source)
        builder = Builder(source, model)
        graph = _build(builder)
    return graph, model_findings(model, source, builder.top, builder.plan)


def _build(builder: Builder) -> Graph:
    """The builder's graph; a name that is not UTF-8 becomes a located FormatError."""
    try:
        return builder.build()
    except (TypeError, NotText) as e:  # a name protobuf could not decode met a str
        error = bad_name_error(builder.file, builder.model)
        if error is None:
            raise
        raise error from e


def _guarded(source: Source) -> onnx.ModelProto:
    """The parsed model, every external data location in it checked against its folder."""
    model = _parse(source)
    check_locations(model, source.path.parent, source.name, source.data)
    return model


def _parse(source: Source) -> onnx.ModelProto:
    cached = getattr(source, "_onnx_model", None)
    if cached is not None:
        return cached
    model = onnx.ModelProto()
    try:
        model.ParseFromString(source.data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise FormatError(
            source.name,
            "",
            f"not a valid ONNX model ({e}); the file may be truncated or of another format",
            "a serialized onnx.ModelProto",
        ) from e
    if not model.HasField("graph"):
        raise FormatError(
            source.name,
            "",
            "the model has no graph; the file may be truncated or of another format",
            "an onnx.ModelProto with a graph",
        )
    g = model.graph
    if not (len(g.node) or len(g.input) or len(g.output) or len(g.initializer)):
        raise FormatError(
            source.name,
            "graph",
            "the graph is empty (no nodes, inputs, outputs or initializers)",
            "a model with at least one node or value",
        )
    if model.ir_version >= 3 and not model.opset_import:
        raise FormatError(
            source.name,
            "",
            "the model has no opset_import; the file may be truncated",
            "an onnx.ModelProto with opset_import",
        )
    source._onnx_model = model  # type: ignore[attr-defined]
    return model
