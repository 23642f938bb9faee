"""The graph a TorchScript walk builds: tensors by name, ATen nodes written as ONNX through the
``aten_onnx`` table (as the .pt2 reader writes them), module calls as groups.

An ATen call whose lowering succeeds becomes its ONNX op (a leaf named for the call, the ATen
op in metadata) or a group of them; one without a mapping stays an ATen node of domain
``aten``, which the executor refuses by name. TorchScript records no shapes, so each call's
outputs are typed as they are made, by ONNX's inference of the ops just written, from the
inputs' types (known when the archive keeps its trace's example inputs); sizes that code reads
(``torch.size``) are then plain numbers.
"""

from __future__ import annotations

from typing import Any

from xocview.errors import FormatError
from xocview.formats.pytorch.aten_onnx import lowering
from xocview.formats.pytorch.lowering.emit import Emit, NotMapped, Values
from xocview.formats.pytorch.pt2_schema import Ref
from xocview.formats.pytorch.unpickle import TensorRecord
from xocview.model import Graph, Node, Tensor
from xocview.model.edits.reinfer import reinfer

__all__ = ["ONNX_OPSET", "Builder"]

ONNX_OPSET = 20
MAX_NODES = 400_000
# What a lowering may raise on arguments it did not expect (an unusual call).
_ARGUMENT_ERRORS: tuple[type[Exception], ...] = (TypeError, ValueError, IndexError, KeyError)
_ARGUMENT_ERRORS += (ZeroDivisionError, AttributeError, OverflowError)


# One-input ops whose output has the input's type: typed without asking ONNX.
_SAME_TYPE = frozenset(
    {"Relu", "Sigmoid", "Tanh", "Identity", "Gelu", "Erf", "Neg", "Abs", "Exp", "Log", "Sqrt"}
    | {"Softmax", "LogSoftmax", "HardSwish", "HardSigmoid", "LeakyRelu", "Elu", "Softplus"}
    | {"Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos", "Mish", "Sign"}
)


