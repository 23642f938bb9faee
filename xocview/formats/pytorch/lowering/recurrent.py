"""torch's LSTM and GRU (``aten::lstm``, ``aten::gru``) as ONNX LSTM and GRU, one per layer.

torch keeps each layer's weights as ``weight_ih`` (gates x input), ``weight_hh`` and two
biases, gates in the order i, f, g, o (LSTM) or r, z, n (GRU); ONNX wants them stacked per
direction in the order i, o, f, c or z, r, h, with one bias of input and hidden halves. The
reordering is written as Split and Concat ops, so it holds for weights and computed tensors
alike. torch's GRU applies the reset gate after the hidden matmul: ``linear_before_reset``.
A layer's output [seq, dirs, batch, hidden] becomes the next layer's input [seq, batch,
dirs * hidden]; ``batch_first`` transposes around the stack, and the final states of every
layer are concatenated as torch returns them.
"""

from __future__ import annotations

from collections.abc import Callable

from xocview.formats.pytorch.lowering.emit import Emit, NotMapped

__all__ = ["rnn"]

# torch's gate blocks in the order ONNX wants them
_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2]}


def rnn(kind: str) -> Callable[[Emit], None]:
    """The lowering of ``aten::lstm`` (kind "LSTM") or ``aten::gru`` ("GRU")."""

    def lower(e: Emit) -> None:
        if e.has("batch_sizes"):
            raise NotMapped("packed sequences")
        if bool(e.arg("train", False)) and float(e.arg("dropout", 0.0)) > 0:
            raise NotMapped("dropout between layers in training mode")
        x, params = e.x("input"), e.xs("params")
        states = e.xs("hx") if kind == "LSTM" else [e.x("hx")]
        layers, dirs = int(e.arg("num_layers")), 2 if bool(e.arg("bidirectional")) else 1
        per = 4 if bool(e.arg("has_biases")) else 2
        if len(params) != layers * dirs * per or len(states) != (2 if kind == "LSTM" else 1):
            raise NotMapped(f"{len(params)} weights for {layers} layers of {dirs} directions")
        hidden = e.dim(params[1], 1)
        batch_first = bool(e.arg("batch_first"))
        perm = e.const([1, 0, 2], "int64", "perm") if batch_first else None
        cur = e.op1("Transpose", [x], attrs={"perm": [1, 0, 2]}) if perm is not None else x
        finals: list[list[int]] = [[] for _ in states]
        for layer in range(layers):
            block = params[layer * dirs * per : (layer + 1) * dirs * per]
            w, r, b = _weights(e, kind, block, dirs, per, hidden)
            first = [_slice(e, s, layer * dirs, dirs) for s in states]
            inputs = [cur, w, r, b, None, *first]
            attrs: dict[str, object] = {
                "hidden_size": hidden,
                "direction": "bidirectional" if dirs == 2 else "forward",
            }
            if kind == "GRU":
                attrs["linear_before_reset"] = 1
            outs = e.op(kind, inputs, attrs, out=1 + len(states))
            for k, t in enumerate(outs[1:]):
                finals[k].append(t)
            seq = e.op1("Transpose", [outs[0]], attrs={"perm": [0, 2, 1, 3]})
            cur = e.op1("Reshape", [seq, e.const([0, 0, -1], "int64", "shape")])
        if batch_first:
            e.op("Transpose", [cur], {"perm": [1, 0, 2]}, out=[e.out(0)])
        else:
            e.op("Identity", [cur], out=[e.out(0)])
        for k, parts in enumerate(finals):
            if e.used(k + 1):
                e.op("Concat", parts, {"axis": 0}, out=[e.out(k + 1)])

    return lower


def _weights(
    e: Emit, kind: str, block: list[int], dirs: int, per: int, hidden: int
) -> tuple[int, int, int | None]:
    """ONNX's W, R and B of one layer from torch's weights of its directions."""
    gates = len(_ORDER[kind])
    ws, rs, bs = [], [], []
    for d in range(dirs):
        own = block[d * per : (d + 1) * per]
        ws.append(_unsqueezed(e, _reordered(e, own[0], kind, gates, hidden)))
        rs.append(_unsqueezed(e, _reordered(e, own[1], kind, gates, hidden)))
        if per == 4:
            halves = [_reordered(e, t, kind, gates, hidden) for t in own[2:]]
            bs.append(_unsqueezed(e, e.op1("Concat", halves, attrs={"axis": 0})))
    w = ws[0] if dirs == 1 else e.op1("Concat", ws, attrs={"axis": 0})
    r = rs[0] if dirs == 1 else e.op1("Concat", rs, attrs={"axis": 0})
    b = None if not bs else bs[0] if dirs == 1 else e.op1("Concat", bs, attrs={"axis": 0})
    return w, r, b


def _reordered(e: Emit, t: int, kind: str, gates: int, hidden: int) -> int:
    sizes = e.const([hidden] * gates, "int64", "gate_sizes")
    blocks = e.op("Split", [t, sizes], {"axis": 0}, out=gates)
    return e.op1("Concat", [blocks[k] for k in _ORDER[kind]], attrs={"axis": 0})


def _unsqueezed(e: Emit, t: int) -> int:
    return e.op1("Unsqueeze", [t, e.const([0], "int64", "axes")])


def _slice(e: Emit, state: int, start: int, count: int) -> int:
    """Layer ``start``'s initial states of every direction: rows start .. start + count."""
    return e.op1(
        "Slice",
        [
            state,
            e.const([start], "int64", "starts"),
            e.const([start + count], "int64", "ends"),
            e.const([0], "int64", "axes"),
        ],
    )
