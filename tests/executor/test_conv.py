"""Conv and ConvTranspose kernels against onnxruntime, over the attribute combinations."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours
from xocview.executor.ops import conv as conv_ops
from xocview.executor.ops import conv_depthwise, conv_winograd

RNG = np.random.default_rng(20240611)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


CONV_2D = [
    pytest.param({}, id="plain"),
    pytest.param({"pads": [1, 1, 1, 1]}, id="pad1"),
    pytest.param({"pads": [0, 2, 1, 0], "strides": [2, 1]}, id="asym-pads-stride"),
    pytest.param({"strides": [2, 3], "dilations": [2, 1]}, id="stride-dilation"),
    pytest.param({"auto_pad": "SAME_UPPER", "strides": [2, 2]}, id="same-upper"),
    pytest.param({"auto_pad": "SAME_LOWER", "strides": [2, 2]}, id="same-lower"),
    pytest.param({"auto_pad": "VALID", "strides": [3, 2]}, id="valid"),
    pytest.param({"kernel_shape": [3, 3], "pads": [2, 2, 2, 2]}, id="kernel-shape-attr"),
]


@pytest.mark.parametrize("attrs", CONV_2D)
@pytest.mark.parametrize("group", [1, 2])
@pytest.mark.parametrize("with_bias", [True, False])
def test_conv_2d(attrs: dict[str, Any], group: int, with_bias: bool) -> None:
    x, w = rand(2, 4, 11, 10), rand(6, 4 // group, 3, 3)
    b = rand(6) if with_bias else None
    check_op("Conv", [x, w, b], {**attrs, "group": group})


@pytest.mark.parametrize(
    ("auto_pad", "pads"), [("SAME_UPPER", [1, 2, 2, 2]), ("SAME_LOWER", [2, 2, 1, 2])]
)
def test_conv_same_with_dilations(auto_pad: str, pads: list[int]) -> None:
    """onnxruntime refuses SAME with dilations; the spec pads total (out-1)*s + span - in.

    Height 12, stride 2, span 5: total 3, the odd one at the end (UPPER) or start (LOWER);
    width 10, stride 1, span 5: total 4.
    """
    x, w = rand(1, 2, 12, 10), rand(3, 2, 3, 3)
    attrs = {"strides": [2, 1], "dilations": [2, 2]}
    (expected,) = check_op("Conv", [x, w, None], {**attrs, "pads": pads})
    (got,) = ours("Conv", [x, w, None], {**attrs, "auto_pad": auto_pad})
    np.testing.assert_allclose(got, expected, rtol=1e-6)


@pytest.mark.parametrize("attrs", CONV_2D)
@pytest.mark.parametrize("mult", [1, 2])
def test_conv_depthwise(attrs: dict[str, Any], mult: int) -> None:
    x, w, b = rand(2, 5, 12, 9), rand(5 * mult, 1, 3, 3), rand(5 * mult)
    check_op("Conv", [x, w, b], {**attrs, "group": 5})


@pytest.mark.parametrize("size", [(4, 4), (30, 5), (5, 40)])
@pytest.mark.parametrize("stride", [1, 2])
def test_conv_depthwise_layouts(size: tuple[int, int], stride: int) -> None:
    """Small images take the channels-innermost path, large ones the channels-outer one."""
    c = 40
    x, w = rand(1, c, *size), rand(c, 1, 3, 3)
    check_op("Conv", [x, w, None], {"group": c, "pads": [1, 1, 1, 1], "strides": [stride] * 2})


@pytest.mark.parametrize("strides", [[1, 1], [2, 2], [1, 3]])
@pytest.mark.parametrize("group", [1, 4])
def test_conv_pointwise(strides: list[int], group: int) -> None:
    x, w, b = rand(2, 8, 7, 9), rand(12, 8 // group, 1, 1), rand(12)
    check_op("Conv", [x, w, b], {"strides": strides, "group": group})


def test_conv_banded_im2col() -> None:
    """A large output is computed in bands of rows; the bands must tile it exactly."""
    x, w, b = rand(1, 16, 75, 61), rand(8, 16, 5, 3), rand(8)
    check_op("Conv", [x, w, b], {"pads": [2, 1, 2, 1], "strides": [1, 1]})


def method(x: np.ndarray, w: np.ndarray, attrs: dict[str, Any]) -> str:
    """The name of the method Conv picks for these operands and attributes."""
    run = conv_ops._prepare(
        x.shape,
        x.dtype,
        w.shape,
        w.dtype,
        int(attrs.get("group", 1)),
        attrs.get("auto_pad", "NOTSET"),
        *(conv_ops._attr(attrs.get(k)) for k in ("dilations", "kernel_shape", "pads", "strides")),
    )
    return run.__qualname__.split(".")[0]


@pytest.fixture
def small_bands(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Bands and channel blocks of a few kilobytes, so that small shapes take many of them."""
    conv_ops._prepare.cache_clear()
    monkeypatch.setattr(conv_ops, "_BAND_BYTES", 3000)
    monkeypatch.setattr(conv_ops, "_MIN_BAND_COLUMNS", 1)
    monkeypatch.setattr(conv_winograd, "_WINOGRAD_BAND_BYTES", 3000)
    monkeypatch.setattr(conv_depthwise, "_BLOCK_BYTES", 3000)
    yield
    conv_ops._prepare.cache_clear()