class Builder:
    """Tensors and nodes made so far; groups with their children."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.tensors: list[Tensor] = []
        self.pos: dict[str, int] = {}
        self.nodes: list[Node] = []
        self.node_ids: set[str] = set()
        self.children: dict[str, list[str]] = {}
        self.groups: list[Node] = []
        self.weights: dict[str, Ref] = {}
        self.groups_path: dict[str, str] = {}  # group id -> module path
        self._counts: dict[tuple[int, str], int] = {}
        self.opaque_nodes: dict[
            str, Node
        ] = {}  # the one output of a node -> the node  # the last suffix given to a name
        self.values = Values(self.tensors, self.value)

    # -- tensors ------------------------------------------------------------------------------

    def value(self, name: str) -> int:
        return self.pos[name]

    def tensor(self, ref: Ref) -> Tensor:
        return self.tensors[self.pos[ref.name]]

    def rank(self, ref: Ref) -> int | None:
        t = self.tensor(ref)
        return None if t.metadata.get("rank_unknown") else len(t.shape)

    def new(
        self,
        wanted: str,
        kind: str,
        shape: list[int] | None,
        dtype: str,
        metadata: dict[str, Any] | None = None,
        data: Any = None,
        sym: bool = False,
    ) -> Ref:
        """A new tensor (``shape`` None: rank unknown) under a unique name."""
        name = _fresh(wanted, self.pos, self._counts)
        meta = dict(metadata or {})
        if shape is None:
            meta["rank_unknown"] = True
        self.tensors.append(Tensor(name, kind, list(shape or []), dtype, meta, data))
        self.pos[name] = len(self.tensors) - 1
        return Ref(name, sym)

    def weight(self, fqn: str, record: TensorRecord, kind: str, place: str) -> Ref:
        """The weight ``fqn`` (made once), values read from the archive on first use."""
        found = self.weights.get(fqn)
        if found is not None:
            return found
        if record.storage is None:
            raise FormatError(self.file, place, f"{fqn} was saved without values (a meta tensor)")
        record.check()
        meta = {"fqn": fqn, "torch_kind": kind}
        ref = self.new(fqn, "weight", list(record.shape), record.dtype, meta, record.values)
        self.weights[fqn] = ref
        return ref

    def set_rank(self, ref: Ref, rank: int) -> None:
        """What an assumption taught: the tensor has ``rank`` dims of unknown size."""
        t = self.tensor(ref)
        if t.metadata.get("rank_unknown"):
            t.shape = [-1] * rank
            t.metadata = {k: v for k, v in t.metadata.items() if k != "rank_unknown"}

    # -- nodes --------------------------------------------------------------------------------

    def unique(self, wanted: str) -> str:
        got = _fresh(wanted, self.node_ids, self._counts)
        self.node_ids.add(got)
        return got

    def add(self, node: Node, parent: str | None) -> None:
        if len(self.nodes) >= MAX_NODES:
            raise FormatError(
                self.file, node.metadata.get("source", ""), f"more than {MAX_NODES:,} nodes"
            )
        if parent is not None:
            node.metadata["parent_id"] = parent
            self.children[parent].append(node.id)
        self.nodes.append(node)

    def group(self, name: str, path: str, cls: str, parent: str | None) -> str:
        base = f"{parent}/{name}" if parent else f"/{name}"
        gid, n = base, 1
        while gid in self.node_ids:
            n += 1
            gid = f"{base}@{n - 1}"
        self.node_ids.add(gid)
        self.children[gid] = []
        # "derived": the module calls of the code, as a .pt2's nn_module_stack (see pt2_modules)
        meta: dict[str, Any] = {"name": name, "module": path, "class": cls, "derived": "scope"}
        if parent is not None:
            meta["parent_id"] = parent
            self.children[parent].append(gid)
        self.groups.append(Node(gid, cls.rpartition(".")[2] or "Module", [], [], {}, meta))
        return gid

    def aten(
        self,
        name: str,
        lower_as: str,
        overload: str,
        args: dict[str, Any],
        outs: list[tuple[str, bool]],
        parent: str | None,
        metadata: dict[str, Any],
        shapes: list[list[int]] | None = None,
    ) -> list[Ref]:
        """One ATen call with outputs of dtypes ``outs`` ((dtype, symbolic int) each) and,
        where the walk knows them before the lowering needs them, ``shapes``."""
        prefix = f"{parent}/" if parent else ""
        nid = self.unique(prefix + name)
        refs = []
        for k, (dt, sym) in enumerate(outs):
            shape = [1] if sym else shapes[k] if shapes and k < len(shapes) else None
            refs.append(self.new(nid if k == 0 else f"{nid}.{k}", "activation", shape, dt, sym=sym))
        for ref in refs:
            if ref.sym:
                self.tensor(ref).dtype = "int64"
        lower = lowering(lower_as, overload)
        if lower is not None:
            try:
                self._lowered(nid, name, lower, args, refs, parent, metadata)
                return refs
            except NotMapped as e:
                metadata["not_mapped"] = str(e)
            except _ARGUMENT_ERRORS:
                metadata["not_mapped"] = "its arguments do not fit the mapping"
        ins = [self.pos[r.name] for r in _refs(args.values())]
        metadata["domain"] = "aten"
        outs_at = [self.pos[r.name] for r in refs]
        self.add(Node(nid, name, ins, outs_at, {}, metadata), parent)
        return refs

    def _lowered(
        self,
        nid: str,
        name: str,
        lower: Any,
        args: dict[str, Any],
        refs: list[Ref],
        parent: str | None,
        metadata: dict[str, Any],
    ) -> None:
        mark = len(self.tensors)
        names: list[str | None] = [r.name for r in refs]
        e = Emit(self.values, nid, args, names, set(r.name for r in refs))
        try:
            lower(e)
            if not e.nodes:
                raise NotMapped("the mapping wrote no operator")
            missing = [k for k in range(len(refs)) if k not in e.bound]
            if missing:
                raise NotMapped(f"output {missing[0]} is not computed by the mapping")
        except BaseException:
            del self.tensors[mark:]
            raise
        for t in range(mark, len(self.tensors)):
            self.pos.setdefault(self.tensors[t].id, t)
        _infer(self.tensors, e.nodes)
        if len(e.nodes) == 1:
            leaf = e.nodes[0]
            leaf.id = nid
            leaf.metadata = {**metadata, **leaf.metadata}
            self.add(leaf, parent)
            return
        # one ATen op drawn as a group of the ONNX ops it runs as (see pt2_graph)
        group_meta = {**metadata, "children_ids": [], "derived": "aten"}
        self.add(Node(nid, name, [], [], {}, group_meta), parent)
        self.children[nid] = []
        for child in e.nodes:
            child.id = self.unique(child.id)
            self.add(child, nid)

    def opaque(
        self,
        op: str,
        domain: str,
        ins: list[Ref],
        outs: list[str],
        parent: str | None,
        metadata: dict[str, Any],
    ) -> list[Ref]:
        """A node the walk keeps without knowing what it computes (``prim::If`` ...)."""
        prefix = f"{parent}/" if parent else ""
        nid = self.unique(prefix + op)
        refs = [self.new(f"{nid}.{k}", "activation", None, dt) for k, dt in enumerate(outs)]
        metadata["domain"] = domain
        node = Node(nid, op, [self.pos[r.name] for r in ins], [self.pos[r.name] for r in refs])
        node.metadata = metadata
        self.add(node, parent)
        if len(refs) == 1:
            self.opaque_nodes[refs[0].name] = node
        return refs

    def _drop_unread_sizes(self, outputs: set[int]) -> None:
        """Scripted code asks sizes it never uses (``_list_with_default``): those ``size``
        nodes go, so that the graph does not show Shape ops that feed nothing."""
        read = set(outputs)
        for n in self.nodes:
            read.update(n.inputs)
        dropped = {n.id for n in self.nodes if _unused(n, read)}
        if not dropped:
            return
        self.nodes = [n for n in self.nodes if n.id not in dropped]
        for parent, kids in self.children.items():
            self.children[parent] = [k for k in kids if k not in dropped]
        used = set(outputs) | {t for n in self.nodes for t in (*n.inputs, *n.outputs)}
        keep = [
            t for t, tensor in enumerate(self.tensors) if t in used or tensor.kind != "activation"
        ]
        new_at = {old: k for k, old in enumerate(keep)}
        self.tensors[:] = [self.tensors[t] for t in keep]
        self.pos = {name: new_at[t] for name, t in self.pos.items() if t in new_at}
        for n in self.nodes:
            n.inputs = [new_at[t] for t in n.inputs]
            n.outputs = [new_at[t] for t in n.outputs]

    def widen(self, ref: Ref, n: int) -> list[Ref] | None:
        """The ``n`` outputs of the op without a schema that made ``ref`` (``torch.lstm``
        returns three): told by the code unpacking it, made then."""
        node = self.opaque_nodes.pop(ref.name, None)
        if node is None or n < 1 or n > 64:
            return None
        dtype = self.tensor(ref).dtype
        more = [self.new(f"{node.id}.{k}", "activation", None, dtype) for k in range(1, n)]
        node.outputs = [*node.outputs, *(self.pos[r.name] for r in more)]
        return [ref, *more]

    def finish(self, title: str, inputs: list[Ref], outputs: list[Ref]) -> Graph:
        self._drop_unread_sizes({self.pos[r.name] for r in outputs})
        for g in self.groups:
            g.metadata["children_ids"] = self.children[g.id]
        for n in self.nodes:
            if n.id in self.children:
                n.metadata["children_ids"] = self.children[n.id]
        _unique_tensor_ids(self.tensors)
        graph = Graph(title, title, self.tensors, self.nodes + self.groups)
        graph.inputs = [self.pos[r.name] for r in inputs]
        for r in outputs:
            t = self.pos[r.name]
            if self.tensors[t].kind == "activation":
                self.tensors[t].kind = "output"
            graph.outputs.append(t)
        graph.invalidate()
        return graph


def _unused(node: Node, read: set[int]) -> bool:
    """A ``size`` node whose value nothing reads."""
    return node.metadata.get("target") == "aten::size.int" and not (set(node.outputs) & read)


def _fresh(wanted: str, taken: Any, counts: dict[tuple[int, str], int]) -> str:
    """``wanted``, or ``wanted_<k>`` with the next free k (counted on from the last one given,
    so that 50,000 ``relu`` nodes do not each try every suffix before theirs)."""
    if wanted not in taken:
        return wanted
    key = (id(taken), wanted)
    k = counts.get(key, 1)
    while True:
        k += 1
        got = f"{wanted}_{k}"
        if got not in taken:
            counts[key] = k
            return got


def _refs(values: Any) -> list[Ref]:
    out: list[Ref] = []
    for v in values:
        if isinstance(v, Ref):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(_refs(v))
    return out


def _infer(tensors: list[Tensor], nodes: list[Node]) -> None:
    """Type the outputs of one lowering's ONNX ops from their inputs' types: a graph of just
    those nodes (sharing the Tensor objects) re-inferred in place."""
    if len(nodes) == 1 and nodes[0].op_type in _SAME_TYPE and len(nodes[0].inputs) == 1:
        src, dst = tensors[nodes[0].inputs[0]], tensors[nodes[0].outputs[0]]
        dst.shape, dst.dtype = list(src.shape), src.dtype
        notes = {k: v for k, v in src.metadata.items() if k in ("rank_unknown", "shape_symbols")}
        dst.metadata = {k: v for k, v in dst.metadata.items() if k != "rank_unknown"} | notes
        return
    local: dict[int, int] = {}
    own: list[Tensor] = []

    def at(t: int) -> int:
        if t not in local:
            local[t] = len(own)
            own.append(tensors[t])
        return local[t]

    mini = [
        Node(n.id, n.op_type, [at(t) for t in n.inputs], [at(t) for t in n.outputs], n.attributes)
        for n in nodes
    ]
    for m, n in zip(mini, nodes, strict=True):
        if "domain" in n.metadata:
            m.metadata["domain"] = n.metadata["domain"]
    opsets = [{"domain": "", "version": ONNX_OPSET}]
    graph = Graph("lowering", "lowering", own, mini, metadata={"opset_import": opsets})
    reinfer(graph, nodes=range(len(mini)))


def _unique_tensor_ids(tensors: list[Tensor]) -> None:
    seen: set[str] = set()
    for t in tensors:
        if t.id in seen:
            base, k = t.id, 2
            while f"{base}_{k}" in seen:
                k += 1
            t.id = f"{base}_{k}"
        seen.add(t.id)
