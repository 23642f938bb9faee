"""Saving a model with external data: the old pair or the new after a kill at any step, another
model's data file never touched, no hard links, leftovers removed by the next save."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.formats.onnx import model_files
from xocview.formats.onnx.model_files import STEPS, data_header
from xocview.formats.registry import load, save

ort = pytest.importorskip("onnxruntime")

N = 512  # 2 KB of float32: above the writer's threshold, so it stays external
ROOT = Path(__file__).resolve().parents[3]


def _model(value: float) -> onnx.ModelProto:
    """y = x + W with W filled with ``value`` (and a ramp, so offsets matter)."""
    w = np.full(N, value, np.float32) + np.arange(N, dtype=np.float32) / N
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "W"], ["y"], name="add")],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [N])],
        initializer=[numpy_helper.from_array(w, "W")],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _save_external(model: onnx.ModelProto, path: Path, location: str) -> Path:
    onnx.save_model(
        model, str(path), save_as_external_data=True, location=location, size_threshold=0
    )
    return path


def _outputs(path: Path) -> np.ndarray:
    """What onnxruntime computes for x = 0, the model loaded from its file with onnx.load."""
    model = onnx.load(str(path))  # reads the external data; refuses hard-linked data files
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    file_session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    x = {"x": np.zeros(N, np.float32)}
    y = session.run(None, x)[0]
    np.testing.assert_array_equal(file_session.run(None, x)[0], y)
    return y


@pytest.fixture
def sources(tmp_path: Path) -> dict[float, Path]:
    """Models with W = 1, 2, 3 (external data, written by onnx) in a folder of their own."""
    folder = tmp_path / "src"
    folder.mkdir()
    return {
        v: _save_external(_model(v), folder / f"m{int(v)}.onnx", f"m{int(v)}.bin")
        for v in (1.0, 2.0, 3.0)
    }


def _links(folder: Path) -> dict[str, int]:
    """The files of ``folder`` with more than one name (onnx refuses such data files)."""
    files = [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    return {p.name: os.lstat(p).st_nlink for p in files if os.lstat(p).st_nlink > 1}


# -- finding 2: another model's data file ------------------------------------------------------


def test_saving_q_leaves_the_data_file_p_points_at_as_it_was(
    tmp_path: Path, sources: dict[float, Path]
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    p = _save_external(_model(1.0), folder / "p.onnx", "q.onnx.data")  # p's data, q's name
    before = (folder / "q.onnx.data").read_bytes()
    p_out = _outputs(p)
    notes = save(load(sources[2.0]), folder / "q.onnx")
    assert (folder / "q.onnx.data").read_bytes() == before
    np.testing.assert_array_equal(_outputs(p), p_out)
    np.testing.assert_array_equal(_outputs(folder / "q.onnx"), _outputs(sources[2.0]))
    assert any("'q.onnx.data' was kept" in n and "'q.onnx.1.data'" in n for n in notes), notes
    gc.collect()
    save(load(sources[3.0]), folder / "q.onnx")  # again: its own q.onnx.1.data goes
    assert (folder / "q.onnx.data").read_bytes() == before
    np.testing.assert_array_equal(_outputs(p), p_out)
    np.testing.assert_array_equal(_outputs(folder / "q.onnx"), _outputs(sources[3.0]))
    assert sorted(os.listdir(folder)) == ["p.onnx", "q.onnx", "q.onnx.2.data", "q.onnx.data"]


def test_files_of_the_data_names_that_are_not_its_own_are_never_touched(
    tmp_path: Path, sources: dict[float, Path]
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    (tmp_path / "elsewhere.bin").write_bytes(b"outside")
    os.symlink(tmp_path / "elsewhere.bin", folder / "q.onnx.data")
    (folder / "q.onnx.1.data").write_bytes(b"someone's")
    forged = folder / "q.onnx.2.data"  # our header, but for another model's name
    forged.write_bytes(data_header("r.onnx") + b"r's weights")
    save(load(sources[2.0]), folder / "q.onnx")
    gc.collect()
    save(load(sources[3.0]), folder / "q.onnx")
    assert (tmp_path / "elsewhere.bin").read_bytes() == b"outside"
    assert os.path.islink(folder / "q.onnx.data")
    assert (folder / "q.onnx.1.data").read_bytes() == b"someone's"
    assert forged.read_bytes() == data_header("r.onnx") + b"r's weights"
    names = {"q.onnx", "q.onnx.data", "q.onnx.1.data", "q.onnx.2.data", "q.onnx.4.data"}
    assert set(os.listdir(folder)) == names  # q.onnx.3.data was its own: removed
    np.testing.assert_array_equal(_outputs(folder / "q.onnx"), _outputs(sources[3.0]))


# -- findings 3 and 4: a save killed at every step -----------------------------------------------

_KILLED_SAVE = """
import os, sys
from xocview.formats.onnx import model_files
from xocview.formats.registry import load, save
graph = load(sys.argv[1])
def hook(name):
    if name == sys.argv[3]:
        os._exit(9)
