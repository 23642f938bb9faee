"""Make the safetensors test files with the real writers (torch, transformers; not installed by
`make`): `.venv/bin/python tests/data/safetensors/make_files.py`. Seeded, so a rerun makes
the same files.

- dtypes.safetensors: one tensor per dtype safetensors stores (bf16 and float8 included),
  written by safetensors.torch.save_file; dtypes.npz holds the values torch reads back, as
  float64, for the tests to compare with.
- tiny_llama/: a 2-layer Llama from a transformers config, save_pretrained with a small
  max_shard_size, so it is sharded with a model.safetensors.index.json; tiny_llama.npz holds
  its state dict as torch has it (float32).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import LlamaConfig, LlamaForCausalLM

HERE = Path(__file__).parent


def dtypes() -> None:
    g = torch.Generator().manual_seed(0)
    base = torch.randn(6, 5, generator=g)
    tensors = {
        "float.f32": base,
        "float.f16": base.half(),
        "float.bf16": base.bfloat16(),
        "float.f64": base.double(),
        "float8.e4m3": base.to(torch.float8_e4m3fn),
        "float8.e5m2": base.to(torch.float8_e5m2),
        "int.i64": torch.arange(-5, 7, dtype=torch.int64),
        "int.i32": torch.arange(12, dtype=torch.int32).reshape(3, 4),
        "int.i8": torch.arange(-4, 4, dtype=torch.int8),
        "int.u8": torch.arange(8, dtype=torch.uint8),
        "mask.bool": base[0] > 0,
        "scalar": torch.tensor(3.5),
    }
    save_file(tensors, HERE / "dtypes.safetensors", metadata={"format": "pt", "made_by": "xocview"})
    np.savez(HERE / "dtypes.npz", **{k: v.double().numpy() for k, v in tensors.items()})


def tiny_llama() -> None:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).eval()
    out = HERE / "tiny_llama"
    shutil.rmtree(out, ignore_errors=True)
    model.save_pretrained(out, max_shard_size="8KB", safe_serialization=True)
    for extra in out.glob("generation_config.json"):
        extra.unlink()
    state = {k: v.float().numpy() for k, v in model.state_dict().items()}
    np.savez(HERE / "tiny_llama.npz", **state)


if __name__ == "__main__":
    dtypes()
    tiny_llama()
