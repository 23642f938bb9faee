"""The newest transformer ops (LinearAttention, CausalConvWithState, SwiGLU, TensorScatter,
FlexAttention) against onnxruntime, and against onnx's ReferenceEvaluator where onnxruntime
lacks the op (SwiGLU: it has no Swish-24 for the function body; FlexAttention: preview)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.executor.ort_reference import check_op, ours, reference_run
from xocview.executor.ops.flex_attention import flex_attention
from xocview.executor.registry import lookup

RNG = np.random.default_rng(27)


def rand(*shape: int, dtype: Any = np.float32, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def assert_matches(got: list[np.ndarray], want: list[np.ndarray], **tol: float) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), **tol)


# --- LinearAttention -----------------------------------------------------------------------


def linear_attention_inputs(
    rule: str,
    b: int,
    t: int,
    hq: int,
    hkv: int,
    dk: int,
    dv: int,
    *,
    past: bool,
    per_dim_decay: bool,
    scalar_beta: bool,
    dtype: Any = np.float32,
    decay_scale: float = 1.0,
) -> list[np.ndarray | None]:
    """Normalised keys, decays in (-decay_scale, 0) and beta in (0, 1): the regime the ops
    are used in."""
    k = rand(b, t, hkv, dk)
    k /= np.linalg.norm(k, axis=-1, keepdims=True)
    decay = beta = None
    if rule in ("gated", "gated_delta"):
        decay = -decay_scale * RNG.random((b, t, hkv * (dk if per_dim_decay else 1)))
    if rule in ("delta", "gated_delta"):
        beta = RNG.random((b, t, 1 if scalar_beta else hkv))
    inputs = [
        rand(b, t, hq * dk),
        k.reshape(b, t, hkv * dk),
        rand(b, t, hkv * dv),
        rand(b, hkv, dk, dv, scale=0.5) if past else None,
        decay,
        beta,
    ]
    return [None if x is None else x.astype(dtype) for x in inputs]


@pytest.mark.parametrize("rule", ["linear", "gated", "delta", "gated_delta"])
@pytest.mark.parametrize("heads", [(2, 2), (4, 2), (4, 1)])
@pytest.mark.parametrize("past", [False, True])
@pytest.mark.parametrize("per_dim_decay", [False, True])
def test_linear_attention_matches_onnxruntime(
    rule: str, heads: tuple[int, int], past: bool, per_dim_decay: bool
) -> None:
    hq, hkv = heads
    inputs = linear_attention_inputs(
        rule, 2, 7, hq, hkv, 4, 3, past=past, per_dim_decay=per_dim_decay, scalar_beta=False
    )
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule, "chunk_size": 3}
    check_op("LinearAttention", inputs, attrs, opset=27, num_outputs=2, rtol=1e-4, atol=1e-5)


@settings(max_examples=40, deadline=None)
@given(
    rule=st.sampled_from(["linear", "gated", "delta", "gated_delta"]),
    t=st.integers(0, 20),
    chunk=st.integers(1, 9),
    group=st.sampled_from([1, 2, 3]),
    hkv=st.integers(1, 3),
    dk=st.integers(1, 5),
    dv=st.integers(1, 4),
    per_dim=st.booleans(),
    scalar_beta=st.booleans(),
    past=st.booleans(),
)
def test_linear_attention_chunking_matches_the_recurrence(
    rule: str,
    t: int,
    chunk: int,
    group: int,
    hkv: int,
    dk: int,
    dv: int,
    per_dim: bool,
    scalar_beta: bool,
    past: bool,
) -> None:
    """Any chunk size gives the sequential reference's outputs and state."""
    hq = hkv * group
    inputs = linear_attention_inputs(
        rule, 2, t, hq, hkv, dk, dv, past=past, per_dim_decay=per_dim, scalar_beta=scalar_beta
    )
    attrs = {"q_num_heads": hq, "kv_num_heads": hkv, "update_rule": rule}
    want = reference_run("LinearAttention", inputs, attrs, opset=27, num_outputs=2)
    got = ours("LinearAttention", inputs, {**attrs, "chunk_size": chunk}, opset=27, num_outputs=2)
    assert_matches(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("rule", ["gated", "gated_delta"])
@pytest.mark.parametrize("per_dim", [False, True])
@pytest.mark.parametrize("decay_scale", [0.01, 30.0])
def test_linear_attention_strong_and_weak_decay(
    rule: str, per_dim: bool, decay_scale: float
) -> None:
    """Decays strong enough that a chunk's cumulative decay spans e^-400 (the explicit
    per-dim weights), and weak ones (the factored matmul)."""
    inputs = linear_attention_inputs(
        rule,
        2,
        40,
        4,
        2,
        6,
        5,
        past=True,
        per_dim_decay=per_dim,
        scalar_beta=False,
        decay_scale=decay_scale,
    )
    attrs = {"q_num_heads": 4, "kv_num_heads": 2, "update_rule": rule, "chunk_size": 16}
    want = reference_run("LinearAttention", inputs, attrs, opset=27, num_outputs=2)
    got = ours("LinearAttention", inputs, attrs, opset=27, num_outputs=2)
    assert_matches(got, want, rtol=1e-4, atol=1e-5)


def test_linear_attention_scale_and_float16() -> None:
    """An explicit scale; float16 in, float32 inside, float16 out with a float32 state."""
    inputs = linear_attention_inputs(
        "gated_delta", 1, 9, 4, 2, 8, 8, past=True, per_dim_decay=False, scalar_beta=True
    )
    half = [None if x is None else x.astype(np.float16) for x in inputs]
    attrs = {"q_num_heads": 4, "kv_num_heads": 2, "scale": 0.3}
    check_op("LinearAttention", inputs, attrs, opset=27, num_outputs=2, rtol=1e-4, atol=1e-5)
    half[3] = inputs[3]  # the state may have its own type
    got = ours("LinearAttention", half, attrs, opset=27, num_outputs=2)
    want = reference_run("LinearAttention", half, attrs, opset=27, num_outputs=2)
    assert got[0].dtype == np.float16 and got[1].dtype == np.float32
    assert_matches(got, want, rtol=2e-3, atol=2e-3)


def test_linear_attention_long_prefill_equals_decode_steps() -> None:
    """A 150-step prefill (three chunks of 64) leaves the state 150 decode steps would."""
    inputs = linear_attention_inputs(
        "gated_delta", 1, 150, 2, 2, 16, 16, past=False, per_dim_decay=True, scalar_beta=False
    )
    attrs = {"q_num_heads": 2, "kv_num_heads": 2}
    out, state = ours("LinearAttention", inputs, attrs, opset=27, num_outputs=2)
    step_state = np.zeros_like(state)
    for i in range(150):
        one = [None if x is None else x[:, i : i + 1] for x in inputs]
        one[3] = step_state
        y, step_state = ours("LinearAttention", one, attrs, opset=27, num_outputs=2)
        np.testing.assert_allclose(y, out[:, i : i + 1], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(step_state, state, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("attrs", "drop", "words"),
    [
        ({"update_rule": "mamba"}, (), "update_rule 'mamba' is not supported"),
        ({"update_rule": "linear"}, (), "forbids decay"),
        ({"update_rule": "gated_delta"}, (5,), "needs beta"),
        ({"q_num_heads": 3}, (), "multiple of kv_num_heads"),
    ],
)
def test_linear_attention_refusals(
    attrs: dict[str, Any], drop: tuple[int, ...], words: str
) -> None:
    inputs = linear_attention_inputs(
        "gated_delta", 1, 2, 2, 2, 4, 4, past=False, per_dim_decay=False, scalar_beta=False
    )
    inputs = [None if i in drop else x for i, x in enumerate(inputs)]
    kwargs = {"q_num_heads": 2, "kv_num_heads": 2, **attrs}
    with pytest.raises(ValueError, match=words):
        lookup("LinearAttention", 27).fn(*inputs, **kwargs)


# --- CausalConvWithState -------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 4])
@pytest.mark.parametrize("length", [1, 3, 9])
@pytest.mark.parametrize("activation", ["none", "silu", "swish"])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("with_past", [False, True])
def test_causal_conv_matches_onnxruntime(
    k: int, length: int, activation: str, with_bias: bool, with_past: bool
) -> None:
    x, w = rand(2, 5, length), rand(5, 1, k)
    bias = rand(5) if with_bias else None
    past = rand(2, 5, k - 1) if with_past else None
    attrs = {"activation": activation}
    check_op("CausalConvWithState", [x, w, bias, past], attrs, opset=27, num_outputs=2)


def test_causal_conv_decode_chain_equals_prefill() -> None:
    """Feeding present_state back one step at a time gives the prefill's outputs."""
    x, w, bias = rand(1, 3, 8), rand(3, 1, 4), rand(3)
    y, state = ours("CausalConvWithState", [x, w, bias], {}, opset=27, num_outputs=2)
    carry = np.zeros((1, 3, 3), np.float32)
    for t in range(8):
        step, carry = ours(
            "CausalConvWithState", [x[..., t : t + 1], w, bias, carry], {}, opset=27, num_outputs=2
        )
        np.testing.assert_allclose(step[..., 0], y[..., t], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(carry, state)


def test_causal_conv_float16_rounds_once() -> None:
    """float16 taps are summed in float32 and rounded once, as the reference's matmul does."""
    x, w = rand(2, 6, 16, dtype=np.float16), rand(6, 1, 4, dtype=np.float16)
    inputs: list[np.ndarray | None] = [x, w, rand(6, dtype=np.float16), None]
    attrs = {"activation": "silu"}
    got = ours("CausalConvWithState", inputs, attrs, opset=27, num_outputs=2)
    want = reference_run("CausalConvWithState", inputs, attrs, opset=27, num_outputs=2)
    for g, e in zip(got, want, strict=True):
        assert g.dtype == np.float16
        np.testing.assert_array_equal(g, e)


def test_causal_conv_refusals() -> None:
    fn = lookup("CausalConvWithState", 27).fn
    x, w = rand(1, 2, 3), rand(2, 1, 2)
    with pytest.raises(ValueError, match="activation 'gelu' is not supported"):
        fn(x, w, activation="gelu")
    with pytest.raises(ValueError, match="dtype int32 is not supported"):
        fn(x.astype(np.int32), w.astype(np.int32))
    with pytest.raises(ValueError, match="past_state has shape"):
        fn(x, w, None, rand(1, 2, 3))


# --- SwiGLU --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("alpha", [1.0, 0.5, 1.702])
@pytest.mark.parametrize("shape", [(), (7,), (2, 3, 4), (0, 5)])
def test_swiglu_matches_reference(dtype: Any, alpha: float, shape: tuple[int, ...]) -> None:
    a, b = rand(*shape, dtype=dtype, scale=4), rand(*shape, dtype=dtype)
    got = ours("SwiGLU", [a, b], {"alpha": alpha}, opset=28)
    want = reference_run("SwiGLU", [a, b], {"alpha": alpha}, opset=28)
    tol = 2e-3 if dtype == np.float16 else 1e-6
    assert_matches(got, want, rtol=tol, atol=tol)


def test_swiglu_large_gates_do_not_overflow() -> None:
    a = np.array([-1000.0, -80.0, 0.0, 80.0, 1000.0], np.float32)
    (y,) = ours("SwiGLU", [a, np.ones_like(a)], {}, opset=28)
    np.testing.assert_allclose(y, [0, -80 / (1 + np.exp(80.0)), 0, 80, 1000], rtol=1e-6)


def test_swiglu_refusals() -> None:
    fn = lookup("SwiGLU", 28).fn
    with pytest.raises(ValueError, match="no broadcasting"):
        fn(rand(2, 3), rand(3))
    with pytest.raises(ValueError, match="dtype int64 is not supported"):
        fn(np.ones(3, np.int64), np.ones(3, np.int64))


# --- TensorScatter -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [1, 2, -2, -1])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int64, np.bool_])
def test_tensor_scatter_matches_onnxruntime(mode: str, axis: int, dtype: Any) -> None:
    shape = [3, 4, 6, 5]
    max_len = shape[axis]
    upd_shape = list(shape)
    upd_shape[axis] = 2
    past = (rand(*shape) * 10).astype(dtype)
    update = (rand(*upd_shape) * 10).astype(dtype)
    top = max_len + 3 if mode == "circular" else max_len - 1
    starts = RNG.integers(0, top, 3).astype(np.int64)
    check_op("TensorScatter", [past, update, starts], {"mode": mode, "axis": axis}, opset=24)


def test_tensor_scatter_without_indices_and_strings() -> None:
    past = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)[:, :, None]
    update = np.array([["x"], ["y"]], dtype=object)[:, :, None]
    (got,) = ours("TensorScatter", [past, update], {"axis": 1}, opset=24)
    assert got[:, :, 0].tolist() == [["x", "b", "c"], ["y", "e", "f"]]
    assert past[0, 0, 0] == "a"  # the cache itself is left alone


def test_tensor_scatter_circular_wraps() -> None:
    """Circular writes past the end continue at the start; negative starts count back."""
    past, update = rand(2, 4, 2), rand(2, 3, 2)
    starts = np.array([3, -1], np.int64)
    (got,) = ours(
        "TensorScatter", [past, update, starts], {"mode": "circular", "axis": 1}, opset=24
    )
    want = past.copy()
    for b, start in enumerate(starts):
        for s in range(3):
            want[b, (start + s) % 4] = update[b, s]
    np.testing.assert_array_equal(got, want)


def test_tensor_scatter_refusals() -> None:
    fn = lookup("TensorScatter", 24).fn
    past, update = rand(2, 4, 3), rand(2, 2, 3)
    with pytest.raises(ValueError, match="mode 'ring' is not supported"):
        fn(past, update, mode="ring")
    with pytest.raises(ValueError, match="axis 0 is not supported"):
        fn(past, update, axis=0)
    with pytest.raises(ValueError, match="do not fit"):
        fn(past, update, np.array([0, 3], np.int64))
    with pytest.raises(ValueError, match="does not fit"):
        fn(past, rand(2, 5, 3), mode="circular")


# --- FlexAttention -------------------------------------------------------------------------


@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (6, 1)])
@pytest.mark.parametrize("scale", [None, 0.3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("precision", [None, 1, 11])
def test_flex_attention_matches_reference(
    heads: tuple[int, int], scale: float | None, dtype: Any, precision: int | None
) -> None:
    hq, hkv = heads
    q, k = rand(2, hq, 5, 8, dtype=dtype), rand(2, hkv, 7, 8, dtype=dtype)
    v = rand(2, hkv, 7, 3, dtype=dtype)
    attrs: dict[str, Any] = {}
    if scale is not None:
        attrs["scale"] = scale
    if precision is not None:
        attrs["softmax_precision"] = precision
    got = ours("FlexAttention", [q, k, v], attrs, opset=1)
    want = reference_run("FlexAttention", [q, k, v], attrs, opset=1, domain="ai.onnx.preview")
    tol = 2e-3 if dtype == np.float16 else 1e-5
    assert_matches(got, want, rtol=tol, atol=tol)


def test_flex_attention_hooks_take_callables() -> None:
    """The subgraph hooks: a causal score_mod and a prob_mod, as callables."""
    q, k, v = rand(1, 2, 4, 8), rand(1, 2, 4, 8), rand(1, 2, 4, 8)
    seen: list[tuple[int, ...]] = []

    def causal(scores: np.ndarray) -> np.ndarray:
        seen.append(scores.shape)
        assert scores.dtype == np.float32
        return np.where(np.tri(4, dtype=bool), scores, -np.inf)

    y = flex_attention(q, k, v, score_mod=causal, prob_mod=lambda p: p * 2)
    assert seen == [(1, 2, 4, 4)]
    s = q @ k.swapaxes(-1, -2) / np.sqrt(8) + np.where(np.tri(4, dtype=bool), 0, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(y, 2 * p @ v, rtol=1e-5, atol=1e-6)
    (same,) = ours("FlexAttention", [q, k, v], {"score_mod": causal}, opset=1)
    np.testing.assert_allclose(same, flex_attention(q, k, v, score_mod=causal))


def test_flex_attention_fully_masked_row_is_zero() -> None:
    q, k, v = rand(1, 1, 2, 4), rand(1, 1, 3, 4), rand(1, 1, 3, 4)

    def mask_first_row(s: np.ndarray) -> np.ndarray:
        s = s.copy()
        s[..., 0, :] = -np.inf
        return s

    y = flex_attention(q, k, v, score_mod=mask_first_row)
    np.testing.assert_array_equal(y[..., 0, :], 0)
    assert np.isfinite(y).all()


def test_flex_attention_refusals() -> None:
    fn = lookup("FlexAttention", 1).fn
    q = rand(1, 2, 3, 4)
    with pytest.raises(ValueError, match="graph attribute score_mod is not supported"):
        fn(q, q, q, score_mod={"graph": "body"})
    with pytest.raises(ValueError, match="softmax_precision 7 is not supported"):
        fn(q, q, q, softmax_precision=7)
    with pytest.raises(ValueError, match="cannot share"):
        fn(rand(1, 3, 3, 4), q, q)
    with pytest.raises(ValueError, match="rank 4"):
        fn(q[0], q[0], q[0])
