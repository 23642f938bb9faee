"""Terminal takeover: names, op types, doc strings and metadata holding ESC sequences, 8-bit C1,
bidi overrides, CR and LF, in every format.

ONNX files are built here (a small runnable model, its texts replaced); XOC, NNVM and LightNet
files are small seeds of the fuzz with some of their strings (values and keys) replaced. Each
comes with ``base.<ext>``, the file before the attack (for ``diff``), and ``profile.json``, an
onnxruntime profile naming the hostile nodes and a few hostile unmatched kernels (for
``import-times``).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import onnx
from onnx import helper

from tests.fuzz.attack_base import Ctx, hostile_text, json_text, onnx_model, tensor
from tests.fuzz.attack_base import value as vi
from tests.fuzz.attack_targets import profile_events
from tests.fuzz.mutators import Mutant
from tests.fuzz.seeds import Seed, all_seeds

__all__ = ["terminal_json", "terminal_onnx"]

MAX_SEED = 200_000  # bytes: the JSON seeds the terminal attacks start from


def _base_onnx() -> onnx.ModelProto:
    body = helper.make_graph(
        [helper.make_node("Identity", ["R"], ["T"], name="then_id")], "then", [], [vi("T", [1, 3])]
    )
    neg = helper.make_graph(
        [helper.make_node("Neg", ["R"], ["T2"], name="else_neg")], "else", [], [vi("T2", [1, 3])]
    )
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["M"], name="matmul"),
        helper.make_node("Add", ["M", "B"], ["A"], name="add"),
        helper.make_node("Relu", ["A"], ["R"], name="relu"),
        helper.make_node("If", ["C"], ["I"], name="if", then_branch=body, else_branch=neg),
        helper.make_node("Softmax", ["I"], ["Y"], name="softmax", axis=-1),
    ]
    inits = [tensor("W", np.ones((4, 3))), tensor("B", [0.5, -0.5, 1.0]),
             tensor("C", True, np.bool_)]  # fmt: skip
    model = onnx_model(nodes, [vi("X", [1, 4])], [vi("Y", [1, 3])], inits, name="clean")
    model.graph.value_info.append(vi("M", [1, 3]))
    return model


def _rename(model: onnx.ModelProto, old: str, new: str) -> None:
    """Tensor ``old`` renamed everywhere in the main graph and its bodies."""

    def graphs(g: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
        yield g
        for n in g.node:
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    yield from graphs(a.g)

    for g in graphs(model.graph):
        for n in g.node:
            n.input[:] = [new if x == old else x for x in n.input]
            n.output[:] = [new if x == old else x for x in n.output]
        for v in [*g.input, *g.output, *g.value_info, *g.initializer]:
            if v.name == old:
                v.name = new


def _onnx_places(model: onnx.ModelProto, rng: random.Random) -> dict[str, Callable[[str], None]]:
    g = model.graph
    node = rng.choice(list(g.node))

    def prop(holder: Any, key: bool) -> Callable[[str], None]:
        def put(text: str) -> None:
            p = holder.metadata_props.add()
            p.key, p.value = (text, "v") if key else ("note", text)

        return put

    def attr(text: str) -> None:
        node.attribute.append(helper.make_attribute(rng.choice(("note", text)), text))

    def setter(holder: Any, field: str) -> Callable[[str], None]:
        return lambda text: setattr(holder, field, text)

    return {
        "graph.name": setter(g, "name"),
        "node.name": setter(node, "name"),
        "node.op_type": setter(node, "op_type"),
        "node.domain": setter(node, "domain"),
        "node.doc_string": setter(node, "doc_string"),
        "graph.doc_string": setter(g, "doc_string"),
        "model.doc_string": setter(model, "doc_string"),
        "producer_name": setter(model, "producer_name"),
        "producer_version": setter(model, "producer_version"),
        "input.name": lambda t: _rename(model, "X", t),
        "output.name": lambda t: _rename(model, "Y", t),
        "tensor.name": lambda t: _rename(model, rng.choice(("M", "A", "R", "I")), t),
        "initializer.name": lambda t: _rename(model, rng.choice(("W", "B")), t),
        "metadata_props.key": prop(model, True),
        "metadata_props.value": prop(model, False),
        "node.metadata_props": prop(node, rng.random() < 0.5),
        "attribute": attr,
        "body.node.name": setter(g.node[3].attribute[0].g.node[0], "name"),
    }


def terminal_onnx(rng: random.Random, ctx: Ctx) -> Mutant:
    model = _base_onnx()
    base = model.SerializeToString()
    places = _onnx_places(model, rng)
    chosen = rng.sample(sorted(places), rng.randint(1, 4))
    if "node.op_type" in chosen and rng.random() < 0.7:  # an unknown op stops `run` early
        chosen = [c for c in chosen if c != "node.op_type"] or ["node.name"]
    texts = []
    for place in chosen:
        texts.append(hostile_text(rng))
        places[place](texts[-1])
    names = [n.name for n in model.graph.node] + texts[:2]
    side = {"base.onnx": base, "profile.json": json.dumps(profile_events(names)).encode()}
    desc = f"terminal.onnx {', '.join(chosen)} := {texts[0][:30]!r}"
    return Mutant(desc, model.SerializeToString(), file_name="attack.onnx", side_files=side)


def _json_seeds(fmt: str) -> list[Seed]:
    """The format's small seed files; where there are none (no shared corpus on this machine),
    a small document of the format written here."""
    found = [
        s
        for s in all_seeds()
        if s.fmt == fmt and s.path is not None and s.path.stat().st_size <= MAX_SEED
        and "broken" not in str(s.path) and "INVALID" not in s.name
    ]  # fmt: skip
    if found or fmt not in _BUILT_IN:
        return found
    return [Seed(f"built-in {fmt}", fmt, None, json.dumps(_BUILT_IN[fmt]).encode())]


# A small document of each JSON format whose real files come from the shared corpus alone.
_BUILT_IN: dict[str, Any] = {
    "nnvm": {
        "nodes": [
            {"op": "null", "name": "data", "inputs": []},
            {"op": "null", "name": "w", "inputs": []},
            {
                "op": "dense",
                "name": "fc",
                "attrs": {"units": "4"},
                "inputs": [[0, 0, 0], [1, 0, 0]],
            },
            {"op": "relu", "name": "act", "inputs": [[2, 0, 0]]},
        ],
        "arg_nodes": [0, 1],
        "node_row_ptr": [0, 1, 2, 3, 4],
        "heads": [[3, 0, 0]],
        "attrs": {"shape": ["list_shape", [[1, 8], [4, 8], [1, 4], [1, 4]]]},
    },
    "lightnet": {
        "ops": [
            {
                "name": "create1",
                "optype": "create",
                "tensors_in": [],
                "tensors_out": [{"arg_name": "dst", "name": "x"}],
                "params": [
                    {"arg_name": "dtype", "value": "TL_FLOAT"},
                    {"arg_name": "dims", "value": [1, 4]},
                ],
            },
            {
                "name": "relu1",
                "optype": "relu",
                "tensors_in": [{"arg_name": "src", "name": "x"}],
                "tensors_out": [{"arg_name": "dst", "name": "y"}],
                "params": [],
            },
            {
                "name": "sigmoid1",
                "optype": "sigmoid",
                "tensors_in": [{"arg_name": "src", "name": "y"}],
                "tensors_out": [{"arg_name": "dst", "name": "z"}],
                "params": [],
            },
        ]
    },
}


def _strings(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, bool]]:
    """Paths of every string value (False) and every dict key (True) in a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield (*path, k), True
            yield from _strings(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*path, i))
    elif isinstance(value, str):
        yield path, False


