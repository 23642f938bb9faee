"""Tiny seeded Llama and Qwen2 models written to GGUF the way llama.cpp's convert_hf_to_gguf.py
writes them: its tensor names (gguf's own name map), Llama's q/k rows permuted for GGML's rope
(``LlamaModel.permute``), its metadata keys, a minimal tokenizer, norms and biases kept F32.

Run with torch and transformers installed (not in CI) to regenerate the committed
``tiny_llama_q8_0.gguf`` and ``tiny_llama_q8_0.npz`` (the prompt and transformers' logits on
the dequantized weights): ``.venv/bin/python tests/data/gguf/make_gguf.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q

HERE = Path(__file__).parent
PROMPT = np.array([[3, 17, 42, 99, 5]], dtype=np.int64)
SIZES: dict[str, Any] = {"vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2}
SIZES |= {"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96}
SIZES |= {"max_position_embeddings": 64, "bos_token_id": 1, "eos_token_id": 2}
THETA = 10000.0  # transformers' default rope theta
ARCHS = {"llama": gguf.MODEL_ARCH.LLAMA, "qwen2": gguf.MODEL_ARCH.QWEN2}


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's ``LlamaModel.permute``, for the rows of q and k."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def tiny_model(family: str, seed: int = 0) -> Any:
    """A seeded transformers model of ``family`` with every weight nudged off its start."""
    import torch
    import transformers

    torch.manual_seed(seed)
    cls = {"llama": "Llama", "qwen2": "Qwen2"}[family]
    cfg = getattr(transformers, f"{cls}Config")(**SIZES, rms_norm_eps=1e-5)
    model = getattr(transformers, f"{cls}ForCausalLM")(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    assert (cfg.rope_parameters or {}).get("rope_theta", THETA) == THETA
    return model


def _stored(data: np.ndarray, qtype: Q) -> tuple[np.ndarray, Q]:
    """The converter's rule: 1-D tensors (norms, biases) stay F32, the rest take ``qtype``."""
    if data.ndim <= 1 or qtype == Q.F32:
        return data.astype(np.float32), Q.F32
    if qtype == Q.F16:
        return data.astype(np.float16), Q.F16
    return gguf.quants.quantize(data.astype(np.float32), qtype), qtype


def rounded(data: np.ndarray, qtype: Q) -> np.ndarray:
    """The values the file holds for ``data`` (quantization is per row, so it commutes with
    the converter's row permutation)."""
    stored, kind = _stored(data, qtype)
    if kind == Q.F32:
        return stored
    if kind == Q.F16:
        return stored.astype(np.float32)
    return gguf.quants.dequantize(stored, kind).reshape(data.shape)


def write_gguf(path: Path, model: Any, family: str, qtype: Q) -> Path:
    """The model as llama.cpp's converter writes it, in ``qtype``."""
    cfg = model.config
    arch = ARCHS[family]
    w = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[arch])
    w.add_name(f"tiny {family}")
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(THETA)
    w.add_rope_dimension_count(cfg.hidden_size // cfg.num_attention_heads)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(int(qtype))
    w.add_tokenizer_model("llama")
    w.add_token_list([f"<t{i}>" for i in range(cfg.vocab_size)])
    w.add_token_scores([0.0] * cfg.vocab_size)
    w.add_token_types([1] * cfg.vocab_size)
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    names = gguf.get_tensor_name_map(arch, cfg.num_hidden_layers)
    for name, tensor in model.state_dict().items():
        data = tensor.detach().float().numpy()
        if family == "llama" and name.endswith(("q_proj.weight", "q_proj.bias")):
            data = permute(data, cfg.num_attention_heads)
        if family == "llama" and name.endswith(("k_proj.weight", "k_proj.bias")):
            data = permute(data, cfg.num_key_value_heads)
        new = names.get_name(name, try_suffixes=(".weight", ".bias"))
        assert new is not None, name
        stored, kind = _stored(data, qtype)
        w.add_tensor(new, stored, raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def reference_logits(model: Any, qtype: Q) -> np.ndarray:
    """transformers' logits for PROMPT on the weights as the file holds them."""
    import torch

    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rounded(p.numpy(), qtype)))
        return model(torch.from_numpy(PROMPT)).logits.numpy()


def main() -> None:
    model = tiny_model("llama", seed=33)
    path = write_gguf(HERE / "tiny_llama_q8_0.gguf", model, "llama", Q.Q8_0)
    logits = reference_logits(model, Q.Q8_0)
    np.savez_compressed(HERE / "tiny_llama_q8_0.npz", input_ids=PROMPT, logits=logits)
    print(path, path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
