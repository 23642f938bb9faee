"""LightNet IR: keys of tensor and param entries that reading passes over are ``check``
warnings at their place (issue 28); an op's own other keys are kept as its metadata."""

from __future__ import annotations

from pathlib import Path

from tests.formats.lightnet.test_reader import findings, small


def test_unknown_entry_keys_are_warnings(tmp_path: Path) -> None:
    doc = small()
    doc["ops"][2]["tensors_in"][1]["shape"] = [4, 3, 3, 3]
    doc["ops"][2]["params"][0]["unit"] = "px"
    doc["ops"][3]["comment"] = "kept as metadata"
    graph, found = findings(tmp_path, doc)
    assert [str(f) for f in found if "unknown" in f.message] == [
        "ops[2].tensors_in[1].shape: warning: unknown key, ignored",
        "ops[2].params[0].unit: warning: unknown key, ignored",
    ]
    kept = [nd.metadata.get("fields") for nd in graph.nodes]
    assert {"comment": "kept as metadata"} in kept


def test_a_plain_file_has_no_such_warning(tmp_path: Path) -> None:
    assert not [f for f in findings(tmp_path, small())[1] if "unknown" in f.message]
