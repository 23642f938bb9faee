"""``examples/from_python.ipynb`` executed headless with nbclient, as a user's Jupyter runs it:
no cell fails, the render cells display inline (SVG and PNG), the profile cell prints op names.

The kernel is this interpreter (``sys.executable``, the venv's python, whatever kernelspecs the
user has installed) with this checkout first on its path, so that the notebook exercises this
repository's ``xocview``, and it draws on Qt's offscreen platform (no display in CI).
"""

from __future__ import annotations

import base64
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

nbformat = pytest.importorskip("nbformat", reason="nbformat (a test extra) is not installed")
nbclient = pytest.importorskip("nbclient", reason="nbclient (a test extra) is not installed")
pytest.importorskip("ipykernel", reason="ipykernel (a test extra) is not installed")

from jupyter_client.kernelspec import KernelSpec, KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

EXAMPLES = REPO / "examples"
NOTEBOOK = EXAMPLES / "from_python.ipynb"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RENDER_CELLS = ("render-sample", "build-model", "overlay")
# Appended to the executed copy only: which interpreter and which xocview the kernel ran.
WHERE = "import sys, xocview; print(sys.executable); print(xocview.__file__)"


class _ThisPython(KernelSpecManager):
    """Every kernel name resolves to ipykernel on the interpreter running the tests."""

    def get_kernel_spec(self, kernel_name: str) -> KernelSpec:
        argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        return KernelSpec(argv=argv, display_name=kernel_name, language="python")


@pytest.fixture(scope="module")
def executed() -> Any:
    """The notebook after a headless run from the examples folder (cells by id)."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(WHERE, id="where"))
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
    }
    km = KernelManager(kernel_name="python3", kernel_spec_manager=_ThisPython())
    client = nbclient.NotebookClient(
        nb,
        km=km,
        timeout=180,
        kernel_name="python3",
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    client.execute(env=env)  # raises CellExecutionError on the first failing cell
    return {cell.get("id"): cell for cell in nb.cells}


def _outputs(cell: Any, kind: str) -> list[Any]:
    return [out for out in cell.outputs if out.output_type == kind]


def _stdout(cell: Any) -> str:
    return "".join(out.text for out in _outputs(cell, "stream") if out.name == "stdout")


def test_the_notebook_is_stored_without_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    assert code, "the notebook has no code cells"
    for cell in code:
        assert cell.execution_count is None and cell.outputs == [], cell.id
    # show() opens a window: it is only shown as an example, never run
    assert not any("xocview.show(" in cell.source for cell in code)


def test_no_cell_errors_and_the_kernel_runs_this_checkout(executed: Any) -> None:
    for cell in executed.values():
        if cell.cell_type == "code":
            assert not _outputs(cell, "error"), (cell.id, cell.outputs)
    kernel_python, module = _stdout(executed["where"]).splitlines()
    assert Path(kernel_python).resolve() == Path(sys.executable).resolve()
    assert Path(module).resolve() == REPO / "xocview" / "__init__.py"


@pytest.mark.parametrize("cell_id", RENDER_CELLS)
def test_render_cells_display_inline_svg_and_png(executed: Any, cell_id: str) -> None:
    (result,) = _outputs(executed[cell_id], "execute_result")
    data = result.data
    assert "<svg" in data["image/svg+xml"]
    assert base64.b64decode(data["image/png"]).startswith(PNG_SIGNATURE)
    assert data["text/plain"].startswith("<Rendered graph ")


def test_the_overlay_render_is_coloured_by_the_values(executed: Any) -> None:
    plain = executed["build-model"].outputs[-1].data["image/svg+xml"]
    coloured = executed["overlay"].outputs[-1].data["image/svg+xml"]
    assert plain != coloured  # same graph, same layout: only the nodes' colours differ


def test_the_profile_cell_prints_the_op_names_and_slowest_nodes(executed: Any) -> None:
    text = _stdout(executed["profile"])
    by_op = next(line for line in text.splitlines() if line.startswith("by op (ms):"))
    for op in ("MatMul", "Add", "Relu", "Softmax"):
        assert f"'{op}'" in by_op, by_op
    assert text.count("slowest: ") == 3
    assert "rows sum to [1. 1. 1.]" in text


def test_the_load_and_diff_cells_print_their_summaries(executed: Any) -> None:
    assert "tiny transformer encoder: 44 nodes" in _stdout(executed["load-sample"])
    diff = _stdout(executed["diff"])
    assert "<Diff: 1 difference (1 node changed)>" in diff
    assert 'op_type: "Relu" -> "Sigmoid"' in diff


def test_the_torch_cell_loads_the_module_or_says_it_skipped(executed: Any) -> None:
    text = _stdout(executed["torch"])
    if importlib.util.find_spec("torch") is None:
        assert "torch is not installed: skipped" in text
    else:
        assert text.startswith("Tiny: ") and "'Gemm'" in text and "'Softmax'" in text


def test_the_notebook_finds_the_samples_from_the_repository_root(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cell that locates sample_graphs/ works from the root as well as from examples/."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    locate = next(cell.source for cell in nb.cells if cell.get("id") == "locate-samples")
    for cwd in (REPO, EXAMPLES):
        monkeypatch.chdir(cwd)
        scope: dict[str, Any] = {"Path": Path}
        exec(compile(locate, "locate-samples", "exec"), scope)
        assert scope["SAMPLE"] == REPO / "sample_graphs" / "tiny_transformer.json"
