"""Resize and Upsample against onnxruntime: every mode, coordinate transform and opset."""

from __future__ import annotations

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ort_run, ours, reference_run
from tests.executor.test_shape import i64, rand

TRANSFORMS = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
SCALES = [(1, 1, 2, 3), (1, 1, 0.5, 0.75), (1, 1, 1.7, 0.6), (1, 1, 1, 2.5)]
SIZES = [(2, 3, 7, 5), (2, 3, 3, 8), (2, 3, 1, 1), (2, 3, 6, 2)]  # ORT refuses size 0


def f32(*values: float) -> np.ndarray:
    return np.array(values, dtype=np.float32)


def unrounded_align_corners(shape: tuple, attrs: dict, scales: tuple | None) -> bool:
    """Whether align_corners meets scales whose output length n_in * scale is fractional.

    There the spec (and onnx's reference) divide by that unrounded length, onnxruntime by the
    floored output size; we follow the spec, so such cases compare with the reference.
    """
    if attrs.get("coordinate_transformation_mode") != "align_corners" or scales is None:
        return False
    lengths = np.float64(shape) * f32(*scales).astype(np.float64)  # exact products
    return bool(np.any(lengths != np.floor(lengths)))


def check_reference(inputs: list[np.ndarray | None], attrs: dict, opset: int) -> None:
    """Our Resize against onnx's ReferenceEvaluator: same shape and dtype, close values."""
    (want,) = reference_run("Resize", inputs, attrs, opset=opset)
    (got,) = ours("Resize", inputs, attrs, opset=opset)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def run(
    x: np.ndarray,
    attrs: dict,
    scales: tuple | None = None,
    sizes: tuple | None = None,
    roi: np.ndarray | None = None,
    opset: int = 13,
) -> None:
    inputs = [x, roi, None if scales is None else f32(*scales)]
    inputs += [None if sizes is None else i64(*sizes)]
    if unrounded_align_corners(x.shape, attrs, scales):
        check_reference(inputs, attrs, opset)
    else:
        check_op("Resize", inputs, attrs, opset=opset)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("nearest_mode", NEAREST)
@pytest.mark.parametrize("scales", SCALES)
def test_nearest_scales(transform: str, nearest_mode: str, scales: tuple) -> None:
    attrs = {"coordinate_transformation_mode": transform, "nearest_mode": nearest_mode}
    run(rand(2, 3, 6, 5), attrs, scales=scales)


@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("nearest_mode", NEAREST)
@pytest.mark.parametrize("sizes", SIZES)
def test_nearest_sizes(transform: str, nearest_mode: str, sizes: tuple) -> None:
    attrs = {"coordinate_transformation_mode": transform, "nearest_mode": nearest_mode}
    run(rand(2, 3, 4, 6), attrs, sizes=sizes)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("transform", [*TRANSFORMS, "half_pixel_symmetric"])
@pytest.mark.parametrize("scales", SCALES)
def test_linear_and_cubic_scales(mode: str, transform: str, scales: tuple) -> None:
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    run(rand(2, 3, 6, 5), attrs, scales=scales, opset=19)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("transform", TRANSFORMS)
@pytest.mark.parametrize("sizes", SIZES)
def test_linear_and_cubic_sizes(mode: str, transform: str, sizes: tuple) -> None:
    attrs = {"mode": mode, "coordinate_transformation_mode": transform}
    run(rand(2, 3, 4, 6), attrs, sizes=sizes)


@pytest.mark.parametrize("exclude", [0, 1])
@pytest.mark.parametrize("a", [-0.75, -0.5])
def test_cubic_coefficients(exclude: int, a: float) -> None:
    attrs = {"mode": "cubic", "cubic_coeff_a": a, "exclude_outside": exclude}
    run(rand(1, 2, 5, 7), attrs, scales=(1, 1, 2.2, 0.7))


@pytest.mark.parametrize(
    ("shape", "sizes"),
    [((1, 2, 3, 4, 5), (1, 2, 5, 3, 7)), ((3, 4, 5), (5, 2, 8)), ((4, 5), (7, 3))],
)
def test_n_linear(shape: tuple, sizes: tuple) -> None:
    """Trilinear, and linear over every axis of 3-D and 2-D inputs (what onnxruntime accepts)."""
    run(rand(*shape), {"mode": "linear"}, sizes=sizes)


@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
@pytest.mark.parametrize("scales", [(1, 1, 1.8, 2.5), (1, 1, 0.6, 0.5)])
def test_tf_crop_and_resize(mode: str, scales: tuple) -> None:
    attrs = {
        "mode": mode,
        "coordinate_transformation_mode": "tf_crop_and_resize",
        "extrapolation_value": -3.0,
    }
    roi = f32(0, 0, 0.2, -0.1, 1, 1, 0.9, 1.3)
    run(rand(1, 2, 6, 7), attrs, sizes=(1, 2, 5, 8), roi=roi)
    run(rand(1, 2, 6, 7), attrs, scales=scales, roi=roi)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.uint8])
