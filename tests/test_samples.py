"""sample_graphs/: every sample opens (or fails) as manifest.json says and matches generate.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from xocview.errors import FormatError
from xocview.formats import check, detect, load, save
from xocview.formats.source import Source

SAMPLES = REPO / "sample_graphs"
MANIFEST: dict[str, dict[str, Any]] = json.loads(
    (SAMPLES / "manifest.json").read_text(encoding="utf-8")
)
LOADABLE = sorted(n for n, e in MANIFEST.items() if "error" not in e and not e["check_errors"])


def committed_samples(folder: Path) -> list[str]:
    """Every sample file under ``folder``, as manifest keys (``broken/truncated.json``)."""
    return sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*.json")
        if p.name != "manifest.json"
    )


def test_the_manifest_lists_every_sample_once() -> None:
    assert committed_samples(SAMPLES) == sorted(MANIFEST)
    for name, entry in MANIFEST.items():
        assert ("error" in entry) != ("format" in entry), name
        if "format" in entry:
            assert "check_errors" in entry, name
        if name in LOADABLE:
            assert {"nodes", "tensors"} <= entry.keys(), name


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_each_sample_opens_as_the_manifest_says(name: str) -> None:
    entry = MANIFEST[name]
    path = SAMPLES / name
    if "error" in entry:
        for read in (load, check):
            with pytest.raises(FormatError) as info:
                read(path)
            assert entry["error"] in str(info.value)
            assert info.value.file == str(path)
            assert str(info.value).startswith(f"{path}: ")
        return
    assert entry["format"] == detect(Source(path)).NAME
    graph, findings = check(path)
    assert sum(f.severity == "error" for f in findings) == entry["check_errors"]
    if not entry["check_errors"]:
        graph = load(path)  # a valid sample opens, not only checks
    for key, count in (("nodes", len(graph.nodes)), ("tensors", len(graph.tensors))):
        if key in entry:
            assert count == entry[key], key


@pytest.mark.parametrize("name", LOADABLE)
def test_each_valid_sample_is_canonical(name: str, tmp_path: Path) -> None:
    path = SAMPLES / name
    out = tmp_path / "again.json"
    save(load(path), out)
    assert out.read_bytes() == path.read_bytes()


def test_the_generator_remakes_the_committed_samples(tmp_path: Path) -> None:
    copy = tmp_path / "sample_graphs"
    (copy / "broken").mkdir(parents=True)
    shutil.copy(SAMPLES / "generate.py", copy / "generate.py")
    run = subprocess.run(
        [sys.executable, "sample_graphs/generate.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    made = committed_samples(copy)
    assert made == committed_samples(SAMPLES)
    for name in made:
        assert (copy / name).read_bytes() == (SAMPLES / name).read_bytes(), name
