"""Shape and layout kernels: Shape, Reshape, Transpose, Squeeze, Concat, Split, Pad and kin."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.registry import kernel

_INDEX = np.int64


def as_ints(values: np.ndarray | Sequence[int] | None) -> list[int]:
    """An axes/shape input or attribute as Python ints (no int64 overflow in later arithmetic)."""
    if values is None:
        return []
    if type(values) is list and all(type(v) is int for v in values):  # an attribute: as is
        return list(values)
    return [int(v) for v in np.asarray(values).reshape(-1).tolist()]


def axis_index(axis: int, rank: int) -> int:
    """A possibly negative axis as an index in ``range(rank)``.

    Raises ValueError when it is out of range.
    """
    if not -rank <= axis < rank:
        raise ValueError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


# --- shape queries --------------------------------------------------------------------------------


@kernel("Shape", since=1, exact_types=True)
def shape(data: np.ndarray, *, end: int | None = None, start: int = 0) -> np.ndarray:
    """The shape as int64; ``start``/``end`` (opset 15) slice it with clamping, like Python."""
    return np.array(data.shape[start:end], dtype=_INDEX)


@kernel("Size", since=1, exact_types=True)
def size(data: np.ndarray) -> np.ndarray:
    """The element count as an int64 scalar."""
    return np.array(data.size, dtype=_INDEX)


# --- reshaping (views where numpy can) ------------------------------------------------------------


def _target_shape(data: np.ndarray, spec: Sequence[int], allowzero: int) -> list[int]:
    """ONNX's reshape spec: 0 copies the input's dim (unless allowzero), one -1 is inferred."""
    if allowzero:
        return list(spec)
    beyond = [i for i, d in enumerate(spec) if d == 0 and i >= data.ndim]
    if beyond:
        raise ValueError(f"shape {list(spec)}: the 0 at {beyond[0]} has no input dim to copy")
    return [data.shape[i] if d == 0 else d for i, d in enumerate(spec)]


@kernel("Reshape", since=1)
def reshape_1(
    data: np.ndarray, *, consumed_inputs: Sequence[int] | None = None, shape: Sequence[int] = ()
) -> np.ndarray:
    """Opset 1: the target shape is an attribute."""
    return data.reshape(_target_shape(data, as_ints(shape), 0))


@kernel("Reshape", since=5)
def reshape(data: np.ndarray, shape: np.ndarray, *, allowzero: int = 0) -> np.ndarray:
    """A view of ``data`` in the target shape (numpy copies only when strides forbid a view)."""
    return data.reshape(_target_shape(data, as_ints(shape), allowzero))


@kernel("Flatten", since=1)
def flatten(data: np.ndarray, *, axis: int = 1) -> np.ndarray:
    """2-D: the dims before ``axis`` make the rows, the rest the columns."""
    axis = axis + data.ndim if axis < 0 else axis
    if not 0 <= axis <= data.ndim:
        raise ValueError(f"Flatten axis {axis} is out of range for rank {data.ndim}")
    rows = int(np.prod(data.shape[:axis], dtype=np.int64))
    cols = int(np.prod(data.shape[axis:], dtype=np.int64))
    return data.reshape(rows, cols)


@kernel("Transpose", since=1)
def transpose(data: np.ndarray, *, perm: Sequence[int] | None = None) -> np.ndarray:
    """A strided view; no ``perm`` reverses the axes."""
    return data.transpose(None if perm is None or len(perm) == 0 else list(perm))


def _squeeze(data: np.ndarray, axes: list[int]) -> np.ndarray:
    if not axes:
        return data.reshape([d for d in data.shape if d != 1])
    at = {axis_index(a, data.ndim) for a in axes}
    wrong = [a for a in at if data.shape[a] != 1]
    if wrong:
        raise ValueError(f"cannot squeeze axis {wrong[0]} of shape {data.shape}: its size is not 1")
    return data.reshape([d for i, d in enumerate(data.shape) if i not in at])


@kernel("Squeeze", since=1)
def squeeze_1(data: np.ndarray, *, axes: Sequence[int] | None = None) -> np.ndarray:
    """Before opset 13 the axes are an attribute; none means every axis of size 1."""
    return _squeeze(data, as_ints(axes))


@kernel("Squeeze", since=13)
def squeeze(data: np.ndarray, axes: np.ndarray | None = None) -> np.ndarray:
    """From opset 13 the axes are an optional input."""
    return _squeeze(data, as_ints(axes))


def _unsqueeze(data: np.ndarray, axes: list[int]) -> np.ndarray:
    rank = data.ndim + len(axes)
    at = sorted(axis_index(a, rank) for a in axes)
    if len(set(at)) != len(at):
        raise ValueError(f"Unsqueeze axes {axes} repeat an axis")
    dims = list(data.shape)
    for a in at:
        dims.insert(a, 1)
    return data.reshape(dims)


@kernel("Unsqueeze", since=1)
def unsqueeze_1(data: np.ndarray, *, axes: Sequence[int] = ()) -> np.ndarray:
    """Before opset 13 the axes are an attribute; they index the output's dims."""
    return _unsqueeze(data, as_ints(axes))


