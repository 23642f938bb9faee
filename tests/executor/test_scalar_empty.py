"""Every kernel of ONNX's default domain on rank-0 and zero-size inputs, against onnxruntime
(onnx's reference where onnxruntime refuses): same dtype, same shape, values within tolerance.

The cases come from the schemas and a small per-op table (scalar_empty_cases,
scalar_empty_table); a new kernel gets generic cases, or the coverage test fails naming it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.executor import scalar_empty_table as table
from tests.executor.scalar_empty_cases import (
    CASES,
    Case,
    default_domain_ops,
    expected,
    onnxruntime_outputs,
    ours,
)
from tests.executor.scalar_empty_custom import CUSTOM
from xocview.errors import RunError

pytest.importorskip("onnxruntime", reason="onnxruntime is this suite's yardstick")

RTOL, ATOL = 1e-4, 1e-5
F16_RTOL = 2e-3  # one float16 step: onnxruntime computes some float16 ops in float16

# Case id -> why xocview still differs (strict: a fix must remove the entry).
KNOWN: dict[str, str] = {}


def _param(case: Case) -> object:
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[case.id])] if case.id in KNOWN else []
    return pytest.param(case.id, id=case.id, marks=marks)


def _same(got: np.ndarray, want: np.ndarray, what: str, values: bool) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if want.dtype.kind in "OUS":
        assert got.dtype.kind in "OUS", f"{what}: dtype {got.dtype}, expected strings"
        assert got.tolist() == want.astype(object).tolist(), what
        return
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    if not values:
        return
    if want.dtype.kind in "fc":
        rtol = F16_RTOL if want.dtype == np.float16 else RTOL
        np.testing.assert_allclose(got, want, rtol=rtol, atol=ATOL, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.mark.parametrize("case_id", [_param(c) for c in CASES.values()])
def test_kernel_on_scalar_and_empty_inputs(case_id: str, tmp_path: Path) -> None:
    case = CASES[case_id]
    want = expected(case_id)
    if case.op in table.SCALAR_REFUSED and case.name.startswith("scalar"):
        assert want.by != "onnxruntime", f"onnxruntime now runs {case_id}: drop SCALAR_REFUSED"
        with pytest.raises(RunError):
            ours(case, tmp_path)
        return
    if not want.by:
        pytest.skip("not allowed by either reference: " + "; ".join(want.refusals))
    got = ours(case, tmp_path)
    assert len(got) == len(want.outputs)
    values = case.op not in table.SHAPES_ONLY
    for k, (g, w) in enumerate(zip(got, want.outputs, strict=True)):
        _same(g, w, f"{case_id} output {k} (against {want.by})", values)


def test_every_default_domain_kernel_has_a_case_a_reference_runs() -> None:
    """A kernel without a case the references accept, and without an exemption, is named."""
    lacking = []
    for op in default_domain_ops():
        if op in table.EXEMPT:
            continue
        ids = [k for k, c in CASES.items() if c.op == op]
        if not any(expected(k).by for k in ids):
            lacking.append(op)
    assert not lacking, (
        f"no rank-0 or zero-size case that onnxruntime or onnx's reference runs: {lacking}; "
        "add one to scalar_empty_table (CUSTOM, EXTRA or GENERIC_ATTRS) or an EXEMPT reason"
    )


@pytest.mark.parametrize("case_id", sorted(table.SPEC_ANSWERS))
def test_onnxruntime_still_departs_where_the_spec_answers(case_id: str) -> None:
    """A spec answer kept in place of onnxruntime's goes once onnxruntime agrees."""
    got = onnxruntime_outputs(CASES[case_id])
    spec = table.SPEC_ANSWERS[case_id][1]
    assert not all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got, spec, strict=True)), (
        f"onnxruntime now gives the spec's answer on {case_id}: drop it from SPEC_ANSWERS"
    )


def test_exemptions_name_registered_kernels() -> None:
    """An exemption for an op that has no kernel (renamed, removed) is stale."""
    assert set(table.EXEMPT) <= set(default_domain_ops())
    assert set(CUSTOM) | set(table.EXTRA) <= set(default_domain_ops())
