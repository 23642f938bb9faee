"""Shape and layout kernels against onnxruntime: old and new opsets, negative axes, empty dims."""

from __future__ import annotations

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours, reference_run

RNG = np.random.default_rng(0)
DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_]


def rand(*shape: int, dtype: type = np.float32) -> np.ndarray:
    if np.dtype(dtype) == np.bool_:
        return np.asarray(RNG.random(shape) > 0.5)
    if np.dtype(dtype).kind in "iu":
        return np.asarray(RNG.integers(-9, 10, shape), dtype=dtype)
    return np.asarray(RNG.standard_normal(shape), dtype=dtype)


def i64(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.int64)


@pytest.mark.parametrize(
    ("attrs", "opset"),
    [({}, 13), ({}, 15), ({"start": 1}, 15), ({"start": -2, "end": -1}, 15), ({"end": 9}, 15)],
)
def test_shape(attrs: dict, opset: int) -> None:
    check_op("Shape", [rand(2, 0, 4)], attrs, opset=opset)


@pytest.mark.parametrize("dtype", DTYPES)
def test_size(dtype: type) -> None:
    check_op("Size", [rand(2, 3, 4, dtype=dtype)])


@pytest.mark.parametrize(
    ("src", "target", "allowzero"),
    [
        ((2, 3, 4), (4, -1), 0),
        ((2, 3, 4), (0, -1), 0),
        ((2, 3, 4), (0, 0, 2, 2), 0),
        ((2, 0, 4), (0, 4, -1), 0),
        ((2, 0, 4), (0, 8), 1),
        ((6,), (-1, 1, 2), 0),
    ],
)
def test_reshape(src: tuple, target: tuple, allowzero: int) -> None:
    x = rand(*src)
    (y,) = check_op("Reshape", [x, i64(*target)], {"allowzero": allowzero}, opset=14)
    assert y.size == 0 or np.shares_memory(x, y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_dtypes_and_opset5(dtype: type) -> None:
    check_op("Reshape", [rand(2, 3, 4, dtype=dtype), i64(4, 0, -1)], opset=5)


def test_reshape_opset1_attribute() -> None:
    x = rand(2, 3, 4)
    (y,) = ours("Reshape", [x], {"shape": [0, -1]}, opset=1)
    assert y.shape == (2, 12) and np.shares_memory(x, y)


@pytest.mark.parametrize(("axis", "opset"), [(0, 9), (1, 9), (3, 9), (-1, 13), (-3, 13)])
def test_flatten(axis: int, opset: int) -> None:
    check_op("Flatten", [rand(2, 3, 0, 5)], {"axis": axis}, opset=opset)
    check_op("Flatten", [rand(2, 3, 4, 5, dtype=np.int64)], {"axis": axis}, opset=opset)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("perm", [None, [0, 2, 1, 3], [3, 1, 0, 2]])
def test_transpose(dtype: type, perm: list[int] | None) -> None:
    x = rand(2, 3, 1, 4, dtype=dtype)
    (y,) = check_op("Transpose", [x], {} if perm is None else {"perm": perm})
    assert np.shares_memory(x, y)


@pytest.mark.parametrize(
    ("shape", "axes"), [((1, 3, 1, 2), [0, -2]), ((1, 3, 1), None), ((0, 1), [1])]
)
def test_squeeze(shape: tuple, axes: list[int] | None) -> None:
    x = rand(*shape)
    check_op("Squeeze", [x], {} if axes is None else {"axes": axes}, opset=11)
    check_op("Squeeze", [x] if axes is None else [x, i64(*axes)], opset=13)


@pytest.mark.parametrize("dtype", DTYPES)
def test_squeeze_returns_a_view(dtype: type) -> None:
    x = rand(1, 3, 1, dtype=dtype)
    (y,) = check_op("Squeeze", [x, i64(-1)], opset=17)
    assert np.shares_memory(x, y)


@pytest.mark.parametrize(("shape", "axes"), [((3, 2), [0, -1]), ((3,), [1, 0, 3]), ((0, 2), [2])])
def test_unsqueeze(shape: tuple, axes: list[int]) -> None:
    x = rand(*shape, dtype=np.int64)
    check_op("Unsqueeze", [x], {"axes": axes}, opset=11)
    check_op("Unsqueeze", [x, i64(*axes)], opset=13)


def test_squeeze_refuses_a_wide_axis() -> None:
    with pytest.raises(ValueError, match="size is not 1"):
        ours("Squeeze", [rand(2, 3), i64(0)], opset=13)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("shape", "target"),
    [((3, 1), (2, 1, 4)), ((1,), (2, 3)), ((2, 3), (1, 1)), ((4, 1), (4, 0))],
)
def test_expand(dtype: type, shape: tuple, target: tuple) -> None:
    check_op("Expand", [rand(*shape, dtype=dtype), i64(*target)], opset=13)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reps", [(1, 1, 1), (2, 1, 3), (0, 2, 1)])
def test_tile(dtype: type, reps: tuple) -> None:
    check_op("Tile", [rand(2, 3, 2, dtype=dtype), i64(*reps)], opset=13)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(dtype: type, axis: int) -> None:
    shapes = [[2, 3, 4], [2, 3, 4], [2, 3, 4]]
    for s, n in zip(shapes, (1, 0, 2), strict=True):
        s[axis] = n
    check_op("Concat", [rand(*s, dtype=dtype) for s in shapes], {"axis": axis}, opset=13)


