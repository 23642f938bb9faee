"""A serialized ExportedProgram (``models/<name>.json``) walked once into the shared model.

Placeholders become graph inputs (user inputs) or weight tensors (parameters, buffers, tensor
constants: their FQN and kind in metadata, values read lazily from the archive). Each ATen
node is written as ONNX through the ``aten_onnx`` table: one ONNX op is a leaf named by the FX
node (the ATen target in metadata), several are a group named so whose children are the ONNX
ops; an op without a mapping stays an ATen node of domain ``aten``. Module calls become groups
(``pt2_modules``). Symbolic sizes are -1 with their symbols in ``shape_symbols``, and symbolic
ints that nodes compute (``sym_size``) are one-element int64 tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xocview.formats.onnx_emit import placed
from xocview.formats.pytorch.aten_onnx import NO_OP, lowering
from xocview.formats.pytorch.lowering.emit import Emit, NotMapped, Values
from xocview.formats.pytorch.pt2_modules import ModuleTree, module_stack
from xocview.formats.pytorch.pt2_schema import Json, Ref, argument, symbol_text, tensor_info
from xocview.formats.pytorch.pt2_weights import Payload, Reader
from xocview.formats.unique_ids import unique
from xocview.model import Graph, Node, Tensor
from xocview.model.edits.reinfer import infer_undeclared

__all__ = ["ONNX_OPSET", "build_graph"]

ONNX_OPSET = 20  # Gelu (20), LayerNormalization (17), ReduceMean with axes as input (18)
_WEIGHT_KINDS = {"parameter": "parameter_name", "buffer": "buffer_name"}
_WEIGHT_KINDS["tensor_constant"] = "tensor_constant_name"
# What a lowering may raise on arguments it did not expect (a damaged or unusual file).
_ARGUMENT_ERRORS = (
    TypeError,
    ValueError,
    IndexError,
    KeyError,
    ZeroDivisionError,
    AttributeError,
    OverflowError,
)


class _Builder:
    def __init__(self, j: Json, graph: dict[str, Any], payloads: dict[str, Payload]) -> None:
        self.j, self.payloads = j, payloads
        self.tensors: list[Tensor] = []
        self.pos: dict[str, int] = {}
        self.nodes: list[Node] = []
        self.node_ids: set[str] = set()
        self.infos: dict[str, Any] = j.obj(j.key(graph, "tensor_values", "graph"), "tensor_values")
        self.syms = j.opt(graph, "sym_int_values", "graph_module.graph", dict, {})
        self.inputs: dict[str, tuple[str, str | None]] = {}  # placeholder -> (kind, fqn)
        self.values = Values(self.tensors, self.value)
        self.read: set[str] = set()  # values some node reads or the graph returns

    # -- tensors ------------------------------------------------------------------------------

    def value(self, name: str) -> int:
        """The position of the value ``name``, made on first use."""
        t = self.pos.get(name)
        if t is None:
            self.tensors.append(self._make(name))
            t = self.pos[name] = len(self.tensors) - 1
        return t

    def _make(self, name: str) -> Tensor:
        kind, fqn = self.inputs.get(name, ("activation", None))
        if kind in _WEIGHT_KINDS:
            return self._weight(name, kind, str(fqn))
        if name in self.infos:
            info = tensor_info(self.j, self.infos[name], f"graph_module.graph.tensor_values.{name}")
            return Tensor(
                name,
                "input" if kind == "user_input" else "activation",
                info.shape,
                info.dtype,
                info.metadata(),
            )
        if name in self.syms:
            return Tensor(name, "activation", [1], "int64", {"symint": _sym_text(self.syms[name])})
        raise self.j.error(
            "graph_module.graph",
            f"value {name!r} has no entry in tensor_values or sym_int_values",
            "every value a node reads or writes described",
        )

    def _weight(self, name: str, kind: str, fqn: str) -> Tensor:
        payload = self.payloads.get(fqn)
        place = f"graph_module.graph.tensor_values.{name}"
        if payload is not None:
            info, read = payload.info, payload.read
        elif name in self.infos:
            info, read = tensor_info(self.j, self.infos[name], place), None
        else:
            raise self.j.error(
                place, f"{kind} {fqn!r} has no tensor meta", "its tensor_values entry"
            )
        metadata: dict[str, Any] = {"torch_kind": kind, "fqn": fqn, **info.metadata()}
        if read is None:
            metadata["values"] = "not in the archive"
        return Tensor(name, "weight", info.shape, info.dtype, metadata, read)

    # -- nodes --------------------------------------------------------------------------------

    def node(self, k: int, raw: Any, modules: ModuleTree) -> None:
        j = self.j
        place = f"graph_module.graph.nodes[{k}]"
        n = j.obj(raw, place)
        target = j.key(n, "target", place, str)
        ns, name, overload = _target(target)
        if ns == "aten" and name in NO_OP:
            return
        args = _arguments(j, j.key(n, "inputs", place, list), f"{place}.inputs")
        outs = _output_names(j, j.key(n, "outputs", place, list), f"{place}.outputs")
        fx = n.get("name") if isinstance(n.get("name"), str) and n.get("name") else None
        fx = self._unique(fx or next((o for o in outs if o), f"{name}_{k}"))
        meta = j.obj(n.get("metadata") or {}, f"{place}.metadata")
        metadata = _node_metadata(target, args, meta)
        stack = meta.get("nn_module_stack")
        parent = modules.parent_of(module_stack(stack)) if isinstance(stack, str) else None
        if parent is not None:
            metadata["parent_id"] = parent
            modules.adopt(parent, fx)
        lower = lowering(name, overload) if ns in ("aten", "_operator") else None
        if ns == "_operator":
            lower = lowering(f"_operator.{name}", "")
        if lower is not None:
            try:
                self._lowered(fx, name, lower, args, outs, metadata)
                return
            except NotMapped as e:
                metadata["not_mapped"] = str(e)
            except _ARGUMENT_ERRORS:
                metadata["not_mapped"] = "its arguments do not fit the mapping"
        self._aten(fx, name, ns, args, outs, metadata)

    def _lowered(
        self,
        fx: str,
        name: str,
        lower: Any,
        args: dict[str, Any],
        outs: list[str | None],
        metadata: dict[str, Any],
    ) -> None:
        """Write the node's ONNX ops, or leave the graph as it was and raise NotMapped."""
        mark, known = len(self.tensors), dict(self.pos)
        e = Emit(self.values, fx, args, outs, self.read)
        try:
            lower(e)
            for k, o in enumerate(outs):
                if o is not None and k not in e.bound and o in self.read:
                    raise NotMapped(f"output {k} ({o}) is not computed by the mapping")
            if not e.nodes:
                raise NotMapped("the mapping wrote no operator")
        except BaseException:
            del self.tensors[mark:]
            self.pos = known
            raise
        # one ATen op: one ONNX node, or a group of them marked derived "aten"
        self.nodes.extend(placed(e.nodes, fx, name, metadata, "aten", self.node_ids))

    def _aten(
        self,
        fx: str,
        name: str,
        ns: str,
        args: dict[str, Any],
        outs: list[str | None],
        metadata: dict[str, Any],
    ) -> None:
        """An op without a mapping: its tensors in and out, domain ``aten`` (or its own)."""
        ins = [self.value(r.name) for r in _refs(args.values())]
        made = [self.value(o) for o in outs if o is not None]
        metadata["domain"] = ns if ns not in ("", "_operator") else "aten"
        self._add(Node(fx, name, ins, made, {}, metadata))

    def _add(self, node: Node) -> None:
        self.nodes.append(node)

    def _unique(self, wanted: str) -> str:
        return unique(wanted, self.node_ids)


