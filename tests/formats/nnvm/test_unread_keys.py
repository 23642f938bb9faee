"""NNVM JSON: every key the reader passes over is a ``check`` warning at its place (issue 28)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.formats.nnvm.test_reader import small
from xocview.formats import check, nnvm
from xocview.formats.source import Source


def test_unknown_root_and_node_keys_are_warnings(tmp_path: Path) -> None:
    doc = small(metadata={"a": 1})
    doc["nodes"][3]["shape"] = [1, 3]
    path = tmp_path / "model-symbol.json"
    path.write_text(json.dumps(doc))
    assert [str(f) for f in nnvm.read_findings(Source(path))[1]] == [
        "metadata: warning: unknown root key, ignored",
        "nodes[3].shape: warning: unknown node key, ignored",
    ]
    assert [f.place for f in check(path)[1]] == ["metadata", "nodes[3].shape"]


def test_every_key_nnvm_reads_is_known(tmp_path: Path) -> None:
    doc = small()
    doc["nodes"][3]["control_deps"] = [0]
    doc["nodes"][0].update(param={}, attr={}, backward_source_id=-1)
    path = tmp_path / "model-symbol.json"
    path.write_text(json.dumps(doc))
    assert nnvm.read_findings(Source(path))[1] == []
