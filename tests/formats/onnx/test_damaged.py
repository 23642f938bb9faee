"""Damaged ONNX files: each gives a located FormatError (exit 1), never an internal error."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.formats.onnx import models as m
from xocview.cli import main
from xocview.errors import FormatError, XocviewError
from xocview.executor import run
from xocview.formats import registry

F = TensorProto.FLOAT


def _model(init: onnx.TensorProto | None = None, sparse: onnx.SparseTensorProto | None = None):
    """y = x + W, with W given as ``init`` (or a sparse initializer)."""
    nodes = [helper.make_node("Add", ["x", "W"], ["y"], name="add")]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", F, [2, 2])],
        [helper.make_tensor_value_info("y", F, [2, 2])],
        initializer=[init] if init is not None else [],
        sparse_initializer=[sparse] if sparse is not None else [],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _weight(dims: list[int], data_type: int = F) -> onnx.TensorProto:
    t = onnx.TensorProto()
    t.name, t.data_type = "W", data_type
    t.dims.extend(dims)
    return t


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What the command printed (out and err); it must end with exit 1, not an internal error."""
    assert main(list(argv)) == 1
    out, err = capsys.readouterr()
    assert "internal error" not in err
    return out + err


# -- names and text that are not UTF-8 --------------------------------------------------------


def _patched(tmp_path: Path, marker: bytes) -> Path:
    """The mlp model with one byte of ``marker`` (a unique string in it) made invalid UTF-8."""
    model = m.mlp()
    model.graph.node[2].name = "RELUNAME"
    model.graph.node[2].doc_string = "DOCTEXT"
    model.doc_string = "MODELDOC"
    model.graph.node[4].output[0] = model.graph.output[0].name = "OUTNAME"
    helper.set_model_props(model, {"PROPKEY": "PROPVALUE"})
    data = model.SerializeToString()
    assert data.count(marker) >= 1
    path = tmp_path / "bad.onnx"
    path.write_bytes(data.replace(marker, marker[:1] + b"\xff" + marker[2:]))
    return path


@pytest.mark.parametrize(
    ("marker", "place"),
    [
        (b"RELUNAME", "graph.node[2].name"),
        (b"/encoder/fc/MatMul", "graph.node[0].name"),
        (b"Relu", "graph.node[2] ('RELUNAME').op_type"),
        (b"OUTNAME", "graph.output[0].name"),
    ],
)
def test_names_not_utf8_are_located_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], marker: bytes, place: str
) -> None:
    path = _patched(tmp_path, marker)
    with pytest.raises(FormatError) as info:
        registry.load(path)
    assert info.value.place == place
    assert "not UTF-8" in info.value.problem
    assert info.value.expected == "a UTF-8 name"
    for command in ("info", "check", "run"):
        assert f"{place}: not UTF-8 text" in _cli(capsys, command, str(path))


@pytest.mark.parametrize("marker", [b"DOCTEXT", b"MODELDOC", b"PROPKEY", b"PROPVALUE"])
def test_free_text_not_utf8_is_kept_with_replacement_characters(
    tmp_path: Path, marker: bytes
) -> None:
    graph = registry.load(_patched(tmp_path, marker))
    text = repr(graph.metadata) + repr([n.metadata for n in graph.nodes])
    assert marker[:1].decode() + "\ufffd" + marker[2:].decode() in text


def test_attribute_strings_not_utf8_are_kept(tmp_path: Path) -> None:
    node = helper.make_node("Identity", ["x"], ["y"], name="id", note=b"caf\xe9", tags=[b"\xff"])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", F, [1])],
        [helper.make_tensor_value_info("y", F, [1])],
    )
    path = m.save(helper.make_model(graph), tmp_path / "a.onnx")
    attrs = registry.load(path).nodes[0].metadata["attributes"]
    assert attrs == {"note": "caf\ufffd", "tags": ["\ufffd"]}


# -- initializers whose data does not match dims and type ------------------------------------


def _short_raw() -> onnx.TensorProto:
    t = _weight([2, 2])
    t.raw_data = b"\0" * 12
    return t


