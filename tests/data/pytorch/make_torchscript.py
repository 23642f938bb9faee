"""Make the TorchScript test archives with torch and transformers (not installed by `make`):
`.venv/bin/python tests/data/pytorch/make_torchscript.py`. Seeded, so a rerun makes the same
models.

Each `ts_<name>.pt` is written by torch.jit.save, then re-zipped with its code and pickle
members deflated (torch stores everything; deflating keeps the files small) and its tensor
storages stored, as torch writes them; torch.jit.load reads the result. `ts_<name>.npz` holds
the inputs (`in.<name>`) and torch's outputs (`out.<k>`) of the loaded module, and
`ts_modules.json` each model's `named_modules()` (name -> class), the modules a forward
call runs, and each state dict entry's (and non-persistent buffer's: TorchScript saves them)
shape, dtype, sums and first values (the CNNs' npz files keep every value as `sd.<key>`).

- cnn_trace: torch.jit.trace of a small CNN (conv / batch norm / relu / max pool / adaptive
  average pool / flatten / linear in an nn.Sequential), straight-line code
- cnn_script: torch.jit.script of the same CNN: branches on self.training, helper functions
  of torch.nn.functional, RaiseException checks, mangled class names
- bert_trace: torch.jit.trace of a 2-layer BERT (hidden 32) from a transformers config with
  torchscript=True, a padded attention mask
- gpt2_trace: torch.jit.trace of a 2-layer GPT-2 (hidden 32, GPT2Model)
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).parent


class Cnn(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=2),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.flatten(self.pool(self.features(x)), 1)
        return self.head(y) * 2.0


def _rezip(path: Path) -> None:
    """Deflate code and pickles (torch stores everything), keep storages stored."""
    src = zipfile.ZipFile(path)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            deflate = info.filename.endswith((".py", ".pkl", ".debug_pkl"))
            kind = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
            z = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            z.compress_type = kind
            dst.writestr(z, data, compresslevel=9 if deflate else None)
    src.close()
    path.write_bytes(out.getvalue())


def _save(
    name: str, module: torch.jit.ScriptModule, source: nn.Module, inputs: dict, tree: dict
) -> None:
    path = HERE / f"ts_{name}.pt"
    module.save(str(path))
    _rezip(path)
    loaded = torch.jit.load(str(path))
    with torch.no_grad():
        outs = loaded(*inputs.values())
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    arrays = {f"in.{k}": v.numpy() for k, v in inputs.items()}
    arrays |= {f"out.{k}": o.detach().numpy() for k, o in enumerate(outs)}
    state = dict(source.state_dict())
    state |= dict(source.named_buffers())  # and the buffers it does not save (position_ids)
    if sum(v.numel() for v in state.values()) < 10_000:  # small: every value kept
        arrays |= {f"sd.{k}": v.numpy() for k, v in state.items()}
    np.savez_compressed(HERE / f"ts_{name}.npz", **arrays)
    tree[name] = {
        "modules": {n: type(m).__name__ for n, m in source.named_modules() if n},
        "called": _called(source, inputs),
        "state_dict": {k: _fingerprint(v) for k, v in state.items()},
    }
    print(f"{path.name}: {path.stat().st_size:,} bytes")


def _called(model: nn.Module, inputs: dict) -> list[str]:
    """The submodules a forward call runs, by name (the groups a reader should make)."""
    called: list[str] = []
    hooks = [
        m.register_forward_pre_hook(lambda *_, n=n: called.append(n))
        for n, m in model.named_modules()
        if n
    ]
    with torch.no_grad():
        model(*inputs.values())
    for h in hooks:
        h.remove()
    return sorted(set(called))


def _fingerprint(v: torch.Tensor) -> dict:
    """Shape, dtype, sums and the first values of a state dict entry."""
    flat = v.detach().reshape(-1).double()
    return {
        "shape": list(v.shape),
        "dtype": str(v.dtype).removeprefix("torch."),
        "sum": float(flat.sum()),
        "abs": float(flat.abs().sum()),
        "head": flat[:8].tolist(),
    }


def _eval(model: nn.Module) -> nn.Module:
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):  # statistics that are not 0 and 1
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    return model.eval()


def main() -> None:
    from transformers import BertConfig, BertModel, GPT2Config, GPT2Model

    tree: dict = {}
    torch.manual_seed(0)
    cnn = _eval(Cnn())
    x = {"x": torch.randn(1, 3, 16, 16)}
    _save("cnn_trace", torch.jit.trace(cnn, tuple(x.values())), cnn, x, tree)
    _save("cnn_script", torch.jit.script(cnn), cnn, x, tree)

    torch.manual_seed(1)
    config = BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=32,
        torchscript=True,
        return_dict=False,
    )
    bert = BertModel(config).eval()
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, 5:] = 0
    inputs = {"input_ids": torch.randint(0, 100, (2, 8)), "attention_mask": mask}
    _save("bert_trace", torch.jit.trace(bert, tuple(inputs.values())), bert, inputs, tree)

    torch.manual_seed(2)
    config2 = GPT2Config(
        vocab_size=100,
        n_embd=32,
        n_layer=2,
        n_head=2,
        n_positions=32,
        use_cache=False,
        bos_token_id=0,
        eos_token_id=0,
        torchscript=True,
        return_dict=False,
    )
    gpt2 = GPT2Model(config2).eval()
    inputs = {"input_ids": torch.randint(0, 100, (1, 8))}
    _save("gpt2_trace", torch.jit.trace(gpt2, tuple(inputs.values())), gpt2, inputs, tree)
    (HERE / "ts_modules.json").write_text(json.dumps(tree, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
