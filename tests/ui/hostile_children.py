"""Stand-ins for the child process that reads a file (``load_process._child``), for the tests
of ``test_hostile_files``. The child imports this module by name, so it holds no Qt."""

from __future__ import annotations

import os
import signal
from multiprocessing.connection import Connection

import onnx
from onnx import TensorProto, helper

from xocview.ui import load_process


def function_bomb(levels: int) -> onnx.ModelProto:
    """A model of a few KB whose local function ``f{k}`` calls ``f{k-1}`` twice: shape
    inference expands 2^levels calls in C++, holding the interpreter lock all along."""
    ops = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    relu = helper.make_node("Relu", ["x"], ["y"])
    funcs = [helper.make_function("local", "f0", ["x"], ["y"], [relu], ops[:1])]
    for k in range(1, levels + 1):
        calls = [
            helper.make_node(f"f{k - 1}", ["x"], ["a"], domain="local"),
            helper.make_node(f"f{k - 1}", ["x"], ["b"], domain="local"),
            helper.make_node("Add", ["a", "b"], ["y"]),
        ]
        funcs.append(helper.make_function("local", f"f{k}", ["x"], ["y"], calls, ops))
    top = helper.make_node(f"f{levels}", ["x"], ["y"], domain="local", name="top")
    graph = helper.make_graph(
        [top],
        "bomb",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, functions=funcs, opset_imports=ops)


def infer_for_minutes(name: str, conn: Connection) -> None:
    """A reader stuck in C++: shape inference of a 2^26-call bomb (minutes, lock held)."""
    onnx.shape_inference.infer_shapes(function_bomb(26), strict_mode=False, data_prop=True)
    conn.send_bytes(b"never reached in a test")


def killed(name: str, conn: Connection) -> None:
    """A reader the system kills (as the out-of-memory killer does)."""
    os.kill(os.getpid(), signal.SIGKILL)


def _out_of_memory(source: object) -> None:
    raise MemoryError


def _too_deep(source: object) -> None:
    raise RecursionError("maximum recursion depth exceeded")


def out_of_memory(name: str, conn: Connection) -> None:
    """A reader whose load runs out of memory."""
    load_process.load_source = _out_of_memory  # type: ignore[assignment]
    load_process._child(name, conn)


def too_deep(name: str, conn: Connection) -> None:
    """A reader whose load runs out of stack."""
    load_process.load_source = _too_deep  # type: ignore[assignment]
    load_process._child(name, conn)
