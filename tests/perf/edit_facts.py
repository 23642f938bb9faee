"""Facts follow edits: the time to re-infer every downstream type after an edit at the top.

Two generated 20k-node ONNX models, each with an edit at the very top that changes the shape
of every tensor below it:

- ResNet-like (stem Conv 7x7/2, MaxPool, then residual blocks Conv-Relu-Conv-Add-Relu, a head
  of GlobalAveragePool, Shape -> Reshape and Gemm): the stem's strides set from [2, 2] to
  [1, 1], as a user does in the inspector.
- Transformer-like (``onnx_models.transformer_like``): the input's shape set from
  [batch, 8, 16] to [batch, 12, 16].
- Contrib-like (``contrib_like``): layers of onnxruntime's fused com.microsoft ops (Attention,
  SkipLayerNormalization, FastGelu, BiasGelu, QuickGelu) between MatMuls, stored with every
  type as onnxruntime's optimizer saves them; the input's shape set from [1, 8, 8] to
  [1, 12, 8]. ONNX types none of those ops: the executor's probe (``shape_probe``) does. Also
  counted: the contrib outputs the edit leaves known, with the probe and without it.

For each: the median time of the edit (the attribute or shape set, the index rebuilt, every
reached node inferred again: cold, with the inference memo cleared before each run; and warm),
of its undo and redo, and of the whole-graph facts the panels then make again (summary, FLOPs,
validation); the anchor is ``onnx.shape_inference.infer_shapes`` on the same model (types
removed) in the same run. Target: the edit within 0.3 s.

    python tests/perf/edit_facts.py [--nodes 20000] [--repeat 5] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import cast

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx_models import transformer_like  # tests/perf/, beside us

from xocview.executor import shape_probe
from xocview.formats import load
from xocview.model import Graph
from xocview.model import edits as E
from xocview.model.edits import fallback, onnx_infer
from xocview.model.edits.steps import SetTypes
from xocview.ui.graph_facts import FACTS


def resnet_like(
    num_nodes: int, channels: int = 8, side: int = 224, seed: int = 0
) -> onnx.ModelProto:
    """A stem, ``(num_nodes - 8) // 5`` residual blocks named by scope, and a head; each
    Conv has weights of its own. No value_info: the loader infers the types."""
    rng = np.random.default_rng(seed)
    inits: list[TensorProto] = []

    def weight(name: str, shape: tuple[int, ...]) -> str:
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name))
        return name

    c = channels
    nodes = [
        helper.make_node(
            "Conv",
            ["input", weight("stem.w", (c, 3, 7, 7)), weight("stem.b", (c,))],
            ["stem"],
            name="/stem/Conv",
            kernel_shape=[7, 7],
            strides=[2, 2],
            pads=[3, 3, 3, 3],
        ),
        helper.make_node(
            "MaxPool",
            ["stem"],
            ["pool"],
            name="/stem/MaxPool",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
        ),
    ]
    x = "pool"
    for i in range((num_nodes - 8) // 5):
        p = f"/layer{i}"
        conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
        nodes += [
            helper.make_node(
                "Conv",
                [x, weight(f"{p}.w1", (c, c, 3, 3))],
                [f"{p}/c1"],
                name=f"{p}/conv1/Conv",
                **conv,
            ),
            helper.make_node("Relu", [f"{p}/c1"], [f"{p}/r1"], name=f"{p}/Relu"),
            helper.make_node(
                "Conv",
                [f"{p}/r1", weight(f"{p}.w2", (c, c, 3, 3))],
                [f"{p}/c2"],
                name=f"{p}/conv2/Conv",
                **conv,
            ),
            helper.make_node("Add", [f"{p}/c2", x], [f"{p}/a"], name=f"{p}/Add"),
            helper.make_node("Relu", [f"{p}/a"], [f"{p}/out"], name=f"{p}/Relu_1"),
        ]
        x = f"{p}/out"
    inits.append(numpy_helper.from_array(np.array([0, -1], dtype=np.int64), "flat"))
    nodes += [
        helper.make_node("GlobalAveragePool", [x], ["gap"], name="/head/GlobalAveragePool"),
        helper.make_node("Shape", ["gap"], ["gap_shape"], name="/head/Shape"),
        helper.make_node("Reshape", ["gap", "flat"], ["flat_out"], name="/head/Reshape"),
        helper.make_node(
            "Gemm",
            ["flat_out", weight("fc.w", (10, c)), weight("fc.b", (10,))],
            ["logits"],
            name="/head/Gemm",
            transB=1,
        ),
        helper.make_node("Softmax", ["logits"], ["output"], name="/head/Softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        "resnet_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, side, side])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def contrib_like(num_nodes: int, dim: int = 8, seq: int = 8, seed: int = 0) -> onnx.ModelProto:
    """Layers of eight nodes, Attention -> SkipLayerNormalization -> MatMul -> FastGelu ->
    MatMul -> SkipLayerNormalization -> BiasGelu -> QuickGelu, each with weights of its own and
    every type stored (value_info), as onnxruntime's optimizer writes a fused BERT."""
    rng = np.random.default_rng(seed)
    inits: list[TensorProto] = []
    typed: dict[str, int] = {}

    def weight(name: str, *shape: int) -> str:
        inits.append(numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name))
        return name

    ms, d, x = "com.microsoft", dim, "input"
    nodes: list[onnx.NodeProto] = []
    for i in range((num_nodes - 1) // 8):
        p = f"/layer{i}"
        t = [f"{p}/t{k}" for k in range(8)]
        nodes += [
            helper.make_node(
                "Attention", [x, weight(f"{p}.qkv", d, 3 * d), weight(f"{p}.qkv_b", 3 * d)],
                [t[0]], name=f"{p}/attn/Attention", domain=ms, num_heads=2,
            ),
            helper.make_node(
                "SkipLayerNormalization",
                [t[0], x, weight(f"{p}.g1", d), weight(f"{p}.b1", d)],
                [t[1]], name=f"{p}/SkipLayerNorm", domain=ms, epsilon=1e-5,
            ),
            helper.make_node("MatMul", [t[1], weight(f"{p}.w1", d, 4 * d)], [t[2]],
                             name=f"{p}/mlp/MatMul"),
            helper.make_node("FastGelu", [t[2], weight(f"{p}.fb", 4 * d)], [t[3]],
                             name=f"{p}/mlp/FastGelu", domain=ms),
            helper.make_node("MatMul", [t[3], weight(f"{p}.w2", 4 * d, d)], [t[4]],
                             name=f"{p}/mlp/MatMul_1"),
            helper.make_node(
                "SkipLayerNormalization",
                [t[4], t[1], weight(f"{p}.g2", d), weight(f"{p}.b2", d), weight(f"{p}.bias", d)],
                [t[5]], name=f"{p}/SkipLayerNorm_1", domain=ms, epsilon=1e-5,
            ),
            helper.make_node("BiasGelu", [t[5], weight(f"{p}.bg", d)], [t[6]],
                             name=f"{p}/BiasGelu", domain=ms),
            helper.make_node("QuickGelu", [t[6]], [t[7]], name=f"{p}/QuickGelu", domain=ms),
        ]  # fmt: skip
        typed.update({n: (4 * d if k in (2, 3) else d) for k, n in enumerate(t)})
        x = t[7]
    nodes.append(helper.make_node("Identity", [x], ["output"], name="/head/Identity"))
    graph = helper.make_graph(
        nodes,
        "contrib_like",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, seq, d])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, seq, d])],
        initializer=inits,
        value_info=[
            helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, seq, w])
            for n, w in typed.items()
        ],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(ms, 1)]
    return helper.make_model(graph, opset_imports=opsets)


