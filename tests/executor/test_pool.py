"""Pooling kernels against onnxruntime: every padding mode, ceil mode, dilations, Indices."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours
from xocview.executor.ops.spatial import geometry

RNG = np.random.default_rng(7)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


WINDOWS_2D = [
    pytest.param({"kernel_shape": [3, 3]}, id="3x3"),
    pytest.param({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, id="3x3s2p1"),
    pytest.param({"kernel_shape": [2, 3], "strides": [2, 1], "pads": [0, 1, 1, 2]}, id="asym"),
    pytest.param({"kernel_shape": [2, 2], "strides": [2, 2]}, id="2x2s2"),
    pytest.param({"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, id="su"),
    pytest.param({"kernel_shape": [3, 2], "auto_pad": "SAME_LOWER", "strides": [2, 2]}, id="sl"),
    pytest.param({"kernel_shape": [3, 3], "auto_pad": "VALID", "strides": [2, 3]}, id="valid"),
    pytest.param({"kernel_shape": [1, 1], "strides": [2, 2]}, id="1x1s2"),
]
CEIL = [
    pytest.param({"ceil_mode": 1, "kernel_shape": [3, 3], "strides": [2, 2]}, id="ceil"),
    pytest.param(
        {"ceil_mode": 1, "kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        id="ceil-pads",
    ),
    pytest.param({"ceil_mode": 1, "kernel_shape": [2, 2], "strides": [3, 3]}, id="ceil-drop"),
    pytest.param({"dilations": [2, 2], "kernel_shape": [2, 3], "pads": [1, 1, 1, 1]}, id="dil"),
    pytest.param(
        {"ceil_mode": 1, "dilations": [2, 1], "kernel_shape": [2, 2], "strides": [2, 2]},
        id="ceil-dil",
    ),
]


@pytest.mark.parametrize("attrs", WINDOWS_2D + CEIL)
@pytest.mark.parametrize("num_outputs", [1, 2])
def test_max_pool_2d(attrs: dict[str, Any], num_outputs: int) -> None:
    check_op("MaxPool", [rand(2, 3, 10, 11)], attrs, opset=12, num_outputs=num_outputs)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 2, 5, 6, 7)])
def test_max_pool_indices_storage_order(storage_order: int, shape: tuple[int, ...]) -> None:
    attrs = {"kernel_shape": [2] * (len(shape) - 2), "strides": [2] * (len(shape) - 2)}
    check_op("MaxPool", [rand(*shape)], {**attrs, "storage_order": storage_order}, num_outputs=2)


@pytest.mark.parametrize("opset", [1, 7, 8, 10, 11])
def test_max_pool_old_opsets(opset: int) -> None:
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 0]}
    check_op("MaxPool", [rand(1, 2, 9, 8)], attrs, opset=opset)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int8, np.uint8])
def test_max_pool_dtypes(dtype: Any) -> None:
    x = (rand(2, 3, 8, 8) * 50).astype(dtype)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    check_op("MaxPool", [x], attrs, opset=12)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3], "strides": [2], "pads": [1, 1]},
        {"kernel_shape": [2], "dilations": [3], "ceil_mode": 1, "strides": [2]},
    ],
)
def test_max_pool_1d(attrs: dict[str, Any]) -> None:
    check_op("MaxPool", [rand(2, 3, 13)], attrs, num_outputs=2)


def test_max_pool_3d() -> None:
    attrs = {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "pads": [0, 1, 1, 1, 1, 0]}
    check_op("MaxPool", [rand(1, 2, 5, 7, 6)], attrs, num_outputs=2)


def test_max_pool_empty_batch() -> None:
    check_op("MaxPool", [rand(0, 3, 8, 8)], {"kernel_shape": [2, 2], "strides": [2, 2]})


@pytest.mark.parametrize("attrs", WINDOWS_2D + CEIL)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_2d(attrs: dict[str, Any], count_include_pad: int) -> None:
    attrs = {**attrs, "count_include_pad": count_include_pad}
    check_op("AveragePool", [rand(2, 3, 10, 11)], attrs, opset=19)


def test_average_pool_opset_1() -> None:
    """onnxruntime has no AveragePool-1; it means AveragePool-7 with count_include_pad 0."""
    x = rand(1, 2, 10, 9)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    (expected,) = check_op("AveragePool", [x], attrs, opset=7)
    (got,) = ours("AveragePool", [x], attrs, opset=1)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("opset", [7, 10, 11])
def test_average_pool_old_opsets(opset: int) -> None:
    attrs: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    if opset >= 7:
        attrs["count_include_pad"] = 1
    if opset >= 10:
        attrs["ceil_mode"] = 1
    check_op("AveragePool", [rand(1, 2, 10, 9)], attrs, opset=opset)


def test_average_pool_float16() -> None:
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    check_op("AveragePool", [rand(2, 3, 8, 8, dtype=np.float16)], attrs, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("op", ["AveragePool", "GlobalAveragePool"])
def test_average_pools_float64(op: str) -> None:
    """onnxruntime's CPU averages are float32 only: float64 must stay float64 and agree."""
    x = rand(2, 3, 8, 8)
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]} if op == "AveragePool" else {}
    (expected,) = check_op(op, [x], attrs)
    (got,) = ours(op, [x.astype(np.float64)], attrs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_1d_3d(count_include_pad: int) -> None:
    check_op(
        "AveragePool",
        [rand(2, 3, 12)],
        {"kernel_shape": [4], "strides": [3], "pads": [2, 1], "count_include_pad": 1},
    )
    attrs = {"kernel_shape": [2, 3, 3], "pads": [1, 1, 0, 0, 1, 1], "strides": [2, 2, 1]}
    check_op("AveragePool", [rand(1, 2, 5, 6, 7)], {**attrs, "count_include_pad": 1})


@pytest.mark.parametrize(
    ("opset", "attrs"),
    [
        (2, {"kernel_shape": [3, 3], "p": 2}),
        (11, {"kernel_shape": [2, 3], "p": 3, "strides": [2, 1], "pads": [1, 0, 1, 1]}),
        (18, {"kernel_shape": [3, 3], "p": 1, "strides": [2, 2], "ceil_mode": 1}),
        (18, {"kernel_shape": [2, 2], "p": 2, "dilations": [2, 2], "pads": [1, 0, 0, 1]}),
    ],
)
def test_lp_pool(opset: int, attrs: dict[str, Any]) -> None:
    check_op("LpPool", [rand(2, 3, 9, 8)], attrs, opset=opset)


def test_pool_same_with_dilations_follows_the_spec() -> None:
    """onnxruntime sizes SAME padding from the undilated kernel (9 -> 8 here); the spec keeps
    ceil(9 / 1) = 9 with total padding (9 - 1) * 1 + span 3 - 9 = 2, split 1 and 1."""
    x = rand(2, 3, 9, 9)
    attrs = {"kernel_shape": [2, 2], "p": 2, "dilations": [2, 2]}
    (expected,) = check_op("LpPool", [x], {**attrs, "pads": [1, 1, 1, 1]}, opset=18)
    (got,) = ours("LpPool", [x], {**attrs, "auto_pad": "SAME_UPPER"}, opset=18)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    (got,) = ours(
        "MaxPool", [x], {"kernel_shape": [2, 2], "dilations": [2, 2], "auto_pad": "SAME_LOWER"}
    )
    assert got.shape == (2, 3, 9, 9)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 5, 6), (1, 2, 3, 4, 5)])