WINOGRAD = [
    pytest.param((1, 64, 12, 11), {"pads": [1, 1, 1, 1]}, id="pad1-odd-width"),
    pytest.param((2, 64, 9, 10), {"pads": [0, 2, 1, 0]}, id="asym-pads-batch"),
    pytest.param((1, 64, 13, 13), {"auto_pad": "SAME_UPPER"}, id="same-upper"),
    pytest.param((1, 64, 12, 14), {"auto_pad": "SAME_LOWER"}, id="same-lower"),
    pytest.param((1, 64, 16, 15), {"auto_pad": "VALID"}, id="valid"),
    pytest.param((1, 32, 30, 29), {"pads": [2, 0, 0, 3]}, id="32-channels-many-tiles"),
]


@pytest.mark.parametrize(("shape", "attrs"), WINOGRAD)
@pytest.mark.parametrize("banded", [False, True])
def test_conv_winograd(
    shape: tuple[int, ...], attrs: dict[str, Any], banded: bool, request: pytest.FixtureRequest
) -> None:
    """3x3, unit stride, channels enough: Winograd F(2x2, 3x3), odd and even output sizes."""
    if banded:
        request.getfixturevalue("small_bands")
    x, w, b = rand(*shape), rand(16, shape[1], 3, 3), rand(16)
    assert method(x, w, attrs) == "winograd"
    check_op("Conv", [x, w, b], attrs, atol=1e-4)


def test_conv_winograd_weights_follow_the_array() -> None:
    """Transformed weights are cached by identity: another array (even the same values with
    one changed, at a recycled address) gets its own."""
    x = rand(1, 64, 10, 10)
    for _ in range(3):
        w = rand(16, 64, 3, 3)
        check_op("Conv", [x, w, None], {"pads": [1, 1, 1, 1]}, atol=1e-4)
        w2 = w.copy()
        w2[3, 5, 1, 1] += 1.0
        check_op("Conv", [x, w2, None], {"pads": [1, 1, 1, 1]}, atol=1e-4)