def clear_memo() -> None:
    """Forget what ONNX and the probe told (a cold start: the first edit after opening)."""
    onnx_infer.clear_memo()
    fallback.clear_memo()


def contrib_outputs_known(g: Graph, edit: Callable[[Graph], E.Edit]) -> list[int]:
    """[contrib outputs, those known before the edit, after it with the probe, without it]."""
    outs = [t for n in g.nodes if n.metadata.get("domain") == "com.microsoft" for t in n.outputs]
    known = [len(outs), sum("rank_unknown" not in g.tensors[t].metadata for t in outs)]
    for probing in (True, False):
        if not probing:
            fallback.unregister(shape_probe.probe)
        try:
            clear_memo()
            e = edit(g)
            known.append(sum("rank_unknown" not in g.tensors[t].metadata for t in outs))
            e.revert(g)
        finally:
            shape_probe.register()
    return known


def _anchor(model: onnx.ModelProto) -> Callable[[], object]:
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    del bare.graph.value_info[:]
    return lambda: onnx.shape_inference.infer_shapes(bare, data_prop=True)


def _facts(g: Graph) -> None:
    for make in FACTS.values():
        make(g)


def _ready(g: Graph) -> None:
    """The lookups an open document has made before the user edits (index, ids)."""
    g.index.node_positions()
    g.index.tensor_position(g.tensors[0].id)
    gc.collect()