def test_global_pools(op: str, shape: tuple[int, ...]) -> None:
    check_op(op, [rand(*shape)], {})


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p: int) -> None:
    check_op("GlobalLpPool", [rand(2, 3, 5, 6)], {"p": p})


def test_pool_result_is_not_the_input() -> None:
    """A 1x1 stride-1 pool must still return a fresh array the runtime may write into."""
    x = rand(1, 2, 3, 3)
    (y,) = ours("MaxPool", [x], {"kernel_shape": [1, 1]})
    assert not np.shares_memory(x, y)
    np.testing.assert_array_equal(x, y)


def test_pool_requires_kernel_shape() -> None:
    with pytest.raises(ValueError, match="kernel_shape"):
        ours("MaxPool", [rand(1, 2, 3, 3)], {})


# The Y-only pools sweep whole buffers, split an even last axis of stride 2 into its phases
# by a cast of item pairs, keep their work buffers between calls and accumulate in place from
# 2**18 items on: the cases below reach each of those paths.
EVEN_WINDOWS = [
    pytest.param({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]}, id="s2-end"),
    pytest.param({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, id="s2p1"),
    pytest.param({"kernel_shape": [2, 2], "strides": [2, 2]}, id="2x2s2"),
    pytest.param({"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, id="s1p1"),
    pytest.param({"kernel_shape": [1, 1], "strides": [2, 2]}, id="1x1s2"),
    pytest.param({"kernel_shape": [3, 2], "strides": [1, 2], "pads": [2, 0, 0, 1]}, id="asym"),
    pytest.param({"kernel_shape": [4, 4], "strides": [2, 2], "pads": [1, 2, 2, 1]}, id="4x4s2"),
    pytest.param({"kernel_shape": [3, 3], "strides": [3, 3], "pads": [1, 1, 1, 1]}, id="s3"),
    pytest.param({"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, id="ceil"),
    pytest.param(
        {"kernel_shape": [2, 3], "strides": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1]},
        id="dil",
    ),
    pytest.param({"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, id="su"),
]
EVEN_SHAPES = [(2, 3, 12, 14), (1, 4, 9, 12)]


@pytest.mark.parametrize("attrs", EVEN_WINDOWS)
@pytest.mark.parametrize("shape", EVEN_SHAPES, ids=str)
def test_max_pool_even_widths(attrs: dict[str, Any], shape: tuple[int, ...]) -> None:
    check_op("MaxPool", [rand(*shape)], attrs, opset=12)


@pytest.mark.parametrize("attrs", EVEN_WINDOWS)
@pytest.mark.parametrize("shape", EVEN_SHAPES, ids=str)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_even_widths(
    attrs: dict[str, Any], shape: tuple[int, ...], count_include_pad: int
) -> None:
    attrs = {**attrs, "count_include_pad": count_include_pad}
    check_op("AveragePool", [rand(*shape)], attrs, opset=19)


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]},
    ],
)
def test_pools_large(op: str, attrs: dict[str, Any]) -> None:
    """Over 2**18 items: the sweeps along H accumulate in place and redo their border rows."""
    check_op(op, [rand(1, 8, 184, 186)], attrs, opset=19 if op == "AveragePool" else 12)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int8, np.uint8])
