"""Keras recurrent layers (LSTM, GRU, SimpleRNN, and Bidirectional around them) as ONNX's
LSTM, GRU and RNN operators, batch-first (``layout=1``).

Keras keeps a kernel ``(in, gates * units)``, a recurrent kernel ``(units, gates * units)``
and a bias; ONNX wants ``W (dirs, gates * units, in)``, ``R (dirs, gates * units, units)``
and ``B (dirs, 2 * gates * units)`` (input then recurrent biases). The reordering is written
as ops on the weights: LSTM's gates go from Keras's i, f, c, o to ONNX's i, o, f, c; GRU's
z, r, h are the same in both, and ``reset_after=True`` is ONNX's ``linear_before_reset=1``
with Keras's two bias rows as the input and recurrent biases. ``go_backwards`` is ONNX's
``reverse`` direction; Keras returns that sequence in the order it was walked, ONNX in
input order, so it is flipped back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xocview.formats.keras.call import Call, NotMapped
from xocview.formats.keras.common import by_sublayer

__all__ = ["RECURRENT"]

Lower = Callable[[Call], int]
_END = 2**62
_GATES = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}
_ONNX = {"LSTM": "LSTM", "GRU": "GRU", "SimpleRNN": "RNN"}
_ACTIVATIONS = {"tanh": "Tanh", "sigmoid": "Sigmoid", "relu": "Relu"}
_MERGE = {"sum": "ReduceSum", "mul": "ReduceProd", "ave": "ReduceMean"}


def _act(cfg: dict[str, Any], key: str, default: str) -> str:
    name = cfg.get(key) or default
    if isinstance(name, dict):  # a serialized function: its registered name
        name = name.get("config", name.get("class_name"))
    if name not in _ACTIVATIONS:
        raise NotMapped(f"{key} {name!r} in a recurrent layer")
    return _ACTIVATIONS[str(name)]


def _check(cls: str, cfg: dict[str, Any]) -> None:
    for flag in ("stateful", "return_state", "unroll", "time_major"):
        if cfg.get(flag):
            raise NotMapped(f"{flag}=True")
    if cls not in _GATES:
        raise NotMapped(f"a {cls} inside Bidirectional")


def _weights(c: Call, cls: str, cfg: dict[str, Any], ws: list[int]) -> list[int]:
    """ONNX's W, R and B (or W, R) of one direction, each with a leading direction axis."""
    gates, units = _GATES[cls], int(cfg["units"])
    bias = bool(cfg.get("use_bias", True))
    if len(ws) != (3 if bias else 2):
        raise NotMapped(f"{len(ws)} weights in one direction")
    out = []
    for w in ws[:2]:  # (rows, gates * units) -> (1, gates * units, rows)
        rows = c.tensors[w].shape[0]
        g = c.op("Reshape", [w, c.ints([rows, gates, units], "split")])
        if cls == "LSTM":
            g = c.op("Gather", [g, c.ints([0, 3, 1, 2], "iofc")], {"axis": 1})
        g = c.op("Transpose", [g], {"perm": [1, 2, 0]})
        out.append(c.op("Reshape", [g, c.ints([1, gates * units, rows], "onnx")]))
    if not bias:
        return out
    b = ws[2]
    if cls == "GRU" and cfg.get("reset_after", True):  # (2, 3u): input then recurrent bias
        out.append(c.op("Reshape", [b, c.ints([1, 2 * gates * units], "bias")]))
        return out
    g = c.op("Reshape", [b, c.ints([gates, units], "split")])
    if cls == "LSTM":
        g = c.op("Gather", [g, c.ints([0, 3, 1, 2], "iofc")], {"axis": 0})
    g = c.op("Reshape", [g, c.ints([1, gates * units], "bias")])
    zeros = c.op("Sub", [g, g])
    out.append(c.op("Concat", [g, zeros], {"axis": 1}))
    return out


