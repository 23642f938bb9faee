"""Valid ONNX files whose values no kernel should take: for ``run`` (and everything before it).

Strides and dilations of 0, pool kernels of 0, Gather indices out of range, MatMul on strings,
Cast to=0, an opset of 2^63-1, Slice step 0, Range delta 0, negative dims, axes out of range,
TopK, Pad, OneHot and Resize given sizes no tensor has. Each a small graph whose input ``X`` the
executor fills itself.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.fuzz.attack_base import Ctx, onnx_model, onnx_mutant, tensor
from tests.fuzz.attack_base import value as vi
from tests.fuzz.mutators import Mutant

__all__ = ["VALUES", "hostile_values"]

Built = tuple[list[onnx.NodeProto], list[onnx.TensorProto], list[int], str]


def _conv(rng: random.Random) -> Built:
    attrs = rng.choice(({"strides": [0, 0]}, {"dilations": [0, 0]}, {"strides": [-1, 1]},
                        {"pads": [-5, -5, -5, -5]}, {"group": 0}, {"kernel_shape": [9, 9]},
                        {"dilations": [-2, 1]}))  # fmt: skip
    w = tensor("W", np.ones((2, 1, 3, 3)))
    return [helper.make_node("Conv", ["X", "W"], ["Y"], **attrs)], [w], [1, 1, 6, 6], str(attrs)


def _pool(rng: random.Random) -> Built:
    op = rng.choice(("MaxPool", "AveragePool", "LpPool"))
    attrs = rng.choice(({"kernel_shape": [0, 0]}, {"kernel_shape": [2, 2], "strides": [0, 0]},
                        {"kernel_shape": [2, 2], "dilations": [0, 0]},
                        {"kernel_shape": [-3, 2]}, {"kernel_shape": [99, 99]}))  # fmt: skip
    return [helper.make_node(op, ["X"], ["Y"], **attrs)], [], [1, 1, 6, 6], f"{op} {attrs}"


def _gather(rng: random.Random) -> Built:
    idx = rng.choice(([0, 10**9], [-100], [4], [2**62], [-(2**63)]))
    op = rng.choice(("Gather", "GatherElements", "ScatterElements"))
    ins = ["X", "I"] if op != "ScatterElements" else ["X", "I", "U"]
    shape = [len(idx)] if op == "Gather" else [1, len(idx)]
    inits = [tensor("I", np.array(idx).reshape(shape), np.int64), tensor("U", np.ones(shape))]
    return [helper.make_node(op, ins, ["Y"], axis=rng.choice((0, 1)))], inits, [1, 4], f"{op} {idx}"


def _strings(rng: random.Random) -> Built:
    op = rng.choice(("MatMul", "Add", "Relu", "Softmax", "Gemm"))
    s = helper.make_tensor("S", TensorProto.STRING, [2, 2], [b"a", b"b", b"c", b"d"])
    ins = {"Relu": ["S"], "Softmax": ["S"], "Gemm": ["S", "S", "S"]}.get(op, ["S", "S"])
    return [helper.make_node(op, ins, ["Y"])], [s], [1, 4], f"{op} on strings"


def _cast(rng: random.Random) -> Built:
    to = rng.choice((0, 999, -1, 2**31 - 1, TensorProto.UNDEFINED))
    node = helper.make_node(rng.choice(("Cast", "EyeLike", "RandomNormalLike")), ["X"], ["Y"])
    node.attribute.append(helper.make_attribute("to" if node.op_type == "Cast" else "dtype", to))
    return [node], [], [1, 4], f"{node.op_type} to={to}"


def _slice(rng: random.Random) -> Built:
    steps = rng.choice(([0], [-(2**63)], [2**63 - 1]))
    inits = [tensor("st", [0], np.int64), tensor("en", [4], np.int64),
             tensor("ax", [1], np.int64), tensor("sp", steps, np.int64)]  # fmt: skip
    node = helper.make_node("Slice", ["X", "st", "en", "ax", "sp"], ["Y"])
    return [node], inits, [1, 4], f"Slice steps {steps}"


def _range(rng: random.Random) -> Built:
    start, limit, delta = rng.choice(((0, 10, 0), (0, 10**12, 1), (10, 0, 1e-30), (0, 1, -1)))
    dtype = rng.choice((np.int64, np.float32)) if isinstance(delta, int) else np.float32
    inits = [tensor("a", start, dtype), tensor("b", limit, dtype), tensor("d", delta, dtype)]
    return [helper.make_node("Range", ["a", "b", "d"], ["Y"])], inits, [1], f"Range {delta=}"


def _shape(rng: random.Random) -> Built:
    op = rng.choice(("Reshape", "Expand", "Tile", "ConstantOfShape"))
    shape = rng.choice(([-2, 3], [-1, -1], [0, -7], [2**62, 2**62]))
    node = helper.make_node(op, ["S"] if op == "ConstantOfShape" else ["X", "S"], ["Y"])
    return [node], [tensor("S", shape, np.int64)], [1, 4], f"{op} {shape}"


def _axis(rng: random.Random) -> Built:
    op = rng.choice(("Concat", "Softmax", "Flatten", "Split", "ReduceSum", "Transpose",
                     "ArgMax", "CumSum", "LogSoftmax", "Squeeze", "Unsqueeze"))  # fmt: skip
    axis = rng.choice((10, -9, 2**62, -(2**63)))
    inits: list[onnx.TensorProto] = []
    if op == "Transpose":
        node = helper.make_node(op, ["X"], ["Y"], perm=rng.choice(([0, 0], [5, 1], [1])))
    elif op in ("ReduceSum", "CumSum", "Squeeze", "Unsqueeze"):
        inits = [tensor("A", [axis] if op != "CumSum" else axis, np.int64)]
        node = helper.make_node(op, ["X", "A"], ["Y"])
    elif op == "Concat":
        node = helper.make_node(op, ["X", "X"], ["Y"], axis=axis)
    else:
        node = helper.make_node(op, ["X"], ["Y"], axis=axis)
    return [node], inits, [2, 4], f"{op} axis {axis}"


def _sizes(rng: random.Random) -> Built:
    op = rng.choice(("TopK", "Pad", "OneHot", "Resize", "Div", "Mod", "Einsum"))
    inits: list[onnx.TensorProto] = []
    if op == "TopK":
        inits = [tensor("K", [rng.choice((-1, 10**9, 0))], np.int64)]
        node = helper.make_node(op, ["X", "K"], ["Y", "Yi"])
    elif op == "Pad":
        inits = [tensor("P", [0, -(10**9), 0, 10**9], np.int64)]
        node = helper.make_node(op, ["X", "P"], ["Y"])
    elif op == "OneHot":
        inits = [tensor("D", 10**12, np.int64), tensor("V", [0.0, 1.0])]
        node = helper.make_node(op, ["X", "D", "V"], ["Y"])
    elif op == "Resize":
        inits = [tensor("R", [], np.float32), tensor("Sc", [1.0, rng.choice((0.0, -2.0, 1e30))])]
        node = helper.make_node(op, ["X", "R", "Sc"], ["Y"])
    elif op in ("Div", "Mod"):
        inits = [tensor("Z", np.zeros((1, 4)), np.int64), tensor("N", np.ones((1, 4)), np.int64)]
        node = helper.make_node(op, ["N", "Z"], ["Y"])
    else:
        node = helper.make_node(
            op, ["X", "X"], ["Y"], equation=rng.choice(("ij,jk->iz", "->", "i"))
        )
    return [node], inits, [1, 4], op


VALUES: dict[str, Callable[[random.Random], Built]] = {
    "conv": _conv,
    "pool": _pool,
    "gather": _gather,
    "strings": _strings,
    "cast": _cast,
    "slice": _slice,
    "range": _range,
    "shape": _shape,
    "axis": _axis,
    "sizes": _sizes,
}


def hostile_values(rng: random.Random, ctx: Ctx) -> Mutant:
    kind = rng.choice(sorted(VALUES))
    nodes, inits, shape, what = VALUES[kind](rng)
    for i, node in enumerate(nodes):
        node.name = f"{node.op_type.lower()}{i}"
    opset = 17
    if rng.random() < 0.1:
        opset = rng.choice((2**63 - 1, 0, 10**6))
        what += f", opset {opset}"
    model = onnx_model(nodes, [vi("X", shape)], [vi("Y", None)], inits, opset=opset)
    return onnx_mutant(f"values.{kind} {what}", model)
