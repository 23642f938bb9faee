"""What the attack families share: their context, small ONNX builders, hostile text.

An attack is ``fn(rng, ctx) -> Mutant``: a whole hostile file made from the rng (not damage to
a seed), its side files, symlinks and, for the save targets, what the worker needs to know.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.fuzz.attack_targets import FORGED
from tests.fuzz.markers import MARKER
from tests.fuzz.mutators import Mutant

__all__ = [
    "FLOAT",
    "Attack",
    "Ctx",
    "external",
    "hostile_text",
    "json_mutant",
    "onnx_model",
    "onnx_mutant",
    "tensor",
]

FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64


@dataclass(frozen=True)
class Ctx:
    """Where the case is written: ``marker`` is the absolute path of the marker file beside the
    case folder (the worker's cwd), ``MARKER`` its bare name."""

    marker: str
    name: str = MARKER


Attack = Callable[[random.Random, Ctx], Mutant]


def tensor(name: str, values: Any, dtype: Any = np.float32) -> TensorProto:
    return onnx.numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def external(
    name: str,
    dtype: int,
    dims: Sequence[int],
    location: str,
    offset: int | None,
    length: int | None,
) -> TensorProto:
    """A tensor whose data is ``length`` bytes at ``offset`` of ``location``."""
    t = TensorProto(name=name, data_type=dtype, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    entries = {"location": location}
    if offset is not None:
        entries["offset"] = str(offset)
    if length is not None:
        entries["length"] = str(length)
    for k, v in entries.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    return t


def onnx_model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[onnx.ValueInfoProto],
    inits: Sequence[TensorProto] = (),
    *,
    functions: Sequence[onnx.FunctionProto] = (),
    opset: int = 17,
    name: str = "attack",
) -> onnx.ModelProto:
    graph = helper.make_graph(list(nodes), name, list(inputs), list(outputs), list(inits))
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(d, 1) for d in sorted({f.domain for f in functions})]
    model = helper.make_model(graph, opset_imports=imports, functions=list(functions))
    model.ir_version = 8
    model.producer_name = "xocview-fuzz-attack"
    return model


def onnx_mutant(desc: str, model: onnx.ModelProto, stem: str = "attack", **side: bytes) -> Mutant:
    return Mutant(desc, model.SerializeToString(), file_name=f"{stem}.onnx", side_files=side)


def json_mutant(desc: str, text: str | bytes, stem: str = "attack", **side: bytes) -> Mutant:
    data = text.encode() if isinstance(text, str) else text
    return Mutant(desc, data, file_name=f"{stem}.json", side_files=side)


def value(name: str, dims: Sequence[int | str] | None, dtype: int = FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, dims)


# -- terminal takeover ----------------------------------------------------------------------

PAYLOADS = (
    "\x1b[2J\x1b[H",  # clear the screen
    "\x1b]0;XOCPWNED\x07",  # retitle the window (OSC 0)
    "\x1b]8;;http://x.invalid/\x1b\\link\x1b]8;;\x1b\\",  # a hyperlink
    "\x1b[31;1m",  # colour
    "\x1bc",  # full reset
    "\x1bP+q\x1b\\",  # DCS
    "\x9b2J",  # 8-bit CSI
    "\x9d0;XOCPWNED\x9c",  # 8-bit OSC
    "\x85",  # NEL
    "\u202e",  # right-to-left override
    "\u2066",  # left-to-right isolate
    "\r",
    "\x08\x08\x08",
    "\x07",
    "\x7f",
    "\x00",
    f"\n{FORGED}: error: a line the file wrote",
    f"\r\n{FORGED} ok",
)


def hostile_text(rng: random.Random) -> str:
    """A name or doc string that would take over a terminal if printed as it is."""
    k = rng.choice((1, 1, 2, 3))
    body = "".join(rng.choice(PAYLOADS) for _ in range(k))
    return rng.choice(("n", "node_", "", "Conv")) + body + rng.choice(("", "_x", "/a/b"))


def json_text(value: Any, rng: random.Random) -> str:
    """``value`` as JSON, control characters escaped (as JSON must) or C1 and bidi kept raw."""
    return json.dumps(value, ensure_ascii=rng.random() < 0.3)
