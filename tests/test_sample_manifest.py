"""sample_graphs/manifest.json: every sample opens as promised (or fails as promised)."""

from __future__ import annotations

import json
import runpy
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from xocview.errors import FormatError
from xocview.formats import check, detect, load, save
from xocview.formats.source import Source

SAMPLES = REPO / "sample_graphs"
MANIFEST = json.loads((SAMPLES / "manifest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_each_sample_matches_the_manifest(name: str, tmp_path: Path) -> None:
    entry = MANIFEST[name]
    path = SAMPLES / name
    if "error" in entry:
        with pytest.raises(FormatError) as info:
            load(path)
        assert entry["error"] in str(info.value)
        assert str(path) in str(info.value)
        return
    assert entry["format"] == detect(Source(path)).NAME
    _, findings = check(path)
    assert sum(f.severity == "error" for f in findings) == entry["check_errors"]
    if entry["check_errors"]:
        return
    graph = load(path)
    assert len(graph.nodes) == entry["nodes"]
    assert len(graph.tensors) == entry["tensors"]
    out = tmp_path / "again.json"
    save(graph, out)
    assert out.read_bytes() == path.read_bytes()  # samples are canonical


def test_samples_do_not_drift_from_their_generator(tmp_path: Path) -> None:
    copy = tmp_path / "sample_graphs"
    copy.mkdir()
    (copy / "broken").mkdir()
    shutil.copy(SAMPLES / "generate.py", copy / "generate.py")
    runpy.run_path(str(copy / "generate.py"), run_name="__main__")
    made = sorted(p.relative_to(copy) for p in copy.rglob("*.json"))
    committed = sorted(
        p.relative_to(SAMPLES) for p in SAMPLES.rglob("*.json") if p.name != "manifest.json"
    )
    assert made == committed
    for rel in made:
        assert (copy / rel).read_bytes() == (SAMPLES / rel).read_bytes(), rel
