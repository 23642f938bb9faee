"""Elementwise ATen ops: arithmetic, comparisons, logic, activations, dtype conversions.

Operands follow torch's type promotion: arithmetic is done in the dtype torch recorded for the
output, each operand cast to it; a comparison compares in the promoted dtype of its operands
(tensors with dimensions first, then 0-d tensors, then Python numbers, by category
bool < integer < float). Python numbers become 0-d constants.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.formats.pytorch.lowering.emit import FLOATS, INTS, Emit, NotMapped
from xocview.formats.pytorch.pt2_schema import Ref
from xocview.model.dtypes import DTYPES

__all__ = [
    "binary",
    "bitwise",
    "clamp",
    "compare",
    "div",
    "logical",
    "operand",
    "promote",
    "unary",
]

Lower = Callable[[Emit], None]


def _category(dtype: str) -> int:
    return 0 if dtype == "bool" else 2 if dtype in FLOATS else 1


def promote(e: Emit, values: list[Any]) -> str:
    """torch's result dtype of ``values`` (tensor Refs and Python numbers)."""
    dims: list[str] = []
    zeros: list[str] = []
    best_scalar = -1
    for v in values:
        if isinstance(v, Ref) and not v.sym:
            t = e.values.value(v.name)
            (zeros if not e.shape(t) else dims).append(e.dtype(t))
        elif isinstance(v, Ref) or (isinstance(v, int) and not isinstance(v, bool)):
            best_scalar = max(best_scalar, 1)
        elif isinstance(v, bool):
            best_scalar = max(best_scalar, 0)
        elif isinstance(v, float):
            best_scalar = max(best_scalar, 2)
    result = _widest(dims)
    if zeros and (result is None or _category(_widest(zeros) or "bool") > _category(result)):
        result = _widest(zeros)
    if result is None or best_scalar > _category(result):
        result = ("bool", "int64", "float32")[max(best_scalar, 0)]
    return result


def _widest(dtypes: list[str]) -> str | None:
    if not dtypes:
        return None
    top = max(_category(d) for d in dtypes)
    same = [d for d in dtypes if _category(d) == top]
    if len(set(same)) == 1:
        return same[0]
    if top == 2:
        order = ["bfloat16", "float16", "float32", "double"]
        ranks = [order.index(d) for d in same if d in order]
        if {"bfloat16", "float16"} <= set(same) and max(ranks) <= 1:
            return "float32"
        return order[max(ranks)]
    return str(np.result_type(*same))  # integer names are numpy's own


def operand(e: Emit, value: Any, dtype: str, label: str) -> int:
    """A tensor, symbolic int or Python number as a graph tensor of ``dtype``."""
    if isinstance(value, Ref):
        return e.cast(e.values.value(value.name), dtype)
    if isinstance(value, complex) or value is None:
        raise NotMapped(f"{label} is {value!r}")
    return e.const(value, dtype, label)


def unary(op: str, cast: bool = True, **attrs: Any) -> Lower:
    """One ONNX op on ``self`` (cast to the output dtype first unless ``cast`` is False)."""

    def lower(e: Emit) -> None:
        x = e.x("self")
        e.emit(op, [e.cast(x, e.out_dtype()) if cast else x], attrs or None)

    return lower


def binary(op: str) -> Lower:
    """``self op other`` in the output dtype; ``alpha`` scales ``other`` (add, sub)."""

    def lower(e: Emit) -> None:
        dtype = e.out_dtype()
        a = operand(e, e.arg("self"), dtype, "self")
        b = operand(e, e.arg("other"), dtype, "other")
        alpha = e.arg("alpha", 1)
        if alpha != 1:
            b = e.op1("Mul", [b, e.const(alpha, dtype, "alpha")])
        e.emit(op, [a, b])

    return lower


def rsub(e: Emit) -> None:
    """``other - alpha * self``."""
    dtype = e.out_dtype()
    a = operand(e, e.arg("self"), dtype, "self")
    b = operand(e, e.arg("other"), dtype, "other")
    alpha = e.arg("alpha", 1)
    if alpha != 1:
        a = e.op1("Mul", [a, e.const(alpha, dtype, "alpha")])
    e.emit("Sub", [b, a])