def test_concat_opset1_defaults_to_axis_1() -> None:
    a, b = rand(2, 3), rand(2, 1)
    (y,) = ours("Concat", [a, b], opset=1)
    np.testing.assert_array_equal(y, np.concatenate([a, b], axis=1))


@pytest.mark.parametrize(
    ("inputs", "attrs", "n", "opset"),
    [
        ([], {"axis": 1}, 3, 11),
        ([], {"axis": -1, "split": [1, 4, 1]}, 3, 11),
        ([i64(2, 0, 4)], {"axis": -1}, 3, 13),
        ([], {"axis": 1}, 2, 13),
        ([], {"axis": 0, "num_outputs": 3}, 3, 18),
        ([], {"axis": -1, "num_outputs": 4}, 4, 18),
        ([i64(5, 1)], {"axis": 2}, 2, 18),
    ],
)
def test_split(inputs: list, attrs: dict, n: int, opset: int) -> None:
    x = rand(8, 6, 6)
    check_op("Split", [x, *inputs], attrs, opset=opset, num_outputs=n)


def test_split_opset1_takes_sizes_as_input_and_gives_views() -> None:
    x = rand(2, 5)
    a, b = ours("Split", [x, i64(2, 3)], {"axis": 1}, opset=1, num_outputs=2)
    assert a.shape == (2, 2) and b.shape == (2, 3) and np.shares_memory(x, b)


PADS = [
    ([1, 0, 2, 0], "constant"),
    ([1, 2, 0, 1], "reflect"),
    ([2, 1, 1, 2], "edge"),
    ([-1, 1, 0, -2], "constant"),
    ([0, -1, 1, 0], "edge"),
]


@pytest.mark.parametrize(("pads", "mode"), PADS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_pad(pads: list[int], mode: str, dtype: type) -> None:
    x = rand(3, 4, dtype=dtype)
    value = np.array(7, dtype=dtype)
    check_op("Pad", [x, i64(*pads), value], {"mode": mode}, opset=13)
    if x.dtype.kind == "f":  # Pad-2 is defined for floats only
        check_op("Pad", [x], {"mode": mode, "pads": pads, "value": 7.0}, opset=10)


@pytest.mark.parametrize(("pads", "mode"), [([2, 1, 3, 2], "wrap"), ([1, 1], "reflect")])
def test_pad_opset19_axes_and_wrap(pads: list[int], mode: str) -> None:
    x = rand(2, 3, 4)
    axes = i64(0, -1) if len(pads) == 4 else i64(1)
    check_op("Pad", [x, i64(*pads), None, axes], {"mode": mode}, opset=19)


def test_pad_empty_axis_and_bool() -> None:
    check_op("Pad", [rand(0, 3), i64(1, 0, 1, 2)], opset=18)
    check_op("Pad", [rand(2, 3, dtype=np.bool_), i64(1, 0, 1, 2)], opset=18)


def test_pad_opset1_paddings() -> None:
    (y,) = ours(
        "Pad", [np.ones((1, 1), np.float32)], {"paddings": [1, 0, 0, 1], "value": 5.0}, opset=1
    )
    np.testing.assert_array_equal(y, [[5, 5], [1, 5]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("mode", "opset"), [("DCR", 1), ("DCR", 13), ("CRD", 13)])
def test_depth_to_space(dtype: type, mode: str, opset: int) -> None:
    attrs = {"blocksize": 2} if opset == 1 else {"blocksize": 2, "mode": mode}
    check_op("DepthToSpace", [rand(2, 8, 3, 2, dtype=dtype)], attrs, opset=opset)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_space_to_depth(dtype: type) -> None:
    check_op("SpaceToDepth", [rand(2, 3, 4, 6, dtype=dtype)], {"blocksize": 2}, opset=13)
    check_op("SpaceToDepth", [rand(1, 2, 3, 3, dtype=dtype)], {"blocksize": 3}, opset=1)


def test_split_opset13_uneven_without_sizes() -> None:
    """Opset 13 wants an even split; the opset 18 rule (a smaller last part) is what we do."""
    a, b, c = ours("Split", [rand(2, 7)], {"axis": 1}, opset=13, num_outputs=3)
    assert (a.shape[1], b.shape[1], c.shape[1]) == (3, 3, 1)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize(("shape", "b"), [((2, 3, 4, 6), 2), ((1, 2, 6, 3), 3), ((1, 1, 2, 2), 1)])
def test_space_to_depth_28_modes(mode: str, shape: tuple[int, ...], b: int) -> None:
    """Opset 28's mode against onnx's reference (onnxruntime stops before opset 28), and each
    mode undone by DepthToSpace of the same mode."""
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    attrs = {"blocksize": b, "mode": mode}
    (got,) = ours("SpaceToDepth", [x], attrs, opset=28)
    (want,) = reference_run("SpaceToDepth", [x], attrs, opset=28)
    np.testing.assert_array_equal(got, want)
    (back,) = ours("DepthToSpace", [got], attrs, opset=13)
    np.testing.assert_array_equal(back, x)


def test_space_to_depth_unknown_mode_is_refused() -> None:
    x = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(ValueError, match="mode 'RDC' is not supported"):
        ours("SpaceToDepth", [x], {"blocksize": 2, "mode": "RDC"}, opset=28)
