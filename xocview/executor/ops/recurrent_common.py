"""The LSTM, GRU and RNN kernels' machinery: activations, input projection, masks, time loops."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from xocview.executor.ops.activation import sigmoid

__all__ = [
    "Activation",
    "Gate",
    "Recurrence",
    "activation_slots",
    "check_shapes",
    "clipper",
    "compute_dtype",
    "gru_steps",
    "lstm_steps",
    "prepare",
    "reverse_flags",
    "rnn_steps",
    "split_bias",
]

Gate = Callable[[np.ndarray], np.ndarray]


def _sigmoid(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    """The Sigmoid op's kernel (no alpha or beta): a gate is applied once per step."""
    return sigmoid(x)


def _elu(x: np.ndarray, alpha: float, beta: float) -> np.ndarray:
    return np.where(x >= 0, x, alpha * np.expm1(np.minimum(x, 0)))


# name (lower case) -> (function of x, alpha, beta; does it use alpha; does it use beta)
_FUNCTIONS: dict[str, tuple[Callable[[np.ndarray, float, float], np.ndarray], bool, bool]] = {
    "relu": (lambda x, a, b: np.maximum(x, 0), False, False),
    "tanh": (lambda x, a, b: np.tanh(x), False, False),
    "sigmoid": (_sigmoid, False, False),
    "affine": (lambda x, a, b: a * x + b, True, True),
    "leakyrelu": (lambda x, a, b: np.where(x >= 0, x, a * x), True, False),
    # the ThresholdedRelu operator (and onnxruntime) keep x only above alpha, strictly
    "thresholdedrelu": (lambda x, a, b: np.where(x > a, x, 0), True, False),
    "scaledtanh": (lambda x, a, b: a * np.tanh(b * x), True, True),
    "hardsigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), True, True),
    "elu": (_elu, True, False),
    "softsign": (lambda x, a, b: x / (1 + np.abs(x)), False, False),
    "softplus": (lambda x, a, b: np.logaddexp(x, 0), False, False),
}

# The spec: "default values are the same as of corresponding ONNX operators". onnxruntime uses
# 0 where an operator has no entry in its own table (Affine, ThresholdedRelu, ScaledTanh); we
# follow the operators: Affine(1, 0), ThresholdedRelu(1). ScaledTanh (an experimental operator)
# never had defaults; (1, 1) makes it a plain Tanh.
_DEFAULTS: dict[str, tuple[float, float]] = {
    "affine": (1.0, 0.0),
    "leakyrelu": (0.01, 0.0),
    "thresholdedrelu": (1.0, 0.0),
    "scaledtanh": (1.0, 1.0),
    "hardsigmoid": (0.2, 0.5),
    "elu": (1.0, 0.0),
}


@dataclass(frozen=True)
class Activation:
    """One activation function with its alpha and beta bound."""

    name: str
    alpha: float = 0.0
    beta: float = 0.0

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return _FUNCTIONS[self.name][0](x, self.alpha, self.beta)


def _resolve(
    names: Sequence[str | bytes], alphas: Sequence[float], betas: Sequence[float]
) -> list[Activation]:
    """Bind alphas and betas in list order, each consumed only by a function that takes one.

    Raises ValueError for an unknown name, listing the supported ones.
    """
    alpha_left, beta_left = list(alphas), list(betas)
    out = []
    for raw in names:
        name = (raw.decode() if isinstance(raw, bytes) else raw).lower()
        if name not in _FUNCTIONS:
            known = ", ".join(sorted(_FUNCTIONS))
            raise ValueError(f"activation {raw!r} is not supported; expected one of {known}")
        _, takes_alpha, takes_beta = _FUNCTIONS[name]
        alpha, beta = _DEFAULTS.get(name, (0.0, 0.0))
        if takes_alpha and alpha_left:
            alpha = float(alpha_left.pop(0))
        if takes_beta and beta_left:
            beta = float(beta_left.pop(0))
        out.append(Activation(name, alpha, beta))
    return out


def _per_direction(acts: list[Activation]) -> Gate:
    """One gate function over a (directions, ...) array, each direction with its activation."""
    if all(a == acts[0] for a in acts):
        return acts[0]
    return lambda x: np.stack([act(x[d]) for d, act in enumerate(acts)])


