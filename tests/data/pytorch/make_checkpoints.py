"""Writes the torch.save test files of tests/formats/pytorch/test_checkpoint.py and the values
torch holds for them (checkpoints_expected.npz, float32 copies of float types) so that the
tests run without torch. Run from the repository root with torch (and transformers) installed:

    .venv/bin/python tests/data/pytorch/make_checkpoints.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

HERE = Path(__file__).parent
LEGACY = {"_use_new_zipfile_serialization": False}


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.attn = nn.Linear(width, width)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.attn(x))


class Tiny(nn.Module):
    """Named modules, a numbered family of repeated blocks and a BatchNorm's buffers."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 8)
        self.blocks = nn.ModuleList([Block(8) for _ in range(3)])
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 4)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.bn(x))


def _tiny_bert() -> dict[str, torch.Tensor]:
    """The state dict transformers writes as pytorch_model.bin, for a 2-layer BERT."""
    from transformers import BertConfig, BertModel

    config = BertConfig(
        vocab_size=50,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
    )
    return BertModel(config).state_dict()


def _expected(files: dict[str, dict[str, torch.Tensor]]) -> None:
    arrays: dict[str, np.ndarray] = {}
    meta: dict[str, dict[str, list]] = {}
    for file, tensors in files.items():
        meta[file] = {}
        for name, t in tensors.items():
            t = t.detach()
            value = t.to(torch.float32).numpy() if t.dtype.is_floating_point else t.numpy()
            arrays[f"{file}:{name}"] = value
            meta[file][name] = [str(t.dtype).removeprefix("torch."), list(t.shape)]
    np.savez_compressed(HERE / "checkpoints_expected.npz", **arrays)
    (HERE / "checkpoints_expected.json").write_text(json.dumps(meta, indent=1) + "\n")


def main() -> None:
    torch.manual_seed(31)
    model = Tiny()
    ids = torch.randint(0, 10, (5,))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(ids).square().mean().backward()
    optimizer.step()
    state = model.state_dict()
    torch.save(state, HERE / "ckpt_state.pt")
    torch.save(state, HERE / "ckpt_state_legacy.pt", **LEGACY)

    lightning = {
        "epoch": 3,
        "global_step": 12,
        "pytorch-lightning_version": "2.4.0",
        "state_dict": {f"model.{k}": v for k, v in state.items()},
        "optimizer_states": [optimizer.state_dict()],
        "lr_schedulers": [],
        "hparams_name": "kwargs",
        "hyper_parameters": {"lr": 1e-3, "name": "tiny\x1b[31m", "widths": [8, 8, 4]},
    }
    torch.save(lightning, HERE / "ckpt_lightning.ckpt")
    torch.save({"model": state, "epoch": 5}, HERE / "ckpt_model_key.pth")

    base = torch.randn(6, 5)
    dtypes = {
        "f32": torch.randn(3, 2),
        "f64": torch.randn(3).double(),
        "f16": torch.randn(4).half(),
        "bf16": torch.randn(2, 3).bfloat16(),
        "fp8_e4m3fn": (torch.randn(5) * 4).to(torch.float8_e4m3fn),
        "fp8_e5m2": (torch.randn(5) * 4).to(torch.float8_e5m2),
        "i8": torch.randint(-128, 127, (4,), dtype=torch.int8),
        "i16": torch.randint(-999, 999, (4,), dtype=torch.int16),
        "i32": torch.randint(-99999, 99999, (4,), dtype=torch.int32),
        "i64": torch.tensor([-(2**40), 3, 2**50]),
        "u8": torch.randint(0, 255, (4,), dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "c64": torch.randn(3, dtype=torch.complex64),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
    }
    views = {
        "base": base,
        "transposed": base.t(),
        "sliced": base[1:5:2, 1::2],
        "row": base[4],
        "expanded": base[0, :1].expand(3, 4),
        "bf16_t": torch.randn(3, 4).bfloat16().t(),
    }
    for name, tensors in (("ckpt_dtypes", dtypes), ("ckpt_views", views)):
        torch.save(tensors, HERE / f"{name}.pt")
        torch.save(tensors, HERE / f"{name}_legacy.pt", **LEGACY)
    torch.save(model, HERE / "ckpt_module.pt")
    bert = _tiny_bert()
    torch.save(bert, HERE / "pytorch_model.bin")
    _expected(
        {
            "ckpt_state.pt": state,
            "ckpt_lightning.ckpt": {
                **lightning["state_dict"],
                **{
                    f"optimizer_states.0.state.{p}.{k}": v
                    for p, s in optimizer.state_dict()["state"].items()
                    for k, v in s.items()
                },
            },
            "ckpt_dtypes.pt": dtypes,
            "ckpt_views.pt": views,
            "pytorch_model.bin": bert,
        }
    )


if __name__ == "__main__":
    main()
