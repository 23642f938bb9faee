"""Every place an ONNX model can name external data is checked against the model's folder.

A marker file sits outside the model's folder (and, under the same name, in the current
directory); a model names it from one place at a time. Loading must refuse it with that place
before anything is opened, and no command may print or write the marker's bytes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from xocview.cli import main
from xocview.errors import FormatError
from xocview.formats import registry
from xocview.formats.onnx.external import CONTAINERS, model_tensors
from xocview.formats.safe_paths import path_inside

F = TensorProto.FLOAT
MARKER = b"MARKER-7f3a9c-OUTSIDE"  # 21 bytes: read as uint8 it would show up in any output

# Every file opened by Python code while a test runs (the audit event "open"); C++ code (onnx's
# checker, onnxruntime) does not raise it, which the refusal before them makes moot.
_OPENED: list[str] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


# -- the places ----------------------------------------------------------------------------------


def _external(name: str, location: str, data_type: int = TensorProto.UINT8) -> onnx.TensorProto:
    """A 1-D tensor of len(MARKER) elements stored in ``location``."""
    t = onnx.TensorProto()
    t.name, t.data_type = name, data_type
    t.dims.append(len(MARKER))
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(len(MARKER)))):
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    return t


def _indices(location: str | None) -> onnx.TensorProto:
    if location is None:
        return helper.make_tensor("W_idx", TensorProto.INT64, [len(MARKER)], range(len(MARKER)))
    idx = _external("W_idx", location, TensorProto.INT64)
    del idx.external_data[2:]  # no length: 8 bytes per index would not match the marker
    return idx


def _sparse(location: str, part: str) -> onnx.SparseTensorProto:
    values = (
        _external("W", location)
        if part == "values"
        else helper.make_tensor("W", TensorProto.UINT8, [len(MARKER)], [1] * len(MARKER))
    )
    return helper.make_sparse_tensor(
        values, _indices(location if part == "indices" else None), [len(MARKER)]
    )


def _graph(
    nodes: list[onnx.NodeProto],
    initializer: list[onnx.TensorProto] = (),  # type: ignore[assignment]
    sparse: list[onnx.SparseTensorProto] = (),  # type: ignore[assignment]
    name: str = "g",
) -> onnx.GraphProto:
    """y = Identity(x) after ``nodes`` (which write nothing the graph reads)."""
    u8 = TensorProto.UINT8
    return helper.make_graph(
        [*nodes, helper.make_node("Identity", ["x"], ["y"], name=f"{name}_id")],
        name,
        [helper.make_tensor_value_info("x", u8, [len(MARKER)])],
        [helper.make_tensor_value_info("y", u8, [len(MARKER)])],
        initializer=list(initializer),
        sparse_initializer=list(sparse),
    )


def _model(
    graph: onnx.GraphProto,
    functions: list[onnx.FunctionProto] = (),  # type: ignore[assignment]
    training_info: list[onnx.TrainingInfoProto] = (),  # type: ignore[assignment]
) -> onnx.ModelProto:
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("local", 1)]
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions))
    model.training_info.extend(training_info)
    model.ir_version = 8
    return model


def _constant(attr: onnx.AttributeProto, name: str = "c") -> onnx.NodeProto:
    node = helper.make_node("Constant", [], [f"{name}_out"], name=name)
    node.attribute.append(attr)
    return node


def _tensor_attr(name: str, location: str) -> onnx.AttributeProto:
    return helper.make_attribute(name, _external("t", location))


def _branch(nodes: list[onnx.NodeProto], name: str) -> onnx.GraphProto:
    u8 = TensorProto.UINT8
    return helper.make_graph(
        [*nodes, helper.make_node("Identity", ["x"], [f"{name}_y"], name=f"{name}_id")],
        name,
        [],
        [helper.make_tensor_value_info(f"{name}_y", u8, [len(MARKER)])],
    )


def _body(inner: onnx.NodeProto) -> onnx.NodeProto:
    """If(cond) whose then-branch holds ``inner``."""
    return helper.make_node(
        "If",
        ["cond"],
        ["if_out"],
        name="if",
        then_branch=_branch([inner], "then"),
        else_branch=_branch([], "else"),
    )


def _then(node: onnx.NodeProto) -> onnx.GraphProto:
    return next(a.g for a in node.attribute if a.name == "then_branch")


def _if_with_initializer(location: str) -> onnx.NodeProto:
    node = _body(helper.make_node("Identity", ["x"], ["unused"], name="b_noop"))
    _then(node).initializer.append(_external("Wb", location))
    return node


def _function(
    inner: onnx.NodeProto, default: onnx.AttributeProto | None = None
) -> onnx.FunctionProto:
    fn = helper.make_function(
        "local", "f", ["a"], ["b"], [inner, helper.make_node("Identity", ["a"], ["b"])], []
    )
    if default is not None:
        fn.attribute_proto.append(default)
    return fn


def _training(graph_field: str, location: str) -> onnx.TrainingInfoProto:
    info = onnx.TrainingInfoProto()
    graph = getattr(info, graph_field)
    graph.CopyFrom(_graph([], initializer=[_external("Wt", location)], name="train"))
    return info


Build = Callable[[str], onnx.ModelProto]

# place name -> (model naming `location` from that place, the place the error must give)
PLACES: dict[str, tuple[Build, str]] = {
    "initializer": (
        lambda loc: _model(_graph([], initializer=[_external("W", loc)])),
        "initializer 'W'",
    ),
    "sparse values": (
        lambda loc: _model(_graph([], sparse=[_sparse(loc, "values")])),
        "initializer 'W' values",
    ),
    "sparse indices": (
        lambda loc: _model(_graph([], sparse=[_sparse(loc, "indices")])),
        "initializer 'W' indices",
    ),
    "Constant value": (
        lambda loc: _model(_graph([_constant(_tensor_attr("value", loc))])),
        "node 'c' (Constant) attribute 'value'",
    ),
    "Constant sparse_value": (
        lambda loc: _model(
            _graph([_constant(helper.make_attribute("sparse_value", _sparse(loc, "values")))])
        ),
        "node 'c' (Constant) attribute 'sparse_value' values",
    ),
    "tensors list": (
        lambda loc: _model(
            _graph([_constant(helper.make_attribute("tensors", [_external("t", loc)]))])
        ),
        "node 'c' (Constant) attribute 'tensors'[0]",
    ),
    "sparse_tensors list": (
        lambda loc: _model(
            _graph(
                [_constant(helper.make_attribute("sparse", [_sparse(loc, "indices")]))],
            )
        ),
        "node 'c' (Constant) attribute 'sparse'[0] indices",
    ),
    "tensor attribute typed as a float": (
        lambda loc: _model(_graph([_constant(_mistyped(_tensor_attr("value", loc)))])),
        "node 'c' (Constant) attribute 'value'",
    ),
    "If body initializer": (
        lambda loc: _model(_graph([_if_with_initializer(loc)])),
        "node 'if' (If) attribute 'then_branch' initializer 'Wb'",
    ),
    "If body Constant": (
        lambda loc: _model(_graph([_body(_constant(_tensor_attr("value", loc), "bc"))])),
        "node 'if' (If) attribute 'then_branch' node 'bc' (Constant) attribute 'value'",
    ),
    "body in a graphs list": (
        lambda loc: _model(_graph([_in_graphs(_if_with_initializer(loc))])),
        "node 'g' (Holder) attribute 'bodies'[0] initializer 'Wb'",
    ),
    "function node": (
        lambda loc: _model(
            _graph([]), functions=[_function(_constant(_tensor_attr("value", loc), "fc"))]
        ),
        "function 'f' node 'fc' (Constant) attribute 'value'",
    ),
    "function attribute default": (
        lambda loc: _model(
            _graph([]),
            functions=[
                _function(helper.make_node("Identity", ["a"], ["m"]), _tensor_attr("w", loc))
            ],
        ),
        "function 'f' attribute 'w'",
    ),
    "function node's body": (
        lambda loc: _model(_graph([]), functions=[_function(_if_with_initializer(loc))]),
        "function 'f' node 'if' (If) attribute 'then_branch' initializer 'Wb'",
    ),
    "training_info initialization": (
        lambda loc: _model(_graph([]), training_info=[_training("initialization", loc)]),
        "training_info[0] initialization initializer 'Wt'",
    ),
    "training_info algorithm": (
        lambda loc: _model(_graph([]), training_info=[_training("algorithm", loc)]),
        "training_info[0] algorithm initializer 'Wt'",
    ),
}


def _mistyped(attr: onnx.AttributeProto) -> onnx.AttributeProto:
    attr.type = onnx.AttributeProto.FLOAT  # the tensor field is still set
    return attr


def _in_graphs(holder: onnx.NodeProto) -> onnx.NodeProto:
    """A node of a custom op whose GRAPHS attribute holds ``holder``'s then-branch."""
    node = helper.make_node("Holder", ["x"], ["h"], name="g", domain="custom")
    node.attribute.append(helper.make_attribute("bodies", [_then(holder)]))
    return node


