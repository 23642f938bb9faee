"""Mutations of TensorFlow protobufs made inside the parsed message, then serialized again.

A flipped byte in a ``.pb`` mostly breaks the wire format or a name's UTF-8, which the parser
refuses before the graph builder sees anything. These damage what the builder interprets: an
input naming nothing or the wrong output, a name used twice, a Const whose bytes or shape do
not fit, an attribute of the wrong kind, a function that calls itself or returns nothing, a
signature naming a missing tensor. A text seed (``.pbtxt``) is damaged the same way and
written back as text.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from google.protobuf import text_format

from tests.fuzz.mutators import Mutant
from xocview.formats.tensorflow.protos import message

__all__ = ["TF_MUTATORS"]


def _parse(data: bytes) -> tuple[Any, bool]:
    """The seed as a GraphDef or SavedModel message, and whether it was text."""
    saved = data[:3] == b"\x08\x01\x12" or b"meta_graphs" in data[:4096]
    cls = message("SavedModel" if saved else "GraphDef")
    msg = cls()
    if data[:1] in (b"\x0a", b"\x08"):
        msg.ParseFromString(data)
        return msg, False
    text_format.Parse(data.decode("utf-8"), msg)
    return msg, True


def _graph(msg: Any) -> Any:
    return msg.meta_graphs[0].graph_def if msg.DESCRIPTOR.name == "SavedModel" else msg


def _node_lists(msg: Any) -> list[Any]:
    """Every NodeDef list: the graph's and each library function's body."""
    g = _graph(msg)
    return [g.node, *(f.node_def for f in g.library.function)]


def _damage_node(rng: random.Random, nodes: Any) -> str:
    nd = nodes[rng.randrange(len(nodes))]
    other = nodes[rng.randrange(len(nodes))]
    choice = rng.randrange(8)
    if choice == 0:
        nd.input.append(
            rng.choice(["missing", f"{other.name}:{rng.choice((1, 7, 99))}", "^", ":0"])
        )
        return f"{nd.name}: input added"
    if choice == 1 and nd.input:
        nd.input[rng.randrange(len(nd.input))] = rng.choice([nd.name, f"{nd.name}:0", "x:y:z:w"])
        return f"{nd.name}: input made a loop or malformed"
    if choice == 2:
        nd.name = other.name
        return f"{nd.name}: name used twice"
    if choice == 3:
        nd.op = rng.choice(
            ["Const", "Placeholder", "StatefulPartitionedCall", "VarHandleOp", "While"]
        )
        return f"{nd.name}: op -> {nd.op}"
    if choice == 4 and "value" in nd.attr:
        t = nd.attr["value"].tensor
        t.tensor_content = t.tensor_content[: rng.randrange(len(t.tensor_content) + 1)]
        t.tensor_shape.dim.add(size=rng.choice((-1, 0, 3, 2**40)))
        return f"{nd.name}: Const bytes and shape no longer fit"
    if choice == 5 and nd.attr:
        key = rng.choice(sorted(nd.attr))
        rng.choice(
            [
                lambda v: setattr(v, "s", b"\xff"),
                lambda v: setattr(v, "i", -(2**62)),
                lambda v: v.list.i.extend([2**40, -1]),
                lambda v: setattr(v, "type", 20),
            ]
        )(nd.attr[key])
        return f"{nd.name}: attr {key} of another kind"
    if choice == 6:
        nd.attr["f"].func.name = rng.choice(["missing_function", *_functions(nd)])
        return f"{nd.name}: calls {nd.attr['f'].func.name}"
    del nodes[rng.randrange(len(nodes))]
    return "a node removed"


def _functions(nd: Any) -> list[str]:
    return [nd.attr["f"].func.name] if "f" in nd.attr else []


def tf_node(rng: random.Random, data: bytes) -> Mutant:
    msg, text = _parse(data)
    lists = [nodes for nodes in _node_lists(msg) if len(nodes)]
    what = _damage_node(rng, rng.choice(lists))
    return Mutant(f"tf.node {what}", _write(msg, text))


def tf_function(rng: random.Random, data: bytes) -> Mutant:
    msg, text = _parse(data)
    lib = _graph(msg).library
    if not lib.function:
        return tf_node(rng, data)
    f = lib.function[rng.randrange(len(lib.function))]
    name = f.signature.name
    choice = rng.randrange(4)
    if choice == 0 and f.node_def:  # a body that calls its own function
        f.node_def[0].op = "StatefulPartitionedCall"
        f.node_def[0].attr["f"].func.name = name
        what = "calls itself"
    elif choice == 1 and f.ret:
        f.ret[rng.choice(sorted(f.ret))] = rng.choice(["missing:output:0", "", "a:b:c:d"])
        what = "returns a missing tensor"
    elif choice == 2 and f.signature.input_arg:
        del f.signature.input_arg[0]
        what = "lost an argument"
    else:
        f.signature.output_arg.add(name="extra")
        what = "gained a result"
    return Mutant(f"tf.function {name} {what}", _write(msg, text))


def tf_signature(rng: random.Random, data: bytes) -> Mutant:
    msg, text = _parse(data)
    if msg.DESCRIPTOR.name != "SavedModel" or not msg.meta_graphs:
        return tf_node(rng, data)
    sigs = msg.meta_graphs[0].signature_def
    if not sigs:
        return tf_node(rng, data)
    sig = sigs[rng.choice(sorted(sigs))]
    side = sig.outputs if rng.random() < 0.7 or not sig.inputs else sig.inputs
    if not side:
        return tf_node(rng, data)
    key = rng.choice(sorted(side))
    side[key].name = rng.choice(["missing:0", "StatefulPartitionedCall:9", "", ":", "x:1:2:3"])
    return Mutant(f"tf.signature {key} -> {side[key].name!r}", _write(msg, text))


def _write(msg: Any, text: bool) -> bytes:
    return text_format.MessageToString(msg).encode("utf-8") if text else msg.SerializeToString()


TF_MUTATORS: dict[str, Callable[[random.Random, bytes], Mutant]] = {
    "tf.node": tf_node,
    "tf.function": tf_function,
    "tf.signature": tf_signature,
}
