"""External data through a symlink in the model's folder, as a Hugging Face cache lays it out.

``snapshots/<rev>/model.onnx`` and ``model.onnx.data`` are links into ``../../blobs/``: the
links are the user's own and are followed for reading; a save beside them replaces a link or
writes a new file, never writes through one into a blob. Folder links out, ``..`` and absolute
locations stay refused (``test_external_paths``, the attack family ``paths.external``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.formats.onnx.running import outputs
from xocview.errors import FormatError
from xocview.executor import run
from xocview.formats.registry import check, load, save
from xocview.formats.safe_paths import path_inside

REV = "0123456789abcdef0123456789abcdef01234567"


def _model(location: str, w: np.ndarray) -> onnx.ModelProto:
    t = numpy_helper.from_array(w, "W")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(w.nbytes))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    node = helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, w.shape[0]])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, w.shape[1]])
    graph = helper.make_graph([node], "g", [x], [y], [t])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def hf_cache(root: Path, w: np.ndarray) -> tuple[Path, Path]:
    """models--org--tiny/{blobs/<sha>, snapshots/REV/model.onnx[.data] -> ../../blobs/<sha>};
    returns the snapshot's model and the blobs folder."""
    repo = root / "hub" / "models--org--tiny"
    blobs, snap = repo / "blobs", repo / "snapshots" / REV
    blobs.mkdir(parents=True)
    snap.mkdir(parents=True)
    for name, data in (
        ("model.onnx", _model("model.onnx.data", w).SerializeToString()),
        ("model.onnx.data", w.tobytes()),
    ):
        sha = hashlib.sha256(data).hexdigest()
        (blobs / sha).write_bytes(data)
        os.symlink(f"../../blobs/{sha}", snap / name)
    return snap / "model.onnx", blobs


def _blob_sums(blobs: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(blobs.iterdir())}


