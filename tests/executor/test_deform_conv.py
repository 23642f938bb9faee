"""DeformConv against onnxruntime (2-D), against Conv (zero offsets, any rank) and against a
point-by-point multilinear sampler (1-D and 3-D, which onnxruntime does not run)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.executor.ort_reference import check_op, ours
from xocview.executor.registry import lookup

RNG = np.random.default_rng(19)


def rand(*shape: int, dtype: Any = np.float32, scale: float = 1.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def out_shape(
    spatial: tuple[int, ...], kernel: tuple[int, ...], attrs: dict[str, Any]
) -> tuple[int, ...]:
    rank = len(spatial)
    st_ = attrs.get("strides", [1] * rank)
    dl = attrs.get("dilations", [1] * rank)
    pd = attrs.get("pads", [0] * 2 * rank)
    return tuple(
        (n + pd[i] + pd[i + rank] - (kernel[i] - 1) * dl[i] - 1) // st_[i] + 1
        for i, n in enumerate(spatial)
    )


def deform_inputs(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    attrs: dict[str, Any],
    *,
    offset_scale: float = 1.5,
    bias: bool = False,
    mask: bool = False,
    dtype: Any = np.float32,
) -> list[np.ndarray | None]:
    rank = len(x_shape) - 2
    groups = attrs.get("offset_group", 1)
    taps = math.prod(w_shape[2:])
    out = out_shape(x_shape[2:], w_shape[2:], attrs)
    n = x_shape[0]
    return [
        rand(*x_shape, dtype=dtype),
        rand(*w_shape, dtype=dtype),
        rand(n, groups * taps * rank, *out, dtype=dtype, scale=offset_scale),
        rand(w_shape[0], dtype=dtype) if bias else None,
        RNG.random((n, groups * taps, *out)).astype(dtype) if mask else None,
    ]


def naive(
    x: np.ndarray,
    w: np.ndarray,
    offset: np.ndarray,
    b: np.ndarray | None,
    mask: np.ndarray | None,
    attrs: dict[str, Any],
) -> np.ndarray:
    """DeformConv one output element and one tap at a time, in float64."""
    rank = x.ndim - 2
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    kshape = w.shape[2:]
    group, og = attrs.get("group", 1), attrs.get("offset_group", 1)
    st_ = attrs.get("strides", [1] * rank)
    dl = attrs.get("dilations", [1] * rank)
    pd = attrs.get("pads", [0] * 2 * rank)
    out = offset.shape[2:]
    taps = list(np.ndindex(*kshape))
    off = offset.reshape(n, og, len(taps), rank, *out)
    msk = None if mask is None else mask.reshape(n, og, len(taps), *out)
    y = np.zeros((n, m, *out))

    def sample(img: np.ndarray, p: list[float]) -> float:
        base = [math.floor(v) for v in p]
        total = 0.0
        for corner in itertools.product((0, 1), repeat=rank):
            at = [bb + cc for bb, cc in zip(base, corner, strict=True)]
            if all(0 <= a < s for a, s in zip(at, img.shape, strict=True)):
                weight = 1.0
                for v, bb, cc in zip(p, base, corner, strict=True):
                    weight *= (v - bb) if cc else 1 - (v - bb)
                total += weight * float(img[tuple(at)])
        return total

    for i, o, pos in itertools.product(range(n), range(m), np.ndindex(*out)):
        g = o // (m // group)
        acc = 0.0
        for ci in range(cg):
            ch = g * cg + ci
            og_i = ch // (c // og)
            for t, tap in enumerate(taps):
                p = [
                    -pd[d] + st_[d] * pos[d] + dl[d] * tap[d] + float(off[(i, og_i, t, d, *pos)])
                    for d in range(rank)
                ]
                weight = float(w[(o, ci, *tap)])
                if msk is not None:
                    weight *= float(msk[(i, og_i, t, *pos)])
                acc += weight * sample(x[i, ch].astype(np.float64), p)
        y[(i, o, *pos)] = acc + (0.0 if b is None else float(b[o]))
    return y


CASES_2D = [
    ((1, 1, 5, 5), (1, 1, 3, 3), {}),
    ((2, 3, 6, 7), (4, 3, 3, 2), {"pads": [1, 0, 1, 2]}),
    ((1, 4, 7, 6), (6, 2, 3, 2), {"group": 2, "offset_group": 2, "strides": [2, 1]}),
    ((2, 4, 8, 8), (4, 4, 2, 3), {"offset_group": 4, "dilations": [2, 1], "pads": [1, 1, 1, 1]}),
    ((1, 6, 5, 5), (6, 1, 3, 3), {"group": 6, "offset_group": 3, "strides": [2, 2]}),
    ((1, 2, 1, 6), (3, 2, 1, 3), {"pads": [0, 1, 0, 1]}),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "attrs"), CASES_2D)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("mask", [False, True])
def test_deform_conv_matches_onnxruntime(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    attrs: dict[str, Any],
    bias: bool,
    mask: bool,
) -> None:
    inputs = deform_inputs(x_shape, w_shape, attrs, bias=bias, mask=mask)
    check_op("DeformConv", inputs, attrs, opset=19, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_deform_conv_other_floats(dtype: Any) -> None:
    x_shape, w_shape, attrs = CASES_2D[2]
    inputs = deform_inputs(x_shape, w_shape, attrs, bias=True, mask=True, dtype=dtype)
    tol = 1e-2 if dtype == np.float16 else 1e-10
    check_op("DeformConv", inputs, attrs, opset=22, rtol=tol, atol=tol)


def test_deform_conv_large_offsets_sample_zero_outside() -> None:
    """Offsets that carry taps far outside the input sample zeros, corner by corner."""
    inputs = deform_inputs((1, 2, 4, 4), (2, 2, 2, 2), {}, offset_scale=6.0, mask=True)
    check_op("DeformConv", inputs, {}, opset=19)
    x, w, off, _, _ = inputs
    assert x is not None and w is not None and off is not None
    (far,) = ours("DeformConv", [x, w, np.full_like(off, 100.0)], {}, opset=19)
    np.testing.assert_array_equal(far, 0)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "attrs"),
    [
        ((2, 3, 9), (4, 3, 3), {"pads": [1, 2], "strides": [2]}),
        ((1, 4, 8), (4, 2, 2), {"group": 2, "offset_group": 2, "dilations": [3]}),
        ((1, 2, 4, 3, 5), (3, 2, 2, 2, 3), {"pads": [1, 0, 0, 0, 1, 1]}),
        ((1, 4, 3, 4, 4), (2, 2, 1, 2, 2), {"group": 2, "offset_group": 4, "strides": [1, 2, 1]}),
    ],
)
def test_deform_conv_1d_3d_match_point_sampler(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    inputs = deform_inputs(x_shape, w_shape, attrs, bias=True, mask=True)
    (got,) = ours("DeformConv", inputs, attrs, opset=19)
    np.testing.assert_allclose(got, naive(*inputs, attrs), rtol=1e-4, atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(
    rank=st.integers(1, 3),
    size=st.integers(1, 5),
    k=st.integers(1, 3),
    stride=st.integers(1, 2),
    dilation=st.integers(1, 2),
    pad=st.integers(0, 2),
    group=st.sampled_from([1, 2]),
    data=st.data(),
)
def test_deform_conv_zero_offsets_equal_conv(
    rank: int,
    size: int,
    k: int,
    stride: int,
    dilation: int,
    pad: int,
    group: int,
    data: st.DataObject,
) -> None:
    """With zero offsets and no mask every tap samples a grid point: plain Conv."""
    span = (k - 1) * dilation + 1
    if size + 2 * pad < span:
        return
    attrs = {
        "strides": [stride] * rank,
        "dilations": [dilation] * rank,
        "pads": [pad] * 2 * rank,
        "group": group,
    }
    og = data.draw(st.sampled_from([1, 2, 4]))
    x = rand(2, 4, *([size] * rank))
    w = rand(6, 4 // group, *([k] * rank))
    out = out_shape(x.shape[2:], w.shape[2:], attrs)
    offset = np.zeros((2, og * k**rank * rank, *out), np.float32)
    b = rand(6)
    (got,) = ours("DeformConv", [x, w, offset, b], {**attrs, "offset_group": og}, opset=19)
    (want,) = ours("Conv", [x, w, b], attrs, opset=11)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_deform_conv_empty_input_gives_bias() -> None:
    """An input with no pixels, padded to a positive output, samples only zeros."""
    x, w, b = np.zeros((1, 2, 0, 3), np.float32), rand(3, 2, 1, 1), rand(3)
    attrs = {"pads": [1, 0, 1, 0]}
    (y,) = ours("DeformConv", [x, w, np.zeros((1, 2, 2, 3), np.float32), b], attrs, opset=19)
    np.testing.assert_array_equal(y, np.broadcast_to(b[:, None, None], (1, 3, 2, 3)))


def test_deform_conv_refusals() -> None:
    fn = lookup("DeformConv", 19).fn
    x, w = rand(1, 4, 5, 5), rand(2, 4, 3, 3)
    off = rand(1, 18, 3, 3)
    with pytest.raises(ValueError, match="dtype int32 is not supported"):
        fn(x.astype(np.int32), w.astype(np.int32), off.astype(np.int32))
    with pytest.raises(ValueError, match="offset_group 0 is not supported"):
        fn(x, w, off, offset_group=0)
    with pytest.raises(ValueError, match="offset has shape"):
        fn(x, w, off, offset_group=2)
    with pytest.raises(ValueError, match="do not split"):
        fn(x, w, rand(1, 54, 3, 3), offset_group=3)
    with pytest.raises(ValueError, match="mask has shape"):
        fn(x, w, off, None, rand(1, 8, 3, 3))
    with pytest.raises(ValueError, match="kernel_shape"):
        fn(x, w, off, kernel_shape=[2, 2])
