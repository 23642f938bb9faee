"""`xocview run --engine onnxruntime`: onnxruntime's per-node profile, kept beside ours."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_run import LIGHT, xocview
from tests.conftest import REPO
from xocview.formats import load
from xocview.model.analyses.profile import node_times_ms

SQUEEZENET = str(LIGHT / "light_squeezenet.onnx")


@pytest.fixture
def onnxruntime() -> None:
    pytest.importorskip("onnxruntime", reason="--engine onnxruntime needs onnxruntime")


def times(path: Path, engine: str) -> dict[str, float]:
    return {
        nd.id: nd.metadata["performance"]["time"][engine]
        for nd in load(path).nodes
        if engine in nd.metadata.get("performance", {}).get("time", {})
    }


@pytest.mark.usefixtures("onnxruntime")
def test_save_records_onnxruntimes_times_beside_ours(tmp_path: Path) -> None:
    profile, saved = tmp_path / "p.json", tmp_path / "ort.json"
    done = xocview(
        "run", SQUEEZENET, "--engine", "onnxruntime", "--optimization", "basic", "--repeat", "2",
        "--profile", str(profile), "--save", str(saved),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "outputs:" in out and "softmaxout_1" in out and "1x1000" in out
    assert "(median of 2, 1 thread); onnxruntime, optimization basic" in out
    assert "warning: 40 nodes of the graph got no onnxruntime time" in out
    assert f"wrote {saved} (with performance.time.onnxruntime of 65 nodes)" in out
    data = json.loads(profile.read_text())
    assert data["engine"] == "onnxruntime" and data["optimization"] == "basic"
    assert "peak_bytes" not in data  # onnxruntime's memory is not measured
    assert data["passes"] == 2 and {n["op_type"] for n in data["nodes"]} >= {"Conv", "Relu"}
    ort = times(saved, "onnxruntime")
    assert len(ort) == 65 and all(ms > 0 for ms in ort.values())
    assert not np.isfinite(node_times_ms(load(saved))).any()  # no performance.time.cpu
    both = tmp_path / "both.json"  # the bundled executor's times join them on the saved graph
    done = xocview("run", str(saved), "--save", str(both))
    assert done.returncode == 0, done.stderr
    assert times(both, "onnxruntime") == ort and len(times(both, "cpu")) > 0


@pytest.mark.usefixtures("onnxruntime")
def test_the_engine_runs_onnx_files_only_and_takes_its_own_options(tmp_path: Path) -> None:
    xoc = REPO / "sample_graphs" / "tiny_transformer.json"
    done = xocview("run", str(xoc), "--engine", "onnxruntime")
    assert done.returncode == 1
    assert done.stderr == (
        f"xocview: error: {xoc}: --engine onnxruntime runs ONNX models (.onnx); this file is "
        "XOC JSON\n"
    )
    done = xocview("run", SQUEEZENET, "--optimization", "none")
    assert done.returncode == 1 and "give it with --engine onnxruntime" in done.stderr
    done = xocview("run", SQUEEZENET, "--engine", "onnxruntime", "--max-memory", "1G")
    assert done.returncode == 1 and "--max-memory is the xocview engine's" in done.stderr
    done = xocview("run", SQUEEZENET, "--engine", "onnxruntime", "--optimization", "max")
    assert done.returncode == 2 and "invalid choice: 'max'" in done.stderr


def test_without_onnxruntime_the_error_says_how_to_install_it() -> None:
    script = (
        "import sys; sys.modules['onnxruntime'] = None; from xocview.cli import main; "
        f"sys.exit(main(['run', {SQUEEZENET!r}, '--engine', 'onnxruntime']))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=False
    )
    assert done.returncode == 1
    assert done.stderr == "xocview: error: onnxruntime is not installed (pip install onnxruntime)\n"