def build_graph(
    j: Json,
    doc: Any,
    payloads: dict[str, Payload],
    title: str,
    legacy: Callable[[str], Reader] | None = None,
) -> Graph:
    """The graph of one ExportedProgram document; FormatError at the place of a fault."""
    ep = j.obj(doc, "")
    gm = j.obj(j.key(ep, "graph_module", ""), "graph_module")
    g = j.obj(j.key(gm, "graph", "graph_module"), "graph_module.graph")
    b = _Builder(j, g, payloads)
    sig = j.obj(gm.get("signature") or {}, "graph_module.signature")
    user_outputs = _signature(b, sig, legacy)
    nodes = j.key(g, "nodes", "graph_module.graph", list)
    b.read = _names_read(nodes) | set(user_outputs)
    modules = ModuleTree(b.node_ids)
    for k, raw in enumerate(nodes):
        b.node(k, raw, modules)
    graph = Graph(title, title, b.tensors, b.nodes, metadata=_graph_metadata(ep, modules, b))
    graph.inputs = [b.value(name) for name, (kind, _) in b.inputs.items() if kind == "user_input"]
    for name in user_outputs:
        t = b.value(name)
        if b.tensors[t].kind == "activation":
            b.tensors[t].kind = "output"
        graph.outputs.append(t)
    graph.nodes.extend(modules.finish())
    graph.invalidate()
    infer_undeclared(graph)
    return graph


def _signature(
    b: _Builder, sig: dict[str, Any], legacy: Callable[[str], Reader] | None
) -> list[str]:
    """Note each placeholder's kind (and FQN); returns the user outputs' names."""
    j = b.j
    place = "graph_module.signature"
    for k, spec in enumerate(j.opt(sig, "input_specs", place, list, [])):
        place = f"graph_module.signature.input_specs[{k}]"
        kind, body = j.union(spec, place)
        body = j.obj(body, f"{place}.{kind}")
        arg = body.get("arg")
        name = _arg_name(arg)
        if name is None:
            continue  # a constant, a token or a custom object: no tensor
        raw = body.get(_WEIGHT_KINDS.get(kind, ""))
        fqn = raw if isinstance(raw, str) else None
        b.inputs[name] = (kind, fqn)
        if kind in _WEIGHT_KINDS and legacy is not None and str(fqn) not in b.payloads:
            info = tensor_info(j, b.infos.get(name), f"graph_module.graph.tensor_values.{name}")
            read = legacy(str(fqn))
            b.payloads[str(fqn)] = Payload(str(fqn), info, "", kind == "parameter", True, read)
    outs: list[str] = []
    for k, spec in enumerate(j.opt(sig, "output_specs", place, list, [])):
        kind, body = j.union(spec, f"graph_module.signature.output_specs[{k}]")
        name = _arg_name(body.get("arg") if isinstance(body, dict) else None)
        if kind == "user_output" and name is not None:
            outs.append(name)
    return outs


