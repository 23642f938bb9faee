"""onnxruntime's DynamicQuantizeLSTM (com.microsoft): an LSTM whose W and R are 8-bit and whose
activations are quantized on the fly, as its CPU kernel does.

X (all steps at once) and, at every step, each direction's hidden state are quantized to uint8
as DynamicQuantizeLinear does (range widened to 0, scale range / 255); the integer products
with W and R are scaled by the two scales back to float32. The rest is the ONNX LSTM of
recurrent_common: gates i, o, f, c, activations, clip, peepholes, sequence_lens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.contrib_qlinear import MS
from xocview.executor.ops.quantize import EIGHT_BIT, check_dtype, dynamic_quantize_linear
from xocview.executor.ops.recurrent_common import (
    activation_slots,
    check_shapes,
    clipper,
    lstm_steps,
    prepare,
    reverse_flags,
    split_bias,
)
from xocview.executor.registry import kernel

__all__ = ["dynamic_quantize_lstm"]

F32 = np.float32


class _Weights:
    """One 8-bit weight (directions, K, 4*hidden) with its scales and zero points per
    direction (one value, or one per output column)."""

    def __init__(
        self, op: str, name: str, w: np.ndarray, scale: np.ndarray | None, zero: np.ndarray | None
    ) -> None:
        check_dtype(op, name, w, EIGHT_BIT)
        if scale is None or zero is None:
            raise ValueError(f"{op}: {name}_scale and {name}_zero_point are required")
        check_dtype(op, f"{name}_zero_point", zero, (w.dtype,))
        d, cols = w.shape[0], w.shape[2]
        for pname, p in ((f"{name}_scale", scale), (f"{name}_zero_point", zero)):
            if p.shape not in ((d,), (d, cols)):
                raise ValueError(
                    f"{op}: {pname} has shape {list(p.shape)}; expected [{d}] or [{d}, {cols}]"
                )
        self.w = w.astype(np.float64) - zero.astype(np.float64).reshape(d, 1, -1)
        self.scale = scale.astype(F32).reshape(d, 1, -1)

    def times(self, a: np.ndarray, d: int) -> np.ndarray:
        """a @ W[d] with a quantized on the fly: float32(integer product) * a_scale * w_scale."""
        q, a_scale, a_zero = dynamic_quantize_linear(np.ascontiguousarray(a, dtype=F32))
        acc = (q.astype(np.float64) - float(a_zero)) @ self.w[d]
        return acc.astype(F32) * (a_scale * self.scale[d])


@kernel("DynamicQuantizeLSTM", domain=MS)
def dynamic_quantize_lstm(
    X: np.ndarray,
    W: np.ndarray,
    R: np.ndarray,
    B: np.ndarray | None = None,
    sequence_lens: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    initial_c: np.ndarray | None = None,
    P: np.ndarray | None = None,
    W_scale: np.ndarray | None = None,
    W_zero_point: np.ndarray | None = None,
    R_scale: np.ndarray | None = None,
    R_zero_point: np.ndarray | None = None,
    *,
    activation_alpha: Sequence[float] | None = None,
    activation_beta: Sequence[float] | None = None,
    activations: Sequence[str | bytes] | None = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    input_forget: int = 0,
    num_outputs: int = 3,
) -> tuple[np.ndarray, ...]:
    """Y, Y_h, Y_c of the LSTM with W [directions, input, 4*hidden] and R [directions,
    hidden, 4*hidden] (transposed from ONNX's LSTM), dequantized per direction or per column."""
    op = "DynamicQuantizeLSTM"
    check_dtype(op, "X", X, (np.dtype(F32),))
    reverse = reverse_flags(direction)
    d = len(reverse)
    if W.ndim != 3 or R.ndim != 3:
        raise ValueError(f"{op}: W {list(W.shape)} and R {list(R.shape)} must have rank 3")
    hidden = check_shapes(X, W.transpose(0, 2, 1), R.transpose(0, 2, 1), B, 4, d, hidden_size)
    w = _Weights(op, "W", W, W_scale, W_zero_point)
    r = _Weights(op, "R", R, R_scale, R_zero_point)
    steps, batch, width = X.shape
    flat = X.reshape(steps * batch, width)
    projected = np.concatenate([w.times(flat, k) for k in range(d)], axis=1)
    wb, rb = split_bias(B, 4 * hidden, d, np.dtype(F32))
    seq = prepare(X, W.transpose(0, 2, 1), R, wb + rb, sequence_lens, reverse, 0, projected)
    gates = activation_slots(
        activations, activation_alpha, activation_beta, ("Sigmoid", "Tanh", "Tanh"), d
    )
    peep = None
    if P is not None:
        peep = P.astype(F32).reshape(d, 3, 1, hidden).transpose(1, 0, 2, 3)
    h0, c0 = seq.initial(initial_h, hidden), seq.initial(initial_c, hidden)

    def recur(h: np.ndarray) -> np.ndarray:  # h @ R with h quantized, per direction
        return np.stack([r.times(h[k], k) for k in range(h.shape[0])])

    y, h, c = lstm_steps(seq, h0, c0, peep, gates, clipper(clip), input_forget, recur)
    outs = seq.outputs(y, [h, c])
    return outs[: max(1, min(num_outputs, 3))]
