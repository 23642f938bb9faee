"""ONNX's inference of one node's output types, remembered by everything that decides it.

Re-inference after an edit asks ONNX (``infer_node_outputs``, the per-node part of
``onnx.shape_inference``) for each node the edit reaches. A 20k-node model built of repeated
blocks asks the same question thousands of times: the answer is remembered by the operator's
schema (domain, op, version), its attributes, its input types and the values of its small
integer inputs (a Reshape's shape), so each distinct block costs one inference.

Types travel as ``TType`` tuples: (dtype, shape, dim symbols or None, unknown rank), with -1
for a size nobody knows, as ``Tensor`` keeps them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

from xocview.model.attribute_tensor import AttributeTensor
from xocview.model.dtypes import DTYPES, dtype_by_onnx_code, numpy_type
from xocview.model.graph import Graph, Node, Tensor

__all__ = [
    "ONNX_DOMAINS",
    "UNKNOWN_RANK",
    "TType",
    "clear_memo",
    "infer_ids",
    "memo_key",
    "node_schema",
    "remembered",
    "schema_key",
    "start_walk",
    "tensor_ttype",
    "type_id",
    "values_key",
]

TType = tuple[str, tuple[int, ...], tuple[str | None, ...] | None, bool]
UNKNOWN_RANK: tuple[int, ...] = ()

# Domains whose operators ONNX's schemas define; the others' ops have no inference here.
ONNX_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})
# The default-domain opset assumed for a graph that names none (the writer's preferred one).
DEFAULT_OPSET = 21
SMALL_VALUES = 64  # a tensor attribute's values are read for inference up to this many
MEMO_LIMIT = 1 << 16  # remembered answers, dropped all at once past this (a cache, not a log)

_MEMO: dict[Hashable, tuple[int, ...] | None] = {}
_A = onnx.AttributeProto


def clear_memo() -> None:
    """Forget every remembered answer (for benchmarks that time a cold start)."""
    _MEMO.clear()
    _TYPE_IDS.clear()
    TYPES.clear()
    INTEGER_TYPES.clear()


def start_walk() -> None:
    """Called before a walk: the type ids stay valid through it; between walks, a table grown
    past its bound is dropped."""
    if len(TYPES) > 4 * MEMO_LIMIT:
        clear_memo()


def tensor_ttype(t: Tensor) -> TType | None:
    """A tensor's type as inference takes it; None for a sequence, map or optional."""
    meta = t.metadata
    if not meta:
        return t.dtype, tuple(t.shape), None, False
    kind = meta.get("type")
    if kind is not None and kind not in ("tensor", "sparse_tensor"):
        return None
    if meta.get("rank_unknown"):
        return t.dtype, UNKNOWN_RANK, None, True
    shape = tuple(t.shape)
    symbols = meta.get("shape_symbols")
    if symbols.__class__ is list and len(symbols) == len(shape) and any(symbols):
        names = tuple(s if s.__class__ is str and s else None for s in symbols)
        return t.dtype, shape, names if any(names) else None, False
    return t.dtype, shape, None, False


@lru_cache(maxsize=4096)
def _type_proto(ttype: TType) -> onnx.TypeProto:
    dtype, shape, symbols, rank_unknown = ttype
    info = DTYPES.get(dtype)
    tp = onnx.TypeProto()
    tt = tp.tensor_type
    tt.elem_type = info.onnx_code if info is not None else 0
    if rank_unknown:
        return tp
    tt.shape.SetInParent()  # a scalar has an empty shape, not an unknown rank
    for k, d in enumerate(shape):
        dim = tt.shape.dim.add()
        if d >= 0:
            dim.dim_value = d
        elif symbols is not None and isinstance(symbols[k], str) and symbols[k]:
            dim.dim_param = symbols[k]
    return tp


def _ttype_of(tp: onnx.TypeProto) -> TType | None:
    if tp.WhichOneof("value") != "tensor_type":
        return None
    tt = tp.tensor_type
    found = dtype_by_onnx_code(tt.elem_type)
    dtype = found.name if found is not None else "undefined"
    if not tt.HasField("shape"):
        return dtype, UNKNOWN_RANK, None, True
    dims = tt.shape.dim
    shape = tuple(int(d.dim_value) if d.HasField("dim_value") else -1 for d in dims)
    syms = tuple(d.dim_param or None if not d.HasField("dim_value") else None for d in dims)
    return dtype, shape, syms if any(syms) else None, False


