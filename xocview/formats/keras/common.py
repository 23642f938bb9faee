"""What several Keras lowerings share: activations by name, and Keras's channels-last
images, tuple-or-integer config values and padding names turned into ONNX's."""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.keras.call import Call, NotMapped

__all__ = [
    "activate",
    "by_sublayer",
    "channels_last",
    "clip",
    "pads",
    "to_first",
    "to_last",
    "tuple_of",
]

_SIMPLE = {
    "relu": "Relu",
    "sigmoid": "Sigmoid",
    "tanh": "Tanh",
    "elu": "Elu",
    "selu": "Selu",
    "softplus": "Softplus",
    "softsign": "Softsign",
    "exponential": "Exp",
    "mish": "Mish",
}


def activate(c: Call, x: int, name: object) -> int:
    """``x`` through the Keras activation called ``name`` (a string; ``linear`` is none)."""
    if isinstance(name, dict):  # a serialized function object: its registered name
        name = name.get("config", name.get("class_name"))
    if name in (None, "linear"):
        return x
    if not isinstance(name, str):
        raise NotMapped("the activation is not named")
    if name in _SIMPLE:
        return c.op(_SIMPLE[name], [x])
    if name in _BUILT:
        return _BUILT[name](c, x)
    raise NotMapped(f"activation {name!r} has no mapping")


def _num(c: Call, x: int, value: float, label: str = "k") -> int:
    return c.const(value, c.dtype(x), label)


def _squareplus(c: Call, x: int) -> int:  # (x + sqrt(x^2 + 4)) / 2
    root = c.op("Sqrt", [c.op("Add", [c.op("Mul", [x, x]), _num(c, x, 4.0)])])
    return c.op("Mul", [c.op("Add", [x, root]), _num(c, x, 0.5)])


def _sparse_plus(c: Call, x: int) -> int:  # 0 below -1, x above 1, (x + 1)^2 / 4 between
    t = c.op("Add", [clip(c, x, -1.0, 1.0), _num(c, x, 1.0)])
    q = c.op("Mul", [c.op("Mul", [t, t]), _num(c, x, 0.25)])
    return c.op("Add", [q, c.op("Relu", [c.op("Sub", [x, _num(c, x, 1.0)])])])


def _glu(c: Call, x: int) -> int:  # a * sigmoid(b), a and b the halves of the last axis
    half = c.op("Div", [c.op("Shape", [x], dtype="int64"), c.ints([2], "two")])
    half = c.op("Slice", [half, c.ints([-1], "last"), c.ints([2**62], "end")])
    end = c.ints([2**62], "end")
    a = c.op("Slice", [x, c.ints([0], "zero"), half, c.ints([-1], "axis")])
    b = c.op("Slice", [x, half, end, c.ints([-1], "axis")])
    return c.op("Mul", [a, c.op("Sigmoid", [b])])


_BUILT: dict[str, Callable[[Call, int], int]] = {
    "swish": lambda c, x: c.op("Mul", [x, c.op("Sigmoid", [x])]),
    "silu": lambda c, x: c.op("Mul", [x, c.op("Sigmoid", [x])]),
    # keras.activations.gelu: exact (erf) unless approximate=True
    "gelu": lambda c, x: c.op("Gelu", [x], {"approximate": "none"}),
    "softmax": lambda c, x: c.op("Softmax", [x], {"axis": -1}),
    "log_softmax": lambda c, x: c.op("LogSoftmax", [x], {"axis": -1}),
    "relu6": lambda c, x: clip(c, x, 0.0, 6.0),
    "leaky_relu": lambda c, x: c.op("LeakyRelu", [x], {"alpha": 0.2}),
    # Keras 3: relu6(x + 3) / 6, and hard_silu is x times that (ONNX's HardSwish)
    "hard_sigmoid": lambda c, x: c.op("HardSigmoid", [x], {"alpha": 1.0 / 6.0, "beta": 0.5}),
    "hard_silu": lambda c, x: c.op("HardSwish", [x]),
    "hard_swish": lambda c, x: c.op("HardSwish", [x]),
    "hard_tanh": lambda c, x: clip(c, x, -1.0, 1.0),
    "celu": lambda c, x: c.op("Celu", [x], {"alpha": 1.0}),
    "soft_shrink": lambda c, x: c.op("Shrink", [x], {"lambd": 0.5, "bias": 0.5}),
    "hard_shrink": lambda c, x: c.op("Shrink", [x], {"lambd": 0.5, "bias": 0.0}),
    "tanh_shrink": lambda c, x: c.op("Sub", [x, c.op("Tanh", [x])]),
    "log_sigmoid": lambda c, x: c.op("Neg", [c.op("Softplus", [c.op("Neg", [x])])]),
    "sparse_sigmoid": lambda c, x: c.op(
        "Add", [c.op("Mul", [clip(c, x, -1.0, 1.0), _num(c, x, 0.5)]), _num(c, x, 0.5, "half")]
    ),
    "squareplus": _squareplus,
    "sparse_plus": _sparse_plus,
    "glu": _glu,
}


def clip(c: Call, x: int, low: float, high: float | None) -> int:
    ins = [x, c.const(low, c.dtype(x), "min")]
    if high is not None:
        ins.append(c.const(high, c.dtype(x), "max"))
    return c.op("Clip", ins)


def channels_last(c: Call) -> bool:
    fmt = c.cfg("data_format", "channels_last")
    if fmt not in ("channels_last", "channels_first"):
        raise NotMapped(f"data_format {fmt!r}")
    return bool(fmt == "channels_last")


def to_first(c: Call, x: int, n: int) -> int:
    """NHWC -> NCHW for ``n`` spatial axes (nothing when the layer is channels-first)."""
    if not channels_last(c):
        return x
    return c.op("Transpose", [x], {"perm": [0, n + 1, *range(1, n + 1)]})


def to_last(c: Call, y: int, n: int) -> int:
    if not channels_last(c):
        return y
    return c.op("Transpose", [y], {"perm": [0, *range(2, n + 2), 1]})


def tuple_of(c: Call, key: str, n: int, default: object = None) -> list[int]:
    value = c.cfg(key, default)
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value] * n
    if not isinstance(value, list | tuple) or len(value) != n:
        raise NotMapped(f"config value {key!r} is not {n} integers")
    return [int(v) for v in value]


def pads(c: Call) -> str:
    padding = str(c.cfg("padding", "valid")).lower()
    if padding not in ("valid", "same"):
        raise NotMapped(f"padding {padding!r}")
    return "SAME_UPPER" if padding == "same" else "VALID"  # TF puts the odd pixel at the end


def by_sublayer(c: Call, place_of: Callable[[list[str]], str], names: tuple[str, ...]) -> list[int]:
    """The weights grouped by sub-layer in ``names``' order (Keras 3 files list sub-layers by
    name; legacy .h5 files in Keras's order, kept as they are within each sub-layer)."""

    def rank(w: int) -> int:
        parts = ["", "", "", "", *str(c.tensors[w].metadata.get("h5", "")).split("/")]
        sub = place_of(parts)
        return next((k for k, n in enumerate(names) if sub.startswith(n)), len(names))

    return sorted(c.weights, key=rank)
