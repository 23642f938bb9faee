"""A parsed ONNX ModelProto walked once into the shared model.

Tensors are numbered by name, nodes given unique ids, and function calls and If/Loop/Scan
bodies made groups of their nodes; ``reader`` describes the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import onnx

from xocview.formats.onnx.attrs import GRAPH_TYPES, attribute_value, node_attributes
from xocview.formats.onnx.expansion import KEPT_KEY, keep_functions, plan
from xocview.formats.onnx.meta import (
    graph_metadata,
    more_metadata,
    node_metadata,
    sidecar,
    torch_scopes,
)
from xocview.formats.onnx.scope_adoption import adopt_loose_nodes
from xocview.formats.onnx.sidecar import restore
from xocview.formats.onnx.text import NotText, text
from xocview.formats.onnx.types import TypeTable, dtype_name
from xocview.formats.onnx.weights import (
    external_info,
    external_numbers,
    inline_values,
    lazy_values,
    sparse_values,
    weight_place,
)
from xocview.formats.source import Source
from xocview.model import Graph, Node, Tensor
from xocview.model.dotted import (
    expand_dotted_if_possible,
)
from xocview.model.scopes import add_named_scope_groups

__all__ = ["Builder"]

_EXTERNAL = onnx.TensorProto.EXTERNAL

Rename = Callable[[str], str]
_NO_SUBGRAPHS: list[tuple[str, onnx.GraphProto]] = []  # never mutated either


class Builder:
    """Walks a ModelProto once, numbering tensors by name and giving nodes unique ids.

    Tensors are numbered while the nodes are read and made in one pass at the end, when every
    name's kind is known and shape inference has run: ``pos`` numbers names in order of first
    mention (so its key order is the tensor order), ``kinds`` holds the kinds other than
    ``activation`` and ``weights`` what initializers bring.
    """

    def __init__(self, source: Source, model: onnx.ModelProto) -> None:
        self.file = source.name
        self.model_dir = source.path.parent
        self.folder = (self.model_dir, self.file)  # what attribute tensors are read against
        self.model = model
        g = model.graph
        title = text(g.name) or source.path.stem
        self.kept = sidecar(model)  # metadata xocview wrote for what ONNX has no field for
        self.graph = Graph(title, title, metadata=graph_metadata(model, self.kept is not None))
        self.data = source.data
        self.has_subgraphs = False  # any graph-valued attribute met: value_info to look into
        self.pos: dict[str, int] = {}
        self.kinds: dict[int, str] = {}
        self.weights: dict[int, Tensor] = {}
        self.subgraph_of: dict[int, str] = {}
        self.node_ids: set[str] = set()
        self._next_suffix: dict[str, int] = {}  # where the search for a free ``name_k`` resumes
        self.top: list[int] = []  # positions of the graph's own nodes, in file order
        # Positions of top-level operators named by scope ("/a/b/Op"), by name prefix ("/a/b").
        self.scoped: dict[str, list[int]] = {}
        self.functions = {
            (f.domain, f.name, getattr(f, "overload", "")): f for f in model.functions
        }
        # How deep calls are expanded, counted before expanding any (a 2 KB file of functions
        # each calling the next twice stands for 2^30 nodes).
        self.plan = plan(model)
        if self.plan.notes:
            self.graph.metadata["reader_notes"] = list(self.plan.notes)
        if self.plan.kept:  # a saved file needs them: no expanded call rebuilds them
            self.graph.metadata[KEPT_KEY] = keep_functions(model, self.plan.kept)

    def build(self) -> Graph:
        g, graph = self.model.graph, self.graph
        self.initializers(g.initializer, _same)
        for sp in g.sparse_initializer:
            self.sparse_weight(sp)
        for name in [vi.name for vi in g.input]:
            if name not in self.pos:
                graph.inputs.append(self.tensor(name, "input"))
        self.top = self.nodes(g, None, _same, 0)
        for name in [vi.name for vi in g.output]:
            t = self.tensor(name)
            self.kinds.setdefault(t, "output")
            graph.outputs.append(t)
        _all_text(self.pos, graph.nodes)
        types = TypeTable(self.model, self.data, nested=self.has_subgraphs, infer=self.plan.infer)
        graph.tensors.extend(self.make_tensors(types))
        if self.scoped:
            adopt_loose_nodes(self.graph, self.top, self.scoped)
        add_named_scope_groups(graph, self.scoped, taken=self.node_ids)
        if self.kept is not None:
            restore(graph, self.kept)
        graph.invalidate()
        return graph

    # -- tensors -------------------------------------------------------------------------------

    def tensor(self, name: str, kind: str = "activation") -> int:
        """The position of ``name``, numbering it (as ``kind``) when it is new."""
        pos = self.pos
        t = pos.get(name)
        if t is None:
            t = pos[name] = len(pos)
            if kind != "activation":
                self.kinds[t] = kind
        return t

    def initializers(self, inits: Iterable[onnx.TensorProto], rename: Rename) -> None:
        """Weights; a name already known (a subgraph's shadowing one) keeps the first.

        Raises FormatError for an unsafe external location, even on a shadowing initializer.
        """
        pos, kinds, weights = self.pos, self.kinds, self.weights
        for init in inits:
            name = init.name if rename is _same else rename(init.name)
            metadata: dict[str, Any] = {}
            if init.data_location == _EXTERNAL:
                external = external_info(init) or {}
                data = lazy_values(init, self.model_dir, self.file, external)
                offset, length = external_numbers(external, self.file, weight_place(init.name))
                metadata["external_data"] = {
                    k: (offset if k == "offset" else length) if k in ("offset", "length") else v
                    for k, v in external.items()
                }
            else:
                data = inline_values(init, self.file)
            if name in pos:
                continue
            doc = init.doc_string
            if doc:
                metadata["doc_string"] = text(doc)
            t = pos[name] = len(pos)
            kinds[t] = "weight"
            dtype = dtype_name(init.data_type)
            weights[t] = Tensor(name, "weight", init.dims[:], dtype, metadata, data)

    def sparse_weight(self, sp: onnx.SparseTensorProto) -> None:
        values = sp.values
        name = values.name
        if name not in self.pos:
            t = self.tensor(name, "weight")
            dtype = dtype_name(values.data_type)
            self.weights[t] = Tensor(
                name, "weight", sp.dims[:], dtype, {}, sparse_values(sp, self.model_dir, self.file)
            )

    def make_tensors(self, types: TypeTable) -> list[Tensor]:
        """Every tensor, in the order of first mention, typed by value_info and inference."""
        make, kinds, weights = types.tensor, self.kinds, self.weights
        tensors: list[Tensor] = []
        for t, name in enumerate(self.pos):
            w = weights.get(t)
            tensors.append(make(name, kinds.get(t, "activation")) if w is None else w)
        for t, nid in self.subgraph_of.items():
            tensors[t].metadata.setdefault("subgraph_of", nid)
        return tensors

    # -- nodes ---------------------------------------------------------------------------------

    def unique_id(self, wanted: str) -> str:
        ids = self.node_ids
        if wanted not in ids:
            ids.add(wanted)
            return wanted
        # Unnamed nodes all want their op type: resuming the search where it last ended keeps
        # this linear (ids only grow, so every suffix tried before is still taken).
        k = self._next_suffix.get(wanted, 2)
        while f"{wanted}_{k}" in ids:
            k += 1
        self._next_suffix[wanted] = k + 1
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
        inputs: list[int]
        outputs: list[int]
        functions = self.functions if depth < self.plan.depth else {}
        ids, nodes, pos, get = self.node_ids, self.graph.nodes, self.pos, self.pos.get
        plain = rename is _same  # nothing renamed: tensors are looked up inline
        for k, proto in enumerate(g.node):
            op, domain, name = proto.op_type, proto.domain, proto.name
            nid = id_prefix + (name or f"{op}_{k}")
            if functions and (domain, op, getattr(proto, "overload", "")) in functions:
                made.append(self.call(proto, nid, parent, rename, depth))
                continue
            if nid in ids:
                nid = self.unique_id(nid)
            else:
                ids.add(nid)
            made.append(len(nodes))
            ins, outs = proto.input[:], proto.output[:]
            metadata: dict[str, Any] = {"name": name} if name else {}
            if domain:
                if domain.__class__ is not str:
                    raise NotText
                metadata["domain"] = domain
            if proto.doc_string or getattr(proto, "metadata_props", None):
                more_metadata(proto, metadata)
            if not functions and self.functions:
                self.not_expanded(proto, metadata)
            if not plain or "" in ins or "" in outs:
                self.leaf(proto, nid, ins, outs, metadata, parent, rename, depth, call_attrs)
                continue
            # The common case, kept tight: nothing renamed or omitted (``leaf`` does the rest).
            inputs = []
            for n in ins:
                t = get(n)
                if t is None:
                    t = pos[n] = len(pos)
                inputs.append(t)
            outputs = []
            for n in outs:
                t = get(n)
                if t is None:
                    t = pos[n] = len(pos)
                outputs.append(t)
            attributes: dict[str, Any] = {}
            subgraphs = _NO_SUBGRAPHS
            if proto.attribute:
                attributes, subgraphs, graphs = node_attributes(
                    proto, op, domain, metadata, call_attrs, self.folder
                )
                self.has_subgraphs |= graphs
            if parent is not None:
                metadata["parent_id"] = parent
            else:
                scoped = name if "/" in name else torch_scopes(proto)
                if scoped and not subgraphs:
                    self.scope_member(scoped, len(nodes))
            node = Node(nid, op, inputs, outputs, attributes, metadata)
            nodes.append(node)
            if subgraphs:  # If / Loop / Scan: the bodies' nodes become this node's children
                # A body a call gave (ref_attr_name) is the caller's graph: no refs resolve in it.
                refs = {a.name for a in proto.attribute if a.ref_attr_name} if call_attrs else set()
                metadata["children_ids"] = self.bodies(
                    node, subgraphs, rename, depth, call_attrs, refs
                )
        return made

    def not_expanded(self, proto: onnx.NodeProto, metadata: dict[str, Any]) -> None:
        """Mark a call the plan left unexpanded (too deep) with the function it calls."""
        fn = self.functions.get((proto.domain, proto.op_type, getattr(proto, "overload", "")))
        if fn is not None:
            metadata["function"] = {"domain": text(fn.domain), "name": text(fn.name)}
            metadata["not_expanded"] = True

    def scope_member(self, name: str, position: int) -> None:
        """Note a top-level operator named by scope (``/a/b/Op``) under its prefix (``/a/b``)."""
        prefix = name.rpartition("/")[0]
        members = self.scoped.get(prefix)
        if members is None:
            self.scoped[prefix] = [position]
        else:
            members.append(position)

    def io(self, names: list[str], rename: Rename) -> tuple[list[int], list[int]]:
        """Tensor positions of non-empty names, and the positions of omitted optional ones."""
        refs: list[int] = []
        omitted: list[int] = []
        for k, name in enumerate(names):
            if name:
                refs.append(self.tensor(rename(name)))
            else:
                omitted.append(k)
        return refs, omitted

    def leaf(
        self,
        proto: onnx.NodeProto,
        nid: str,
        ins: list[str],
        outs: list[str],
        metadata: dict[str, Any],
        parent: str | None,
        rename: Rename,
        depth: int,
        call_attrs: dict[str, onnx.AttributeProto] | None,
    ) -> None:
        """Add an operator node: its tensors, attributes and (If, Loop, Scan) bodies."""
        inputs, omitted_in = self.io(ins, rename)
        outputs, omitted_out = self.io(outs, rename)
        op = proto.op_type
        attributes: dict[str, Any] = {}
        subgraphs = _NO_SUBGRAPHS
        if proto.attribute:
            domain = metadata.get("domain", "")
            attributes, subgraphs, graphs = node_attributes(
                proto, op, domain, metadata, call_attrs, self.folder
            )
            self.has_subgraphs |= graphs
        if omitted_in:
            metadata["omitted_inputs"] = omitted_in
        if omitted_out:
            metadata["omitted_outputs"] = omitted_out
        if parent is not None:
            metadata["parent_id"] = parent
        elif not subgraphs:
            name = str(metadata.get("name", ""))
            scoped = name if "/" in name else torch_scopes(proto)
            if scoped:
                self.scope_member(scoped, len(self.graph.nodes))
        node = Node(nid, op, inputs, outputs, attributes, metadata)
        self.graph.nodes.append(node)
        if subgraphs:  # the bodies' nodes become this node's children
            # A body a call gave (ref_attr_name) is the caller's graph: no refs resolve in it.
            refs = {a.name for a in proto.attribute if a.ref_attr_name} if call_attrs else set()
            metadata["children_ids"] = self.bodies(node, subgraphs, rename, depth, call_attrs, refs)

    def bodies(
        self,
        holder: Node,
        subgraphs: list[tuple[str, onnx.GraphProto]],
        rename: Rename,
        depth: int,
        call_attrs: dict[str, onnx.AttributeProto] | None,
        refs: set[str] | frozenset[str] = frozenset(),
    ) -> list[str]:
        """Add the nodes of an If/Loop/Scan node's bodies; returns their ids. ``refs``: the
        attributes whose body came from the call (walked without ``call_attrs``: a body
        referring to itself would otherwise be walked for ever).

        Each graph attribute's value ({"graph": name}) gets the body's formal ``inputs`` and
        ``outputs`` (tensor ids, in order): what binds a run's values to the body.
        """
        nid = holder.id
        children: list[str] = []
        nodes = self.graph.nodes
        for attr_name, sub in subgraphs:
            formal_in = [rename(vi.name) for vi in sub.input]
            for name in formal_in:
                self.subgraph_of.setdefault(self.tensor(name, "input"), nid)
            self.initializers(sub.initializer, rename)
            inner = None if attr_name.partition("[")[0] in refs else call_attrs
            made = self.nodes(sub, nid, rename, depth, inner)
            for i in made:
                nodes[i].metadata["subgraph"] = attr_name
            children.extend(nodes[i].id for i in made)
            formal_out = [rename(out.name) for out in sub.output]
            for name in formal_out:
                self.tensor(name)
            value = _graph_value(holder, attr_name)
            if value is not None:
                value["inputs"], value["outputs"] = formal_in, formal_out
        return children

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
        if any(a.type in GRAPH_TYPES for a in given.values()):
            self.has_subgraphs = True
        metadata = node_metadata(proto, proto.name, proto.domain)
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


def _same(name: str) -> str:
    return name


def _all_text(names: Iterable[str], nodes: list[Node]) -> None:
    """Raise NotText when a tensor name or op type came out of protobuf as bytes.

    Joining is a C loop that fails on the first bytes item, far cheaper than a test per name.
    """
    try:
        "".join(names)
        "".join([n.op_type for n in nodes])
    except TypeError as e:
        raise NotText from e


def _graph_value(node: Node, attr_name: str) -> dict[str, Any] | None:
    """The ``{"graph": name}`` value of a graph attribute (``name[i]`` for one of a GRAPHS
    list), among the schema attributes or the source's others in metadata."""
    base, _, index = attr_name.partition("[")
    for table in (node.attributes, node.metadata.get("attributes")):
        if isinstance(table, dict) and base in table:
            value = table[base]
            if index and isinstance(value, list):
                value = value[int(index.rstrip("]"))]
            return value if isinstance(value, dict) else None
    return None
