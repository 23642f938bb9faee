"""Values that onnx's own code fails on inside, saved as ONNX: a located one-line FormatError
(exit 1 from the CLI) instead of a TypeError or ValueError from onnx (exit 3)."""

from __future__ import annotations

import json
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from xocview.errors import FormatError
from xocview.formats import registry


def _cast(to: int, path: Path, opset: int = 17) -> Path:
    graph = helper.make_graph(
        [helper.make_node("Cast", ["X"], ["Y"], to=to)],
        "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.save(model, path)
    return path


def _save_error(src: Path, tmp_path: Path) -> FormatError:
    graph = registry.load(src)
    out = tmp_path / "out.onnx"
    with pytest.raises(FormatError) as info:
        registry.save(graph, out)
    assert not out.exists()
    return info.value


@pytest.mark.parametrize("to", [0, 999, -1])
def test_cast_to_no_element_type_names_the_node(tmp_path: Path, to: int) -> None:
    e = _save_error(_cast(to, tmp_path / "cast.onnx"), tmp_path)
    assert e.place == "node 'Cast_0'"
    assert f"attribute 'to' is {to}, which is no element type" in e.problem
    assert "\n" not in str(e)


@pytest.mark.parametrize("version", [2**63 - 1, 2**31, 0, -5])
def test_an_opset_version_out_of_range_names_the_entry(tmp_path: Path, version: int) -> None:
    e = _save_error(_cast(1, tmp_path / "op.onnx", opset=version), tmp_path)
    assert e.place == "graph metadata 'opset_import'[0]"
    assert f"version {version} of domain 'ai.onnx' is out of range" in e.problem


def _json_variant(tmp_path: Path, change: dict[str, object]) -> Path:
    """The Cast model as XOC JSON with graph metadata changed."""
    src = _cast(1, tmp_path / "base.onnx")
    registry.save(registry.load(src), tmp_path / "base.json")
    doc = json.loads((tmp_path / "base.json").read_text())
    graph = doc.get("graph", doc)
    graph["metadata"].update(change)
    path = tmp_path / "variant.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    ("change", "place"),
    [
        ({"ir_version": 10**30}, "graph metadata 'ir_version'"),
        ({"ir_version": 99}, "graph metadata 'ir_version'"),
        ({"model_version": 10**30}, "graph metadata 'model_version'"),
        ({"opset_import": [{"domain": "ai.onnx", "version": 10**30}]}, "graph metadata"),
    ],
)
def test_json_metadata_onnx_cannot_hold_is_located(
    tmp_path: Path, change: dict[str, object], place: str
) -> None:
    e = _save_error(_json_variant(tmp_path, change), tmp_path)
    assert e.place.startswith(place)
    assert "ValueError" not in str(e) and "TypeError" not in str(e)


def test_a_valid_cast_still_saves(tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    registry.save(registry.load(_cast(7, tmp_path / "cast.onnx")), out)
    onnx.checker.check_model(onnx.load(out), full_check=True)
