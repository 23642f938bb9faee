"""Resize and Upsample: separable nearest, n-linear and cubic resampling, one gather per axis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from xocview.executor.ops.shape import axis_index
from xocview.executor.registry import kernel

_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


@dataclass(frozen=True)
class _Options:
    """The attributes that shape how one axis is sampled."""

    mode: str = "nearest"
    transform: str = "half_pixel"
    nearest_mode: str = "round_prefer_floor"
    cubic_coeff_a: float = -0.75
    exclude_outside: int = 0
    extrapolation_value: float = 0.0
    antialias: int = 0


@dataclass(frozen=True)
class _Taps:
    """Where each output position of one axis reads: (out, taps) indices and weights."""

    index: np.ndarray
    weight: np.ndarray | None  # None: nearest, a single tap of weight 1
    outside: np.ndarray | None  # tf_crop_and_resize: positions that take the extrapolation value


# --- coordinates ----------------------------------------------------------------------------------


def _source(
    transform: str,
    n_out: int,
    n_in: int,
    scale: np.float32,
    roi: tuple[float, float],
    length: float,
) -> np.ndarray:
    """x_original for every output position (ONNX's coordinate_transformation_mode).

    float32 in onnxruntime's order of operations, so that ties of nearest rounding fall the
    same way. ``length`` is the output length before flooring (n_in * scale when ``scales``
    is given): align_corners divides by it, as the spec's reference does, where onnxruntime
    takes the floored n_out; a fractional length is worked in float64, as the reference does.
    Raises ValueError for an unknown mode.
    """
    y = np.arange(n_out, dtype=np.float32)
    half = np.float32(0.5)
    if transform == "half_pixel":
        return (y + half) / scale - half
    if transform == "half_pixel_symmetric":
        adjustment = np.float32(n_out) / (scale * np.float32(n_in))
        offset = np.float32(n_in) / 2 * (1 - adjustment)
        return offset + (y + half) / scale - half
    if transform == "pytorch_half_pixel":
        return (y + half) / scale - half if n_out > 1 else np.zeros(n_out, np.float32)
    if transform == "align_corners":
        if length != n_out:
            return y.astype(np.float64) * (n_in - 1) / (length - 1)
        return y * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out, np.float32)
    if transform == "asymmetric":
        return y / scale
    if transform == "tf_crop_and_resize":
        start, end = np.float32(roi[0]), np.float32(roi[1])
        if n_out == 1:
            return np.full(1, half * (start + end) * (n_in - 1), np.float32)
        return start * (n_in - 1) + y * (end - start) * (n_in - 1) / (n_out - 1)
    raise ValueError(f"Resize coordinate_transformation_mode {transform!r} is not supported")


def _round(x: np.ndarray, mode: str, scale: np.float32) -> np.ndarray:
    """Nearest source index by ``nearest_mode``; "simple" is Resize-10/Upsample's rule.

    Raises ValueError for an unknown mode.
    """
    if mode == "round_prefer_floor":
        return np.ceil(x - 0.5)
    if mode == "round_prefer_ceil":
        return np.floor(x + 0.5)
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    if mode == "simple":  # onnxruntime: ceil when shrinking, truncation when growing
        return np.ceil(x) if scale < 1 else np.trunc(x)
    raise ValueError(f"Resize nearest_mode {mode!r} is not one of {', '.join(_NEAREST[:4])}")


def _keys(d: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic kernel at distances ``d`` >= 0 (zero from 2 on)."""
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, np.where(d < 2, far, 0.0))


def _cubic_weights(t: np.ndarray, a: float) -> np.ndarray:
    """Keys cubic weights of the taps at -1, 0, 1, 2 around floor(x), for t = x - floor(x)."""
    return _keys(np.stack([1 + t, t, 1 - t, 2 - t], axis=1), a)


