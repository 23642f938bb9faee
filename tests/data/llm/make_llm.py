"""Write tests/data/llm/tiny_llama/: a seeded two-layer Llama (hidden 32, vocab 64, grouped-query
attention 4/2 heads) saved by transformers (config.json + model.safetensors), and transformers'
own logits for a fixed prompt (logits.npz), so CI without torch checks the Llama path.

Run with torch and transformers installed:  .venv/bin/python tests/data/llm/make_llm.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import transformers

HERE = Path(__file__).parent / "tiny_llama"
PROMPT = [[3, 17, 42, 60, 5, 11]]


def main() -> None:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=48,
        max_position_embeddings=32,
        rms_norm_eps=1e-5,
        bos_token_id=1,
        eos_token_id=2,
    )
    model = transformers.LlamaForCausalLM(config).eval()
    with torch.no_grad():  # norms start at 1: move them so a norm's weight is checked too
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.save_pretrained(HERE)
    for extra in HERE.iterdir():
        if extra.name not in ("config.json", "model.safetensors"):
            extra.unlink()
    ids = np.array(PROMPT, dtype=np.int64)
    with torch.no_grad():
        logits = model(torch.from_numpy(ids)).logits.numpy()
    np.savez(HERE / "logits.npz", input_ids=ids, logits=logits)
    print({p.name: p.stat().st_size for p in HERE.iterdir()})


if __name__ == "__main__":
    main()