def _long_raw() -> onnx.TensorProto:
    t = _weight([2, 2])
    t.raw_data = b"\0" * 20
    return t


def _undefined() -> onnx.TensorProto:
    t = _weight([2, 2], TensorProto.UNDEFINED)
    t.raw_data = b"\0" * 16
    return t


def _unknown_type() -> onnx.TensorProto:
    t = _weight([2, 2], 99)
    t.raw_data = b"\0" * 16
    return t


def _huge() -> onnx.TensorProto:
    t = _weight([10**9, 10**9])
    t.raw_data = b"\0" * 16
    return t


def _negative() -> onnx.TensorProto:
    t = _weight([-2, -2])
    t.raw_data = b"\0" * 16
    return t


def _typed_count() -> onnx.TensorProto:
    t = _weight([2, 2])
    t.float_data.extend([1.0, 2.0, 3.0])
    return t


def _int32_count() -> onnx.TensorProto:
    t = _weight([2, 2], TensorProto.INT32)
    t.int32_data.extend([1] * 5)
    return t


@pytest.mark.parametrize(
    ("make", "problem", "expected"),
    [
        (_short_raw, "raw_data has 12 bytes", "16 bytes for dims [2, 2] of FLOAT"),
        (_long_raw, "raw_data has 20 bytes", "16 bytes for dims [2, 2] of FLOAT"),
        (_undefined, "element type UNDEFINED (0)", "one of ONNX's element types"),
        (_unknown_type, "element type unknown (99)", "one of ONNX's element types"),
        (_huge, "raw_data has 16 bytes", "4,000,000,000,000,000,000 bytes"),
        (_negative, "dims[0] is -2", "dimensions >= 0"),
        (_typed_count, "float_data has 3 values", "4 for dims [2, 2] of FLOAT"),
        (_int32_count, "int32_data has 5 values", "4 for dims [2, 2] of INT32"),
    ],
)
def test_initializer_data_that_does_not_fit_is_found_and_refused_on_use(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    make: object,
    problem: str,
    expected: str,
) -> None:
    path = m.save(_model(make()), tmp_path / "w.onnx")  # type: ignore[operator]
    graph, findings = registry.check(path)  # the graph still opens
    ours = [f for f in findings if f.place == "initializer 'W'"]
    assert len(ours) == 1 and ours[0].severity == "error"
    assert problem in ours[0].message and expected in ours[0].message
    with pytest.raises(FormatError) as info:
        _ = graph.tensor("W").data
    assert info.value.file == str(path) and info.value.place == "initializer 'W'"
    assert problem in info.value.problem and expected in (info.value.expected or "")
    # run refuses it: reading W fails (or, for the 10^18 elements, the memory budget does)
    with pytest.raises(XocviewError, match="'W'"):
        run(registry.load(path))
    printed = _cli(capsys, "run", str(path))
    assert f"{path}: initializer 'W': {problem}" in printed or make is _huge
    assert f"initializer 'W': error: {problem}" in _cli(capsys, "check", str(path))


def _sparse(indices: list[int], values: list[float], dims: list[int]) -> onnx.SparseTensorProto:
    v = helper.make_tensor("W", F, [len(values)], values)
    i = helper.make_tensor("W_idx", TensorProto.INT64, [len(indices)], indices)
    return helper.make_sparse_tensor(v, i, dims)


@pytest.mark.parametrize(
    ("sparse", "place", "problem"),
    [
        (_sparse([0, 9], [1.0, 2.0], [2, 2]), "initializer 'W' indices", "index out of range"),
        (_sparse([-1, 2], [1.0, 2.0], [2, 2]), "initializer 'W' indices", "index out of range"),
        (_sparse([0, 1, 2], [1.0, 2.0], [2, 2]), "initializer 'W'", "indices have dims [3]"),
        (_sparse([0, 1], [1.0, 2.0], [2, -2]), "initializer 'W'", "dims[1] is -2"),
    ],
)
def test_sparse_initializers_that_do_not_fit_are_found_and_refused_on_use(
    tmp_path: Path, sparse: onnx.SparseTensorProto, place: str, problem: str
) -> None:
    path = m.save(_model(sparse=sparse), tmp_path / "s.onnx")
    graph, findings = registry.check(path)
    assert any(f.place == place and problem in f.message for f in findings), findings
    with pytest.raises(FormatError) as info:
        _ = graph.tensor("W").data
    assert info.value.place == place and problem in info.value.problem
    with pytest.raises(FormatError, match="initializer 'W'"):
        run(registry.load(path))


