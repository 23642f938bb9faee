"""LightNet JSON IR (specs/lightnet-json-ir.md): ops linked by tensor names, into the shared model.

- Ops become nodes with their names as ids (a repeat gets ``_2`` and a warning); optypes map to
  ONNX by ``op_table``; the optype, params and arg names stay in node metadata.
- ``create`` ops are not nodes: they make constants of declared shape, dtype and values, which
  our model calls weights. The tensor gets ``dims``, ``dtype`` and any values (a lone ``0`` is
  LightNet's zero fill; ``null`` or ``from_file`` gives none); the op's name and params go to
  its metadata under ``create``. LightNet has no graph inputs, so an image placeholder made by
  ``create`` is a weight too. ``zeros`` stays a node, its output typed like ``create``'s; other
  tensors are untyped (``[]`` + ``rank_unknown``, ``undefined``): LightNet infers them at run.
- Warnings, not errors: a tensor used but never defined (it becomes a graph input), used before
  its definition, or an empty tensor name (the port stays unconnected, ``omitted_inputs``).
- Graph outputs are the tensors a node defines and none uses (``print`` uses what it prints).
- Structural faults raise one FormatError naming the JSON path.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.gc_pause import gc_paused
from xocview.formats.json_types import json_type
from xocview.formats.op_table import LIGHTNET_DERIVED, LIGHTNET_OPS, translate
from xocview.formats.source import Source
from xocview.model import Finding, Graph, Node, Tensor
from xocview.model.dotted import (
    expand_dotted_if_possible,
)
from xocview.model.dtypes import DTYPES
from xocview.model.graph import LazyData
from xocview.model.schema import schema_attributes

__all__ = ["EXTENSIONS", "LIGHTNET_DTYPES", "NAME", "load", "read_findings", "sniff"]

_MAX_RANK = 32  # numpy's limit (64 since numpy 2; 32 before)

NAME = "LightNet JSON IR"
EXTENSIONS = (".json",)
EXPANDS_DOTTED_KEYS = True  # params and extra fields go through _expanded

# LightNet's tl_dtype names (src/tl_type.c) and ours.
LIGHTNET_DTYPES = {"TL_FLOAT": "float32", "TL_DOUBLE": "double"} | {
    f"TL_{name.upper()}": name
    for name in ("int32", "int16", "int8", "uint32", "uint16", "uint8", "bool")
}
_TYPED_OPS = ("create", "zeros")  # ops whose dims and dtype params declare their output
_TYPED = {
    "dims": "an array of positive integers",
    "dtype": "a LightNet dtype name such as 'TL_FLOAT'",
}
_OP_KEYS = frozenset({"name", "optype", "tensors_in", "tensors_out", "params"})
_SCALAR = (str, int, float, bool)
_VALUE = "a string, number, boolean, null or an array of strings, numbers or booleans"


def sniff(source: Source) -> str | None:
    """None when the file is LightNet IR, else why not: an ``ops`` array is its only mark."""
    if not source.looks_like_json():
        return "not a JSON object"
    root = source.json
    if not isinstance(root, dict):
        return "the JSON root is not an object"
    for key in ("tensors", "nodes", "operators"):
        if key in root:
            return f"has a '{key}' list (XOC or NNVM JSON), which LightNet IR does not"
    if "ops" not in root:
        return "no 'ops' list at the root"
    return None


def load(source: Source) -> Graph:
    """The graph in a LightNet IR file; FormatError names the first fault and its JSON path."""
    return read_findings(source)[0]


def read_findings(source: Source) -> tuple[Graph, list[Finding]]:
    """The graph and its warnings (undefined tensors, renamed ops, empty tensor names)."""
    with gc_paused():
        ops, extra = _Checker(source.name).document(source.json)
        name = source.path.stem
        return _Builder(
            source.name, Graph(name, name, metadata=expand_dotted_if_possible(extra))
        ).build(ops)


@dataclass
class _Op:
    """One checked op; ``where`` maps each param's arg_name to its index in ``params``."""

    index: int
    name: str
    optype: str
    ins: list[tuple[str, str]]
    outs: list[tuple[str, str]]
    params: dict[str, Any]
    where: dict[str, int]
    extra: dict[str, Any]

    @property
    def place(self) -> str:
        return f"ops[{self.index}]"


