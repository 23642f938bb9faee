"""Tests of xocview/model/edits.py: each edit saved and reloaded, undone exactly, or refused."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import pytest

from tests.conftest import REPO
from tests.model.conftest import chain, grouped, node, tensor
from xocview.errors import EditError
from xocview.formats import load, save
from xocview.formats.xoc import dumps
from xocview.model import DTYPES, TENSOR_KINDS, Graph, validate
from xocview.model import edits as E
from xocview.model.dotted import flatten_dotted

TINY = REPO / "sample_graphs" / "tiny_transformer.json"


@pytest.fixture
def tiny() -> Graph:
    return load(TINY)


def ids(g: Graph, refs: list[int]) -> list[str]:
    return [g.tensors[t].id for t in refs]


def check(g: Graph, tmp_path: Path, do: Callable[[Graph], E.Edit]) -> Graph:
    """Apply ``do``; the saved file reloads equal; revert restores the original exactly; redo
    gives the edited graph again. Returns the reloaded edited graph."""
    before, text_before = copy.deepcopy(g), dumps(g)
    edit = do(g)
    assert isinstance(edit, E.Edit) and str(edit)
    after = dumps(g)
    save(g, tmp_path / "edited.json")
    reloaded = load(tmp_path / "edited.json")
    assert reloaded == g
    edit.revert(g)
    assert g == before
    assert dumps(g) == text_before  # key order and list order too
    edit.apply(g)
    assert dumps(g) == after
    return reloaded


# -- attributes ------------------------------------------------------------------------------


def test_set_attribute_replaces_a_schema_attribute(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.set_attribute(g, "l0.kt", "perm", [1, 0, 2]))
    assert g.node("l0.kt").attributes == {"perm": [1, 0, 2]}


def test_set_attribute_coerces_floats_and_adds_schema_attributes(
    tiny: Graph, tmp_path: Path
) -> None:
    g = check(tiny, tmp_path, lambda g: E.set_attribute(g, "l0.norm", "epsilon", 1))
    assert g.node("l0.norm").attributes["epsilon"] == 1.0
    assert isinstance(g.node("l0.norm").attributes["epsilon"], float)
    g = check(tiny, tmp_path, lambda g: E.add_attribute(g, "l0.norm", "stash_type", 1))
    assert g.node("l0.norm").attributes["stash_type"] == 1


def test_attribute_outside_the_schema_goes_to_metadata(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.set_attribute(g, "l0.kt", "fused", True))
    assert "fused" not in g.node("l0.kt").attributes
    assert g.node("l0.kt").metadata["attributes"] == {"fused": True}
    g = check(tiny, tmp_path, lambda g: E.remove_attribute(g, "l0.kt", "fused"))
    assert "attributes" not in g.node("l0.kt").metadata


def test_attribute_of_an_unknown_op_takes_any_json(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.set_attribute(g, "layer0", "heads", {"n": 4}))
    assert g.node("layer0").metadata["attributes"] == {"heads": {"n": 4}}


def test_remove_attribute(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.remove_attribute(g, "l0.norm", "epsilon"))
    assert g.node("l0.norm").attributes == {"axis": -1}


# -- metadata --------------------------------------------------------------------------------


def test_set_metadata_expands_dotted_keys(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.set_metadata(g, "perf.time.gpu", 2.5, node="embed"))
    assert g.node("embed").metadata["performance"] == {"time": {"cpu": 0.041}}
    assert g.node("embed").metadata["perf"] == {"time": {"gpu": 2.5}}
    g = check(tiny, tmp_path, lambda g: E.set_metadata(g, "performance.time.gpu", 1, node="embed"))
    assert g.node("embed").metadata["performance"]["time"] == {"cpu": 0.041, "gpu": 1}
    g = check(tiny, tmp_path, lambda g: E.set_metadata(g, "note", {"a.b": 1}, tensor="x0"))
    assert g.tensor("x0").metadata == {"note": {"a": {"b": 1}}}
    g = check(tiny, tmp_path, lambda g: E.set_metadata(g, "training.hyper.lr", 0.1))
    assert g.metadata["training"]["hyper"] == {"lr": 0.1, "batch": 32}


def test_delete_metadata_drops_tables_left_empty(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.delete_metadata(g, "performance.time.cpu", node="embed"))
    assert "performance" not in g.node("embed").metadata
    g = check(tiny, tmp_path, lambda g: E.delete_metadata(g, "source", tensor="mask.scale"))
    assert g.tensor("mask.scale").metadata == {}
    g = check(tiny, tmp_path, lambda g: E.delete_metadata(g, "training.hyper"))
    assert g.metadata["training"] == {"dataset": "none"}


# -- ids, tensors, outputs -------------------------------------------------------------------


def test_rename_node_updates_parent_and_children(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.rename_node(g, "layer0", "block0"))
    assert g.node("encoder").metadata["children_ids"] == ["block0", "layer1"]
    assert g.node("l0.mlp").metadata["parent_id"] == "block0"
    assert g.node("block0").metadata["children_ids"][0] == "l0.attention"
    assert not [f for f in validate(g) if f.severity == "error"]


def test_rename_tensor(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.rename_tensor(g, "x0", "embedded"))
    assert ids(g, g.node("l0.q").inputs) == ["embedded", "layer0.wq"]


def test_set_shape_dtype_kind(tiny: Graph, tmp_path: Path) -> None:
    tiny.tensors[0].metadata["shape_symbols"] = ["batch", None]
    g = check(tiny, tmp_path, lambda g: E.set_shape(g, "input_ids", [4, -1]))
    assert g.tensor("input_ids").shape == [4, -1]
    assert g.tensor("input_ids").metadata == {"doc": "token ids"}
    g = check(tiny, tmp_path, lambda g: E.set_shape(g, "x0", []))
    assert g.tensor("x0").shape == []
    g = check(tiny, tmp_path, lambda g: E.set_dtype(g, "x0", "float"))
    assert g.tensor("x0").dtype == "float32"
    g = check(tiny, tmp_path, lambda g: E.set_dtype(g, "x0", "bfloat16"))
    assert g.tensor("x0").dtype == "bfloat16"
    g = check(tiny, tmp_path, lambda g: E.set_kind(g, "pos.weight", "input"))
    assert g.tensor("pos.weight").kind == "input"


def test_mark_and_unmark_output(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.mark_output(g, "l0.p"))
    assert ids(g, g.outputs) == ["hidden_1", "logits", "l0.p"]
    assert g.tensor("l0.p").kind == "output"
    g = check(tiny, tmp_path, lambda g: E.unmark_output(g, "hidden_1"))
    assert ids(g, g.outputs) == ["logits", "l0.p"]


# -- structure -------------------------------------------------------------------------------


def test_delete_node_keeps_consumed_outputs_dangling(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.delete_node(g, "l0.softmax"))
    assert not g.index.has_node("l0.softmax")
    assert len(g.tensors) == len(tiny.tensors)
    assert "l0.softmax" not in g.node("l0.attention").metadata["children_ids"]
    assert any("dangling" in f.message and "'l0.p'" in f.message for f in validate(g))


def test_delete_node_removes_unused_outputs_and_renumbers() -> None:
    g = Graph(
        "g",
        "g",
        [tensor("x", "input"), tensor("a"), tensor("b"), tensor("c", "output")],
        [node("n0", "Relu", [0], [1]), node("n1", "Relu", [0], [2]), node("n2", "Relu", [1], [3])],
        [0],
        [3],
    )
    before = copy.deepcopy(g)
    edit = E.delete_node(g, "n1")
    assert [t.id for t in g.tensors] == ["x", "a", "c"]
    assert g.node("n2").outputs == [2] and g.outputs == [2]
    edit.revert(g)
    assert g == before and dumps(g) == dumps(before)


def test_delete_node_keeps_graph_outputs(tmp_path: Path) -> None:
    g = check(chain(3), tmp_path, lambda g: E.delete_node(g, "n2"))
    assert ids(g, g.outputs) == ["t3"]


def test_bypass_node(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.bypass_node(g, "l0.gelu"))
    assert ids(g, g.node("l0.fc2").inputs) == ["l0.h", "layer0.w2"]
    assert not g.index.has_node("l0.gelu")
    assert "l0.g" not in [t.id for t in g.tensors]
    assert g.node("l0.mlp").metadata["children_ids"] == ["l0.fc1", "l0.fc2"]
    assert not [f for f in validate(g) if f.severity == "error"]


def test_bypass_passes_a_graph_output_on(tmp_path: Path) -> None:
    g = check(chain(3), tmp_path, lambda g: E.bypass_node(g, "n2"))
    assert ids(g, g.outputs) == ["t2"]
    assert g.tensor("t2").kind == "output"


def test_bypass_takes_a_dropouts_unread_mask_along(tmp_path: Path) -> None:
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    g = load(light / "light_squeezenet.onnx")
    drop = next(n for n in g.nodes if n.op_type == "Dropout")
    data, mask = (g.tensors[t].id for t in drop.outputs)
    readers = [n.id for n in g.nodes if drop.outputs[0] in n.inputs]
    source = g.tensors[drop.inputs[0]].id
    g = check(g, tmp_path, lambda g: E.bypass_node(g, drop.id))
    assert not g.index.has_node(drop.id)
    assert not {data, mask} & {t.id for t in g.tensors}
    assert all(source in ids(g, g.node(r).inputs) for r in readers)


def test_bypass_refuses_a_node_whose_second_output_is_read(tmp_path: Path) -> None:
    g = chain(3)
    extra = tensor("mask")
    g.tensors.append(extra)
    g.nodes[1].outputs = [*g.nodes[1].outputs, len(g.tensors) - 1]
    g.nodes[2].inputs = [*g.nodes[2].inputs, len(g.tensors) - 1]
    with pytest.raises(EditError, match="one data input and one output"):
        E.bypass_node(g, g.nodes[1].id)


def test_add_node_infers_the_output(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.add_node(g, "MatMul", ["l0.n", "layer0.w1"]))
    out = g.tensor("MatMul_out")
    assert (out.shape, out.dtype, out.kind) == ([1, 16, 256], "float32", "activation")
    assert g.nodes[-1].outputs == [len(g.tensors) - 1]
    g = check(
        tiny,
        tmp_path,
        lambda g: E.add_node(
            g, "Transpose", ["x0"], node_id="t", output_id="xt", attributes={"perm": [0, 2, 1]}
        ),
    )
    assert g.tensor("xt").shape == [1, 64, 16]
    assert g.node("t").attributes == {"perm": [0, 2, 1]}


def test_add_node_of_an_unknown_op_has_unknown_rank(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.add_node(g, "MyOp", ["x0", "mask_f"]))
    out = g.tensor("MyOp_out")
    assert (out.shape, out.dtype, out.metadata) == ([], "float32", {"rank_unknown": True})


def test_group_nodes_inside_their_common_parent(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.group_nodes(g, ["l0.k", "l0.q"], "qk"))
    assert g.node("qk").metadata == {"children_ids": ["l0.q", "l0.k"], "parent_id": "l0.attention"}
    assert g.node("l0.attention").metadata["children_ids"][:2] == ["qk", "l0.v"]
    assert g.node("l0.q").metadata["parent_id"] == "qk"
    assert not [f for f in validate(g) if f.severity == "error"]


def test_group_nodes_of_different_parents_at_top_level(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.group_nodes(g, ["embed", "l0.q"]))
    assert "parent_id" not in g.node("group").metadata
    assert "l0.q" not in g.node("l0.attention").metadata["children_ids"]
    assert not [f for f in validate(g) if f.severity == "error"]


def test_ungroup_moves_children_up(tiny: Graph, tmp_path: Path) -> None:
    g = check(tiny, tmp_path, lambda g: E.ungroup(g, "l0.mlp"))
    kids = g.node("layer0").metadata["children_ids"]
    mlp = ["l0.fc1", "l0.gelu", "l0.fc2"]
    assert kids == ["l0.attention", "l0.residual", "l0.norm", *mlp, "l0.out"]
    assert g.node("l0.gelu").metadata["parent_id"] == "layer0"
    g = check(tiny, tmp_path, lambda g: E.ungroup(g, "encoder"))
    assert "parent_id" not in g.node("layer0").metadata
    assert not [f for f in validate(g) if f.severity == "error"]


def test_an_edit_applies_to_an_equal_copy(tiny: Graph) -> None:
    copy_ = copy.deepcopy(tiny)
    edit = E.delete_node(tiny, "l0.kt")
    edit.apply(copy_)
    assert copy_ == tiny


# -- refusals --------------------------------------------------------------------------------

REFUSALS: list[tuple[str, Callable[[Graph], Any], str]] = [
    ("unknown node", lambda g: E.set_attribute(g, "l0.kx", "perm", [0]), "l0.kt"),
    ("int for ints", lambda g: E.set_attribute(g, "l0.kt", "perm", 3), "list of ints"),
    ("str for int", lambda g: E.set_attribute(g, "embed", "axis", "0"), "an integer"),
    ("bool for int", lambda g: E.set_attribute(g, "embed", "axis", True), "an integer"),
    ("str for float", lambda g: E.set_attribute(g, "l0.norm", "epsilon", "x"), "a number"),
    ("nan float", lambda g: E.set_attribute(g, "l0.norm", "epsilon", float("nan")), "number"),
    ("int for string", lambda g: E.set_attribute(g, "l0.gelu", "approximate", 1), "a string"),
    ("no JSON form", lambda g: E.set_attribute(g, "layer0", "x", {1, 2}), "no JSON form"),
    ("add existing", lambda g: E.add_attribute(g, "embed", "axis", 1), "already has"),
    ("remove missing", lambda g: E.remove_attribute(g, "embed", "perm"), "'axis'"),
    ("meta under a value", lambda g: E.set_metadata(g, "doc.x", 1, tensor="input_ids"), "doc"),
    ("meta hierarchy", lambda g: E.set_metadata(g, "parent_id", "x", node="l0.q"), "group"),
    ("meta both", lambda g: E.set_metadata(g, "a", 1, node="l0.q", tensor="x0"), "not both"),
    ("meta missing key", lambda g: E.delete_metadata(g, "nope", node="embed"), "performance"),
    ("meta empty key", lambda g: E.set_metadata(g, "", 1), "empty"),
    ("rename duplicate node", lambda g: E.rename_node(g, "l0.q", "l0.k"), "already exists"),
    ("rename duplicate tensor", lambda g: E.rename_tensor(g, "x0", "x_tok"), "already exists"),
    ("rename empty", lambda g: E.rename_tensor(g, "x0", ""), "empty"),
    ("rename unknown", lambda g: E.rename_tensor(g, "nope", "y"), "no tensor"),
    ("shape below -1", lambda g: E.set_shape(g, "x0", [1, -2]), "integers >= -1"),
    ("shape of floats", lambda g: E.set_shape(g, "x0", [1.5]), "integers >= -1"),
    ("unknown dtype", lambda g: E.set_dtype(g, "x0", "float13"), "float16"),
    ("unknown kind", lambda g: E.set_kind(g, "x0", "const"), "activation"),
    ("mark twice", lambda g: E.mark_output(g, "logits"), "already"),
    ("unmark non-output", lambda g: E.unmark_output(g, "x0"), "not a graph output"),
    ("delete group", lambda g: E.delete_node(g, "layer0"), "ungroup"),
    ("delete unknown", lambda g: E.delete_node(g, "nope"), "no node"),
    ("bypass two inputs", lambda g: E.bypass_node(g, "l0.residual"), "2 data inputs"),
    ("bypass group", lambda g: E.bypass_node(g, "l0.mlp"), "ungroup"),
    ("add too few", lambda g: E.add_node(g, "MatMul", ["x0"]), "2 inputs"),
    ("add variadic", lambda g: E.add_node(g, "Concat", []), "at least 1"),
    ("add unknown input", lambda g: E.add_node(g, "Relu", ["nope"]), "no tensor"),
    ("add bad attr", lambda g: E.add_node(g, "Relu", ["x0"], attributes={"x": {1}}), "JSON"),
    ("add taken id", lambda g: E.add_node(g, "Relu", ["x0"], node_id="embed"), "already"),
    ("add taken out", lambda g: E.add_node(g, "Relu", ["x0"], output_id="x0"), "already"),
    ("add empty op", lambda g: E.add_node(g, "", ["x0"]), "empty"),
    ("group nothing", lambda g: E.group_nodes(g, []), "no nodes"),
    ("group twice", lambda g: E.group_nodes(g, ["l0.q", "l0.q"]), "twice"),
    ("group taken id", lambda g: E.group_nodes(g, ["l0.q"], "layer0"), "already"),
    ("ungroup leaf", lambda g: E.ungroup(g, "l0.q"), "not a group"),
]


@pytest.mark.parametrize(("do", "says"), [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refused_edits_leave_the_graph_untouched(
    tiny: Graph, do: Callable[[Graph], Any], says: str
) -> None:
    before, text = copy.deepcopy(tiny), dumps(tiny)
    with pytest.raises(EditError, match=None) as info:
        do(tiny)
    assert says in str(info.value)
    assert "\n" not in str(info.value)
    assert tiny == before and dumps(tiny) == text


@pytest.mark.parametrize(
    "do",
    [
        lambda g: E.set_attribute(g, "c", "value", [1.0]),
        lambda g: E.remove_attribute(g, "c", "value"),
        lambda g: E.add_node(g, "Constant", [], attributes={"value": 1}),
    ],
)
def test_tensor_attributes_are_read_only(do: Callable[[Graph], Any]) -> None:
    g = chain(2)
    value = {"tensor": {"dtype": "float32", "shape": [1], "values": [2.0]}}
    g.nodes.append(node("c", "Constant", [], [1], {"value": value}))
    g.invalidate()
    before = copy.deepcopy(g)
    with pytest.raises(EditError, match="type TENSOR and read-only"):
        do(g)
    assert g == before


def test_ungroup_refuses_an_operator_with_a_body() -> None:
    g = grouped()
    g.nodes[4].inputs = [0]
    g.invalidate()
    before = copy.deepcopy(g)
    with pytest.raises(EditError, match="inputs and outputs of its own"):
        E.ungroup(g, "blk")
    assert g == before


# -- a long random sequence, undone ----------------------------------------------------------


def _random_value(rng: random.Random, kind: str | None) -> Any:
    scalar = {"INT": lambda: rng.randint(-3, 9), "FLOAT": lambda: rng.uniform(0, 2)}.get(
        (kind or "STRING").rstrip("S"), lambda: rng.choice(["a", "b", "same"])
    )
    return [scalar() for _ in range(rng.randint(0, 3))] if kind and kind.endswith("S") else scalar()


def _random_edit(g: Graph, rng: random.Random, k: int) -> E.Edit:
    nd = rng.choice(g.nodes)
    t = rng.choice(g.tensors)
    choice = rng.randrange(15)
    if choice == 0 and nd.attributes:
        name = rng.choice(list(nd.attributes))
        return E.set_attribute(
            g, nd.id, name, _random_value(rng, E.attribute_type(nd.op_type, name))
        )
    if choice == 1:
        return E.set_metadata(g, rng.choice(["edit.n", "perf.t", "x"]), k, node=nd.id)
    if choice == 2:
        keys = list(flatten_dotted(t.metadata)) or ["missing"]
        return E.delete_metadata(g, rng.choice(keys), tensor=t.id)
    if choice == 3:
        return E.rename_node(g, nd.id, f"{nd.id}~{k}")
    if choice == 4:
        return E.rename_tensor(g, t.id, rng.choice([f"{t.id}~{k}", g.tensors[0].id]))
    if choice == 5:
        return E.set_shape(g, t.id, [rng.randint(-1, 8) for _ in range(rng.randint(0, 4))])
    if choice == 6:
        return E.set_dtype(g, t.id, rng.choice(list(DTYPES)))
    if choice == 7:
        return E.set_kind(g, t.id, rng.choice(TENSOR_KINDS))
    if choice == 8:
        return (E.unmark_output if rng.random() < 0.5 else E.mark_output)(g, t.id)
    if choice == 9:
        return E.delete_node(g, nd.id)
    if choice == 10:
        return E.bypass_node(g, nd.id)
    if choice == 11:
        ins = [x.id for x in rng.sample(g.tensors, rng.randint(1, 2))]
        return E.add_node(g, rng.choice(["Relu", "Add", "Custom"]), ins)
    if choice == 12:
        return E.group_nodes(g, [x.id for x in rng.sample(g.nodes, rng.randint(1, 3))])
    if choice == 13:
        return E.ungroup(g, nd.id)
    return E.set_metadata(g, f"run.{k}", {"seed": k})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_hundred_random_edits_undo_to_the_original(tiny: Graph, seed: int) -> None:
    rng = random.Random(seed)
    original, text = copy.deepcopy(tiny), dumps(tiny)
    done: list[E.Edit] = []
    refused = 0
    while len(done) < 100:
        state = dumps(tiny)
        try:
            done.append(_random_edit(tiny, rng, len(done)))
        except EditError:
            refused += 1
            assert dumps(tiny) == state
    assert refused > 0  # the generator also exercises refusals
    final = dumps(tiny)
    for edit in reversed(done):
        edit.revert(tiny)
    assert tiny == original and dumps(tiny) == text
    for edit in done:
        edit.apply(tiny)
    assert dumps(tiny) == final
