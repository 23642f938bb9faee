"""Mappings of TFLite's fused recurrent builtins onto ONNX LSTM and RNN, merged into the one
table of ``ops``.

TFLite keeps each gate's weights as its own tensor (gates i, f, c, o); ONNX stacks them in one
weight per direction in the order i, o, f, c. The fused activation of these operators is the
cell's activation, not one after the output. A state input that is a variable tensor starts at
zeros, which is ONNX's default, so it is left out. Projection and layer-normalised LSTMs have
no ONNX form and stay unmapped.

TFLite's ``cell_clip`` bounds the cell state; ONNX's ``clip`` bounds the gates' inputs, another
thing, so it is not written: the result is TFLite's as long as no cell state passes the bound
(the converter writes 10 for a Keras LSTM). The node says so in its metadata.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.tflite.lower import Lower, NotMapped

__all__ = ["RECURRENT"]

Map = Callable[[Lower], None]
_ACTIVATIONS = {"TANH": "Tanh", "RELU": "Relu", "SIGMOID": "Sigmoid", "NONE": "Affine"}
_ONNX_ORDER = (0, 3, 1, 2)  # TFLite's (i, f, c, o) picked as ONNX's (i, o, f, c)


def _stacked(e: Lower, slots: list[int], label: str) -> int:
    """The four gates' tensors (TFLite order) stacked in ONNX order on a leading axis of 1."""
    parts = [e.x(slots[k]) for k in _ONNX_ORDER]
    whole = e.op1("Concat", parts, attrs={"axis": 0})
    return e.op1("Unsqueeze", [whole, e.i64([0], f"{label}_axis")])


def _state(e: Lower, k: int) -> int | None:
    """A state input as ONNX's (1, batch, hidden), None when it is a variable (zeros)."""
    if not e.has(k) or e.tensors[e.x(k)].metadata.get("is_variable"):
        return None
    return e.op1("Unsqueeze", [e.x(k), e.i64([0], "state_axis")])


def _activation(e: Lower) -> dict[str, object]:
    act = str(e.opt("fused_activation_function", "TANH"))
    if act not in _ACTIVATIONS:
        raise NotMapped(f"a recurrent cell activation {act}")
    return {"name": _ACTIVATIONS[act], "alpha": [1.0], "beta": [0.0]}


def _sequence_out(e: Lower, y: int, time_major: bool) -> None:
    """ONNX's Y (with its direction axis) squeezed into the operator's output."""
    e.op("Squeeze", [y, e.i64([1 if time_major else 2], "directions")], out=[e.outs[0]])


def _lstm_weights(e: Lower, o: int) -> list[int | None]:
    """W, R, B and P (ONNX, one direction) from the 17 slots after ``o`` (0: forward)."""
    if not e.has(o + 1):
        raise NotMapped("a coupled input and forget gate (CIFG)")
    if e.has(o + 16):
        raise NotMapped("a projection LSTM")
    hidden = e.dim(e.x(o + 2), 0)
    w = _stacked(e, [o + 1, o + 2, o + 3, o + 4], "w")
    r = _stacked(e, [o + 5, o + 6, o + 7, o + 8], "r")
    bias = e.op1("Concat", [e.x(o + k) for k in (12, 15, 13, 14)], attrs={"axis": 0})
    zeros = e.const([0.0] * 4 * hidden, e.dtype(bias), "recurrent_bias")
    b = e.op1("Unsqueeze", [e.op1("Concat", [bias, zeros], attrs={"axis": 0}), e.i64([0], "b")])
    peep = None
    if any(e.has(o + k) for k in (9, 10, 11)):
        ps = e.op1("Concat", [e.x(o + 9), e.x(o + 11), e.x(o + 10)], attrs={"axis": 0})
        peep = e.op1("Unsqueeze", [ps, e.i64([0], "p")])
    return [w, r, b, peep]


def _lstm_attrs(e: Lower, hidden: int, directions: int) -> dict[str, object]:
    act = _activation(e)["name"]
    attrs: dict[str, object] = {
        "hidden_size": hidden,
        "activations": ["Sigmoid", act, act] * directions,
        "layout": 0 if e.opt("time_major", False) else 1,
    }
    if act == "Affine":
        attrs["activation_alpha"] = [1.0, 1.0, 1.0] * directions
        attrs["activation_beta"] = [0.0, 0.0, 0.0] * directions
    return attrs


