"""XOC JSON, the project's exchange format (specs/xoc-json-format.zh.md): read, check, write.

Reading accepts the spec's form and the variants another XOC tool writes (the root wrapped in
``{"graph": {...}}``, ``operators`` instead of ``nodes``); writing always gives the spec's form.
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path
from typing import Any

from xocview.errors import FormatError, shorten
from xocview.formats.atomic import write_text_atomic
from xocview.formats.json_types import json_type
from xocview.formats.source import Source
from xocview.formats.unread_keys import unread_keys
from xocview.formats.xoc.writer import dumps, values_note
from xocview.model import Finding, Graph, Node, Tensor
from xocview.model.dotted import (
    MAX_METADATA_DEPTH,
    DottedKeyConflict,
    expand_dotted,
    has_dotted_keys,
)
from xocview.model.dtypes import DTYPES, canonical_dtype
from xocview.model.gc_pause import gc_paused
from xocview.model.graph import TENSOR_KINDS

__all__ = [
    "EXTENSIONS",
    "NAME",
    "dumps",
    "load",
    "read_findings",
    "save",
    "sniff",
    "validation_place",
]

NAME = "XOC JSON"
EXTENSIONS = (".json", ".xoc")
EXPANDS_DOTTED_KEYS = True  # the reader expands them itself

_KINDS = frozenset(TENSOR_KINDS)
_MAX_DIM = 2**63 - 1  # a dimension is an int64 everywhere (ONNX, numpy)
_ROOT_KEYS = frozenset({"id", "name", "tensors", "nodes", "inputs", "outputs", "metadata"})
_TENSOR_KEYS = frozenset({"id", "name", "shape", "dtype", "metadata"})
_NODE_KEYS = frozenset({"id", "name", "inputs", "outputs", "attributes", "metadata"})
# Root keys read as nothing, and why (``check`` says so for each).
_IGNORED_ROOT = {
    "edges": "ignored: edges are the nodes' inputs and outputs",
    "operators": "ignored beside 'nodes', which is read (a graph has one node list)",
}


def sniff(source: Source) -> str | None:
    """None when the file is XOC JSON, else why not."""
    if not source.looks_like_json():
        return "not a JSON object"
    doc = source.json
    root, _ = _unwrap(doc)
    if not isinstance(root, dict):
        return "the JSON root is not an object"
    if "tensors" not in root:
        return "no 'tensors' list at the root"
    if "nodes" not in root and "operators" not in root:
        return "no 'nodes' (or 'operators') list at the root"
    return None


def load(source: Source) -> Graph:
    """The graph in an XOC JSON file; FormatError names the first fault and its place."""
    with gc_paused():
        return _Reader(source.name, None).graph(source.json)


def read_findings(source: Source) -> tuple[Graph, list[Finding]]:
    """Every structural fault of the file (not only the first) and the graph built around them.

    What ``check`` uses: a missing field gets a placeholder and an out-of-range index is
    dropped, so that the model-level validation can still run on the rest.
    """
    found: list[Finding] = []
    with gc_paused():
        graph = _Reader(source.name, found).graph(source.json)
    return graph, found


def validation_place(source: Source) -> str:
    """Where the graph sits in the file: ``graph.`` for ``{"graph": {...}}``, else ''."""
    return _unwrap(source.json)[1]


def save(graph: Graph, path: str | Path) -> list[str]:
    """Write ``graph`` as canonical XOC JSON, atomically (a failed save keeps the old file).
    Returns notes of what the file could not keep (weight values: XOC JSON has no field).

    Raises FormatError when the folder cannot be written or a metadata value has no JSON form.
    """
    try:
        text = dumps(graph)
    except (TypeError, ValueError) as e:
        raise FormatError(str(path), "", f"cannot save: {e}", "JSON values in metadata") from e
    write_text_atomic(Path(path), text)
    note = values_note(graph)
    return [] if note is None else [note]


def _unwrap(doc: Any) -> tuple[Any, str]:
    if isinstance(doc, dict) and "graph" in doc and "tensors" not in doc:
        return doc["graph"], "graph."
    return doc, ""


class _Reader:
    """Turns a parsed document into a Graph; ``found`` None means stop at the first fault."""

    def __init__(self, file: str, found: list[Finding] | None) -> None:
        self.file = file
        self.found = found

    def warn(self, place: str, problem: str) -> None:
        """A finding for ``check`` only: something read past or kept as it is."""
        if self.found is not None:
            self.found.append(Finding("warning", place, problem))

    def fail(self, place: str, problem: str, expected: str | None = None) -> None:
        if self.found is None:
            raise FormatError(self.file, place, problem, expected)
        self.found.append(
            Finding("error", place, problem + (f"; expected {expected}" if expected else ""))
        )

    # -- root ----------------------------------------------------------------------------------

    def graph(self, doc: Any) -> Graph:
        root, p = _unwrap(doc)
        if not isinstance(root, dict):
            self.fail(p.rstrip(".") or "root", f"is {json_type(root)}", "a JSON object")
            return Graph("", "")
        gid = self.string(root, "id", p + "id")
        name = self.string(root, "name", p + "name")
        node_key = "nodes" if "nodes" in root or "operators" not in root else "operators"
        raw_tensors = self.array(root, "tensors", p + "tensors")
        raw_nodes = self.array(root, node_key, p + node_key)
        tensors = self.tensors(raw_tensors, p + "tensors")
        nodes = self.nodes(raw_nodes, p + node_key, len(tensors))
        inputs = self.indices(self.array(root, "inputs", p + "inputs"), p + "inputs", len(tensors))
        outputs = self.indices(
            self.array(root, "outputs", p + "outputs"), p + "outputs", len(tensors)
        )
        metadata = self.metadata(root.get("metadata"), p + "metadata")
        if self.found is not None:
            self.unread(doc, root, p, node_key, raw_tensors, raw_nodes)
        return Graph(gid, name, tensors, nodes, inputs, outputs, metadata)

    def unread(
        self,
        doc: Any,
        root: dict[str, Any],
        p: str,
        node_key: str,
        raw_tensors: list[Any],
        raw_nodes: list[Any],
    ) -> None:
        """A warning for every key that reading passed over: beside ``graph`` in a wrapped
        file, at the root, in each tensor and in each node."""
        if p:
            for key in doc:
                if key != "graph":
                    self.warn(key, "ignored beside 'graph', which holds the graph")
        for key in root:
            if key not in _ROOT_KEYS and key != node_key:
                self.warn(p + key, _IGNORED_ROOT.get(key, "unknown root key, ignored"))
        for what, raw, known, kind in (
            ("tensors", raw_tensors, _TENSOR_KEYS, "tensor"),
            (node_key, raw_nodes, _NODE_KEYS, "node"),
        ):
            entries = ((f"{p}{what}[{i}]", item) for i, item in enumerate(raw))
            for place in unread_keys(entries, known):
                self.warn(place, f"unknown {kind} key, ignored")

    def string(self, obj: dict[str, Any], key: str, place: str) -> str:
        value = obj.get(key)
        if type(value) is str:
            return value
        if value is None and key not in obj:
            self.fail(place, "missing", "a string")
        else:
            self.fail(place, f"is {json_type(value)}", "a string")
        return "" if value is None else str(value)

    def array(self, obj: dict[str, Any], key: str, place: str) -> list[Any]:
        value = obj.get(key)
        if type(value) is list:
            return value
        self.fail(place, "missing" if key not in obj else f"is {json_type(value)}", "an array")
        return []

    def metadata(self, value: Any, place: str) -> dict[str, Any]:
        if value is None:
            return {}
        if type(value) is not dict:
            self.fail(place, f"is {json_type(value)}", "an object")
            return {}
        if value and has_dotted_keys(value):
            kept: list[str] = []
            try:
                value = expand_dotted(value, kept)
            except DottedKeyConflict as e:
                self.fail(f"{place}.{e.key}", str(e), "each dotted key to name its own place")
            for key in kept:
                parts = key.split(".")
                shown = ".".join(parts[:5]) + ("…" if len(parts) > 5 else "")
                self.warn(
                    f"{place}.{shown}",
                    f"a key of {key.count('.') + 1:,} dotted parts kept whole; metadata "
                    f"nests at most {MAX_METADATA_DEPTH} levels deep",
                )
        return value

    # -- tensors -------------------------------------------------------------------------------

    def tensors(self, raw: list[Any], place: str) -> list[Tensor]:
        out: list[Tensor] = []
        append = out.append
        for i, t in enumerate(raw):
            try:
                tid, kind, shape, dtype = t["id"], t["name"], t["shape"], t["dtype"]
                md = t.get("metadata")
                if (
                    type(tid) is str
                    and kind in _KINDS
                    and dtype in DTYPES
                    and md is None
                    and type(shape) is list
                    and all(type(d) is int and -1 <= d <= _MAX_DIM for d in shape)
                ):
                    append(Tensor(tid, kind, shape, dtype, {}))
                    continue
            except (TypeError, KeyError):
                pass
            append(self.tensor(t, f"{place}[{i}]"))
        return out

    def tensor(self, t: Any, place: str) -> Tensor:
        """The careful path: every field checked, faults located."""
        if type(t) is not dict:
            self.fail(place, f"is {json_type(t)}", "a tensor object")
            return Tensor(f"<{place}>", "activation", [], "float32")
        tid = self.string(t, "id", f"{place}.id")
        kind = self.string(t, "name", f"{place}.name")
        if kind not in _KINDS and "name" in t and type(t["name"]) is str:
            self.fail(
                f"{place}.name",
                f"unknown tensor kind '{kind}'",
                "input, output, weight or activation",
            )
        metadata = self.metadata(t.get("metadata"), f"{place}.metadata")
        shape = self.shape(t, place, metadata)
        dtype = self.string(t, "dtype", f"{place}.dtype")
        canon = canonical_dtype(dtype)
        if canon is None:
            if "dtype" in t and type(t["dtype"]) is str:
                self.fail(
                    f"{place}.dtype",
                    f"unknown dtype '{dtype}'",
                    "float32, float16, int32, int64, uint8, bool, string or an ONNX type name",
                )
        else:
            dtype = canon
        return Tensor(tid, kind, shape, dtype, metadata)

    def shape(self, t: dict[str, Any], place: str, metadata: dict[str, Any]) -> list[int]:
        """Integer dims; a symbolic dim (a string) becomes -1 and its name goes to metadata."""
        raw = t.get("shape")
        if type(raw) is not list:
            self.fail(
                f"{place}.shape",
                "missing" if "shape" not in t else f"is {json_type(raw)}",
                "an array of integers",
            )
            return []
        shape: list[int] = []
        symbols: list[str | None] = []
        for k, d in enumerate(raw):
            if type(d) is int and -1 <= d <= _MAX_DIM:
                shape.append(d)
                symbols.append(None)
            elif type(d) is str and d:
                shape.append(-1)
                symbols.append(d)
            else:
                self.fail(
                    f"{place}.shape[{k}]",
                    f"dimension {shorten(repr(d))} is not an integer from -1 to 2**63-1",
                    "an integer (-1 for an unknown size) or a symbol name",
                )
                shape.append(-1)
                symbols.append(None)
        if any(symbols):
            metadata.setdefault("shape_symbols", symbols)
        return shape

    # -- nodes ---------------------------------------------------------------------------------

    def nodes(self, raw: list[Any], place: str, n_tensors: int) -> list[Node]:
        out: list[Node] = []
        append = out.append
        for i, nd in enumerate(raw):
            try:
                nid, op, ins, outs, attrs = (
                    nd["id"],
                    nd["name"],
                    nd["inputs"],
                    nd["outputs"],
                    nd["attributes"],
                )
                md = nd.get("metadata")
                if (
                    type(nid) is str
                    and type(op) is str
                    and type(ins) is list
                    and type(outs) is list
                    and type(attrs) is dict
                    and (md is None or (type(md) is dict and not has_dotted_keys(md)))
                ):
                    append(Node(nid, op, ins, outs, attrs, {} if md is None else md))
                    continue
            except (TypeError, KeyError):
                pass
            append(self.node(nd, f"{place}[{i}]", n_tensors))
        self.check_links(out, place, n_tensors)
        return out

    def node(self, nd: Any, place: str, n_tensors: int) -> Node:
        if type(nd) is not dict:
            self.fail(place, f"is {json_type(nd)}", "a node object")
            return Node(f"<{place}>", "", [], [])
        nid = self.string(nd, "id", f"{place}.id")
        op = self.string(nd, "name", f"{place}.name")
        ins = self.array(nd, "inputs", f"{place}.inputs")
        outs = self.array(nd, "outputs", f"{place}.outputs")
        attrs = nd.get("attributes")
        if type(attrs) is not dict:
            self.fail(
                f"{place}.attributes",
                "missing" if "attributes" not in nd else f"is {json_type(attrs)}",
                "an object of ONNX attributes",
            )
            attrs = {}
        metadata = self.metadata(nd.get("metadata"), f"{place}.metadata")
        return Node(nid, op, ins, outs, attrs, metadata)

    def check_links(self, nodes: list[Node], place: str, n: int) -> None:
        """Every tensor index in range: one pass over all of them, located only on failure."""
        flat = chain.from_iterable(chain.from_iterable((nd.inputs, nd.outputs) for nd in nodes))
        if all(type(r) is int and 0 <= r < n for r in flat):
            return
        for i, nd in enumerate(nodes):
            nd.inputs = self.indices(nd.inputs, f"{place}[{i}].inputs", n)
            nd.outputs = self.indices(nd.outputs, f"{place}[{i}].outputs", n)

    def indices(self, refs: list[Any], place: str, n: int) -> list[int]:
        good: list[int] = []
        for k, r in enumerate(refs):
            if type(r) is int and 0 <= r < n:
                good.append(r)
            elif type(r) is int:
                self.fail(f"{place}[{k}]", f"tensor index {r} out of range ({n} tensors)")
            else:
                self.fail(f"{place}[{k}]", f"is {json_type(r)}", "a tensor index (integer)")
        return good
