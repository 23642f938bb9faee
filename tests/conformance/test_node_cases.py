"""ONNX's node conformance suite: every case of the installed onnx through load and run.

Each case is a one-node model (or its function expansion) with inputs and expected outputs.
Cases that do not pass are listed with their kind in expectations.txt and run as strict
xfails that must raise that kind: a case that starts to pass must be promoted (its line
deleted), and one that fails differently (a refusal turned crash, a new wrong answer) fails
the build. Parametrizing needs the case names, so the cache is written at collection when
missing (about 5 s, once per onnx version). run.py rewrites expectations.txt.
"""

from __future__ import annotations

import warnings

import onnx
import pytest

from tests.conformance.node_cases import (
    EXPECTATIONS,
    KINDS,
    case_names,
    read_expectations,
    run_case,
)

NAMES = case_names()
EXPECTED = read_expectations()


def _param(name: str) -> object:
    known = EXPECTED.get(name)
    if known is None:
        return pytest.param(name, id=name)
    mark = pytest.mark.xfail(strict=True, raises=KINDS[known.kind], reason=known.reason)
    return pytest.param(name, id=name, marks=mark)


@pytest.mark.parametrize("name", [_param(n) for n in NAMES])
def test_node_case(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy's overflow and NaN warnings are the point
        run_case(name)


def test_the_suite_is_the_installed_onnx_one() -> None:
    """A suite that found no cases would pass silently; ONNX 1.23 has 1,884."""
    assert len(NAMES) > 1000, f"only {len(NAMES)} node cases for onnx {onnx.__version__}"


def test_every_expectation_names_a_case() -> None:
    """Stale lines (a case onnx renamed or dropped) would hide nothing, but mislead."""
    stale = sorted(set(EXPECTED) - set(NAMES))
    assert not stale, f"{EXPECTATIONS.name} lists cases onnx does not have: {stale[:5]}"


@pytest.mark.parametrize("engine", ["onnxruntime", "reference"])
def test_the_anchor_engines_are_judged_like_us(engine: str) -> None:
    """run.py --anchors puts onnxruntime and the ReferenceEvaluator beside us: the same cases,
    the same comparison (a sequence-valued Loop included)."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is the test extra's anchor")
    from tests.conformance.anchors import ENGINES, run_case_with

    for name in ("test_abs", "test_loop13_seq", "test_sequence_insert_at_back"):
        run_case_with(ENGINES[engine], name)