def _attrs(cls: str, cfg: dict[str, Any], direction: str) -> dict[str, Any]:
    act = _act(cfg, "activation", "tanh")
    if cls == "SimpleRNN":
        acts = [act]
    else:
        rec = _act(cfg, "recurrent_activation", "sigmoid")
        acts = [rec, act, act] if cls == "LSTM" else [rec, act]
    dirs = 2 if direction == "bidirectional" else 1
    attrs: dict[str, Any] = {
        "hidden_size": int(cfg["units"]),
        "direction": direction,
        "layout": 1,
        "activations": acts * dirs,
    }
    if cls == "GRU":
        attrs["linear_before_reset"] = 1 if cfg.get("reset_after", True) else 0
    return attrs


def _run(c: Call, cls: str, cfg: dict[str, Any], params: list[int], direction: str) -> int:
    """ONNX's Y: (batch, steps, directions, units)."""
    return c.op(_ONNX[cls], [c.x, *params], _attrs(cls, cfg, direction))  # W, R (and B)


def _single(c: Call, cls: str) -> int:
    cfg = c.config
    _check(cls, cfg)
    back = bool(cfg.get("go_backwards", False))
    params = _weights(c, cls, cfg, c.weights)
    y = _run(c, cls, cfg, params, "reverse" if back else "forward")
    if cfg.get("return_sequences", False):
        if back:  # Keras returns the walk's order: last step first
            flip = [c.ints([-1], "s"), c.ints([-_END], "e"), c.ints([1], "a"), c.ints([-1], "k")]
            y = c.op("Slice", [y, *flip])
        return c.op("Reshape", [y, c.ints([0, 0, -1], "shape")])
    step = c.const(0 if back else -1, "int64", "step")  # the walk's last step
    last = c.op("Gather", [y, step], {"axis": 1})
    return c.op("Reshape", [last, c.ints([0, -1], "shape")])


def _layer(cls: str) -> Lower:
    def lower(c: Call) -> int:
        return _single(c, cls)

    return lower


def _bidirectional(c: Call) -> int:
    inner = c.cfg("layer")
    if not isinstance(inner, dict) or not isinstance(inner.get("config"), dict):
        raise NotMapped("the wrapped layer's config is missing")
    cls, cfg = str(inner.get("class_name")), inner["config"]
    _check(cls, cfg)
    if cfg.get("go_backwards"):
        raise NotMapped("a Bidirectional around a go_backwards layer")
    back = c.cfg("backward_layer", None)  # given by the user: must be the forward one reversed
    if isinstance(back, dict):
        raw = back.get("config")
        other: dict[str, Any] = raw if isinstance(raw, dict) else {}
        keys = ("units", "activation", "recurrent_activation", "use_bias", "reset_after")
        same = back.get("class_name") == cls and all(other.get(k) == cfg.get(k) for k in keys)
        if not same or not other.get("go_backwards"):
            raise NotMapped("a backward_layer that is not the forward layer reversed")
    ws = by_sublayer(c, lambda p: p[-4] if "vars" in p[-2:] else p[-3], ("forward", "backward"))
    half = len(ws) // 2
    fw, bw = _weights(c, cls, cfg, ws[:half]), _weights(c, cls, cfg, ws[half:])
    params = [c.op("Concat", [a, b], {"axis": 0}) for a, b in zip(fw, bw, strict=True)]
    y = _run(c, cls, cfg, params, "bidirectional")  # (batch, steps, 2, units)
    if not cfg.get("return_sequences", False):  # forward's last step, backward's first
        f = c.op("Slice", [y, c.ints([-1, 0], "s"), c.ints([_END, 1], "e"), c.ints([1, 2], "a")])
        b = c.op("Slice", [y, c.ints([0, 1], "s"), c.ints([1, 2], "e"), c.ints([1, 2], "a")])
        y = c.op("Concat", [f, b], {"axis": 2})
    merge = c.cfg("merge_mode", None)
    if merge == "concat":
        y = c.op("Reshape", [y, c.ints([0, 0, -1], "shape")])
    elif merge in _MERGE:
        y = c.op(_MERGE[str(merge)], [y, c.ints([2], "axes")], {"keepdims": 0})
    else:
        raise NotMapped(f"merge_mode {merge!r}")
    if not cfg.get("return_sequences", False):
        y = c.op("Squeeze", [y, c.ints([1], "axis")])
    return y


RECURRENT: dict[str, Lower] = {
    **{cls: _layer(cls) for cls in _GATES},
    "Bidirectional": _bidirectional,
}
