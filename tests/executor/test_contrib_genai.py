"""What onnxruntime-genai's model builder writes, run by xocview and by onnxruntime on the same
feeds: tiny Llama, Qwen3, Phi-3 and Gemma 2 decoders at fp32, int4 and int8 (and Llama at fp16
for DirectML), a prompt and then a decoding step over the cache each engine returned (files made
by tests/data/genai/make_genai_models.py); then the pieces those files lean on, node by node:
their MatMulNBits at accuracy_level 4 and GroupQueryAttention's window-sized cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from tests.executor.contrib_reference import (
    ATOL,
    RTOL,
    assert_same,
    node_model,
    ort_outputs,
    our_outputs,
)

DATA = Path(__file__).parent.parent / "data" / "genai"
FILES = sorted(p.parent.name for p in DATA.glob("*/model.onnx"))
PROMPT = 5
HEAD_SIZE = 16  # the generator's head_dim; the builder names the cache's last axis kv_cache_dim
CAPACITY = 16  # the cache buffer onnxruntime-genai allocates when past and present share it

# folder -> the com.microsoft ops the builder wrote in it (its choice, checked so a rebuild that
# changes them is noticed)
GQA = {"GroupQueryAttention", "SkipSimplifiedLayerNormalization"}
EXPECTED_OPS = {
    "llama_fp32": GQA,
    "phi3_fp32": GQA,
    "qwen3_fp32": GQA,
    "gemma2_fp32": GQA,
    "llama_int4": GQA | {"MatMulNBits"},
    "llama_int8": GQA | {"MatMulNBits"},
    "phi3_int4": GQA | {"MatMulNBits"},
    "qwen3_int4": GQA | {"MatMulNBits", "GatherBlockQuantized"},
    "gemma2_int4": GQA | {"MatMulNBits", "GatherBlockQuantized"},
    "llama_dml_fp16": GQA | {"RotaryEmbedding"},
}
requires_files = pytest.mark.skipif(
    not FILES, reason="no builder files under tests/data/genai (see make_genai_models.py)"
)


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _nodes(model: onnx.ModelProto, op_type: str) -> list[onnx.NodeProto]:
    return [n for n in model.graph.node if n.op_type == op_type]


def _int8_activations(model: onnx.ModelProto) -> bool:
    """MatMulNBits at accuracy_level 4 quantizes its input to int8, so an upstream difference
    of one float32 rounding can move a value across a rounding edge: one step of its block's
    scale in the product, amplified by the layers after it."""
    return any(_attrs(n).get("accuracy_level") == 4 for n in _nodes(model, "MatMulNBits"))


def _modes(model: onnx.ModelProto) -> list[str]:
    """How the cache is fed: "grow" (past of length 0, presents grow by the new tokens) and,
    for GroupQueryAttention, "buffer" (past and present one buffer of CAPACITY positions, as
    onnxruntime-genai runs it; a sliding window needs it, onnxruntime refuses a shorter cache)."""
    gqa = _nodes(model, "GroupQueryAttention")
    if not gqa:
        return ["grow"]
    windowed = any(int(_attrs(n).get("local_window_size", -1)) > 0 for n in gqa)
    return ["buffer"] if windowed else ["grow", "buffer"]


def _cases() -> list[tuple[str, str]]:
    return [
        (name, mode)
        for name in FILES
        for mode in _modes(onnx.load(str(DATA / name / "model.onnx")))
    ]


def _dims(value: onnx.ValueInfoProto) -> list[int | str]:
    return [d.dim_param or d.dim_value for d in value.type.tensor_type.shape.dim]


def _windows(model: onnx.ModelProto) -> dict[str, int]:
    """past/present name -> local_window_size, for the caches GroupQueryAttention keeps
    window-sized (sliding_window_cache=1, as the builder writes Gemma 2's local layers)."""
    windows: dict[str, int] = {}
    for node in _nodes(model, "GroupQueryAttention"):
        attrs = _attrs(node)
        if attrs.get("sliding_window_cache"):
            for name in [*node.input[3:5], *node.output[1:3]]:
                windows[name] = int(attrs["local_window_size"])
    return windows


def _feeds(
    model: onnx.ModelProto,
    ids: np.ndarray,
    mask: np.ndarray,
    past: dict[str, np.ndarray],
    capacity: int,
) -> dict[str, np.ndarray]:
    """Feeds read from the graph's inputs: the tokens, the mask over cache and tokens, positions
    where the model declares them, each past.* from ``past`` or zeros of ``capacity`` positions
    (a window-sized cache one more than its window, so that the decoding step evicts)."""
    batch, new = ids.shape
    windows = _windows(model)
    feeds: dict[str, np.ndarray] = {}
    for value in model.graph.input:
        dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        name = value.name
        if name == "input_ids":
            feeds[name] = ids.astype(dtype)
        elif name == "attention_mask":
            feeds[name] = mask.astype(dtype)
        elif name == "position_ids":
            positions = np.cumsum(mask, axis=1) - 1
            feeds[name] = positions[:, mask.shape[1] - new :].astype(dtype)
        elif name.startswith("past_key_values."):
            rows = windows[name] + 1 if name in windows else capacity
            empty = (batch, int(_dims(value)[1]), rows, HEAD_SIZE)
            feeds[name] = past.get(name, np.zeros(empty, dtype))
        else:
            raise AssertionError(f"{name}: an input the test does not know")
    return feeds


def _resident(total: int, capacity: int, window: int) -> int:
    """How many positions a window-sized cache holds after ``total`` tokens: all while they fit,
    then capacity - window + 1 are evicted at a time (GroupQueryAttention's documented L(T))."""
    if total <= capacity:
        return total
    g = capacity - window + 1
    return total - g * -(-(total - capacity) // g)


def _past(outputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {
        name.replace("present.", "past_key_values."): value
        for name, value in outputs.items()
        if name.startswith("present.")
    }


def _assert_step(
    got: dict[str, np.ndarray],
    want: dict[str, np.ndarray],
    total: int,
    windows: dict[str, int],
    loose: bool,
) -> None:
    """Logits and presents agree; in a cache buffer only the rows written so far are compared
    (onnxruntime leaves the rest of a fresh output buffer as it finds it). ``loose``: within 5%
    in norm (int8 activations, see _int8_activations)."""
    fp16 = want["logits"].dtype == np.float16
    rtol, atol = (2**-7, 1e-3) if fp16 else (RTOL, ATOL)
    for name in want:
        assert got[name].shape == want[name].shape, name
        assert got[name].dtype == want[name].dtype, name
        rows = total
        if name in windows:
            rows = _resident(total, want[name].shape[2], windows[name])
        g, w = (x if name == "logits" else x[:, :, :rows] for x in (got[name], want[name]))
        if loose:
            error = np.linalg.norm(g - w) / np.linalg.norm(w)
            assert error < 0.05, f"{name}: {error:.3g} of onnxruntime's norm apart"
        else:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=name)


def _prompt_and_step(
    path: Path, model: onnx.ModelProto, mode: str, batch: int, loose: bool
) -> None:
    """The prompt over an empty cache, then one decoding step over the cache each engine
    returned for it (they were just compared)."""
    capacity = CAPACITY if mode == "buffer" else 0
    vocab = int(_dims(model.graph.output[0])[-1])
    rng = np.random.default_rng(len(path.parent.name) + batch)
    ids = rng.integers(0, vocab, (batch, PROMPT))
    mask = np.ones((batch, PROMPT), np.int64)
    feeds = _feeds(model, ids, mask, {}, capacity)
    want, got = ort_outputs(path, feeds), our_outputs(path, feeds)
    windows = _windows(model)
    _assert_step(got, want, PROMPT, windows, loose)
    step = rng.integers(0, vocab, (batch, 1))
    mask = np.ones((batch, PROMPT + 1), np.int64)
    want = ort_outputs(path, _feeds(model, step, mask, _past(want), capacity))
    got = our_outputs(path, _feeds(model, step, mask, _past(got), capacity))
    _assert_step(got, want, PROMPT + 1, windows, loose)


@requires_files
@pytest.mark.parametrize(("name", "mode"), _cases())
@pytest.mark.parametrize("batch", [1, 2])
def test_builder_models_match_onnxruntime(name: str, mode: str, batch: int) -> None:
    """As the builder wrote them; where MatMulNBits quantizes its input to int8 the files are
    compared loosely here, exactly below (at accuracy_level 0) and node by node."""
    path = DATA / name / "model.onnx"
    model = onnx.load(str(path))
    written = {n.op_type for n in model.graph.node if n.domain == "com.microsoft"}
    assert EXPECTED_OPS.get(name, set()) <= written, f"{name}: the builder wrote {sorted(written)}"
    _prompt_and_step(path, model, mode, batch, loose=_int8_activations(model))


INT8_FILES = [n for n in FILES if _int8_activations(onnx.load(str(DATA / n / "model.onnx")))]


@requires_files
@pytest.mark.parametrize("name", INT8_FILES)
@pytest.mark.parametrize("batch", [1, 2])
def test_quantized_builder_models_at_float_accuracy(tmp_path: Path, name: str, batch: int) -> None:
    """The same files with every MatMulNBits at accuracy_level 0 (float32 products): the rest of
    the graph (GatherBlockQuantized, GroupQueryAttention, norms) agrees to float32 rounding."""
    model = onnx.load(str(DATA / name / "model.onnx"))
    for node in _nodes(model, "MatMulNBits"):
        for attr in node.attribute:
            if attr.name == "accuracy_level":
                attr.i = 0
    path = tmp_path / "model.onnx"
    onnx.save(model, str(path))
    mode = _modes(model)[-1]
    _prompt_and_step(path, model, mode, batch, loose=False)


@requires_files
@pytest.mark.parametrize("name", INT8_FILES)
def test_builder_matmul_nbits_nodes(tmp_path: Path, name: str) -> None:
    """Every MatMulNBits node of the file alone, with the builder's weights, on a prompt-shaped
    and a step-shaped input: accuracy_level 4's int8 blocks of A as onnxruntime forms them."""
    model = onnx.load(str(DATA / name / "model.onnx"))
    weights = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    rng = np.random.default_rng(7)
    for k, node in enumerate(_nodes(model, "MatMulNBits")):
        attrs = _attrs(node)
        for shape in [(2, PROMPT, attrs["K"]), (1, 1, attrs["K"])]:
            a = rng.standard_normal(shape).astype(np.float32)
            inputs = [a, *(weights[n] if n else None for n in node.input[1:])]
            one, feeds, _ = node_model(
                "MatMulNBits", inputs, attrs, initializers=set(range(1, len(inputs)))
            )
            path = tmp_path / f"node{k}.onnx"
            onnx.save(one, str(path))
            assert_same(our_outputs(path, feeds), ort_outputs(one, feeds))


@pytest.mark.parametrize(
    ("lengths", "new", "capacity", "window"),
    [
        ([7, 4], 1, 5, 3),  # a ragged decoding step; entry 0 evicts
        ([9], 4, 4, 3),  # a multi-token step longer than the cache
        ([6, 6], 6, 4, 2),  # a first prompt longer than the cache
        ([5, 3], 1, 3, 3),  # capacity == window: one position evicted per step
    ],
)
def test_window_sized_cache(
    tmp_path: Path, lengths: list[int], new: int, capacity: int, window: int
) -> None:
    """GroupQueryAttention with sliding_window_cache=1 alone: rows [0, L(T)) of the present
    buffers (the rest is unspecified) and the attention output."""
    rng = np.random.default_rng(sum(lengths) + capacity)
    b, heads, kv_heads, h = len(lengths), 4, 2, 16
    x = [
        rng.standard_normal((b, new, n * h)).astype(np.float32) for n in (heads, kv_heads, kv_heads)
    ]
    past = [rng.standard_normal((b, kv_heads, capacity, h)).astype(np.float32) for _ in "kv"]
    seqlens = np.asarray(lengths, np.int32) - 1
    total = np.asarray(max(lengths), np.int32)
    attrs = {"num_heads": heads, "kv_num_heads": kv_heads, "local_window_size": window}
    attrs["sliding_window_cache"] = 1
    one, feeds, _ = node_model("GroupQueryAttention", [*x, *past, seqlens, total], attrs, outputs=3)
    path = tmp_path / "gqa.onnx"
    onnx.save(one, str(path))
    want, got = ort_outputs(one, feeds), our_outputs(path, feeds)
    assert_same(got, want, ["y0"])
    for name in ("y1", "y2"):
        assert got[name].shape == want[name].shape == (b, kv_heads, capacity, h)
        for entry, total_b in enumerate(lengths):
            rows = _resident(total_b, capacity, window)
            np.testing.assert_allclose(
                got[name][entry, :, :rows], want[name][entry, :, :rows], rtol=RTOL, atol=ATOL
            )


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize(("k", "block"), [(64, 32), (40, 16), (96, 64)])
def test_matmul_nbits_int8_activations(tmp_path: Path, bits: int, k: int, block: int) -> None:
    """accuracy_level 4 on hand-made weights with packed zero points, K a multiple of the block
    or not: A in int8 blocks (2-bit blocks of 16 stay float32, as onnxruntime runs them)."""
    rng = np.random.default_rng(bits * k)
    n, blocks = 24, -(-k // block)
    weights = rng.integers(0, 256, (n, blocks, block * bits // 8)).astype(np.uint8)
    scales = (rng.random(n * blocks) * 0.1).astype(np.float32)
    zeros = rng.integers(0, 256, (n, -(-blocks * bits // 8))).astype(np.uint8)
    a = rng.standard_normal((5, k)).astype(np.float32)
    attrs = {"K": k, "N": n, "bits": bits, "block_size": block, "accuracy_level": 4}
    inputs = [a, weights, scales, zeros]
    one, feeds, _ = node_model("MatMulNBits", inputs, attrs, initializers={1, 2, 3})
    path = tmp_path / "nbits.onnx"
    onnx.save(one, str(path))
    want = ort_outputs(one, feeds)["y0"]
    np.testing.assert_allclose(our_outputs(path, feeds)["y0"], want, rtol=1e-5, atol=1e-5 * 2**bits)