# -- the tests ---------------------------------------------------------------------------------


def test_the_walk_covers_every_field_onnx_has_for_a_tensor() -> None:
    """CONTAINERS is exactly what onnx's descriptors say can hold a tensor, at any depth."""
    holders = {"onnx.TensorProto", "onnx.SparseTensorProto"}
    reachable: dict[str, object] = {}
    todo = [onnx.ModelProto.DESCRIPTOR]
    while todo:
        d = todo.pop()
        if d.full_name not in reachable:
            reachable[d.full_name] = d
            todo += [f.message_type for f in d.fields if f.message_type is not None]
    changed = True
    while changed:  # a type holds a tensor when it is one or one of its fields holds one
        changed = False
        for name, d in reachable.items():
            if name not in holders and any(
                f.message_type is not None and f.message_type.full_name in holders
                for f in d.fields  # type: ignore[attr-defined]
            ):
                holders.add(name)
                changed = True
    found = {
        (d.name, f.name)  # type: ignore[attr-defined]
        for d in reachable.values()
        for f in d.fields  # type: ignore[attr-defined]
        if f.message_type is not None and f.message_type.full_name in holders
    }
    assert found == CONTAINERS


def test_every_place_is_walked(tmp_path: Path) -> None:
    for name, (build, place) in PLACES.items():
        places = [p for p, t in model_tensors(build("x.bin")) if t.external_data]
        assert places == [place], name


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp/marker.bin and cwd/marker.bin outside the model's folder tmp/models/."""
    (tmp_path / "marker.bin").write_bytes(MARKER)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    (cwd / "marker.bin").write_bytes(MARKER)
    monkeypatch.chdir(cwd)
    folder = tmp_path / "models"
    folder.mkdir()
    os.symlink(tmp_path, folder / "up")  # a folder link out (a file link is followed)
    return folder


