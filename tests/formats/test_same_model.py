"""One Keras model as TensorFlow's tools write it (SavedModel, TFLite, ONNX by tf2onnx, .keras)
gives Keras's outputs in xocview whichever file is opened, and Save As ONNX of each writes a
model onnxruntime runs to the same outputs.

The files and Keras's outputs were made by tests/data/same_model/make_same_model.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xocview.executor import run
from xocview.formats import load, save
from xocview.model import Graph

DATA = Path(__file__).resolve().parents[1] / "data" / "same_model"
FILES = ["saved_model", "model.tflite", "model.onnx", "model.keras"]


@pytest.fixture(scope="module")
def io() -> dict[str, np.ndarray]:
    with np.load(DATA / "io.npz") as z:
        return {k: z[k] for k in z.files}


def _run(graph: Graph, image: np.ndarray) -> np.ndarray:
    assert len(graph.inputs) == 1 and len(graph.outputs) == 1
    result = run(graph, {graph.tensors[graph.inputs[0]].id: image})
    return np.asarray(result.outputs[graph.tensors[graph.outputs[0]].id])


@pytest.mark.parametrize("name", FILES)
def test_every_form_of_the_model_gives_keras_s_outputs(name: str, io: dict) -> None:
    out = _run(load(DATA / name), io["image"])
    np.testing.assert_allclose(out, io["output"], rtol=1e-4, atol=1e-5)


def test_the_forms_agree_with_each_other(io: dict) -> None:
    outs = [_run(load(DATA / name), io["image"]) for name in FILES]
    for other in outs[1:]:
        assert float(np.abs(other - outs[0]).max()) < 1e-5


@pytest.mark.parametrize("name", ["saved_model", "model.tflite", "model.keras"])
def test_save_as_onnx_writes_what_onnxruntime_runs_to_the_same_outputs(
    name: str, io: dict, tmp_path: Path
) -> None:
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime runs the written file")
    graph = load(DATA / name)
    target = tmp_path / "model.onnx"
    save(graph, target)
    session = ort.InferenceSession(str(target), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {session.get_inputs()[0].name: io["image"]})
    np.testing.assert_allclose(out, io["output"], rtol=1e-4, atol=1e-5)
    # and xocview reads its own ONNX back to the same outputs
    np.testing.assert_allclose(_run(load(target), io["image"]), io["output"], rtol=1e-4, atol=1e-5)
