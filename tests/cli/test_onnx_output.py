"""``xocview convert`` and ``xocview edit`` writing ONNX: the file runs like the source, the
edits are in it, and what it could not keep is printed as notes."""

from __future__ import annotations

import shutil
from pathlib import Path

import onnx
import pytest

from tests.cli.running import run
from tests.conftest import REPO
from tests.formats.onnx.running import LIGHT, assert_same_outputs
from xocview.formats import load

SQUEEZENET = LIGHT / "light_squeezenet.onnx"


@pytest.fixture
def squeezenet(tmp_path: Path) -> Path:
    if not SQUEEZENET.exists():
        pytest.skip("the onnx package ships no light models here")
    return shutil.copy(SQUEEZENET, tmp_path / "squeezenet.onnx")


def test_convert_onnx_to_onnx(squeezenet: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    r = run("convert", str(squeezenet), str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"wrote {out} (")
    assert r.stderr == ""
    onnx.checker.check_model(str(out), full_check=True)
    assert load(out) == load(squeezenet)
    assert_same_outputs(squeezenet, out)


def test_convert_json_to_onnx_prints_the_notes(tmp_path: Path) -> None:
    out = tmp_path / "tiny.onnx"
    r = run("convert", "sample_graphs/tiny_transformer.json", str(out))
    assert r.returncode == 0, r.stderr
    notes = r.stderr.splitlines()
    assert notes[0].startswith("xocview: note: 21 weights without values")
    assert notes[1].startswith("xocview: note: 7 groups")
    onnx.checker.check_model(str(out), full_check=True)


def test_edit_onnx_to_onnx_writes_the_edits(squeezenet: Path, tmp_path: Path) -> None:
    graph = load(squeezenet)
    relu = next(n.id for n in graph.nodes if n.op_type == "Relu")
    conv = next(n.id for n in graph.nodes if n.op_type == "Conv")
    out = tmp_path / "edited.onnx"
    r = run(
        "edit",
        str(squeezenet),
        "-o",
        str(out),
        "--bypass",
        relu,
        "--set",
        f"{conv}.dilations=[1,1]",
        "--set-meta",
        f'{conv}.note="checked"',
    )
    assert r.returncode == 0, r.stderr
    written = onnx.load(str(out))
    assert relu not in {n.name for n in written.graph.node}
    node = next(n for n in written.graph.node if n.name == conv)
    assert [list(a.ints) for a in node.attribute if a.name == "dilations"] == [[1, 1]]
    onnx.checker.check_model(written, full_check=True)
    assert load(out).node(conv).metadata["note"] == "checked"


def test_an_op_onnx_cannot_hold_fails_the_convert_and_writes_nothing(tmp_path: Path) -> None:
    source = REPO.parent / "shared" / "corpus" / "lightnet" / "lightnet_trt_test.json"
    if not source.exists():
        pytest.skip(f"{source} is absent")
    out = tmp_path / "out.onnx"
    r = run("convert", str(source), str(out))
    assert r.returncode == 1
    assert r.stderr == (
        f"xocview: error: {out}: node 'print2': op 'print' is not an ONNX operator; expected an "
        "ONNX operator (ONNX output needs every op to be one: replace or delete the node)\n"
    )
    assert list(tmp_path.iterdir()) == []
