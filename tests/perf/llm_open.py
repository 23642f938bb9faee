"""Opening an LLM file as its architecture: xocview against the readers the file's own tools
use, same run, on files shaped like real 7-8B models (sparse: no weight is on disk or read).

- A GGUF shaped like Llama 3 8B (Q4_K, llama.cpp's keys and a 128k-token vocabulary):
  xocview (``formats.load``: the forward pass as a graph, every weight bound lazily) against
  ``gguf.GGUFReader`` (llama.cpp's Python reader: the metadata and the tensor table, no graph).
- A Hugging Face folder shaped like Llama 2 7B (bf16 shards and their index): xocview against
  transformers building the same architecture from ``config.json`` on the meta device (its
  modules without weights), which needs torch and transformers (the bench extra).

Medians of --repeat runs in alternation and the median ratio (xocview / anchor) are printed.

    python tests/perf/llm_open.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import gguf
from timing import paired_times  # tests/perf/, beside us
from weight_files import sharded_safetensors

from tests.formats.gguf.test_gguf_arch import _llama_8b
from xocview.formats import load

LLAMA_7B = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 11008,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32000,
    "rms_norm_eps": 1e-5,
    "hidden_act": "silu",
    "max_position_embeddings": 4096,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        path = Path(tmp) / "llama3-8b-q4_k.gguf"
        _llama_8b(path)
        rows.append(("GGUF 8B Q4_K", "gguf.GGUFReader", lambda: gguf.GGUFReader(path), path))
        folder = Path(tmp) / "llama-7b"
        folder.mkdir()
        sharded_safetensors(folder)
        (folder / "config.json").write_text(json.dumps(LLAMA_7B))
        try:
            import torch
            import transformers

            def meta_model() -> object:
                cfg = transformers.AutoConfig.from_pretrained(folder)
                with torch.device("meta"):
                    return transformers.AutoModelForCausalLM.from_config(cfg)

            rows.append(("HF folder 7B bf16", "transformers on meta", meta_model, folder))
        except ImportError as e:
            print(f"skipping the Hugging Face folder: {e}")
        print(f"{'file':20} {'anchor':22} {'anchor ms':>10} {'xocview ms':>11} {'ratio':>6}")
        for label, anchor_name, anchor, target in rows:
            a, ours, ratio = paired_times(anchor, lambda t=target: load(t), args.repeat)
            print(f"{label:20} {anchor_name:22} {a * 1e3:10.0f} {ours * 1e3:11.0f} {ratio:6.2f}")


if __name__ == "__main__":
    main()
