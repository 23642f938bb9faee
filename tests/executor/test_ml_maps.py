"""ZipMap, DictVectorizer, CastMap and CategoryMapper against onnxruntime on one-node
models (map inputs and sequence-of-map outputs as onnxruntime takes and gives them), the
map helpers the CLI prints with, and the refusals by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.executor.test_ml_ops import check, ours
from xocview.executor.maps import describe_maps, map_items, preview_maps, value_dtype

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the per-op suite's reference")

RNG = np.random.default_rng(2930)
ML = "ai.onnx.ml"


def _map_type(key: int, value: int) -> onnx.TypeProto:
    return helper.make_map_type_proto(key, helper.make_tensor_type_proto(value, None))


def ort_on_map(
    op: str, value: dict[Any, Any], kinds: tuple[int, int], attrs: dict[str, Any]
) -> Any:
    """One ``op`` node whose input is a map of ``kinds`` (key, value), run by onnxruntime."""
    node = helper.make_node(op, ["X"], ["Y"], domain=ML, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_value_info("X", _map_type(*kinds))],
        [onnx.ValueInfoProto(name="Y")],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)]
    )
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model)
    known = {vi.name: vi for vi in model.graph.value_info}
    if "Y" in known:
        del model.graph.output[:]
        model.graph.output.append(known["Y"])
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": value})[0]


def _same(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    if want.dtype.kind in "OUS":
        assert got.dtype == object and got.tolist() == want.astype(object).tolist()
    else:
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


# ------------------------------------------------------------------------------------ ZipMap


def _zip_map_ort(x: np.ndarray, attrs: dict[str, Any]) -> list[dict[Any, float]]:
    strings = "classlabels_strings" in attrs
    key = TensorProto.STRING if strings else TensorProto.INT64
    out_type = helper.make_sequence_type_proto(_map_type(key, TensorProto.FLOAT))
    node = helper.make_node("ZipMap", ["X"], ["Z"], domain=ML, **attrs)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
        [helper.make_value_info("Z", out_type)],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ML, 1)]
    )
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x})[0]


@pytest.mark.parametrize(
    "attrs",
    [
        {"classlabels_int64s": [0, 5, -2]},
        {"classlabels_strings": ["cat", "dog", "émeu"]},
        {"classlabels_int64s": [1, 1, 2]},  # a repeated label: the last column wins
    ],
)
@pytest.mark.parametrize("shape", [(4, 3), (3,), (0, 3)])
def test_zip_map_gives_one_map_per_row_as_onnxruntime(
    attrs: dict[str, Any], shape: tuple[int, ...]
) -> None:
    x = RNG.random(shape).astype(np.float32)
    (got,) = [ours("ZipMap", [x], attrs, opset=1)[0].tolist()]
    want = _zip_map_ort(x, attrs)
    assert got == want  # keys, their order and every float exactly
    assert all(type(v) is float for m in got for v in m.values())


@pytest.mark.parametrize(
    ("x", "attrs", "message"),
    [
        (np.zeros((2, 3), np.float32), {"classlabels_int64s": [0, 1]}, "3 columns for 2"),
        (np.zeros((2, 2), np.float32), {}, "exactly one of"),
        (np.zeros((2, 2), np.int64), {"classlabels_int64s": [0, 1]}, "expected float"),
        (np.zeros((1, 2, 2), np.float32), {"classlabels_int64s": [0, 1]}, "expected float"),
    ],
)
def test_zip_map_refusals(x: np.ndarray, attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=f"ZipMap: .*{message}"):
        ours("ZipMap", [x], attrs, opset=1)


# ----------------------------------------------------------------------------- DictVectorizer


@pytest.mark.parametrize(
    ("value", "key", "attrs"),
    [
        ({"a": 1.5, "c": -2.0, "zz": 9.0}, TensorProto.STRING, {"string_vocabulary": list("abca")}),
        ({4: 2.5, 9: 1.0, -3: 0.5}, TensorProto.INT64, {"int64_vocabulary": [9, 1, 4]}),
    ],
)
def test_dict_vectorizer_matches_onnxruntime(
    value: dict[Any, Any], key: int, attrs: dict[str, Any]
) -> None:
    """onnxruntime's Python binding takes maps of floats alone."""
    want = ort_on_map("DictVectorizer", value, (key, TensorProto.FLOAT), attrs)
    (got,) = ours("DictVectorizer", [value], attrs, opset=1)  # type: ignore[list-item]
    _same(got, want)