@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]},
        {"kernel_shape": [2, 2], "strides": [2, 2]},
    ],
)
def test_max_pool_phases_of_every_width(dtype: Any, attrs: dict[str, Any]) -> None:
    """Items of 1, 2 and 4 bytes are split by a pair cast, 8 bytes by a copy."""
    x = (rand(2, 3, 10, 12) * 50).astype(dtype)
    check_op("MaxPool", [x], attrs, opset=12)


def test_max_pool_whole_window() -> None:
    """A window as large as the input is a reduction over the spatial axes."""
    attrs = {"kernel_shape": [7, 5]}
    check_op("MaxPool", [rand(2, 3, 7, 5)], attrs, opset=12)
    check_op("AveragePool", [rand(2, 3, 7, 5)], attrs, opset=19)
    x = rand(2, 3, 7, 5, dtype=np.float16)
    (got,) = check_op("AveragePool", [x], attrs, rtol=1e-3, atol=1e-3)
    assert got.dtype == np.float16


def test_pools_of_a_strided_input() -> None:
    x = rand(2, 3, 10, 24)[..., ::2]
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    check_op("MaxPool", [x], attrs, opset=12)
    check_op("AveragePool", [x], attrs, opset=19)


def test_pool_results_outlive_the_work_buffers() -> None:
    """Work buffers are kept per thread and reused: no result may live in them."""
    cases = [
        ("MaxPool", (2, 3, 10, 12), {"kernel_shape": [3, 3], "strides": [2, 2]}),
        ("MaxPool", (2, 3, 12), {"kernel_shape": [1], "strides": [2]}),
        ("AveragePool", (2, 3, 10, 12), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
        ("AveragePool", (1, 2, 9, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}),
        ("LpPool", (1, 2, 9, 8), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ]
    kept = []
    for op, shape, attrs in cases:
        x = rand(*shape)
        (y,) = ours(op, [x], attrs)
        assert not np.shares_memory(x, y)
        kept.append((y, y.copy()))
    for op, shape, attrs in cases * 2:
        ours(op, [rand(*shape)], attrs)
    for y, copy in kept:
        np.testing.assert_array_equal(y, copy)


def test_pools_in_threads() -> None:
    """Each thread has its own work buffers."""
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    xs = [rand(2, 8, 30, 32) for _ in range(6)]
    want = [ours(op, [x], attrs)[0] for x in xs for op in ("MaxPool", "AveragePool")]
    with ThreadPoolExecutor(4) as pool:
        runs = pool.map(
            lambda _: [ours(op, [x], attrs)[0] for x in xs for op in ("MaxPool", "AveragePool")],
            range(8),
        )
        for got in runs:
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)


def brute_pool(x: np.ndarray, attrs: dict[str, Any], op: str) -> np.ndarray:
    """The spec's pooling one window at a time: MaxPool, or AveragePool with its
    count_include_pad, over the windows geometry() resolves."""
    g = geometry(
        x.shape[2:],
        attrs["kernel_shape"],
        strides=attrs.get("strides"),
        dilations=attrs.get("dilations"),
        pads=attrs.get("pads"),
        auto_pad="NOTSET",
        ceil_mode=attrs.get("ceil_mode", 0),
    )
    y = np.empty(x.shape[:2] + g.out, np.float64)
    for out in np.ndindex(*g.out):
        starts = [o * s - b for o, s, b in zip(out, g.strides, g.begin, strict=True)]
        inside, counted = [], 0
        for tap in np.ndindex(*g.kernel):
            at = [st + t * d for st, t, d in zip(starts, tap, g.dilations, strict=True)]
            if all(0 <= p < n for p, n in zip(at, x.shape[2:], strict=True)):
                item = (Ellipsis, *at)
                inside.append(x[item].astype(np.float64))
            ends = [n + e - h for n, e, h in zip(x.shape[2:], g.end, g.overhang, strict=True)]
            counted += all(-b <= p < e for p, b, e in zip(at, g.begin, ends, strict=True))
        window = (Ellipsis, *out)
        if op == "MaxPool":
            y[window] = np.max(inside, axis=0) if inside else -np.inf
        else:
            total = np.sum(inside, axis=0) if inside else np.zeros(x.shape[:2])
            count = counted if attrs["count_include_pad"] else len(inside)
            with np.errstate(divide="ignore", invalid="ignore"):
                y[window] = total / count
    return y


def _random_windows(seed: int) -> tuple[tuple[int, ...], dict[str, Any]]:
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 4))
    shape = (2, 2, *(int(n) for n in rng.integers(1, 11, rank)))
    attrs = {
        "kernel_shape": [int(k) for k in rng.integers(1, 5, rank)],
        "strides": [int(s) for s in rng.integers(1, 4, rank)],
        "dilations": [int(d) for d in rng.integers(1, 3, rank)],
        "pads": [int(p) for p in rng.integers(0, 4, 2 * rank)],
        "ceil_mode": int(rng.integers(0, 2)),
        "count_include_pad": int(rng.integers(0, 2)),
    }
    return shape, attrs