class _Checker:
    """Checks the types of every field the model needs; the first fault raises."""

    def __init__(self, file: str) -> None:
        self.file = file

    def fail(self, place: str, problem: str, expected: str | None = None) -> FormatError:
        return FormatError(self.file, place, problem, expected)

    def document(self, root: Any) -> tuple[list[_Op], dict[str, Any]]:
        if not isinstance(root, dict):
            raise self.fail("root", f"is {json_type(root)}", "a JSON object with an 'ops' array")
        raw = self.array(root, "ops", "ops", "an array of op objects")
        if not raw:
            raise self.fail("ops", "the graph is empty (no ops)", "at least one op")
        ops = [self.op(op, i) for i, op in enumerate(raw)]
        return ops, {k: v for k, v in root.items() if k != "ops"}

    def array(self, obj: dict[str, Any], key: str, place: str, expected: str) -> list[Any]:
        value = obj.get(key)
        if type(value) is list:
            return value
        raise self.fail(place, "missing" if key not in obj else f"is {json_type(value)}", expected)

    def string(self, obj: dict[str, Any], key: str, place: str, expected: str) -> str:
        value = obj.get(key)
        if type(value) is str and value:
            return value
        problem = "missing" if key not in obj else "is empty" if value == "" else ""
        raise self.fail(f"{place}.{key}", problem or f"is {json_type(value)}", expected)

    def op(self, raw: Any, i: int) -> _Op:
        place = f"ops[{i}]"
        if not isinstance(raw, dict):
            raise self.fail(place, f"is {json_type(raw)}", "an op object with 'name' and 'optype'")
        name = self.string(raw, "name", place, "a non-empty op name")
        optype = self.string(raw, "optype", place, "an operator type such as 'conv2d'")
        args: dict[str, str] = {}
        ins = self.tensors(raw, "tensors_in", place, args)
        outs = self.tensors(raw, "tensors_out", place, args)
        extra = {k: v for k, v in raw.items() if k not in _OP_KEYS}
        op = _Op(i, name, optype, ins, outs, {}, {}, extra)
        for k, prm in enumerate(self.array(raw, "params", f"{place}.params", "an array")):
            p = f"{place}.params[{k}]"
            if not isinstance(prm, dict):
                raise self.fail(p, f"is {json_type(prm)}", "an object with 'arg_name' and 'value'")
            arg = self.arg_name(prm, p, args)
            value = prm.get("value")
            if "value" not in prm or not _is_value(value):
                raise self.fail(
                    f"{p}.value", f"is {json_type(value)}" if "value" in prm else "missing", _VALUE
                )
            op.params[arg], op.where[arg] = value, k
        if optype in _TYPED_OPS:
            self.typed(op)
        return op

    def tensors(
        self, raw: dict[str, Any], key: str, place: str, args: dict[str, str]
    ) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for k, t in enumerate(self.array(raw, key, f"{place}.{key}", "an array")):
            p = f"{place}.{key}[{k}]"
            if not isinstance(t, dict):
                raise self.fail(p, f"is {json_type(t)}", "an object with 'arg_name' and 'name'")
            arg = self.arg_name(t, p, args)
            name = t.get("name")
            if type(name) is not str:
                problem = "missing" if "name" not in t else f"is {json_type(name)}"
                raise self.fail(f"{p}.name", problem, "a tensor name (a string)")
            out.append((arg, name))
        return out

    def arg_name(self, obj: dict[str, Any], place: str, args: dict[str, str]) -> str:
        """The spec makes an arg_name unique among an op's tensors and params together."""
        arg = self.string(obj, "arg_name", place, "an argument name (a non-empty string)")
        if arg in args:
            raise self.fail(
                f"{place}.arg_name",
                f"arg_name '{arg}' is already used at {args[arg]}",
                "each arg_name once per op",
            )
        args[arg] = place
        return arg

    def typed(self, op: _Op) -> None:
        """``create`` and ``zeros`` must declare their output; ``create`` makes one tensor."""
        named = [name for _, name in op.outs if name]
        if op.optype == "create" and (op.ins or len(op.outs) != 1 or not named):
            raise self.fail(
                op.place,
                f"create op '{op.name}' has {len(op.ins)} tensors_in and "
                f"{len(named)} named tensors_out",
                "0 and 1: create makes one tensor from its params",
            )
        dims, dtype = op.params.get("dims"), op.params.get("dtype")
        for key, ok in (
            ("dims", type(dims) is list and all(type(d) is int and d > 0 for d in dims)),
            ("dtype", type(dtype) is str),
        ):
            if key not in op.params:
                raise self.fail(
                    f"{op.place}.params", f"no '{key}' in this {op.optype} op", _TYPED[key]
                )
            if not ok:
                place = f"{op.place}.params[{op.where[key]}].value"
                raise self.fail(place, f"is {_describe(op.params[key])}", _TYPED[key])