def test_nearest_dtypes(dtype: type) -> None:
    x = np.asarray(rand(1, 2, 4, 5) * 40, dtype=dtype)
    run(x, {}, scales=(1, 1, 1.5, 0.8))


@pytest.mark.parametrize("dtype", [np.int32, np.int8, np.uint8])
@pytest.mark.parametrize("mode", ["linear", "cubic"])
def test_interpolated_integers_round(dtype: type, mode: str) -> None:
    """Integers are interpolated in float and rounded with saturation, as ONNX's reference does.

    onnxruntime truncates towards zero instead (a C cast); the spec's reference implementation
    (``onnx.reference`` Resize, ``saturate_cast``) rounds to nearest, and we follow the spec.
    """
    x = np.asarray(rand(1, 2, 4, 5) * 60, dtype=dtype)
    inputs = [x, None, f32(1, 1, 1.5, 0.8)]
    (as_float,) = ort_run("Resize", [x.astype(np.float32), *inputs[1:]], {"mode": mode}, opset=13)
    info = np.iinfo(dtype)
    expected = np.clip(np.rint(as_float), info.min, info.max).astype(dtype)
    (got,) = ours("Resize", inputs, {"mode": mode}, opset=13)
    np.testing.assert_array_equal(got, expected)


def test_float64_linear_matches_float32() -> None:
    """onnxruntime's CPU Resize has no double kernel; ours works in float64 throughout."""
    x = rand(1, 2, 4, 5, dtype=np.float64)
    inputs = [None, f32(1, 1, 1.5, 0.8)]
    (got,) = ours("Resize", [x, *inputs], {"mode": "linear"}, opset=13)
    (ref,) = ort_run("Resize", [x.astype(np.float32), *inputs], {"mode": "linear"}, opset=13)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("policy", ["stretch", "not_larger", "not_smaller"])
@pytest.mark.parametrize("mode", ["nearest", "linear"])
def test_opset18_axes_and_aspect_policy(policy: str, mode: str) -> None:
    x, sizes = rand(1, 2, 4, 6), i64(7, 9)
    attrs = {"axes": [2, 3], "keep_aspect_ratio_policy": policy, "mode": mode}
    (y,) = check_op("Resize", [x, None, None, sizes], attrs, opset=18)
    # onnxruntime 1.2x ignores a negative axis under not_larger/not_smaller; ONNX allows it
    (negative,) = ours("Resize", [x, None, None, sizes], {**attrs, "axes": [2, -1]}, opset=18)
    np.testing.assert_array_equal(negative, y)
    check_op("Resize", [x, None, f32(1.5)], {"axes": [-1], "mode": mode}, opset=18)


def test_empty_tensor_and_identity() -> None:
    run(rand(0, 2, 4, 4), {"mode": "linear"}, scales=(1, 1, 2, 2))
    x = rand(1, 1, 3, 3)
    (y,) = ours("Resize", [x, None, f32(1, 1, 1, 1)], {"mode": "cubic"}, opset=13)
    np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("mode", ["nearest", "linear"])
@pytest.mark.parametrize("scales", [(1, 1, 2, 3), (1, 1, 0.5, 0.6), (1, 1, 1.5, 2.5)])
def test_resize_10_and_upsample(mode: str, scales: tuple) -> None:
    x = rand(1, 2, 4, 5)
    check_op("Resize", [x, f32(*scales)], {"mode": mode}, opset=10)
    if min(scales) >= 1:  # Upsample refuses scales below 1
        check_op("Upsample", [x, f32(*scales)], {"mode": mode}, opset=9)
        attrs = {"mode": mode, "scales": [float(s) for s in scales]}
        check_op("Upsample", [x], attrs, opset=7)


def test_align_corners_divides_by_the_unrounded_length() -> None:
    """4 columns scaled by 0.6: 2 outputs, but the spec's length is 2.4, so the second output
    samples x = 1 * 3 / 1.4 (onnxruntime: x = 3, the last column)."""
    x = np.arange(8, dtype=np.float32).reshape(1, 1, 2, 4)
    attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners"}
    (y,) = ours("Resize", [x, None, f32(1, 1, 0.6, 0.6)], attrs, opset=13)
    np.testing.assert_allclose(y, [[[[0.0, 3 / 1.4]]]], rtol=1e-6)
    (by_sizes,) = ours("Resize", [x, None, None, i64(1, 1, 1, 2)], attrs, opset=13)
    np.testing.assert_allclose(by_sizes, [[[[0.0, 3.0]]]])  # sizes: the length is the size


