"""``xocview edit`` as a user runs it: edits in command-line order, refusals write nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.running import run
from tests.conftest import REPO
from xocview.formats import load
from xocview.model import edits as E

TINY = "sample_graphs/tiny_transformer.json"
SIMPLE = "sample_graphs/simple_model.json"


def test_a_chain_of_edits_gives_the_expected_file(tmp_path: Path) -> None:
    out = tmp_path / "edited.json"
    r = run(
        "edit",
        TINY,
        "-o",
        str(out),
        "--set",
        "l0.kt.perm=[1,0,2]",
        "--set",
        'l0.gelu.approximate="none"',
        "--del-attr",
        "l0.norm.epsilon",
        "--set-meta",
        'layer0.wq.source.note="hi"',  # a tensor id with dots, a dotted key
        "--set-meta",
        "l0.q.perf.x=1",  # node and tensor 'l0.q' both exist: the node's
        "--set-meta",
        'tiny_transformer.owner={"name": "me"}',
        "--rename",
        "layer0=block0",
        "--set-meta",
        "block0.note=2",  # the renamed id, as edits apply in order
        "--rename",
        "x0=embedded",
        "--shape",
        "input_ids=1,32",
        "--dtype",
        "embedded=float16",
        "--bypass",
        "l0.gelu",
        "--delete",
        "l1.softmax",
        "--output",
        "l0.s",
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines() == [f"wrote {out} (14 edits; 42 nodes, 59 tensors)"]

    want = load(REPO / TINY)
    E.set_attribute(want, "l0.kt", "perm", [1, 0, 2])
    E.set_attribute(want, "l0.gelu", "approximate", "none")
    E.remove_attribute(want, "l0.norm", "epsilon")
    E.set_metadata(want, "source.note", "hi", tensor="layer0.wq")
    E.set_metadata(want, "perf.x", 1, node="l0.q")
    E.set_metadata(want, "owner", {"name": "me"})
    E.rename_node(want, "layer0", "block0")
    E.set_metadata(want, "note", 2, node="block0")
    E.rename_tensor(want, "x0", "embedded")
    E.set_shape(want, "input_ids", [1, 32])
    E.set_dtype(want, "embedded", "float16")
    E.bypass_node(want, "l0.gelu")
    E.delete_node(want, "l1.softmax")
    E.mark_output(want, "l0.s")
    got = load(out)
    assert got == want
    assert got.tensor("layer0.wq").metadata == {"source": {"note": "hi"}}
    assert got.node("l0.q").metadata["perf"] == {"x": 1}
    assert got.node("l0.mlp").metadata["parent_id"] == "block0"
    assert got.tensor("embedded").dtype == "float16"


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (["--bypass", "l0.residual"], "--bypass l0.residual: node 'l0.residual' has 2 data inputs"),
        (["--set", "l0.kt.perm=3"], "must be a list of ints"),
        (["--set", "l0.gelu.approximate=none"], "is not JSON"),
        (["--set", "nope.axis=1"], "no node id before a dot in 'nope.axis'"),
        (["--shape", "x0=1,a"], "is not sizes separated by commas"),
        (["--dtype", "x0=float13"], "unknown dtype 'float13'"),
        (["--rename", "x0=x_tok"], "a tensor with id 'x_tok' already exists"),
        (["--shape", "embedded=1", "--rename", "x0=embedded"], "no tensor with id 'embedded'"),
    ],
)
def test_a_refused_edit_exits_1_and_writes_nothing(
    tmp_path: Path, edit: list[str], says: str
) -> None:
    out = tmp_path / "out.json"
    r = run("edit", TINY, "-o", str(out), "--dtype", "x0=float16", *edit)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("xocview: error: ")
    assert says in lines[0] and lines[0].endswith("nothing was written")
    assert not out.exists()


def test_a_refused_edit_keeps_an_existing_output_file(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("old", encoding="utf-8")
    r = run("edit", SIMPLE, "-o", str(out), "--set", "node_0.kernel_shape=[3]", "--delete", "x")
    assert r.returncode == 1 and "no node with id 'x'" in r.stderr
    assert out.read_text(encoding="utf-8") == "old"


def test_edit_writes_json_or_onnx_only(tmp_path: Path) -> None:
    r = run("edit", SIMPLE, "-o", str(tmp_path / "out.pb"))
    assert r.returncode == 2 and "must be a .json file (XOC JSON) or an .onnx file" in r.stderr
    assert not (tmp_path / "out.pb").exists()