def graph_opsets(graph: Graph) -> dict[str, int]:
    """The graph's opset imports (domain "" for the default), as its source named them."""
    found: dict[str, int] = {}
    entries = graph.metadata.get("opset_import")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, dict):
            domain, version = entry.get("domain"), entry.get("version")
            if isinstance(domain, str) and isinstance(version, int) and 0 < version < 2**31:
                found.setdefault("" if domain == "ai.onnx" else domain, version)
    return found


@lru_cache(maxsize=4096)
def _schema(op: str, version: int, domain: str) -> onnx.defs.OpSchema | None:
    try:
        return onnx.defs.get_schema(op, version, domain)
    except onnx.defs.SchemaError:
        return None


@lru_cache(maxsize=4096)
def _fitting(op: str, domain: str, attrs: frozenset[str]) -> onnx.defs.OpSchema | None:
    """For a graph that names no opset: the newest schema up to the preferred opset whose
    attributes include the node's (LightNet's Reshape keeps Reshape-1's ``shape``)."""
    version = DEFAULT_OPSET if domain == "" else 2**31 - 1
    while version > 0:
        schema = _schema(op, version, domain)
        if schema is None:
            return None
        if attrs <= set(schema.attributes):
            return schema
        version = schema.since_version - 1
    return None


def node_schema(node: Node, opsets: Mapping[str, int]) -> onnx.defs.OpSchema | None:
    """The ONNX schema in force for ``node`` at the graph's opset; None for an op of a domain
    ONNX does not define, a function call or an op its opset does not have."""
    domain = node.metadata.get("domain", "")
    if not isinstance(domain, str) or domain not in ONNX_DOMAINS:
        return None
    domain = "" if domain == "ai.onnx" else domain
    version = opsets.get(domain)
    if version is None:
        return _fitting(node.op_type, domain, frozenset(node.attributes))
    return _schema(node.op_type, version, domain)


def _attr_proto(name: str, value: Any, kind: Any) -> onnx.AttributeProto | None:
    """The AttributeProto of a JSON attribute value of schema type ``kind``; None for one
    inference cannot take here (a body graph, a value of the wrong type)."""
    code = int(kind)
    if code == _A.TENSOR:
        tensor = _tensor_proto(value.get("tensor") if isinstance(value, dict) else None)
        return None if tensor is None else helper.make_attribute(name, tensor)
    if code in (_A.GRAPH, _A.GRAPHS, _A.SPARSE_TENSOR, _A.TENSORS):
        return None
    try:
        return helper.make_attribute(name, value, attr_type=code)
    except (TypeError, ValueError):
        return None


def _tensor_proto(summary: Any) -> onnx.TensorProto | None:
    """A tensor attribute (Constant's value): its values when they are at hand, else its
    dtype and shape alone, which is all that type inference reads."""
    if not isinstance(summary, dict):
        return None
    dtype, shape, values = summary.get("dtype"), summary.get("shape"), summary.get("values")
    np_type = numpy_type(dtype) if isinstance(dtype, str) else None
    if np_type is None or not isinstance(shape, list):
        return None
    try:
        small = math.prod(int(d) for d in shape) <= SMALL_VALUES  # else: the type only
        lazy = isinstance(summary, AttributeTensor) and summary.has_data and values is None
        if lazy and small and isinstance(summary, AttributeTensor):
            return numpy_helper.from_array(np.asarray(summary.array()))
        if isinstance(values, list) and len(values) <= SMALL_VALUES and np_type.kind in "biuf":
            return numpy_helper.from_array(np.array(values, dtype=np_type).reshape(shape))
    except Exception:  # values that do not fit the summary: type only
        pass
    proto = onnx.TensorProto()
    proto.data_type = DTYPES[str(dtype)].onnx_code
    proto.dims.extend(int(d) for d in shape)
    return proto


# Types as small ints, so that a memo key hashes fast: the same tuple always gets one id.
_TYPE_IDS: dict[TType, int] = {}
TYPES: list[TType] = []
INTEGER_TYPES: set[int] = set()  # ids of integer types (shapes, axes: their values count)
_INTEGERS = frozenset(
    {"int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool"}
)


def type_id(ttype: TType) -> int:
    """The id of a type (see ``TYPES``), made on first sight."""
    found = _TYPE_IDS.get(ttype)
    if found is None:
        found = _TYPE_IDS[ttype] = len(TYPES)
        TYPES.append(ttype)
        if ttype[0] in _INTEGERS:
            INTEGER_TYPES.add(found)
    return found