@pytest.mark.parametrize(
    ("value", "attrs", "want"),
    [
        ({"b": np.float64(0.25)}, {"string_vocabulary": ["a", "b"]}, np.array([[0, 0.25]])),
        ({"b": 3, "a": -1}, {"string_vocabulary": list("abc")}, np.array([[-1, 3, 0]])),
        ({1: "x", 2: "y"}, {"int64_vocabulary": [2, 3]}, np.array([["y", ""]], dtype=object)),
    ],
)
def test_dict_vectorizer_keeps_the_values_type(
    value: dict[Any, Any], attrs: dict[str, Any], want: np.ndarray
) -> None:
    """Doubles, integers and strings (which onnxruntime's Python binding cannot feed)."""
    (got,) = ours("DictVectorizer", [value], attrs, opset=1)  # type: ignore[list-item]
    _same(got, want)


def test_dict_vectorizer_takes_a_sequence_of_maps_row_by_row() -> None:
    rows = [{"a": 1.0}, {"b": 2.0, "a": 3.0}, {}]
    (got,) = ours("DictVectorizer", [rows], {"string_vocabulary": ["a", "b"]}, opset=1)  # type: ignore[list-item]
    np.testing.assert_array_equal(got, np.array([[1, 0], [3, 2], [0, 0]], np.float32))


@pytest.mark.parametrize(
    ("value", "attrs", "message"),
    [
        ({1: 1.0}, {"string_vocabulary": ["a"]}, "map key 1 is not of the vocabulary's type"),
        ({"a": 1.0}, {}, "exactly one of"),
        (np.zeros(3, np.float32), {"string_vocabulary": ["a"]}, "expected a map input"),
        ({"a": [1.0]}, {"string_vocabulary": ["a"]}, "map value [1.0] is not supported"),
        ({(1, 2): 1.0}, {"string_vocabulary": ["a"]}, "map key (1, 2) is not supported"),
    ],
)
def test_dict_vectorizer_refusals(value: Any, attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="DictVectorizer: ") as caught:
        ours("DictVectorizer", [value], attrs, opset=1)
    assert message in str(caught.value)


# ------------------------------------------------------------------------------------ CastMap


@pytest.mark.parametrize("cast_to", ["TO_FLOAT", "TO_INT64", "TO_STRING"])
@pytest.mark.parametrize(("form", "max_map"), [("DENSE", 1), ("SPARSE", 6), ("SPARSE", 2)])
def test_cast_map_matches_onnxruntime(cast_to: str, form: str, max_map: int) -> None:
    """Values in key order (DENSE) or at their keys, padded with 0 or "0.f" (SPARSE); floats
    written with six decimals or truncated, keys past max_map dropped."""
    value = {3: 2.75, 0: -1.5, 1: 1e-3, 7: -0.6}
    attrs = {"cast_to": cast_to, "map_form": form, "max_map": max_map}
    want = ort_on_map("CastMap", value, (TensorProto.INT64, TensorProto.FLOAT), attrs)
    (got,) = ours("CastMap", [value], attrs, opset=1)  # type: ignore[list-item]
    _same(got, want)


@pytest.mark.parametrize(
    ("cast_to", "form", "want"),
    [
        ("TO_FLOAT", "DENSE", np.array([[-7, 12, 2.5]], np.float32)),
        ("TO_INT64", "SPARSE", np.array([[-7, 12, 0, 2]], np.int64)),
        ("TO_STRING", "SPARSE", np.array([["-7", "12", "0.f", "2.5"]], dtype=object)),
    ],
)
def test_cast_map_parses_strings(cast_to: str, form: str, want: np.ndarray) -> None:
    """String values (which onnxruntime's Python binding cannot feed) are parsed."""
    attrs = {"cast_to": cast_to, "map_form": form, "max_map": 4}
    value = {3: "2.5", 0: "-7", 1: "12"}
    (got,) = ours("CastMap", [value], attrs, opset=1)  # type: ignore[list-item]
    _same(got, want)


