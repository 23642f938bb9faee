"""Small files that would hold everything: expansion, nesting and counts far past the file's size.

ONNX: local functions that call the next level twice, k levels deep (2^k calls); If bodies
nested deep, each with many nodes; 50k PyTorch name scopes in one node's metadata; Loops whose
trip count is 10^15 with a condition that stays true; huge dims and counts; a 100k-deep
``xocview.metadata`` entry and metadata keys of thousands of dotted parts. XOC JSON: groups
nested 5,000 deep, metadata nested 100k deep (written as text), dotted keys.
"""

from __future__ import annotations

import json
import random

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.fuzz.attack_base import (
    FLOAT,
    INT64,
    Ctx,
    json_mutant,
    onnx_model,
    onnx_mutant,
    tensor,
)
from tests.fuzz.attack_base import value as vi
from tests.fuzz.mutators import Mutant
from tests.fuzz.onnx_mutators import _enc, _field

__all__ = [
    "dotted_keys",
    "function_bomb",
    "huge_counts",
    "if_nest",
    "loop_trips",
    "metadata_deep",
    "scopes_bomb",
    "xoc_graph",
    "xoc_groups",
]


def _relu_model(extra_nodes: int = 0) -> onnx.ModelProto:
    model = onnx_model([], [vi("X", [1, 4])], [vi("Y", [1, 4])])
    add = model.graph.node.add
    add(op_type="Relu", input=["X"], output=["H0"], name="relu0")
    for i in range(extra_nodes):
        add(op_type="Relu", input=[f"H{i}"], output=[f"H{i + 1}"], name=f"relu{i + 1}")
    add(op_type="Identity", input=[f"H{extra_nodes}"], output=["Y"], name="out")
    return model


def function_bomb(rng: random.Random, ctx: Ctx) -> Mutant:
    """F0 is a Relu; F(i) calls F(i-1) twice (or ``fan`` times): 2^k calls from one node."""
    k, fan = rng.randint(10, 30), rng.choice((2, 2, 2, 3))
    ops = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    functions = [
        helper.make_function(
            "local", "F0", ["x"], ["y"], [helper.make_node("Relu", ["x"], ["y"])], ops
        )
    ]
    for i in range(1, k + 1):
        names = ["x", *[f"t{j}" for j in range(fan - 1)], "y"]
        calls = [
            helper.make_node(f"F{i - 1}", [names[j]], [names[j + 1]], domain="local")
            for j in range(fan)
        ]
        functions.append(helper.make_function("local", f"F{i}", ["x"], ["y"], calls, ops))
    top = helper.make_node(f"F{k}", ["X"], ["Y"], name="bomb", domain="local")
    model = onnx_model([top], [vi("X", [1, 4])], [vi("Y", [1, 4])], functions=functions)
    return onnx_mutant(f"bomb.functions {k} levels x{fan} ({fan}^{k} calls)", model)


def _if_body(depth: int, width: int, tag: str) -> bytes:
    """A serialized body of ``width`` Relus on an outer value (none: the If alone), holding an
    If ``depth - 1`` deep whose two branches are the same bytes: about
    ``(width + 2) * 2^depth`` nodes in all. Spliced as bytes: protobuf would copy each body into
    both branches, level by level."""
    g = onnx.GraphProto(name=tag)
    for i in range(width):
        g.node.add(
            op_type="Relu", input=["X" if i == 0 else f"{tag}_{i - 1}"], output=[f"{tag}_{i}"]
        )
    last = f"{tag}_{width - 1}" if width else "X"
    head = b""
    if depth > 1:
        inner = _if_body(depth - 1, width, f"{tag}i")
        branches = b"".join(
            _field(5, _field(1, name) + _field(6, inner) + _enc(20 << 3) + _enc(5))
            for name in (b"then_branch", b"else_branch")
        )
        made = f"{tag}_if" if width else f"{tag}_out"
        head = _field(1, _field(1, b"C") + _field(2, made.encode()) + _field(4, b"If") + branches)
        if width:
            g.node.add(op_type="Add", input=[last, made], output=[f"{tag}_out"])
    else:
        g.node.add(op_type="Identity", input=[last], output=[f"{tag}_out"])
    g.output.append(vi(f"{tag}_out", [1, 4]))
    return head + g.SerializeToString()  # the If first: nodes stay in topological order


def if_nest(rng: random.Random, ctx: Ctx) -> Mutant:
    """If bodies nested 6-16 deep, both branches alike: up to ~140k nodes in all (16 deep:
    131k bodies of one node each)."""
    depth = rng.randint(6, 16)
    room = (140_000 >> (depth + 1)) - 2  # nodes a body may hold beside its If and Add
    width = max(0, min(rng.choice((1, 4, 64, 512)), room))
    body = _if_body(depth, width, "b")
    model = onnx_model([], [vi("X", [1, 4])], [vi("Y", [1, 4])], [tensor("C", True, np.bool_)])
    branches = b"".join(
        _field(5, _field(1, name) + _field(6, body) + _enc(20 << 3) + _enc(5))
        for name in (b"then_branch", b"else_branch")
    )
    top = _field(1, b"C") + _field(2, b"Y") + _field(3, b"if") + _field(4, b"If") + branches
    graph = _field(1, top) + model.graph.SerializeToString()
    model.ClearField("graph")
    total = (width + (2 if width else 1)) * 2 ** (depth + 1)
    desc = f"bomb.if_nest depth {depth}, {width} nodes a body (~{total:,})"
    return Mutant(desc, model.SerializeToString() + _field(7, graph), file_name="attack.onnx")