def _antialias_weights(x: np.ndarray, scale: float, o: _Options) -> tuple[np.ndarray, np.ndarray]:
    """Taps and weights of the linear or cubic kernel stretched by 1 / scale (shrinking only).

    As ONNX's reference: with start = floor(-support / scale) + 1, the taps run from
    ceil(x) - 1 + start to ceil(x) - start, each weighted by kernel(scale * (index - x)), and
    the weights are normalised to sum 1 (edge taps included, before clamping).
    """
    support = 1.0 if o.mode == "linear" else 2.0
    start = int(np.floor(-support / scale)) + 1
    x = x.astype(np.float64)
    index = (np.ceil(x) - 1)[:, None] + np.arange(start, 2 - start)
    d = np.abs(scale * (index - x[:, None]))
    weight = np.clip(1 - d, 0, 1) if o.mode == "linear" else _keys(d, o.cubic_coeff_a)
    return index, weight / weight.sum(axis=1, keepdims=True)


def _taps(
    n_out: int,
    n_in: int,
    scale: np.float32,
    roi: tuple[float, float],
    length: float,
    o: _Options,
) -> _Taps:
    """Indices and weights of one axis; indices are clamped, which is ONNX's edge padding.

    Raises ValueError for an unknown mode.
    """
    x = _source(o.transform, n_out, n_in, scale, roi, length)
    outside = (x < 0) | (x > n_in - 1) if o.transform == "tf_crop_and_resize" else None
    if o.mode == "nearest":
        index = _round(x, o.nearest_mode, scale)[:, None]
        return _Taps(np.clip(index, 0, n_in - 1).astype(np.intp), None, outside)
    if o.mode not in ("linear", "cubic"):
        raise ValueError(f"Resize mode {o.mode!r} is not nearest, linear or cubic")
    if o.antialias and scale < 1:
        index, weight = _antialias_weights(x, float(scale), o)
    else:
        base = np.floor(x)
        t = (x - base).astype(np.float64)
        if o.mode == "linear":
            offsets, weight = np.arange(2), np.stack([1 - t, t], axis=1)
        else:
            offsets, weight = np.arange(-1, 3), _cubic_weights(t, o.cubic_coeff_a)
        index = base[:, None] + offsets
    if o.exclude_outside:
        weight = np.where((index < 0) | (index > n_in - 1), 0.0, weight)
        total = weight.sum(axis=1, keepdims=True)
        weight /= np.where(total == 0, 1.0, total)
    return _Taps(np.clip(index, 0, n_in - 1).astype(np.intp), weight, outside)


# --- sampling -------------------------------------------------------------------------------------


def _weight_matrix(taps: _Taps, n_in: int, dtype: np.dtype) -> np.ndarray:
    """The taps as an (n_out, n_in) matrix; clamped taps at the edges add up."""
    assert taps.weight is not None
    n_out, n_taps = taps.index.shape
    matrix = np.zeros((n_out, n_in), dtype=np.float64)
    rows = np.repeat(np.arange(n_out), n_taps)
    np.add.at(matrix, (rows, taps.index.reshape(-1)), taps.weight.reshape(-1))
    return matrix.astype(dtype)