@pytest.mark.parametrize("policy", ["not_larger", "not_smaller"])
@pytest.mark.parametrize("mode", ["nearest", "linear", "cubic"])
def test_align_corners_with_aspect_policy(policy: str, mode: str) -> None:
    """The kept aspect ratio times the input size is fractional too (3 * 5/7 = 2.14 -> 2)."""
    attrs = {"mode": mode, "coordinate_transformation_mode": "align_corners"}
    attrs |= {"keep_aspect_ratio_policy": policy}
    check_reference([rand(1, 2, 3, 7), None, None, i64(1, 2, 5, 5)], attrs, opset=18)


def test_antialias_long_axis_takes_the_gather() -> None:
    """A 1-D signal: the dense weight matrix would outgrow the gathered copy."""
    attrs = {"mode": "cubic", "antialias": 1}
    check_reference([rand(3000), None, f32(0.1)], attrs, opset=18)
    check_reference([rand(2, 3000), None, f32(1, 0.1)], attrs, opset=18)


ANTIALIAS_SCALES = [(1, 1, 0.5, 0.5), (1, 1, 0.3, 0.7), (1, 1, 0.8, 0.25), (1, 1, 1.6, 0.45)]


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("scales", ANTIALIAS_SCALES)
@pytest.mark.parametrize("transform", [*TRANSFORMS, "half_pixel_symmetric"])
def test_antialias_scales(mode: str, scales: tuple, transform: str) -> None:
    """onnxruntime's antialias windows differ from the spec's reference; we follow the latter.

    The shape keeps half_pixel_symmetric's coordinates off 1e-16 of an integer: there the
    reference picks its taps from x + 2 (rounded) and its weights from x, which disagree:
    x = 1 + 2e-16 gets the taps of x = 1 and the weights of x just above 1.
    """
    attrs = {"mode": mode, "antialias": 1, "coordinate_transformation_mode": transform}
    check_reference([rand(2, 3, 14, 12), None, f32(*scales)], attrs, opset=19)


@pytest.mark.parametrize("mode", ["linear", "cubic"])
@pytest.mark.parametrize("sizes", [(2, 3, 4, 3), (2, 3, 1, 1), (2, 3, 9, 2), (2, 3, 20, 5)])
@pytest.mark.parametrize("exclude", [0, 1])
def test_antialias_sizes(mode: str, sizes: tuple, exclude: int) -> None:
    attrs = {"mode": mode, "antialias": 1, "exclude_outside": exclude, "cubic_coeff_a": -0.5}
    check_reference([rand(2, 3, 10, 12), None, None, i64(*sizes)], attrs, opset=18)


def test_antialias_axes_and_integers() -> None:
    attrs = {"mode": "linear", "antialias": 1, "axes": [3, 1]}  # the reference: no negatives
    check_reference([rand(2, 9, 3, 14), None, f32(0.3, 0.5)], attrs, opset=18)
    x = np.asarray(rand(1, 1, 9, 9) * 50, dtype=np.int16)
    check_reference([x, None, f32(1, 1, 0.4, 0.4)], {"mode": "cubic", "antialias": 1}, 18)


def test_antialias_keeps_the_mean_of_a_constant() -> None:
    """The stretched weights sum to 1: a flat image stays flat, edges included."""
    x = np.full((1, 1, 50, 40), 3.0, np.float32)
    for mode in ("linear", "cubic"):
        (y,) = ours(
            "Resize", [x, None, f32(1, 1, 0.13, 0.2)], {"mode": mode, "antialias": 1}, opset=19
        )
        assert y.shape == (1, 1, 6, 8)
        np.testing.assert_allclose(y, 3.0, rtol=1e-6)


def test_antialias_growing_and_nearest_are_unchanged() -> None:
    """antialias only widens linear and cubic kernels on shrinking axes."""
    x = rand(1, 2, 5, 6)
    for mode in ("nearest", "linear", "cubic"):
        inputs = [x, None, f32(1, 1, 1.5, 2.0)]
        (plain,) = ours("Resize", inputs, {"mode": mode}, opset=18)
        (anti,) = ours("Resize", inputs, {"mode": mode, "antialias": 1}, opset=18)
        np.testing.assert_allclose(anti, plain, rtol=1e-6)
    inputs = [x, None, f32(1, 1, 0.5, 0.5)]
    (plain,) = ours("Resize", inputs, {}, opset=18)
    (anti,) = ours("Resize", inputs, {"antialias": 1}, opset=18)
    np.testing.assert_array_equal(anti, plain)
