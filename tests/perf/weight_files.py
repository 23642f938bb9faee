"""Weight files shaped like real checkpoints, written sparse: the header is real, the data is
holes, so a 13.5 GB Llama-7B-shaped checkpoint costs a few kilobytes of disk."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

__all__ = ["llama_shapes", "sharded_safetensors"]


def llama_shapes(
    layers: int = 32, hidden: int = 4096, inter: int = 11008, vocab: int = 32000
) -> list[tuple[str, list[int]]]:
    """Tensor names and shapes of a Llama checkpoint (7B by default), in save_pretrained's order."""
    shapes = [("model.embed_tokens.weight", [vocab, hidden])]
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes += [(p + f"self_attn.{n}_proj.weight", [hidden, hidden]) for n in "qkvo"]
        shapes += [(p + f"mlp.{n}_proj.weight", [inter, hidden]) for n in ("gate", "up")]
        shapes += [(p + "mlp.down_proj.weight", [hidden, inter])]
        shapes += [
            (p + n, [hidden]) for n in ("input_layernorm.weight", "post_attention_layernorm.weight")
        ]
    shapes += [("model.norm.weight", [hidden]), ("lm_head.weight", [vocab, hidden])]
    return shapes


def sharded_safetensors(
    folder: Path, shapes: list[tuple[str, list[int]]] | None = None, shards: int = 2
) -> Path:
    """bf16 shards of ``shapes`` (7B Llama by default) and their index; returns the index."""
    shapes = llama_shapes() if shapes is None else shapes
    weight_map: dict[str, str] = {}
    parts = np.array_split(np.arange(len(shapes)), shards)
    for k, part in enumerate(parts):
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        header, offset = {}, 0
        for i in part.tolist():
            tensor, shape = shapes[i]
            size = 2 * int(np.prod(shape))
            header[tensor] = {
                "dtype": "BF16",
                "shape": shape,
                "data_offsets": [offset, offset + size],
            }
            offset += size
            weight_map[tensor] = name
        raw = json.dumps(header).encode()
        with open(folder / name, "wb") as f:
            f.write(struct.pack("<Q", len(raw)))
            f.write(raw)
            f.truncate(8 + len(raw) + offset)
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": 0}, "weight_map": weight_map}))
    return index