@kernel("Unsqueeze", since=13)
def unsqueeze(data: np.ndarray, axes: np.ndarray) -> np.ndarray:
    """From opset 13 the axes are an input."""
    return _unsqueeze(data, as_ints(axes))


# --- copying and joining --------------------------------------------------------------------------


@kernel("Expand", since=8)
def expand(data: np.ndarray, shape: np.ndarray) -> np.ndarray:
    """Bidirectional broadcast, materialised.

    A zero-stride view would report the full size while holding none of it and is read-only;
    onnxruntime allocates the result, and the profiler should see the same memory.
    """
    target = np.broadcast_shapes(data.shape, tuple(as_ints(shape)))
    return np.array(np.broadcast_to(data, target))


@kernel("Tile", since=6)
def tile(data: np.ndarray, repeats: np.ndarray) -> np.ndarray:
    """Repeat the whole tensor ``repeats[i]`` times along axis i."""
    reps = as_ints(repeats)
    if len(reps) != data.ndim:
        raise ValueError(f"Tile repeats {reps} must have one entry per axis of {data.shape}")
    return np.tile(data, reps)


@kernel("Concat", since=1)
def concat_1(*inputs: np.ndarray, axis: int = 1) -> np.ndarray:
    """Opset 1: ``axis`` defaults to 1."""
    return np.concatenate(inputs, axis=axis)


@kernel("Concat", since=4)
def concat(*inputs: np.ndarray, axis: int) -> np.ndarray:
    """From opset 4 ``axis`` is required (negative from 11)."""
    return np.concatenate(inputs, axis=axis_index(axis, inputs[0].ndim))


def _split(
    data: np.ndarray, axis: int, parts: list[int] | None, count: int
) -> tuple[np.ndarray, ...]:
    """Views of ``data`` cut along ``axis``; without sizes, equal parts with a smaller last one."""
    axis = axis_index(axis, data.ndim)
    dim = data.shape[axis]
    if not parts:
        chunk = -(-dim // count)
        parts = [chunk] * (count - 1) + [dim - chunk * (count - 1)]
    if sum(parts) != dim or len(parts) != count or min(parts) < 0:
        raise ValueError(f"Split sizes {parts} do not cut dim {dim} into {count} outputs")
    return tuple(np.split(data, np.cumsum(parts)[:-1], axis=axis))


@kernel("Split", since=1)
def split_1(
    data: np.ndarray,
    split_input: np.ndarray | None = None,
    *,
    axis: int = 0,
    split: Sequence[int] | None = None,
    num_outputs: int,
) -> tuple[np.ndarray, ...]:
    """Before opset 13 the sizes are an attribute (opset 1 also took them as an input)."""
    sizes = as_ints(split) or as_ints(split_input)
    return _split(data, axis, sizes, num_outputs)


@kernel("Split", since=13)
def split(
    data: np.ndarray, split: np.ndarray | None = None, *, axis: int = 0, num_outputs: int
) -> tuple[np.ndarray, ...]:
    """From opset 13 the sizes are an optional input.

    From opset 18 the node's ``num_outputs`` attribute must equal its output count, which the
    runtime passes under the same name.
    """
    return _split(data, axis, as_ints(split), num_outputs)


# --- padding --------------------------------------------------------------------------------------

_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "edge", "wrap": "wrap"}