def div(e: Emit) -> None:
    """True division, or rounded ``trunc``/``floor`` (integers through double)."""
    mode = e.arg("rounding_mode", None)
    dtype = e.out_dtype()
    if mode is None:
        e.emit(
            "Div",
            [operand(e, e.arg("self"), dtype, "self"), operand(e, e.arg("other"), dtype, "other")],
        )
        return
    if mode not in ("floor", "trunc"):
        raise NotMapped(f"rounding_mode {mode!r}")
    work = dtype if dtype in FLOATS else "double"
    q = e.op1(
        "Div", [operand(e, e.arg("self"), work, "self"), operand(e, e.arg("other"), work, "other")]
    )
    if mode == "floor":
        q = e.op1("Floor", [q])
    else:  # towards zero: sign * floor(|q|)
        q = e.op1("Mul", [e.op1("Sign", [q]), e.op1("Floor", [e.op1("Abs", [q])])])
    e.emit(
        "Cast" if work != dtype else "Identity", [q], _cast_attrs(dtype) if work != dtype else None
    )


def floor_divide(e: Emit) -> None:
    e.args = {**e.args, "rounding_mode": "floor"}
    div(e)


def remainder(fmod: int) -> Lower:
    """torch.remainder (the divisor's sign, as Python's %) or torch.fmod (the dividend's)."""

    def lower(e: Emit) -> None:
        dtype = e.out_dtype()
        a = operand(e, e.arg("self"), dtype, "self")
        b = operand(e, e.arg("other"), dtype, "other")
        if dtype in FLOATS and not fmod:  # ONNX Mod of floats is C's fmod: a - floor(a/b)*b
            q = e.op1("Floor", [e.op1("Div", [a, b])])
            e.emit("Sub", [a, e.op1("Mul", [q, b])])
        else:
            e.emit("Mod", [a, b], {"fmod": 1 if fmod or dtype in FLOATS else 0})

    return lower


def compare(op: str, negate: bool = False) -> Lower:
    """A comparison in the operands' promoted dtype; ``negate`` for ``ne``."""

    def lower(e: Emit) -> None:
        dtype = promote(e, [e.arg("self"), e.arg("other")])
        a = operand(e, e.arg("self"), dtype, "self")
        b = operand(e, e.arg("other"), dtype, "other")
        if negate:
            e.emit("Not", [e.op1(op, [a, b], dtype="bool")])
        else:
            e.emit(op, [a, b])

    return lower


def logical(op: str) -> Lower:
    """And / Or / Xor of the operands as booleans (then cast to the output dtype)."""

    def lower(e: Emit) -> None:
        a = operand(e, e.arg("self"), "bool", "self")
        b = operand(e, e.arg("other"), "bool", "other")
        if e.out_dtype() == "bool":
            e.emit(op, [a, b])
        else:
            e.emit("Cast", [e.op1(op, [a, b])], _cast_attrs(e.out_dtype()))

    return lower


def bitwise(bool_op: str, int_op: str) -> Lower:
    """Bitwise on integers, logical on booleans (torch's ``&`` means both)."""

    def lower(e: Emit) -> None:
        dtype = e.out_dtype()
        if dtype not in INTS and dtype != "bool":
            raise NotMapped(f"bitwise op on {dtype}")
        a = operand(e, e.arg("self"), dtype, "self")
        if bool_op == "Not":
            e.emit("Not" if dtype == "bool" else int_op, [a])
            return
        b = operand(e, e.arg("other"), dtype, "other")
        e.emit(bool_op if dtype == "bool" else int_op, [a, b])

    return lower


def where(e: Emit) -> None:
    """``where(condition, self, other)``: tensors or numbers, in the output dtype."""
    dtype = e.out_dtype()
    cond = operand(e, e.arg("condition"), "bool", "condition")
    a = operand(e, e.arg("self"), dtype, "self")
    b = operand(e, e.arg("other"), dtype, "other")
    e.emit("Where", [cond, a, b])


def masked_fill(e: Emit) -> None:
    """``self`` with ``value`` where ``mask`` holds."""
    dtype = e.out_dtype()
    mask = operand(e, e.arg("mask"), "bool", "mask")
    value = operand(e, e.arg("value"), dtype, "value")
    e.emit("Where", [mask, value, e.cast(e.x("self"), dtype)])


def clamp(low: str, high: str, low_default: Any = None, high_default: Any = None) -> Lower:
    """Clip between two optional bounds (clamp, hardtanh, relu6, clamp_min, clamp_max)."""

    def lower(e: Emit) -> None:
        dtype = e.out_dtype()
        lo, hi = e.arg(low, low_default), e.arg(high, high_default)
        x = e.cast(e.x("self"), dtype)
        bounds = [
            None if v is None else operand(e, v, dtype, n) for v, n in ((lo, "min"), (hi, "max"))
        ]
        e.emit("Clip", [x, *bounds] if bounds[1] is not None else [x, bounds[0]])

    return lower


