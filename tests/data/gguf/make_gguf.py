"""Tiny seeded Llama and Qwen2 models written to GGUF the way llama.cpp's convert_hf_to_gguf.py
writes them: its tensor names (gguf's own name map), Llama's q/k rows permuted for GGML's rope
(``LlamaModel.permute``), its metadata keys, a minimal tokenizer, norms and biases kept F32.

Run with torch and transformers installed (not in CI) to regenerate the committed
``tiny_llama_q8_0.gguf`` and ``tiny_llama_q8_0.npz`` (the prompt and transformers' logits on
the dequantized weights): ``.venv/bin/python tests/data/gguf/make_gguf.py``.
"""

from __future__ import annotations

import math
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
LLAMA3 = {"rope_type": "llama3", "rope_theta": THETA, "factor": 8.0, "low_freq_factor": 1.0}
LLAMA3 |= {"high_freq_factor": 4.0, "original_max_position_embeddings": 32}
YARN = {"factor": 4.0, "original_max_position_embeddings": 16}
LONGROPE = {"short_factor": [1.0, 1.1, 1.3, 1.7, 2.0, 3.0, 5.0, 8.0]}
LONGROPE |= {"long_factor": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0]}
# family -> (transformers class prefix, config class, GGUF architecture, config extra)
FAMILIES: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "llama": ("Llama", "LlamaConfig", "llama", {}),
    "gpt2": ("GPT2", "GPT2Config", "gpt2", {}),
    # Llama 3.1's scaled rope (rope_freqs.weight) with an original context of 32, so the
    # head size 16's wavelengths fall in each band; and linear scaling (rope.scaling.* keys)
    "llama3": ("Llama", "LlamaConfig", "llama", {"rope_parameters": LLAMA3}),
    # Phi-3's LongRoPE: factor 2 (64 positions of 32 original), short and long factors
    "phi3-longrope": (
        "Phi3",
        "Phi3Config",
        "phi3",
        {"pad_token_id": 0, "original_max_position_embeddings": 32}
        | {"rope_parameters": {"rope_type": "longrope", "rope_theta": THETA} | LONGROPE},
    ),
    "llama-linear": (
        "Llama",
        "LlamaConfig",
        "llama",
        {"rope_parameters": {"rope_type": "linear", "rope_theta": THETA, "factor": 4.0}},
    ),
    "qwen2": ("Qwen2", "Qwen2Config", "qwen2", {}),
    # YaRN (Qwen2.5's long-context setting): factor 4 over an original context of 16
    "qwen2-yarn": (
        "Qwen2",
        "Qwen2Config",
        "qwen2",
        {"rope_parameters": {"rope_type": "yarn", "rope_theta": THETA} | YARN},
    ),
    "qwen3": ("Qwen3", "Qwen3Config", "qwen3", {"head_dim": 16}),
    "phi3": ("Phi3", "Phi3Config", "phi3", {"pad_token_id": 0}),
    "mixtral": ("Mixtral", "MixtralConfig", "llama", {"num_local_experts": 4}),
    "qwen2moe": (
        "Qwen2Moe",
        "Qwen2MoeConfig",
        "qwen2moe",
        {"num_experts": 4, "moe_intermediate_size": 32, "shared_expert_intermediate_size": 48},
    ),
    "qwen3moe": (
        "Qwen3Moe",
        "Qwen3MoeConfig",
        "qwen3moe",
        {"num_experts": 4, "moe_intermediate_size": 32, "norm_topk_prob": True, "head_dim": 16},
    ),
    "gemma": ("Gemma", "GemmaConfig", "gemma", {"head_dim": 16}),
    "gemma2": (
        "Gemma2",
        "Gemma2Config",
        "gemma2",
        {"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 3}
        | {"attn_logit_softcapping": 5.0, "final_logit_softcapping": 3.0},
    ),
    "gemma3": (
        "Gemma3",
        "Gemma3TextConfig",
        "gemma3",
        {"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 3},
    ),
    # Gemma 3 4B and up: linear rope (factor 8) on the full layers, plain on the sliding ones
    "gemma3-scaled": (
        "Gemma3",
        "Gemma3TextConfig",
        "gemma3",
        {"head_dim": 16, "query_pre_attn_scalar": 16, "sliding_window": 3, "num_hidden_layers": 6}
        | {
            "rope_parameters": {
                "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
                "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
            }
        },
    ),
}


CONV1D = (".c_attn.weight", ".c_proj.weight", ".c_fc.weight")
# 2-D weights the converter keeps float32: routers and learned positions
F32_2D = ("mlp.gate.weight", "shared_expert_gate.weight", "wpe.weight")


def permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's ``LlamaModel.permute``, for the rows of q and k."""
    return (
        w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
        .swapaxes(1, 2)
        .reshape(w.shape)
    )


def rope_freqs(rope: dict[str, Any], dim: int) -> np.ndarray:
    """``LlamaModel.generate_extra_tensors``: Llama 3.1's per-frequency divisors (the
    converter reads the original context from the top of the config, 8192 by default, as
    Llama 3.1's own; here it is the rope's, as the tiny model uses it)."""
    import torch

    base = rope.get("rope_theta", THETA)
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor, low_freq_factor = rope.get("factor", 8.0), rope.get("low_freq_factor", 1.0)
    high_freq_factor = rope.get("high_freq_factor", 4.0)
    old_context_len = rope.get("original_max_position_embeddings", 8192)
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    rope_factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            rope_factors.append(1)
        elif wavelen > low_freq_wavelen:
            rope_factors.append(factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (
                high_freq_factor - low_freq_factor
            )
            rope_factors.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(rope_factors, dtype=torch.float32).numpy()


def tiny_model(family: str, seed: int = 0) -> Any:
    """A seeded transformers model of ``family`` with every weight nudged off its start."""
    import torch
    import transformers

    torch.manual_seed(seed)
    if family == "gpt2":
        small = {"vocab_size": 128, "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 64}
        cfg = transformers.GPT2Config(**small, bos_token_id=1, eos_token_id=2)
        return _nudged(transformers.GPT2LMHeadModel(cfg).eval())
    cls, cfg_cls, _, extra = FAMILIES[family]
    if "num_experts" in extra or "num_local_experts" in extra:
        extra = extra | {"num_experts_per_tok": 2}
    cfg = getattr(transformers, cfg_cls)(**(SIZES | {"rms_norm_eps": 1e-5} | extra))
    return _nudged(getattr(transformers, f"{cls}ForCausalLM")(cfg).eval())


def _nudged(model: Any) -> Any:
    import torch

    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model


def _thetas(cfg: Any) -> tuple[float, float]:
    """Global and sliding-layer rope theta of a config (per layer type for Gemma 3)."""
    params = getattr(cfg, "rope_parameters", None) or {}
    if all(isinstance(v, dict) for v in params.values()) and params:
        full = params.get("full_attention", {}).get("rope_theta", THETA)
        return full, params.get("sliding_attention", {}).get("rope_theta", full)
    theta = params.get("rope_theta", getattr(cfg, "rope_theta", THETA))
    return theta, theta


def _keep_f32(name: str, data: np.ndarray) -> bool:
    """The converter's rule: 1-D tensors (norms, biases), routers and learned positions
    stay F32."""
    return data.ndim <= 1 or "ffn_gate_inp" in name or name.startswith("position_embd")


def _stored(data: np.ndarray, qtype: Q) -> tuple[np.ndarray, Q]:
    if data.ndim <= 1 or qtype == Q.F32:
        return data.astype(np.float32), Q.F32
    if qtype == Q.F16:
        return data.astype(np.float16), Q.F16
    return gguf.quants.quantize(data.astype(np.float32), qtype), qtype


def rounded(data: np.ndarray, qtype: Q) -> np.ndarray:
    """The values the file holds for ``data`` (quantization is per row, so it commutes with
    the converter's row permutation and expert stacking)."""
    stored, kind = _stored(data, qtype)
    if kind == Q.F32:
        return stored
    if kind == Q.F16:
        return stored.astype(np.float32)
    return gguf.quants.dequantize(stored, kind).reshape(data.shape)


def _metadata(w: gguf.GGUFWriter, cfg: Any, arch: str) -> None:
    """The keys convert_hf_to_gguf.py writes for these families."""
    if arch == "gpt2":
        w.add_block_count(cfg.n_layer)
        w.add_context_length(cfg.n_positions)
        w.add_embedding_length(cfg.n_embd)
        w.add_feed_forward_length(4 * cfg.n_embd)
        w.add_head_count(cfg.n_head)
        w.add_layer_norm_eps(cfg.layer_norm_epsilon)
        return
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    theta, local = _thetas(cfg)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_freq_base(theta)
    if local != theta:
        w.add_rope_freq_base_swa(local)
    w.add_rope_dimension_count(head_dim)
    rope = getattr(cfg, "rope_parameters", None) or {}
    rope = rope.get("full_attention", rope)  # Gemma 3: the full layers' rope is the file's
    if rope.get("rope_type") == "linear":  # LlamaModel, Gemma3Model.set_gguf_parameters
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rope["factor"])
    if rope.get("rope_type") == "yarn":  # Qwen2Model.set_gguf_parameters
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(rope["factor"])
        w.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    if rope.get("rope_type") == "longrope":  # Phi3MiniModel.set_gguf_parameters
        orig = cfg.original_max_position_embeddings
        scale = cfg.max_position_embeddings / orig
        w.add_rope_scaling_orig_ctx_len(orig)
        w.add_rope_scaling_attn_factors(
            math.sqrt(1 + math.log(scale) / math.log(orig)) if scale > 1.0 else 1.0
        )
    experts = getattr(cfg, "num_local_experts", None) or getattr(cfg, "num_experts", None)
    if experts:
        w.add_expert_count(experts)
        w.add_expert_used_count(cfg.num_experts_per_tok)
    if arch.startswith("qwen") and experts:
        w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
    if arch == "qwen2moe":
        w.add_expert_shared_feed_forward_length(cfg.shared_expert_intermediate_size)
    for key in ("attn_logit_softcapping", "final_logit_softcapping"):
        if getattr(cfg, key, None):
            w.add_float32(f"{arch}.{key}", getattr(cfg, key))
    if arch.startswith("gemma") and getattr(cfg, "sliding_window", None):
        w.add_sliding_window(cfg.sliding_window)


def _tensors(model: Any, family: str) -> dict[str, np.ndarray]:
    """Every tensor under its GGUF name, changed as the converter changes it."""
    cfg = model.config
    arch = FAMILIES[family][2]
    kinds = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}
    names = gguf.get_tensor_name_map(kinds[arch], cfg.num_hidden_layers)
    out: dict[str, np.ndarray] = {}
    rope = getattr(cfg, "rope_parameters", None) or {}
    if rope.get("rope_type") == "llama3":
        out["rope_freqs.weight"] = rope_freqs(rope, cfg.hidden_size // cfg.num_attention_heads)
    if rope.get("rope_type") == "longrope":  # Phi3MiniModel.generate_extra_tensors
        out["rope_factors_long.weight"] = np.array(rope["long_factor"], np.float32)
        out["rope_factors_short.weight"] = np.array(rope["short_factor"], np.float32)
    for name, tensor in model.state_dict().items():
        data = tensor.detach().float().numpy()
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if name.endswith((".attn.bias", ".attn.masked_bias")):
            continue
        if family == "gpt2" and name.endswith(CONV1D):
            data = data.T  # the converter stores GPT-2's Conv1D weights as [out, in]
        if arch == "llama" and name.endswith(("q_proj.weight", "q_proj.bias")):
            data = permute(data, cfg.num_attention_heads)
        if arch == "llama" and name.endswith(("k_proj.weight", "k_proj.bias")):
            data = permute(data, cfg.num_key_value_heads)
        if family.startswith("gemma") and name.endswith("norm.weight"):
            data = data + 1
        i = name.split(".")[2] if name.startswith("model.layers.") else ""
        if name.endswith("experts.gate_up_proj"):  # transformers' fused experts: gate, up
            half = data.shape[1] // 2
            out[f"blk.{i}.ffn_gate_exps.weight"] = data[:, :half]
            out[f"blk.{i}.ffn_up_exps.weight"] = data[:, half:]
        elif name.endswith("experts.down_proj"):
            out[f"blk.{i}.ffn_down_exps.weight"] = data
        elif name.endswith("mlp.gate.weight"):
            out[f"blk.{i}.ffn_gate_inp.weight"] = data
        elif name.endswith("mlp.gate_up_proj.weight"):  # Phi-3's fused gate and up
            out[f"blk.{i}.ffn_up.weight"] = data
        else:
            new = names.get_name(name, try_suffixes=(".weight", ".bias"))
            assert new is not None, name
            out[new] = data
    return out


def write_gguf(path: Path, model: Any, family: str, qtype: Q) -> Path:
    """The model as llama.cpp's converter writes it, in ``qtype``."""
    cfg = model.config
    arch = FAMILIES[family][2]
    w = gguf.GGUFWriter(path, arch)
    w.add_name(f"tiny {family}")
    _metadata(w, cfg, arch)
    w.add_vocab_size(cfg.vocab_size)
    w.add_file_type(int(qtype))
    w.add_tokenizer_model("llama")
    w.add_token_list([f"<t{i}>" for i in range(cfg.vocab_size)])
    w.add_token_scores([0.0] * cfg.vocab_size)
    w.add_token_types([1] * cfg.vocab_size)
    w.add_bos_token_id(cfg.bos_token_id)
    w.add_eos_token_id(cfg.eos_token_id)
    for name, data in _tensors(model, family).items():
        stored, kind = _stored(data, Q.F32 if _keep_f32(name, data) else qtype)
        w.add_tensor(name, stored, raw_dtype=kind)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def reference_logits(model: Any, qtype: Q, family: str = "llama") -> np.ndarray:
    """transformers' logits for PROMPT on the weights as the file holds them (routers and
    1-D tensors stay float32, as in the file)."""
    import torch

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim <= 1 or name.endswith(F32_2D):
                continue
            if family == "gpt2" and name.endswith(CONV1D):  # rounded along the stored rows
                p.copy_(torch.from_numpy(rounded(p.numpy().T, qtype).T.copy()))
            else:
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