def scopes_bomb(rng: random.Random, ctx: Ctx) -> Mutant:
    """``pkg.torch.onnx.name_scopes`` of 10k-60k module names on one to three nodes."""
    n = rng.choice((10_000, 30_000, 50_000, 60_000))
    dotted = rng.random() < 0.2  # each a full dotted path: quadratic in the file already
    model = _relu_model(rng.randint(0, 3))
    for node in rng.sample(list(model.graph.node), rng.randint(1, min(3, len(model.graph.node)))):
        node.name = f"node_relu_{rng.randrange(100)}"
        names = ["s"] * (n // 10) if dotted else [f"m{i}" for i in range(n)]
        if dotted:
            names = [".".join(names[: i + 1]) for i in range(len(names))]
        prop = node.metadata_props.add()
        prop.key = "pkg.torch.onnx.name_scopes"
        prop.value = repr(["", *names, node.name])
    return onnx_mutant(f"bomb.scopes {n:,} name scopes{' (dotted)' if dotted else ''}", model)


def loop_trips(rng: random.Random, ctx: Ctx) -> Mutant:
    """A Loop whose condition stays true and whose trip count is 10^9 ... 2^63-1 (or nested)."""
    trips = rng.choice((10**15, 2**63 - 1, 10**12, 10**9))
    nested = rng.random() < 0.25
    body = _loop_body(helper.make_node("Add", ["v_in", "one"], ["v_out"]))
    if nested:
        inner = helper.make_node("Loop", ["N", "c_in", "v_in"], ["v_out"], body=body)
        body = _loop_body(inner)
    model = onnx_model(
        [helper.make_node("Loop", ["M", "C", "X"], ["Y"], name="loop", body=body)],
        [vi("X", [1, 4])],
        [vi("Y", [1, 4])],
        [tensor("M", trips, np.int64), tensor("C", True, np.bool_), tensor("N", 10**6, np.int64),
         tensor("one", np.ones((1, 4)))],
    )  # fmt: skip
    return onnx_mutant(f"bomb.loop trip count {trips:,}{' (nested)' if nested else ''}", model)


def _loop_body(step: onnx.NodeProto) -> onnx.GraphProto:
    return helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), step],
        "body",
        [vi("i", [], INT64), vi("c_in", [], TensorProto.BOOL), vi("v_in", [1, 4])],
        [vi("c_out", [], TensorProto.BOOL), vi("v_out", [1, 4])],
    )


def huge_counts(rng: random.Random, ctx: Ctx) -> Mutant:
    """Dims, shapes and counts that a few bytes declare and no machine holds."""
    how = rng.choice(("input", "constant_of_shape", "expand", "tile", "range", "reshape",
                      "initializer", "nodes", "ints"))  # fmt: skip
    big = rng.choice((10**9, 10**12, 2**62, 2**63 - 1))
    inits: list[TensorProto] = []
    x = vi("X", [1, 4])
    if how == "input":
        x = vi("X", [big, big])
        nodes = [helper.make_node("Relu", ["X"], ["Y"])]
    elif how in ("constant_of_shape", "expand", "reshape", "tile"):
        shape = tensor("S", [big, 4] if how != "tile" else [big, 1], np.int64)
        op = {"constant_of_shape": "ConstantOfShape", "expand": "Expand", "reshape": "Reshape",
              "tile": "Tile"}[how]  # fmt: skip
        ins = ["S"] if op == "ConstantOfShape" else ["X", "S"]
        nodes = [helper.make_node(op, ins, ["Y"])]
        inits = [shape]
    elif how == "range":
        inits = [tensor("a", 0.0), tensor("b", float(big)), tensor("d", 1.0)]
        nodes = [helper.make_node("Range", ["a", "b", "d"], ["Y"])]
    elif how == "initializer":  # dims with no data behind them
        t = TensorProto(name="W", data_type=FLOAT, dims=[big, big])
        inits = [t]
        nodes = [helper.make_node("Add", ["X", "W"], ["Y"])]
    elif how == "nodes":
        model = _relu_model(rng.choice((50_000, 150_000)))
        return onnx_mutant(f"bomb.counts {len(model.graph.node):,} nodes", model)
    else:
        nodes = [helper.make_node("Relu", ["X"], ["Y"], extra=list(range(10**6)))]
    model = onnx_model(nodes, [x], [vi("Y", None)], inits)
    return onnx_mutant(f"bomb.counts {how} {big:,}", model)