def _pad(
    data: np.ndarray, pads: list[int], mode: str, value: object, axes: list[int]
) -> np.ndarray:
    """np.pad after cropping negative pads; ``pads`` holds begins then ends for ``axes``.

    Raises ValueError for an unknown mode or a pads list of the wrong length.
    """
    if mode not in _PAD_MODES:
        raise ValueError(f"Pad mode {mode!r} is not one of {sorted(_PAD_MODES)}")
    if len(pads) != 2 * len(axes):
        raise ValueError(f"Pad needs {2 * len(axes)} pads for axes {axes}, got {pads}")
    width = [(0, 0)] * data.ndim
    crop = [slice(None)] * data.ndim
    for i, a in enumerate(axis_index(a, data.ndim) for a in axes):
        begin, end = pads[i], pads[i + len(axes)]
        if data.shape[a] + begin + end < 0:
            raise ValueError(
                f"Pad: pads {begin} and {end} on axis {a} of size {data.shape[a]} crop more than "
                "it has; expected a size of 0 or more"
            )
        crop[a] = slice(max(0, -begin), data.shape[a] - max(0, -end))
        width[a] = (max(0, begin), max(0, end))
    data = data[tuple(crop)]
    if mode == "constant":
        return np.pad(data, width, mode="constant", constant_values=np.asarray(value, data.dtype))
    return np.pad(data, width, mode=_PAD_MODES[mode])  # type: ignore[call-overload]


@kernel("Pad", since=1)
def pad_1(
    data: np.ndarray, *, mode: str = "constant", paddings: Sequence[int] = (), value: float = 0.0
) -> np.ndarray:
    """Opset 1 named the pads ``paddings``."""
    return _pad(data, as_ints(paddings), mode, value, list(range(data.ndim)))


@kernel("Pad", since=2)
def pad_2(
    data: np.ndarray, *, mode: str = "constant", pads: Sequence[int] = (), value: float = 0.0
) -> np.ndarray:
    """Opsets 2-10: pads and the constant are attributes."""
    return _pad(data, as_ints(pads), mode, value, list(range(data.ndim)))


@kernel("Pad", since=11)
def pad(
    data: np.ndarray,
    pads: np.ndarray,
    constant_value: np.ndarray | None = None,
    axes: np.ndarray | None = None,
    *,
    mode: str = "constant",
) -> np.ndarray:
    """From opset 11 pads and the constant are inputs; opset 18 adds ``axes``, 19 ``wrap``."""
    value = 0 if constant_value is None or constant_value.size == 0 else constant_value.item()
    at = as_ints(axes) if axes is not None else list(range(data.ndim))
    return _pad(data, as_ints(pads), mode, value, at)


# --- depth <-> space ------------------------------------------------------------------------------


@kernel("DepthToSpace", since=1)
def depth_to_space(data: np.ndarray, *, blocksize: int, mode: str = "DCR") -> np.ndarray:
    """NCHW: channels move into blocksize x blocksize spatial blocks (DCR or CRD order)."""
    n, c, h, w = data.shape
    b = int(blocksize)
    if c % (b * b):
        raise ValueError(f"DepthToSpace: {c} channels are not divisible by blocksize^2 = {b * b}")
    if mode == "DCR":
        tmp = data.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    elif mode == "CRD":
        tmp = data.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    else:
        raise ValueError(f"DepthToSpace mode {mode!r} is not DCR or CRD")
    return tmp.reshape(n, c // (b * b), h * b, w * b)


@kernel("SpaceToDepth", since=1)
def space_to_depth(data: np.ndarray, *, blocksize: int) -> np.ndarray:
    """NCHW: each blocksize x blocksize spatial block moves into channels (DCR order)."""
    return space_to_depth_28(data, blocksize=blocksize)


@kernel("SpaceToDepth", since=28)
def space_to_depth_28(data: np.ndarray, *, blocksize: int, mode: str = "DCR") -> np.ndarray:
    """Opset 28 adds ``mode``: output channel (row * b + col) * C + c for DCR, the inverse of
    DepthToSpace's DCR; c * b * b + row * b + col for CRD."""
    if data.ndim != 4:
        raise ValueError(f"SpaceToDepth: input has rank {data.ndim}; expected 4 (NCHW)")
    n, c, h, w = data.shape
    b = int(blocksize)
    if b < 1 or h % b or w % b:
        raise ValueError(f"SpaceToDepth: spatial {h}x{w} is not divisible by blocksize {b}")
    if mode == "DCR":
        order = (0, 3, 5, 1, 2, 4)
    elif mode == "CRD":
        order = (0, 1, 3, 5, 2, 4)
    else:
        raise ValueError(f"SpaceToDepth: mode {mode!r} is not supported; DCR or CRD are")
    tmp = data.reshape(n, c, h // b, b, w // b, b).transpose(order)
    return tmp.reshape(n, c * b * b, h // b, w // b)