model_files.step_hook = hook
save(graph, sys.argv[2])
"""


@pytest.mark.parametrize("before", ["xocview pair", "onnx pair", "inline model", "nothing"])
@pytest.mark.parametrize("step", STEPS)
def test_a_save_killed_at_any_step_leaves_the_old_pair_or_the_new(
    tmp_path: Path, sources: dict[float, Path], step: str, before: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    q = folder / "q.onnx"
    if before == "xocview pair":
        save(load(sources[1.0]), q)
    elif before == "onnx pair":
        _save_external(_model(1.0), q, "q.onnx.data")
    elif before == "inline model":
        onnx.save(_model(1.0), str(q))
    old = _outputs(sources[1.0]) if before != "nothing" else None
    new = _outputs(sources[2.0])
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_SAVE, str(sources[2.0]), str(q), step],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == 9, killed.stderr  # every step is reached on this path
    assert _links(folder) == {}
    replaced = STEPS.index(step) >= STEPS.index("model replaced")
    if old is None and not replaced:
        assert not q.exists()
    else:
        np.testing.assert_array_equal(_outputs(q), new if replaced else old)
        np.testing.assert_array_equal(
            np.asarray(load(q).tensor("W").data),
            numpy_helper.to_array(
                onnx.load(str(sources[2.0 if replaced else 1.0])).graph.initializer[0]
            ),
        )
    save(load(sources[3.0]), q)  # the next save cleans up what the kill left
    np.testing.assert_array_equal(_outputs(q), _outputs(sources[3.0]))
    names = sorted(os.listdir(folder))
    kept = ["q.onnx.data"] if before == "onnx pair" else []  # onnx's, not ours
    ours = [n for n in names if n not in kept and n != "q.onnx"]
    assert len(ours) == 1 and ours[0].endswith(".data"), names  # no strays, no temporaries
    assert _links(folder) == {}


def test_a_data_file_an_unread_weight_still_needs_is_kept_until_the_next_save(
    tmp_path: Path, sources: dict[float, Path]
) -> None:
    q = tmp_path / "q.onnx"
    save(load(sources[1.0]), q)
    held = load(q)  # W not read yet: an undo step may read it later
    save(load(sources[2.0]), q)
    assert sorted(os.listdir(tmp_path)) == ["q.onnx", "q.onnx.1.data", "q.onnx.data", "src"]
    np.testing.assert_array_equal(
        held.tensor("W").data, numpy_helper.to_array(_model(1.0).graph.initializer[0])
    )
    del held
    gc.collect()
    save(load(sources[3.0]), q)
    assert sorted(os.listdir(tmp_path)) == ["q.onnx", "q.onnx.data", "src"]


def test_a_hard_link_an_older_save_left_is_removed(
    tmp_path: Path, sources: dict[float, Path]
) -> None:
    """Older versions kept the old data under a second name; a kill left it linked twice."""
    q = tmp_path / "q.onnx"
    _save_external(_model(1.0), q, "q.onnx.data")
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    kept = tmp_path / f".q.onnx.data.xoc{int(gone.stdout)}-kept.tmp"
    os.link(tmp_path / "q.onnx.data", kept)
    with pytest.raises(Exception, match="hard link"):
        onnx.load(str(q))
    save(load(sources[2.0]), q)
    assert not kept.exists() and _links(tmp_path) == {}
    np.testing.assert_array_equal(_outputs(q), _outputs(sources[2.0]))


def test_the_steps_are_passed_in_order(
    tmp_path: Path, sources: dict[float, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[str] = []
    monkeypatch.setattr(model_files, "step_hook", seen.append)
    save(load(sources[1.0]), tmp_path / "q.onnx")
    assert seen == list(STEPS)
    seen.clear()
    onnx.save(_model(1.0), str(tmp_path / "inline.onnx"))
    save(load(tmp_path / "inline.onnx"), tmp_path / "inline2.onnx")
    assert seen == [s for s in STEPS if not s.startswith("data")]