def _along(data: np.ndarray, axis: int, taps: _Taps) -> np.ndarray:
    """One gather along ``axis``, then the taps' weighted sum (a single take for nearest).

    Wide (antialiased) windows go through an (n_out, n_in) weight matrix instead: one
    tensordot, where the gather would copy the data once per tap, unless the matrix would be
    the larger (a long axis with little else).
    """
    if taps.weight is None:
        return np.take(data, taps.index[:, 0], axis=axis)
    n_out, n_taps = taps.index.shape
    n_in = data.shape[axis]
    if n_taps > 4 and n_in <= data.size // max(n_in, 1) * n_taps:  # the matrix is the smaller
        matrix = _weight_matrix(taps, n_in, data.dtype)
        return np.moveaxis(np.tensordot(matrix, data, axes=([1], [axis])), 0, axis)
    picked = np.take(data, taps.index.reshape(-1), axis=axis)
    picked = picked.reshape(*data.shape[:axis], n_out, n_taps, *data.shape[axis + 1 :])
    weight = taps.weight.astype(data.dtype).reshape(n_out, n_taps, *[1] * (data.ndim - axis - 1))
    return (picked * weight).sum(axis=axis + 1)


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """float64 stays float64; every other dtype is sampled in float32, as onnxruntime does."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _cast_back(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Integers round to nearest and saturate, as the ONNX reference casts its result."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(np.rint(y), info.min, info.max).astype(dtype)
    return y.astype(dtype, copy=False)


def _resample(data: np.ndarray, plan: _Plan, o: _Options) -> np.ndarray:
    """Resize axis by axis; axes whose size, scale and roi are all the identity are skipped."""
    y = data if o.mode == "nearest" else data.astype(_work_dtype(data.dtype))
    outside = np.zeros((1,) * data.ndim, dtype=bool)
    for axis, (n_out, n_in, scale, box, length) in enumerate(
        zip(plan.shape, data.shape, plan.scales, plan.roi, plan.lengths, strict=True)
    ):
        crop = o.transform == "tf_crop_and_resize"
        if n_out == n_in and scale == 1 and (not crop or box == (0.0, 1.0)):
            continue
        taps = _taps(n_out, n_in, scale, box, length, o)
        y = _along(y, axis, taps)
        if taps.outside is not None:
            outside = outside | taps.outside.reshape(-1, *[1] * (data.ndim - axis - 1))
    if outside.any():
        y = np.where(outside, np.asarray(o.extrapolation_value, dtype=y.dtype), y)
    return _cast_back(y, data.dtype) if o.mode != "nearest" else y


# --- output size ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """Per input axis: the output size, the scale the coordinates use, the roi box, and the
    output length before flooring (n_in * scale for ``scales``, the size for ``sizes``)."""

    shape: list[int]
    scales: list[np.float32]
    roi: list[tuple[float, float]]
    lengths: list[float]


def _plan(
    data: np.ndarray,
    roi: np.ndarray | None,
    scales: np.ndarray | None,
    sizes: np.ndarray | None,
    axes: Sequence[int] | None = None,
    policy: str = "stretch",
) -> _Plan:
    """Output shape and scales from ``scales`` (floor(in * scale)) or ``sizes`` (scale = out/in).

    ``axes`` (opset 18) says which axes the scales, sizes and roi list. Raises ValueError when
    neither scales nor sizes is given, or their length does not match.
    """
    rank = data.ndim
    at = [axis_index(a, rank) for a in axes] if axes else list(range(rank))
    plan = _Plan(
        list(data.shape),
        [np.float32(1)] * rank,
        [(0.0, 1.0)] * rank,
        [float(n) for n in data.shape],
    )
    if roi is not None and roi.size:
        box = roi.astype(np.float64).reshape(-1).tolist()
        for i, a in enumerate(at):
            plan.roi[a] = (box[i], box[i + len(at)])
    if sizes is not None and sizes.size:
        _from_sizes(plan, data.shape, at, sizes.reshape(-1).tolist(), policy)
    elif scales is not None and scales.size:
        given = scales.astype(np.float32).reshape(-1)
        _check_len(given, at, "scales")
        if not np.all(np.isfinite(given) & (given > 0)):
            raise ValueError(f"Resize scales are {given.tolist()}; expected finite numbers over 0")
        for s, a in zip(given, at, strict=True):
            plan.scales[a] = s
            plan.lengths[a] = float(s) * data.shape[a]  # exact in float64
            plan.shape[a] = int(np.floor(s * np.float32(data.shape[a])))
    else:
        raise ValueError("Resize needs a non-empty scales or sizes input")
    return plan


def _check_len(values: Sequence[object] | np.ndarray, at: Sequence[int], what: str) -> None:
    if len(values) != len(at):
        raise ValueError(f"Resize {what} has {len(values)} values for {len(at)} axes")


def _from_sizes(
    plan: _Plan, shape: Sequence[int], at: Sequence[int], sizes: list[int], policy: str
) -> None:
    """Fill ``plan`` from target sizes; not_larger/not_smaller keep the aspect ratio (opset 18).

    Under those policies the unrounded length is the common ratio times the input size, as
    the spec's reference has it. Raises ValueError for an unknown policy.
    """
    _check_len(sizes, at, "sizes")
    if any(n < 0 for n in sizes):
        raise ValueError(f"Resize sizes are {sizes}; expected sizes of 0 or more")
    ratios = [np.float32(n) / np.float32(shape[a]) for n, a in zip(sizes, at, strict=True)]
    lengths = [float(n) for n in sizes]
    if policy in ("not_larger", "not_smaller"):
        pick = min if policy == "not_larger" else max
        common = pick(ratios)
        wide = pick(n / shape[a] for n, a in zip(sizes, at, strict=True))
        ratios = [common] * len(at)
        sizes = [int(np.floor(common * np.float32(shape[a]) + np.float32(0.5))) for a in at]
        lengths = [wide * shape[a] for a in at]
    elif policy != "stretch":
        raise ValueError(
            f"keep_aspect_ratio_policy {policy!r} is not stretch, not_larger or not_smaller"
        )
    for a, n, r, length in zip(at, sizes, ratios, lengths, strict=True):
        plan.shape[a], plan.scales[a], plan.lengths[a] = int(n), r, length


# --- kernels --------------------------------------------------------------------------------------


@kernel("Upsample", since=7)
def upsample_7(data: np.ndarray, *, mode: str = "nearest", scales: Sequence[float]) -> np.ndarray:
    """Opset 7: the scales are an attribute; asymmetric coordinates, nearest truncates."""
    return upsample(data, np.asarray(scales, np.float32), mode=mode)


@kernel("Upsample", since=9)
def upsample(data: np.ndarray, scales: np.ndarray, *, mode: str = "nearest") -> np.ndarray:
    """Opset 9: the scales are an input (the op is Resize-10 under its old name)."""
    return resize_10(data, scales, mode=mode)


@kernel("Resize", since=10)
def resize_10(data: np.ndarray, scales: np.ndarray, *, mode: str = "nearest") -> np.ndarray:
    """Opset 10: scales only, asymmetric coordinates, onnxruntime's "simple" nearest rounding."""
    plan = _plan(data, None, scales, None)
    opts = _Options(mode=mode, transform="asymmetric", nearest_mode="simple")
    return _resample(data, plan, opts)


