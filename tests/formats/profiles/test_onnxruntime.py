"""onnxruntime's own profile of a light model, as a user writes it, imported onto the graph that
xocview reads from the same file: every kernel that stands for a node finds it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.formats.profiles.make_profiles import LIGHT, ort_profile, other_model
from xocview.errors import FormatError
from xocview.formats import load
from xocview.formats.profiles import read_profile
from xocview.model.analyses.ort_kernels import parse_profile

pytest.importorskip("onnxruntime", reason="profiles are made with onnxruntime")

SQUEEZENET = LIGHT / "light_squeezenet.onnx"
RESNET = LIGHT / "light_resnet50.onnx"


@pytest.mark.parametrize("model", [SQUEEZENET, RESNET], ids=lambda p: p.stem)
@pytest.mark.parametrize("level", ["none", "basic"])
def test_every_kernel_finds_its_node(model: Path, level: str, tmp_path: Path) -> None:
    graph = load(model)
    profile = ort_profile(model, tmp_path, level)
    result = read_profile(profile, graph)
    kernels = parse_profile(json.loads(profile.read_bytes())).kernels
    print(f"{model.stem} at {level}: {result.summary()}")
    assert result.events == len(kernels) > 0
    assert result.matched == result.events and result.unmatched == []
    assert result.time_share == 1.0
    # every timed node of the file is a node of the graph, timed in milliseconds per run
    ids = {n.id for n in graph.nodes}
    assert set(result.values) <= ids and len(result.values) >= 0.5 * len(kernels)
    assert all(v >= 0 for v in result.values.values())
    assert result.key == "performance.time.onnxruntime"


def test_at_the_highest_level_only_layout_conversions_stand_for_no_node(tmp_path: Path) -> None:
    graph = load(SQUEEZENET)
    result = read_profile(ort_profile(SQUEEZENET, tmp_path, "all"), graph, "ort-all")
    print(result.summary())
    assert result.unmatched, "onnxruntime 1.17+ adds a ReorderOutput at this level"
    assert all("Reorder" in u.name for u in result.unmatched)
    assert result.matched + sum(u.count > 0 for u in result.unmatched) == result.events
    assert result.time_share > 0.5 and result.key == "performance.time.ort-all"
    assert any("Reorder" in line for line in result.report_lines())


def test_a_profile_of_another_model_matches_nothing(tmp_path: Path) -> None:
    result = read_profile(ort_profile(SQUEEZENET, tmp_path, "none"), load(other_model(tmp_path)))
    assert result.values == {} and result.matched == 0 < result.events
    assert len(result.unmatched) == result.events  # every kernel listed by name
    text = result.nothing_matched("p.json", "other.onnx")
    assert text.startswith(f"p.json: 0 of {result.events} kernels matched a node of other.onnx")


def test_a_damaged_profile_names_the_event(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    events = [{"cat": "Node", "name": "n0_kernel_time", "ph": "X", "ts": 1, "dur": "x"}]
    bad.write_text(json.dumps(events))
    with pytest.raises(FormatError, match=r"bad\.json: \[0\]\.dur: 'x' is not a number"):
        read_profile(bad, load(SQUEEZENET))