def _weight(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((64, 32)).astype(np.float32)


def test_a_hugging_face_snapshot_opens_and_runs_as_onnxruntime(tmp_path: Path) -> None:
    w = _weight()
    path, _ = hf_cache(tmp_path, w)
    graph = load(path)
    np.testing.assert_array_equal(graph.tensor("W").data, w)
    x = np.random.default_rng(1).standard_normal((1, 64)).astype(np.float32)
    got = run(graph, {"X": x}).outputs["Y"]
    np.testing.assert_allclose(got, outputs(path, {"X": x})[0], rtol=1e-5, atol=1e-5)


def test_a_save_over_the_snapshot_replaces_the_link_and_never_writes_into_a_blob(
    tmp_path: Path,
) -> None:
    w = _weight(2)
    path, blobs = hf_cache(tmp_path, w)
    before = _blob_sums(blobs)
    graph = load(path)
    notes = save(graph, path)  # Save over the open model itself
    assert _blob_sums(blobs) == before
    assert not path.is_symlink() and path.is_file()  # the model's link was replaced
    data = path.with_name("model.onnx.data")
    assert data.is_symlink()  # the data link is not xocview's: kept, and the data goes aside
    assert any("'model.onnx.data' was kept" in n and "'model.onnx.1.data'" in n for n in notes)
    np.testing.assert_array_equal(load(path).tensor("W").data, w)
    np.testing.assert_array_equal(graph.tensor("W").data, w)  # the open graph still reads
    save(load(path), path)  # again: its own model.onnx.1.data goes, the link stays
    assert _blob_sums(blobs) == before and data.is_symlink()
    np.testing.assert_array_equal(load(path).tensor("W").data, w)


def test_a_save_beside_links_of_its_names_writes_new_files(tmp_path: Path) -> None:
    """out.onnx and out.onnx.data are links into the blobs (even dangling ones): the save
    makes out.onnx a file of its own and puts its data under a new name."""
    w = _weight(3)
    path, blobs = hf_cache(tmp_path, w)
    snap = path.parent
    sha = next(iter(_blob_sums(blobs)))
    os.symlink(f"../../blobs/{sha}", snap / "out.onnx")
    os.symlink(f"../../blobs/{sha}", snap / "out.onnx.data")
    os.symlink("../../blobs/none", snap / "out.onnx.1.data")  # dangling
    before = _blob_sums(blobs)
    save(load(path), snap / "out.onnx")
    assert _blob_sums(blobs) == before
    assert not (snap / "out.onnx").is_symlink()
    assert (snap / "out.onnx.data").is_symlink() and (snap / "out.onnx.1.data").is_symlink()
    assert not (blobs / "none").exists()
    np.testing.assert_array_equal(load(snap / "out.onnx").tensor("W").data, w)
    assert (snap / "out.onnx.2.data").is_file()


def test_a_link_to_any_regular_file_is_the_users_own_and_is_read(tmp_path: Path) -> None:
    """A link beside a model pointing at, say, /etc/passwd is followed: opening a model
    cannot make links or choose their targets, so the user chose it. The target must still be
    a regular file big enough for the tensor."""
    secret = tmp_path / "elsewhere" / "passwd"
    secret.parent.mkdir()
    secret.write_bytes(bytes(range(256)) * 32)  # 8 KB: W's 64 x 32 float32
    folder = tmp_path / "model"
    folder.mkdir()
    onnx.save(_model("w.bin", _weight()), str(folder / "m.onnx"))
    os.symlink(secret, folder / "w.bin")
    got = load(folder / "m.onnx").tensor("W").data
    assert got is not None and got.tobytes() == secret.read_bytes()
    for target, why in (
        ("/dev/zero", "is not a regular file"),
        (str(tmp_path), "is not a regular file"),
        (str(tmp_path / "nothing"), "is missing"),
    ):
        (folder / "w.bin").unlink()
        os.symlink(target, folder / "w.bin")
        with pytest.raises(FormatError, match=why) as info:
            _ = load(folder / "m.onnx").tensor("W").data
        assert info.value.place == "initializer 'W' external_data 'location'"


def test_dotdot_is_text_never_a_walk_through_a_link(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / "deep").mkdir(parents=True)
    (folder / "w.bin").write_bytes(b"")
    os.symlink(tmp_path / "in" / "deep", folder / "sub")  # sub/.. is "in" as text, "in" on disk
    os.symlink("/", folder / "root")  # root/.. is "in" as text, "/" on disk
    assert path_inside("root/../w.bin", folder, "f", "p") == (folder / "w.bin").resolve()
    assert path_inside("sub/../w.bin", folder, "f", "p") == (folder / "w.bin").resolve()
    for bad, why in (
        ("root/etc/passwd", "through a linked folder"),
        ("sub/../../x", "leaves the model's folder"),
        ("..", "leaves the model's folder"),
        ("/etc/passwd", "is absolute"),
        ("C:\\Windows\\win.ini", "is absolute"),
        ("D:w.bin", "is absolute"),
    ):
        with pytest.raises(FormatError, match=why):
            path_inside(bad, folder, "f", "p")


def test_check_warns_of_linked_data_and_still_checks_the_rest(tmp_path: Path) -> None:
    """onnx's checker refuses data behind a link and stops there; check says so as a warning
    and checks the rest with the linked weights declared instead of read."""
    w = _weight()
    path, _ = hf_cache(tmp_path / "good", w)
    _, found = check(path)
    assert [f.severity for f in found] == ["warning"]
    assert "symbolic link" in found[0].message
    # The same layout with a fault further on (X has 10 columns, W 64 rows): still found.
    bad = _model("model.onnx.data", w)
    bad.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 10
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "blob").write_bytes(w.tobytes())
    os.symlink("blob", folder / "model.onnx.data")
    onnx.save(bad, str(folder / "model.onnx"))
    _, found = check(folder / "model.onnx")
    errors = [f.message for f in found if f.severity == "error"]
    assert errors and any("MatMul" in m or "dimension" in m.lower() for m in errors), found