def memo_key(schema_key: Hashable, node: Node, in_ids: tuple[int, ...], data: Any) -> Hashable:
    """What decides ``node``'s output types: schema (or whoever else answers), attributes
    (their repr tells every JSON value apart), input type ids, the values of its small
    integer inputs (``values_key``), and which optional inputs and outputs it leaves out."""
    meta = node.metadata
    gaps = None
    if meta and ("omitted_inputs" in meta or "omitted_outputs" in meta):
        gaps = repr((meta.get("omitted_inputs"), meta.get("omitted_outputs")))
    return (schema_key, repr(node.attributes), gaps, len(node.outputs), in_ids, data)


def values_key(in_data: Sequence[np.ndarray | None]) -> tuple[Any, ...]:
    """The known input values as a memo key part: dtype, shape and bytes of each."""
    return tuple(None if d is None else (d.dtype.str, d.shape, d.tobytes()) for d in in_data)


def schema_key(schema: onnx.defs.OpSchema) -> tuple[str, str, int]:
    return schema.domain, schema.name, schema.since_version


_MISSING = object()


def infer_ids(
    schema: onnx.defs.OpSchema,
    node: Node,
    key: Hashable,
    in_ids: Sequence[int],
    in_data: Sequence[np.ndarray | None],
) -> tuple[int, ...] | None:
    """The type ids ONNX infers for ``node``'s outputs (-1 for one it cannot tell), from its
    inputs' type ids and the values known; None when it infers nothing. Remembered by
    ``key`` (``memo_key``)."""
    return remembered(key, lambda: _ask(schema, node, [TYPES[k] for k in in_ids], in_data))


def remembered(
    key: Hashable, ask: Callable[[], Sequence[TType | None] | None]
) -> tuple[int, ...] | None:
    """The answer remembered by ``key``, else ``ask()``'s as type ids (-1 for an output it
    cannot tell), remembered. One memo for ONNX's answers and the fallback's, so that both
    go with the type table they number (``clear_memo``)."""
    found = _MEMO.get(key, _MISSING)
    if found is not _MISSING:
        return found  # type: ignore[return-value]
    if len(_MEMO) >= MEMO_LIMIT:
        _MEMO.clear()
    types = ask()
    made = None if types is None else tuple(-1 if t is None else type_id(t) for t in types)
    _MEMO[key] = made
    return made


def _names(count: int, omitted: Any, prefix: str) -> list[str]:
    """Positional names of a node's values with "" where the file left an optional one out."""
    gaps = set(omitted) if isinstance(omitted, list) else set()
    names: list[str] = []
    k = 0
    while k < count:
        if len(names) in gaps:
            names.append("")
        else:
            names.append(f"{prefix}{k}")
            k += 1
    return names


def _ask(
    schema: onnx.defs.OpSchema,
    node: Node,
    in_types: Sequence[TType | None],
    in_data: Sequence[np.ndarray | None],
) -> tuple[TType | None, ...] | None:
    if any(t is None for t in in_types):
        return None
    attrs = []
    for name, value in node.attributes.items():
        kind = schema.attributes.get(name)
        if kind is None or value is None:
            continue  # not this version's: the writer would refuse it; inference ignores it
        proto = _attr_proto(name, value, kind.type)
        if proto is None:
            return None
        attrs.append(proto)
    ins = _names(len(in_types), node.metadata.get("omitted_inputs"), "i")
    outs = _names(len(node.outputs), node.metadata.get("omitted_outputs"), "o")
    proto = helper.make_node(schema.name, ins, outs, domain=schema.domain)
    proto.attribute.extend(attrs)
    named = [n for n in ins if n]
    types = {n: _type_proto(t) for n, t in zip(named, in_types, strict=True) if t is not None}
    data = {
        n: numpy_helper.from_array(d) for n, d in zip(named, in_data, strict=True) if d is not None
    }
    opset = [helper.make_opsetid(schema.domain, schema.since_version)]
    try:
        found = onnx.shape_inference.infer_node_outputs(schema, proto, types, data, None, opset)
    except Exception:  # ONNX refuses the types or attributes: nothing is inferred
        return None
    return tuple(_ttype_of(found[n]) if n in found else None for n in outs if n)
