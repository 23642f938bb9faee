"""Every GGML type blockwise.py draws as DequantizeLinear: its int8 values times its float32
block scales equal the gguf package's dequantization bit for bit (on quantized random data
where the package quantizes the type, and on random raw blocks with finite scales), the
executor and onnxruntime run DequantizeLinear with blocks of 16 and 256, and a GGUF llama
whose 2-D weights are of each type gives the same logits drawn as DequantizeLinear as when
dequantized to float32."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as Q

from xocview.executor import run
from xocview.formats import gguf as fmt
from xocview.formats.gguf import arch, blockwise, quants
from xocview.formats.source import Source
from xocview.model import Graph, Node, Tensor, validate

# type -> (where its float scale starts in a block, its dtype, int8 values' range)
LAYOUT: dict[str, tuple[int, str, tuple[int, int]]] = {
    "Q8_0": (0, "<f2", (-128, 127)),
    "Q4_0": (0, "<f2", (-8, 7)),
    "Q5_0": (0, "<f2", (-16, 15)),
    "IQ4_NL": (0, "<f2", (-127, 113)),
    "MXFP4": (-1, "", (-12, 12)),  # an E8M0 exponent byte, every value finite
    "Q6_K": (208, "<f2", (-32, 31)),
    "Q3_K": (108, "<f2", (-4, 3)),
    "IQ4_XS": (0, "<f2", (-127, 113)),
    "Q8_K": (0, "<f4", (-128, 127)),
}
BLOCK_SIZES = {"Q6_K": 16, "Q3_K": 16, "Q8_K": 256}
QUANTIZABLE = ("Q8_0", "Q4_0", "Q5_0", "MXFP4")  # the gguf package quantizes these


def test_the_exact_types_are_these_with_their_block_sizes() -> None:
    assert set(blockwise.EXACT) == set(LAYOUT)
    assert {k: BLOCK_SIZES.get(k, 32) for k in LAYOUT} == blockwise.EXACT
    # per-block minimums and grids stay float32 weights
    assert not {"Q4_1", "Q5_1", "Q2_K", "Q4_K", "Q5_K", "IQ2_XS", "BF16"} & set(blockwise.EXACT)


def _raw_blocks(kind: str, count: int, rng: np.random.Generator, scale: float = 0.0) -> np.ndarray:
    """``count`` random blocks of ``kind`` with finite scales (of about ``scale`` if given,
    else spread over float16's whole range, subnormals included)."""
    size = gguf.GGML_QUANT_SIZES[Q[kind]][1]
    raw = rng.integers(0, 256, (count, size), dtype=np.uint8)
    at, dtype, _ = LAYOUT[kind]
    if kind == "MXFP4" and scale:
        raw[:, 0] = 128 + np.round(np.log2(scale)) + rng.integers(-1, 2, count)
    elif dtype:
        if scale:
            d = scale * rng.uniform(0.5, 1.0, count) * rng.choice([-1, 1], count)
        else:
            d = rng.choice([-1, 1], count) * 2.0 ** rng.uniform(-24, 15, count)
        width = np.dtype(dtype).itemsize
        raw[:, at : at + width] = d.astype(dtype).reshape(count, 1).view(np.uint8)
    return raw


def _dequantized(kind: str, raw: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """The gguf package's dequantization (quants.py's for Q8_K, which the package lacks)."""
    if kind == "Q8_K":
        ggml = next(t for t in quants.GGML_TYPES.values() if t.name == kind)
        want = quants.dequantize(ggml, raw.reshape(-1), (rows, cols))
        d = raw.reshape(-1, 292)[:, :4].copy().view("<f4")  # ggml: x->d * x->qs
        q = raw.reshape(-1, 292)[:, 4:260].view(np.int8).astype(np.float32)
        np.testing.assert_array_equal(want.reshape(-1, 256), d * q)
        return want
    return gguf.quants.dequantize(raw.reshape(rows, -1), Q[kind])


def _product(kind: str, values: np.ndarray, scales: np.ndarray) -> np.ndarray:
    return values.astype(np.float32) * np.repeat(scales, blockwise.EXACT[kind], axis=1)


@pytest.mark.parametrize("kind", list(LAYOUT))
def test_values_times_scales_are_ggml_dequantization_bit_for_bit(kind: str) -> None:
    rng = np.random.default_rng(list(LAYOUT).index(kind))
    rows, cols = 6, 768
    block = gguf.GGML_QUANT_SIZES[Q[kind]][0]
    cases = [_raw_blocks(kind, rows * cols // block, rng).reshape(-1)]
    if kind in QUANTIZABLE:
        data = rng.standard_normal((rows, cols)).astype(np.float32)
        data[0, :64] = 0.0  # all-zero blocks: scale 0 (Q*_0) or E8M0's smallest
        cases.append(gguf.quants.quantize(data, Q[kind]).reshape(-1))
    lo, hi = LAYOUT[kind][2]
    with np.errstate(over="ignore"):  # MXFP4's largest scales times 12 overflow to inf
        for raw in cases:
            values, scales = blockwise.split(kind, raw, rows, cols)
            assert values.dtype == np.int8 and values.shape == (rows, cols)
            assert scales.dtype == np.float32
            assert scales.shape == (rows, cols // blockwise.EXACT[kind])
            assert np.isfinite(scales).all()
            want = _dequantized(kind, raw, rows, cols)
            got = _product(kind, values, scales)
            assert got.view(np.uint32).tobytes() == want.view(np.uint32).tobytes()
            assert lo <= values.min() and values.max() <= hi
    values = blockwise.split(kind, cases[0], rows, cols)[0]  # random blocks use every value
    assert (values.min(), values.max()) == (lo, hi)


def test_a_large_tensor_is_split_in_chunks_as_one(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    raw = _raw_blocks("Q6_K", 40, rng).reshape(-1)
    whole = blockwise.split("Q6_K", raw, 10, 1024)
    monkeypatch.setattr(blockwise, "_CHUNK_VALUES", 3 * 256)  # chunks of 3 blocks
    chunked = blockwise.split("Q6_K", raw, 10, 1024)
    np.testing.assert_array_equal(whole[0], chunked[0])
    np.testing.assert_array_equal(whole[1], chunked[1])


def _dequantize_graph(values: np.ndarray, scales: np.ndarray, block: int) -> Graph:
    """y = DequantizeLinear(values, scales, axis 1, block) + x."""
    rows, cols = values.shape
    tensors = [
        Tensor("x", "input", [rows, cols], "float32"),
        Tensor("w.values", "weight", [rows, cols], "int8", data=values),
        Tensor("w.scales", "weight", list(scales.shape), "float32", data=scales),
        Tensor("w", "activation", [rows, cols], "float32"),
        Tensor("y", "output", [rows, cols], "float32"),
    ]
    nodes = [
        Node("dq", "DequantizeLinear", [1, 2], [3], {"axis": 1, "block_size": block}),
        Node("add", "Add", [0, 3], [4]),
    ]
    return Graph("dq", "dq", tensors, nodes, inputs=[0], outputs=[4])


@pytest.mark.parametrize("kind", ["Q6_K", "Q3_K", "Q8_K"])
def test_blocks_of_16_and_256_run_on_the_executor_and_onnxruntime(
    kind: str, tmp_path: Path
) -> None:
    rng = np.random.default_rng(3)
    rows, cols = 4, 512
    raw = _raw_blocks(kind, rows * cols // 256, rng, scale=1e-3).reshape(-1)
    values, scales = blockwise.split(kind, raw, rows, cols)
    want = _dequantized(kind, raw, rows, cols)
    graph = _dequantize_graph(values, scales, blockwise.EXACT[kind])
    validate(graph)
    x = np.zeros((rows, cols), np.float32)
    np.testing.assert_array_equal(run(graph, {"x": x}).outputs["y"], want)
    ort = pytest.importorskip("onnxruntime")
    from xocview.formats.onnx.writer import save

    save(graph, tmp_path / "dq.onnx")
    session = ort.InferenceSession(str(tmp_path / "dq.onnx"))
    (got,) = session.run(["y"], {"x": x})
    np.testing.assert_array_equal(got, want)


# type -> about the largest |weight| wanted, over the type's largest |int8 product|
_MAX_INT = {"Q8_0": 127, "Q4_0": 8, "Q5_0": 16, "IQ4_NL": 127, "MXFP4": 12 / 8}
_MAX_INT |= {"Q6_K": 32 * 128, "Q3_K": 4 * 32, "IQ4_XS": 127 * 32, "Q8_K": 128}


def _llama(path: Path, kind: str) -> Path:
    """A one-block llama, hidden 256 (a k-quant's block), 2 heads of 128, every 2-D weight of
    ``kind`` (random blocks of weights up to ~0.1), norms F32."""
    rng = np.random.default_rng(5)
    w = gguf.GGUFWriter(path, "llama")
    w.add_layer_norm_rms_eps(1e-5)
    for key, value in (("block_count", 1), ("embedding_length", 256)):
        w.add_uint32(f"llama.{key}", value)
    w.add_feed_forward_length(256)
    w.add_head_count(2)
    w.add_head_count_kv(2)
    shapes = {"token_embd": (32, 256), "output": (32, 256)}
    shapes |= {f"blk.0.attn_{x}": (256, 256) for x in ("q", "k", "v", "output")}
    shapes |= {f"blk.0.ffn_{x}": (256, 256) for x in ("gate", "up", "down")}
    for name in ("output_norm", "blk.0.attn_norm", "blk.0.ffn_norm"):
        w.add_tensor(f"{name}.weight", (1 + 0.1 * rng.standard_normal(256)).astype(np.float32))
    block, _ = gguf.GGML_QUANT_SIZES[Q[kind]]
    for name, (rows, cols) in shapes.items():
        raw = _raw_blocks(kind, rows * cols // block, rng, scale=0.1 / _MAX_INT[kind])
        w.add_tensor(f"{name}.weight", raw.reshape(rows, -1), raw_dtype=Q[kind])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.mark.parametrize("kind", list(LAYOUT))
def test_a_quantized_llama_drawn_with_dequantize_linear_runs_as_its_float32_self(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _llama(tmp_path / f"{kind}.gguf", kind)
    graph = fmt.load(Source(path))
    validate(graph)
    block = blockwise.EXACT[kind]
    dq = [n for n in graph.nodes if n.op_type == "DequantizeLinear"]
    assert len(dq) == 9 and all(n.attributes == {"axis": 1, "block_size": block} for n in dq)
    q = graph.tensor("model.layers.0.self_attn.q_proj.weight")
    assert q.metadata["values"] == (
        f"{kind}: DequantizeLinear of int8 values and float32 scales per {block}"
    )
    assert graph.tensor(q.id + ".scales").shape == [256, 256 // block]
    stored = [t for t in graph.tensors if t.id.endswith((".values", ".scales"))]
    assert len(stored) == 18 and all(callable(t._data) for t in stored)  # nothing read yet
    ids = np.array([[1, 5, 7, 30, 2]])
    got = run(graph, {"input_ids": ids}).outputs["logits"]

    monkeypatch.setattr(arch, "EXACT", {})  # the float32 path: every weight dequantized
    floats = fmt.load(Source(path))
    assert not any(n.op_type == "DequantizeLinear" for n in floats.nodes)
    want = run(floats, {"input_ids": ids}).outputs["logits"]
    assert np.isfinite(want).all() and want.std() > 1e-3
    np.testing.assert_array_equal(got, want)  # the same float32 weights, the same kernels
    # the weights themselves agree bit for bit, q's rows un-permuted in both
    for name in (q.id, "model.layers.0.self_attn.k_proj.weight", "lm_head.weight"):
        values, scales = graph.tensor(name + ".values").data, graph.tensor(name + ".scales").data
        np.testing.assert_array_equal(_product(kind, values, scales), floats.tensor(name).data)
