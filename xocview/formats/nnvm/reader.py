"""NNVM graph JSON (specs/nnvm-graph-json.rst): MXNet symbol files of every era and TVM graphs.

One reader covers the three generations of the format: MXNet 0.8 (``param`` and ``attr`` per
node, two-element entries, no ``node_row_ptr``), MXNet 0.11 to 1.x (``attr`` or ``attrs``,
``[node, index, version]`` entries, ``node_row_ptr``) and TVM graph-runtime JSON (``tvm_op``
nodes, per-entry ``shape``/``dltype``/``storage_id`` lists in the graph ``attrs``). This module
checks the document and reports the first fault with its JSON path; ``build`` turns the
checked document into the shared model.
"""

from __future__ import annotations

from typing import Any

from xocview.errors import FormatError
from xocview.formats.attr_text import parse_attrs
from xocview.formats.json_types import json_type
from xocview.formats.nnvm.build import Document, Entry, RawNode, build
from xocview.formats.source import Source
from xocview.formats.unread_keys import unread_keys
from xocview.model import Finding, Graph
from xocview.model.gc_pause import gc_paused

__all__ = ["EXTENSIONS", "MAX_OUTPUTS", "NAME", "load", "read_findings", "sniff"]

NAME = "NNVM JSON"
EXTENSIONS = (".json",)
EXPANDS_DOTTED_KEYS = True  # build expands attribute keys itself

MAX_OUTPUTS = 4096  # outputs of one node; real ops have a few (BatchNorm 3, SliceChannel n)
_SNIFF_NODES = 8  # nodes looked at by sniff: enough to tell, cheap on 100k-node graphs
_SCALAR = (str, int, float, bool)


def sniff(source: Source) -> str | None:
    """None when the file is NNVM graph JSON, else why not.

    XOC JSON also has ``nodes`` but keeps its values in ``tensors`` and names ops ``name``;
    LightNet has ``ops``. NNVM is told by nodes with an ``op`` and by ``heads``/``arg_nodes``.
    """
    if not source.looks_like_json():
        return "not a JSON object"
    root = source.json
    if not isinstance(root, dict):
        return "the JSON root is not an object"
    if "tensors" in root:
        return "has a 'tensors' list (XOC JSON), which NNVM graphs do not"
    nodes = root.get("nodes")
    if not isinstance(nodes, list):
        return "no 'nodes' list at the root"
    if "heads" not in root and "arg_nodes" not in root:
        return "no 'heads' or 'arg_nodes' at the root"
    for node in nodes[:_SNIFF_NODES]:
        if not isinstance(node, dict) or not isinstance(node.get("op"), str):
            return "the nodes have no 'op' names"
    return None


def load(source: Source) -> Graph:
    """The graph in an NNVM JSON file; FormatError names the first fault and its JSON path."""
    return read_findings(source)[0]


def read_findings(source: Source) -> tuple[Graph, list[Finding]]:
    """The graph and what ``xocview check`` should hear about it (renamed duplicate names).

    Structural faults are not collected: they stop the load with a FormatError, since an NNVM
    file with a broken entry cannot be linked at all.
    """
    with gc_paused():
        root = source.json
        doc = _Checker(source.name).document(root)
        graph, found = build(doc, source.name, _graph_name(source))
    return graph, _unread(root) + found


_ROOT_KEYS = frozenset({"nodes", "arg_nodes", "node_row_ptr", "heads", "attrs"})
_NODE_KEYS = frozenset(
    {"op", "name", "inputs", "attrs", "attr", "param", "control_deps", "backward_source_id"}
)


def _unread(root: dict[str, Any]) -> list[Finding]:
    """A warning for each key of the root and of the nodes that reading passes over."""
    found = [
        Finding("warning", place, "unknown root key, ignored")
        for place in unread_keys([("", root)], _ROOT_KEYS)
    ]
    nodes = ((f"nodes[{i}]", nd) for i, nd in enumerate(root["nodes"]))
    found += [
        Finding("warning", place, "unknown node key, ignored")
        for place in unread_keys(nodes, _NODE_KEYS)
    ]
    return found


def _graph_name(source: Source) -> str:
    """MXNet saves ``<prefix>-symbol.json``; the prefix is the model's name."""
    stem = source.path.stem
    return stem.removesuffix("-symbol") or stem


