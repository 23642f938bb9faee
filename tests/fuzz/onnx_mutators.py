"""Protobuf-level mutations of ONNX models: dims, data, dtypes, external data, wire types, nesting.

Each mutator parses the seed with ``onnx``, changes fields and serialises it again; damage that
protobuf will not serialise (invalid UTF-8 in string fields, wrong wire types, subgraphs nested
deeper than its parser allows) is patched into the serialised bytes.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from typing import Any

import onnx
from onnx import helper

from tests.fuzz.mutators import Mutant

__all__ = ["ONNX_MUTATORS", "tiny_model"]

SIDE = "weights.bin"
SIDE_BYTES = bytes(range(64))


def _model(data: bytes) -> onnx.ModelProto:
    return onnx.ModelProto.FromString(data)


def _tensors(m: onnx.ModelProto) -> list[onnx.TensorProto]:
    out = list(m.graph.initializer)
    for node in m.graph.node:
        out += [a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR]
    return out


def _shapes(m: onnx.ModelProto) -> list[onnx.TensorShapeProto]:
    infos = [*m.graph.input, *m.graph.output, *m.graph.value_info]
    return [v.type.tensor_type.shape for v in infos if v.type.HasField("tensor_type")]


def _done(m: onnx.ModelProto, desc: str, **side: bytes) -> Mutant:
    return Mutant(desc, m.SerializeToString(), side_files=dict(side))


def huge_dims(rng: random.Random, data: bytes) -> Mutant:
    m = _model(data)
    tensors, shapes = _tensors(m), _shapes(m)
    new = rng.choice(([10**9, 10**9], [10**9] * 4, [-5], [2**62, 2**62], [0, 7], [1] * 64))
    if tensors and (rng.random() < 0.6 or not shapes):
        t = rng.choice(tensors)
        del t.dims[:]
        t.dims.extend(new)
        return _done(m, f"onnx.huge_dims initializer {t.name!r} dims := {new}")
    if not shapes:
        return wire_type(rng, data)
    s = rng.choice(shapes)
    del s.dim[:]
    for d in new:
        s.dim.add().dim_value = d
    return _done(m, f"onnx.huge_dims value shape := {new}")


def short_data(rng: random.Random, data: bytes) -> Mutant:
    """Initializer data that does not match its dims: short, long, or typed fields miscounted."""
    m = _model(data)
    tensors = _tensors(m)
    if not tensors:
        return huge_dims(rng, data)
    t = rng.choice(tensors)
    how = rng.choice(("raw", "raw", "typed", "both", "empty"))
    if how == "raw":
        n = rng.choice((0, 1, 3, 7, 16))
        t.ClearField("float_data")
        t.ClearField("int64_data")
        t.ClearField("int32_data")
        t.raw_data = bytes(n)
    elif how == "typed":
        t.ClearField("raw_data")
        t.float_data[:] = [1.0, 2.0, 3.0]
    elif how == "both":
        t.float_data[:] = [1.0]
        t.raw_data = bytes(12)
    else:
        for name in ("raw_data", "float_data", "int64_data", "int32_data", "double_data"):
            t.ClearField(name)
        del t.dims[:]
        t.dims.extend([4, 4])
    return _done(m, f"onnx.short_data initializer {t.name!r} ({how})")


def data_type(rng: random.Random, data: bytes) -> Mutant:
    m = _model(data)
    new = rng.choice((0, 999, -1, 8, 16, 17, 21, 22, 9, 14))
    tensors = _tensors(m)
    if tensors and rng.random() < 0.6:
        t = rng.choice(tensors)
        t.data_type = new
        return _done(m, f"onnx.data_type initializer {t.name!r} := {new}")
    infos = [v for v in (*m.graph.input, *m.graph.output) if v.type.HasField("tensor_type")]
    if not infos:
        return huge_dims(rng, data)
    v = rng.choice(infos)
    v.type.tensor_type.elem_type = new
    return _done(m, f"onnx.data_type value {v.name!r} elem_type := {new}")


_LOCATIONS = (SIDE, "../" + SIDE, "/etc/passwd", "a\0b", "missing.bin", "", ".", "/dev/zero")
_NUMBERS = ("-1", "abc", "0", "99999999999", "1e3", "9" * 5000, "", " 8", "0x10")


def external_data(rng: random.Random, data: bytes) -> Mutant:
    m = _model(data)
    if not m.graph.initializer:
        return huge_dims(rng, data)
    t = rng.choice(m.graph.initializer)
    for name in ("raw_data", "float_data", "int64_data", "int32_data", "double_data"):
        t.ClearField(name)
    del t.external_data[:]
    t.data_location = onnx.TensorProto.EXTERNAL
    entries = {"location": rng.choice(_LOCATIONS)}
    if rng.random() < 0.7:
        entries["offset"] = rng.choice(_NUMBERS)
    if rng.random() < 0.7:
        entries["length"] = rng.choice((*_NUMBERS, "1000000000", "64"))
    if rng.random() < 0.1:
        entries = {"offset": "0"}  # no location at all
    for k, v in entries.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    shown = {k: (v[:12] + "...") if len(v) > 12 else v for k, v in entries.items()}
    return _done(m, f"onnx.external_data {t.name!r} {shown}", **{SIDE: SIDE_BYTES})


def _small_graph(name: str) -> onnx.GraphProto:
    out = helper.make_tensor_value_info(f"{name}_out", onnx.TensorProto.FLOAT, [1])
    const = helper.make_node(
        "Constant", [], [f"{name}_out"], value=helper.make_tensor("v", 1, [1], [1.0])
    )
    return helper.make_graph([const], name, [], [out])


def graph_attr(rng: random.Random, data: bytes) -> Mutant:
    """A graph-valued attribute on a node that is not If/Loop/Scan, or a control op without one."""
    m = _model(data)
    if not m.graph.node:
        return huge_dims(rng, data)
    node = rng.choice(m.graph.node)
    if rng.random() < 0.7:
        name = rng.choice(("score_mod", "body", "then_branch", "x"))
        node.attribute.append(helper.make_attribute(name, _small_graph(name)))
        return _done(m, f"onnx.graph_attr node {node.name!r} ({node.op_type}) gets graph {name!r}")
    old, node.op_type = node.op_type, rng.choice(("If", "Loop", "Scan"))
    return _done(m, f"onnx.graph_attr node {node.name!r} op {old} := {node.op_type}, no branches")


_MARK = b"XOCFUZZMARK0123"
_BAD = (b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x80")


def bad_utf8(rng: random.Random, data: bytes) -> Mutant:
    """Invalid UTF-8 in a string field, patched into the bytes (protobuf will not write it)."""
    m = _model(data)
    g = m.graph
    prop = m.metadata_props.add()
    prop.key, prop.value = "k", "v"
    # (place, message, field): a string field of a message, or an index into a repeated one
    fields: list[tuple[str, Any, str | int]] = [
        ("graph.name", g, "name"),
        ("producer_name", m, "producer_name"),
        ("doc_string", m, "doc_string"),
        ("metadata_props.value", prop, "value"),
    ]
    for i, n in enumerate(g.node):
        fields += [(f"node[{i}].name", n, "name"), (f"node[{i}].op_type", n, "op_type")]
        if n.input:
            fields.append((f"node[{i}].input[0]", n.input, 0))
        if n.attribute:
            fields.append((f"node[{i}].attribute[0].name", n.attribute[0], "name"))
    fields += [(f"initializer[{i}].name", t, "name") for i, t in enumerate(g.initializer)]
    fields += [(f"input[{i}].name", v, "name") for i, v in enumerate(g.input)]
    where, holder, key = rng.choice(fields)
    if isinstance(key, int):
        holder[key] = _MARK.decode()
    else:
        setattr(holder, key, _MARK.decode())
    bad = rng.choice(_BAD)
    patch = (bad + _MARK)[: len(_MARK)] if rng.random() < 0.5 else (_MARK[:7] + bad + _MARK)[:15]
    out = m.SerializeToString().replace(_MARK, patch)
    return Mutant(f"onnx.bad_utf8 {where} := {patch!r}", out)


def _varint(buf: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(buf) or shift > 63:
            raise ValueError("bad varint")
        b = buf[at]
        value |= (b & 0x7F) << shift
        at += 1
        shift += 7
        if not b & 0x80:
            return value, at


def _tag_offsets(buf: bytes, start: int, end: int, depth: int = 0) -> list[int]:
    """Offsets of every tag in a message, descending into fields that parse as messages."""
    tags: list[int] = []
    at = start
    while at < end:
        tag_at = at
        key, at = _varint(buf, at)
        wire = key & 7
        if wire == 0:
            _, at = _varint(buf, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        elif wire == 2:
            n, at = _varint(buf, at)
            if at + n > end:  # checked first: a child must lie inside its parent
                raise ValueError("overrun")
            if depth < 40:
                with contextlib.suppress(ValueError):
                    tags += _tag_offsets(buf, at, at + n, depth + 1)
            at += n
        else:
            raise ValueError("unsupported wire type")
        if at > end or key >> 3 == 0:
            raise ValueError("overrun")
        tags.append(tag_at)
    return tags


def wire_type(rng: random.Random, data: bytes) -> Mutant:
    """A tag's wire type changed (the low 3 bits of its first byte), framing left as it was."""
    tags = _tag_offsets(data, 0, len(data))
    at = rng.choice(tags)
    old = data[at] & 7
    new = rng.choice([w for w in range(8) if w != old])
    buf = bytearray(data)
    buf[at] = (buf[at] & ~7) | new
    return Mutant(f"onnx.wire_type tag at byte {at}: wire type {old} := {new}", bytes(buf))