NARROW = [  # kernels and pads wider than the axis: taps whose shifts leave the whole tensor
    ((1, 1, 2, 7), {"kernel_shape": [4, 1], "strides": [1, 2], "pads": [2, 0, 1, 0]}),
    ((1, 1, 3, 5), {"kernel_shape": [4, 4], "pads": [3, 3, 3, 3]}),
    ((1, 1, 1, 8), {"kernel_shape": [3, 3], "dilations": [2, 2], "pads": [2, 2, 2, 2]}),
    ((1, 1, 6), {"kernel_shape": [4], "strides": [2], "pads": [3, 2], "ceil_mode": 1}),
]


@pytest.mark.parametrize("case", [*range(40), *NARROW], ids=str)
def test_pools_against_the_spec(case: int | tuple[tuple[int, ...], dict[str, Any]]) -> None:
    """Random windows (pads up to 3, some wider than the kernel: windows wholly in the
    padding; ceil mode; dilations) and narrow axes, against a window-at-a-time loop."""
    if isinstance(case, int):
        shape, attrs = _random_windows(case)
    else:
        shape, attrs = case
        rank = len(shape) - 2
        attrs = {"strides": [1] * rank, "dilations": [1] * rank, "ceil_mode": 0, **attrs}
        attrs["count_include_pad"] = 0
    x = rand(*shape) * 10
    g = geometry(
        shape[2:],
        attrs["kernel_shape"],
        strides=attrs["strides"],
        dilations=attrs["dilations"],
        pads=attrs["pads"],
        auto_pad="NOTSET",
        ceil_mode=attrs["ceil_mode"],
    )
    if 0 in g.out:
        pytest.skip("no window fits")
    max_attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
    (got,) = ours("MaxPool", [x], max_attrs, opset=12)
    np.testing.assert_array_equal(got, brute_pool(x, attrs, "MaxPool").astype(np.float32))
    ints = (x * 10).astype(np.int8)
    (got,) = ours("MaxPool", [ints], max_attrs, opset=12)
    want = brute_pool(ints, attrs, "MaxPool")
    np.testing.assert_array_equal(got, np.where(np.isinf(want), -128, want).astype(np.int8))
    with np.errstate(divide="ignore", invalid="ignore"):
        (got,) = ours("AveragePool", [x], attrs, opset=19)
    np.testing.assert_allclose(got, brute_pool(x, attrs, "AveragePool"), rtol=1e-5, atol=1e-5)
