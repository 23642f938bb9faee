"""A GraphDef and its function library as one Graph.

Every NodeDef becomes a node under its op's name (domain ``tensorflow``), a ``Const`` a
weight whose values are read on first use, a ``Placeholder`` a graph input. A call of a
library function (``StatefulPartitionedCall``, ``PartitionedCall`` or the function's own
name as op) becomes a group holding the function's body, built again for each call with the
call's inputs as the body's arguments and the body's results as the call's outputs, so a
SavedModel's serving function is drawn and run inline. Name scopes (``model/conv/Conv2D``)
become groups marked ``derived: "scope"`` at every level.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xocview.errors import FormatError
from xocview.formats.tensorflow.attrs import node_attrs
from xocview.formats.tensorflow.control import CONTROL_OPS, body_ids, write_control
from xocview.formats.tensorflow.protos import BadTensor, tensor_array
from xocview.formats.tensorflow.refs import ZERO_OUTPUT_OPS, Ref, output_meta, parse_ref, position
from xocview.formats.unique_ids import unique
from xocview.model import Node, Tensor
from xocview.model.scopes import scope_of

__all__ = ["Builder", "VariableHook"]

# A SavedModel's reader gives a VarHandleOp its variable's values (None: leave it an op).
VariableHook = Callable[[Any], Tensor | None]
_CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
_DROPPED = frozenset({"NoOp"})
# Ops that only hand a variable or constant on: they count for no scope's size.
_QUIET = frozenset({"ReadVariableOp", "Identity"})
MAX_DEPTH = 32
MAX_NODES = 2_000_000


class Builder:
    """The graph being built: tensors, nodes, group links, and the functions it may inline."""

    def __init__(self, file: str, library: Any, variable: VariableHook | None = None) -> None:
        self.file = file
        self.functions = {f.signature.name: f for f in library.function} if library else {}
        self.variable = variable
        self.tensors: list[Tensor] = []
        self.nodes: list[Node] = []
        self.alias: dict[int, int] = {}
        self._node_ids: set[str] = set()
        self._tensor_ids: set[str] = set()
        self._stack: list[str] = []
        self.dropped = 0
        self.control: list[str] = []  # the While or If whose bodies are being built
        self.in_body: set[str] = set()  # nodes of control flow bodies: never a graph's result

    # -- one level: the graph itself or one function body ------------------------------------

    def level(
        self,
        defs: Sequence[Any],
        place: str,
        args: dict[str, int] | None = None,
        parent: str | None = None,
        prefix: str = "",
    ) -> dict[str, list[int]]:
        """Build ``defs``; returns each NodeDef's output tensors by its name. ``args`` maps a
        function body's argument names to the caller's tensors (None for the graph itself)."""
        by_name: dict[str, int] = {}
        for k, nd in enumerate(defs):
            if not nd.name or nd.name in by_name:
                what = f"the name {nd.name!r} is " + ("empty" if not nd.name else "used twice")
                raise FormatError(self.file, f"{place}[{k}]", what, "unique node names")
            by_name[nd.name] = k
        refs = [self._refs(nd, f"{place}[{k}]", by_name, args) for k, nd in enumerate(defs)]
        outs = self._outputs(defs, refs, prefix, args is None)
        members: list[tuple[int, str]] = []  # (node position, name in this level) for scopes
        for k, nd in enumerate(defs):
            if nd.op == "Const" or (nd.op == "Placeholder" and args is None):
                continue
            if nd.op in _DROPPED:
                self.dropped += 1
                continue
            if nd.op == "VarHandleOp" and self.tensors[outs[nd.name][0]].kind == "weight":
                continue
            inputs = [self._tensor(r, defs, by_name, outs, args) for r in refs[k] if not r.control]
            first = len(self.nodes)
            self._node(nd, f"{place}[{k}]", prefix, inputs, outs[nd.name], parent)
            members.append((first, nd.name))
        self._scope_groups(members, parent, prefix)
        return outs

    def _refs(
        self, nd: Any, place: str, by_name: dict[str, int], args: dict[str, int] | None
    ) -> list[Ref]:
        out = []
        for j, text in enumerate(nd.input):
            ref = parse_ref(text)
            known = ref is not None and (
                ref.node in by_name or (args is not None and ref.node in args)
            )
            if ref is None or not known:
                raise FormatError(
                    self.file,
                    f"{place}.input[{j}]",
                    f"{text!r} names no node" + (" or argument" if args is not None else ""),
                    "the name of a node in the same graph",
                )
            out.append(ref)
        return out

    def _outputs(
        self, defs: Sequence[Any], refs: list[list[Ref]], prefix: str, top: bool
    ) -> dict[str, list[int]]:
        """Make every node's output tensors: as many as its readers and shapes say it has."""
        needed = {nd.name: (0 if nd.op in ZERO_OUTPUT_OPS else 1) for nd in defs}
        by_name = {nd.name: nd for nd in defs}
        for rs in refs:
            for r in rs:
                nd = by_name.get(r.node)
                if nd is not None and not r.control:
                    at = position(nd.op, self._out_args(nd), r)
                    needed[r.node] = max(needed[r.node], at + 1)
        outs: dict[str, list[int]] = {}
        for nd in defs:
            count = needed[nd.name]
            if "_output_shapes" in nd.attr:  # (a map's [] would add the key)
                count = max(count, len(nd.attr["_output_shapes"].list.shape))
            outs[nd.name] = [self._make_tensor(nd, k, prefix, top) for k in range(count)]
        return outs

    def _out_args(self, nd: Any) -> tuple[str, ...] | None:
        f = self._function_of(nd)
        return tuple(a.name for a in f.signature.output_arg) if f is not None else None

    def _make_tensor(self, nd: Any, k: int, prefix: str, top: bool) -> int:
        name = prefix + nd.name + (f":{k}" if k else "")
        shape, dtype = output_meta(nd, k)
        kind, data, meta = "activation", None, {}
        if nd.op == "Const" and k == 0:
            kind, data = "weight", self._lazy(nd.attr["value"].tensor, name)
        elif nd.op == "Placeholder" and top:
            kind = "input"
        elif nd.op == "VarHandleOp" and self.variable is not None:
            held = self.variable(nd)
            if held is not None:
                held.id = self._tensor_id(name)
                self.tensors.append(held)
                return len(self.tensors) - 1
        if any(d < 0 for d in shape):
            meta["tf_shape"] = list(shape)
        self.tensors.append(Tensor(self._tensor_id(name), kind, shape, dtype, meta, data))
        return len(self.tensors) - 1

    def _lazy(self, proto: Any, name: str) -> Callable[[], Any]:
        def read() -> Any:
            try:
                return tensor_array(proto)
            except BadTensor as e:
                raise FormatError(self.file, f"Const {name}", str(e)) from None

        return read

    def _tensor(
        self,
        r: Ref,
        defs: Sequence[Any],
        by_name: dict[str, int],
        outs: dict[str, list[int]],
        args: dict[str, int] | None,
    ) -> int:
        if r.node not in by_name and args is not None:
            return args[r.node]
        nd = defs[by_name[r.node]]
        return outs[r.node][position(nd.op, self._out_args(nd), r)]

    # -- nodes and calls -----------------------------------------------------------------------

    def _function_of(self, nd: Any) -> Any:
        if nd.op in self.functions:
            return self.functions[nd.op]
        if nd.op in _CALL_OPS and "f" in nd.attr:
            return self.functions.get(nd.attr["f"].func.name)
        return None

    def _node(
        self,
        nd: Any,
        place: str,
        prefix: str,
        inputs: list[int],
        outputs: list[int],
        parent: str | None,
    ) -> None:
        node_id = self._node_id(prefix + nd.name)
        meta: dict[str, Any] = {"tf": {"op": nd.op, "name": nd.name}, "domain": "tensorflow"}
        attrs = node_attrs(nd.attr)
        if attrs:  # in metadata: TF's Identity and Squeeze are not ONNX's, whatever the name
            meta["tf"]["attrs"] = attrs
        if nd.device:
            meta["tf"]["device"] = nd.device
        if parent is not None:
            meta["parent_id"] = parent
        if len(self.nodes) >= MAX_NODES:
            raise FormatError(self.file, place, f"more than {MAX_NODES:,} nodes", "a smaller graph")
        if nd.op in CONTROL_OPS and write_control(self, nd, node_id, (inputs, outputs), meta):
            return
        f = self._function_of(nd)
        if f is not None and self._inline(f, nd, place, node_id, inputs, outputs, meta):
            return
        self.nodes.append(Node(node_id, nd.op, inputs, outputs, {}, meta))

    def _inline(
        self,
        f: Any,
        nd: Any,
        place: str,
        node_id: str,
        inputs: list[int],
        outputs: list[int],
        meta: dict[str, Any],
    ) -> bool:
        """Write a call as a group holding the body; False when it cannot be inlined (its
        arguments do not match, or it calls itself), and then it stays one opaque node."""
        sig = f.signature
        name = sig.name
        if len(sig.input_arg) != len(inputs) or name in self._stack:
            meta["not_inlined"] = "recursive" if name in self._stack else "arguments differ"
            return False
        if len(self._stack) >= MAX_DEPTH:
            raise FormatError(self.file, place, f"calls nest deeper than {MAX_DEPTH}")
        meta["tf"]["function"] = name
        group = Node(node_id, _short(name), [], [], {}, meta)
        self.nodes.append(group)
        results = self.call(f, inputs, node_id, node_id + "/", len(outputs))
        for k, t in enumerate(results[: len(outputs)]):
            self.alias[outputs[k]] = t
        return True

    def call(self, f: Any, inputs: list[int], parent: str, prefix: str, count: int) -> list[int]:
        """Build function ``f``'s body on ``inputs`` under ``parent``: the tensors its first
        ``count`` results are (through the aliases of the calls inside it)."""
        sig = f.signature
        name = sig.name
        if len(self._stack) >= MAX_DEPTH:
            raise FormatError(self.file, f"function {name}", f"calls nest deeper than {MAX_DEPTH}")
        args = {a.name: t for a, t in zip(sig.input_arg, inputs, strict=True)}
        self._stack.append(name)
        try:
            body = self.level(f.node_def, f"function {name}.node_def", args, parent, prefix)
        finally:
            self._stack.pop()
        results = []
        for out_arg in sig.output_arg[:count]:
            ret = f.ret.get(out_arg.name, "")
            r = parse_ref(ret)
            if r is None or (r.node not in body and r.node not in args):
                raise FormatError(
                    self.file, f"function {name}.ret[{out_arg.name}]", f"{ret!r} names no node"
                )
            if r.node in args:
                results.append(self._chase_any(args[r.node]))
                continue
            d = next(d for d in f.node_def if d.name == r.node)
            at = position(d.op, self._out_args(d), r)
            if at >= len(body[r.node]):
                raise FormatError(
                    self.file, f"function {name}.ret[{out_arg.name}]", f"{ret!r} names no output"
                )
            results.append(self._chase_any(body[r.node][at]))
        return results

    # -- the finished graph --------------------------------------------------------------------

    def finish(self, outputs: list[int]) -> tuple[list[Tensor], list[Node], list[int], list[int]]:
        """Tensors, nodes, inputs and outputs: each call's outputs replaced by its body's
        results, the tensors no node makes or reads dropped, and groups given their children."""

        def chase(t: int) -> int:
            for _ in range(len(self.alias) + 1):
                if t not in self.alias:
                    return t
                t = self.alias[t]
            raise FormatError(self.file, "function library", "calls return each other's results")

        outputs = [chase(t) for t in outputs]
        for n in self.nodes:
            n.inputs = [chase(t) for t in n.inputs]
        body_ids(self.nodes, self.tensors, chase)
        keep = [i for i, t in enumerate(self.tensors) if i not in self.alias]
        new = {old: k for k, old in enumerate(keep)}
        tensors = [self.tensors[i] for i in keep]
        for n in self.nodes:
            n.inputs = [new[t] for t in n.inputs]
            n.outputs = [new[t] for t in n.outputs if t in new]
        inputs = [k for k, t in enumerate(tensors) if t.kind == "input"]
        for t in outputs:
            if tensors[new[t]].kind == "activation":
                tensors[new[t]].kind = "output"
        children: dict[str, list[str]] = {}
        for n in self.nodes:
            owner = n.metadata.get("parent_id")
            if owner is not None:
                children.setdefault(owner, []).append(n.id)
        for n in self.nodes:
            if n.id in children:
                n.metadata["children_ids"] = children[n.id]
        return tensors, self.nodes, inputs, [new[t] for t in outputs]

    def sinks(self) -> list[int]:
        """Output 0 of every node whose outputs nobody reads: a frozen graph's results."""
        read = {self._chase_any(t) for n in self.nodes for t in n.inputs}
        out = []
        for n in self.nodes:
            if n.id in self.in_body:
                continue
            if n.outputs and not any(self._chase_any(t) in read for t in n.outputs):
                out.append(n.outputs[0])
        return out

    def _chase_any(self, t: int) -> int:
        seen = 0
        while t in self.alias and seen <= len(self.alias):
            t, seen = self.alias[t], seen + 1
        return t

    # -- scope groups --------------------------------------------------------------------------

    def _scope_groups(
        self, members: list[tuple[int, str]], parent: str | None, prefix: str
    ) -> None:
        """Group a level's nodes by name scope; a scope with one member, or with the same
        members as the scope around it, makes no group."""
        count: dict[tuple[str, ...], int] = {}
        paths = []
        for first, name in members:
            path = scope_of(name)
            paths.append(path)
            if self.nodes[first].op_type in _QUIET:
                continue  # drawn folded into its reader: no reason for a frame of its own
            for d in range(1, len(path) + 1):
                count[path[:d]] = count.get(path[:d], 0) + 1
        total = sum(self.nodes[first].op_type not in _QUIET for first, _ in members)
        kept: dict[tuple[str, ...], str] = {}
        for path in sorted(count, key=len):
            above = next((path[:d] for d in range(len(path) - 1, 0, -1) if path[:d] in kept), ())
            if count[path] >= 2 and count[path] < (count[above] if above else total):
                gid = self._node_id(prefix + "/".join(path))
                meta: dict[str, Any] = {
                    "name": path[-1],
                    "scope": "/".join(path),
                    "derived": "scope",
                }
                owner = kept.get(above, parent) if above else parent
                if owner is not None:
                    meta["parent_id"] = owner
                self.nodes.append(Node(gid, path[-1], [], [], {}, meta))
                kept[path] = gid
        for (first, _), path in zip(members, paths, strict=True):
            inner = next((path[:d] for d in range(len(path), 0, -1) if path[:d] in kept), None)
            if inner is not None:
                self.nodes[first].metadata["parent_id"] = kept[inner]

    # -- ids -----------------------------------------------------------------------------------

    def _node_id(self, base: str) -> str:
        return unique(base, self._node_ids)

    def _tensor_id(self, base: str) -> str:
        return unique(base, self._tensor_ids)


def _short(name: str) -> str:
    """A function's name without TensorFlow's ``__inference_`` wrapper and numeric suffix."""
    core = name.removeprefix("__inference_").removeprefix("__forward_")
    head, _, tail = core.rpartition("_")
    return head if head and tail.isdigit() else core
