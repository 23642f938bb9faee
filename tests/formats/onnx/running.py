"""Running two ONNX files in onnxruntime on the same random inputs, for the writer's tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(LIGHT.glob("light_*.onnx"))

_NUMPY = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(float16)": np.float16,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(bool)": np.bool_,
}


def session(path: Path) -> object:
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def random_feeds(path: Path, seed: int = 0, symbol: int = 2) -> dict[str, np.ndarray]:
    """Seeded values for every input onnxruntime asks for (not initializers listed as inputs,
    as IR 3 files have them); symbolic sizes get ``symbol``, integer inputs small counts."""
    model = onnx.load(str(path), load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for vi in session(path).get_inputs():  # type: ignore[attr-defined]
        if vi.name in inits:
            continue
        shape = [d if isinstance(d, int) else symbol for d in vi.shape]
        dtype = _NUMPY[vi.type]
        if np.issubdtype(dtype, np.integer):
            feeds[vi.name] = rng.integers(0, 3, size=shape).astype(dtype)
        elif dtype is np.bool_:
            feeds[vi.name] = rng.random(shape) > 0.5
        else:
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    return list(session(path).run(None, feeds))  # type: ignore[attr-defined]


def assert_same_outputs(original: Path, written: Path, seed: int = 0) -> None:
    """Both files give equal outputs (rtol 1e-5) on the same random inputs."""
    feeds = random_feeds(original, seed)
    want, got = outputs(original, feeds), outputs(written, feeds)
    assert len(want) == len(got)
    for a, b in zip(want, got, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
