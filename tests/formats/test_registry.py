"""xocview/formats/registry.py: detection by content, located refusals, saving by extension."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xocview.errors import FormatError, UnknownFormatError
from xocview.formats import check, detect, load, save, xoc
from xocview.formats.source import Source

GRAPH = {
    "id": "g",
    "name": "g",
    "tensors": [
        {"id": "x", "name": "input", "shape": [2], "dtype": "float32"},
        {"id": "y", "name": "output", "shape": [2], "dtype": "float32"},
    ],
    "nodes": [{"id": "n", "name": "Relu", "inputs": [0], "outputs": [1], "attributes": {}}],
    "inputs": [0],
    "outputs": [1],
    "metadata": {},
}


def test_content_decides_not_the_extension(tmp_path: Path) -> None:
    path = tmp_path / "graph.txt"
    path.write_text(json.dumps(GRAPH), encoding="utf-8")
    assert detect(Source(path)) is xoc
    assert [n.id for n in load(path).nodes] == ["n"]


def test_a_json_file_of_no_known_format_lists_each_format_and_its_reason(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"theme": "dark"}', encoding="utf-8")
    with pytest.raises(UnknownFormatError) as info:
        load(path)
    assert info.value.reasons == {
        "XOC JSON": "no 'tensors' list at the root",
        "NNVM JSON": "no 'nodes' list at the root",
        "LightNet JSON IR": "no 'ops' list at the root",
        "safetensors": "a JSON file without a weight_map (not a sharded checkpoint's index)",
        "PyTorch export (.pt2)": "not a zip archive",
        "TorchScript": "not a zip archive",
        "PyTorch checkpoint": "neither a zip archive nor a legacy torch.save file",
        "TFLite": "no TFL3 file identifier at bytes 4..8",
        "Keras": "neither a zip archive nor an HDF5 file",
        "TensorFlow": "not a GraphDef or SavedModel protobuf (first field)",
        "GGUF": "does not start with the GGUF magic b'GGUF'",
        "Hugging Face model": "not a config.json",
        "ONNX": "a JSON file, not an ONNX protobuf",
    }
    assert str(info.value).startswith(f"{path}: not a graph file any format accepts")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"", "not a JSON object"),
        (b"\x08\x07\x12\x04\x00\xff binary", "not a JSON object"),
        (b"[1, 2, 3]", "the JSON root is not an object"),
    ],
)
def test_non_graph_files_are_refused_with_reasons(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(content)
    with pytest.raises(UnknownFormatError) as info:
        load(path)
    assert info.value.reasons["XOC JSON"] == expected
    assert "ONNX" in info.value.reasons


def test_a_damaged_onnx_file_gets_the_onnx_error_not_a_listing(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(b"\x08\x07\x12\x04\x00\xff binary")
    with pytest.raises(FormatError, match="not a valid ONNX model") as info:
        load(path)
    assert not isinstance(info.value, UnknownFormatError)


def test_broken_json_reports_the_parse_error_not_a_format_listing(tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    path.write_text('{"id": "g", "tensors": [', encoding="utf-8")
    with pytest.raises(FormatError) as info:
        load(path)
    assert not isinstance(info.value, UnknownFormatError)
    assert "invalid JSON" in str(info.value) and "line 1" in str(info.value)


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: p, "no such file"),
        (lambda p: (p.mkdir(), p)[1], "is a folder, not a file"),
    ],
)
def test_unreadable_paths(tmp_path: Path, make: object, problem: str) -> None:
    path = make(tmp_path / "missing.json")  # type: ignore[operator]
    with pytest.raises(FormatError, match=problem):
        load(path)


def test_save_writes_xoc_json_and_refuses_other_extensions(tmp_path: Path) -> None:
    path = tmp_path / "in.json"
    path.write_text(json.dumps(GRAPH), encoding="utf-8")
    g = load(path)
    save(g, tmp_path / "out.json")
    assert load(tmp_path / "out.json") == g
    with pytest.raises(FormatError, match=r"a \.json path \(XOC JSON\) or an \.onnx path"):
        save(g, tmp_path / "out.pb")
    assert not (tmp_path / "out.pb").exists()


def test_check_combines_format_faults_and_model_findings(tmp_path: Path) -> None:
    doc = json.loads(json.dumps(GRAPH))
    doc["nodes"][0]["inputs"] = [0, 7]
    doc["nodes"].append(
        {"id": "n", "name": "Relu", "inputs": [1], "outputs": [0], "attributes": {}}
    )
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    _, findings = check(path)
    places = [f.place for f in findings if f.severity == "error"]
    assert places[0] == "nodes[0].inputs[1]"
    assert "nodes[1].id" in places  # duplicate node id
    assert any("cycle" in f.message for f in findings)


def test_the_open_dialog_filter_offers_every_format_s_extensions() -> None:
    from xocview.formats.registry import FORMATS, file_filter

    entries = file_filter().split(";;")
    assert entries[0].startswith("Models and graphs (*.onnx ")
    assert entries[-1] == "All files (*)"
    first = entries[0]
    for fmt in FORMATS:
        for ext in fmt.EXTENSIONS:
            assert f"*{ext}" in first, (fmt.NAME, ext)
    assert "PyTorch export (*.pt2)" in entries
    assert "safetensors (*.safetensors *.json)" in entries
