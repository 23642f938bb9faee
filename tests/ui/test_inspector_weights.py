"""The inspector's weight values as a user sees them: statistics, histogram, Save as .npy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtWidgets import QFileDialog

from tests.ui.test_viewer import open_file
from xocview.errors import FormatError
from xocview.ui.panels.inspector import npy_name, write_npy

# -3.0 ... 2.5 in steps of 0.5: mean -0.25, one exact zero in twelve
WEIGHT = (np.arange(-6, 6, dtype=np.float32) / 2).reshape(3, 4)
SQUEEZENET = Path(onnx.__file__).parent / "backend/test/data/light/light_squeezenet.onnx"


def _model(folder: Path, external: bool = False) -> Path:
    """x[1,3] @ W[3,4] -> y, with W the known initializer (inline or in w.bin beside it)."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W:0/kernel"], ["y"], name="mm")],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
        [numpy_helper.from_array(WEIGHT, "W:0/kernel")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    path = folder / "tiny.onnx"
    onnx.save_model(model, path, save_as_external_data=external, location="w.bin", size_threshold=0)
    return path


def _select(view, tensor_id: str) -> None:  # type: ignore[no-untyped-def]
    view.doc.select_tensor(view.doc.graph.index.tensor_position(tensor_id))


def test_a_weight_shows_its_statistics_and_histogram(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, _model(tmp_path))
    _select(view, "W:0/kernel")
    inspector = window.inspector
    rows = inspector.rows()
    assert rows["Tensor"] == "W:0/kernel"
    assert float(rows["Min"]) == -3.0 and float(rows["Max"]) == 2.5
    assert float(rows["Mean"]) == -0.25
    assert float(rows["Std"]) == pytest.approx(WEIGHT.std())
    assert rows["Sparsity"] == "8.33% (1 zero)"
    assert "NaN" not in rows and "Inf" not in rows and "Values" not in rows
    assert inspector.histogram.isVisible() and inspector.save_button.isVisible()
    counts = inspector.histogram.counts
    assert len(counts) == 32 and counts.sum() == WEIGHT.size
    assert inspector.histogram.bar_at(inspector.histogram.width() / 2) >= 0


def test_a_tensor_without_values_has_no_statistics(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, _model(tmp_path))
    _select(view, "W:0/kernel")
    _select(view, "x")
    rows = window.inspector.rows()
    assert rows["Tensor"] == "x"
    assert not {"Min", "Max", "Mean", "Std", "Sparsity", "Values"} & rows.keys()
    assert not window.inspector.values_strip.isVisible()


def test_saving_writes_an_npy_that_reads_back_equal(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, _model(tmp_path))
    _select(view, "W:0/kernel")
    target = tmp_path / "out" / "w.npy"
    target.parent.mkdir()
    window.inspector.save_values(target)
    loaded = np.load(target)
    assert loaded.dtype == WEIGHT.dtype and np.array_equal(loaded, WEIGHT)
    assert [p.name for p in target.parent.iterdir()] == ["w.npy"]  # no temporary left


def test_the_save_button_asks_with_a_safe_default_name(
    qtbot, window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, _model(tmp_path))
    _select(view, "W:0/kernel")
    asked: list[str] = []

    def answer(_parent, _title, default, _filter):  # type: ignore[no-untyped-def]
        asked.append(default)
        return str(tmp_path / "chosen"), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", answer)
    window.inspector.save_button.click()
    assert asked == [str(tmp_path / "W_0_kernel.npy")]  # the model's folder
    assert np.array_equal(np.load(tmp_path / "chosen.npy"), WEIGHT)


def test_missing_external_data_is_a_row_not_a_crash(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = _model(tmp_path, external=True)
    (tmp_path / "w.bin").unlink()
    view = open_file(qtbot, window, path)  # opening does not read the weight
    _select(view, "W:0/kernel")
    rows = window.inspector.rows()
    assert "w.bin" in rows["Values"] and "missing" in rows["Values"]
    assert "Min" not in rows and not window.inspector.values_strip.isVisible()


def test_only_the_selected_weight_is_read(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SQUEEZENET)
    weights = [t for t in view.doc.graph.tensors if t.has_data]
    assert len(weights) > 10
    read = [t for t in weights if isinstance(t._data, np.ndarray)]
    assert read == []
    chosen = weights[0]
    _select(view, chosen.id)
    read = [t for t in weights if isinstance(t._data, np.ndarray)]
    assert read == [chosen]
    rows = window.inspector.rows()
    assert float(rows["Max"]) == pytest.approx(float(chosen.data.max()), rel=1e-6)  # type: ignore[union-attr]
    assert window.inspector.histogram.counts.sum() == chosen.data.size  # type: ignore[union-attr]


def test_npy_names_and_unwritable_places() -> None:
    assert npy_name("W:0/kernel") == "W_0_kernel.npy"
    assert npy_name("conv1.weight") == "conv1.weight.npy"
    assert npy_name("../..") == "tensor.npy"
    with pytest.raises(FormatError, match="folder does not exist"):
        write_npy(WEIGHT, Path("/nonexistent-folder/w.npy"))


def test_object_values_are_refused_without_leaving_a_file(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="cannot save"):
        write_npy(np.array([{"a": 1}], dtype=object), tmp_path / "o.npy")
    assert list(tmp_path.iterdir()) == []


def test_a_bf16_checkpoint_weight_shows_statistics_as_torch_stored_it(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    data = Path(__file__).parents[1] / "data" / "safetensors"
    view = open_file(qtbot, window, data / "dtypes.safetensors")
    _select(view, "float.bf16")
    rows = window.inspector.rows()
    expected = np.load(data / "dtypes.npz")["float.bf16"]
    assert rows["Tensor"] == "float.bf16"
    assert float(rows["Min"]) == pytest.approx(expected.min(), rel=1e-3)
    assert float(rows["Max"]) == pytest.approx(expected.max(), rel=1e-3)
    assert window.inspector.histogram.isVisible()
    assert window.inspector.histogram.counts.sum() == expected.size
