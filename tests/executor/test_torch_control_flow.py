"""Control flow as PyTorch writes it: a scripted loop with a data-dependent branch (TorchScript
exporter: Loop holding an If, opsets 17 and 20) and torch.cond (dynamo exporter: If with
function bodies), run by us and by onnxruntime on the same random weights."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is in the bench extra, not in make test")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the yardstick")

from xocview.executor import run  # noqa: E402
from xocview.formats import load  # noqa: E402


class LoopNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        h = x
        for _ in range(n):
            h = torch.tanh(self.lin(h)) + h * 0.5
            if h.sum() > 4:
                h = h / 2
        return h


class CondNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(
            x.sum() > 0, lambda x: self.a(x).relu(), lambda x: self.b(x).sigmoid(), (x,)
        )


def same_as_onnxruntime(path: Path, feeds: dict[str, np.ndarray]) -> set[str]:
    """Asserts our outputs equal onnxruntime's; returns the op types of the timed nodes."""
    result = run(load(path), feeds)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for name, want in zip(names, session.run(names, feeds), strict=True):
        np.testing.assert_allclose(result.outputs[name], want, rtol=1e-5, atol=1e-6)
    return {result.op_types[k] for k in result.node_times}


@pytest.mark.parametrize("opset", [17, 20])
def test_a_scripted_loop_with_a_branch_matches_onnxruntime(tmp_path: Path, opset: int) -> None:
    torch.manual_seed(0)
    x = torch.randn(3, 8)
    path = tmp_path / "loop.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            torch.jit.script(LoopNet()),
            (x, 5),
            str(path),
            opset_version=opset,
            dynamo=False,
            input_names=["x", "n"],
        )
    timed = same_as_onnxruntime(path, {"x": x.numpy(), "n": np.array(5, np.int64)})
    assert {"Loop", "If", "Gemm", "Tanh"} <= timed  # the bodies' nodes are timed too


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_torch_cond_matches_onnxruntime_on_both_branches(tmp_path: Path, sign: float) -> None:
    torch.manual_seed(1)
    x = torch.randn(3, 8).abs() * sign
    path = tmp_path / "cond.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(CondNet(), (x,), str(path), dynamo=True, opset_version=18)
    same_as_onnxruntime(path, {"x": x.numpy()})
