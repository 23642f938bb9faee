"""ONNX models (``.onnx`` protobuf) into the shared model.

Graph inputs become ``input`` tensors, initializers ``weight`` tensors (values read lazily),
graph outputs ``output`` and the rest ``activation``. Types come from ``value_info`` and, where
that is incomplete, from ONNX shape inference run on a weightless copy of the graph. Calls of
model-local functions and If/Loop/Scan nodes become groups holding their bodies' nodes; scoped
node names (``/encoder/layer.0/MatMul``) give derived scope groups.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx
from google.protobuf.message import DecodeError

from xocview.errors import FormatError
from xocview.formats.gc_pause import gc_paused
from xocview.formats.onnx_attrs import attribute_value
from xocview.formats.onnx_types import TypeTable
from xocview.formats.onnx_weights import external_info, lazy_values, sparse_values
from xocview.formats.source import Source
from xocview.model import Graph, Node, Tensor
from xocview.model.dotted import (
    expand_dotted_if_possible,
)
from xocview.model.schema import schema_attributes
from xocview.model.scopes import add_scope_groups, scope_of

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]

NAME = "ONNX"
EXTENSIONS = (".onnx",)
EXPANDS_DOTTED_KEYS = True  # metadata_props and custom attribute names go through _expanded

# First bytes of a serialized ModelProto: the tag of one of its fields (ir_version, producer,
# graph, opset_import, ...), since protobuf writes fields in number order.
_FIRST_TAGS = {0x08, 0x12, 0x1A, 0x22, 0x28, 0x32, 0x3A, 0x42, 0x72}
_FIRST_TAGS2 = {b"\xa2\x01", b"\xca\x01", b"\xd2\x01"}
_MAX_FUNCTION_DEPTH = 16

Rename = Callable[[str], str]
_NONE: list[int] = []  # shared empty "omitted" list; never mutated


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
        model = _parse(source)
        return _Builder(source, model).build()


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


class _Builder:
    """Walks a ModelProto once, creating tensors by name and nodes with unique ids."""

    def __init__(self, source: Source, model: onnx.ModelProto) -> None:
        self.file = source.name
        self.model_dir = source.path.parent
        self.model = model
        g = model.graph
        stem = source.path.stem
        self.graph = Graph(g.name or stem, g.name or stem, metadata=_graph_metadata(model))
        self.types = TypeTable(model)
        self.pos: dict[str, int] = {}
        self.node_ids: set[str] = set()
        self.functions = {
            (f.domain, f.name, getattr(f, "overload", "")): f for f in model.functions
        }

    def build(self) -> Graph:
        g, graph = self.model.graph, self.graph
        for init in g.initializer:
            self.weight(
                init.name,
                init.dims,
                init.data_type,
                lazy_values(init, self.model_dir, self.file),
                external_info(init),
                init.doc_string,
            )
        for sp in g.sparse_initializer:
            self.weight(sp.values.name, sp.dims, sp.values.data_type, sparse_values(sp), None, "")
        for vi in g.input:
            if vi.name not in self.pos:
                graph.inputs.append(self.tensor(vi.name, "input"))
        top = self.nodes(g, None, _same, 0)
        for vi in g.output:
            t = self.tensor(vi.name)
            if graph.tensors[t].kind == "activation":
                graph.tensors[t].kind = "output"
            graph.outputs.append(t)
        all_scopes: list[tuple[str, ...] | None] = [None] * len(graph.nodes)
        for i in top:
            md = graph.nodes[i].metadata
            name = md.get("name", "")
            if "/" in name and "children_ids" not in md:
                all_scopes[i] = scope_of(name) or None
        add_scope_groups(graph, all_scopes)
        graph.invalidate()
        return graph

    # -- tensors -------------------------------------------------------------------------------

    def tensor(self, name: str, kind: str = "activation") -> int:
        t = self.pos.get(name)
        if t is None:
            dtype, shape, metadata = self.types.describe(name)
            t = self.pos[name] = len(self.graph.tensors)
            self.graph.tensors.append(Tensor(name, kind, shape, dtype, metadata))
        return t

    def weight(
        self,
        name: str,
        dims: Any,
        data_type: int,
        data: Any,
        external: dict[str, str] | None,
        doc: str,
    ) -> None:
        dtype = self.types.dtype_name(data_type)
        metadata: dict[str, Any] = {}
        if external:
            metadata["external_data"] = {
                k: int(v) if k in ("offset", "length") else v for k, v in external.items()
            }
        if doc:
            metadata["doc_string"] = doc
        if name in self.pos:  # a subgraph initializer shadowing nothing we know: keep first
            return
        self.pos[name] = len(self.graph.tensors)
        self.graph.tensors.append(
            Tensor(name, "weight", [int(d) for d in dims], dtype, metadata, data)
        )

    # -- nodes ---------------------------------------------------------------------------------

    def unique_id(self, wanted: str) -> str:
        ids = self.node_ids
        if wanted not in ids:
            ids.add(wanted)
            return wanted
        k = 2
        while f"{wanted}_{k}" in ids:
            k += 1
        ids.add(f"{wanted}_{k}")
        return f"{wanted}_{k}"

    def nodes(
        self,
        g: onnx.GraphProto,
        parent: str | None,
        rename: Rename,
        depth: int,
        call_attrs: dict[str, onnx.AttributeProto] | None = None,
        id_prefix: str = "",
    ) -> list[int]:
        """Add the nodes of ``g``; returns the positions of those directly under ``parent``."""
        made: list[int] = []
        functions = self.functions
        for k, proto in enumerate(g.node):
            op, domain, name = proto.op_type, proto.domain, proto.name
            base = id_prefix + (name or f"{op}_{k}")
            if (
                functions
                and depth < _MAX_FUNCTION_DEPTH
                and (domain, op, getattr(proto, "overload", "")) in functions
            ):
                made.append(self.call(proto, base, parent, rename, depth))
            else:
                made.append(
                    self.leaf(proto, op, domain, name, base, parent, rename, depth, call_attrs)
                )
        return made

    def io(self, names: Any, rename: Rename) -> tuple[list[int], list[int]]:
        """Tensor positions of non-empty names, and the positions of omitted optional ones."""
        pos = self.pos
        if rename is _same and all(names):  # the common case, kept tight
            get = pos.get
            found = [get(name) for name in names]
            if None not in found:
                return found, _NONE  # type: ignore[return-value]
            made = [self.tensor(n) if t is None else t for n, t in zip(names, found, strict=True)]
            return made, _NONE
        refs: list[int] = []
        omitted: list[int] = []
        for k, name in enumerate(names):
            if not name:
                omitted.append(k)
                continue
            name = rename(name)
            t = pos.get(name)
            refs.append(t if t is not None else self.tensor(name))
        return refs, omitted

    def leaf(
        self,
        proto: onnx.NodeProto,
        op: str,
        domain: str,
        name: str,
        base: str,
        parent: str | None,
        rename: Rename,
        depth: int,
        call_attrs: dict[str, onnx.AttributeProto] | None,
    ) -> int:
        nid = self.unique_id(base)
        inputs, omitted_in = self.io(proto.input, rename)
        outputs, omitted_out = self.io(proto.output, rename)
        attributes: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        subgraphs: list[tuple[str, onnx.GraphProto]] = []
        if len(proto.attribute):
            attributes, extra, subgraphs = self.attributes(proto, op, domain, call_attrs)
        metadata = _node_metadata(proto, name, domain)
        if extra:
            metadata["attributes"] = expand_dotted_if_possible(extra)
        if omitted_in:
            metadata["omitted_inputs"] = omitted_in
        if omitted_out:
            metadata["omitted_outputs"] = omitted_out
        if parent is not None:
            metadata["parent_id"] = parent
        nodes = self.graph.nodes
        pos = len(nodes)
        nodes.append(Node(nid, op, inputs, outputs, attributes, metadata))
        if subgraphs:  # If / Loop / Scan: the bodies' nodes become this node's children
            children: list[str] = []
            for attr_name, sub in subgraphs:
                for vi in sub.input:
                    t = self.tensor(rename(vi.name), "input")
                    self.graph.tensors[t].metadata.setdefault("subgraph_of", nid)
                for init in sub.initializer:
                    self.weight(
                        rename(init.name),
                        init.dims,
                        init.data_type,
                        lazy_values(init, self.model_dir, self.file),
                        external_info(init),
                        init.doc_string,
                    )
                made = self.nodes(sub, nid, rename, depth, call_attrs)
                for i in made:
                    self.graph.nodes[i].metadata["subgraph"] = attr_name
                children.extend(self.graph.nodes[i].id for i in made)
                for out in sub.output:
                    self.tensor(rename(out.name))
            metadata["children_ids"] = children
        return pos

    def call(
        self, proto: onnx.NodeProto, base: str, parent: str | None, rename: Rename, depth: int
    ) -> int:
        """A call of a model-local function: a group whose children are the body's nodes."""
        fn = self.functions[(proto.domain, proto.op_type, getattr(proto, "overload", ""))]
        gid = self.unique_id(base)
        actual: dict[str, str] = {}
        for formal, name in zip(fn.input, proto.input, strict=False):
            if name:
                actual[formal] = rename(name)
        for formal, name in zip(fn.output, proto.output, strict=False):
            if name:
                actual[formal] = rename(name)
        prefix = gid + "/"

        def inner(name: str) -> str:
            return actual.get(name) or prefix + name

        defaults = {a.name: a for a in fn.attribute_proto}
        given = {a.name: a for a in proto.attribute}
        metadata = _node_metadata(proto, proto.name, proto.domain)
        metadata["function"] = {"domain": fn.domain, "name": fn.name}
        attrs = {a.name: attribute_value(a) for a in proto.attribute}
        if attrs:
            metadata["attributes"] = expand_dotted_if_possible(attrs)
        if parent is not None:
            metadata["parent_id"] = parent
        pos = len(self.graph.nodes)
        self.graph.nodes.append(Node(gid, proto.op_type, [], [], {}, metadata))
        # Formal outputs exist as tensors even when the body leaves one unproduced.
        for name in proto.output:
            if name:
                self.tensor(rename(name))
        made = self.nodes(fn, gid, inner, depth + 1, {**defaults, **given}, prefix)
        metadata["children_ids"] = [self.graph.nodes[i].id for i in made]
        return pos

    def attributes(
        self,
        proto: onnx.NodeProto,
        op: str,
        domain: str,
        call_attrs: dict[str, onnx.AttributeProto] | None,
    ) -> tuple[dict[str, Any], dict[str, Any], list[tuple[str, onnx.GraphProto]]]:
        """Schema attributes, the rest, and graph-valued attributes (subgraphs)."""
        allowed = schema_attributes(op) if domain in ("", "ai.onnx") else None
        schema: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        subgraphs: list[tuple[str, onnx.GraphProto]] = []
        for attr in proto.attribute:
            if attr.ref_attr_name:
                if call_attrs is None or attr.ref_attr_name not in call_attrs:
                    continue  # an optional attribute the call did not set
                ref = call_attrs[attr.ref_attr_name]
                attr = onnx.AttributeProto()
                attr.CopyFrom(ref)
                attr.name = attr.name or ref.name
            if attr.type == onnx.AttributeProto.GRAPH:
                subgraphs.append((attr.name, attr.g))
                value: Any = {"graph": attr.g.name or attr.name}
            elif attr.type == onnx.AttributeProto.GRAPHS:
                subgraphs.extend((f"{attr.name}[{i}]", sg) for i, sg in enumerate(attr.graphs))
                value = [
                    {"graph": sg.name or f"{attr.name}[{i}]"} for i, sg in enumerate(attr.graphs)
                ]
            else:
                value = attribute_value(attr)
            if allowed is not None and attr.name in allowed:
                schema[attr.name] = value
            else:
                extra[attr.name] = value
        return schema, extra, subgraphs


