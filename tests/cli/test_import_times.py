"""`xocview import-times` as a user runs it: a profile onto a model, saved as XOC JSON that opens
with the times; a profile of another model or a file that is no profile writes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.formats.profiles.make_profiles import LIGHT, ort_profile, other_model
from xocview.cli import main
from xocview.formats import load
from xocview.model.analyses.metrics import node_metric
from xocview.model.analyses.profile import time_sources

SQUEEZENET = LIGHT / "light_squeezenet.onnx"


def test_an_onnxruntime_profile_is_saved_with_the_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    profile, out = ort_profile(SQUEEZENET, tmp_path, "all"), tmp_path / "timed.json"
    code = main(["import-times", str(SQUEEZENET), str(profile), "-o", str(out), "--list", "3"])
    captured = capsys.readouterr()
    printed = captured.out
    assert code == 0, printed
    assert "note: 52 weights" in captured.err  # XOC JSON keeps no values: said, as convert says
    counts = re.search(r"onnxruntime profile: (\d+) of (\d+) kernels matched", printed)
    assert counts is not None, printed
    matched, kernels = int(counts[1]), int(counts[2])
    if matched < kernels:  # the layout conversions of this level, listed by name and op
        assert "matched no node (" in printed and "):\n  Reorder" in printed
    assert f"wrote {out}" in printed
    graph = load(out)
    assert time_sources(graph) == ["onnxruntime"]
    timed = [n for n in graph.nodes if "performance" in n.metadata]
    assert len(timed) >= 30
    assert all(n.metadata["performance"]["time"]["onnxruntime"] >= 0 for n in timed)


def test_node_data_goes_under_its_metric(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    graph = load(SQUEEZENET)
    convs = [n.id for n in graph.nodes if n.op_type == "Conv"][:3]
    data = tmp_path / "nd.json"
    data.write_text(json.dumps({"results": {c: {"value": k + 1} for k, c in enumerate(convs)}}))
    out = tmp_path / "nd_out.json"
    code = main(["import-times", str(SQUEEZENET), str(data), "-o", str(out), "--source", "err"])
    assert code == 0 and "3 of 3 results matched" in capsys.readouterr().out
    saved = load(out)
    values = node_metric(saved, "err")
    by_id = {n.id: values[i] for i, n in enumerate(saved.nodes)}
    assert [by_id[c] for c in convs] == [1.0, 2.0, 3.0]


def test_a_profile_of_another_model_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    profile, out = ort_profile(SQUEEZENET, tmp_path, "none"), tmp_path / "never.json"
    code = main(["import-times", str(other_model(tmp_path)), str(profile), "-o", str(out)])
    captured = capsys.readouterr()
    assert code == 1 and not out.exists()
    assert "0 of 105 kernels matched a node of" in captured.err
    assert "is it a profile of this model? Nothing was stored" in captured.err
    assert "105 kernels matched no node" in captured.out  # and they are listed


def test_a_file_that_is_no_profile_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad, out = tmp_path / "notes.json", tmp_path / "never.json"
    bad.write_text('{"hello": [1, 2]}')
    assert main(["import-times", str(SQUEEZENET), str(bad), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"xocview: error: {bad}: not a profile (onnxruntime profile:")
    assert "Traceback" not in err and not out.exists()