def _arg_name(arg: Any) -> str | None:
    if isinstance(arg, dict):
        if isinstance(arg.get("name"), str):
            return str(arg["name"])
        inner = arg.get("as_tensor")
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return str(inner["name"])
    return None


def _target(target: str) -> tuple[str, str, str]:
    """(namespace, op name, overload) of ``torch.ops.aten.conv2d.default`` or
    ``_operator.mul``; other callables are (``""``, target, ``""``)."""
    parts = target.split(".")
    if len(parts) >= 5 and parts[0] == "torch" and parts[1] == "ops":
        return parts[2], ".".join(parts[3:-1]), parts[-1]
    if len(parts) == 2 and parts[0] in ("_operator", "operator"):
        return "_operator", parts[1], ""
    return "", target, ""


def _arguments(j: Json, inputs: list[Any], place: str) -> dict[str, Any]:
    """A node's NamedArguments by name (``arg<i>`` for one without a name)."""
    args: dict[str, Any] = {}
    for i, a in enumerate(inputs):
        item = j.obj(a, f"{place}[{i}]")
        name = item.get("name")
        key = name if isinstance(name, str) else f"arg{i}"
        args[key] = argument(j, j.key(item, "arg", f"{place}[{i}]"), f"{place}[{i}].arg")
    return args


def _output_names(j: Json, outputs: list[Any], place: str) -> list[str | None]:
    names: list[str | None] = []
    for k, o in enumerate(outputs):
        value = argument(j, o, f"{place}[{k}]")
        items = value if isinstance(value, list) else [value]
        names.extend(v.name if isinstance(v, Ref) else None for v in items)
    return names


def _refs(values: Any) -> list[Ref]:
    out: list[Ref] = []
    for v in values:
        if isinstance(v, Ref):
            out.append(v)
        elif isinstance(v, list):
            out.extend(x for x in v if isinstance(x, Ref))
    return out


def _names_read(nodes: list[Any]) -> set[str]:
    """Every value name some node reads (a cheap walk of the raw JSON)."""
    found: set[str] = set()
    stack: list[Any] = [n.get("inputs") for n in nodes if isinstance(n, dict)]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            name = v.get("name")
            if isinstance(name, str) and len(v) == 1:
                found.add(name)
            for key in ("as_name",):
                if isinstance(v.get(key), str):
                    found.add(v[key])
            stack.extend(x for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend(v)
    return found


def _plain(value: Any) -> Any:
    """A non-tensor argument as JSON-friendly metadata (symbols by name, tensors dropped)."""
    if isinstance(value, Ref):
        return value.name if value.sym else None
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, complex):
        return str(value)
    return value


def _node_metadata(target: str, args: dict[str, Any], meta: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"target": target}
    plain = {
        k: _plain(v)
        for k, v in args.items()
        if not (isinstance(v, Ref) and not v.sym)
        and not (isinstance(v, list) and v and any(isinstance(x, Ref) and not x.sym for x in v))
    }
    if plain:
        metadata["arguments"] = plain
    for key, value in meta.items():
        if key != "nn_module_stack" and isinstance(value, str):
            metadata[key] = value
    return metadata


def _sym_text(value: Any) -> Any:
    if isinstance(value, dict):
        expr = value.get("as_expr")
        if isinstance(expr, dict) and isinstance(expr.get("expr_str"), str):
            return symbol_text(expr["expr_str"])
        return value.get("as_int")
    return None


def _graph_metadata(ep: dict[str, Any], modules: ModuleTree, b: _Builder) -> dict[str, Any]:
    torch: dict[str, Any] = {}
    version = ep.get("schema_version")
    if isinstance(version, dict):
        torch["schema_version"] = f"{version.get('major')}.{version.get('minor')}"
    for key in ("torch_version", "opset_version", "verifiers"):
        if ep.get(key) is not None:
            torch[key] = ep[key]
    ranges = ep.get("range_constraints")
    if isinstance(ranges, dict) and ranges:
        torch["range_constraints"] = ranges
    if modules.root_class:
        torch["module_class"] = modules.root_class
    unmapped = sorted({str(n.op_type) for n in b.nodes if n.metadata.get("domain") == "aten"})
    if unmapped:
        torch["not_mapped"] = unmapped
    metadata: dict[str, Any] = {
        "opset_import": [{"domain": "", "version": ONNX_OPSET}],
        "torch_export": torch,
    }
    return metadata