@pytest.mark.parametrize(
    ("value", "attrs", "message"),
    [
        ({-1: 1.0}, {"map_form": "SPARSE", "max_map": 3}, "map key -1 is negative"),
        ({0: 1.0}, {"map_form": "SPARSE", "max_map": 0}, "max_map is 0"),
        ({"a": 1.0}, {}, "map key 'a' is not supported; expected int64 keys"),
        ({0: "pear"}, {}, "a map value is not a number"),
        ({0: 1.0}, {"cast_to": "TO_BOOL"}, "cast_to 'TO_BOOL' is not supported"),
    ],
)
def test_cast_map_refusals(value: dict[Any, Any], attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="CastMap: ") as caught:
        ours("CastMap", [value], attrs, opset=1)  # type: ignore[list-item]
    assert message in str(caught.value)


# ----------------------------------------------------------------------------- CategoryMapper

_CATS = {"cats_strings": ["a", "b", "c", "b"], "cats_int64s": [10, 20, 30, 40]}


@pytest.mark.parametrize(
    "x",
    [
        np.array([["a", "b"], ["zz", "c"]], dtype=object),
        np.array([10, 40, 20, 5, -1], dtype=np.int64),
        np.array([], dtype=np.int64),
        np.array("c", dtype=object),
    ],
)
@pytest.mark.parametrize("defaults", [{}, {"default_int64": 7, "default_string": "none"}])
def test_category_mapper_matches_onnxruntime(x: np.ndarray, defaults: dict[str, Any]) -> None:
    """Both ways; a repeated category keeps its last mapping, as onnxruntime's map does."""
    check("CategoryMapper", [x], {**_CATS, **defaults}, opset=1)


def test_category_mapper_without_categories_gives_defaults() -> None:
    attrs = {"cats_strings": [], "cats_int64s": [], "default_int64": 3}
    (got,) = ours("CategoryMapper", [np.array(["a", "b"], dtype=object)], attrs, opset=1)
    assert got.tolist() == [3, 3]


@pytest.mark.parametrize(
    ("x", "attrs", "message"),
    [
        (np.zeros(2, np.float32), _CATS, "input dtype float32 is not supported"),
        (np.zeros(2, np.int64), {"cats_strings": ["a"], "cats_int64s": []}, "1 cats_strings and 0"),
    ],
)
def test_category_mapper_refusals(x: np.ndarray, attrs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match="CategoryMapper: ") as caught:
        ours("CategoryMapper", [x], attrs, opset=1)
    assert message in str(caught.value)


# ---------------------------------------------------------------------------- map helpers


def test_maps_describe_and_preview_readably() -> None:
    rows = [{0: 0.25, 1: 0.75}, {0: 1 / 3, 1: 2 / 3}, {0: 1.0, 1: 0.0}, {0: 0.5, 1: 0.5}]
    assert describe_maps(rows) == "sequence of 4 maps (int64 -> float)"
    assert describe_maps(rows[:1]) == "sequence of 1 map (int64 -> float)"
    assert describe_maps({"a": "x"}) == "map of 1 (string -> string)"
    assert describe_maps([np.zeros(2)]) is None and describe_maps(np.zeros(2)) is None
    assert preview_maps(rows) == [
        "{0: 0.25, 1: 0.75}",
        "{0: 0.333333, 1: 0.666667}",
        "{0: 1, 1: 0}",
        "... 1 more",
    ]
    wide = {f"k{i}": float(i) for i in range(10)}
    assert preview_maps(wide) == [
        "{'k0': 0, 'k1': 1, 'k2': 2, 'k3': 3, 'k4': 4, 'k5': 5, 'k6': 6, 'k7': 7, ... 2 more}"
    ]


def test_map_items_and_value_dtypes() -> None:
    assert map_items({b"a": 1, np.int64(3): 2.0}, "op") == {"a": 1, 3: 2.0}
    assert value_dtype([1.0, 2]) == np.float32
    assert value_dtype([np.float64(1.0)]) == np.float64
    assert value_dtype([1, np.int32(2)]) == np.int64
    assert value_dtype(["a"]).kind == "O"
    assert value_dtype([]) == np.float32
    with pytest.raises(ValueError, match="op: map key True"):
        map_items({True: 1.0}, "op")