OUTSIDE = {
    "parent": ("../marker.bin", "leaves the model's folder"),
    "absolute": ("{tmp}/marker.bin", "is absolute"),
    "folder link": ("up/marker.bin", "leaves the model's folder through a linked folder"),
}


@pytest.mark.parametrize("how", list(OUTSIDE))
@pytest.mark.parametrize("where", list(PLACES))
def test_a_location_outside_the_folder_is_refused_before_anything_opens_it(
    layout: Path, capsys: pytest.CaptureFixture[str], where: str, how: str
) -> None:
    build, place = PLACES[where]
    location, problem = OUTSIDE[how]
    location = location.format(tmp=layout.parent)
    path = layout / "m.onnx"
    onnx.save(build(location), str(path))
    out = layout / "out.onnx"
    _OPENED.clear()
    with pytest.raises(FormatError) as info:
        registry.load(path)
    assert info.value.place == f"{place} external_data 'location'"
    assert problem in info.value.problem
    for argv in (["info", path], ["check", path], ["run", path], ["convert", path, out]):
        assert main([str(a) for a in argv]) == 1, argv
        printed = "".join(capsys.readouterr())
        assert f"{place} external_data 'location'" in printed and "internal error" not in printed
        assert MARKER.decode() not in printed
    assert not out.exists()
    assert not [p for p in _OPENED if p.endswith("marker.bin")]


@pytest.mark.parametrize("where", ["sparse values", "sparse indices", "initializer"])
def test_a_plain_name_is_read_in_the_models_folder_not_the_current_one(
    layout: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """marker.bin exists in the cwd only: the model's own folder has none, so it is missing."""
    build, place = PLACES[where]
    model = build("marker.bin")
    model.graph.node[-1].CopyFrom(helper.make_node("Add", ["x", "W"], ["y"], name="add"))
    path = layout / "m.onnx"
    onnx.save(model, str(path))
    out = layout / "out.onnx"
    _OPENED.clear()
    for argv in (["run", path], ["convert", path, out]):
        assert main([str(a) for a in argv]) == 1, argv
        printed = "".join(capsys.readouterr())
        assert f"{path}: {place} external_data 'location': " in printed, printed
        assert "external data file 'marker.bin' is missing" in printed
        assert "internal error" not in printed and MARKER.decode() not in printed
    assert not out.exists()
    assert not [p for p in _OPENED if p.endswith("cwd/marker.bin")]


@pytest.mark.parametrize("part", ["values", "indices"])
def test_sparse_external_parts_inside_the_folder_are_read_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str
) -> None:
    monkeypatch.chdir(tmp_path)  # a different file of the same name in the cwd is not read
    (tmp_path / "d.bin").write_bytes(b"\xff" * 256)
    folder = tmp_path / "models"
    folder.mkdir()
    idx = np.arange(len(MARKER), dtype=np.int64)
    (folder / "d.bin").write_bytes(MARKER if part == "values" else idx.tobytes())
    path = folder / "m.onnx"
    onnx.save(PLACES[f"sparse {part}"][0]("d.bin"), str(path))
    w = registry.load(path).tensor("W").data
    expected = np.frombuffer(MARKER, np.uint8) if part == "values" else np.ones(len(MARKER))
    np.testing.assert_array_equal(w, expected)


def test_the_one_check_follows_links_and_keeps_paths_inside(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "sub").mkdir()
    (tmp_path / "in" / "w.bin").write_bytes(b"")
    os.symlink("w.bin", tmp_path / "in" / "near.bin")  # a link that stays inside is fine
    folder = tmp_path / "in"
    assert path_inside("sub/../w.bin", folder, "f", "p") == (folder / "w.bin").resolve()
    assert path_inside("near.bin", folder, "f", "p") == (folder / "w.bin").resolve()
    for bad in ("", ".", "sub/..", "a\0b", "C:/w.bin", "\\\\host\\share\\w", "/w.bin", "../in"):
        with pytest.raises(FormatError) as info:
            path_inside(bad, folder, "f", "p")
        assert info.value.place == "p", bad
