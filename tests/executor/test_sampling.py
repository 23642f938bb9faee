"""Sampling and detection kernels (GridSample, AffineGrid, CenterCropPad, Col2Im,
NonMaxSuppression, RoiAlign, MaxUnpool) against onnxruntime, and against ONNX's reference
implementation where the two disagree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours, reference_run

RNG = np.random.default_rng(31)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


# --- GridSample ----------------------------------------------------------------------------------


def grid(n: int, *spatial: int, spread: float = 1.3) -> np.ndarray:
    """Normalised coordinates, some outside [-1, 1] to exercise the padding modes."""
    return RNG.uniform(-spread, spread, (n, *spatial, len(spatial))).astype(np.float32)


@pytest.mark.parametrize("mode", ["linear", "nearest", "cubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_4d_matches_the_onnx_reference(
    mode: str, padding_mode: str, align_corners: int
) -> None:
    x, g = rand(2, 3, 5, 6), grid(2, 4, 7)
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    (want,) = reference_run("GridSample", [x, g], attrs, opset=22)
    (got,) = ours("GridSample", [x, g], attrs, opset=22)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_matches_onnxruntime(mode: str, padding_mode: str, align_corners: int) -> None:
    x, g = rand(2, 3, 5, 6), grid(2, 4, 7)
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    check_op("GridSample", [x, g], attrs, opset=20)


@pytest.mark.parametrize("mode", ["linear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_grid_sample_5d_matches_the_onnx_reference(
    mode: str, padding_mode: str, align_corners: int
) -> None:
    x, g = rand(1, 2, 3, 4, 5), grid(1, 2, 3, 4)
    attrs = {"mode": mode, "padding_mode": padding_mode, "align_corners": align_corners}
    (want,) = reference_run("GridSample", [x, g], attrs, opset=22)
    (got,) = ours("GridSample", [x, g], attrs, opset=22)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("old", "new"), [("bilinear", "linear"), ("bicubic", "cubic")])
def test_grid_sample_16_names_the_modes_the_old_way(old: str, new: str) -> None:
    x, g = rand(1, 2, 4, 4), grid(1, 3, 3)
    (a,) = ours("GridSample", [x, g], {"mode": old}, opset=16)
    (b,) = ours("GridSample", [x, g], {"mode": new}, opset=20)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match=f"GridSample: mode {new!r} is not supported"):
        ours("GridSample", [x, g], {"mode": new}, opset=16)
    with pytest.raises(ValueError, match=f"GridSample: mode {old!r} is not supported"):
        ours("GridSample", [x, g], {"mode": old}, opset=20)


def test_grid_sample_16_refuses_5d_and_float16_stays_float16() -> None:
    x, g = rand(1, 1, 2, 3, 4), grid(1, 2, 2, 2)
    with pytest.raises(ValueError, match="GridSample: input of rank 5 is not supported"):
        ours("GridSample", [x, g], opset=16)
    (y,) = ours("GridSample", [x.astype(np.float16), g], opset=22)
    assert y.dtype == np.float16 and y.shape == (1, 1, 2, 2, 2)


def test_grid_sample_refuses_an_unknown_padding_mode() -> None:
    with pytest.raises(ValueError, match="GridSample: padding_mode 'wrap' is not supported"):
        ours("GridSample", [rand(1, 1, 2, 2), grid(1, 2, 2)], {"padding_mode": "wrap"}, opset=22)


# --- AffineGrid ----------------------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:divide by zero")  # the reference, for an axis of 1
@pytest.mark.parametrize("align_corners", [0, 1])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 4, 2), (1, 1, 1, 3)])
def test_affine_grid_matches_the_onnx_reference(align_corners: int, size: tuple[int, ...]) -> None:
    k = len(size) - 2
    theta = rand(size[0], k, k + 1)
    inputs = [theta, np.array(size, dtype=np.int64)]
    (want,) = reference_run("AffineGrid", inputs, {"align_corners": align_corners}, opset=20)
    (got,) = ours("AffineGrid", inputs, {"align_corners": align_corners}, opset=20)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_affine_grid_feeds_grid_sample_as_an_identity() -> None:
    x = rand(1, 2, 4, 5)
    theta = np.array([[[1, 0, 0], [0, 1, 0]]], dtype=np.float32)
    (g,) = ours("AffineGrid", [theta, np.array(x.shape, dtype=np.int64)], opset=20)
    (y,) = ours("GridSample", [x, g], opset=20)
    np.testing.assert_allclose(y, x, rtol=1e-5, atol=1e-6)


# --- CenterCropPad -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "target", "axes"),
    [
        ((5, 6, 3), (3, 8), [0, 1]),
        ((5, 6, 3), (4, 3, 3), None),
        ((3, 5, 6), (7, 2), [-2, -1]),
        ((2, 4), (2, 4), None),
    ],
)
def test_center_crop_pad_matches_onnxruntime(
    shape: tuple[int, ...], target: tuple[int, ...], axes: list[int] | None
) -> None:
    attrs = {} if axes is None else {"axes": axes}
    check_op("CenterCropPad", [rand(*shape), np.array(target, np.int64)], attrs, opset=18)


def test_center_crop_pad_refuses_a_shape_that_does_not_fit_the_axes() -> None:
    with pytest.raises(ValueError, match="CenterCropPad: shape has 1 values for 2 axes"):
        ours("CenterCropPad", [rand(3, 3), np.array([2], np.int64)], opset=18)


# --- Col2Im --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "block", "attrs"),
    [
        ((5, 5), (1, 5), {}),
        ((6, 7), (2, 3), {"strides": [2, 1]}),
        ((6, 7), (2, 2), {"dilations": [2, 3], "pads": [1, 0, 1, 2]}),
        ((3, 4, 5), (2, 2, 2), {"pads": [0, 1, 0, 1, 0, 1]}),
    ],
)
def test_col2im_matches_the_onnx_reference(
    image: tuple[int, ...], block: tuple[int, ...], attrs: dict[str, Any]
) -> None:
    k = len(image)
    dil = attrs.get("dilations", [1] * k)
    stride = attrs.get("strides", [1] * k)
    pads = attrs.get("pads", [0] * 2 * k)
    blocks = int(
        np.prod(
            [
                (image[i] + pads[i] + pads[k + i] - dil[i] * (block[i] - 1) - 1) // stride[i] + 1
                for i in range(k)
            ]
        )
    )
    x = rand(2, 3 * int(np.prod(block)), blocks)
    inputs = [x, np.array(image, np.int64), np.array(block, np.int64)]
    (want,) = reference_run("Col2Im", inputs, attrs, opset=18)
    (got,) = ours("Col2Im", inputs, attrs, opset=18)
    assert got.shape == want.shape == (2, 3, *image)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_col2im_refuses_a_block_count_that_does_not_fit() -> None:
    inputs = [rand(1, 4, 5), np.array([3, 3], np.int64), np.array([2, 2], np.int64)]
    with pytest.raises(ValueError, match="Col2Im: input has 5 blocks"):
        ours("Col2Im", inputs, opset=18)


# --- NonMaxSuppression ---------------------------------------------------------------------------


def nms_inputs(
    batches: int, classes: int, n: int, limit: int, iou: float, score: float | None
) -> list[np.ndarray | None]:
    corner = RNG.uniform(0, 10, (batches, n, 2))
    size = RNG.uniform(1, 5, (batches, n, 2))
    boxes = np.concatenate([corner, corner + size], axis=-1).astype(np.float32)
    scores = RNG.uniform(0, 1, (batches, classes, n)).astype(np.float32)
    return [
        boxes,
        scores,
        np.array([limit], np.int64),
        np.array([iou], np.float32),
        None if score is None else np.array([score], np.float32),
    ]


@pytest.mark.parametrize("center_point_box", [0, 1])
@pytest.mark.parametrize(
    ("limit", "iou", "score"), [(3, 0.5, None), (10, 0.2, 0.3), (0, 0.5, None), (20, 0.0, 0.9)]
)
def test_non_max_suppression_matches_onnxruntime(
    center_point_box: int, limit: int, iou: float, score: float | None
) -> None:
    inputs = nms_inputs(2, 3, 12, limit, iou, score)
    check_op("NonMaxSuppression", inputs, {"center_point_box": center_point_box}, opset=11)


def test_non_max_suppression_keeps_the_lower_index_of_equal_scores() -> None:
    boxes = np.tile(np.array([0, 0, 1, 1], np.float32), (1, 4, 1))
    scores = np.full((1, 1, 4), 0.5, np.float32)
    inputs = [boxes, scores, np.array([4], np.int64), np.array([0.5], np.float32)]
    (got,) = ours("NonMaxSuppression", inputs, opset=11)
    np.testing.assert_array_equal(got, [[0, 0, 0]])


# --- RoiAlign ------------------------------------------------------------------------------------


def roi_inputs() -> list[np.ndarray | None]:
    x = rand(2, 3, 10, 12)
    lo = RNG.uniform(-2, 8, (5, 2))
    rois = np.concatenate([lo, lo + RNG.uniform(0.5, 6, (5, 2))], axis=1).astype(np.float32)
    return [x, rois, np.array([0, 1, 1, 0, 1], np.int64)]


@pytest.mark.parametrize("mode", ["avg", "max"])
@pytest.mark.parametrize("transform", ["half_pixel", "output_half_pixel"])
@pytest.mark.parametrize("sampling_ratio", [0, 2])
@pytest.mark.parametrize("spatial_scale", [1.0, 0.5])
def test_roi_align_matches_onnxruntime(
    mode: str, transform: str, sampling_ratio: int, spatial_scale: float
) -> None:
    attrs = {
        "mode": mode,
        "coordinate_transformation_mode": transform,
        "output_height": 3,
        "output_width": 4,
        "sampling_ratio": sampling_ratio,
        "spatial_scale": spatial_scale,
    }
    check_op("RoiAlign", roi_inputs(), attrs, opset=16, atol=1e-4)


def test_roi_align_10_has_no_half_pixel_shift() -> None:
    inputs = roi_inputs()
    (old,) = ours("RoiAlign", inputs, {"output_height": 2}, opset=10)
    (new,) = ours(
        "RoiAlign",
        inputs,
        {"output_height": 2, "coordinate_transformation_mode": "output_half_pixel"},
        opset=16,
    )
    np.testing.assert_array_equal(old, new)


def test_roi_align_refuses_an_unknown_mode() -> None:
    with pytest.raises(ValueError, match="RoiAlign: mode 'sum' is not supported"):
        ours("RoiAlign", roi_inputs(), {"mode": "sum"}, opset=16)


# --- MaxUnpool -----------------------------------------------------------------------------------


def pooled(shape: tuple[int, ...], kernel: list[int], strides: list[int]) -> list[np.ndarray]:
    """MaxPool's values and flat indices for a random input of ``shape``."""
    attrs = {"kernel_shape": kernel, "strides": strides}
    return reference_run("MaxPool", [rand(*shape)], attrs, opset=12, num_outputs=2)


@pytest.mark.parametrize(
    ("shape", "kernel", "strides"),
    [
        ((2, 3, 4, 6), [2, 2], [2, 2]),
        ((1, 2, 6), [3], [3]),
        ((1, 1, 4, 4, 4), [2, 2, 2], [2, 2, 2]),
    ],
)
def test_max_unpool_matches_onnxruntime(
    shape: tuple[int, ...], kernel: list[int], strides: list[int]
) -> None:
    values, indices = pooled(shape, kernel, strides)
    check_op("MaxUnpool", [values, indices], {"kernel_shape": kernel, "strides": strides}, opset=11)


def test_max_unpool_puts_the_unpooled_tensor_at_the_start_of_output_shape() -> None:
    values, indices = pooled((1, 1, 4, 4), [2, 2], [2, 2])
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    (small,) = ours("MaxUnpool", [values, indices], attrs, opset=22)
    (big,) = ours("MaxUnpool", [values, indices, np.array([1, 1, 5, 5], np.int64)], attrs, opset=22)
    assert big.shape == (1, 1, 5, 5)
    np.testing.assert_array_equal(big[:, :, :4, :4], small)
    assert not big[:, :, 4].any() and not big[:, :, :, 4].any()
