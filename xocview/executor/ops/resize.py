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


@dataclass(frozen=True)
class _Taps:
    """Where each output position of one axis reads: (out, taps) indices and weights."""

    index: np.ndarray
    weight: np.ndarray | None  # None: nearest, a single tap of weight 1
    outside: np.ndarray | None  # tf_crop_and_resize: positions that take the extrapolation value


# --- coordinates ----------------------------------------------------------------------------------


def _source(
    transform: str, n_out: int, n_in: int, scale: np.float32, roi: tuple[float, float]
) -> np.ndarray:
    """x_original for every output position (ONNX's coordinate_transformation_mode).

    float32 in onnxruntime's order of operations, so that ties of nearest rounding fall the
    same way. Raises ValueError for an unknown mode.
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


def _cubic_weights(t: np.ndarray, a: float) -> np.ndarray:
    """Keys cubic weights of the taps at -1, 0, 1, 2 around floor(x), for t = x - floor(x)."""
    d = np.stack([1 + t, t, 1 - t, 2 - t], axis=1)
    near = ((a + 2) * d - (a + 3)) * d * d + 1
    far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
    return np.where(d <= 1, near, far)


def _taps(n_out: int, n_in: int, scale: np.float32, roi: tuple[float, float], o: _Options) -> _Taps:
    """Indices and weights of one axis; indices are clamped, which is ONNX's edge padding.

    Raises ValueError for an unknown mode.
    """
    x = _source(o.transform, n_out, n_in, scale, roi)
    outside = (x < 0) | (x > n_in - 1) if o.transform == "tf_crop_and_resize" else None
    if o.mode == "nearest":
        index = _round(x, o.nearest_mode, scale)[:, None]
        return _Taps(np.clip(index, 0, n_in - 1).astype(np.intp), None, outside)
    base = np.floor(x)
    t = (x - base).astype(np.float64)
    if o.mode == "linear":
        offsets, weight = np.arange(2), np.stack([1 - t, t], axis=1)
    elif o.mode == "cubic":
        offsets, weight = np.arange(-1, 3), _cubic_weights(t, o.cubic_coeff_a)
    else:
        raise ValueError(f"Resize mode {o.mode!r} is not nearest, linear or cubic")
    index = base[:, None] + offsets
    if o.exclude_outside:
        weight = np.where((index < 0) | (index > n_in - 1), 0.0, weight)
        weight /= weight.sum(axis=1, keepdims=True)
    return _Taps(np.clip(index, 0, n_in - 1).astype(np.intp), weight, outside)


# --- sampling -------------------------------------------------------------------------------------


def _along(data: np.ndarray, axis: int, taps: _Taps) -> np.ndarray:
    """One gather along ``axis``, then the taps' weighted sum (a single take for nearest)."""
    if taps.weight is None:
        return np.take(data, taps.index[:, 0], axis=axis)
    n_out, n_taps = taps.index.shape
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


def _resample(
    data: np.ndarray,
    out_shape: Sequence[int],
    scales: Sequence[np.float32],
    roi: Sequence[tuple[float, float]],
    o: _Options,
) -> np.ndarray:
    """Resize axis by axis; axes whose size, scale and roi are all the identity are skipped."""
    y = data if o.mode == "nearest" else data.astype(_work_dtype(data.dtype))
    outside = np.zeros((1,) * data.ndim, dtype=bool)
    for axis, (n_out, n_in, scale, box) in enumerate(
        zip(out_shape, data.shape, scales, roi, strict=True)
    ):
        crop = o.transform == "tf_crop_and_resize"
        if n_out == n_in and scale == 1 and (not crop or box == (0.0, 1.0)):
            continue
        taps = _taps(n_out, n_in, scale, box, o)
        y = _along(y, axis, taps)
        if taps.outside is not None:
            outside = outside | taps.outside.reshape(-1, *[1] * (data.ndim - axis - 1))
    if outside.any():
        y = np.where(outside, np.asarray(o.extrapolation_value, dtype=y.dtype), y)
    return _cast_back(y, data.dtype) if o.mode != "nearest" else y


# --- output size ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """Per input axis: the output size, the scale the coordinates use, the roi box."""

    shape: list[int]
    scales: list[np.float32]
    roi: list[tuple[float, float]]


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
    plan = _Plan(list(data.shape), [np.float32(1)] * rank, [(0.0, 1.0)] * rank)
    if roi is not None and roi.size:
        box = roi.astype(np.float64).reshape(-1).tolist()
        for i, a in enumerate(at):
            plan.roi[a] = (box[i], box[i + len(at)])
    if sizes is not None and sizes.size:
        _from_sizes(plan, data.shape, at, sizes.reshape(-1).tolist(), policy)
    elif scales is not None and scales.size:
        given = scales.astype(np.float32).reshape(-1)
        _check_len(given, at, "scales")
        for s, a in zip(given, at, strict=True):
            plan.scales[a] = s
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

    Raises ValueError for an unknown policy.
    """
    _check_len(sizes, at, "sizes")
    ratios = [np.float32(n) / np.float32(shape[a]) for n, a in zip(sizes, at, strict=True)]
    if policy in ("not_larger", "not_smaller"):
        common = min(ratios) if policy == "not_larger" else max(ratios)
        ratios = [common] * len(at)
        sizes = [int(np.floor(common * np.float32(shape[a]) + np.float32(0.5))) for a in at]
    elif policy != "stretch":
        raise ValueError(
            f"keep_aspect_ratio_policy {policy!r} is not stretch, not_larger or not_smaller"
        )
    for a, n, r in zip(at, sizes, ratios, strict=True):
        plan.shape[a], plan.scales[a] = int(n), r


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
    return _resample(data, plan.shape, plan.scales, plan.roi, opts)


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

    Raises NotImplementedError for antialiased linear or cubic shrinking.
    """
    plan = _plan(data, roi, scales, sizes, axes, keep_aspect_ratio_policy)
    if antialias and mode != "nearest" and any(s < 1 for s in plan.scales):
        raise NotImplementedError("Resize with antialias=1 while shrinking is not supported yet")
    opts = _Options(
        mode=mode,
        transform=coordinate_transformation_mode,
        nearest_mode=nearest_mode,
        cubic_coeff_a=float(cubic_coeff_a),
        exclude_outside=int(exclude_outside),
        extrapolation_value=float(extrapolation_value),
    )
    return _resample(data, plan.shape, plan.scales, plan.roi, opts)
