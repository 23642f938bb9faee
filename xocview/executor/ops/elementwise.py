"""Element-wise arithmetic kernels: Add..Pow, Mod, BitShift and the variadic Sum, Mean, Max, Min."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["binary_ufunc_kernel", "legacy_broadcast", "register_legacy"]


def legacy_broadcast(b: np.ndarray, a_ndim: int, broadcast: int, axis: int | None) -> np.ndarray:
    """``b`` reshaped so numpy broadcasting does what opsets 1-6 did with ``broadcast=1``.

    There B's dims line up with A's from ``axis`` on (B of shape (3,) against A (2,3,4) at axis 1
    acts as (3,1)); without ``axis`` B is suffix-matched, which is numpy's rule already.
    """
    if not broadcast or axis is None:
        return b
    if axis < 0:
        axis += a_ndim
    return b.reshape(b.shape + (1,) * (a_ndim - axis - b.ndim))


def register_legacy(
    op_type: str, modern: Callable[[np.ndarray, np.ndarray], np.ndarray], *, consumed: bool
) -> None:
    """Register opsets 1-6 of a binary op: B may broadcast along A from ``axis`` (and the
    arithmetic ops carried the obsolete ``consumed_inputs``); then the modern kernel runs."""
    if consumed:

        def legacy(
            a: np.ndarray,
            b: np.ndarray,
            *,
            axis: int | None = None,
            broadcast: int = 0,
            consumed_inputs: list[int] | None = None,
        ) -> np.ndarray:
            return modern(a, legacy_broadcast(b, a.ndim, broadcast, axis))

    else:

        def legacy(  # type: ignore[misc]
            a: np.ndarray, b: np.ndarray, *, axis: int | None = None, broadcast: int = 0
        ) -> np.ndarray:
            return modern(a, legacy_broadcast(b, a.ndim, broadcast, axis))

    legacy.__name__ = legacy.__qualname__ = f"{modern.__name__}_1"
    kernel(op_type, since=1)(legacy)


def _truncating_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integer division rounding toward zero (C's ``/``), which ONNX uses; numpy floors."""
    with np.errstate(divide="ignore"):
        q = np.asarray(np.floor_divide(a, b))
        if a.dtype.kind == "i" or b.dtype.kind == "i":
            # floor and trunc differ by one where the division is inexact and the signs differ
            q += (q * b != a) & ((a < 0) != (b < 0))
    return q


