"""xocview/formats/xoc/ (reader, writer): reading, located errors, canonical writing."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from tests.strategies import graphs
from xocview.errors import FormatError
from xocview.formats import xoc
from xocview.formats.source import Source
from xocview.model import Graph, Node, Tensor

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
CORPUS = SHARED / "corpus" / "xoc"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus/xoc is absent")


def write(tmp_path: Path, doc: Any, name: str = "model.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path


def load_doc(tmp_path: Path, doc: Any, name: str = "model.json") -> Graph:
    return xoc.load(Source(write(tmp_path, doc, name)))


def minimal(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "id": "g",
        "name": "g",
        "tensors": [
            {"id": "x", "name": "input", "shape": [1, 3], "dtype": "float32"},
            {"id": "y", "name": "output", "shape": [1, 3], "dtype": "float32"},
        ],
        "nodes": [{"id": "relu", "name": "Relu", "inputs": [0], "outputs": [1], "attributes": {}}],
        "inputs": [0],
        "outputs": [1],
        "metadata": {},
    }
    doc.update(changes)
    return doc


# -- round trip ---------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs())
def test_round_trip_gives_an_equal_model_and_identical_bytes(
    graph: Graph, tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("rt") / "g.json"
    xoc.save(graph, path)
    first = path.read_bytes()
    again = xoc.load(Source(path))
    assert again == graph
    xoc.save(again, path)
    assert path.read_bytes() == first


@settings(max_examples=100, deadline=None)
@given(graph=graphs())
def test_fast_and_careful_readers_agree(graph: Graph) -> None:
    """load() takes a fast path per element; read_findings() checks every field."""
    text = xoc.dumps(graph)
    src = _MemorySource(text)
    careful, found = xoc.read_findings(src)
    assert found == []
    assert xoc.load(src) == careful == graph


class _MemorySource(Source):
    def __init__(self, text: str) -> None:
        super().__init__("mem.json")
        self._bytes = text.encode("utf-8")


def test_written_form_is_the_specs_layout() -> None:
    g = Graph("m", "m", [Tensor("t0", "input", [1, 3, 224, 224], "float32")], [], [0], [0])
    g.nodes.append(
        Node(
            "n0",
            "Conv",
            [0],
            [0],
            {"kernel_shape": [3, 3]},
            {"perf.time.cpu": 1.5} and {"perf": {"time": {"cpu": 1.5}}},
        )
    )
    text = xoc.dumps(g)
    assert text.splitlines() == [
        "{",
        '  "id": "m",',
        '  "name": "m",',
        '  "tensors": [',
        '    { "id": "t0", "name": "input", "shape": [1, 3, 224, 224], "dtype": "float32" }',
        "  ],",
        '  "nodes": [',
        "    {",
        '      "id": "n0",',
        '      "name": "Conv",',
        '      "inputs": [0],',
        '      "outputs": [0],',
        '      "attributes": { "kernel_shape": [3, 3] },',
        '      "metadata": { "perf": { "time": { "cpu": 1.5 } } }',
        "    }",
        "  ],",
        '  "inputs": [0],',
        '  "outputs": [0],',
        '  "metadata": {}',
        "}",
    ]
    assert all(len(line) <= 100 for line in text.splitlines())


def test_long_values_break_over_lines_within_100_columns() -> None:
    md = {"description": "x" * 150, "tags": [f"tag{i}" for i in range(40)]}
    g = Graph("m", "m", [Tensor("t", "weight", [2], "float32", md)])
    text = xoc.dumps(g)
    lines = text.splitlines()
    assert '          "tag0",' in lines
    assert all(len(line) <= 100 for line in lines if "xxxxx" not in line)
    assert json.loads(text)["tensors"][0]["metadata"] == md


def test_empty_metadata_is_an_empty_object_and_nothing_is_invented(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    xoc.save(load_doc(tmp_path, {k: v for k, v in minimal().items() if k != "metadata"}), out)
    doc = json.loads(out.read_text())
    assert doc["metadata"] == {}
    assert list(doc) == ["id", "name", "tensors", "nodes", "inputs", "outputs", "metadata"]
    assert "metadata" not in doc["tensors"][0] and "metadata" not in doc["nodes"][0]


def test_dotted_keys_are_expanded_on_read(tmp_path: Path) -> None:
    doc = minimal(metadata={"perf.time.cpu": 12.5, "perf.time.gpu": 3})
    doc["nodes"][0]["metadata"] = {"a.b": 1}
    doc["tensors"][0]["metadata"] = {"q.scale": 0.5}
    g = load_doc(tmp_path, doc)
    assert g.metadata == {"perf": {"time": {"cpu": 12.5, "gpu": 3}}}
    assert g.nodes[0].metadata == {"a": {"b": 1}}
    assert g.tensors[0].metadata == {"q": {"scale": 0.5}}
    assert '"perf": { "time": { "cpu": 12.5, "gpu": 3 } }' in xoc.dumps(g)


def test_dtypes_beyond_the_spec_keep_onnx_names_and_aliases_are_canonical(tmp_path: Path) -> None:
    doc = minimal()
    doc["tensors"][0]["dtype"] = "bfloat16"
    doc["tensors"][1]["dtype"] = "float64"
    g = load_doc(tmp_path, doc)
    assert [t.dtype for t in g.tensors] == ["bfloat16", "double"]


def test_symbolic_dimensions_become_minus_one_and_keep_their_symbol(tmp_path: Path) -> None:
    doc = minimal()
    doc["tensors"][0]["shape"] = ["batch", 3]
    g = load_doc(tmp_path, doc)
    assert g.tensors[0].shape == [-1, 3]
    assert g.tensors[0].metadata == {"shape_symbols": ["batch", None]}
    assert json.loads(xoc.dumps(g))["tensors"][0]["shape"] == [-1, 3]


# -- variants of the other XOC tool -------------------------------------------------------------


def test_wrapped_root_and_operators_key_read_as_the_spec_form(tmp_path: Path) -> None:
    plain = load_doc(tmp_path, minimal(), "a.json")
    doc = minimal()
    doc["operators"] = doc.pop("nodes")
    assert load_doc(tmp_path, {"graph": doc}, "b.json") == plain
    written = json.loads(xoc.dumps(load_doc(tmp_path, {"graph": doc}, "b.json")))
    assert "nodes" in written and "operators" not in written and "graph" not in written


@needs_corpus
@pytest.mark.parametrize(
    "path", sorted(CORPUS.glob("*.json")) if CORPUS.is_dir() else [], ids=lambda p: p.name
)
def test_every_corpus_file_loads_and_round_trips(path: Path, tmp_path: Path) -> None:
    src = Source(path)
    assert xoc.sniff(src) is None
    g = xoc.load(src)
    raw = json.loads(path.read_text())
    raw = raw.get("graph", raw)
    assert len(g.nodes) == len(raw.get("nodes", raw.get("operators")))
    assert len(g.tensors) == len(raw["tensors"])
    out = tmp_path / "out.json"
    xoc.save(g, out)
    assert xoc.load(Source(out)) == g


@needs_corpus
def test_the_canonical_corpus_example_saves_byte_identical(tmp_path: Path) -> None:
    src = CORPUS / "xoc_example-graph.json"
    out = tmp_path / "out.json"
    xoc.save(xoc.load(Source(src)), out)
    assert out.read_bytes() == src.read_bytes()


@needs_corpus
def test_operators_variant_equals_the_nodes_form() -> None:
    a = xoc.load(Source(CORPUS / "xoc_example-graph.json"))
    b = xoc.load(Source(CORPUS / "xoc_v2_operators_example-graph.json"))
    assert a == b


@pytest.mark.skipif(not (SHARED / "specs").is_dir(), reason="../shared/specs is absent")
def test_the_specs_example_reproduces_its_content(tmp_path: Path) -> None:
    spec = (SHARED / "specs" / "xoc-json-format.zh.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```json\n(.*?)```", spec, flags=re.S)
    example = next(json.loads(b) for b in blocks if '"simple_model"' in b)
    out = tmp_path / "out.json"
    xoc.save(load_doc(tmp_path, example), out)
    assert json.loads(out.read_text()) == example


# -- located errors -----------------------------------------------------------------------------


def _nodes_with_bad_index() -> dict[str, Any]:
    tensors = [
        {"id": f"t{i}", "name": "activation", "shape": [1], "dtype": "float32"} for i in range(12)
    ]
    nodes = [
        {"id": f"n{i}", "name": "Relu", "inputs": [i], "outputs": [i + 1], "attributes": {}}
        for i in range(4)
    ]
    nodes[3]["inputs"] = [3, 17]
    return minimal(tensors=tensors, nodes=nodes, inputs=[0], outputs=[4])


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (
            _nodes_with_bad_index(),
            "model.json: nodes[3].inputs[1]: tensor index 17 out of range (12 tensors)",
        ),
        (
            {k: v for k, v in minimal().items() if k != "id"},
            "model.json: id: missing; expected a string",
        ),
        (minimal(name=3), "model.json: name: is a number; expected a string"),
        (minimal(tensors={}), "model.json: tensors: is an object; expected an array"),
        (
            {k: v for k, v in minimal().items() if k != "nodes"},
            "model.json: nodes: missing; expected an array",
        ),
        (minimal(inputs=[5]), "model.json: inputs[0]: tensor index 5 out of range (2 tensors)"),
        (
            minimal(outputs=["y"]),
            "model.json: outputs[0]: is a string; expected a tensor index (integer)",
        ),
        (
            {"graph": minimal(outputs=[-1])},
            "model.json: graph.outputs[0]: tensor index -1 out of range (2 tensors)",
        ),
        ([1, 2], "model.json: root: is an array; expected a JSON object"),
    ],
)
def test_structural_faults_are_located(tmp_path: Path, doc: Any, message: str) -> None:
    with pytest.raises(FormatError) as info:
        load_doc(tmp_path, doc)
    assert str(info.value).replace(str(tmp_path) + os.sep, "") == message


def _tensor_fault(**fields: Any) -> dict[str, Any]:
    doc = minimal()
    doc["tensors"][1] = {"id": "y", "name": "output", "shape": [1, 3], "dtype": "float32", **fields}
    doc["tensors"][1] = {k: v for k, v in doc["tensors"][1].items() if v is not None}
    return doc


def _node_fault(**fields: Any) -> dict[str, Any]:
    doc = minimal()
    node = {**doc["nodes"][0], **fields}
    doc["nodes"][0] = {k: v for k, v in node.items() if v is not None}
    return doc


@pytest.mark.parametrize(
    ("doc", "place", "problem"),
    [
        (_tensor_fault(dtype=None), "tensors[1].dtype", "missing"),
        (_tensor_fault(dtype="float99"), "tensors[1].dtype", "unknown dtype 'float99'"),
        (_tensor_fault(name="bias"), "tensors[1].name", "unknown tensor kind 'bias'"),
        (_tensor_fault(shape=[1, -3]), "tensors[1].shape[1]", "dimension -3 is not"),
        (_tensor_fault(shape=[1, 2.5]), "tensors[1].shape[1]", "dimension 2.5 is not"),
        (_tensor_fault(shape="1x3"), "tensors[1].shape", "is a string"),
        (_tensor_fault(id=7), "tensors[1].id", "is a number"),
        (_tensor_fault(metadata=[1]), "tensors[1].metadata", "is an array"),
        (_node_fault(attributes=None), "nodes[0].attributes", "missing"),
        (_node_fault(inputs=3), "nodes[0].inputs", "is a number"),
        (_node_fault(name=None), "nodes[0].name", "missing"),
        (_node_fault(metadata={"a": 1, "a.b": 2}), "nodes[0].metadata.a.b", "key 'a.b' conflicts"),
        (minimal(nodes=["Relu"]), "nodes[0]", "is a string"),
    ],
)
def test_field_faults_name_their_place(tmp_path: Path, doc: Any, place: str, problem: str) -> None:
    with pytest.raises(FormatError) as info:
        load_doc(tmp_path, doc)
    assert info.value.place == place
    assert problem in info.value.problem
    assert str(info.value).startswith(str(tmp_path / "model.json"))


def test_read_findings_lists_every_fault_not_only_the_first(tmp_path: Path) -> None:
    doc = _tensor_fault(dtype="float99")
    doc["nodes"][0]["inputs"] = [0, 9]
    doc["outputs"] = [8]
    _, found = xoc.read_findings(Source(write(tmp_path, doc)))
    assert [f.place for f in found] == ["tensors[1].dtype", "nodes[0].inputs[1]", "outputs[0]"]


def test_invalid_json_reports_line_and_column(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as info:
        load_doc(tmp_path, '{\n  "id": "g",\n  "name": ,\n}')
    assert info.value.place == "line 3 column 11"
    assert "invalid JSON" in info.value.problem


# -- writing safely -----------------------------------------------------------------------------


def test_a_failed_save_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    out = tmp_path / "g.json"
    out.write_text("old", encoding="utf-8")
    g = load_doc(tmp_path, minimal())
    g.metadata["bad"] = object()
    with pytest.raises(FormatError, match="cannot save"):
        xoc.save(g, out)
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "model.json"]


def test_an_interrupted_write_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "g.json"
    out.write_text("old", encoding="utf-8")
    g = load_doc(tmp_path, minimal())

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(FormatError, match="No space left"):
        xoc.save(g, out)
    assert out.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.json", "model.json"]


def test_saving_into_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    g = load_doc(tmp_path, minimal())
    with pytest.raises(FormatError, match="folder does not exist"):
        xoc.save(g, tmp_path / "nope" / "g.json")
