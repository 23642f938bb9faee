"""``check`` on ONNX finds at least what ``onnx.checker.check_model(full_check=True)`` finds,
and every fault at its own place."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

from tests.formats.onnx import models as m
from xocview.cli import main
from xocview.formats import registry
from xocview.model import Finding

F = TensorProto.FLOAT
LIGHT = sorted((Path(onnx.__file__).parent / "backend/test/data/light").glob("*.onnx"))


def _vi(name: str, elem: int = F, shape: list[int] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, [2, 2] if shape is None else shape)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto] | None = None,
    outputs: list[onnx.ValueInfoProto] | None = None,
    inits: list[onnx.TensorProto] | None = None,
    ir_version: int = 8,
) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "g",
        [_vi("x")] if inputs is None else inputs,
        [_vi("y")] if outputs is None else outputs,
        initializer=inits or [],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = ir_version
    return model


def _n(op: str, ins: list[str], outs: list[str], name: str, **attrs: object) -> onnx.NodeProto:
    return helper.make_node(op, ins, outs, name=name, **attrs)


def _short_weight() -> onnx.TensorProto:
    t = helper.make_tensor("W", F, [2, 2], [1.0, 2.0, 3.0, 4.0])
    del t.float_data[:]
    t.raw_data = b"\0" * 8
    return t


def _negative_dims() -> onnx.TensorProto:
    t = helper.make_tensor("c", F, [1, 4], [1.0] * 4)
    del t.dims[:]
    t.dims.extend([-1, 4])
    return t


# Each broken model, and a piece of the place of the finding that must name it.
BROKEN: dict[str, tuple[Callable[[], onnx.ModelProto], str]] = {
    "unknown op": (lambda: _model([_n("Frobnicate", ["x"], ["y"], "f")]), "(Frobnicate 'f')"),
    "attribute of the wrong type": (
        lambda: _model([_n("Softmax", ["x"], ["y"], "s", axis=1.5)]),
        "(Softmax 's')",
    ),
    "missing required attribute": (
        lambda: _model([_n("Cast", ["x"], ["y"], "c")]),
        "(Cast 'c')",
    ),
    "too few inputs": (lambda: _model([_n("Add", ["x"], ["y"], "a")]), "(Add 'a')"),
    "too many inputs": (lambda: _model([_n("Relu", ["x", "x"], ["y"], "r")]), "(Relu 'r')"),
    "type mismatch": (
        lambda: _model(
            [_n("Add", ["x", "i"], ["y"], "add")], inputs=[_vi("x"), _vi("i", TensorProto.INT64)]
        ),
        "(Add 'add')",
    ),
    "shape mismatch": (
        lambda: _model(
            [_n("MatMul", ["x", "v"], ["y"], "mm")], inputs=[_vi("x"), _vi("v", F, [3, 5])]
        ),
        "(MatMul 'mm')",
    ),
    "nodes out of order": (
        lambda: _model([_n("Relu", ["h"], ["y"], "second"), _n("Relu", ["x"], ["h"], "first")]),
        "(Relu 'second')",
    ),
    "undefined input": (lambda: _model([_n("Add", ["x", "ghost"], ["y"], "a")]), "(Add 'a')"),
    "output produced twice": (
        lambda: _model([_n("Relu", ["x"], ["y"], "r1"), _n("Neg", ["x"], ["y"], "r2")]),
        "nodes[1]",
    ),
    "graph input overwritten": (
        lambda: _model([_n("Relu", ["x"], ["x"], "r"), _n("Neg", ["x"], ["y"], "n")]),
        "(Relu 'r')",
    ),
    "graph output never produced": (
        lambda: _model([_n("Relu", ["x"], ["z"], "r")]),
        "graph output 'y'",
    ),
    "ir_version too new": (lambda: _model([_n("Relu", ["x"], ["y"], "r")], ir_version=99), "ir"),
    "ir_version unset": (lambda: _model([_n("Relu", ["x"], ["y"], "r")], ir_version=0), "ir"),
    "initializer data too short": (
        lambda: _model([_n("Add", ["x", "W"], ["y"], "a")], inits=[_short_weight()]),
        "initializer 'W'",
    ),
    "initializer named twice": (
        lambda: _model(
            [_n("Add", ["x", "W"], ["y"], "a")],
            inits=[helper.make_tensor("W", F, [2, 2], [1.0] * 4)] * 2,
        ),
        "initializer 'W'",
    ),
    "constant with negative dims": (
        lambda: _model(
            [
                _n("Constant", [], ["c"], "k", value=_negative_dims()),
                _n("Add", ["x", "c"], ["y"], "a"),
            ]
        ),
        "(Constant 'k')",
    ),
    "output without a type": (
        lambda: _model([_n("Relu", ["x"], ["y"], "r")], outputs=[onnx.ValueInfoProto(name="y")]),
        "graph output 'y'",
    ),
}


def _rejected(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:
        return True
    return False


def _errors(path: Path) -> list[Finding]:
    return [f for f in registry.check(path)[1] if f.severity == "error"]


@pytest.mark.parametrize("fault", list(BROKEN))
def test_every_fault_onnx_rejects_gives_a_located_error(tmp_path: Path, fault: str) -> None:
    make, place = BROKEN[fault]
    model = make()
    assert _rejected(model), "the case must be one that onnx's own checker rejects"
    path = m.save(model, tmp_path / "broken.onnx")
    errors = _errors(path)
    assert any(place in f.place for f in errors), errors


@pytest.mark.parametrize("path", LIGHT, ids=lambda p: p.stem)
def test_the_light_models_give_no_errors_quickly(path: Path) -> None:
    assert not _rejected(onnx.load(str(path)))
    start = time.perf_counter()
    errors = _errors(path)
    assert errors == []
    assert time.perf_counter() - start < 1.0


def test_separate_faults_give_one_finding_each(tmp_path: Path) -> None:
    model = _model(
        [
            _n("Frobnicate", ["x"], ["h"], "unknown"),
            _n("Add", ["h"], ["h2"], "one_input"),
            _n("Relu", ["late"], ["y"], "early"),
            _n("Relu", ["h2"], ["late"], "late"),
        ],
        inits=[_short_weight()],
    )
    errors = _errors(m.save(model, tmp_path / "many.onnx"))
    places = [f.place for f in errors]
    assert "nodes[0] (Frobnicate 'unknown')" in places
    assert "nodes[1] (Add 'one_input')" in places
    assert "nodes[2] (Relu 'early')" in places
    assert "initializer 'W'" in places
    assert len(places) == len(set(places)), errors  # one finding per fault


def test_a_subgraph_may_use_outer_names_but_its_faults_are_found(tmp_path: Path) -> None:
    model = m.with_if()
    assert not _rejected(model)
    path = m.save(model, tmp_path / "if.onnx")
    assert _errors(path) == []
    branch = next(a for a in model.graph.node[-1].attribute if a.type == onnx.AttributeProto.GRAPH)
    branch.g.node[0].op_type = "Frobnicate"
    path = m.save(model, tmp_path / "if_bad.onnx")
    errors = _errors(path)
    assert any(f"{branch.name}: node[0] (Frobnicate" in f.place for f in errors), errors


def test_the_cli_lists_every_finding_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _model([_n("Frobnicate", ["x"], ["h"], "f"), _n("Add", ["h"], ["y"], "a")])
    path = m.save(model, tmp_path / "two.onnx")
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert "nodes[0] (Frobnicate 'f'): error: No Op registered for Frobnicate" in out
    assert "nodes[1] (Add 'a'): error: Node(a) with schema(::Add:14) has input size 1" in out


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([_n("Relu", ["x"], ["z"], "r")], "no node, input or initializer gives this value"),
        (
            [_n("Relu", ["x"], ["y"], "r"), _n("Relu", ["y"], ["x"], "back")],
            "output 'x' is already a graph input or initializer",
        ),
    ],
    ids=["output-without-producer", "input-overwritten"],
)
def test_a_fault_both_checkers_see_is_reported_once(
    tmp_path: Path, nodes: list[onnx.NodeProto], message: str
) -> None:
    """The reader's error stands; the model validation's warning about it is not repeated."""
    _, found = registry.check(m.save(_model(nodes), tmp_path / "f.onnx"))
    about = [f for f in found if any(q in str(f) for q in ("'x'", "'y'"))]
    assert len([f for f in about if message in f.message]) == 1, found
    assert [f.severity for f in about if "cycle" not in f.message] == ["error"], found


def test_versions_past_32_bits_are_findings_not_crashes(tmp_path: Path) -> None:
    model = _model([_n("Relu", ["x"], ["y"], "r")])
    model.opset_import[0].version = 2**62
    model.ir_version = 2**40
    found = _errors(m.save(model, tmp_path / "v.onnx"))
    places = [f.place for f in found]
    assert "opset_import[0]" in places and "ir_version" in places


_DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.mark.parametrize("folder", ["ml", "contrib", "quant"])
def test_files_real_tools_wrote_get_errors_exactly_when_onnx_refuses_them(folder: str) -> None:
    """skl2onnx, onnxruntime's optimizer and quantizer output: check's errors agree with
    check_model(full_check=True) (skl2onnx imports the default domain twice, at one
    version: onnx accepts it, check warns)."""
    files = sorted((_DATA / folder).glob("*.onnx"))
    assert files
    for path in files:
        try:
            onnx.checker.check_model(str(path), full_check=True)
            refused = False
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError):
            refused = True
        _, found = registry.check(path)
        errors = [f for f in found if f.severity == "error"]
        assert bool(errors) == refused, (path.name, errors)


def test_one_domain_at_two_versions_is_an_error(tmp_path: Path) -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [_vi("x")], [_vi("y")])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("", 18)]
    )
    path = tmp_path / "twice.onnx"
    onnx.save(model, path)
    _, found = registry.check(path)
    assert any(f.severity == "error" and "versions 17 and 18" in f.message for f in found)