@kernel("Resize", since=11)
def resize_11(
    data: np.ndarray,
    roi: np.ndarray | None = None,
    scales: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
    *,
    coordinate_transformation_mode: str = "half_pixel",
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
    extrapolation_value: float = 0.0,
    mode: str = "nearest",
    nearest_mode: str = "round_prefer_floor",
) -> np.ndarray:
    """Opsets 11-17: roi, scales or sizes as inputs; every coordinate mode; cubic."""
    return resize(
        data,
        roi,
        scales,
        sizes,
        coordinate_transformation_mode=coordinate_transformation_mode,
        cubic_coeff_a=cubic_coeff_a,
        exclude_outside=exclude_outside,
        extrapolation_value=extrapolation_value,
        mode=mode,
        nearest_mode=nearest_mode,
    )


@kernel("Resize", since=18)
def resize(
    data: np.ndarray,
    roi: np.ndarray | None = None,
    scales: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
    *,
    antialias: int = 0,
    axes: Sequence[int] | None = None,
    coordinate_transformation_mode: str = "half_pixel",
    cubic_coeff_a: float = -0.75,
    exclude_outside: int = 0,
    extrapolation_value: float = 0.0,
    keep_aspect_ratio_policy: str = "stretch",
    mode: str = "nearest",
    nearest_mode: str = "round_prefer_floor",
) -> np.ndarray:
    """Opset 18 adds axes, keep_aspect_ratio_policy and antialias; 19 half_pixel_symmetric.

    ``antialias`` widens the linear and cubic kernels by 1 / scale on the axes that shrink;
    nearest ignores it.
    """
    plan = _plan(data, roi, scales, sizes, axes, keep_aspect_ratio_policy)
    opts = _Options(
        mode=mode,
        transform=coordinate_transformation_mode,
        nearest_mode=nearest_mode,
        cubic_coeff_a=float(cubic_coeff_a),
        exclude_outside=int(exclude_outside),
        extrapolation_value=float(extrapolation_value),
        antialias=int(antialias),
    )
    return _resample(data, plan, opts)