def _same(name: str) -> str:
    return name


def _node_metadata(proto: onnx.NodeProto, name: str, domain: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {}
    if name:
        metadata["name"] = name
    if domain:
        metadata["domain"] = domain
    if proto.doc_string:
        metadata["doc_string"] = proto.doc_string
    props = getattr(proto, "metadata_props", ())
    if props:
        metadata["metadata_props"] = expand_dotted_if_possible({p.key: p.value for p in props})
    return metadata


def _graph_metadata(model: onnx.ModelProto) -> dict[str, Any]:
    """What the model says of itself: producer, IR version, opsets, props; nothing invented."""
    md: dict[str, Any] = {"ir_version": int(model.ir_version)}
    for key in ("producer_name", "producer_version", "domain", "doc_string"):
        value = getattr(model, key)
        if value:
            md[key] = value
    if model.model_version:
        md["model_version"] = int(model.model_version)
    # A list, not a dict keyed by domain: XOC JSON expands dotted keys ("ai.onnx").
    md["opset_import"] = [
        {"domain": op.domain or "ai.onnx", "version": int(op.version)} for op in model.opset_import
    ]
    if model.metadata_props:
        md["metadata_props"] = expand_dotted_if_possible(
            {p.key: p.value for p in model.metadata_props}
        )
    if model.graph.doc_string:
        md["graph_doc_string"] = model.graph.doc_string
    if model.functions:
        md["functions"] = [f"{f.domain}.{f.name}" if f.domain else f.name for f in model.functions]
    return md