def activation_slots(
    activations: Sequence[str | bytes] | None,
    alphas: Sequence[float] | None,
    betas: Sequence[float] | None,
    defaults: Sequence[str],
    num_directions: int,
) -> list[Gate]:
    """The op's gate functions (f, g, h for LSTM), each applying every direction's own choice.

    A list naming one direction's functions serves both directions of a bidirectional node;
    a longer list than needed (RNN's default ``[Tanh, Tanh]`` on one direction) is cut.
    Raises ValueError for a list too short or an unknown name.
    """
    per, need = len(defaults), len(defaults) * num_directions
    acts = _resolve(activations or list(defaults) * num_directions, alphas or [], betas or [])
    if len(acts) == per and num_directions == 2:
        acts = acts * 2
    if len(acts) < need:
        raise ValueError(f"activations: {len(acts)} given; expected {need} ({per} per direction)")
    return [_per_direction(acts[k:need:per]) for k in range(per)]


def reverse_flags(direction: str | bytes) -> list[bool]:
    """Per direction, whether it walks the sequence backwards.

    GRU-1's schema spells its default "foward"; it is read as forward. Raises ValueError for
    anything else unknown.
    """
    name = direction.decode() if isinstance(direction, bytes) else direction
    flags = {"forward": [False], "foward": [False], "reverse": [True]}
    flags["bidirectional"] = [False, True]
    if name not in flags:
        raise ValueError(
            f"direction {name!r} is not supported; expected forward, reverse or bidirectional"
        )
    return flags[name]


def check_shapes(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray | None,
    gates: int,
    num_directions: int,
    hidden_size: int | None,
) -> int:
    """The hidden size, after checking X, W, R and B agree with it and with the direction.

    Raises ValueError naming the input whose shape is wrong and the shape expected.
    """
    hidden = int(r.shape[-1]) if r.ndim == 3 else -1
    if hidden_size is not None and hidden != hidden_size:
        raise ValueError(f"R has shape {r.shape}; hidden_size is {hidden_size}")
    if x.ndim != 3:
        raise ValueError(f"X has shape {x.shape}; expected 3 dimensions")
    expected: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
        "W": (w.shape, (num_directions, gates * hidden, x.shape[-1])),
        "R": (r.shape, (num_directions, gates * hidden, hidden)),
    }
    if b is not None:
        expected["B"] = (b.shape, (num_directions, 2 * gates * hidden))
    for name, (got, want) in expected.items():
        if tuple(got) != want:
            raise ValueError(f"{name} has shape {tuple(got)}; expected {want}")
    return hidden


def _unclipped(x: np.ndarray) -> np.ndarray:
    return x


def clipper(clip: float | None) -> Gate:
    """Clip to [-clip, clip] before an activation, or pass through when there is no clip."""
    if clip is None:
        return _unclipped
    bound = float(clip)
    return lambda x: np.clip(x, -bound, bound)


