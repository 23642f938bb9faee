"""The command line as a user runs it: ``python -m xocview`` in a subprocess, exit codes, output."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.cli.running import run
from tests.conftest import REPO, SHARED, corpus_path
from xocview import __version__
from xocview.formats import load
from xocview.model.analyses.opfacts import graph_flops

SAMPLES = REPO / "sample_graphs"
TINY = "sample_graphs/tiny_transformer.json"
SIMPLE = "sample_graphs/simple_model.json"
FIVE_FAULTS = "sample_graphs/broken/five_faults.json"
MISSING = "sample_graphs/no_such_file.json"
NOT_A_GRAPH = "sample_graphs/broken/not_a_graph.json"


def section(lines: list[str], title: str) -> list[list[str]]:
    """The indented lines under ``title`` in `xocview info` output, split into words."""
    start = next(i for i, ln in enumerate(lines) if ln.startswith(title)) + 1
    rows = []
    for ln in lines[start:]:
        if not ln.startswith("  "):
            break
        rows.append(ln.split())
    return rows


def test_help_lists_the_commands() -> None:
    out = run("--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: xocview")
    for command in ("open", "info", "convert", "check"):
        assert re.search(rf"^\s+{command}\s+\S", out.stdout, re.MULTILINE), command
    assert out.stderr == ""


def test_info_names_the_format_and_sums_a_checkpoint_s_weights_per_dtype() -> None:
    index = "tests/data/safetensors/tiny_llama/model.safetensors.index.json"
    out = run("info", index)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[1] == "format:     safetensors"
    assert "weights:    float32 26.9 kB" in lines  # 6,736 parameters of 4 bytes
    assert "parameters: 6,736" in lines


def test_version_prints_the_package_version() -> None:
    out = run("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"xocview {__version__}\n"


def test_info_summarises_the_tiny_transformer() -> None:
    out = run("info", TINY)
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    lines = out.stdout.splitlines()
    assert lines[0] == f"file:       {TINY}"
    assert lines[1] == "format:     XOC JSON"
    assert "graph:      tiny transformer encoder (id tiny_transformer)" in lines
    assert "nodes:      44 (7 groups, hierarchy depth 3)" in lines
    assert "tensors:    60 (2 input, 2 output, 21 weight, 35 activation)" in lines
    assert "metadata:   producer, description, training" in lines
    flops, unknown = graph_flops(load(REPO / TINY))
    assert unknown == 0 and flops > 0
    assert f"FLOPs:      {flops:,}" in lines  # every shape known: nothing assumed

    # Boundary tensors and the op histogram, against the raw file (groups have children_ids).
    raw = json.loads((SAMPLES / "tiny_transformer.json").read_text(encoding="utf-8"))
    tensors = raw["tensors"]

    def row(i: int) -> list[str]:
        t = tensors[i]
        return [t["id"], t["dtype"], "x".join(map(str, t["shape"]))]

    assert section(lines, "inputs:") == [row(i) for i in raw["inputs"]]
    assert section(lines, "outputs:") == [row(i) for i in raw["outputs"]]
    assert ["input_ids", "int64", "1x16"] in section(lines, "inputs:")
    assert ["logits", "float32", "1x16x1000"] in section(lines, "outputs:")

    leaves = [nd for nd in raw["nodes"] if "children_ids" not in nd.get("metadata", {})]
    histogram = section(lines, "operators:")
    assert {op: int(n) for op, n in histogram} == Counter(nd["name"] for nd in leaves)
    counts = [int(n) for _, n in histogram]
    assert counts == sorted(counts, reverse=True)
    assert f"operators:  (over {len(leaves)} leaf nodes)" in lines
    assert histogram[0] == ["MatMul", "17"]


def test_info_counts_flops_of_a_dynamic_batch_per_sample(tmp_path: Path) -> None:
    path = tmp_path / "dyn.onnx"
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["y"])],
        "dyn",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["batch", 16])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, ["batch", 32])],
        [onnx.numpy_helper.from_array(np.zeros((16, 32), np.float32), "w")],
    )
    onnx.save(onnx.helper.make_model(graph), str(path))
    out = run("info", str(path))
    assert out.returncode == 0, out.stderr
    assert f"FLOPs:      {2 * 16 * 32:,} (unknown dims as 1)" in out.stdout.splitlines()


def test_convert_reproduces_the_sample(tmp_path: Path) -> None:
    target = tmp_path / "simple.json"
    out = run("convert", SIMPLE, str(target))
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"wrote {target} (1 nodes, 3 tensors)\n"
    assert load(target) == load(REPO / SIMPLE)
    assert target.read_bytes() == (REPO / SIMPLE).read_bytes()  # the sample is canonical


@pytest.mark.parametrize("name", ["out.pb", "out", "out.json.txt"])
def test_convert_refuses_an_output_of_no_format_and_writes_nothing(
    name: str, tmp_path: Path
) -> None:
    out = run("convert", SIMPLE, str(tmp_path / name))
    assert out.returncode == 2
    assert out.stdout == ""
    assert out.stderr == (
        f"xocview: error: {tmp_path / name}: the output must be a .json file (XOC JSON) "
        "or an .onnx file (ONNX)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_convert_refuses_a_bad_output_before_reading_the_input(tmp_path: Path) -> None:
    out = run("convert", MISSING, str(tmp_path / "out.pb"))
    assert out.returncode == 2
    assert "must be a .json file" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_check_prints_five_located_findings_and_exits_1() -> None:
    out = run("check", FIVE_FAULTS)
    assert out.returncode == 1
    assert out.stderr == ""
    *findings, summary = out.stdout.splitlines()
    assert summary == f"{FIVE_FAULTS}: 5 errors, 0 warnings"
    assert len(findings) == 5
    located = re.compile(
        rf"{re.escape(FIVE_FAULTS)}: (\w+\[\d+\](?:\.\w+(?:\[\d+\])?)*): error: .+"
    )
    places = []
    for line in findings:
        match = located.fullmatch(line)
        assert match, line
        places.append(match[1])
    assert places[0] == "nodes[0].inputs[1]"
    assert findings[0].endswith("tensor index 9 out of range (5 tensors)")
    assert sorted(places) == sorted(
        [
            "nodes[0].inputs[1]",
            "tensors[3].id",
            "nodes[3].outputs[0]",
            "nodes[1]",
            "nodes[4].metadata.parent_id",
        ]
    )


@pytest.mark.parametrize("name", ["simple_model.json", "tiny_transformer.json", "all_dtypes.json"])
def test_check_of_a_valid_sample_exits_0(name: str) -> None:
    path = f"sample_graphs/{name}"
    out = run("check", path)
    assert out.returncode == 0, out.stdout
    assert out.stdout.splitlines()[-1].startswith(f"{path}: 0 errors, ")


@pytest.mark.parametrize("command", [["info"], ["check"], ["render"]])
@pytest.mark.parametrize(
    ("path", "message"),
    [(MISSING, "no such file"), (NOT_A_GRAPH, "not a graph file any format accepts")],
    ids=["missing", "not-a-graph"],
)
def test_a_failure_is_one_line_and_debug_adds_the_traceback(
    command: list[str], path: str, message: str
) -> None:
    extra = ["out.png"] if command == ["render"] else []
    out = run(*command, path, *extra)
    assert out.returncode == 1
    assert out.stdout == ""
    assert out.stderr.startswith(f"xocview: error: {path}: {message}")
    assert len(out.stderr.splitlines()) == 1
    assert "Traceback" not in out.stderr
    for debug in (run(*command, path, *extra, "--debug"), run("--debug", *command, path, *extra)):
        assert debug.returncode == 1, debug.stderr
        assert debug.stderr.startswith("Traceback (most recent call last):")
        assert debug.stderr.splitlines()[-1] == out.stderr.strip()


def test_a_failure_of_convert_is_one_line(tmp_path: Path) -> None:
    out = run("convert", NOT_A_GRAPH, str(tmp_path / "out.json"))
    assert out.returncode == 1
    assert out.stderr.startswith(f"xocview: error: {NOT_A_GRAPH}: not a graph file")
    assert len(out.stderr.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_opening_without_a_display_says_so_instead_of_crashing() -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")
    }
    out = subprocess.run(
        [sys.executable, "-m", "xocview", SIMPLE],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env=env,
    )
    assert out.returncode == 1
    assert out.stderr.startswith("xocview: error: no display to open a window on")


@pytest.mark.parametrize(
    ("args", "suffix"),
    [([], ".png"), (["--level", "1"], ".png"), (["--expand-all", "--theme", "dark"], ".svg")],
)
def test_render_draws_a_file_headless(tmp_path: Path, args: list[str], suffix: str) -> None:
    target = tmp_path / f"tiny{suffix}"
    out = run("render", TINY, str(target), *args)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"wrote {target} (")
    data = target.read_bytes()
    if suffix == ".png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert out.stdout.strip().endswith(f"({width}x{height})")
        assert width > 100 and height > 100
    else:
        assert b"<svg" in data and b"MatMul" in data


def test_render_refuses_other_extensions(tmp_path: Path) -> None:
    out = run("render", TINY, str(tmp_path / "tiny.gif"))
    assert out.returncode == 1
    assert "cannot render to '.gif'" in out.stderr
    assert list(tmp_path.iterdir()) == []


def test_convert_reproduces_the_corpus_example_byte_for_byte(tmp_path: Path) -> None:
    source = corpus_path("xoc", "xoc_example-graph.json")
    target = tmp_path / "example.json"
    out = run("convert", str(source), str(target))
    assert out.returncode == 0, out.stderr
    assert target.read_bytes() == source.read_bytes()


def _one_file_per_format() -> list[tuple[str, Path]]:
    import onnx

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
