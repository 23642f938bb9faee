"""Signal kernels (DFT, STFT, windows, MelWeightMatrix) against onnxruntime and numpy.fft."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours

RNG = np.random.default_rng(31)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def as_complex(x: np.ndarray) -> np.ndarray:
    return x[..., 0] + 1j * x[..., 1] if x.shape[-1] == 2 else x[..., 0].astype(complex)


def scalar(v: int) -> np.ndarray:
    return np.array(v, dtype=np.int64)


# --- DFT -----------------------------------------------------------------------------------------

DFT_CASES = [
    # shape, axis, inverse, onesided, dft_length
    ((2, 8, 1), 1, 0, 0, None),
    ((2, 8, 2), 1, 0, 0, None),
    ((2, 8, 2), 1, 1, 0, None),
    ((2, 8, 1), 1, 0, 1, None),
    ((2, 5, 2), 1, 1, 1, None),
    ((2, 5, 2), 1, 1, 1, 9),
    ((2, 8, 1), 1, 0, 0, 12),
    ((2, 8, 2), 1, 0, 0, 5),
    ((3, 4, 6, 2), 2, 0, 0, None),
    ((3, 4, 6, 2), -3, 1, 0, None),
    ((3, 4, 6, 1), -2, 0, 1, 7),
    ((6, 3, 2), 0, 0, 0, None),
]


@pytest.mark.parametrize(("shape", "axis", "inverse", "onesided", "length"), DFT_CASES)
@pytest.mark.parametrize("opset", [17, 20])
def test_dft_matches_onnxruntime(
    shape: tuple[int, ...],
    axis: int,
    inverse: int,
    onesided: int,
    length: int | None,
    opset: int,
) -> None:
    x = rand(*shape)
    attrs: dict[str, Any] = {"inverse": inverse, "onesided": onesided}
    inputs: list[np.ndarray | None] = [x, None if length is None else scalar(length)]
    if opset == 17:
        attrs["axis"] = axis
    else:
        inputs.append(scalar(axis))
    check_op("DFT", inputs, attrs, opset=opset, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_dft_keeps_dtype_and_matches_numpy(dtype: Any) -> None:
    x = rand(2, 6, 2, dtype=dtype)
    (got,) = ours("DFT", [x, None, scalar(1)], opset=20)
    assert got.dtype == dtype and got.shape == (2, 6, 2)
    want = np.fft.fft(as_complex(x.astype(np.float64)), axis=1)
    np.testing.assert_allclose(as_complex(got.astype(np.float64)), want, rtol=1e-2, atol=1e-2)


def test_dft_default_axis_and_round_trip() -> None:
    x = rand(3, 10, 2, dtype=np.float64)
    (spectrum,) = ours("DFT", [x, None, None], opset=20)  # default axis -2
    (back,) = ours("DFT", [spectrum, None, None], {"inverse": 1}, opset=20)
    np.testing.assert_allclose(back, x, atol=1e-12)
    (spectrum17,) = ours("DFT", [x], opset=17)  # default axis 1
    np.testing.assert_allclose(spectrum17, spectrum)


def test_dft_irfft_inverts_rfft() -> None:
    x = rand(2, 9, 1, dtype=np.float64)
    (half,) = ours("DFT", [x], {"onesided": 1}, opset=17)
    assert half.shape == (2, 5, 2)
    (back,) = ours("DFT", [half, scalar(9)], {"onesided": 1, "inverse": 1}, opset=17)
    np.testing.assert_allclose(back, x, atol=1e-12)


@pytest.mark.parametrize(
    ("x", "attrs", "message"),
    [
        (rand(2, 4, 2), {"onesided": 1}, "onesided=1 with complex input is not supported"),
        (rand(2, 4, 1), {"onesided": 1, "inverse": 1}, "real input is not supported"),
        (rand(2, 4, 2), {"axis": 2}, "axis 2 is out of range"),
        (rand(2, 4, 2), {"axis": -1}, "axis -1 is out of range"),
        (rand(2, 4, 3), {}, "expected \\[..., 1\\]"),
        (np.ones((2, 4, 2), np.int32), {}, "dtype int32 is not supported"),
        (rand(2, 4, 2), {"onesided": 2}, "onesided 2 is not supported"),
    ],
)
def test_dft_refusals(x: np.ndarray, attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ours("DFT", [x], attrs, opset=17)


def test_dft_refuses_zero_length() -> None:
    with pytest.raises(ValueError, match="dft_length 0 is not supported"):
        ours("DFT", [rand(2, 4, 2), scalar(0)], opset=17)


# --- STFT ----------------------------------------------------------------------------------------

STFT_CASES = [
    # length, channels, step, window length (0: none), frame_length given, onesided
    (32, 1, 4, 0, 8, 1),
    (32, 1, 4, 8, 0, 1),
    (32, 1, 3, 8, 8, 1),
    (33, 1, 5, 7, 0, 0),
    (16, 2, 2, 6, 6, 0),
    (16, 2, 4, 0, 4, 0),
    (10, 1, 10, 10, 0, 1),
]


@pytest.mark.parametrize(("length", "channels", "step", "wlen", "flen", "onesided"), STFT_CASES)
def test_stft_matches_onnxruntime(
    length: int, channels: int, step: int, wlen: int, flen: int, onesided: int
) -> None:
    signal = rand(2, length, channels)
    window = np.hanning(wlen).astype(np.float32) if wlen else None
    frame_length = scalar(flen) if flen else None
    check_op(
        "STFT",
        [signal, scalar(step), window, frame_length],
        {"onesided": onesided},
        rtol=1e-4,
        atol=1e-4,
    )


def test_stft_matches_numpy_frames() -> None:
    signal = rand(1, 20, 1, dtype=np.float64)
    window = np.hamming(6)
    (got,) = ours("STFT", [signal, scalar(3), window, None])
    frames = [signal[0, i : i + 6, 0] * window for i in range(0, 20 - 6 + 1, 3)]
    want = np.fft.rfft(np.array(frames), axis=-1)
    assert got.shape == (1, 5, 4, 2) and got.dtype == np.float64
    np.testing.assert_allclose(as_complex(got[0]), want, atol=1e-12)


@pytest.mark.parametrize(
    ("signal", "inputs", "attrs", "message"),
    [
        (rand(1, 8, 2), [scalar(2), None, scalar(4)], {}, "complex signal is not supported"),
        (rand(1, 8, 1), [scalar(2), np.ones(3, np.float32), scalar(4)], {}, "length 3"),
        (rand(1, 8, 1), [scalar(2), None, scalar(9)], {}, "frame_length 9 is not supported"),
        (rand(1, 8, 1), [scalar(0), None, scalar(4)], {}, "frame_step 0 is not supported"),
        (rand(8, 1), [scalar(2), None, scalar(4)], {}, "expected \\[batch, length"),
    ],
)
def test_stft_refusals(
    signal: np.ndarray,
    inputs: list[np.ndarray | None],
    attrs: dict[str, Any],
    message: str,
) -> None:
    with pytest.raises(ValueError, match=message):
        ours("STFT", [signal, *inputs], attrs)


# --- windows -------------------------------------------------------------------------------------

WINDOWS = ["HannWindow", "HammingWindow", "BlackmanWindow"]


@pytest.mark.parametrize("op", WINDOWS)
# One symmetric point is left out: onnxruntime divides 0 by 0 there (see below).
@pytest.mark.parametrize(
    ("size", "periodic"),
    [(s, p) for s in (0, 1, 2, 5, 10, 64) for p in (0, 1) if (s, p) != (1, 0)],
)
@pytest.mark.parametrize("output_datatype", [1, 11])
def test_window_matches_onnxruntime(
    op: str, size: int, periodic: int, output_datatype: int
) -> None:
    attrs = {"periodic": periodic, "output_datatype": output_datatype}
    check_op(op, [np.array(size, dtype=np.int32)], attrs, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("op", "numpy_window"),
    [("HannWindow", np.hanning), ("HammingWindow", np.hamming), ("BlackmanWindow", np.blackman)],
)
def test_symmetric_window_matches_numpy(op: str, numpy_window: Any) -> None:
    (got,) = ours(op, [scalar(12)], {"periodic": 0, "output_datatype": 11})
    # numpy's Hamming uses 0.54 / 0.46; ONNX's 25/46 / 21/46 differ by under 0.01
    np.testing.assert_allclose(got, numpy_window(12), atol=0.01 if op == "HammingWindow" else 1e-12)
    (periodic,) = ours(op, [scalar(12)], {"output_datatype": 11})
    np.testing.assert_allclose(periodic, numpy_window(13)[:12], atol=0.01)


@pytest.mark.parametrize("op", WINDOWS)
def test_one_point_symmetric_window(op: str) -> None:
    """N - 1 = 0: [1], as numpy and PyTorch give, where the formula (and onnxruntime) give NaN."""
    (got,) = ours(op, [scalar(1)], {"periodic": 0})
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, [1.0])


def test_window_refusals() -> None:
    with pytest.raises(ValueError, match="HannWindow: size -1 is not supported"):
        ours("HannWindow", [scalar(-1)])
    with pytest.raises(ValueError, match="HannWindow: size must be a scalar"):
        ours("HannWindow", [np.array([2, 3])])
    with pytest.raises(ValueError, match=r"BlackmanWindow: output_datatype .* is not supported"):
        ours("BlackmanWindow", [scalar(4)], {"output_datatype": 9})  # bool


# --- MelWeightMatrix -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mels", "n", "rate", "low", "high"),
    [
        (8, 16, 8192, 0.0, 4096.0),
        (20, 512, 16000, 20.0, 8000.0),
        (40, 1024, 22050, 0.0, 11025.0),
        (3, 9, 100, 10.0, 40.0),
        (10, 64, 8000, 300.0, 310.0),
    ],
)
@pytest.mark.parametrize("output_datatype", [1, 11])
def test_mel_weight_matrix_matches_onnxruntime(
    mels: int, n: int, rate: int, low: float, high: float, output_datatype: int
) -> None:
    inputs: list[np.ndarray | None] = [
        scalar(mels),
        scalar(n),
        scalar(rate),
        np.array(low, np.float32),
        np.array(high, np.float32),
    ]
    check_op("MelWeightMatrix", inputs, {"output_datatype": output_datatype})


def test_mel_weight_matrix_refusals() -> None:
    base = [scalar(4), scalar(16), scalar(8000), np.float32(0), np.float32(4000)]
    with pytest.raises(ValueError, match=r"num_mel_bins -1, .* are not supported"):
        ours("MelWeightMatrix", [scalar(-1), *base[1:]])
    with pytest.raises(ValueError, match=r"lower_edge_hertz 5000\.0, .* are not supported"):
        ours("MelWeightMatrix", [*base[:3], np.float32(5000), base[4]])
