"""Detection kernels: NonMaxSuppression, RoiAlign and MaxUnpool."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["max_unpool", "non_max_suppression", "roi_align", "roi_align_10"]


# --- NonMaxSuppression ---------------------------------------------------------------------------


def _scalar(x: np.ndarray | None, default: float) -> float:
    """The first value of an optional scalar input; ``default`` when omitted or empty."""
    if x is None or x.size == 0:
        return default
    return float(np.asarray(x).reshape(-1)[0])


def _corners(boxes: np.ndarray, center_point_box: int) -> np.ndarray:
    """(..., 4) boxes as (lo_a, lo_b, hi_a, hi_b) with lo <= hi on both axes."""
    b = boxes.astype(np.float64)
    if center_point_box:
        half = b[..., 2:] / 2
        return np.concatenate([b[..., :2] - half, b[..., :2] + half], axis=-1)
    lo = np.minimum(b[..., :2], b[..., 2:])
    hi = np.maximum(b[..., :2], b[..., 2:])
    return np.concatenate([lo, hi], axis=-1)


def _iou_over(boxes: np.ndarray, threshold: float) -> np.ndarray:
    """(n, n) bool: whether box i's IoU with box j exceeds ``threshold``. Boxes that do not
    overlap or have no area never suppress one another."""
    lo = np.maximum(boxes[:, None, :2], boxes[None, :, :2])
    hi = np.minimum(boxes[:, None, 2:], boxes[None, :, 2:])
    sides = hi - lo
    overlap = (sides > 0).all(axis=-1)
    inter = np.where(overlap, sides[..., 0] * sides[..., 1], 0.0)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    union = area[:, None] + area[None, :] - inter
    ok = overlap & (area[:, None] > 0) & (area[None, :] > 0) & (union > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(ok, inter / np.where(ok, union, 1.0), 0.0)
    return ok & (iou > threshold)


@kernel("NonMaxSuppression", since=10)
def non_max_suppression(
    boxes: np.ndarray,
    scores: np.ndarray,
    max_output_boxes_per_class: np.ndarray | None = None,
    iou_threshold: np.ndarray | None = None,
    score_threshold: np.ndarray | None = None,
    *,
    center_point_box: int = 0,
) -> np.ndarray:
    """NonMaxSuppression-10 and -11: per batch and class, greedily keep the highest-scoring
    boxes (ties: the lower index) whose IoU with every box kept before is at most
    iou_threshold, at most max_output_boxes_per_class of them (0 or omitted: none), and only
    scores above score_threshold when given. Returns (k, 3) int64 rows
    [batch, class, box]."""
    if center_point_box not in (0, 1):
        raise ValueError(
            f"NonMaxSuppression: center_point_box {center_point_box} is not supported; "
            "expected 0 or 1"
        )
    if boxes.ndim != 3 or boxes.shape[2] != 4:
        raise ValueError(f"NonMaxSuppression: boxes have shape {boxes.shape}; expected (B, n, 4)")
    if scores.ndim != 3 or scores.shape[0] != boxes.shape[0] or scores.shape[2] != boxes.shape[1]:
        raise ValueError(
            f"NonMaxSuppression: scores have shape {scores.shape}; expected "
            f"({boxes.shape[0]}, C, {boxes.shape[1]})"
        )
    limit = max(int(_scalar(max_output_boxes_per_class, 0)), 0)
    iou_max = _scalar(iou_threshold, 0.0)
    min_score = (
        None
        if score_threshold is None or score_threshold.size == 0
        else (_scalar(score_threshold, 0.0))
    )
    corners = _corners(boxes, center_point_box)
    rows: list[np.ndarray] = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            s = scores[b, c].astype(np.float64)
            candidates = np.arange(s.size) if min_score is None else np.flatnonzero(s > min_score)
            if limit == 0 or candidates.size == 0:
                continue
            order = candidates[np.argsort(-s[candidates], kind="stable")]
            over = _iou_over(corners[b, order], iou_max)
            alive = np.ones(order.size, dtype=bool)
            kept: list[int] = []
            for i in range(order.size):
                if not alive[i]:
                    continue
                kept.append(i)
                if len(kept) == limit:
                    break
                alive &= ~over[i]
            picked = order[kept]
            rows.append(np.stack([np.full_like(picked, b), np.full_like(picked, c), picked], 1))
    if not rows:
        return np.zeros((0, 3), dtype=np.int64)
    return np.concatenate(rows).astype(np.int64)


# --- RoiAlign ------------------------------------------------------------------------------------


def _axis_samples(
    start: float, bin_size: float, bins: int, grid: int, length: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sample positions along one axis, (bins, grid) each: low index, high index, weight of
    the low and the high index, and whether the sample lies within [-1, length]."""
    pos = (
        start
        + np.arange(bins)[:, None] * bin_size
        + (np.arange(grid)[None, :] + 0.5) * bin_size / max(grid, 1)
    )
    valid = (pos >= -1.0) & (pos <= length)
    pos = np.maximum(pos, 0.0)
    low = np.trunc(pos).astype(np.intp)
    at_end = low >= length - 1
    low = np.where(at_end, length - 1, low)
    high = np.where(at_end, length - 1, low + 1)
    pos = np.where(at_end, low.astype(np.float64), pos)
    frac = pos - low
    return low, high, 1.0 - frac, frac, valid