class _Builder:
    """Walks the checked ops once, linking tensors by name and collecting warnings."""

    def __init__(self, file: str, graph: Graph) -> None:
        self.file = file
        self.graph = graph
        self.found: list[Finding] = []
        self.pos: dict[str, int] = {}  # tensor name -> index in graph.tensors
        self.defined: dict[str, tuple[str, str]] = {}  # tensor name -> (op name, place)
        self.early: dict[int, list[tuple[str, str]]] = {}  # used, not yet defined: (op, place)
        self.consumed: set[int] = set()
        self.produced: set[int] = set()
        self.first_op: dict[str, int] = {}
        self.node_ids: set[str] = set()

    def warn(self, place: str, message: str) -> None:
        self.found.append(Finding("warning", place, message))

    def build(self, ops: list[_Op]) -> tuple[Graph, list[Finding]]:
        for op in ops:
            nid = self.op_id(op)
            if op.optype == "create":
                self.create(op)
            else:
                self.node(op, nid)
        self.finish()
        self.found.sort(key=lambda f: int(f.place[4 : f.place.index("]")]))  # file order
        self.graph.invalidate()
        return self.graph, self.found

    def op_id(self, op: _Op) -> str:
        """The op's name, suffixed when an earlier op has it already."""
        first = self.first_op.setdefault(op.name, op.index)
        nid, k = op.name, 2
        while nid in self.node_ids:
            nid, k = f"{op.name}_{k}", k + 1
        self.node_ids.add(nid)
        if first != op.index:
            shown = "it makes a weight" if op.optype == "create" else f"its node id is '{nid}'"
            self.warn(
                f"{op.place}.name",
                f"duplicate op name '{op.name}' (first at ops[{first}]); {shown}",
            )
        return nid

    # -- tensors -------------------------------------------------------------------------------

    def declared(self, op: _Op) -> tuple[list[int], str]:
        """Shape and dtype of a typed op's output; an unknown dtype name warns."""
        raw = op.params["dtype"]
        if raw not in LIGHTNET_DTYPES:
            self.warn(
                f"{op.place}.params[{op.where['dtype']}].value",
                f"unknown LightNet dtype '{raw}' (known: {', '.join(LIGHTNET_DTYPES)}); "
                "the tensor's dtype is shown as undefined",
            )
        return list(op.params["dims"]), LIGHTNET_DTYPES.get(raw, "undefined")

    def use(self, name: str, place: str, op: _Op) -> int:
        t = self.pos.get(name)
        if t is None:
            t = self.pos[name] = len(self.graph.tensors)
            self.graph.tensors.append(_untyped(name))
            self.early[t] = []
        if t in self.early:
            self.early[t].append((op.name, place))
        self.consumed.add(t)
        return t

    def define(self, name: str, place: str, op: _Op, tensor: Tensor) -> int:
        """Add (or complete, after an early use) the tensor ``op`` defines."""
        if name in self.defined:
            by, where = self.defined[name]
            raise FormatError(
                self.file,
                place,
                f"tensor '{name}' is already defined by op '{by}' ({where})",
                "a new tensor name (each tensor is defined by one op's tensors_out)",
            )
        self.defined[name] = (op.name, place)
        t = self.pos.get(name)
        if t is None:
            t = self.pos[name] = len(self.graph.tensors)
            self.graph.tensors.append(tensor)
            return t
        self.graph.tensors[t] = tensor
        user, where = self.early.pop(t)[0]
        self.warn(
            where,
            f"tensor '{name}' is used by op '{user}' before op '{op.name}' ({place}) defines "
            "it; LightNet needs each tensor defined first",
        )
        return t

    def create(self, op: _Op) -> None:
        name = op.outs[0][1]
        shape, dtype = self.declared(op)
        metadata = {"create": {"name": op.name, "params": expand_dotted_if_possible(op.params)}}
        tensor = Tensor(name, "weight", shape, dtype, metadata, self.values(op, shape, dtype))
        self.define(name, f"{op.place}.tensors_out[0]", op, tensor)

    def values(self, op: _Op, shape: list[int], dtype: str) -> np.ndarray | LazyData | None:
        """The create op's ``data``: all values, or one 0 for LightNet's zero fill."""
        data = op.params.get("data")
        np_type = DTYPES[dtype].numpy if dtype in DTYPES else None
        if data is None or op.params.get("from_file") is True or np_type is None:
            return None
        size = math.prod(shape)
        if len(shape) > _MAX_RANK:
            self.warn(
                f"{op.place}.params[{op.where.get('shape', 0)}].value",
                f"the shape has {len(shape)} dimensions, more than an array holds "
                f"({_MAX_RANK}); its values are not loaded",
            )
            return None
        if type(data) is list and all(isinstance(v, (int, float)) for v in data):
            if len(data) == size:
                return np.asarray(data, dtype=np.float64).astype(np_type).reshape(shape)
            if data == [0]:
                return partial(np.zeros, tuple(shape), dtype=np_type)
        self.warn(
            f"{op.place}.params[{op.where['data']}].value",
            f"data is {_describe(data)}, not {size} numbers; its values are not loaded",
        )
        return None

    # -- nodes ---------------------------------------------------------------------------------

    def node(self, op: _Op, nid: str) -> None:
        metadata: dict[str, Any] = {"op": op.optype}
        if op.params:
            metadata["params"] = expand_dotted_if_possible(op.params)
        metadata["arg_names"] = {
            "tensors_in": [arg for arg, _ in op.ins],
            "tensors_out": [arg for arg, _ in op.outs],
        }
        if nid != op.name:
            metadata["name"] = op.name
        for side, key, ports in (
            ("input", "tensors_in", op.ins),
            ("output", "tensors_out", op.outs),
        ):
            omitted = [k for k, (_, name) in enumerate(ports) if not name]
            for k in omitted:
                self.warn(
                    f"{op.place}.{key}[{k}]",
                    f"op '{op.name}' names no tensor for {side} '{ports[k][0]}'; left unconnected",
                )
            if omitted:
                metadata[f"omitted_{side}s"] = omitted
        if op.extra:
            metadata["fields"] = expand_dotted_if_possible(op.extra)
        place = op.place
        inputs = [
            self.use(n, f"{place}.tensors_in[{k}]", op) for k, (_, n) in enumerate(op.ins) if n
        ]
        outputs = [
            self.make(n, f"{place}.tensors_out[{k}]", op) for k, (_, n) in enumerate(op.outs) if n
        ]
        op_type, attributes = _translated(op)
        self.graph.nodes.append(Node(nid, op_type, inputs, outputs, attributes, metadata))

    def make(self, name: str, place: str, op: _Op) -> int:
        """A node's output: typed by ``zeros``' params, else left for LightNet to infer."""
        if op.optype in _TYPED_OPS:
            tensor = Tensor(name, "activation", *self.declared(op))
        else:
            tensor = _untyped(name)
        t = self.define(name, place, op, tensor)
        self.produced.add(t)
        return t

    def finish(self) -> None:
        """Undefined tensors become graph inputs; unused node results, graph outputs."""
        graph = self.graph
        for t, users in self.early.items():
            tensor = graph.tensors[t]
            ops = list(dict.fromkeys(user for user, _ in users))
            names = ", ".join(f"'{u}'" for u in ops)
            said = f"used by op{'s' if len(ops) > 1 else ''} {names} but never defined"
            tensor.kind = "input"
            tensor.metadata = {"undefined": said, **tensor.metadata}
            graph.inputs.append(t)
            self.warn(users[0][1], f"tensor '{tensor.id}' is {said}; shown as a graph input")
        for t in sorted(self.produced - self.consumed):
            graph.tensors[t].kind = "output"
            graph.outputs.append(t)


def _untyped(name: str) -> Tensor:
    """A tensor whose shape and dtype LightNet infers only when it runs."""
    return Tensor(name, "activation", [], "undefined", {"rank_unknown": True})


def _translated(op: _Op) -> tuple[str, dict[str, Any]]:
    """The ONNX op type and the attributes its schema defines; else the optype and none."""
    found = translate(LIGHTNET_OPS, op.optype, op.params)
    if found is None:
        return op.optype, {}
    derive = LIGHTNET_DERIVED.get(op.optype)
    raw = {**found.attributes, **(derive(op.params) if derive else {})}
    allowed = schema_attributes(found.op_type) or frozenset()
    return found.op_type, {k: v for k, v in raw.items() if v is not None and k in allowed}


def _is_value(value: Any) -> bool:
    if value is None or isinstance(value, _SCALAR):
        return True
    return type(value) is list and all(isinstance(v, _SCALAR) for v in value)


def _describe(value: Any) -> str:
    """A value for a message: short ones shown, long ones by type."""
    text = json.dumps(value)
    return text if len(text) <= 40 else json_type(value)
