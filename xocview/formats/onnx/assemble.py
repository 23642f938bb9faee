"""The shared model as an ONNX GraphProto with its functions: nodes, bodies, calls, types.

``nesting`` says where each node goes; this module builds the protos. Names: tensors keep
their ids in the main graph and in If/Loop/Scan bodies (which see the outer names); a
function's body gets local names (``in0``, ``out0`` for its parameters, its own values without
the call's ``CALL/`` prefix). A function is rebuilt from each call's body, with the attribute
values of that call, so that an edit inside a body is saved; calls whose bodies are the same
share one FunctionProto, and a call whose body differs gets a function of its own
(``Swish_2``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import onnx

from xocview.errors import FormatError
from xocview.formats.onnx.attr_protos import (
    AttributeProblem,
    attribute_proto,
    schema_of,
    schema_types,
)
from xocview.formats.onnx.nesting import TOP, Nesting, Scope
from xocview.formats.onnx.opsets import ONNX_DOMAINS, opset_domain
from xocview.formats.onnx.sidecar import NODE_FIELDS
from xocview.formats.onnx.value_protos import type_proto, value_info
from xocview.model.dotted import flatten_dotted

__all__ = ["Assembler", "prop_items"]

Namer = Callable[[int], str]
_NODE_METADATA_PROPS_IR = 10  # NodeProto.metadata_props came with IR version 10
# The metadata keys a written operator holds: whether its attributes are the op's, and whether
# the file holds its metadata_props.
_HELD = {
    (attributes, props): NODE_FIELDS
    - ({"attributes"} if not attributes else set())
    - ({"metadata_props"} if not props else set())
    for attributes in (False, True)
    for props in (False, True)
}


class Assembler:
    """Builds the main GraphProto (without initializers) and the model's functions.

    After ``main_graph(g)``: ``functions`` to add to the model, ``held`` (per written node, the
    metadata keys the file holds), ``unnamed`` (nodes named after their ids), ``inputs_added``
    (tensors read but made by nothing, declared as graph inputs), ``notes``, and
    ``value_infos``: every graph filled (the main one first, then each body as it was built;
    not those in functions) with the types of its inner values, which are not added yet: shape
    inference is to run without them (``stale_types``), and the graphs are at hand without
    walking the model.
    """

    def __init__(self, nest: Nesting, opsets: dict[str, int], ir_version: int) -> None:
        self.nest, self.graph, self.file = nest, nest.graph, nest.file
        self.opsets, self.ir_version = opsets, ir_version
        self.functions: list[onnx.FunctionProto] = []
        self._function_names: dict[bytes, str] = {}
        self._taken_functions: set[tuple[str, str]] = set()
        self.held: dict[int, frozenset[str]] = {}
        self.unnamed: list[str] = []
        self.inputs_added: list[int] = []
        self.notes: list[str] = []
        self.value_infos: list[tuple[onnx.GraphProto, list[onnx.ValueInfoProto]]] = []
        self._in_function = 0  # how many calls' bodies are being built around this point
        self._types: dict[tuple[str, str], dict[str, int]] = {}
        graph = self.graph
        self.weights = [t for t, x in enumerate(graph.tensors) if x.kind == "weight"]
        self._defined = set(graph.inputs) | set(self.weights) | nest.made

    # -- graphs ---------------------------------------------------------------------------------

    def main_graph(self, g: onnx.GraphProto) -> None:
        """Fill ``g``, the main graph: nodes, inputs and outputs (initializers are the
        caller's, who decides where their bytes go; value_info is in ``value_infos``)."""
        graph = self.graph
        inner: list[onnx.ValueInfoProto] = []
        self.value_infos.append((g, inner))
        g.name = graph.name
        doc = graph.metadata.get("graph_doc_string")
        if isinstance(doc, str):
            g.doc_string = doc
        tensors = graph.tensors
        name = self._tensor_id
        self.scope_nodes(TOP, name, g.node)
        for t in graph.inputs + self.inputs_added:
            g.input.append(self._typed(t, "graph input"))
        empty = [t for t in self.weights if not tensors[t].has_data]
        for t in empty:
            g.input.append(self._typed(t, "weight without values"))
        if empty:
            self.notes.append(
                f"{len(empty)} weight{'s' * (len(empty) != 1)} without values "
                f"({_listed([tensors[t].id for t in empty])}): written as graph inputs, "
                "to be fed at run time"
            )
        if self.ir_version < 4:  # IR 3 lists every initializer among the inputs as well
            g.input.extend(
                value_info(tensors[t].id, tensors[t]) for t in self.weights if t not in empty
            )
        g.output.extend(value_info(tensors[t].id, tensors[t]) for t in graph.outputs)
        shown = set(graph.inputs) | set(graph.outputs) | set(self.inputs_added)
        inner.extend(self._value_infos(TOP, shown, name))

    def _tensor_id(self, t: int) -> str:
        return self.graph.tensors[t].id

    def _typed(self, t: int, what: str) -> onnx.ValueInfoProto:
        tensor = self.graph.tensors[t]
        if type_proto(tensor) is None:
            raise FormatError(
                self.file,
                f"tensor '{tensor.id}'",
                f"the {what} has no known element type ({tensor.dtype})",
                "a dtype such as float32 (set it, e.g. xocview edit --dtype ID=float32)",
            )
        return value_info(tensor.id, tensor)

    def _value_infos(self, scope: Scope, shown: set[int], name: Namer) -> list[onnx.ValueInfoProto]:
        """Types of the values the scope's nodes make, where known, but its inputs/outputs."""
        out = []
        nodes, tensors = self.graph.nodes, self.graph.tensors
        for i in self.nest.members.get(scope, []):
            call = self.nest.role[i] == "call"
            made = self.nest.call_parameters(i)[1] if call else nodes[i].outputs
            for t in made:
                tp = type_proto(tensors[t]) if t not in shown else None
                if tp is not None:
                    shown.add(t)
                    out.append(value_info(name(t), tensors[t], tp))
        return out

    def _body(
        self, holder: int, label: str, value: dict[str, Any], name: Namer, g: onnx.GraphProto
    ) -> None:
        """Fill ``g``, one body of an If/Loop/Scan node, from the children marked so."""
        g.name = str(value.get("graph") or label)
        inner: list[onnx.ValueInfoProto] = []
        if not self._in_function:  # a function's bodies are copied: they keep theirs now
            self.value_infos.append((g, inner))
        formal_in = self._formal(holder, label, value, "inputs")
        formal_out = self._formal(holder, label, value, "outputs")
        tensors = self.graph.tensors
        for t in formal_in:
            value_info(name(t), tensors[t], vi=g.input.add())
        self.scope_nodes((holder, label), name, g.node)
        for t in formal_out:
            value_info(name(t), tensors[t], vi=g.output.add())
        inner.extend(self._value_infos((holder, label), set(formal_in + formal_out), name))
        if self._in_function:
            g.value_info.extend(inner)

    def _formal(self, holder: int, label: str, value: dict[str, Any], key: str) -> list[int]:
        ids = value.get(key, [])
        out = []
        for tid in ids if isinstance(ids, list) else []:
            t = self.nest.tensor_at.get(tid) if isinstance(tid, str) else None
            if t is None:
                raise FormatError(
                    self.file,
                    f"node '{self.graph.nodes[holder].id}' attribute '{label}'",
                    f"the body's {key[:-1]} {tid!r} is no tensor of the graph",
                    f"the ids of the tensors the body {key[:-1].replace('put', 'puts')} "
                    "(renamed since?)",
                )
            out.append(t)
        return out

    # -- nodes ----------------------------------------------------------------------------------

    def scope_nodes(self, scope: Scope, name: Namer, into: Any, prefix: str = "") -> None:
        """Add the NodeProtos of one scope to ``into`` (a repeated field), in a topological
        order; each is built where it goes (appending a built one copies it, bodies too)."""
        for i in self.nest.ordered(scope):
            if self.nest.role[i] == "call":
                self._call(i, name, prefix, into.add())
            else:
                self._operator(i, name, prefix, into.add())

    def _node_name(self, i: int, prefix: str) -> str:
        """The NodeProto's name: the source's, unless the node was renamed since (its id no
        longer the one the reader made of that name); else the id, less a call's prefix."""
        node = self.graph.nodes[i]
        name = node.metadata.get("name")
        named = isinstance(name, str) and bool(name)
        if named and _made_from(node.id, prefix + str(name)):
            return str(name)
        if not named:
            self.unnamed.append(node.id)
        return node.id[len(prefix) :] if prefix and node.id.startswith(prefix) else node.id

    def _operator(self, i: int, name: Namer, prefix: str, proto: onnx.NodeProto) -> None:
        """Fill ``proto``: an operator (and, for If/Loop/Scan, its bodies)."""
        node = self.graph.nodes[i]
        meta = node.metadata
        domain = meta.get("domain", "")
        domain = domain if isinstance(domain, str) else ""
        proto.op_type, proto.domain, proto.name = node.op_type, domain, self._node_name(i, prefix)
        self._check_inputs(i)
        proto.input.extend(_with_gaps([name(t) for t in node.inputs], meta.get("omitted_inputs")))
        proto.output.extend(
            _with_gaps([name(t) for t in node.outputs], meta.get("omitted_outputs"))
        )
        attributes = self._attributes(i, proto, name)  # False: not the op's, kept as metadata
        if isinstance(meta.get("doc_string"), str):
            proto.doc_string = meta["doc_string"]
        props = meta.get("metadata_props")
        has_props = False
        if isinstance(props, dict) and self.ir_version >= _NODE_METADATA_PROPS_IR:
            has_props = True
            for key, value in prop_items(props):
                entry = proto.metadata_props.add()
                entry.key, entry.value = key, value
        self.held[i] = _HELD[attributes, has_props]

    def _attributes(self, i: int, proto: onnx.NodeProto, name: Namer) -> bool:
        """Add the node's attributes: its schema ones, and those in metadata ``attributes``
        when the op is of a custom domain (or they hold bodies). False when metadata
        ``attributes`` holds some that are not written (they stay metadata)."""
        node = self.graph.nodes[i]
        types = self._schema_types(node.op_type, proto.domain)
        for key, value in node.attributes.items():
            if value is not None:
                self._attribute(i, key, value, types.get(key), name, proto.attribute.add())
        extra = node.metadata.get("attributes")
        if not isinstance(extra, dict):
            return True
        graphs = self.nest.graph_values.get(i, {})
        custom = opset_domain(proto.domain) not in ONNX_DOMAINS
        for key, value in extra.items():
            if key not in node.attributes and (custom or key in graphs):
                self._attribute(i, key, value, None, name, proto.attribute.add())
        return custom

    def _schema_types(self, op: str, domain: str) -> dict[str, int]:
        """The schema's attribute types of ``op`` at the model's opset (none for others)."""
        found = self._types.get((op, domain))
        if found is None:
            d = opset_domain(domain)
            version = self.opsets.get(d)
            schema = schema_of(op, version, d) if d in ONNX_DOMAINS and version else None
            found = self._types[(op, domain)] = schema_types(schema) if schema else {}
        return found

    def _attribute(
        self, i: int, key: str, value: Any, kind: int | None, name: Namer, attr: onnx.AttributeProto
    ) -> None:
        def body(label: str, v: dict[str, Any], g: onnx.GraphProto) -> None:
            self._body(i, label, v, name, g)

        try:
            attribute_proto(key, value, kind, body, attr)
        except AttributeProblem as e:
            raise FormatError(
                self.file, f"node '{self.graph.nodes[i].id}' attribute '{key}'", str(e)
            ) from e

    def _check_inputs(self, i: int) -> None:
        """Every input is made by a node, or is a graph input, weight or body parameter; an
        unlisted tensor of kind ``input`` becomes a graph input. Raises FormatError else."""
        node, tensors = self.graph.nodes[i], self.graph.tensors
        for t in node.inputs:
            if t in self._defined or self._unbound_parameter(i, t):
                continue
            if tensors[t].kind == "input":
                self._defined.add(t)
                self.inputs_added.append(t)
                self.notes.append(
                    f"tensor '{tensors[t].id}' is of kind input but not a graph input: "
                    "written as one"
                )
                continue
            maker = int(self.graph.index.producer[t])
            if maker >= 0:  # a node with children, which ONNX cannot hold as an operator
                problem = (
                    f"its input '{tensors[t].id}' is made by '{self.graph.nodes[maker].id}', "
                    "which is a group (it has children), not an operator"
                )
                expected = "inputs made by operators (take the children out of that node)"
            else:
                problem = (
                    f"its input '{tensors[t].id}' is made by no node and is no graph input "
                    "or weight"
                )
                expected = "inputs that a node makes (was the node making it deleted?)"
            raise FormatError(self.file, f"node '{node.id}'", problem, expected)

    def _unbound_parameter(self, i: int, t: int) -> bool:
        """Whether ``t`` is a parameter that a call above node ``i`` left out: the reader names
        it ``CALL/NAME`` and nothing makes it."""
        tid = self.graph.tensors[t].id
        p = int(self.nest.parent[i])
        while p >= 0:
            if self.nest.role[p] == "call" and tid.startswith(self.graph.nodes[p].id + "/"):
                return True
            p = int(self.nest.parent[p])
        return False

    # -- function calls -------------------------------------------------------------------------

    def _call(self, i: int, name: Namer, prefix: str, call: onnx.NodeProto) -> None:
        """Fill ``call``: a call of a model-local function rebuilt from the call's body."""
        node = self.graph.nodes[i]
        fn_meta = node.metadata["function"]
        domain = fn_meta.get("domain", "")
        domain = domain if isinstance(domain, str) else ""
        inputs, outputs = self.nest.call_parameters(i)
        inner = node.id + "/"
        local_name = self._local_names(inputs, outputs, inner)
        fp = onnx.FunctionProto()
        fp.domain = domain
        fp.input.extend(local_name(t) for t in inputs)
        fp.output.extend(local_name(t) for t in outputs)
        self._in_function += 1
        try:
            self.scope_nodes((i, ""), local_name, fp.node, inner)
        finally:
            self._in_function -= 1
        for d, v in self.opsets.items():
            fp.opset_import.append(onnx.helper.make_opsetid(d, v))
        fn_name = self._function_name(fp, domain, str(fn_meta["name"]))
        call.op_type, call.domain, call.name = fn_name, domain, self._node_name(i, prefix)
        unbound = [t for t in inputs if t not in self._defined]
        call.input.extend("" if t in unbound else name(t) for t in inputs)
        call.output.extend(name(t) for t in outputs)
        self.held[i] = NODE_FIELDS - {"attributes"}  # the call's attributes are in its body

    def _local_names(self, inputs: list[int], outputs: list[int], inner: str) -> Namer:
        """Names inside a function body: ``in0``... and ``out0``... for its parameters, the
        call's own values without its ``CALL/`` prefix (made unique)."""
        local = {t: f"in{k}" for k, t in enumerate(inputs)}
        for k, t in enumerate(outputs):
            local.setdefault(t, f"out{k}")
        taken = set(local.values())
        tensors = self.graph.tensors

        def local_name(t: int) -> str:
            found = local.get(t)
            if found is None:
                tid = tensors[t].id
                found = base = tid[len(inner) :] if tid.startswith(inner) else tid
                k = 2
                while found in taken:
                    found, k = f"{base}_{k}", k + 1
                taken.add(found)
                local[t] = found
            return found

        return local_name

    def _function_name(self, fp: onnx.FunctionProto, domain: str, wanted: str) -> str:
        """The name of the function with this body: the wanted name for its first body, the
        same name for the same body, ``wanted_2``... for other bodies."""
        key = fp.SerializeToString(deterministic=True)
        found = self._function_names.get(key)
        if found is not None:
            return found
        name, k = wanted, 2
        while (domain, name) in self._taken_functions:
            name, k = f"{wanted}_{k}", k + 1
        if name != wanted:
            self.notes.append(
                f"calls of function '{wanted}' have different bodies (edited, or attributes "
                f"differ): one is written as function '{name}'"
            )
        self._taken_functions.add((domain, name))
        self._function_names[key] = name
        fp.name = name
        self.functions.append(fp)
        return name


def prop_items(props: dict[str, Any]) -> list[tuple[str, str]]:
    """metadata_props entries of a (nested, dotted-expanded) dict: dotted keys, text values
    (JSON for values that are not text)."""
    return [
        (key, value if isinstance(value, str) else json.dumps(value))
        for key, value in flatten_dotted(props).items()
    ]


def _made_from(node_id: str, name: str) -> bool:
    """Whether the reader gives a node of this name this id (``name``, or ``name_2``... when
    the name was taken)."""
    if node_id == name:
        return True
    tail = node_id[len(name) + 1 :]
    return node_id.startswith(name + "_") and tail.isdigit()


def _listed(ids: list[str], limit: int = 5) -> str:
    shown = ", ".join(f"'{i}'" for i in ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def _with_gaps(names: list[str], omitted: Any) -> list[str]:
    """Names with "" at the positions the node leaves out (metadata omitted_*)."""
    if not isinstance(omitted, list) or not omitted:
        return names
    skip = {k for k in omitted if isinstance(k, int) and not isinstance(k, bool) and k >= 0}
    out: list[str] = []
    rest = iter(names)
    remaining = len(names)
    for k in range(len(names) + len(skip)):
        if k in skip:
            out.append("")
        elif remaining:
            out.append(next(rest))
            remaining -= 1
    out.extend(rest)
    return out