def test_a_good_sparse_initializer_densifies(tmp_path: Path) -> None:
    path = m.save(_model(sparse=_sparse([0, 3], [1.0, 2.0], [2, 2])), tmp_path / "s.onnx")
    data = registry.load(path).tensor("W").data
    np.testing.assert_array_equal(data, [[1.0, 0.0], [0.0, 2.0]])


# -- external data --------------------------------------------------------------------------


def _external(tmp_path: Path, **entries: str) -> Path:
    (tmp_path / "w.bin").write_bytes(np.arange(4, dtype=np.float32).tobytes())
    t = _weight([2, 2])
    t.data_location = TensorProto.EXTERNAL
    for key, value in {"location": "w.bin", **entries}.items():
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return m.save(_model(t), tmp_path / "e.onnx")


@pytest.mark.parametrize(
    ("entries", "key", "problem"),
    [
        ({"offset": "-4"}, "offset", "'-4' is not a byte count"),
        ({"offset": "ten"}, "offset", "'ten' is not a byte count"),
        ({"length": "-16"}, "length", "'-16' is not a byte count"),
        ({"length": "1e3"}, "length", "'1e3' is not a byte count"),
        ({"location": "w\0.bin"}, "location", "holds a NUL character"),
        ({"location": "../w.bin"}, "location", "leaves the model's folder"),
    ],
)
def test_bad_external_entries_are_refused_at_load(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    entries: dict[str, str],
    key: str,
    problem: str,
) -> None:
    path = _external(tmp_path, **entries)
    with pytest.raises(FormatError) as info:
        registry.load(path)
    assert info.value.place == f"initializer 'W' external_data '{key}'"
    assert problem in info.value.problem
    for command in ("info", "check", "run"):
        assert f"initializer 'W' external_data '{key}'" in _cli(capsys, command, str(path))


@pytest.mark.parametrize(
    ("entries", "key", "problem"),
    [
        ({"offset": "8"}, "length", "is too short (16 bytes) for 16 bytes at offset 8"),
        ({"offset": "32"}, "offset", "is too short (16 bytes) for 16 bytes at offset 32"),
        ({"length": "64"}, "length", "64 bytes"),
        ({"location": "gone.bin"}, "location", "external data file 'gone.bin' is missing"),
    ],
)
def test_external_data_that_is_not_there_is_found_and_refused_on_use(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    entries: dict[str, str],
    key: str,
    problem: str,
) -> None:
    path = _external(tmp_path, **entries)
    graph, findings = registry.check(path)
    place = f"initializer 'W' external_data '{key}'"
    assert [f.message for f in findings if f.place == place] != [], findings
    assert any(problem in f.message for f in findings if f.place == place)
    with pytest.raises(FormatError) as info:
        _ = graph.tensor("W").data
    assert info.value.place == place and problem in info.value.problem
    assert f"{path}: {place}: " in _cli(capsys, "run", str(path))


def test_good_external_data_with_offset_and_length_reads(tmp_path: Path) -> None:
    path = _external(tmp_path, offset="0", length="16")
    assert registry.check(path)[1] == []
    np.testing.assert_array_equal(registry.load(path).tensor("W").data, [[0, 1], [2, 3]])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_external_data_in_a_fifo_is_refused_without_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.mkfifo(tmp_path / "pipe.bin")  # nobody writes: reading it would block forever
    path = _external(tmp_path, location="pipe.bin")
    graph, findings = registry.check(path)
    assert any("'pipe.bin' is not a regular file" in f.message for f in findings), findings
    with pytest.raises(FormatError, match="is not a regular file"):
        _ = graph.tensor("W").data
    assert "external data file 'pipe.bin' is not a regular file" in _cli(capsys, "run", str(path))