def _roi_align(
    x: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    mode: str,
    output_height: int,
    output_width: int,
    sampling_ratio: int,
    spatial_scale: float,
    half_pixel: bool,
) -> np.ndarray:
    op = "RoiAlign"
    if mode not in ("avg", "max"):
        raise ValueError(f"{op}: mode {mode!r} is not supported; expected avg or max")
    if x.ndim != 4:
        raise ValueError(f"{op}: X has shape {x.shape}; expected (N, C, H, W)")
    if x.dtype.kind not in "fV":
        raise ValueError(f"{op}: dtype {x.dtype} is not supported; expected a float type")
    if rois.ndim != 2 or rois.shape[1] != 4:
        raise ValueError(f"{op}: rois have shape {rois.shape}; expected (num_rois, 4)")
    if batch_indices.shape != (rois.shape[0],):
        raise ValueError(
            f"{op}: batch_indices have shape {batch_indices.shape}; expected ({rois.shape[0]},)"
        )
    if output_height <= 0 or output_width <= 0:
        raise ValueError(f"{op}: output size {output_height}x{output_width} is not positive")
    n, c, h, w = x.shape
    bad = (batch_indices < 0) | (batch_indices >= n)
    if bad.any():
        raise IndexError(f"{op}: batch index {batch_indices[bad][0]} is out of range for {n}")
    work = np.promote_types(x.dtype, np.float32)
    data = x.astype(work, copy=False)
    out = np.zeros((rois.shape[0], c, output_height, output_width), dtype=work)
    offset = 0.5 if half_pixel else 0.0
    for r in range(rois.shape[0]):  # one roi at a time: each has its own sampling grid
        x0, y0, x1, y1 = (float(v) * spatial_scale - offset for v in rois[r])
        rw, rh = x1 - x0, y1 - y0
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / output_height, rw / output_width
        gh = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rh / output_height))
        gw = sampling_ratio if sampling_ratio > 0 else int(np.ceil(rw / output_width))
        if gh <= 0 or gw <= 0:
            continue  # no samples: the output stays 0
        ylo, yhi, wyl, wyh, vy = _axis_samples(y0, bh, output_height, gh, h)
        xlo, xhi, wxl, wxh, vx = _axis_samples(x0, bw, output_width, gw, w)
        img = data[int(batch_indices[r])]  # (C, H, W)
        yi = (ylo[:, :, None, None], yhi[:, :, None, None])
        xi = (xlo[None, None], xhi[None, None])
        wy = (wyl[:, :, None, None], wyh[:, :, None, None])
        wx = (wxl[None, None], wxh[None, None])
        valid = vy[:, :, None, None] & vx[None, None]  # (oh, gh, ow, gw)
        terms = [
            img[:, yi[a], xi[b]] * (wy[a] * wx[b]).astype(work) for a in (0, 1) for b in (0, 1)
        ]
        if mode == "avg":
            s = np.where(valid, terms[0] + terms[1] + terms[2] + terms[3], 0)
            out[r] = s.sum(axis=(2, 4)) / max(gh * gw, 1)
        else:
            m = np.where(valid, np.maximum.reduce(terms), 0)
            out[r] = m.max(axis=(2, 4))
    return out.astype(x.dtype, copy=False)


