"""Padding, output-size and strided-window arithmetic shared by the Conv and pooling kernels."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "Geometry",
    "Index",
    "dilated",
    "geometry",
    "normalise",
    "pad_spatial",
    "tap_slices",
    "transpose_pads",
]


# A numpy index tuple built with * (mypy needs the annotation to accept it).
Index = tuple[Any, ...]


@dataclass(frozen=True)
class Geometry:
    """Where the windows of one strided, dilated sweep over the spatial axes fall.

    ``begin``/``end`` are the zero (or -inf) padding to put around the input so that every
    window lies inside it; ``out`` is the output's spatial shape. ``overhang`` is the part of
    ``end`` that ceil mode adds beyond the declared pads (AveragePool never counts it).
    """

    kernel: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    out: tuple[int, ...]
    overhang: tuple[int, ...] = ()

    @property
    def padded(self) -> bool:
        """Whether any padding is needed at all (the fast paths skip the padded copy)."""
        return any(self.begin) or any(self.end)


def normalise(values: Sequence[int] | None, rank: int, default: int) -> tuple[int, ...]:
    """An attribute list as a tuple of ``rank`` ints, ``default`` everywhere when absent."""
    if values is None or len(values) == 0:
        return (default,) * rank
    if len(values) != rank:
        raise ValueError(f"expected {rank} values, got {list(values)}")
    return tuple(int(v) for v in values)


def dilated(kernel: int, dilation: int) -> int:
    """The span a kernel of ``kernel`` taps covers with the given dilation."""
    return (kernel - 1) * dilation + 1


def _auto_pads(size: int, span: int, stride: int, lower: bool) -> tuple[int, int, int]:
    """SAME_UPPER/SAME_LOWER: output ceil(size / stride), the odd pad at the end (start).

    The span is the dilated kernel, as the spec says; onnxruntime's pools use the undilated
    kernel here (and its Conv refuses SAME with dilations), so they differ from the spec.
    """
    out = -(-size // stride)
    total = max(0, (out - 1) * stride + span - size)
    small = total // 2
    return (total - small, small, out) if lower else (small, total - small, out)


def _explicit_out(size: int, span: int, stride: int, pads: tuple[int, int], ceil: bool) -> int:
    """Output length for explicit pads; ceil mode drops a window that starts in the end pad."""
    room = size + pads[0] + pads[1] - span
    out = (-(-room // stride) if ceil else room // stride) + 1
    if ceil and (out - 1) * stride >= size + pads[0]:
        out -= 1
    return max(out, 0)


def geometry(
    spatial: Sequence[int],
    kernel: Sequence[int],
    *,
    strides: Sequence[int] | None,
    dilations: Sequence[int] | None,
    pads: Sequence[int] | None,
    auto_pad: str | bytes,
    ceil_mode: int = 0,
) -> Geometry:
    """Resolve the ONNX padding attributes of Conv and the pools into one Geometry.

    The end padding is widened when ceil mode lets the last window run past the given pads, so
    that callers can always take full windows from the padded input.
    Raises ValueError for an unknown auto_pad or attribute lists of the wrong length.
    """
    rank = len(spatial)
    mode = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    st = normalise(strides, rank, 1)
    dl = normalise(dilations, rank, 1)
    k = tuple(int(v) for v in kernel)
    spans = [dilated(kk, d) for kk, d in zip(k, dl, strict=True)]
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        triples = [
            _auto_pads(n, sp, s, mode == "SAME_LOWER")
            for n, sp, s in zip(spatial, spans, st, strict=True)
        ]
        begin = tuple(t[0] for t in triples)
        end = tuple(t[1] for t in triples)
        out = tuple(t[2] for t in triples)
    elif mode in ("NOTSET", "VALID", ""):
        if mode != "VALID" and pads is not None and len(pads) == rank:
            pads = [*pads, *pads]  # one value per axis, as some XOC files write: symmetric
        flat = normalise(pads, 2 * rank, 0) if mode != "VALID" else (0,) * (2 * rank)
        begin, end = flat[:rank], flat[rank:]
        out = tuple(
            _explicit_out(n, sp, s, (b, e), bool(ceil_mode))
            for n, sp, s, b, e in zip(spatial, spans, st, begin, end, strict=True)
        )
    else:
        raise ValueError(f"auto_pad {mode!r}; expected NOTSET, SAME_UPPER, SAME_LOWER or VALID")
    # Ceil mode may need a window that reaches beyond the declared end padding.
    overhang = tuple(
        max(0, (o - 1) * s + sp - n - b - e) if o > 0 else 0
        for e, o, s, sp, n, b in zip(end, out, st, spans, spatial, begin, strict=True)
    )
    end = tuple(e + h for e, h in zip(end, overhang, strict=True))
    return Geometry(k, st, dl, begin, end, out, overhang)


def pad_spatial(x: np.ndarray, g: Geometry, value: float | int) -> np.ndarray:
    """``x`` with the geometry's padding around its trailing spatial axes (x itself if none).

    One allocation and one copy; np.pad is several times slower for this.
    """
    if not g.padded:
        return x
    rank = len(g.out)
    lead = x.shape[: x.ndim - rank]
    shape = lead + tuple(n + b + e for n, b, e in zip(x.shape[-rank:], g.begin, g.end, strict=True))
    out = np.full(shape, value, dtype=x.dtype)
    inner: Index = (
        Ellipsis,
        *(slice(b, b + n) for b, n in zip(g.begin, x.shape[-rank:], strict=True)),
    )
    out[inner] = x
    return out


def tap_slices(g: Geometry, tap: Sequence[int]) -> tuple[slice, ...]:
    """Slices over the padded spatial axes that pick, for every output, the input under ``tap``."""
    return tuple(
        slice(t * d, t * d + (o - 1) * s + 1, s)
        for t, d, o, s in zip(tap, g.dilations, g.out, g.strides, strict=True)
    )


def transpose_pads(
    spatial: Sequence[int],
    kernel: Sequence[int],
    *,
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads: Sequence[int] | None,
    output_padding: tuple[int, ...],
    output_shape: Sequence[int] | None,
    auto_pad: str | bytes,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """ConvTranspose's (begin pads, output shape) from its attributes, as the ONNX spec says.

    The full (unpadded) output is ``stride * (in - 1) + output_padding + span``; the pads crop
    it. With output_shape or SAME auto_pad the total crop is split with the odd element at the
    start, except SAME_UPPER which puts it at the end.
    """
    rank = len(spatial)
    mode = auto_pad.decode() if isinstance(auto_pad, bytes) else auto_pad
    full = [
        s * (n - 1) + a + dilated(k, d)
        for n, k, s, d, a in zip(spatial, kernel, strides, dilations, output_padding, strict=True)
    ]
    if output_shape is not None and len(output_shape) > 0:
        target = [int(v) for v in output_shape][-rank:]
    elif mode in ("SAME_UPPER", "SAME_LOWER"):
        target = [n * s for n, s in zip(spatial, strides, strict=True)]
    else:
        if mode != "VALID" and pads is not None and len(pads) == rank:
            pads = [*pads, *pads]  # one value per axis, as some XOC files write: symmetric
        flat = normalise(pads, 2 * rank, 0) if mode != "VALID" else (0,) * (2 * rank)
        out = tuple(f - b - e for f, b, e in zip(full, flat[:rank], flat[rank:], strict=True))
        return flat[:rank], out
    totals = [f - t for f, t in zip(full, target, strict=True)]
    if mode == "SAME_UPPER":
        begin = tuple(t // 2 for t in totals)
    else:
        begin = tuple(t - t // 2 for t in totals)
    return begin, tuple(target)
