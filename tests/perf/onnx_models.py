"""Generated ONNX models for the loader benchmarks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def transformer_like(num_nodes: int, dim: int = 16, seed: int = 0) -> onnx.ModelProto:
    """Blocks of ten nodes named by scope (/layers.i/attn/MatMul), as PyTorch exports them.

    Every block has its own small weights; no value_info is stored, so shapes must be inferred.
    """
    rng = np.random.default_rng(seed)
    nodes: list[onnx.NodeProto] = []
    inits: list[onnx.TensorProto] = []
    x = "input"
    i = 0
    while len(nodes) + 10 <= num_nodes:
        p = f"/layers.{i}"
        w1, b1, w2, g, b = (f"{p}.{n}" for n in ("w1", "b1", "w2", "ln_g", "ln_b"))
        for name, shape in (
            (w1, (dim, dim)),
            (b1, (dim,)),
            (w2, (dim, dim)),
            (g, (dim,)),
            (b, (dim,)),
        ):
            inits.append(
                numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
            )
        t = [f"{p}/t{k}" for k in range(10)]
        nodes += [
            helper.make_node("MatMul", [x, w1], [t[0]], name=f"{p}/attn/MatMul"),
            helper.make_node("Add", [t[0], b1], [t[1]], name=f"{p}/attn/Add"),
            helper.make_node("Softmax", [t[1]], [t[2]], name=f"{p}/attn/Softmax", axis=-1),
            helper.make_node("MatMul", [t[2], w2], [t[3]], name=f"{p}/attn/MatMul_1"),
            helper.make_node("Add", [x, t[3]], [t[4]], name=f"{p}/Add"),
            helper.make_node(
                "LayerNormalization",
                [t[4], g, b],
                [t[5]],
                name=f"{p}/norm/LayerNormalization",
                axis=-1,
                epsilon=1e-5,
            ),
            helper.make_node("Sigmoid", [t[5]], [t[6]], name=f"{p}/mlp/Sigmoid"),
            helper.make_node("Mul", [t[5], t[6]], [t[7]], name=f"{p}/mlp/Mul"),
            helper.make_node("Relu", [t[7]], [t[8]], name=f"{p}/mlp/Relu"),
            helper.make_node("Add", [t[8], t[4]], [t[9]], name=f"{p}/Add_1"),
        ]
        x = t[9]
        i += 1
    nodes.append(helper.make_node("Identity", [x], ["output"], name="/head/Identity"))
    graph = helper.make_graph(
        nodes,
        "transformer_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 8, dim])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 8, dim])],
        initializer=inits,
    )
    return helper.make_model(
        graph, producer_name="xocview perf", opset_imports=[helper.make_opsetid("", 17)]
    )


def with_big_external_weights(folder: Path, total_bytes: int, chunk: int = 1 << 26) -> Path:
    """A small MLP whose weights, ``total_bytes`` in all, live in ``weights.bin`` beside it."""
    count = max(1, total_bytes // chunk)
    side = int(np.sqrt(chunk // 4))
    inits, nodes = [], []
    x = "input"
    data = np.full((side, side), 0.5, dtype=np.float32)
    offset = 0
    with open(folder / "weights.bin", "wb") as f:
        for k in range(count):
            f.write(data.tobytes())
            t = onnx.TensorProto()
            t.name = f"w{k}"
            t.data_type = TensorProto.FLOAT
            t.dims.extend([side, side])
            t.data_location = TensorProto.EXTERNAL
            for key, value in (
                ("location", "weights.bin"),
                ("offset", str(offset)),
                ("length", str(data.nbytes)),
            ):
                e = t.external_data.add()
                e.key, e.value = key, value
            offset += data.nbytes
            inits.append(t)
            nodes.append(helper.make_node("MatMul", [x, t.name], [f"h{k}"], name=f"mm{k}"))
            x = f"h{k}"
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, side])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, side])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "model.onnx"
    onnx.save(model, str(path))
    return path