def gelu(e: Emit) -> None:
    e.emit("Gelu", [e.x("self")], {"approximate": e.arg("approximate", "none")})


def silu(e: Emit) -> None:
    x = e.x("self")
    e.emit("Mul", [x, e.op1("Sigmoid", [x])])


def rsqrt(e: Emit) -> None:
    e.emit("Reciprocal", [e.op1("Sqrt", [e.cast(e.x("self"), e.out_dtype())])])


def square(e: Emit) -> None:
    x = e.cast(e.x("self"), e.out_dtype())
    e.emit("Mul", [x, x])


def pow_(e: Emit) -> None:
    dtype = e.out_dtype()
    base = operand(e, e.arg("self"), dtype, "self")
    exponent = e.arg("exponent")
    if exponent == 2 and not isinstance(exponent, Ref):
        e.emit("Mul", [base, base])
        return
    e.emit("Pow", [base, operand(e, exponent, dtype, "exponent")])


def leaky_relu(e: Emit) -> None:
    e.emit("LeakyRelu", [e.x("self")], {"alpha": float(e.arg("negative_slope", 0.01))})


def elu(e: Emit) -> None:
    if e.arg("scale", 1) != 1 or e.arg("input_scale", 1) != 1:
        raise NotMapped("elu with scale or input_scale")
    e.emit("Elu", [e.x("self")], {"alpha": float(e.arg("alpha", 1.0))})


def softplus(e: Emit) -> None:
    beta, threshold = float(e.arg("beta", 1)), float(e.arg("threshold", 20))
    x = e.x("self")
    dtype = e.dtype(x)
    if beta == 1 and threshold >= 20:
        e.emit("Softplus", [x])
        return
    scaled = e.op1("Mul", [x, e.const(beta, dtype, "beta")])
    soft = e.op1("Div", [e.op1("Softplus", [scaled]), e.const(beta, dtype, "beta")])
    e.emit(
        "Where",
        [e.op1("Greater", [scaled, e.const(threshold, dtype, "threshold")], dtype="bool"), x, soft],
    )


def log1p(e: Emit) -> None:
    x = e.cast(e.x("self"), e.out_dtype())
    e.emit("Log", [e.op1("Add", [x, e.const(1, e.dtype(x), "one")])])


def expm1(e: Emit) -> None:
    x = e.cast(e.x("self"), e.out_dtype())
    e.emit("Sub", [e.op1("Exp", [x]), e.const(1, e.dtype(x), "one")])


def mish(e: Emit) -> None:
    e.emit("Mish", [e.x("self")])


def hardsigmoid(e: Emit) -> None:
    e.emit("HardSigmoid", [e.x("self")], {"alpha": 1.0 / 6.0, "beta": 0.5})


def to_dtype(e: Emit) -> None:
    """to / _to_copy / type_as / contiguous and friends: a Cast when the dtype changes."""
    x = e.x("self")
    dtype = e.out_dtype()
    if e.dtype(x) == dtype:
        e.emit("Identity", [x])
    else:
        e.emit("Cast", [x], _cast_attrs(dtype))


def identity(name: str = "self") -> Lower:
    """Ops that only alias, copy or (in eval) keep their input: dropout, clone, alias, detach."""

    def lower(e: Emit) -> None:
        if name == "input" and e.arg("train", False):
            raise NotMapped("dropout in training mode")
        e.emit("Identity", [e.x(name)])

    return lower


def native_dropout(e: Emit) -> None:
    """(output, mask): the input and an all-true mask, outside training."""
    if e.arg("train", False):
        raise NotMapped("dropout in training mode")
    x = e.x("input")
    e.op("Identity", [x], out=e.outs)
    if e.used(1):
        shape = e.op1("Shape", [x], dtype="int64")
        e.op("Expand", [e.const(True, "bool", "true"), shape], out=[e.out(1)])


def sym_arith(op: str) -> Lower:
    """``_operator.add`` and friends on symbolic ints (one-element int64 tensors)."""

    def lower(e: Emit) -> None:
        values = [e.args.get(k) for k in ("a", "b", "self", "other") if k in e.args]
        if len(values) != 2:
            values = list(e.args.values())[:2]
        a, b = (operand(e, v, "int64", f"arg{k}") for k, v in enumerate(values))
        if op == "FloorDiv":
            q = e.op1("Div", [e.cast(a, "double"), e.cast(b, "double")])
            e.emit("Cast", [e.op1("Floor", [q])], _cast_attrs("int64"))
        else:
            e.emit(op, [a, b])

    return lower


def _cast_attrs(dtype: str) -> dict[str, Any]:
    return {"to": DTYPES[dtype].onnx_code}