def test_conv_winograd_cache_holds_weights_while_they_live(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An entry goes with its W; with the cache full, results are the same, uncached."""
    x, w = rand(1, 64, 10, 10), rand(16, 64, 3, 3)
    y = conv_ops.conv(x, w, pads=[1, 1, 1, 1])
    key = id(w)
    assert key in conv_winograd._WINOGRAD_CACHE
    del w
    assert key not in conv_winograd._WINOGRAD_CACHE
    monkeypatch.setattr(conv_winograd, "_WINOGRAD_CACHE_BYTES", 0)
    w2 = rand(16, 64, 3, 3)
    (expected,) = check_op("Conv", [x, w2, None], {"pads": [1, 1, 1, 1]}, atol=1e-4)
    assert id(w2) not in conv_winograd._WINOGRAD_CACHE
    assert y.shape == expected.shape


def test_conv_winograd_float64_stays_exact() -> None:
    """Winograd is for float32 only: float64 (ConvInteger's integers) keeps im2col's sums."""
    x = RNG.integers(-128, 128, (1, 64, 10, 10)).astype(np.float64)
    w = RNG.integers(-128, 128, (16, 64, 3, 3)).astype(np.float64)
    assert method(x, w, {"pads": [1, 1, 1, 1]}) != "winograd"
    (got,) = ours("Conv", [x, w, None], {"pads": [1, 1, 1, 1]})
    assert np.array_equal(got, np.rint(got))


WIDE = [
    pytest.param((2, 16, 9, 10), (4, 16, 3, 3), {"pads": [1, 1, 1, 1]}, id="pad1"),
    pytest.param((1, 16, 7, 7), (2, 16, 3, 3), {"dilations": [2, 1]}, id="dilated"),
    pytest.param((1, 32, 8, 9), (4, 16, 3, 2), {"group": 2, "pads": [0, 1, 2, 0]}, id="group"),
    pytest.param((2, 12, 17), (3, 12, 4), {"pads": [2, 1]}, id="1d"),
    pytest.param((1, 8, 5, 6, 4), (2, 8, 3, 2, 3), {"auto_pad": "SAME_UPPER"}, id="3d"),
    pytest.param((1, 16, 6, 6), (4, 16, 3, 3), {}, id="unpadded"),
]


@pytest.mark.parametrize(("xshape", "wshape", "attrs"), WIDE)
@pytest.mark.parametrize("banded", [False, True])
def test_conv_wide(
    xshape: tuple[int, ...],
    wshape: tuple[int, ...],
    attrs: dict[str, Any],
    banded: bool,
    request: pytest.FixtureRequest,
) -> None:
    """Unit stride, few filters: im2col over the flattened padded input, cropped."""
    if banded:
        request.getfixturevalue("small_bands")
    x, w, b = rand(*xshape), rand(*wshape), rand(wshape[0])
    assert method(x, w, attrs) == "_wide"
    check_op("Conv", [x, w, b], attrs)


@pytest.mark.parametrize("attrs", CONV_2D)
def test_conv_depthwise_blocks(attrs: dict[str, Any], small_bands: None) -> None:
    """Depthwise channels in blocks of a few: the blocks must tile the channels exactly."""
    x, w, b = rand(3, 7, 12, 9), rand(14, 1, 3, 3), rand(14)
    check_op("Conv", [x, w, b], {**attrs, "group": 7})


@pytest.mark.parametrize(
    ("xshape", "kernel", "attrs"),
    [
        ((2, 6, 19), (5,), {"strides": [2], "dilations": [3], "pads": [4, 1]}),
        ((1, 4, 6, 7, 5), (3, 2, 3), {"strides": [2, 1, 3], "pads": [1, 0, 1, 1, 1, 0]}),
    ],
)
def test_conv_depthwise_nd(
    xshape: tuple[int, ...], kernel: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    c = xshape[1]
    x, w = rand(*xshape), rand(c, 1, *kernel)
    check_op("Conv", [x, w, rand(c)], {**attrs, "group": c})


def test_conv_results_do_not_share_scratch() -> None:
    """Each method works in a scratch buffer kept between calls: a result must never be a
    view of it (a 1x1 depthwise output is contiguous where it lies, and must still be copied)."""
    calls: list[tuple[list[np.ndarray], dict[str, Any]]] = [
        ([rand(1, 3, 4, 4), rand(3, 1, 1, 1)], {"group": 3, "pads": [1, 1, 1, 1]}),
        ([rand(1, 64, 8, 8), rand(16, 64, 3, 3)], {"pads": [1, 1, 1, 1]}),
        ([rand(1, 16, 5, 5), rand(2, 16, 3, 3)], {"pads": [1, 1, 1, 1]}),
        ([rand(1, 4, 9, 9), rand(6, 4, 3, 3)], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ]
    first = [ours("Conv", [*inputs], attrs)[0] for inputs, attrs in calls]
    kept = [y.copy() for y in first]
    for inputs, attrs in calls[::-1]:
        ours("Conv", [inputs[0], inputs[1][::-1]], attrs)
    for y, k in zip(first, kept, strict=True):
        np.testing.assert_array_equal(y, k)


@pytest.mark.parametrize(
    "attrs",
    [{}, {"pads": [2, 1]}, {"strides": [3], "dilations": [2]}, {"auto_pad": "SAME_LOWER"}],
)
def test_conv_1d(attrs: dict[str, Any]) -> None:
    check_op("Conv", [rand(3, 4, 17), rand(5, 4, 4), rand(5)], attrs)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"pads": [1, 0, 1, 1, 1, 0], "strides": [2, 1, 2]},
        {"auto_pad": "SAME_UPPER", "group": 2},
        {"dilations": [1, 2, 1], "group": 4},
    ],
)
def test_conv_3d(attrs: dict[str, Any]) -> None:
    group = attrs.get("group", 1)
    x, w = rand(2, 4, 7, 8, 6), rand(4, 4 // group, 3, 2, 3)
    check_op("Conv", [x, w, rand(4)], attrs)


def _check_float64(op: str, inputs: list[np.ndarray | None], attrs: dict[str, Any]) -> None:
    """onnxruntime's CPU Conv and ConvTranspose are float32 only: compare against float32."""
    wide = [None if x is None else x.astype(np.float64) for x in inputs]
    (got,) = ours(op, wide, attrs)
    assert got.dtype == np.float64
    (expected,) = check_op(op, inputs, attrs)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_conv_float64() -> None:
    _check_float64("Conv", [rand(2, 3, 8, 8), rand(4, 3, 3, 3), rand(4)], {"pads": [1, 1, 1, 1]})


def test_conv_float64_depthwise() -> None:
    attrs = {"group": 3, "strides": [2, 2]}
    _check_float64("Conv", [rand(2, 3, 8, 8), rand(3, 1, 3, 3), None], attrs)


def test_conv_float16_matches_float32() -> None:
    """onnxruntime's CPU Conv has no float16 kernel; float16 must stay float16 and agree."""
    x, w = rand(1, 3, 6, 6), rand(4, 3, 3, 3)
    (y,) = ours("Conv", [x.astype(np.float16), w.astype(np.float16), None], {})
    (ref,) = ours("Conv", [x, w, None], {})
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, ref, rtol=1e-2, atol=3e-2)


def test_conv_empty_batch() -> None:
    check_op("Conv", [rand(0, 3, 6, 6), rand(4, 3, 3, 3), rand(4)], {"pads": [1, 1, 1, 1]})


def test_conv_opset_1() -> None:
    check_op("Conv", [rand(1, 2, 5, 5), rand(3, 2, 2, 2), None], {"strides": [2, 2]}, opset=7)


def test_conv_rejects_bad_group() -> None:
    with pytest.raises(ValueError, match="group"):
        ours("Conv", [rand(1, 4, 5, 5), rand(3, 3, 3, 3), None], {"group": 2})


CONV_T = [
    pytest.param({}, id="plain"),
    pytest.param({"strides": [2, 2]}, id="stride"),
    pytest.param({"strides": [2, 3], "pads": [1, 0, 0, 2]}, id="stride-pads"),
    pytest.param({"strides": [2, 2], "output_padding": [1, 0]}, id="output-padding"),
    pytest.param({"dilations": [2, 1], "pads": [1, 1, 1, 1]}, id="dilated"),
    pytest.param({"strides": [2, 2], "output_shape": [10, 11]}, id="output-shape-even"),
    pytest.param({"strides": [2, 2], "output_shape": [9, 12]}, id="output-shape-odd"),
    pytest.param({"strides": [2, 2], "auto_pad": "SAME_UPPER"}, id="same-upper"),
    pytest.param({"strides": [2, 2], "auto_pad": "SAME_LOWER"}, id="same-lower"),
    pytest.param({"strides": [3, 2], "auto_pad": "VALID"}, id="valid"),
]


@pytest.mark.parametrize("attrs", CONV_T)
@pytest.mark.parametrize("group", [1, 2])
def test_conv_transpose_2d(attrs: dict[str, Any], group: int) -> None:
    x, w, b = rand(2, 4, 5, 6), rand(4, 3, 3, 3), rand(3 * group)
    check_op("ConvTranspose", [x, w, b], {**attrs, "group": group})


def test_conv_transpose_output_shape_larger_than_full() -> None:
    """Negative implied pads: the extra border is zeros plus the bias."""
    x, w, b = rand(1, 2, 3, 3), rand(2, 2, 1, 1), rand(2)
    check_op("ConvTranspose", [x, w, b], {"strides": [2, 2], "output_shape": [6, 6]})


@pytest.mark.parametrize("attrs", [{}, {"strides": [3], "pads": [1, 2], "output_padding": [1]}])
def test_conv_transpose_1d(attrs: dict[str, Any]) -> None:
    check_op("ConvTranspose", [rand(2, 3, 7), rand(3, 2, 4), None], attrs)


def test_conv_transpose_3d() -> None:
    x, w = rand(1, 2, 3, 4, 3), rand(2, 3, 2, 3, 2)
    check_op("ConvTranspose", [x, w, rand(3)], {"strides": [2, 1, 2], "pads": [0, 1, 0, 1, 0, 1]})


def test_conv_transpose_float64() -> None:
    attrs = {"strides": [2, 2]}
    _check_float64("ConvTranspose", [rand(1, 2, 4, 4), rand(2, 3, 3, 3), None], attrs)


def test_conv_transpose_empty_batch() -> None:
    check_op("ConvTranspose", [rand(0, 2, 4, 4), rand(2, 3, 3, 3), None], {"strides": [2, 2]})
