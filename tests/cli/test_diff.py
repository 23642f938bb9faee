"""``xocview diff`` as a user runs it: exit codes, the text report, --json, errors."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.running import run
from tests.conftest import corpus_path
from tests.model.analyses.onnx_edits import EDITS, LIGHT_MODELS, edited_copy, light
from xocview.formats import load

pytestmark = pytest.mark.skipif(not LIGHT_MODELS, reason="the onnx package ships no light models")

ALEXNET = light("bvlc_alexnet")


@pytest.fixture(scope="module")
def edited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("diff") / "alexnet_edited.onnx"
    edited_copy(ALEXNET, path, *EDITS["bvlc_alexnet"])
    return path


def test_a_model_against_itself_exits_0_and_lists_nothing() -> None:
    r = run("diff", ALEXNET, ALEXNET)
    assert r.returncode == 0, r.stderr
    assert "the graphs are equal" in r.stdout
    assert "matched: 40 of 40 old and 40 new nodes" in r.stdout
    assert "differences" not in r.stdout and "removed" not in r.stdout
    assert r.stderr == ""


def test_an_edited_copy_exits_1_with_the_three_findings_counted_first(edited: Path) -> None:
    r = run("diff", ALEXNET, edited)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    at = lines.index("differences: 3")
    assert [ln.split() for ln in lines[at + 1 : at + 4]] == [
        ["node", "removed", "1"],
        ["node", "changed", "1"],
        ["tensor", "renamed", "1"],
    ]
    assert "changed on nodes: attribute alpha (1 node)" in lines
    body = lines[lines.index("node changed (1):") :]
    assert body[2].strip() == "attribute alpha: 0.0001 -> 0.0002"
    assert any(ln.strip().endswith("(Dropout)") for ln in lines[lines.index("node removed (1):") :])
    renamed = lines[lines.index("tensor renamed (1):") + 1].strip()
    assert renamed.endswith("_renamed (activation)")


def test_json_parses_and_has_the_documented_keys(edited: Path) -> None:
    r = run("diff", "--json", ALEXNET, edited)
    assert r.returncode == 1, r.stderr
    report = json.loads(r.stdout)
    assert report["format"] == "xocview-diff" and report["equal"] is False
    assert report["old"]["file"] == str(ALEXNET) and report["new"]["file"] == str(edited)
    assert report["old"]["nodes"] == 40 and report["new"]["nodes"] == 39
    assert {k: v for k, v in report["counts"].items() if v} == {
        "node removed": 1,
        "node changed": 1,
        "tensor renamed": 1,
    }
    for finding in report["findings"]:
        assert {"kind", "subject", "changes", "old_nodes", "new_nodes"} <= set(finding)
    same = run("diff", "--json", ALEXNET, ALEXNET)
    assert same.returncode == 0 and json.loads(same.stdout)["findings"] == []


def test_an_onnx_model_and_its_xoc_json_conversion_are_equal(tmp_path: Path) -> None:
    out = tmp_path / "converted.json"
    assert run("convert", ALEXNET, out).returncode == 0
    r = run("diff", ALEXNET, out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the graphs are equal" in r.stdout


def test_corpus_files_equal_themselves_and_their_conversions(tmp_path: Path) -> None:
    for sub, name in (("nnvm", "mxnet08_Inception_BN-symbol.json"), ("xoc", "xoc_resnet18.json")):
        path = corpus_path(sub, name)
        assert run("diff", path, path).returncode == 0
        out = tmp_path / f"{path.stem}.xoc.json"
        assert run("convert", path, out).returncode == 0
        r = run("diff", path, out)
        assert r.returncode == 0, r.stdout


def test_a_file_that_does_not_load_exits_2_with_one_line(tmp_path: Path) -> None:
    r = run("diff", ALEXNET, tmp_path / "missing.onnx")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.count("\n") == 1 and "missing.onnx" in r.stderr
    assert "Traceback" not in r.stderr


def test_usage_errors_exit_2() -> None:
    assert run("diff", ALEXNET).returncode == 2
    r = run("diff", "--limit", "-1", ALEXNET, ALEXNET)
    assert r.returncode == 2 and "--limit" in r.stderr


def test_limit_caps_each_kind(tmp_path: Path) -> None:
    r = run("diff", "--limit", "1", light("squeezenet"), light("zfnet512"))
    assert r.returncode == 1
    assert "... and" in r.stdout and "(--limit 0 lists all)" in r.stdout
    everything = run("diff", "--limit", "0", light("squeezenet"), light("zfnet512"))
    assert "... and" not in everything.stdout
    assert len(everything.stdout.splitlines()) > len(r.stdout.splitlines())


def test_help_lists_diff() -> None:
    r = run("--help")
    assert any(ln.split()[:1] == ["diff"] for ln in r.stdout.splitlines())


def test_the_two_torch_exporters_compare_readably(tmp_path: Path) -> None:
    """BERT exported by TorchScript and by dynamo: different names, Constant nodes against
    initializers, other operand orders. The heavy operators all find their partners."""
    pytest.importorskip("torch", reason="torch is in the bench extra, not in make test")
    pytest.importorskip("transformers", reason="transformers is in the bench extra")
    pytest.importorskip("onnxscript", reason="the dynamo exporter needs onnxscript")
    from tests.perf.torch_exports import export_one, quiet

    quiet()
    paths = []
    for exporter in ("ts", "dynamo"):
        export = export_one("bert", 2, exporter, tmp_path)
        if export.path is None:
            pytest.skip(f"the {exporter} exporter failed here: {export.error}")
        paths.append(export.path)
    text = run("diff", *paths)
    assert text.returncode == 1, text.stderr
    assert "node removed" in text.stdout and "differences:" in text.stdout
    r = run("diff", "--json", *paths)
    report = json.loads(r.stdout)
    old, new = load(paths[0]), load(paths[1])
    pairs = {(a, b) for a, b in report["renamed_nodes"]}
    assert len(pairs) > 0.8 * sum("derived" not in n.metadata for n in new.nodes)
    matched_old = {a for a, _ in pairs}
    matched_new = {b for _, b in pairs}
    for op in ("MatMul", "LayerNormalization", "Softmax", "Gemm", "Erf", "Tanh"):
        count_old = Counter(n.op_type for n in old.nodes)[op]
        assert count_old == Counter(n.op_type for n in new.nodes)[op], op
        assert sum(n.op_type == op and n.id in matched_old for n in old.nodes) == count_old, op
        assert sum(n.op_type == op and n.id in matched_new for n in new.nodes) == count_old, op
    op_of_old = {n.id: n.op_type for n in old.nodes}
    op_of_new = {n.id: n.op_type for n in new.nodes}
    assert all(op_of_old[a] == op_of_new[b] for a, b in pairs)