def _field(number: int, payload: bytes) -> bytes:
    return _enc((number << 3) | 2) + _enc(len(payload)) + payload


def _enc(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def deep_subgraph(rng: random.Random, data: bytes) -> Mutant:
    """An If whose then_branch holds an If ... ``depth`` levels down, spliced in as bytes."""
    m = _model(data)
    depth = rng.choice((30, 100, 101, 500, 2000))
    graph = _field(2, b"g0")  # GraphProto.name
    for i in range(depth):
        attr = _field(1, b"then_branch") + _field(6, graph) + _enc(20 << 3) + _enc(5)
        node = _field(1, b"cond") + _field(2, f"o{i}".encode()) + _field(4, b"If")
        graph = _field(1, node + _field(5, attr)) + _field(2, f"g{i + 1}".encode())
    top = _field(1, b"cond") + _field(2, b"deep_out") + _field(4, b"If")
    top += _field(5, _field(1, b"then_branch") + _field(6, graph) + _enc(20 << 3) + _enc(5))
    main = m.graph.SerializeToString() + _field(1, top)
    m.ClearField("graph")
    return Mutant(f"onnx.deep_subgraph depth {depth}", m.SerializeToString() + _field(7, main))


def field_tweak(rng: random.Random, data: bytes) -> Mutant:
    """Semantic damage: unknown ops and names, odd opsets, huge or negative attribute values."""
    m = _model(data)
    g = m.graph
    how = rng.choice(("op", "input", "opset", "ir", "attr", "output", "dup", "sparse"))
    if how == "op" and g.node:
        rng.choice(g.node).op_type = rng.choice(("NoSuchOp", "", "conv", "Conv2D"))
    elif how == "input" and g.node and any(n.input for n in g.node):
        node = rng.choice([n for n in g.node if n.input])
        node.input[rng.randrange(len(node.input))] = rng.choice(("nowhere", "", node.output[0]))
    elif how == "opset":
        for op in m.opset_import:
            op.version = rng.choice((0, -1, 10**6, 2**62))
    elif how == "ir":
        m.ir_version = rng.choice((0, -1, 10**6))
    elif how == "attr" and any(n.attribute for n in g.node):
        node = rng.choice([n for n in g.node if n.attribute])
        a = rng.choice(node.attribute)
        if a.ints:
            a.ints[:] = [rng.choice((-5, 0, 2**62))] * len(a.ints)
        else:
            a.type = rng.choice((0, 99, onnx.AttributeProto.INTS, onnx.AttributeProto.GRAPH))
    elif how == "output" and g.output:
        g.output[0].name = rng.choice(("nowhere", ""))
    elif how == "dup" and g.node:
        g.node.append(g.node[rng.randrange(len(g.node))])
    else:
        values = helper.make_tensor("sp_values", onnx.TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
        idx = helper.make_tensor("sp_idx", onnx.TensorProto.INT64, [3], [0, 5, 10**12])
        g.sparse_initializer.append(helper.make_sparse_tensor(values, idx, [4]))
        how = "sparse"
    return _done(m, f"onnx.field_tweak {how}")


ONNX_MUTATORS: dict[str, Callable[[random.Random, bytes], Mutant]] = {
    "onnx.huge_dims": huge_dims,
    "onnx.short_data": short_data,
    "onnx.data_type": data_type,
    "onnx.external_data": external_data,
    "onnx.graph_attr": graph_attr,
    "onnx.bad_utf8": bad_utf8,
    "onnx.wire_type": wire_type,
    "onnx.deep_subgraph": deep_subgraph,
    "onnx.field_tweak": field_tweak,
}


def tiny_model() -> tuple[bytes, dict[str, bytes]]:
    """A small runnable model with every kind of weight storage, an If, and external data."""
    import numpy as np

    f = onnx.TensorProto.FLOAT
    w = helper.make_tensor("W", f, [4, 3], np.arange(12, dtype=np.float32).tobytes(), raw=True)
    b = helper.make_tensor("B", f, [3], [0.5, -0.5, 1.0])
    shape = helper.make_tensor("S", onnx.TensorProto.INT64, [2], [3, 1])
    cond = helper.make_tensor("C", onnx.TensorProto.BOOL, [], [True])
    ext = helper.make_tensor("E", f, [3, 1], [0.0] * 3)
    ext.ClearField("float_data")
    ext.data_location = onnx.TensorProto.EXTERNAL
    for k, v in (("location", SIDE), ("offset", "0"), ("length", "12")):
        e = ext.external_data.add()
        e.key, e.value = k, v
    then_g = helper.make_graph(
        [helper.make_node("Identity", ["R"], ["T"])],
        "then",
        [],
        [helper.make_tensor_value_info("T", f, [3, 1])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["R"], ["T2"])],
        "else",
        [],
        [helper.make_tensor_value_info("T2", f, [3, 1])],
    )
    nodes = [
        helper.make_node("Gemm", ["X", "W", "B"], ["G"], name="gemm", alpha=1.0),
        helper.make_node("Relu", ["G"], ["Y"], name="relu"),
        helper.make_node("Reshape", ["Y", "S"], ["R"], name="reshape"),
        helper.make_node("If", ["C"], ["I"], name="if", then_branch=then_g, else_branch=else_g),
        helper.make_node("Add", ["I", "E"], ["Z"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("X", f, [1, 4])],
        [helper.make_tensor_value_info("Z", f, [3, 1])],
        initializer=[w, b, shape, cond, ext],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.producer_name = "xocview-fuzz"
    return model.SerializeToString(), {SIDE: SIDE_BYTES}
