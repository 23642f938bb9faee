"""Kernels that make or retype tensors: Constant(OfShape), Range, EyeLike, Cast(Like), Identity."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from xocview.executor.registry import kernel
from xocview.model.dtypes import DTYPES, canonical_dtype, dtype_by_onnx_code, numpy_type

_FLOAT8 = {"float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz"}


def onnx_numpy_dtype(to: int | str, op: str = "Cast") -> np.dtype:
    """The numpy dtype of an ONNX ``TensorProto.DataType`` (a number, or a name such as
    "FLOAT" as Cast's opsets 1-5 wrote it).

    Raises ValueError for an unknown type or one numpy and ml_dtypes cannot hold (int4, float4).
    """
    if isinstance(to, str):
        name = canonical_dtype(to)
        info = DTYPES.get(name) if name else None
    else:
        info = dtype_by_onnx_code(int(to))
    if info is None:
        raise ValueError(f"{op}: unknown ONNX data type {to!r}")
    dtype = numpy_type(info.name)
    if dtype is None:
        raise ValueError(f"{op}: data type {info.name} has no numpy equivalent; not supported")
    return dtype


def _to_strings(x: np.ndarray) -> np.ndarray:
    """Numbers as onnxruntime writes them: floats with 8 significant digits ("%.8g"), "NaN",
    "INF", "-INF"; integers in full; bools as "1" and "0"."""
    if x.dtype.kind == "O":
        return x
    if x.dtype.kind == "b":
        return np.where(x, "1", "0").astype(object)
    if x.dtype.kind in "iu":
        return np.char.mod("%d", x).astype(object)
    wide = x.astype(np.float64)
    out = np.char.mod("%.8g", wide).astype(object)
    out[np.isnan(wide)] = "NaN"
    out[wide == np.inf] = "INF"
    out[wide == -np.inf] = "-INF"
    return out


def _to_e8m0(x: np.ndarray, saturate: int, round_mode: str) -> np.ndarray:
    """float8e8m0 (a power of two, 2**(code - 127), code 255 NaN) from the float32 bits:
    the exponent field, raised by one when ``round_mode`` says the fraction rounds up.

    As Cast's table says: NaN stays NaN; with ``saturate`` infinities and values past the
    largest become the largest, without it NaN, and so does 0, which has no code. The sign is
    ignored (negative values are unspecified).
    """
    import ml_dtypes

    if round_mode not in ("up", "down", "nearest"):
        raise ValueError(
            f"Cast: round_mode {round_mode!r} is not supported; expected up, down, nearest"
        )
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    exponent = ((bits >> 23) & 0xFF).astype(np.int32)
    fraction = bits & 0x7FFFFF
    if round_mode == "up":
        exponent += fraction > 0
    elif round_mode == "nearest":  # a fraction of one half is a tie: away from the subnormals
        half = np.uint32(0x400000)
        exponent += (fraction > half) | ((fraction == half) & (exponent > 0))
    special = ((bits >> 23) & 0xFF) == 0xFF
    nan = np.isnan(x)
    if saturate:
        code = np.where(special & ~nan, 0xFE, np.minimum(exponent, 0xFE))
    else:
        code = np.where((exponent > 0xFE) | ((bits & 0x7FFFFFFF) == 0), 0xFF, exponent)
    code = np.where(nan, 0xFF, code)
    return code.astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)


def cast_value(x: np.ndarray, dtype: np.dtype, saturate: int, round_mode: str = "up") -> np.ndarray:
    """``x`` as ``dtype`` by ONNX's rules (see Cast); a cast to its own dtype returns ``x``."""
    if x.dtype == dtype:
        return x
    if dtype.kind == "O":
        return _to_strings(x)
    if x.dtype.kind == "O":
        # strings parse as numbers ("1e-5", "INF", "NaN"); Python's float() reads them all
        parsed = x.astype(np.float64) if dtype.kind in "fbV" else x
        return parsed.astype(dtype)
    if dtype.name == "float8_e8m0fnu" and x.dtype.kind in "fV":
        return _to_e8m0(x.astype(np.float32), saturate, round_mode)
    if saturate and dtype.type.__name__ in _FLOAT8 and x.dtype.kind in "fV":
        import ml_dtypes

        # saturate: beyond the range (infinities too) becomes the largest finite value
        top = float(ml_dtypes.finfo(dtype).max)
        x = np.clip(x.astype(np.float32) if x.dtype.kind == "V" else x, -top, top)
    # float -> int out of range is undefined in ONNX; numpy gives what C does, quietly
    with np.errstate(invalid="ignore", over="ignore"):
        return x.astype(dtype)


@kernel("Cast", since=1, exact_types=True)
def cast(x: np.ndarray, *, to: int | str, saturate: int = 1, round_mode: str = "up") -> np.ndarray:
    """``saturate`` (opset 19) matters only for float8 targets, ``round_mode`` (opset 24) only
    for float8e8m0."""
    return cast_value(x, onnx_numpy_dtype(to), saturate, round_mode)


@kernel("CastLike", since=15, exact_types=True)
def cast_like(
    x: np.ndarray, target_type: np.ndarray, *, saturate: int = 1, round_mode: str = "up"
) -> np.ndarray:
    return cast_value(x, target_type.dtype, saturate, round_mode)


@kernel("Identity", since=1)
def identity(x: np.ndarray) -> np.ndarray:
    return x


def _text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


@kernel("Constant", since=1)
def constant(
    *,
    value: np.ndarray | None = None,
    sparse_value: Any = None,
    value_float: float | None = None,
    value_floats: list[float] | None = None,
    value_int: int | None = None,
    value_ints: list[int] | None = None,
    value_string: str | bytes | None = None,
    value_strings: list[str | bytes] | None = None,
) -> np.ndarray:
    """The one value attribute given, as a tensor (floats float32, ints int64).

    Raises ValueError for ``sparse_value`` and when no value or several are given.
    """
    if sparse_value is not None:
        raise ValueError("Constant: sparse_value is not supported; store the tensor densely")
    given = {
        "value": None if value is None else np.asarray(value),
        "value_float": None if value_float is None else np.array(value_float, np.float32),
        "value_floats": None if value_floats is None else np.array(value_floats, np.float32),
        "value_int": None if value_int is None else np.array(value_int, np.int64),
        "value_ints": None if value_ints is None else np.array(value_ints, np.int64),
        "value_string": None if value_string is None else _strings(_text(value_string)),
        "value_strings": None
        if value_strings is None
        else _strings([_text(s) for s in value_strings]),
    }
    found = [name for name, v in given.items() if v is not None]
    if len(found) != 1:
        raise ValueError(f"Constant: exactly one value attribute expected, got {found or 'none'}")
    result = given[found[0]]
    assert result is not None
    return result


def _strings(value: str | list[str]) -> np.ndarray:
    out = np.empty(len(value) if isinstance(value, list) else (), dtype=object)
    out[...] = value
    return out


@kernel("ConstantOfShape", since=9)
def constant_of_shape(shape: np.ndarray, *, value: np.ndarray | None = None) -> np.ndarray:
    """``value`` is a one-element tensor giving the fill and the dtype (default float32 0)."""
    fill = np.zeros(1, np.float32) if value is None else np.asarray(value)
    if fill.size != 1:
        raise ValueError(f"ConstantOfShape: value has {fill.size} elements; expected 1")
    return np.full(tuple(int(d) for d in shape.reshape(-1)), fill.reshape(()), dtype=fill.dtype)


@kernel("Range", since=11)
def range_(
    start: np.ndarray, limit: np.ndarray, delta: np.ndarray, *, stash_type: int = 1
) -> np.ndarray:
    """``start + i * delta`` for ``i < max(ceil((limit - start) / delta), 0)``.

    float16 and bfloat16 work in float32 unless ``stash_type`` (opset 27) says otherwise.
    """
    dtype = start.dtype
    work = np.dtype(np.float32) if dtype.itemsize == 2 and stash_type == 1 else dtype
    s, lim, d = (np.asarray(v).reshape(()).astype(work) for v in (start, limit, delta))
    if d == 0:
        raise ValueError("Range: delta is 0; the sequence would never reach its limit")
    count = max(math.ceil(float(lim - s) / float(d)), 0)
    out = np.arange(count, dtype=work)
    out *= d
    out += s
    return out.astype(dtype, copy=False)


@kernel("EyeLike", since=9, exact_types=True)
def eye_like(x: np.ndarray, *, dtype: int | None = None, k: int = 0) -> np.ndarray:
    """Ones on the ``k``-th diagonal of a matrix shaped like ``x``, in ``dtype`` or x's."""
    if x.ndim != 2:
        raise ValueError(f"EyeLike: input has rank {x.ndim}; expected a 2-D tensor")
    out_dtype = x.dtype if dtype is None else onnx_numpy_dtype(dtype, "EyeLike")
    return np.eye(x.shape[0], x.shape[1], k=k, dtype=out_dtype)


def _mask_and_output(x: np.ndarray, mask_dtype: np.dtype, num_outputs: int) -> Any:
    if num_outputs < 2:
        return x
    return x, np.ones(x.shape, dtype=mask_dtype)


@kernel("Dropout", since=1)
def dropout_1(
    data: np.ndarray,
    *,
    is_test: int = 0,
    ratio: float = 0.5,
    consumed_inputs: list[int] | None = None,
    num_outputs: int = 1,
) -> Any:
    """Inference: the output is the input and the mask keeps everything. Opsets 1-9 typed the
    mask like the data (all ones); onnxruntime (opset 7-9) fills it with zeros instead."""
    return _mask_and_output(data, data.dtype, num_outputs)


@kernel("Dropout", since=10)
def dropout_10(data: np.ndarray, *, ratio: float = 0.5, num_outputs: int = 1) -> Any:
    """The mask is bool from opset 10; onnxruntime (opset 10-11) returns it all False."""
    return _mask_and_output(data, np.dtype(bool), num_outputs)


@kernel("Dropout", since=12)
def dropout(
    data: np.ndarray,
    ratio: np.ndarray | None = None,
    training_mode: np.ndarray | None = None,
    *,
    seed: int | None = None,
    num_outputs: int = 1,
) -> Any:
    """``ratio`` and ``training_mode`` became inputs. In inference (no ``training_mode``, or
    false) the output is the input; in training each element is kept with probability
    1 - ratio and scaled by 1 / (1 - ratio), the mask drawn from ``seed`` when given."""
    if training_mode is None or not bool(np.asarray(training_mode).reshape(-1)[0]):
        return _mask_and_output(data, np.dtype(bool), num_outputs)
    p = 0.5 if ratio is None else float(np.asarray(ratio).reshape(-1)[0])
    if not 0.0 <= p < 1.0:
        raise ValueError(f"Dropout: ratio {p} is not supported in training; expected [0, 1)")
    rng = np.random.default_rng(seed)
    mask = rng.random(data.shape) >= p
    out = (data * mask / np.asarray(1.0 - p, dtype=data.dtype)).astype(data.dtype, copy=False)
    return out if num_outputs < 2 else (out, mask)