class _Checker:
    """Checks every field the model needs and gives a Document of plain Python values."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, place: str, problem: str, expected: str | None = None) -> FormatError:
        return FormatError(self.file, place, problem, expected)

    def document(self, root: Any) -> Document:
        if not isinstance(root, dict):
            raise self.fail(
                "root", f"is {json_type(root)}", "a JSON object with 'nodes' and 'heads'"
            )
        raw_nodes = self.array(root, "nodes", "nodes", "an array of node objects")
        if not raw_nodes:
            raise self.fail("nodes", "the graph is empty (no nodes)", "at least one node")
        nodes = [self.node(nd, i, len(raw_nodes)) for i, nd in enumerate(raw_nodes)]
        counts = self.output_counts(root, nodes)
        for i, nd in enumerate(nodes):
            for k, e in enumerate(nd.inputs):
                self.output_exists(e, f"nodes[{i}].inputs[{k}]", nodes, counts)
        heads_raw = self.array(root, "heads", "heads", "an array of output entries")
        if not heads_raw:
            raise self.fail("heads", "is empty (the graph has no outputs)", "at least one entry")
        heads = [self.entry(e, f"heads[{k}]", len(nodes), None) for k, e in enumerate(heads_raw)]
        for k, e in enumerate(heads):
            self.output_exists(e, f"heads[{k}]", nodes, counts)
        self.arg_nodes(root, nodes)
        attrs = root.get("attrs", {})
        if not isinstance(attrs, dict):
            raise self.fail("attrs", f"is {json_type(attrs)}", "an object of graph attributes")
        return Document(nodes, heads, counts, attrs)

    def array(self, obj: dict[str, Any], key: str, place: str, expected: str) -> list[Any]:
        value = obj.get(key)
        if type(value) is list:
            return value
        raise self.fail(place, "missing" if key not in obj else f"is {json_type(value)}", expected)

    # -- nodes ---------------------------------------------------------------------------------

    def node(self, nd: Any, i: int, n: int) -> RawNode:
        place = f"nodes[{i}]"
        if not isinstance(nd, dict):
            raise self.fail(
                place, f"is {json_type(nd)}", "a node object with 'op', 'name', 'inputs'"
            )
        op, name = self.string(nd, "op", place), self.string(nd, "name", place)
        raw_inputs = self.array(nd, "inputs", f"{place}.inputs", "an array of input entries")
        inputs = [self.entry(e, f"{place}.inputs[{k}]", n, i) for k, e in enumerate(raw_inputs)]
        if op == "null" and inputs:
            raise self.fail(
                f"{place}.inputs",
                f"the variable '{name}' (op 'null') has {len(inputs)} inputs",
                "no inputs on a 'null' node",
            )
        user: dict[str, Any] = {}
        if "param" in nd:  # MXNet 0.8: "param" holds the op's parameters, "attr" the user's
            attrs = self.attrs(nd, "param", place)
            user = self.attrs(nd, "attr", place)
        else:  # later MXNet and NNVM: one dict, named "attr" (0.11/0.12) or "attrs"
            attrs = {**self.attrs(nd, "attr", place), **self.attrs(nd, "attrs", place)}
        deps = nd.get("control_deps", [])
        if type(deps) is not list or not all(type(d) is int and 0 <= d < n for d in deps):
            raise self.fail(
                f"{place}.control_deps",
                f"is {json_type(deps)}" if type(deps) is not list else "has a bad node index",
                f"an array of node indices below {n}",
            )
        backward = nd.get("backward_source_id", -1)
        if type(backward) is not int:
            raise self.fail(
                f"{place}.backward_source_id",
                f"is {json_type(backward)}",
                "an integer (node index)",
            )
        return RawNode(op, name, inputs, parse_attrs(attrs), parse_attrs(user), deps, backward)

    def string(self, nd: dict[str, Any], key: str, place: str) -> str:
        value = nd.get(key)
        if type(value) is str:
            return value
        problem = "missing" if key not in nd else f"is {json_type(value)}"
        raise self.fail(f"{place}.{key}", problem, "a string")

    def attrs(self, nd: dict[str, Any], key: str, place: str) -> dict[str, Any]:
        value = nd.get(key)
        if value is None and key not in nd:
            return {}
        if type(value) is not dict:
            raise self.fail(f"{place}.{key}", f"is {json_type(value)}", "an object of strings")
        for k, v in value.items():
            if not isinstance(v, _SCALAR):
                raise self.fail(
                    f"{place}.{key}.{k}",
                    f"is {json_type(v)}",
                    "a string (NNVM writes every attribute value as a string)",
                )
        return value

    def entry(self, e: Any, place: str, n: int, before: int | None) -> Entry:
        """``[node, index]`` or ``[node, index, version]``; inputs name earlier nodes only."""
        if (
            type(e) is not list
            or len(e) not in (2, 3)
            or not all(type(v) is int and v >= 0 for v in e)
        ):
            raise self.fail(
                place,
                f"is {json_type(e)}" if type(e) is not list else f"is {_short(e)}",
                "an entry [node, index] or [node, index, version] of non-negative integers",
            )
        node = e[0]
        if node >= n:
            raise self.fail(place, f"node index {node} out of range ({n} nodes)")
        if before is not None and node >= before:
            raise self.fail(
                place,
                f"refers to node {node}, which does not come before node {before}",
                "inputs from earlier nodes (NNVM lists nodes in topological order)",
            )
        return Entry(node, e[1], e[2] if len(e) == 3 else 0)

    # -- outputs -------------------------------------------------------------------------------

    def output_counts(self, root: dict[str, Any], nodes: list[RawNode]) -> list[int]:
        """Outputs of each node: from ``node_row_ptr``, else from what refers to them."""
        if "node_row_ptr" not in root:
            return self.bounded(_counts_from_uses(root, nodes), "nodes", nodes)
        ptr = self.array(root, "node_row_ptr", "node_row_ptr", "an array of integers")
        if len(ptr) != len(nodes) + 1:
            raise self.fail(
                "node_row_ptr",
                f"has {len(ptr)} items for {len(nodes)} nodes",
                f"{len(nodes) + 1} (one offset per node and the total)",
            )
        if not all(type(p) is int for p in ptr) or ptr[0] != 0:
            raise self.fail("node_row_ptr", "is not integers starting at 0", "0, then offsets")
        counts = [ptr[i + 1] - ptr[i] for i in range(len(nodes))]
        for i, c in enumerate(counts):
            if c < 1 or (c != 1 and nodes[i].op == "null"):
                raise self.fail(
                    f"node_row_ptr[{i + 1}]",
                    f"gives node {i} '{nodes[i].name}' {c} outputs",
                    "one output per variable, at least one per operator",
                )
        return self.bounded(counts, "node_row_ptr", nodes)

    def bounded(self, counts: list[int], place: str, nodes: list[RawNode]) -> list[int]:
        """``counts``, unless they are more than any real graph has.

        Each output becomes a tensor, so a few bytes (``[3, 999999999]``, a huge
        ``num_outputs``) must not make the loader allocate a billion of them.
        """
        for i, c in enumerate(counts):
            if c > MAX_OUTPUTS:
                raise self.fail(
                    f"{place}[{i + 1}]" if place == "node_row_ptr" else f"{place}[{i}]",
                    f"gives node {i} '{nodes[i].name}' {c} outputs",
                    f"at most {MAX_OUTPUTS} outputs per node",
                )
        total, limit = sum(counts), MAX_OUTPUTS + 16 * len(counts)
        if total > limit:
            raise self.fail(
                place, f"gives {total} outputs to {len(counts)} nodes", f"at most {limit}"
            )
        return counts

    def output_exists(self, e: Entry, place: str, nodes: list[RawNode], counts: list[int]) -> None:
        if e.index >= counts[e.node]:
            raise self.fail(
                place,
                f"output {e.index} of node {e.node} '{nodes[e.node].name}' does not exist "
                f"({counts[e.node]} outputs)",
                "an output index below the node's output count",
            )

    def arg_nodes(self, root: dict[str, Any], nodes: list[RawNode]) -> None:
        """Checked, not used: the variables are the 'null' nodes themselves."""
        if "arg_nodes" not in root:
            return
        args = self.array(root, "arg_nodes", "arg_nodes", "an array of node indices")
        for k, a in enumerate(args):
            if type(a) is not int or not 0 <= a < len(nodes):
                raise self.fail(
                    f"arg_nodes[{k}]",
                    f"is {_short(a)}",
                    f"the index of a 'null' node (0 to {len(nodes) - 1})",
                )
            if nodes[a].op != "null":
                raise self.fail(
                    f"arg_nodes[{k}]",
                    f"node {a} '{nodes[a].name}' is an operator ('{nodes[a].op}')",
                    "the index of a 'null' node (a variable)",
                )


def _counts_from_uses(root: dict[str, Any], nodes: list[RawNode]) -> list[int]:
    """Output counts of an MXNet 0.8 file, which has no ``node_row_ptr``.

    A node has as many outputs as anything reads, or as its ``num_outputs`` declares
    (SliceChannel); a variable always has one.
    """
    counts = [1] * len(nodes)
    heads = root.get("heads")
    used = (
        [(e[0], e[1]) for e in heads if _index_pair(e, len(nodes))] if type(heads) is list else []
    )
    used += [(e.node, e.index) for nd in nodes for e in nd.inputs]
    for node, index in used:
        if index >= counts[node] and nodes[node].op != "null":
            counts[node] = index + 1
    for i, nd in enumerate(nodes):
        declared = nd.attrs.get("num_outputs")
        if nd.op != "null" and type(declared) is int and declared > counts[i]:
            counts[i] = declared
    return counts


def _index_pair(e: Any, n: int) -> bool:
    """A well-formed enough head entry to count outputs by; the full check comes later."""
    return (
        type(e) is list
        and len(e) >= 2
        and type(e[0]) is int
        and type(e[1]) is int
        and 0 <= e[0] < n
        and e[1] >= 0
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