def _nest(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def metadata_deep(rng: random.Random, ctx: Ctx) -> Mutant:
    """Metadata 10k-100k deep: XOC JSON text, or ONNX's ``xocview.metadata`` entry."""
    depth = rng.choice((10_000, 50_000, 100_000))
    kind = rng.choice(("list", "dict"))
    deep = _nest(depth, kind)
    if rng.random() < 0.5:
        model = _relu_model()
        where = rng.choice(("graph", "nodes", "tensors"))
        inner = f'{{"k": {deep}}}' if where == "graph" else f'{{"relu0": {{"k": {deep}}}}}'
        if where == "tensors":
            inner = f'{{"X": {{"k": {deep}}}}}'
        prop = model.metadata_props.add()
        prop.key, prop.value = "xocview.metadata", f'{{"{where}": {inner}}}'
        return onnx_mutant(
            f"bomb.metadata_deep onnx xocview.metadata.{where} {depth:,} {kind}", model
        )
    where = rng.choice(("graph", "node", "tensor", "attribute"))
    text = _xoc_put(xoc_graph(rng), where, "@@DEEP@@").replace('"@@DEEP@@"', deep)
    return json_mutant(f"bomb.metadata_deep xoc {where} {depth:,} {kind}", text)


def _xoc_put(text: str, where: str, value: str) -> str:
    g = json.loads(text)
    holder = {"graph": g["metadata"], "node": g["nodes"][0]["metadata"],
              "tensor": g["tensors"][0].setdefault("metadata", {}),
              "attribute": g["nodes"][0]["attributes"]}[where]  # fmt: skip
    holder["deep"] = value
    return json.dumps(g)


def dotted_keys(rng: random.Random, ctx: Ctx) -> Mutant:
    """A metadata key of 1,000-10,000 dotted parts (and, at times, a key it conflicts with)."""
    parts = rng.choice((1000, 2000, 5000, 10_000))
    names = ["a"] * parts if rng.random() < 0.5 else [f"k{i}" for i in range(parts)]
    key = ".".join(names)
    conflict = rng.random() < 0.3
    entries = {key: "1", **({names[0]: "2"} if conflict else {})}
    tag = f"{parts:,} parts{' + a conflicting key' if conflict else ''}"
    if rng.random() < 0.4:
        model = _relu_model()
        holder = rng.choice((model, model.graph.node[0]))
        for k, v in entries.items():
            prop = holder.metadata_props.add()
            prop.key, prop.value = k, v
        return onnx_mutant(f"bomb.dotted onnx metadata_props key of {tag}", model)
    where = rng.choice(("graph", "node", "tensor", "attribute"))
    g = json.loads(xoc_graph(rng))
    holder = {"graph": g["metadata"], "node": g["nodes"][0]["metadata"],
              "tensor": g["tensors"][0].setdefault("metadata", {}),
              "attribute": g["nodes"][0]["attributes"]}[where]  # fmt: skip
    holder.update(entries)
    return json_mutant(f"bomb.dotted xoc {where} key of {tag}", json.dumps(g))


def xoc_graph(rng: random.Random, ops: int = 2) -> str:
    """A small valid XOC JSON graph: a chain of ``ops`` Relus."""
    kinds = ["input", *["activation"] * (ops - 1), "output"]  # a tensor's name is its kind
    tensors = [{"id": f"t{i}", "name": kind, "shape": [1, 4], "dtype": "float32"}
               for i, kind in enumerate(kinds)]  # fmt: skip
    nodes = [{"id": f"n{i}", "name": "Relu", "inputs": [i], "outputs": [i + 1],
              "attributes": {}, "metadata": {}} for i in range(ops)]  # fmt: skip
    return json.dumps({"id": "g", "name": "g", "tensors": tensors, "nodes": nodes,
                       "inputs": [0], "outputs": [ops], "metadata": {}})  # fmt: skip


def xoc_groups(rng: random.Random, ctx: Ctx) -> Mutant:
    """Groups nested 500-5,000 deep, each holding the next group and (at times) an operator."""
    depth = rng.choice((500, 2000, 5000))
    ops = depth if rng.random() < 0.5 else 1
    g = json.loads(xoc_graph(rng, ops))
    groups = []
    for i in range(depth):
        meta: dict = {"children_ids": [f"g{i + 1}"] if i + 1 < depth else []}
        if i:
            meta["parent_id"] = f"g{i - 1}"
        groups.append({"id": f"g{i}", "name": "Group", "inputs": [], "outputs": [],
                       "attributes": {}, "metadata": meta})  # fmt: skip
    for j, node in enumerate(g["nodes"]):
        level = depth - 1 if ops == 1 else j
        node["metadata"]["parent_id"] = f"g{level}"
        groups[level]["metadata"]["children_ids"].append(node["id"])
    g["nodes"] = groups + g["nodes"]
    return json_mutant(f"bomb.xoc_groups {depth:,} deep, {ops:,} operators", json.dumps(g))