def _timed(run: Callable[[], object]) -> tuple[float, float, object]:
    """Wall and CPU seconds of one call (CPU time: the 2 shared cores make wall time noisy)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = run()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def _ms(pairs: list[tuple[float, float]]) -> str:
    wall = statistics.median(p[0] for p in pairs) * 1000
    cpu = statistics.median(p[1] for p in pairs) * 1000
    return f"{wall:7.1f} ms wall, {cpu:7.1f} ms CPU"


def _undo(e: E.Edit, g: Graph) -> object:
    e.revert(g)
    return g.index  # rebuilt, as the document does after an undo


def _redo(e: E.Edit, g: Graph) -> object:
    e.apply(g)
    return g.index


def bench(
    name: str, model: onnx.ModelProto, edit: Callable[[Graph], E.Edit], repeat: int, profile: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"{name}.onnx"
        onnx.save(model, str(path))
        g = load(path)
    print(
        f"\n{name}: {len(model.graph.node):,} ONNX nodes ({len(g.nodes):,} in xocview with "
        f"scope groups), {len(g.tensors):,} tensors"
    )
    infer = _anchor(model)
    times: dict[str, list[tuple[float, float]]] = {
        k: [] for k in ("anchor", "cold", "warm", "undo", "redo", "facts")
    }
    changed = 0
    for _ in range(repeat):
        gc.collect()
        times["anchor"].append(_timed(infer)[:2])
        clear_memo()  # a cold start: as the first edit after opening
        _ready(g)
        wall, cpu, made = _timed(lambda: edit(g))
        e = cast(E.Edit, made)
        times["cold"].append((wall, cpu))
        changed = sum(len(s.positions) for s in e.steps if isinstance(s, SetTypes))
        gc.collect()
        times["facts"].append(_timed(lambda: _facts(g))[:2])
        times["undo"].append(_timed(partial(_undo, e, g))[:2])
        times["redo"].append(_timed(partial(_redo, e, g))[:2])
        e.revert(g)
        _ready(g)
        wall, cpu, made = _timed(lambda: edit(g))  # the memo now knows every block
        times["warm"].append((wall, cpu))
        cast(E.Edit, made).revert(g)
    print(f"  tensors whose type changed:        {changed:,}")
    print(f"  anchor: onnx infer_shapes:        {_ms(times['anchor'])}")
    print(f"  edit + re-inference, cold memo:   {_ms(times['cold'])}  (target 300 ms)")
    print(f"  edit + re-inference, warm memo:   {_ms(times['warm'])}")
    print(f"  undo (old types back, index):     {_ms(times['undo'])}")
    print(f"  redo (new types, no inference):   {_ms(times['redo'])}")
    print(f"  facts made again (summary, FLOPs, validation): {_ms(times['facts'])}")
    if name == "contrib_like":
        total, before, probed, bare = contrib_outputs_known(g, edit)
        print(
            f"  contrib outputs known: {before:,} of {total:,} before the edit, {probed:,} after "
            f"it ({bare:,} without the executor's probe)"
        )
    if profile:
        clear_memo()
        _ready(g)
        prof = cProfile.Profile()
        prof.enable()
        e = edit(g)
        prof.disable()
        e.revert(g)
        pstats.Stats(prof).sort_stats("tottime").print_stats(14)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args()
    print(f"median of {args.repeat} runs; Python {sys.version.split()[0]}, onnx {onnx.__version__}")
    bench(
        "resnet_like",
        resnet_like(args.nodes),
        lambda g: E.set_attribute(g, "/stem/Conv", "strides", [1, 1]),
        args.repeat,
        args.profile,
    )
    bench(
        "transformer_like",
        transformer_like(args.nodes),
        lambda g: E.set_shape(g, "input", [-1, 12, 16]),
        args.repeat,
        args.profile,
    )
    bench(
        "contrib_like",
        contrib_like(args.nodes),
        lambda g: E.set_shape(g, "input", [1, 12, 8]),
        args.repeat,
        args.profile,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
