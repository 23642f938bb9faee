"""Inputs that once ended in an internal error (exit 3) now end in a located one-line error,
or work (issue 28, item 7): a graph whose outputs are its initializers, with no node; a shape
past int64; a 10,000-deep JSON value for ``edit --set``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.cli.running import run
from xocview.cli import main
from xocview.cli.edit import MAX_VALUE_DEPTH

HUGE = "99999999999999999999"  # past int64: numpy, onnx and onnxruntime all refuse it


def _model(path: Path, nodes: list[onnx.NodeProto], outputs: list[str], rows: int = 2) -> Path:
    """A float model with input ``x`` [2,2] and an initializer ``w`` [rows,2]."""
    w = numpy_helper.from_array(np.ones((rows, 2), np.float32), "w")
    shapes = {"x": [2, 2], "y": [2, 2], "w": [rows, 2]}
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in outputs],
        [w],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _one_line(r: object) -> str:
    stderr = r.stderr  # type: ignore[attr-defined]
    assert stderr.count("\n") == 1, stderr
    assert "internal error" not in stderr and "Error:" not in stderr, stderr
    return str(stderr)


def test_diff_of_graphs_whose_output_is_an_initializer_and_no_node(tmp_path: Path) -> None:
    only = _model(tmp_path / "only.onnx", [], ["w"])
    wider = _model(tmp_path / "wider.onnx", [], ["w"], rows=3)
    relu = _model(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"], "r")], ["y"])
    r = run("diff", only, only)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert "the graphs are equal" in r.stdout
    r = run("diff", only, wider)
    assert r.returncode == 1, r.stderr
    assert "shape: 2x2 -> 3x2" in r.stdout
    r = run("diff", "--json", only, relu)
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    kinds = {f["kind"] for f in report["findings"]}
    assert {"node added", "output removed", "output added"} <= kinds, kinds
    r = run("diff", relu, only)
    assert r.returncode == 1, r.stderr
    assert "node removed (1):" in r.stdout


def _main(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """``xocview ARGS`` in this process: the status and stderr, checked to be one located line."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as e:  # argparse's usage errors
        code = int(e.code or 0)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if not ln.startswith(("usage:", " "))]
    assert len(lines) == 1, err
    assert "internal error" not in err and "Error" not in err and "Traceback" not in err, err
    return code, lines[0]


def test_edit_set_refuses_a_value_nested_too_deep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], "r")], ["y"])
    out = tmp_path / "out.json"
    for depth in (10_000, MAX_VALUE_DEPTH + 1):
        value = "[" * depth + "1" + "]" * depth
        code, line = _main(capsys, "edit", model, "-o", out, "--set", f"r.alpha={value}")
        assert code == 1, line
        assert f"nested deeper than {MAX_VALUE_DEPTH} levels" in line and len(line) < 400, line
        assert not out.exists()
    deep = '{"a": ' * 60 + "1" + "}" * 60  # within the limit: written
    assert main(["edit", str(model), "-o", str(out), "--set-meta", f"r.k={deep}"]) == 0
    assert out.exists()


def test_edit_shape_past_int64_is_refused_before_the_onnx_save(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], "r")], ["y"])
    out = tmp_path / "out.onnx"
    code, line = _main(capsys, "edit", model, "-o", out, "--shape", f"x={HUGE}")
    assert code == 1 and "past the largest dimension" in line and not out.exists(), line


def test_run_sizes_past_int64_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], "r")], ["y"])
    for option in (["--shape", f"x={HUGE}"], ["--shape", f"x=2,{HUGE}"], ["--dim", f"N={HUGE}"]):
        code, line = _main(capsys, "run", model, *option, "--max-memory", "none")
        assert code == 1 and "past the largest dimension" in line, line
    code, line = _main(capsys, "run", model, "--dim-default", HUGE)
    assert code == 2 and "past the largest dimension" in line, line


def test_onnxruntime_run_refuses_a_shape_no_array_can_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("onnxruntime")
    model = _model(tmp_path / "m.onnx", [helper.make_node("Relu", ["x"], ["y"], "r")], ["y"])
    for shape in (HUGE, f"{2**62},4"):
        code, line = _main(capsys, "run", model, "--engine", "onnxruntime", "--shape", f"x={shape}")
        assert code == 1 and "past" in line, line
