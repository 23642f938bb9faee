"""The Python API on live torch objects: an ``nn.Module`` with example inputs, an
``ExportedProgram`` and a ``torch.onnx`` program (torch is a test extra, never a dependency)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

import xocview
from tests.api.test_api import PNG_SIGNATURE, temp_folders  # noqa: F401  (a fixture)
from xocview.errors import ApiError
from xocview.formats import registry

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")


class Small(torch.nn.Module):  # type: ignore[misc,name-defined]
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.fc(x))


@pytest.fixture(scope="module")
def model() -> Any:
    torch.manual_seed(0)
    return Small().eval()


@pytest.fixture(scope="module")
def example() -> tuple[Any, ...]:
    return (torch.randn(2, 4, generator=torch.Generator().manual_seed(1)),)


def test_a_module_with_args_loads_as_its_saved_export_does(
    model: Any,
    example: tuple[Any, ...],
    tmp_path: Path,
    temp_folders: list[Path],  # noqa: F811
) -> None:
    graph = xocview.load(model, args=example)
    assert graph.name == "Small"
    saved = tmp_path / "Small.pt2"
    torch.export.save(torch.export.export(model, example), saved)
    assert [n.op_type for n in graph.nodes] == [n.op_type for n in registry.load(saved).nodes]
    weight = next(t for t in graph.tensors if t.has_data and list(t.shape) == [3, 4])
    assert (weight.data == model.fc.weight.detach().numpy()).all()
    assert temp_folders and not any(f.exists() for f in temp_folders)


def test_one_tensor_is_taken_as_the_only_argument(model: Any, example: tuple[Any, ...]) -> None:
    one = xocview.load(model, args=example[0], name="one")
    assert one.name == "one" and "Relu" in [n.op_type for n in one.nodes]


def test_an_exported_program_loads(model: Any, example: tuple[Any, ...]) -> None:
    graph = xocview.load(torch.export.export(model, example))
    assert "Relu" in [n.op_type for n in graph.nodes]


def test_a_module_without_args_or_that_cannot_export_is_one_line(model: Any) -> None:
    with pytest.raises(ApiError, match=r"Small: a torch\.nn\.Module needs args="):
        xocview.load(model)
    with pytest.raises(ApiError) as e:
        xocview.load(model, args=(torch.randn(2, 5),))  # 5 features into a Linear of 4
    assert "torch.export.export failed" in str(e.value) and "\n" not in str(e.value)


def test_render_diff_and_overlay_take_a_module_export(model: Any, example: tuple[Any, ...]) -> None:
    program = torch.export.export(model, example)
    assert xocview.render(program)._repr_png_().startswith(PNG_SIGNATURE)
    assert xocview.diff(program, xocview.load(model, args=example)).equal
    graph = xocview.load(program)
    relu = next(n for n in graph.nodes if n.op_type == "Relu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        marked = xocview.overlay(graph, {relu.id: 3.0}, name="err")
    assert marked.nodes[graph.nodes.index(relu)].metadata["performance"]["err"] == 3.0


def test_a_torch_onnx_program_loads_through_its_model_proto(
    model: Any, example: tuple[Any, ...]
) -> None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(model, example, dynamo=True, verbose=False)
    except Exception as e:  # onnxscript missing, or an exporter that needs the network
        pytest.skip(f"torch.onnx.export(dynamo=True) is unavailable here: {e}")
    graph = xocview.load(program)
    assert {"Gemm", "Relu"} <= {n.op_type for n in graph.nodes}
    assert xocview.render(program)._repr_svg_().count("<svg") == 1