def split_bias(
    b: np.ndarray | None, width: int, num_directions: int, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """Wb and Rb, each (directions, width); zeros when B is omitted."""
    if b is None:
        zeros = np.zeros((num_directions, width), dtype)
        return zeros, zeros
    b = b.astype(dtype, copy=False)
    return b[:, :width], b[:, width:]


@dataclass
class Recurrence:
    """A node's inputs arranged for the time loop, and how to turn its results into outputs.

    ``x_proj[t, d]`` is step ``t`` of direction ``d`` in the order that direction walks its
    sequence (a reverse direction walks each batch row's valid steps backwards).
    """

    x_proj: np.ndarray  # (steps, directions, batch, gates*hidden): X @ W^T + input bias
    r_t: np.ndarray  # (directions, hidden, gates*hidden): R transposed
    masks: np.ndarray | None  # (steps, 1, batch, 1): step t is inside row b; None: all are
    reverse: list[bool]  # per direction: walks backwards
    back: np.ndarray | None  # (steps, batch): a backward walk's time steps; None: a plain flip
    lens: np.ndarray  # (batch,)
    steps: int  # steps any row needs (the longest sequence)
    layout: int
    dtype: np.dtype  # the dtype of the outputs

    def initial(self, state: np.ndarray | None, hidden: int) -> np.ndarray:
        """initial_h or initial_c as (directions, batch, hidden); zeros when omitted."""
        d, b = self.x_proj.shape[1], self.x_proj.shape[2]
        if state is None:
            return np.zeros((d, b, hidden), self.x_proj.dtype)
        state = state.astype(self.x_proj.dtype, copy=False)
        return state.transpose(1, 0, 2) if self.layout == 1 else state

    def keep(self, t: int, new: np.ndarray, old: np.ndarray) -> np.ndarray:
        """The new state where step t is inside the row's sequence, else the old one."""
        return new if self.masks is None else np.where(self.masks[t], new, old)

    def emit(self, t: int, h: np.ndarray) -> np.ndarray:
        """Y's value for step t: h, zero past the end of a row's sequence."""
        return h if self.masks is None else np.where(self.masks[t], h, 0)

    def outputs(self, y: np.ndarray, finals: list[np.ndarray]) -> tuple[np.ndarray, ...]:
        """Y (steps in time order) and the final states, in the node's layout and dtype.

        An empty sequence's final states are zero, as onnxruntime makes them.
        """
        _reorder(y, self.reverse, self.back)
        finals = [np.where((self.lens == 0)[None, :, None], 0, s) for s in finals]
        if self.layout == 1:
            y = y.transpose(2, 0, 1, 3)
            finals = [s.transpose(1, 0, 2) for s in finals]
        return tuple(np.ascontiguousarray(a, dtype=self.dtype) for a in (y, *finals))


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """float16 steps are computed in float32 (as onnxruntime does) and cast back at the end."""
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _backward_walk(lens: np.ndarray, steps: int) -> np.ndarray | None:
    """The time step a backward walk visits at each of its steps, per row (None: a plain flip).

    Row b's steps len-1 .. 0 come first; padding keeps its place. The map is its own inverse,
    so the same index puts Y back into time order.
    """
    if (lens == steps).all():
        return None
    t = np.arange(steps)[:, None]
    return np.where(t < lens[None, :], lens[None, :] - 1 - t, t)


def _reorder(a: np.ndarray, reverse: list[bool], back: np.ndarray | None) -> None:
    """In place on (steps, directions, batch, k): swap each backward direction between walk
    order and time order (the swap is its own inverse)."""
    for d in (d for d, backwards in enumerate(reverse) if backwards):
        if back is None:
            a[:, d] = a[::-1, d].copy()
        else:
            a[:, d] = np.take_along_axis(a[:, d], back[..., None], axis=0)


def prepare(
    x: np.ndarray,
    w: np.ndarray,
    r: np.ndarray,
    input_bias: np.ndarray,
    sequence_lens: np.ndarray | None,
    reverse: list[bool],
    layout: int,
    projected: np.ndarray | None = None,
) -> Recurrence:
    """Project every step of X through W for all directions in one matmul, then order the steps.

    ``input_bias`` (directions, gates*hidden) is added to the projection once, not per step.
    ``projected`` (steps * batch, directions * gates*hidden) is X @ W^T made by the caller (a
    quantized product); W then only gives the shapes.
    """
    dtype = compute_dtype(x.dtype)
    if layout == 1:
        x = x.transpose(1, 0, 2)
    steps, batch, width = x.shape
    d, gh = w.shape[0], w.shape[1]
    if projected is None:
        w_all = w.astype(dtype, copy=False).reshape(d * gh, width)
        projected = x.astype(dtype, copy=False).reshape(steps * batch, width) @ w_all.T
    proj = projected.reshape(steps, batch, d, gh)
    x_proj = np.empty((steps, d, batch, gh), dtype)
    for k in range(d):  # one pass per direction: add the bias, move to (steps, directions, ...)
        np.add(proj[:, :, k], input_bias[k].astype(dtype, copy=False), out=x_proj[:, k])
    if sequence_lens is None:
        lens = np.full(batch, steps, np.int64)
    else:
        lens = np.asarray(sequence_lens, np.int64).reshape(batch)
        if ((lens < 0) | (lens > steps)).any():
            raise ValueError(f"sequence_lens {lens.tolist()}: each must be in 0..{steps}")
    back = _backward_walk(lens, steps)
    _reorder(x_proj, reverse, back)
    masks = None if back is None else (np.arange(steps)[:, None] < lens)[:, None, :, None]
    r_t = np.ascontiguousarray(r.astype(dtype, copy=False).transpose(0, 2, 1))
    longest = int(lens.max()) if batch else 0
    return Recurrence(x_proj, r_t, masks, reverse, back, lens, longest, layout, x.dtype)


def lstm_steps(
    seq: Recurrence,
    h: np.ndarray,
    c: np.ndarray,
    peep: np.ndarray | None,
    gates: list[Gate],
    clip: Gate,
    input_forget: int,
    recur: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """LSTM's Y, final H and final C; per step only h @ R^T, as X @ W^T is in ``seq`` already.
    ``recur``: that product computed otherwise (DynamicQuantizeLSTM quantizes h per step).

    Gate order in W, R and B is i, o, f, c; in P it is i, o, f.
    """
    f, g, h_act = gates
    y = np.zeros((seq.x_proj.shape[0], *h.shape), h.dtype)
    plain = peep is None and not input_forget and clip is _unclipped and seq.masks is None
    if recur is None and plain and f == _SIGMOID and g == _TANH and h_act == _TANH:
        return _plain_lstm_steps(seq, h, c, y)
    for t in range(seq.steps):
        rh = h @ seq.r_t if recur is None else recur(h)
        i, o, fg, cell = np.split(seq.x_proj[t] + rh, 4, axis=-1)
        if peep is not None:
            i, fg = i + peep[0] * c, fg + peep[2] * c
        i = f(clip(i))
        # input_forget couples the gates: whatever is let in is forgotten (onnxruntime's reading)
        fg = 1 - i if input_forget else f(clip(fg))
        c_new = fg * c + i * g(clip(cell))
        if peep is not None:
            o = o + peep[1] * c_new
        # The spec clips "the input of activations", h's too; onnxruntime leaves Ct unclipped
        # before h (its clipped-Ct buffer goes unused). The state itself is never clipped.
        h_new = f(clip(o)) * h_act(clip(c_new))
        y[t] = seq.emit(t, h_new)
        h, c = seq.keep(t, h_new, h), seq.keep(t, c_new, c)
    return y, h, c


_SIGMOID, _TANH = Activation("sigmoid"), Activation("tanh")


def _plain_lstm_steps(
    seq: Recurrence, h: np.ndarray, c: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The default LSTM (sigmoid, tanh, tanh; no peepholes, clip or padding) with few numpy
    calls a step: the three sigmoid gates in one block, in place; the models exporters write
    spend their time in this loop's per-call cost, not in its arithmetic."""
    hidden = h.shape[-1]
    c = np.array(c, copy=True)
    for t in range(seq.steps):
        z = np.matmul(h, seq.r_t)
        z += seq.x_proj[t]
        gates = z[..., : 3 * hidden]  # i, o, f: 1 / (1 + e^-x), e^-x -> inf gives 0
        np.negative(gates, out=gates)
        with np.errstate(over="ignore"):
            np.exp(gates, out=gates)
        gates += 1
        np.reciprocal(gates, out=gates)
        cell = np.tanh(z[..., 3 * hidden :])
        cell *= gates[..., :hidden]
        c *= gates[..., 2 * hidden :]
        c += cell
        h = np.tanh(c)
        h *= gates[..., hidden : 2 * hidden]
        y[t] = h
    return y, h, c


def gru_steps(
    seq: Recurrence,
    h: np.ndarray,
    rb_h: np.ndarray,
    gates: list[Gate],
    clip: Gate,
    linear_before_reset: int,
) -> tuple[np.ndarray, np.ndarray]:
    """GRU's Y and final H. Gate order is z, r, h.

    With ``linear_before_reset`` one h @ R^T serves all three gates; without it the hidden
    gate needs (r * h) @ Rh^T, a second, smaller matmul once r is known.
    """
    f, g = gates
    hidden = h.shape[-1]
    r_zr = np.ascontiguousarray(seq.r_t[..., : 2 * hidden])
    r_h = np.ascontiguousarray(seq.r_t[..., 2 * hidden :])
    y = np.zeros((seq.x_proj.shape[0], *h.shape), h.dtype)
    for t in range(seq.steps):
        xp = seq.x_proj[t]
        hr = h @ (seq.r_t if linear_before_reset else r_zr)
        z, reset = np.split(f(clip(xp[..., : 2 * hidden] + hr[..., : 2 * hidden])), 2, axis=-1)
        if linear_before_reset:
            pre = xp[..., 2 * hidden :] + reset * (hr[..., 2 * hidden :] + rb_h)
        else:
            pre = xp[..., 2 * hidden :] + (reset * h) @ r_h
        h_new = (1 - z) * g(clip(pre)) + z * h
        y[t] = seq.emit(t, h_new)
        h = seq.keep(t, h_new, h)
    return y, h


def rnn_steps(seq: Recurrence, h: np.ndarray, f: Gate, clip: Gate) -> tuple[np.ndarray, np.ndarray]:
    """RNN's Y and final H: Ht = f(Xt W^T + Wb + Rb + Ht-1 R^T), the first terms in ``seq``."""
    y = np.zeros((seq.x_proj.shape[0], *h.shape), h.dtype)
    for t in range(seq.steps):
        h_new = f(clip(seq.x_proj[t] + h @ seq.r_t))
        y[t] = seq.emit(t, h_new)
        h = seq.keep(t, h_new, h)
    return y, h
