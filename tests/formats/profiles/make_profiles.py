"""Profiles as the runtimes write them, made on the spot for the import tests.

- onnxruntime: a light model run with ``SessionOptions.enable_profiling``, at a chosen graph
  optimization level (onnxruntime is a test dependency);
- PyTorch: a small transformer-like nn.Module with seeded random weights, exported by the
  TorchScript exporter (``dynamo=False``) and profiled by ``torch.profiler`` as a user would
  (``record_shapes``, ``with_modules``, ``with_stack``: in eager mode the module ranges come
  with the Python stack), its trace written by ``export_chrome_trace``. torch is not a test
  dependency: callers skip without it;
- another model, whose nodes have names of their own: the wrong model for those profiles.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as oh

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LEVELS = {"none": "ORT_DISABLE_ALL", "basic": "ORT_ENABLE_BASIC", "all": "ORT_ENABLE_ALL"}


def ort_profile(model: Path, folder: Path, level: str = "all", runs: int = 2) -> Path:
    """The profile onnxruntime writes for ``runs`` runs of ``model`` (the file as it is)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.enable_profiling = True
    options.profile_file_prefix = str(folder / f"{model.stem}_{level}")
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, LEVELS[level])
    options.intra_op_num_threads = 1
    options.log_severity_level = 3
    session = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = rng.random(shape, dtype=np.float32)
    for _ in range(runs):
        session.run(None, feeds)
    return Path(session.end_profiling())


def other_model(folder: Path) -> Path:
    """A model whose nodes all have names of their own (onnxruntime names unnamed nodes
    ``<Op>_<k>`` as xocview does, so two unnamed models share many names)."""
    x = oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = oh.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [
        oh.make_node("Relu", ["x"], ["h"], name="act"),
        oh.make_node("Neg", ["h"], ["y"], name="neg"),
    ]
    path = folder / "other.onnx"
    onnx.save(oh.make_model(oh.make_graph(nodes, "other", [x], [y])), str(path))
    return path


def small_model() -> Any:
    """An encoder of two attention + MLP layers and a head, eval mode, seeded."""
    import torch
    from torch import nn

    class Attention(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

        def forward(self, x: Any) -> Any:
            a = torch.softmax(self.q(x) @ self.k(x).transpose(-1, -2) / 8.0, -1)
            return self.o(a @ self.v(x))

    class Layer(nn.Module):
        def __init__(self, d: int) -> None:
            super().__init__()
            self.attention = Attention(d)
            self.norm = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x: Any) -> Any:
            x = self.norm(x + self.attention(x))
            return x + self.mlp(x)

    class Encoder(nn.Module):
        def __init__(self, d: int, n: int) -> None:
            super().__init__()
            self.layer = nn.ModuleList([Layer(d) for _ in range(n)])

        def forward(self, x: Any) -> Any:
            for layer in self.layer:
                x = layer(x)
            return x

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = Encoder(64, 2)
            self.head = nn.Linear(64, 10)

        def forward(self, x: Any) -> Any:
            return self.head(self.encoder(x)).relu()

    torch.manual_seed(0)
    return Model().eval()


def torch_export_and_trace(
    folder: Path, passes: int = 3, with_stack: bool = True, dynamo: bool = False
) -> tuple[Path, Path]:
    """The small model exported to ONNX (by the TorchScript exporter, or with ``dynamo`` by
    the dynamo exporter) and the Chrome trace of ``passes`` forward passes of it under the
    PyTorch profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    model = small_model()
    x = torch.randn(1, 16, 64)
    onnx_path, trace = folder / "small.onnx", folder / "small_trace.json"
    # the dynamo exporter reports its steps; the TorchScript one warns that it is the old one
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        opset = 18 if dynamo else 17
        torch.onnx.export(model, (x,), str(onnx_path), dynamo=dynamo, opset_version=opset)
    with torch.no_grad():
        model(x)  # a warm-up pass outside the profile
        with profile(
            activities=[ProfilerActivity.CPU],
            record_shapes=True,
            with_modules=True,
            with_stack=with_stack,
        ) as prof:
            for _ in range(passes):
                model(x)
    prof.export_chrome_trace(str(trace))
    return onnx_path, trace