def binary_ufunc_kernel(
    op_type: str, ufunc: Callable[..., np.ndarray], since: int
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Register ``ufunc`` as the kernel of the two-input op ``op_type`` (numpy broadcasting,
    as ONNX's multidirectional rule) from opset ``since``; returns the kernel."""

    def run(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(ufunc(a, b))

    run.__name__ = run.__qualname__ = op_type.lower()
    run.__doc__ = f"ONNX {op_type}: numpy's {ufunc.__name__}, with broadcasting."
    kernel(op_type, since=since)(run)
    return run


add = binary_ufunc_kernel("Add", np.add, 7)
sub = binary_ufunc_kernel("Sub", np.subtract, 7)
mul = binary_ufunc_kernel("Mul", np.multiply, 7)


@kernel("Div", since=7)
def div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Integers truncate toward zero; an integer zero divisor (undefined in ONNX, a crash in
    onnxruntime) gives a garbage value without raising."""
    if a.dtype.kind in "iub":
        return _truncating_divide(a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.divide(a, b))


@kernel("Pow", since=1)
def pow_1(
    x: np.ndarray, y: np.ndarray, *, axis: int | None = None, broadcast: int = 0
) -> np.ndarray:
    return pow_(x, legacy_broadcast(y, x.ndim, broadcast, axis))


@kernel("Pow", since=7)
def pow_(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The result has the base's dtype (the exponent's may differ since opset 12).

    Integer bases and mixed dtypes go through float64, as onnxruntime's ``std::pow`` does: a
    negative exponent truncates (2 ** -1 == 0) instead of raising as numpy's integer power would.
    """
    if x.dtype.kind == "f" and y.size == 1 and y.dtype.kind in "fiu":
        e = float(y.reshape(-1)[0])
        if e in (2.0, 3.0) and y.ndim <= x.ndim:  # GELU's x**3: products (pow is ~100x slower)
            base = x.astype(np.float32) if x.dtype == np.float16 else x  # half: rounded once
            out = np.multiply(base, base)
            if e == 3.0:
                out *= base
            return out.astype(x.dtype, copy=False)
    if x.dtype == y.dtype and x.dtype.kind == "f":
        return np.asarray(np.power(x, y))
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        wide = np.power(x.astype(np.float64), y.astype(np.float64, copy=False))
        return np.asarray(wide).astype(x.dtype, copy=False)


@kernel("Mod", since=10)
def mod(a: np.ndarray, b: np.ndarray, *, fmod: int = 0) -> np.ndarray:
    """``fmod=0`` takes the divisor's sign (floats allowed from opset 28), ``fmod=1`` the
    dividend's; an integer zero divisor (undefined in ONNX) gives 0 without raising."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.fmod(a, b) if fmod else np.mod(a, b))


@kernel("BitShift", since=11)
def bit_shift(x: np.ndarray, y: np.ndarray, *, direction: str) -> np.ndarray:
    """Shifts by a negative amount or by the bit width or more give 0, or -1 when a negative
    signed value is shifted right (opset 28's rule; opset 11 left them undefined)."""
    bits = x.dtype.itemsize * 8
    valid = (y >= 0) & (y < bits)
    amount = np.where(valid, y, 0).astype(x.dtype, copy=False)
    if direction == "LEFT":
        return np.where(valid, np.left_shift(x, amount), 0).astype(x.dtype, copy=False)
    if direction == "RIGHT":
        fill = np.right_shift(x, bits - 1) if x.dtype.kind == "i" else 0
        return np.where(valid, np.right_shift(x, amount), fill).astype(x.dtype, copy=False)
    raise ValueError(f"BitShift: direction {direction!r}; expected 'LEFT' or 'RIGHT'")


def _fold(ufunc: Callable[..., np.ndarray], inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    """Apply a binary ufunc across inputs with broadcasting, in place once the result is ours."""
    if not inputs:
        raise ValueError("variadic op: at least one input is required")
    if len(inputs) == 1:
        return inputs[0]
    out = np.asarray(ufunc(inputs[0], inputs[1]))
    for x in inputs[2:]:
        if np.broadcast_shapes(out.shape, x.shape) == out.shape:
            ufunc(out, x, out=out)
        else:
            out = np.asarray(ufunc(out, x))
    return out


@kernel("Sum", since=1)
def sum_(*inputs: np.ndarray, consumed_inputs: list[int] | None = None) -> np.ndarray:
    """Opsets 1-7 asked for equal shapes; broadcasting (opset 8) covers them."""
    return _fold(np.add, inputs)


@kernel("Mean", since=1)
def mean(*inputs: np.ndarray, consumed_inputs: list[int] | None = None) -> np.ndarray:
    if len(inputs) == 1:
        return inputs[0]
    out = _fold(np.add, inputs)
    # ``len`` is a Python int, so the division keeps the input's float dtype (NEP 50)
    np.divide(out, len(inputs), out=out)
    return out


@kernel("Max", since=1)
def max_(*inputs: np.ndarray, consumed_inputs: list[int] | None = None) -> np.ndarray:
    """NaN wins, as in onnxruntime."""
    return _fold(np.maximum, inputs)


@kernel("Min", since=1)
def min_(*inputs: np.ndarray, consumed_inputs: list[int] | None = None) -> np.ndarray:
    """NaN wins, as in onnxruntime."""
    return _fold(np.minimum, inputs)


for _op, _modern in (("Add", add), ("Sub", sub), ("Mul", mul), ("Div", div)):
    register_legacy(_op, _modern, consumed=True)
