"""Real scikit-learn pipelines converted by skl2onnx (tests/data/ml, made by
make_sklearn_models.py) run by xocview's executor and by onnxruntime on the same seeded
inputs: labels equal, scores and probabilities (ZipMap's maps included) to 1e-5; and
``xocview run`` prints a ZipMap model's maps."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xocview.cli.app import main
from xocview.executor import run
from xocview.executor.registry import UnsupportedOp, lookup
from xocview.formats import registry

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the reference")

DATA = Path(__file__).parents[1] / "data" / "ml"
MANIFEST: dict[str, Any] = json.loads((DATA / "manifest.json").read_text())


def _feeds(inputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The runs of one model: one with every tensor input, or one per map of a map input
    (onnxruntime takes a single map)."""
    for name, spec in inputs.items():
        if "maps" in spec:
            return [{name: {k: v for k, v in pairs}} for pairs in spec["maps"]]
    feeds = {}
    for name, spec in inputs.items():
        dtype = object if spec["dtype"] == "string" else spec["dtype"]
        feeds[name] = np.array(spec["values"], dtype=dtype).reshape(spec["shape"])
    return [feeds]


def _as_table(value: Any) -> tuple[list[list[Any]], np.ndarray] | None:
    """A sequence of maps as its keys per row and its values as an array."""
    if isinstance(value, list) and all(isinstance(m, dict) for m in value):
        keys = [list(m) for m in value]
        return keys, np.array([list(m.values()) for m in value], dtype=np.float64)
    return None


def _same(name: str, got: Any, want: Any) -> None:
    table = _as_table(want)
    if table is not None:
        mine = _as_table(got)
        assert mine is not None, f"{name}: expected a sequence of maps, got {type(got).__name__}"
        assert mine[0] == table[0], f"{name}: the maps' keys differ"
        got, want = mine[1], table[1]
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{name}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "OUSiub":
        assert got.tolist() == want.tolist(), f"{name}: labels differ"
        return
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def _needs(model: str) -> None:
    if model.startswith("text_"):  # skl2onnx's bag of words writes onnxruntime's Tokenizer
        try:
            lookup("Tokenizer", 1, "com.microsoft")
        except UnsupportedOp:
            pytest.skip("no kernel for com.microsoft Tokenizer (another helper's op)")


@pytest.mark.parametrize("model", sorted(MANIFEST))
def test_sklearn_model_runs_and_matches_onnxruntime(model: str) -> None:
    _needs(model)
    path = DATA / MANIFEST[model]["file"]
    assert path.stat().st_size < 200_000
    graph = registry.load(path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for feeds in _feeds(MANIFEST[model]["inputs"]):
        want = dict(zip(names, session.run(None, feeds), strict=True))
        got = run(graph, feeds).outputs
        assert set(got) == set(want)
        for name, value in want.items():
            _same(f"{model}: {name}", got[name], value)


def test_onnxruntimes_own_logreg_iris_runs_as_there() -> None:
    """It declares 2 features for weights of 4; onnxruntime reads the first 6 coefficients."""
    from onnxruntime.datasets import get_example

    path = get_example("logreg_iris.onnx")
    x = np.array([[5.1, 3.5], [6.2, 2.9], [7.7, 3.0]], dtype=np.float32)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    want = dict(zip(names, session.run(None, {"float_input": x}), strict=True))
    got = run(registry.load(path), {"float_input": x}).outputs
    for name, value in want.items():
        _same(name, got[name], value)


def test_manifest_covers_every_file() -> None:
    files = {p.name for p in DATA.glob("*.onnx")}
    assert files == {spec["file"] for spec in MANIFEST.values()}
    assert len(files) >= 30


def test_cli_run_prints_zip_maps(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Exit 0; the sequence of maps is named with its types and its first maps printed;
    the profile JSON is written."""
    profile = tmp_path / "profile.json"
    code = main(
        ["run", str(DATA / "logreg_3class.onnx"), "--shape", "X=5,4", "--profile", str(profile)]
    )
    out = capsys.readouterr().out
    assert code == 0
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if "output_probability" in line)
    assert "sequence of 5 maps (int64 -> float)" in lines[at]
    shown = lines[at + 1 : at + 5]
    assert [line.strip().startswith("{0: ") for line in shown[:3]] == [True] * 3
    assert all(", 1: " in line and ", 2: " in line for line in shown[:3])
    assert shown[3].strip() == "... 2 more"
    data = json.loads(profile.read_text())
    assert data["outputs"] == {"output_label": [5]}  # tensors' shapes; the maps are no tensor
    assert {n["op_type"] for n in data["nodes"]} >= {"ZipMap", "LinearClassifier"}


def test_cli_run_names_a_map_input_it_cannot_make(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(DATA / "dict_vectorizer_logreg.onnx")])
    err = capsys.readouterr().err
    assert code != 0
    assert "input 'X' is a map; random values are made for tensors only" in err
    assert "Traceback" not in err
