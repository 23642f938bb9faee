"""Text fields of an ONNX model that are not UTF-8: kept as text, or located as errors.

ONNX declares its strings in proto2, so protobuf does not validate them: upb hands back
``bytes`` instead of ``str`` for a field whose bytes are not UTF-8. Free text (doc strings,
producer, metadata_props) is kept with replacement characters; names that tie the graph
together (tensor, node and attribute names, op types, domains) cannot be guessed and make the
load fail at their place. The loader stays on its fast path and only looks for the faulty
field (``find_bad_name``) once something went wrong.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import onnx

from xocview.errors import FormatError, shorten

__all__ = ["NotText", "bad_name_error", "find_bad_name", "text"]


class NotText(Exception):
    """A name was met as bytes; the loader turns this into a located FormatError."""


def text(value: str | bytes) -> str:
    """``value`` as text; bytes that are not UTF-8 get replacement characters (free text only)."""
    if isinstance(value, str):
        return value
    return value.decode("utf-8", errors="replace")


def bad_name_error(file: str, model: onnx.ModelProto) -> FormatError | None:
    """The located error for the first name of ``model`` that is not UTF-8, or None."""
    found = find_bad_name(model)
    if found is None:
        return None
    place, raw = found
    shown = shorten(repr(raw))
    return FormatError(file, place, f"not UTF-8 text ({shown})", "a UTF-8 name")


def find_bad_name(model: onnx.ModelProto) -> tuple[str, bytes] | None:
    """The place and bytes of the first name in ``model`` that protobuf could not decode."""
    for place, value in _names(model):
        if not isinstance(value, str):
            return place, bytes(value)
    return None


def _names(model: onnx.ModelProto) -> Iterator[tuple[str, str | bytes]]:
    for k, op in enumerate(model.opset_import):
        yield f"opset_import[{k}].domain", op.domain
    yield from _graph_names(model.graph, "graph")
    for k, fn in enumerate(model.functions):
        where = f"functions[{k}]"
        yield f"{where}.name", fn.name
        yield f"{where}.domain", fn.domain
        for j, name in enumerate(fn.input):
            yield f"{where}.input[{j}]", name
        for j, name in enumerate(fn.output):
            yield f"{where}.output[{j}]", name
        for j, name in enumerate(fn.attribute):
            yield f"{where}.attribute[{j}]", name
        yield from _node_names(fn.node, where)


def _graph_names(g: onnx.GraphProto, where: str) -> Iterator[tuple[str, str | bytes]]:
    for field in ("input", "output", "value_info"):
        for k, vi in enumerate(getattr(g, field)):
            yield f"{where}.{field}[{k}].name", vi.name
    for k, init in enumerate(g.initializer):
        yield f"{where}.initializer[{k}].name", init.name
        for j, entry in enumerate(init.external_data):
            yield f"{where}.initializer[{k}].external_data[{j}].key", entry.key
            yield f"{where}.initializer[{k}].external_data[{j}].value", entry.value
    for k, sp in enumerate(g.sparse_initializer):
        yield f"{where}.sparse_initializer[{k}].values.name", sp.values.name
    yield from _node_names(g.node, where)


def _node_names(nodes: Iterable[onnx.NodeProto], where: str) -> Iterator[tuple[str, str | bytes]]:
    for k, node in enumerate(nodes):
        at = f"{where}.node[{k}]"
        name = node.name
        if isinstance(name, str) and name:
            at = f"{at} ('{shorten(name)}')"
        yield f"{at}.name", name
        yield f"{at}.op_type", node.op_type
        yield f"{at}.domain", node.domain
        for j, value in enumerate(node.input):
            yield f"{at}.input[{j}]", value
        for j, value in enumerate(node.output):
            yield f"{at}.output[{j}]", value
        for j, attr in enumerate(node.attribute):
            yield f"{at}.attribute[{j}].name", attr.name
            yield f"{at}.attribute[{j}].ref_attr_name", attr.ref_attr_name
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _graph_names(attr.g, f"{at}.attribute[{j}].g")
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for i, sub in enumerate(attr.graphs):
                    yield from _graph_names(sub, f"{at}.attribute[{j}].graphs[{i}]")
