"""What an ONNX model says of itself and of its nodes, as metadata of the shared model.

Nothing is invented: only the fields the file sets (producer, IR version, opsets, doc strings,
metadata_props), so that ONNX -> XOC JSON loses nothing but weight values.
"""

from __future__ import annotations

import re
from typing import Any

import onnx

from xocview.formats.onnx.sidecar import KEY as SIDECAR_KEY
from xocview.formats.onnx.sidecar import parse
from xocview.formats.onnx.text import NotText, text
from xocview.model.dotted import expand_dotted_if_possible

__all__ = ["graph_metadata", "more_metadata", "node_metadata", "sidecar", "torch_scopes"]


def node_metadata(proto: onnx.NodeProto, name: str, domain: str) -> dict[str, Any]:
    """A node's name, domain, doc string and metadata_props (those it has)."""
    metadata: dict[str, Any] = {"name": name} if name else {}
    if domain:
        if not isinstance(domain, str):
            raise NotText
        metadata["domain"] = domain
    more_metadata(proto, metadata)
    return metadata


def more_metadata(proto: onnx.NodeProto, metadata: dict[str, Any]) -> None:
    """Add a node's doc string and metadata_props to ``metadata``."""
    if proto.doc_string:
        metadata["doc_string"] = text(proto.doc_string)
    props = getattr(proto, "metadata_props", ())
    if props:
        metadata["metadata_props"] = _props(props)


_NAME_SCOPES = "pkg.torch.onnx.name_scopes"
_QUOTED = re.compile(r"'([^']*)'")


def torch_scopes(proto: onnx.NodeProto) -> str:
    """A scoped name (``/encoder/layer.0/attention/linear``) from the module path that
    PyTorch's dynamo exporter records in metadata_props, or "" when it records none.

    Its names are flat (``node_linear_3``); the path is a list of module names, each the
    full dotted path (``['', 'encoder', 'encoder.layer.0', ..., 'linear']``), the last one
    the operation's own name: each scope is named by what it adds to its parent's path.
    """
    for p in proto.metadata_props:
        if p.key == _NAME_SCOPES:
            parts = _QUOTED.findall(p.value)
            break
    else:
        return ""
    if len(parts) < 3:
        return ""
    names = []
    parent = ""
    for scope in parts[1:-1]:
        names.append(
            scope[len(parent) + 1 :] if parent and scope.startswith(parent + ".") else scope
        )
        parent = scope
    return "/" + "/".join(n.replace("/", "_") for n in names) + "/" + parts[-1]


def _props(props: Any) -> dict[str, Any]:
    """metadata_props as a (dotted-expanded) dict; keys and values are free text."""
    return expand_dotted_if_possible({text(p.key): text(p.value) for p in props})


def sidecar(model: onnx.ModelProto) -> dict[str, Any] | None:
    """The metadata xocview kept for ONNX (``sidecar``), when the model has the entry."""
    for p in model.metadata_props:
        if p.key == SIDECAR_KEY:
            return parse(text(p.value))
    return None


def graph_metadata(model: onnx.ModelProto, kept: bool = False) -> dict[str, Any]:
    """What the model says of itself: producer, IR version, opsets, props; nothing invented.

    ``kept``: the model has xocview's metadata entry (``sidecar``), which is no prop to show."""
    md: dict[str, Any] = {"ir_version": int(model.ir_version)}
    for key in ("producer_name", "producer_version", "domain", "doc_string"):
        value = getattr(model, key)
        if value:
            md[key] = text(value)
    if model.model_version:
        md["model_version"] = int(model.model_version)
    # A list, not a dict keyed by domain: XOC JSON expands dotted keys ("ai.onnx").
    md["opset_import"] = [
        {"domain": text(op.domain) or "ai.onnx", "version": int(op.version)}
        for op in model.opset_import
    ]
    props = [p for p in model.metadata_props if not (kept and p.key == SIDECAR_KEY)]
    if props:
        md["metadata_props"] = _props(props)
    if model.graph.doc_string:
        md["graph_doc_string"] = text(model.graph.doc_string)
    if model.functions:
        md["functions"] = [
            f"{text(f.domain)}.{text(f.name)}" if f.domain else text(f.name)
            for f in model.functions
        ]
    return md
