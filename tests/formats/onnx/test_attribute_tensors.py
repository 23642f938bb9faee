"""Tensors in node attributes keep their values at any size, read lazily as initializers are.

paddle2onnx (and a popular voice-activity model) keep weights in Constant nodes: a 300k-value
Constant must load without being decoded, run as onnxruntime runs it, come back bit-exact from
a save as .onnx, and be counted in the note of a save as XOC JSON (which has no field for it).
"""

from __future__ import annotations

import copy
import pickle
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.formats.onnx.running import outputs
from xocview.cli import main
from xocview.errors import FormatError
from xocview.executor import run
from xocview.formats.registry import load, save
from xocview.model.attribute_tensor import AttributeTensor

ROWS, COLS = 600, 500  # 300,000 values: well over what JSON keeps (65,536)
FORMS = ("raw_data", "float_data", "external")


def _weight(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((ROWS, COLS)).astype(np.float32)


def constant_model(w: np.ndarray, folder: Path, form: str, name: str = "m.onnx") -> Path:
    """X [2, ROWS] @ Constant W: W's values as raw_data, float_data or external data."""
    if form == "float_data":
        t = helper.make_tensor("w", TensorProto.FLOAT, w.shape, w.ravel().tolist())
    else:
        t = numpy_helper.from_array(w, "w")
    const = helper.make_node("Constant", [], ["W"], name="Constant_24", value=t)
    matmul = helper.make_node("MatMul", ["X", "W"], ["Y"], name="matmul")
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, w.shape[0]])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, w.shape[1]])
    graph = helper.make_graph([const, matmul], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / name
    if form == "external":  # onnx moves attribute tensors too when asked (convert_attribute)
        onnx.save(
            model,
            str(path),
            save_as_external_data=True,
            location=name + ".bin",
            size_threshold=0,
            convert_attribute=True,
        )
        kept = onnx.load(str(path), load_external_data=False).graph.node[0].attribute[0].t
        assert kept.data_location == TensorProto.EXTERNAL
    else:
        onnx.save(model, str(path))
    return path


def _summary(graph: object) -> AttributeTensor:
    spec = graph.node("Constant_24").attributes["value"]["tensor"]  # type: ignore[attr-defined]
    assert isinstance(spec, AttributeTensor)
    return spec


@pytest.mark.parametrize("form", FORMS)
def test_a_large_constant_loads_without_decoding_and_runs_as_onnxruntime(
    tmp_path: Path, form: str
) -> None:
    w = _weight()
    path = constant_model(w, tmp_path, form)
    tracemalloc.start()
    graph = load(path)
    held = tracemalloc.get_traced_memory()[0]  # the file's bytes come and go while it loads
    tracemalloc.stop()
    spec = _summary(graph)
    assert not spec.is_read and "values" not in spec
    assert spec == {"dtype": "float32", "shape": [ROWS, COLS]}
    assert held < w.nbytes // 10, held  # no array or list of the values is held
    x = np.random.default_rng(1).standard_normal((2, ROWS)).astype(np.float32)
    got = run(graph, {"X": x}).outputs["Y"]
    assert spec.is_read
    np.testing.assert_allclose(got, outputs(path, {"X": x})[0], rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(spec.array(), w)


@pytest.mark.parametrize("form", FORMS)
def test_a_large_constant_comes_back_bit_exact_from_onnx_and_runs_there(
    tmp_path: Path, form: str
) -> None:
    w = _weight(2)
    w[0, :4] = [np.nan, -0.0, np.inf, np.float32(1e-45)]  # bits that a float round trip loses
    path = constant_model(w, tmp_path, form)
    out = tmp_path / "out" / "back.onnx"
    out.parent.mkdir()
    assert save(load(path), out) == []
    written = onnx.load(str(out)).graph.node[0].attribute[0].t
    assert numpy_helper.to_array(written).tobytes() == w.tobytes()
    again = load(out)
    assert not _summary(again).is_read
    assert _summary(again).array().tobytes() == w.tobytes()
    x = np.ones((2, ROWS), np.float32)
    np.testing.assert_array_equal(outputs(out, {"X": x})[0], outputs(path, {"X": x})[0])


def test_integer_and_exotic_constants_keep_their_values(tmp_path: Path) -> None:
    """int64_data and bfloat16 raw_data, over the JSON limit: run and saved back unchanged."""
    ints = np.arange(70_000, dtype=np.int64) - 35_000
    bf16 = helper.make_tensor("b", TensorProto.BFLOAT16, [70_000], np.zeros(70_000, np.uint16))
    nodes = [
        helper.make_node("Constant", [], ["I"], name="ints", value=numpy_helper.from_array(ints)),
        helper.make_node("Constant", [], ["B"], name="bf16", value=bf16),
        helper.make_node("Cast", ["B"], ["BF"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["X", "I"], ["Y"], name="add"),
    ]
    nodes[0].attribute[0].t.ClearField("raw_data")
    nodes[0].attribute[0].t.int64_data.extend(ints.tolist())
    io = [helper.make_tensor_value_info("X", TensorProto.INT64, [70_000])]
    outs = [
        helper.make_tensor_value_info("Y", TensorProto.INT64, [70_000]),
        helper.make_tensor_value_info("BF", TensorProto.FLOAT, [70_000]),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", io, outs), opset_imports=[helper.make_opsetid("", 17)]
    )
    path = tmp_path / "ints.onnx"
    onnx.save(model, str(path))
    graph = load(path)
    result = run(graph, {"X": np.ones(70_000, np.int64)}).outputs
    np.testing.assert_array_equal(result["Y"], ints + 1)
    np.testing.assert_array_equal(result["BF"], np.zeros(70_000, np.float32))
    out = tmp_path / "back.onnx"
    save(graph, out)
    back = onnx.load(str(out))
    kept = {n.name: n.attribute[0].t for n in back.graph.node if n.op_type == "Constant"}
    np.testing.assert_array_equal(numpy_helper.to_array(kept["ints"]), ints)
    assert kept["bf16"].data_type == TensorProto.BFLOAT16
    assert numpy_helper.to_array(kept["bf16"]).tobytes() == bytes(2 * 70_000)


def test_convert_to_json_says_how_many_values_it_cannot_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = constant_model(_weight(), tmp_path, "raw_data")
    model = onnx.load(str(path))
    model.graph.initializer.append(numpy_helper.from_array(np.ones((3, 4), np.float32), "B"))
    onnx.save(model, str(path))
    out = tmp_path / "m.json"
    assert main(["convert", str(path), str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        "xocview: note: 1 weight and 1 attribute tensor (300,012 values) are written without "
        "their values: XOC JSON keeps shapes and dtypes"
    ) in err
    assert not _summary(load(path)).is_read  # counted from the shapes
    # The JSON keeps dtype and shape; ONNX from it says why the values are not there.
    assert main(["convert", str(out), str(tmp_path / "again.onnx")]) == 1
    assert "values were not kept (XOC JSON keeps" in capsys.readouterr().err


def test_a_small_constant_keeps_its_values_as_json_and_no_note_is_given(tmp_path: Path) -> None:
    w = np.arange(12, dtype=np.float32).reshape(3, 4)
    graph = load(constant_model(w, tmp_path, "raw_data"))
    value = graph.node("Constant_24").attributes["value"]["tensor"]
    assert not isinstance(value, AttributeTensor)
    assert value["values"] == w.ravel().tolist()
    assert save(graph, tmp_path / "small.json") == []


def test_missing_and_damaged_constant_data_fail_on_use_naming_the_place(tmp_path: Path) -> None:
    path = constant_model(_weight(), tmp_path, "external")
    (tmp_path / "m.onnx.bin").unlink()
    graph = load(path)  # nothing is read yet
    with pytest.raises(FormatError) as info:
        run(graph, {"X": np.ones((2, ROWS), np.float32)})
    assert (
        info.value.place
        == "node 'Constant_24' (Constant) attribute 'value' external_data 'location'"
    )
    assert "external data file 'm.onnx.bin' is missing" in info.value.problem
    short = constant_model(_weight(), tmp_path, "raw_data", "short.onnx")
    model = onnx.load(str(short))
    t = model.graph.node[0].attribute[0].t
    t.raw_data = t.raw_data[:-4]
    onnx.save(model, str(short))
    with pytest.raises(FormatError, match=r"raw_data has 1,199,996 bytes; expected 1,200,000"):
        run(load(short), {"X": np.ones((2, ROWS), np.float32)})


def test_the_lazy_values_survive_copies_and_pickles_without_being_read(tmp_path: Path) -> None:
    """Undo steps copy attributes; the window gets a graph read in a child process pickled
    (an external reader, a closure, travels by ``load_process``'s pickler: tests/ui)."""
    w = _weight(3)
    for form in ("raw_data", "external"):
        spec = _summary(load(constant_model(w, tmp_path, form, f"{form}.onnx")))
        others = [copy.deepcopy(spec), spec.copy(), copy.copy(spec)]
        if form == "raw_data":
            others.append(pickle.loads(pickle.dumps(spec)))
        for other in others:
            assert isinstance(other, AttributeTensor) and other == spec
            assert not other.is_read
            np.testing.assert_array_equal(other.array(), w)
        assert not spec.is_read
