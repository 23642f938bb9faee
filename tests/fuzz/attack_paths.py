"""Attacks on where an ONNX file's data comes from and where a save puts it.

``external_paths``: every place the ONNX format can name external data (initializers, sparse
initializers' values and indices, Constant ``value`` and ``sparse_value``, tensor and
sparse-tensor attributes and lists of them, If and Loop bodies, local functions) pointing at
the marker beside the case folder: ``../marker.bin``, its absolute path, a symlinked folder
(to the marker's folder, or ``..``), and the bare name a read relative to the current directory
finds. A link to the marker itself named by the location is not an attack: it is the user's own
link (a Hugging Face cache's), followed by design (``xocview.formats.safe_paths``).
``save_clobber``: out.onnx written beside models that own ``out.onnx.data``. ``save_kill``: a
save over an old out.onnx pair, killed before one of its file-system steps.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

from tests.fuzz.attack_base import FLOAT, INT64, Ctx, external, onnx_model, onnx_mutant, tensor
from tests.fuzz.attack_base import value as vi
from tests.fuzz.markers import MARKER_BYTES
from tests.fuzz.mutators import Mutant

__all__ = ["PLACES", "external_paths", "save_clobber", "save_kill"]


def _location(rng: random.Random, ctx: Ctx) -> tuple[str, dict[str, str], dict[str, bytes], str]:
    """A location that reaches the marker: (location, symlinks, side files, how)."""
    how = rng.choice(("parent", "dotdot-sub", "absolute", "symlink-abs", "linkdir",
                      "cwd", "dot-cwd", "double-slash"))  # fmt: skip
    links: dict[str, str] = {}
    side: dict[str, bytes] = {}
    if how == "parent":
        loc = f"../{ctx.name}"
    elif how == "dotdot-sub":
        loc, side = f"sub/../../{ctx.name}", {"sub/keep.txt": b"x"}
    elif how == "absolute":
        loc = ctx.marker
    elif how == "symlink-abs":
        loc, links = f"w/{ctx.name}", {"w": str(ctx.marker).rsplit("/", 1)[0]}
    elif how == "linkdir":
        loc, links = f"up/{ctx.name}", {"up": ".."}
    elif how == "cwd":
        loc = ctx.name
    elif how == "dot-cwd":
        loc = f"./{ctx.name}"
    else:
        loc = "/" + ctx.marker
    return loc, links, side, how


def _span(rng: random.Random, itemsize: int) -> tuple[int, int | None, int | None]:
    """(element count, offset, length) of a read of the marker."""
    n = rng.choice((4, 16, 64, MARKER_BYTES // itemsize))
    if n == MARKER_BYTES // itemsize and rng.random() < 0.5:
        return n, None, None  # the whole file
    offset = rng.choice((0, 0, itemsize * 4))
    return min(n, (MARKER_BYTES - offset) // itemsize), offset, None if rng.random() < 0.2 else 0


def _ext(rng: random.Random, loc: str, name: str, dtype: int = FLOAT) -> tuple[TensorProto, int]:
    size = 8 if dtype == INT64 else 4
    n, offset, length = _span(rng, size)
    return external(name, dtype, [n], loc, offset, n * size if length == 0 else length), n


def _add_model(n: int, inits: list, extra_nodes: list | None = None) -> onnx.ModelProto:
    nodes = [*(extra_nodes or []), helper.make_node("Add", ["X", "T"], ["Y"], name="add")]
    return onnx_model(nodes, [vi("X", [n])], [vi("Y", [n])], inits)


def _sparse(rng: random.Random, loc: str, part: str) -> tuple[onnx.SparseTensorProto, int]:
    if part == "values":
        values, k = _ext(rng, loc, "T")  # a sparse tensor is named by its values
        idx = tensor("T_indices", np.arange(k), np.int64)
    else:
        idx, k = _ext(rng, loc, "T_indices", INT64)
        values = tensor("T", np.ones(k), np.float32)
    sp = helper.make_sparse_tensor(values, idx, [max(k, 1)])
    return sp, max(k, 1)


def _place_initializer(rng, loc):
    t, n = _ext(rng, loc, "T")
    return _add_model(n, [t])


def _place_sparse(part: str) -> Callable:
    def make(rng, loc):
        sp, n = _sparse(rng, loc, part)
        m = _add_model(n, [])
        m.graph.sparse_initializer.append(sp)
        return m

    return make


def _place_constant(rng, loc):
    t, n = _ext(rng, loc, "v")
    const = helper.make_node("Constant", [], ["T"], name="const", value=t)
    return _add_model(n, [], [const])


def _place_constant_sparse(rng, loc):
    sp, n = _sparse(rng, loc, rng.choice(("values", "indices")))
    const = helper.make_node("Constant", [], ["T"], name="const", sparse_value=sp)
    return _add_model(n, [], [const])


def _place_attribute(kind: str) -> Callable:
    """A tensor attribute (or a list of them) on an ordinary node: nothing reads it to run."""

    def make(rng, loc):
        t, n = _ext(rng, loc, "a")
        m = _add_model(n, [tensor("T", np.zeros(n))])
        node = m.graph.node[0]
        if kind == "tensor":
            node.attribute.append(helper.make_attribute("extra", t))
        elif kind == "tensors":
            node.attribute.append(helper.make_attribute("extra", [tensor("ok", [1.0]), t]))
        else:
            sp, _ = _sparse(rng, loc, rng.choice(("values", "indices")))
            attr = helper.make_attribute("extra", [sp] if kind == "sparse_tensors" else sp)
            node.attribute.append(attr)
        return m

    return make


def _body(rng, loc, out: str) -> tuple[onnx.GraphProto, int]:
    t, n = _ext(rng, loc, f"{out}_w")
    if rng.random() < 0.5:
        nodes = [helper.make_node("Identity", [t.name], [out])]
        return helper.make_graph(nodes, out, [], [vi(out, [n])], [t]), n
    nodes = [helper.make_node("Constant", [], [out], value=t)]
    return helper.make_graph(nodes, out, [], [vi(out, [n])]), n


def _place_if(rng, loc):
    then_g, n = _body(rng, loc, "then_out")
    else_g = helper.make_graph(
        [helper.make_node("Constant", [], ["else_out"], value=tensor("e", np.zeros(n)))],
        "else", [], [vi("else_out", [n])],
    )  # fmt: skip
    cond = tensor("C", True, np.bool_)
    node = helper.make_node("If", ["C"], ["T"], name="if", then_branch=then_g, else_branch=else_g)
    return _add_model(n, [cond], [node])


def _place_loop(rng, loc):
    t, n = _ext(rng, loc, "body_w")
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["c_in"], ["c_out"]),
            helper.make_node("Add", ["v_in", "body_w"], ["v_out"]),
        ],
        "body",
        [vi("i", [], INT64), vi("c_in", [], TensorProto.BOOL), vi("v_in", [n])],
        [vi("c_out", [], TensorProto.BOOL), vi("v_out", [n])],
        [t],
    )
    inits = [tensor("M", 2, np.int64), tensor("C", True, np.bool_), tensor("V", np.zeros(n))]
    node = helper.make_node("Loop", ["M", "C", "V"], ["T"], name="loop", body=body)
    return _add_model(n, inits, [node])


def _place_function(depth: int) -> Callable:
    def make(rng, loc):
        t, n = _ext(rng, loc, "fv")
        inner = helper.make_function(
            "local", "F0", ["x"], ["y"],
            [helper.make_node("Constant", [], ["c"], value=t), helper.make_node("Add", ["x", "c"], ["y"])],  # noqa: E501
            [helper.make_opsetid("", 17)],
        )  # fmt: skip
        functions = [inner]
        for i in range(1, depth):
            call = helper.make_node(f"F{i - 1}", ["x"], ["y"], domain="local")
            functions.append(
                helper.make_function(
                    "local",
                    f"F{i}",
                    ["x"],
                    ["y"],
                    [call],
                    [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                )
            )
        call = helper.make_node(f"F{depth - 1}", ["X"], ["Y"], name="call", domain="local")
        return onnx_model([call], [vi("X", [n])], [vi("Y", [n])], functions=functions)

    return make


PLACES: dict[str, Callable] = {
    "initializer": _place_initializer,
    "sparse_initializer.values": _place_sparse("values"),
    "sparse_initializer.indices": _place_sparse("indices"),
    "Constant.value": _place_constant,
    "Constant.sparse_value": _place_constant_sparse,
    "attribute.tensor": _place_attribute("tensor"),
    "attribute.tensors": _place_attribute("tensors"),
    "attribute.sparse_tensor": _place_attribute("sparse_tensor"),
    "attribute.sparse_tensors": _place_attribute("sparse_tensors"),
    "If.body": _place_if,
    "Loop.body": _place_loop,
    "function": _place_function(1),
    "function.nested": _place_function(3),
}


def external_paths(rng: random.Random, ctx: Ctx) -> Mutant:
    place = rng.choice(sorted(PLACES))
    loc, links, side, how = _location(rng, ctx)
    model = PLACES[place](rng, loc)
    desc = f"paths.external {place} -> {how} ({loc[-40:]!r})"
    m = onnx_mutant(desc, model, **side)
    m.links = links
    return m


# -- saves -------------------------------------------------------------------------------


def _pair(rng: random.Random, data_name: str, seed: int, rows: int = 16) -> tuple[bytes, bytes]:
    """A model whose weight (at least 1 KB, so a save keeps it external) lives in ``data_name``."""
    w = np.random.default_rng(seed).standard_normal((rows, 32)).astype(np.float32)
    pad = rng.choice((0, 0, 64))
    t = external("W", FLOAT, w.shape, data_name, pad, w.nbytes)
    nodes = [helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")]
    model = onnx_model(nodes, [vi("X", [1, rows])], [vi("Y", [1, 32])], [t])
    return model.SerializeToString(), bytes(pad) + w.tobytes()


def save_clobber(rng: random.Random, ctx: Ctx) -> Mutant:
    """FILE -> out.onnx where ``out.onnx.data`` (or FILE's own data) belongs to a model."""
    how = rng.choice(("other-owns-default", "input-owns-default", "both"))
    input_data = "out.onnx.data" if how == "input-owns-default" else "model.onnx.data"
    model, data = _pair(rng, input_data, rng.randrange(1000), rng.choice((16, 64)))
    side = {input_data: data}
    if how != "input-owns-default":
        other, other_data = _pair(rng, "out.onnx.data", 10_000 + rng.randrange(1000), 8)
        side |= {"other.onnx": other, "out.onnx.data": other_data}
    if how == "both":  # and an old out.onnx that shares other.onnx's data file
        side["out.onnx"] = other
    desc = f"save.clobber {how}: model.onnx ({input_data}) -> out.onnx"
    return Mutant(desc, model, file_name="model.onnx", side_files=side)


def save_kill(rng: random.Random, ctx: Ctx) -> Mutant:
    """FILE -> out.onnx over an old out.onnx pair, killed before file-system step ``kill_at``."""
    model, data = _pair(rng, "model.onnx.data", rng.randrange(1000), rng.choice((16, 64)))
    old, old_data = _pair(rng, "out.onnx.data", 10_000 + rng.randrange(1000), 16)
    kill_at = rng.randint(1, 16)
    side = {"model.onnx.data": data, "out.onnx": old, "out.onnx.data": old_data}
    m = Mutant(f"save.kill at step {kill_at}", model, file_name="model.onnx", side_files=side)
    m.extra = {"kill_at": kill_at}
    return m
