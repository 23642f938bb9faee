"""Imported by the fork server only (``load_process``): readers warmed up once for every child.

onnx builds its operator schemas and inference tables on first use, in each process: 0.1 s of
every child's read went to it while the model itself took 0.02 s. Reading one small model here,
in the server, leaves them built in the memory each child is forked with.
"""

from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

from onnx import TensorProto, helper

from xocview.ui import load_process

__all__: list[str] = []


def _warm_up() -> None:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="r")], "warm", [x], [y])
    with tempfile.TemporaryDirectory(prefix="xocview-warm-") as folder:
        path = Path(folder) / "warm.onnx"
        path.write_bytes(helper.make_model(graph).SerializeToString())
        for _ in load_process.child_messages(str(path)):
            pass


with contextlib.suppress(Exception):  # a cold child is slower, never wrong
    _warm_up()