def _lstm(e: Lower, ins: list[int | None], attrs: dict[str, object]) -> int:
    y = e.fresh("y", e.dtype(e.x(0)))
    e.op("LSTM", ins, attrs, out=[y])
    clip = float(e.opt("cell_clip", 0.0))
    if clip > 0:
        e.nodes[-1].metadata["cell_clip"] = f"{clip:g}, not applied (exact while |c| <= {clip:g})"
    return y


def unidirectional_lstm(e: Lower) -> None:
    if any(e.has(k) for k in range(20, 24)):
        raise NotMapped("a layer-normalised LSTM")
    w, r, b, peep = _lstm_weights(e, 0)
    attrs = _lstm_attrs(e, e.dim(e.x(2), 0), 1)
    y = _lstm(e, [e.x(0), w, r, b, None, _state(e, 18), _state(e, 19), peep], attrs)
    _sequence_out(e, y, bool(e.opt("time_major", False)))


def _both(e: Lower, parts: list[int | None], label: str) -> int | None:
    """The forward and backward direction's tensors stacked on ONNX's direction axis."""
    if parts[0] is None and parts[1] is None:
        return None
    if parts[0] is None or parts[1] is None:
        raise NotMapped(f"{label} in one direction only")
    return e.op1("Concat", parts, attrs={"axis": 0})


def bidirectional_lstm(e: Lower) -> None:
    """Both directions in one ONNX LSTM; merged outputs put the backward one after the
    forward one on the last axis, as ONNX's direction axis reshaped away does."""
    if e.has(39):
        raise NotMapped("an auxiliary input")
    fw, bw = _lstm_weights(e, 0), _lstm_weights(e, 17)
    w, r, b, peep = (_both(e, [f, g], n) for f, g, n in zip(fw, bw, "WRBP", strict=True))
    states = []
    for k in (35, 36):
        states.append(_both(e, [_state(e, k), _state(e, k + 2)], "an initial state"))
    hidden = e.dim(e.x(2), 0)
    time_major = bool(e.opt("time_major", True))
    attrs = _lstm_attrs(e, hidden, 2)
    attrs["direction"], attrs["layout"] = "bidirectional", 0 if time_major else 1
    y = _lstm(e, [e.x(0), w, r, b, None, *states, peep], attrs)
    if time_major:
        y = e.op1("Transpose", [y], attrs={"perm": [0, 2, 1, 3]})
    if e.opt("merge_outputs", False):
        shape = [0, 0, 2 * hidden]
        e.op("Reshape", [y, e.i64(shape, "merged")], out=[e.outs[0]])
        return
    halves = [e.fresh("half", e.dtype(y)) for _ in range(2)]
    e.op("Split", [y], {"axis": 2, "num_outputs": 2}, out=halves)
    for half, out in zip(halves, e.outs, strict=True):
        e.op("Squeeze", [half, e.i64([2], "direction")], out=[out])


def unidirectional_rnn(e: Lower) -> None:
    """h = act(x W^T + h R^T + b) over the sequence."""
    hidden = e.dim(e.x(1), 0)
    time_major = bool(e.opt("time_major", False))
    act = _activation(e)
    axis = e.i64([0], "axis")
    w = e.op1("Unsqueeze", [e.x(1), axis])
    r = e.op1("Unsqueeze", [e.x(2), axis])
    zeros = e.const([0.0] * hidden, e.dtype(e.x(3)), "recurrent_bias")
    b = e.op1("Unsqueeze", [e.op1("Concat", [e.x(3), zeros], attrs={"axis": 0}), axis])
    attrs: dict[str, object] = {
        "hidden_size": hidden,
        "activations": [act["name"]],
        "layout": 0 if time_major else 1,
    }
    if act["name"] == "Affine":
        attrs["activation_alpha"], attrs["activation_beta"] = [1.0], [0.0]
    y = e.fresh("y", e.dtype(e.x(0)))
    e.op("RNN", [e.x(0), w, r, b, None, _state(e, 4)], attrs, out=[y])
    _sequence_out(e, y, time_major)


RECURRENT: dict[str, Map] = {
    "UNIDIRECTIONAL_SEQUENCE_LSTM": unidirectional_lstm,
    "UNIDIRECTIONAL_SEQUENCE_RNN": unidirectional_rnn,
    "BIDIRECTIONAL_SEQUENCE_LSTM": bidirectional_lstm,
}