@kernel("RoiAlign", since=10)
def roi_align_10(
    x: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    *,
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> np.ndarray:
    """RoiAlign-10: the output_half_pixel coordinates (no half-pixel shift)."""
    return _roi_align(
        x, rois, batch_indices, mode, output_height, output_width, sampling_ratio,
        spatial_scale, half_pixel=False,
    )  # fmt: skip


@kernel("RoiAlign", since=16)
def roi_align(
    x: np.ndarray,
    rois: np.ndarray,
    batch_indices: np.ndarray,
    *,
    coordinate_transformation_mode: str = "half_pixel",
    mode: str = "avg",
    output_height: int = 1,
    output_width: int = 1,
    sampling_ratio: int = 0,
    spatial_scale: float = 1.0,
) -> np.ndarray:
    """RoiAlign-16 and -22 (which adds only types): X (N, C, H, W), rois (R, 4) as
    (x1, y1, x2, y2) in input coordinates scaled by spatial_scale, batch_indices (R,);
    returns (R, C, output_height, output_width), each bin the average (or the maximum, of
    the weighted corner values, as onnxruntime does) of bilinear samples on a regular grid."""
    if coordinate_transformation_mode not in ("half_pixel", "output_half_pixel"):
        raise ValueError(
            f"RoiAlign: coordinate_transformation_mode {coordinate_transformation_mode!r} is not "
            "supported; expected half_pixel or output_half_pixel"
        )
    return _roi_align(
        x, rois, batch_indices, mode, output_height, output_width, sampling_ratio,
        spatial_scale, half_pixel=coordinate_transformation_mode == "half_pixel",
    )  # fmt: skip


# --- MaxUnpool -----------------------------------------------------------------------------------


@kernel("MaxUnpool", since=9)
def max_unpool(
    x: np.ndarray,
    indices: np.ndarray,
    output_shape: np.ndarray | None = None,
    *,
    kernel_shape: Sequence[int],
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """MaxUnpool-9, -11 and -22: scatter X into zeros at the flat indices MaxPool gave, in a
    tensor of the shape MaxPool's input had, (in - 1) * stride + kernel - pads per axis.
    With output_shape, that tensor sits at the start of a zero tensor of output_shape, as the
    ONNX reference and conformance cases have it."""
    k = len(kernel_shape)
    if x.ndim != k + 2:
        raise ValueError(f"MaxUnpool: X has rank {x.ndim}; expected {k + 2} for {k}-D kernels")
    if indices.shape != x.shape:
        raise ValueError(f"MaxUnpool: indices have shape {indices.shape}; expected {x.shape}")
    st = [1] * k if strides is None else [int(s) for s in strides]
    pd = [0] * (2 * k) if pads is None else [int(p) for p in pads]
    if len(st) != k or len(pd) != 2 * k:
        raise ValueError(f"MaxUnpool: strides {st} or pads {pd} do not fit {k}-D kernels")
    inferred = [x.shape[0], x.shape[1]] + [
        (x.shape[i + 2] - 1) * st[i] - pd[i] - pd[k + i] + int(kernel_shape[i]) for i in range(k)
    ]
    if any(d < 0 for d in inferred):
        raise ValueError(f"MaxUnpool: the output shape {inferred} has a negative length")
    size = int(np.prod(inferred))
    flat = indices.reshape(-1).astype(np.int64)
    bad = (flat < 0) | (flat >= size)
    if bad.any():
        raise IndexError(f"MaxUnpool: index {flat[bad][0]} is out of range for {size} elements")
    y = np.zeros(size, dtype=x.dtype)
    y[flat] = x.reshape(-1)
    y = y.reshape(inferred)
    if output_shape is None or output_shape.size == 0:
        return y
    shape = [int(v) for v in np.asarray(output_shape).reshape(-1)]
    if len(shape) != len(inferred) or any(s < i for s, i in zip(shape, inferred, strict=True)):
        raise ValueError(
            f"MaxUnpool: output_shape {shape} is not supported; it must be at least {inferred}"
        )
    out = np.zeros(shape, dtype=x.dtype)
    out[tuple(slice(0, i) for i in inferred)] = y
    return out
