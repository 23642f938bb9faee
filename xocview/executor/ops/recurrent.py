"""Recurrent kernels: LSTM, GRU and RNN, each direction walked step by step over whole batches."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.recurrent_common import (
    activation_slots,
    check_shapes,
    clipper,
    compute_dtype,
    gru_steps,
    lstm_steps,
    prepare,
    reverse_flags,
    rnn_steps,
    split_bias,
)
from xocview.executor.registry import kernel

Floats = Sequence[float] | None
Names = Sequence[str | bytes] | None
MaybeArray = np.ndarray | None  # an optional input: None when the node omits it


def _trim(outs: tuple[np.ndarray, ...], num_outputs: int) -> tuple[np.ndarray, ...]:
    """Only the outputs the node has a slot for (Y is always first, even when omitted)."""
    return outs[: max(1, num_outputs)]


# ---------------------------------------------------------------------------------------- LSTM


@kernel("LSTM", since=14)
def lstm(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    initial_c: MaybeArray = None,
    p: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    input_forget: int = 0,
    layout: int = 0,
    num_outputs: int = 3,
) -> tuple[np.ndarray, ...]:
    """Returns Y, Y_h, Y_c (as many as the node has slots for); ``layout=1`` is batch-first."""
    reverse = reverse_flags(direction)
    d = len(reverse)
    hidden = check_shapes(x, w, r, b, 4, d, hidden_size)
    dtype = compute_dtype(x.dtype)
    wb, rb = split_bias(b, 4 * hidden, d, dtype)
    seq = prepare(x, w, r, wb + rb, sequence_lens, reverse, layout)
    gates = activation_slots(
        activations, activation_alpha, activation_beta, ("Sigmoid", "Tanh", "Tanh"), d
    )
    peep = None
    if p is not None:  # (directions, 3*hidden) -> (gate, directions, 1, hidden)
        peep = p.astype(dtype, copy=False).reshape(d, 3, 1, hidden).transpose(1, 0, 2, 3)
    h0, c0 = seq.initial(initial_h, hidden), seq.initial(initial_c, hidden)
    y, h, c = lstm_steps(seq, h0, c0, peep, gates, clipper(clip), input_forget)
    return _trim(seq.outputs(y, [h, c]), num_outputs)


@kernel("LSTM", since=7)
def lstm_7(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    initial_c: MaybeArray = None,
    p: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    input_forget: int = 0,
    num_outputs: int = 3,
) -> tuple[np.ndarray, ...]:
    """Opsets 7-13: time-major only (no ``layout``)."""
    return lstm(
        x, w, r, b, sequence_lens, initial_h, initial_c, p,
        activation_alpha=activation_alpha, activation_beta=activation_beta,
        activations=activations, clip=clip, direction=direction, hidden_size=hidden_size,
        input_forget=input_forget, num_outputs=num_outputs,
    )  # fmt: skip


@kernel("LSTM", since=1)
def lstm_1(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    initial_c: MaybeArray = None,
    p: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    input_forget: int = 0,
    output_sequence: int = 0,
    num_outputs: int = 3,
) -> tuple[np.ndarray, ...]:
    """Opsets 1-6: ``output_sequence`` only said whether Y may be omitted; Y is always made."""
    return lstm_7(
        x, w, r, b, sequence_lens, initial_h, initial_c, p,
        activation_alpha=activation_alpha, activation_beta=activation_beta,
        activations=activations, clip=clip, direction=direction, hidden_size=hidden_size,
        input_forget=input_forget, num_outputs=num_outputs,
    )  # fmt: skip


# ----------------------------------------------------------------------------------------- GRU


@kernel("GRU", since=14)
def gru(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    layout: int = 0,
    linear_before_reset: int = 0,
    num_outputs: int = 2,
) -> tuple[np.ndarray, ...]:
    """Returns Y, Y_h (as many as the node has slots for); ``layout=1`` is batch-first.

    Rbh joins the projected input, unless ``linear_before_reset`` puts it inside the reset
    gate's product.
    """
    reverse = reverse_flags(direction)
    d = len(reverse)
    hidden = check_shapes(x, w, r, b, 3, d, hidden_size)
    wb, rb = split_bias(b, 3 * hidden, d, compute_dtype(x.dtype))
    rb_h = rb[:, None, 2 * hidden :]
    if linear_before_reset:
        rb = np.concatenate([rb[:, : 2 * hidden], np.zeros_like(rb[:, 2 * hidden :])], axis=1)
    seq = prepare(x, w, r, wb + rb, sequence_lens, reverse, layout)
    gates = activation_slots(activations, activation_alpha, activation_beta, ("Sigmoid", "Tanh"), d)
    h0 = seq.initial(initial_h, hidden)
    y, h = gru_steps(seq, h0, rb_h, gates, clipper(clip), linear_before_reset)
    return _trim(seq.outputs(y, [h]), num_outputs)


@kernel("GRU", since=7)
def gru_7(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    linear_before_reset: int = 0,
    num_outputs: int = 2,
) -> tuple[np.ndarray, ...]:
    """Opsets 7-13: time-major only (no ``layout``)."""
    return gru(
        x, w, r, b, sequence_lens, initial_h,
        activation_alpha=activation_alpha, activation_beta=activation_beta,
        activations=activations, clip=clip, direction=direction, hidden_size=hidden_size,
        linear_before_reset=linear_before_reset, num_outputs=num_outputs,
    )  # fmt: skip


@kernel("GRU", since=3)
def gru_3(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = None,
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    linear_before_reset: int = 0,
    output_sequence: int = 0,
    num_outputs: int = 2,
) -> tuple[np.ndarray, ...]:
    """Opsets 3-6: ``output_sequence`` only said whether Y may be omitted; Y is always made."""
    return gru_7(
        x, w, r, b, sequence_lens, initial_h,
        activation_alpha=activation_alpha, activation_beta=activation_beta,
        activations=activations, clip=clip, direction=direction, hidden_size=hidden_size,
        linear_before_reset=linear_before_reset, num_outputs=num_outputs,
    )  # fmt: skip


@kernel("GRU", since=1)
def gru_1(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = None,
    clip: float | None = None,
    direction: str = "forward",  # the schema's default is spelled "foward"; both are read
    hidden_size: int | None = None,
    output_sequence: int = 0,
    num_outputs: int = 2,
) -> tuple[np.ndarray, ...]:
    """Opsets 1-2: no ``linear_before_reset`` yet (the reset gate applies before Rh)."""
    return gru_7(
        x, w, r, b, sequence_lens, initial_h,
        activation_alpha=activation_alpha, activation_beta=activation_beta,
        activations=activations, clip=clip, direction=direction, hidden_size=hidden_size,
        num_outputs=num_outputs,
    )  # fmt: skip


# ----------------------------------------------------------------------------------------- RNN


@kernel("RNN", since=14)
def rnn(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = ("Tanh", "Tanh"),
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    layout: int = 0,
    num_outputs: int = 2,
) -> tuple[np.ndarray, ...]:
    """Returns Y, Y_h (as many as the node has slots for); ``layout=1`` is batch-first."""
    reverse = reverse_flags(direction)
    d = len(reverse)
    hidden = check_shapes(x, w, r, b, 1, d, hidden_size)
    wb, rb = split_bias(b, hidden, d, compute_dtype(x.dtype))
    seq = prepare(x, w, r, wb + rb, sequence_lens, reverse, layout)
    (f,) = activation_slots(activations, activation_alpha, activation_beta, ("Tanh",), d)
    y, h = rnn_steps(seq, seq.initial(initial_h, hidden), f, clipper(clip))
    return _trim(seq.outputs(y, [h]), num_outputs)


@kernel("RNN", since=7)
def rnn_7(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = ("Tanh", "Tanh"),
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    num_outputs: int = 2,
) -> tuple[np.ndarray, ...]:
    """Opsets 7-13: time-major only (no ``layout``)."""
    return rnn(
        x, w, r, b, sequence_lens, initial_h,
        activation_alpha=activation_alpha, activation_beta=activation_beta,
        activations=activations, clip=clip, direction=direction, hidden_size=hidden_size,
        num_outputs=num_outputs,
    )  # fmt: skip


@kernel("RNN", since=1)
def rnn_1(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: MaybeArray = None,
    sequence_lens: MaybeArray = None,
    initial_h: MaybeArray = None,
    *,
    activation_alpha: Floats = None,
    activation_beta: Floats = None,
    activations: Names = ("Tanh", "Tanh"),
    clip: float | None = None,
    direction: str = "forward",
    hidden_size: int | None = None,
    output_sequence: int = 0,
    num_outputs: int = 2,
) -> tuple[np.ndarray, ...]:
    """Opsets 1-6: ``output_sequence`` only said whether Y may be omitted; Y is always made."""
    return rnn_7(
        x, w, r, b, sequence_lens, initial_h,
        activation_alpha=activation_alpha, activation_beta=activation_beta,
        activations=activations, clip=clip, direction=direction, hidden_size=hidden_size,
        num_outputs=num_outputs,
    )  # fmt: skip
