"""Signal-processing kernels: DFT, STFT, the Hann, Hamming and Blackman windows and
MelWeightMatrix.

Complex tensors follow ONNX's layout: a trailing axis of 2 (real, imaginary), or of 1 for a
real signal. Transforms run through numpy.fft in complex128 and come back in the input's dtype.
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.constants import onnx_numpy_dtype
from xocview.executor.registry import kernel

__all__ = [
    "blackman_window",
    "dft_17",
    "dft_20",
    "hamming_window",
    "hann_window",
    "mel_weight_matrix",
    "stft",
]


def _floats_only(op: str, x: np.ndarray, name: str = "input") -> None:
    """Raise ValueError ("not supported") unless ``x`` holds floats (ml_dtypes' count too)."""
    if x.dtype.kind not in "fV":
        raise ValueError(f"{op}: {name} dtype {x.dtype} is not supported; expected a float type")


def _scalar(op: str, name: str, x: np.ndarray, kinds: str = "iu") -> np.ndarray:
    """The one element of ``x`` (a scalar or one-element tensor) of a dtype kind in ``kinds``."""
    a = np.asarray(x)
    if a.size != 1 or a.dtype.kind not in kinds:
        raise ValueError(f"{op}: {name} must be a scalar; got {a.dtype} of shape {list(a.shape)}")
    return a.reshape(-1)[0]


def _as_complex(op: str, x: np.ndarray) -> tuple[np.ndarray, bool]:
    """The signal of ``x`` [..., 1 or 2] as complex128 without the trailing axis, and whether
    the input was real (trailing 1)."""
    _floats_only(op, x)
    if x.ndim < 2 or x.shape[-1] not in (1, 2):
        raise ValueError(
            f"{op}: input has shape {list(x.shape)}; expected [..., 1] (real) or [..., 2] (complex)"
        )
    wide = x.astype(np.float64, copy=False)
    if x.shape[-1] == 1:
        return wide[..., 0].astype(np.complex128), True
    return wide[..., 0] + 1j * wide[..., 1], False


def _pack(z: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Complex ``z`` as [..., 2] (real, imaginary) in ``dtype``."""
    return np.stack((z.real, z.imag), axis=-1).astype(dtype)


# --- DFT -----------------------------------------------------------------------------------------


def _dft(
    x: np.ndarray, dft_length: np.ndarray | None, axis: int, inverse: int, onesided: int
) -> np.ndarray:
    """DFT over ``axis`` of x [..., 1 or 2], as DFT-17 and DFT-20 define it."""
    op = "DFT"
    z, real = _as_complex(op, x)
    r = x.ndim
    if not (-r <= axis <= -2 or 0 <= axis <= r - 2):
        raise ValueError(f"{op}: axis {axis} is out of range for rank {r}; the last axis is 2/1")
    ax = axis % r
    if onesided not in (0, 1):
        raise ValueError(f"{op}: onesided {onesided} is not supported; expected 0 or 1")
    if inverse not in (0, 1):
        raise ValueError(f"{op}: inverse {inverse} is not supported; expected 0 or 1")
    dim = x.shape[ax]
    if dft_length is not None:
        n = int(_scalar(op, "dft_length", dft_length))
    else:
        n = 2 * (dim - 1) if inverse and onesided else dim
    if n < 1:
        raise ValueError(f"{op}: dft_length {n} is not supported; expected at least 1")
    if onesided and not inverse:
        if not real:
            raise ValueError(
                f"{op}: onesided=1 with complex input is not supported; the forward one-sided "
                "transform (RFFT) takes real input [..., 1]"
            )
        return _pack(np.fft.rfft(z.real, n=n, axis=ax), x.dtype)
    if onesided and inverse:
        if real:
            raise ValueError(
                f"{op}: onesided=1 with inverse=1 and real input is not supported; the inverse "
                "one-sided transform (IRFFT) takes complex input [..., 2]"
            )
        return np.fft.irfft(z, n=n, axis=ax)[..., np.newaxis].astype(x.dtype)
    fft = np.fft.ifft if inverse else np.fft.fft
    return _pack(fft(z, n=n, axis=ax), x.dtype)


@kernel("DFT", since=17)
def dft_17(
    x: np.ndarray,
    dft_length: np.ndarray | None = None,
    *,
    axis: int = 1,
    inverse: int = 0,
    onesided: int = 0,
) -> np.ndarray:
    """DFT-17: the transform over the ``axis`` attribute of x [..., 1 or 2]; onesided forward
    is RFFT (real input, floor(n/2)+1 bins), onesided inverse is IRFFT (real output [..., 1])."""
    return _dft(x, dft_length, axis, inverse, onesided)


@kernel("DFT", since=20)
def dft_20(
    x: np.ndarray,
    dft_length: np.ndarray | None = None,
    axis: np.ndarray | None = None,
    *,
    inverse: int = 0,
    onesided: int = 0,
) -> np.ndarray:
    """DFT-20: as DFT-17 with the axis an optional scalar input, default -2."""
    ax = -2 if axis is None else int(_scalar("DFT", "axis", axis))
    return _dft(x, dft_length, ax, inverse, onesided)


# --- STFT ----------------------------------------------------------------------------------------


@kernel("STFT", since=17)
def stft(
    signal: np.ndarray,
    frame_step: np.ndarray,
    window: np.ndarray | None = None,
    frame_length: np.ndarray | None = None,
    *,
    onesided: int = 1,
) -> np.ndarray:
    """STFT-17: signal [batch, length, 1 or 2] cut into frames of ``frame_length`` every
    ``frame_step`` samples, each multiplied by ``window`` and transformed; the result is
    [batch, frames, bins, 2] with bins = frame_length // 2 + 1 when onesided, else frame_length.
    """
    op = "STFT"
    z, real = _as_complex(op, signal)
    if signal.ndim != 3:
        raise ValueError(
            f"{op}: signal has shape {list(signal.shape)}; expected [batch, length, 1 or 2]"
        )
    if onesided not in (0, 1):
        raise ValueError(f"{op}: onesided {onesided} is not supported; expected 0 or 1")
    if onesided and not real:
        raise ValueError(f"{op}: onesided=1 with a complex signal is not supported; set onesided=0")
    step = int(_scalar(op, "frame_step", frame_step))
    if step < 1:
        raise ValueError(f"{op}: frame_step {step} is not supported; expected at least 1")
    length = signal.shape[1]
    w: np.ndarray | None = None
    if window is not None:
        _floats_only(op, window, "window")
        if window.ndim != 1:
            raise ValueError(f"{op}: window has shape {list(window.shape)}; expected 1-D")
        w = window.astype(np.float64)
    if frame_length is not None:
        n = int(_scalar(op, "frame_length", frame_length))
        if w is not None and w.shape[0] != n:
            raise ValueError(f"{op}: window has length {w.shape[0]}; frame_length is {n}")
    else:
        n = length if w is None else w.shape[0]
    if not 1 <= n <= length:
        raise ValueError(
            f"{op}: frame_length {n} is not supported; expected 1 to the signal length {length}"
        )
    frames = np.lib.stride_tricks.sliding_window_view(z, n, axis=1)[:, ::step]
    if w is not None:
        frames = frames * w
    spectrum = np.fft.rfft(frames.real, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    return _pack(spectrum, signal.dtype)


# --- windows -------------------------------------------------------------------------------------


def _window(
    op: str, size: np.ndarray, periodic: int, output_datatype: int, coefficients: tuple[float, ...]
) -> np.ndarray:
    """sum_k (-1)^k a_k cos(2 pi k n / N) for n in [0, size), N = size when periodic, else
    size - 1 (a one-point symmetric window is [1]); in float64, then cast to output_datatype."""
    count = int(_scalar(op, "size", size))
    if count < 0:
        raise ValueError(f"{op}: size {count} is not supported; expected a non-negative length")
    if periodic not in (0, 1):
        raise ValueError(f"{op}: periodic {periodic} is not supported; expected 0 or 1")
    dtype = onnx_numpy_dtype(output_datatype, op)
    if dtype.kind not in "iufV":
        raise ValueError(f"{op}: output_datatype {dtype} is not supported; expected a numeric type")
    period = count if periodic else count - 1
    if period <= 0:
        return np.ones(count, dtype=dtype)
    phase = np.arange(count, dtype=np.float64) * (2 * np.pi / period)
    w = np.zeros(count, dtype=np.float64)
    for k, a in enumerate(coefficients):
        w += (-1) ** k * a * np.cos(k * phase)
    return w.astype(dtype)


@kernel("HannWindow", since=17)
def hann_window(size: np.ndarray, *, output_datatype: int = 1, periodic: int = 1) -> np.ndarray:
    """HannWindow-17: 0.5 - 0.5 cos(2 pi n / N)."""
    return _window("HannWindow", size, periodic, output_datatype, (0.5, 0.5))


@kernel("HammingWindow", since=17)
def hamming_window(size: np.ndarray, *, output_datatype: int = 1, periodic: int = 1) -> np.ndarray:
    """HammingWindow-17: 25/46 - 21/46 cos(2 pi n / N)."""
    return _window("HammingWindow", size, periodic, output_datatype, (25 / 46, 21 / 46))


@kernel("BlackmanWindow", since=17)
def blackman_window(size: np.ndarray, *, output_datatype: int = 1, periodic: int = 1) -> np.ndarray:
    """BlackmanWindow-17: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)."""
    return _window("BlackmanWindow", size, periodic, output_datatype, (0.42, 0.5, 0.08))


# --- MelWeightMatrix -----------------------------------------------------------------------------


@kernel("MelWeightMatrix", since=17)
def mel_weight_matrix(
    num_mel_bins: np.ndarray,
    dft_length: np.ndarray,
    sample_rate: np.ndarray,
    lower_edge_hertz: np.ndarray,
    upper_edge_hertz: np.ndarray,
    *,
    output_datatype: int = 1,
) -> np.ndarray:
    """MelWeightMatrix-17: [dft_length // 2 + 1, num_mel_bins] triangular filters, peak 1.

    As onnx's reference and onnxruntime: num_mel_bins + 2 points spaced by
    (mel(upper) - mel(lower)) / (num_mel_bins + 2) from mel(lower), mel(f) = 2595 log10(1 +
    f / 700), mapped to the DFT bins floor((dft_length + 1) hz / sample_rate); filter i rises
    from point i to point i + 1 and falls to point i + 2. Bins past the matrix are dropped.
    """
    op = "MelWeightMatrix"
    mels = int(_scalar(op, "num_mel_bins", num_mel_bins))
    n = int(_scalar(op, "dft_length", dft_length))
    rate = int(_scalar(op, "sample_rate", sample_rate))
    low = float(_scalar(op, "lower_edge_hertz", lower_edge_hertz, "fV"))
    high = float(_scalar(op, "upper_edge_hertz", upper_edge_hertz, "fV"))
    if mels < 0 or n < 1 or rate < 1:  # 0 bins: an empty matrix, as onnxruntime gives
        raise ValueError(
            f"{op}: num_mel_bins {mels}, dft_length {n}, sample_rate {rate} are not supported; "
            "expected num_mel_bins >= 0 and a positive dft_length and sample_rate"
        )
    if not 0 <= low <= high:
        raise ValueError(
            f"{op}: lower_edge_hertz {low}, upper_edge_hertz {high} are not supported; "
            "expected 0 <= lower <= upper"
        )
    dtype = onnx_numpy_dtype(output_datatype, op)
    if dtype.kind not in "iufV":
        raise ValueError(f"{op}: output_datatype {dtype} is not supported; expected a numeric type")
    low_mel = 2595 * np.log10(1 + low / 700)
    high_mel = 2595 * np.log10(1 + high / 700)
    mel = np.arange(mels + 2) * ((high_mel - low_mel) / (mels + 2)) + low_mel
    hz = 700 * (10 ** (mel / 2595) - 1)
    points = ((n + 1) * hz // rate).astype(np.int64)
    left, center, right = points[:-2], points[1:-1], points[2:]
    j = np.arange(n // 2 + 1, dtype=np.float64)[:, np.newaxis]
    with np.errstate(divide="ignore", invalid="ignore"):
        rising = np.where(center > left, (j - left) / (center - left), 1.0)
        falling = (right - j) / (right - center)
    out = np.where(
        (left <= j) & (j <= center), rising, np.where((center < j) & (j < right), falling, 0.0)
    )
    return out.astype(dtype)