# Strings replaced: names and op types (ids stay: groups and edges refer to them; an XOC
# tensor's "name" is its kind), and keys of attribute and metadata dicts.
_NAMES = ("name", "op", "op_type", "doc_string", "label", "func_name", "type")
_FREE = ("attributes", "attrs", "attr", "param", "metadata")


def _spots(root: Any) -> list[tuple[tuple, bool]]:
    return [
        (path, key)
        for path, key in _strings(root)
        if (str(path[-1]) in _NAMES and not key and "tensors" not in map(str, path))
        or any(str(p) in _FREE for p in path[:-1])
    ]


def _replace(root: Any, path: tuple, is_key: bool, text: str) -> None:
    holder = root
    for p in path[:-1]:
        holder = holder[p]
    if is_key:
        holder[text] = holder.pop(path[-1])
    else:
        holder[path[-1]] = text


def terminal_json(fmt: str) -> Callable[[random.Random, Ctx], Mutant]:
    def make(rng: random.Random, ctx: Ctx) -> Mutant:
        seeds = _json_seeds(fmt)
        seed = rng.choice(seeds)
        data = seed.data
        root = json.loads(data)
        texts: list[str] = []
        where: list[str] = []
        for _ in range(rng.randint(1, 4)):
            spots = _spots(root) or list(_strings(root))
            if not spots:
                break
            path, is_key = rng.choice(spots)
            texts.append(hostile_text(rng))
            _replace(root, path, is_key, texts[-1])
            where.append(".".join(map(str, path[-2:])) + (" (key)" if is_key else ""))
        side = {"base.json": data, "profile.json": json.dumps(profile_events(texts)).encode()}
        desc = f"terminal.{fmt} {seed.name}: {', '.join(where)[:80]} := {texts[0][:30]!r}"
        return Mutant(desc, json_text(root, rng).encode(), file_name="attack.json",
                      side_files=side)  # fmt: skip

    return make
