"""A file of a format xocview does not read is named by its signature in the refusal."""

from __future__ import annotations

import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest

from xocview.errors import FormatError, UnknownFormatError
from xocview.formats.registry import FORMATS, load


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("m.bin", b"tjgg\x01\x00\x00\x00" + bytes(16), "a GGJT model"),
        ("m.ort", b"\x1c\x00\x00\x00ORTM" + bytes(16), "ONNX Runtime model in ORT format"),
        ("m.pte", b"\x1c\x00\x00\x00ET12" + bytes(16), "an ExecuTorch program"),
        ("m.xml", b'<?xml version="1.0"?>\n<net name="resnet" version="11">', "an OpenVINO IR"),
        ("m.param", b"7767517\n3 3\nInput data 0 1 data\n", "an ncnn model"),
        ("yolo.cfg", b"[net]\nbatch=1\n", "a Darknet network"),
        ("m.prototxt", b'name: "x"\nlayer {\n  name: "conv"\n}\n', "a Caffe network"),
        ("m.mlmodel", b"\x08\x04\x12\x00", "probably a Core ML model, by its name"),
        ("m.tar.gz", b"\x1f\x8b\x08\x00" + bytes(16), "a gzip archive (extract it first)"),
    ],
)
def test_the_refusal_names_the_format_it_recognised(
    tmp_path: Path, name: str, content: bytes, said: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UnknownFormatError) as info:
        load(path)
    message = str(info.value)
    assert said in message
    assert "a format xocview does not read" in message
    for fmt in FORMATS:  # and what it does read
        assert fmt.NAME in message


def test_a_npz_and_a_npy_are_told_by_their_members(tmp_path: Path) -> None:
    arrays = tmp_path / "weights.npz"
    np.savez(arrays, w=np.zeros(3))
    with pytest.raises(UnknownFormatError, match=r"a NumPy archive \(.npz\)"):
        load(arrays)
    npy = tmp_path / "w.npy"
    np.save(npy, np.zeros(3))
    with pytest.raises(UnknownFormatError, match=r"a NumPy array"):
        load(npy)


def test_formats_read_now_give_their_reader_s_error_not_a_refusal(tmp_path: Path) -> None:
    """TFLite, Keras, TensorFlow and GGUF were named here while no reader took them; a
    damaged file of each now gets its reader's located error."""
    tfl = tmp_path / "m.tflite"
    tfl.write_bytes(b"\x1c\x00\x00\x00TFL3\x00\x00\x0e\x00")
    keras = tmp_path / "model.keras"
    with zipfile.ZipFile(keras, "w") as z:
        z.writestr("metadata.json", "{}")
        z.writestr("config.json", "{}")
        z.writestr("model.weights.h5", b"\x89HDF\r\n\x1a\n")
    graph_def = tmp_path / "m.pb"
    graph_def.write_bytes(b"\x0a\x0c\x0a\x01x\x12\x0bPlaceholder")
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF\x03\x00\x00\x00" + (2**60).to_bytes(8, "little") + bytes(8))
    for path in (tfl, keras, graph_def, gguf):
        with pytest.raises(FormatError) as info:
            load(path)
        assert not isinstance(info.value, UnknownFormatError)
        assert "does not read" not in str(info.value)


def test_an_hdf5_file_without_a_model_is_named(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py", reason="h5py writes the file")
    path = tmp_path / "features.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.zeros(3)
    with pytest.raises(UnknownFormatError, match="an HDF5 file with no Keras model"):
        load(path)


def test_a_plain_pickle_is_named_and_never_unpickled(tmp_path: Path) -> None:
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps({"weights": [1, 2]}, protocol=4))
    with pytest.raises(UnknownFormatError, match="a Python pickle"):
        load(path)


def test_an_unknown_file_still_lists_each_reader_s_reason(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"just some text\n")
    with pytest.raises(UnknownFormatError) as info:
        load(path)
    assert info.value.recognised is None
    assert "not a graph file any format accepts" in str(info.value)
