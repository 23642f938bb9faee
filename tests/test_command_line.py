"""xocview/cli.py, run as a user runs it: a subprocess, exit codes, one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from xocview.formats import load

SAMPLES = REPO / "sample_graphs"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "xocview", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )


def test_help_lists_the_commands_and_version_prints() -> None:
    out = run("--help")
    assert out.returncode == 0
    for command in ("info", "convert", "check", "open"):
        assert command in out.stdout
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("xocview ")


def test_info_summarises_a_graph() -> None:
    out = run("info", "sample_graphs/tiny_transformer.json")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "graph:      tiny transformer encoder (id tiny_transformer)" in text
    assert "nodes:      44 (7 groups, hierarchy depth 3)" in text
    assert "input_ids                int64    1x16" in text
    assert "logits                   float32  1x16x1000" in text
    assert "  MatMul                   17" in text


def test_convert_reproduces_the_spec_example_byte_for_byte(tmp_path: Path) -> None:
    out_path = tmp_path / "out.json"
    out = run("convert", "sample_graphs/simple_model.json", str(out_path))
    assert out.returncode == 0, out.stderr
    assert out_path.read_bytes() == (SAMPLES / "simple_model.json").read_bytes()
    assert load(out_path) == load(SAMPLES / "simple_model.json")


def test_convert_refuses_a_non_json_output_and_writes_nothing(tmp_path: Path) -> None:
    out = run("convert", "sample_graphs/simple_model.json", str(tmp_path / "out.onnx"))
    assert out.returncode == 2
    assert "must be a .json file" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_check_prints_five_located_findings_and_exits_1() -> None:
    out = run("check", "sample_graphs/broken/five_faults.json")
    assert out.returncode == 1
    lines = [ln for ln in out.stdout.splitlines() if ": error: " in ln]
    assert len(lines) == 5
    assert lines[0] == (
        "sample_graphs/broken/five_faults.json: nodes[0].inputs[1]: error: "
        "tensor index 9 out of range (5 tensors)"
    )
    assert out.stdout.splitlines()[-1].endswith("5 errors, 0 warnings")


def test_check_of_a_valid_file_exits_0() -> None:
    out = run("check", "sample_graphs/all_dtypes.json")
    assert out.returncode == 0
    assert out.stdout.strip().endswith("0 errors, 0 warnings")


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no/such/file.json", "no/such/file.json: no such file"),
        ("sample_graphs/broken/not_a_graph.json", "not a graph file any format accepts"),
        ("sample_graphs/broken/truncated.json", "invalid JSON"),
    ],
)
def test_errors_are_one_line_without_traceback(path: str, message: str) -> None:
    out = run("info", path)
    assert out.returncode == 1
    assert message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr
    debug = run("info", path, "--debug")
    assert "Traceback" in debug.stderr


def test_opening_several_files_one_broken_still_shows_the_rest() -> None:
    out = run("sample_graphs/broken/truncated.json", "sample_graphs/simple_model.json")
    assert out.returncode == 1
    assert "invalid JSON" in out.stderr
    assert "graph:      simple_model (id simple_model)" in out.stdout


def _one_file_per_format() -> list[tuple[str, Path]]:
    import onnx

    from tests.conftest import SHARED

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    files = [
        ("XOC JSON", SAMPLES / "tiny_transformer.json"),
        ("ONNX", light / "light_squeezenet.onnx"),
        ("NNVM JSON", SHARED / "corpus" / "nnvm" / "mxnet14_mtcnn_det1-symbol.json"),
        ("NNVM JSON", SHARED / "corpus" / "nnvm" / "tvm_nnvm_wrn_fc.json"),
        ("LightNet JSON IR", SHARED / "corpus" / "lightnet" / "lightnet_test_ops.json"),
    ]
    return files


@pytest.mark.parametrize(
    ("fmt", "path"), _one_file_per_format(), ids=lambda x: x if isinstance(x, str) else x.name
)
def test_info_convert_check_work_on_every_format(fmt: str, path: Path, tmp_path: Path) -> None:
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared or the onnx package's light models)")
    info = run("info", str(path))
    assert info.returncode == 0, info.stderr
    assert info.stdout.startswith(f"file:       {path}")
    out = tmp_path / "converted.json"
    conv = run("convert", str(path), str(out))
    assert conv.returncode == 0, conv.stderr
    assert load(out) == load(path)
    chk = run("check", str(path))
    assert chk.returncode == 0, chk.stdout
