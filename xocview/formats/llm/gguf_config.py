"""``from_gguf``: the ``LlmConfig`` of a GGUF file's metadata (``{arch}.*`` keys) and its
tensors' shapes, as llama.cpp reads them."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from xocview.errors import shorten
from xocview.formats.llm.config import (
    GEMMA3_LOCAL_THETA,
    LlmConfig,
    NotBuilt,
    default_sliding,
    number,
    rope_notes,
)
from xocview.formats.llm.rope import ScalingError, scaling_params

__all__ = ["GGUF_ARCHS", "from_gguf"]


# general.architecture -> model_type (llama.cpp writes Mistral and Mixtral as "llama")
GGUF_ARCHS = {
    **{a: a for a in ("llama", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gpt2")},
    **{"gemma3": "gemma3_text", "qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe"},
}
_GGUF_ACTS = {
    "gpt2": "gelu_new",
    **dict.fromkeys(("gemma", "gemma2", "gemma3_text"), "gelu_pytorch_tanh"),
}


def _key(meta: Mapping[str, Any], key: str, default: int | None = None) -> int:
    """A positive integer ``{arch}.key`` (``meta`` holds the keys without the prefix)."""
    value = meta.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    if default is not None and value is None:
        return default
    if value is None:
        raise NotBuilt(f"GGUF metadata has no {meta['.arch']}.{key}")
    raise NotBuilt(
        f"GGUF metadata {meta['.arch']}.{key} is not one positive integer "
        "(per-layer values are not built)"
    )


def from_gguf(
    metadata: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]] | None = None
) -> LlmConfig:
    """The record for a GGUF file's metadata (``{arch}.*`` keys) and its tensors' shapes
    (numpy order: the vocabulary from ``token_embd``, tying from a missing ``output``, MoE
    layers from their routers); NotBuilt names what has no template."""
    shapes = shapes or {}
    model_type, m = _gguf_keys(metadata)
    hidden, heads = _key(m, "embedding_length"), _key(m, "attention.head_count")
    head_dim = _key(m, "attention.key_length", hidden // heads)
    layers = _key(m, "block_count")
    blocks = [n for n in shapes if n.startswith("blk.")]
    if blocks and not any(n.startswith(f"blk.{layers - 1}.") for n in blocks):
        raise NotBuilt(
            f"{m['.arch']}.block_count is {layers}, but the file has no tensors of blk.{layers - 1}"
        )
    experts = _key(m, "expert_count", 1) if "expert_count" in m else 0
    if model_type == "llama" and experts > 1:
        model_type = "mixtral"
    eps = number(m, "attention.layer_norm_epsilon", 1e-5)
    kv_heads = _key(m, "attention.head_count_kv", heads)
    if heads % kv_heads:
        raise NotBuilt(f"{heads} attention heads do not share {kv_heads} key/value heads evenly")
    attention = _gguf_attention(m, model_type, hidden, heads, head_dim, layers)
    rope = _gguf_rope(m, model_type, shapes)
    notes = attention.pop("notes", ()) + rope.pop("notes", ())
    if "local_theta" in attention:  # Gemma 3: the scaled rope on the full layers only
        local = (attention.pop("local_theta"), "default", ())
        full = (attention["rope_theta"], rope["rope_kind"], rope.get("rope_scaling", ()))
        slide = set(default_sliding(model_type, layers))
        rope["layer_ropes"] = tuple(local if i in slide else full for i in range(layers))
    return LlmConfig(
        **_gguf_moe(m, model_type, layers, experts, shapes),
        **attention,
        **rope,
        notes=notes,
        model_type=model_type,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=_key(m, "feed_forward_length", 1 if experts > 1 else None),
        vocab=_gguf_vocab(metadata, shapes),
        eps=number(m, "attention.layer_norm_rms_epsilon", eps),
        hidden_act=_GGUF_ACTS.get(model_type, "silu"),
        tie_word_embeddings="output.weight" not in shapes,
        max_positions=_key(m, "context_length", 4096),
        qkv_bias=model_type in ("qwen2", "qwen2_moe", "gpt2"),
    )


def _gguf_keys(metadata: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The model type of ``general.architecture`` and its ``{arch}.*`` keys without the
    prefix (``.arch`` holds it, for messages)."""
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise NotBuilt("GGUF metadata has no general.architecture")
    model_type = GGUF_ARCHS.get(arch)
    if model_type is None:
        raise NotBuilt(f"GGUF architecture {shorten(arch, 60)!r} has no architecture template")
    kind = metadata.get(f"{arch}.rope.scaling.type")
    if kind not in (None, "none", "linear", "yarn"):
        raise NotBuilt(
            f"rope scaling {shorten(str(kind), 60)!r} is not built "
            "(plain rope, linear, yarn and llama3's rope_freqs are)"
        )
    m = {k[len(arch) + 1 :]: v for k, v in metadata.items() if k.startswith(arch + ".")}
    m[".arch"] = arch
    return model_type, m


def _gguf_attention(
    m: Mapping[str, Any], model_type: str, hidden: int, heads: int, head_dim: int, layers: int
) -> dict[str, Any]:
    """Rope, scale and soft-capping as llama.cpp reads them: Gemma 3's sliding layers (all but
    every sixth) take the local theta; Gemma 2/3 27B (46 and 62 layers) scale attention by
    1/sqrt(hidden/heads), the others by 1/sqrt(head_dim)."""
    theta = number(m, "rope.freq_base", 10000.0)
    local = number(m, "rope.freq_base_swa", GEMMA3_LOCAL_THETA)
    window = m.get("attention.sliding_window")
    big = (model_type, layers) in (("gemma2", 46), ("gemma3_text", 62))
    out: dict[str, Any] = {
        "rope_theta": theta,
        "rotary_dim": 0 if model_type == "gpt2" else _key(m, "rope.dimension_count", head_dim),
        "attn_scale": (hidden / heads) ** -0.5 if big else None,
        "attn_softcap": number(m, "attn_logit_softcapping", 0.0),
        "final_softcap": number(m, "final_logit_softcapping", 0.0),
    }
    if model_type == "gemma3_text":  # the rope of the full layers is set by from_gguf
        out["local_theta"] = local
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        # llama.cpp's sliding layers: Gemma 2 every other one, Gemma 3 all but every sixth,
        # Phi-3 and Mistral-style files all
        slide = default_sliding(model_type, layers)
        out["window"], out["sliding_layers"] = window, slide
    return out


def _gguf_rope(
    m: Mapping[str, Any], model_type: str, shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, Any]:
    """Rope as llama.cpp scales it: ``rope.scaling.type`` linear divides the frequencies by
    ``rope.scaling.factor``; Llama 3.1's ``rope_freqs.weight`` divides each by its factor."""
    if model_type == "gpt2":
        return {"rope_kind": "none"}
    if m.get("rope.scaling.type") == "linear":
        factor = m.get("rope.scaling.factor")
        if not isinstance(factor, (int, float)) or isinstance(factor, bool) or not factor > 0:
            raise NotBuilt(
                f"rope scaling 'linear' without a positive {m['.arch']}.rope.scaling.factor"
            )
        if factor != 1:
            return {"rope_kind": "linear", "rope_scaling": (("factor", float(factor)),)}
    if m.get("rope.scaling.type") == "yarn":
        return _gguf_yarn(m)
    if "rope_freqs.weight" in shapes:
        return {"rope_kind": "factors"}
    if model_type == "phi3" and "rope_factors_short.weight" in shapes:
        return _gguf_longrope(m, "rope_factors_long.weight" in shapes)
    return {"rope_kind": "default"}


def _gguf_yarn(m: Mapping[str, Any]) -> dict[str, Any]:
    """YaRN as convert_hf_to_gguf writes it (factor, original context; beta_fast/slow when
    not transformers' 32 and 1). llama.cpp's ``attn_factor`` multiplies the attention scale
    YaRN derives from the factor, where transformers' ``attention_factor`` replaces it."""
    factor = m.get("rope.scaling.factor")
    if not isinstance(factor, (int, float)) or isinstance(factor, bool) or not factor > 0:
        raise NotBuilt(f"rope scaling 'yarn' without a positive {m['.arch']}.rope.scaling.factor")
    params: dict[str, Any] = {
        "factor": float(factor),
        "original_max_position_embeddings": _key(m, "rope.scaling.original_context_length"),
    }
    for key, name in (("yarn_beta_fast", "beta_fast"), ("yarn_beta_slow", "beta_slow")):
        if f"rope.scaling.{key}" in m:
            params[name] = number(m, f"rope.scaling.{key}", 0.0)
    attn = number(m, "rope.scaling.attn_factor", 1.0)
    if attn != 1.0:
        params["attention_factor"] = attn * (0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0)
    try:
        scaled = scaling_params("yarn", params)
    except ScalingError as e:
        raise NotBuilt(str(e)) from None
    return {"rope_kind": "yarn", "rope_scaling": scaled}


def _gguf_longrope(m: Mapping[str, Any], has_long: bool) -> dict[str, Any]:
    """Phi-3's LongRoPE as its converter writes it: the short and long factors tensors,
    the original context and the attention factor keys."""
    old = _key(m, "rope.scaling.original_context_length")
    params: dict[str, Any] = {"original_max_position_embeddings": old}
    attn = m.get("rope.scaling.attn_factor")
    if isinstance(attn, (int, float)) and not isinstance(attn, bool) and attn > 0:
        params["attention_factor"] = float(attn)
    return {
        "rope_kind": "longrope",
        "rope_scaling": tuple(sorted(params.items())),
        "notes": () if has_long else rope_notes("longrope", params),
    }


def _gguf_vocab(metadata: Mapping[str, Any], shapes: Mapping[str, tuple[int, ...]]) -> int:
    embd = shapes.get("token_embd.weight")
    if embd and len(embd) == 2:
        return int(embd[0])
    tokens = metadata.get("tokenizer.ggml.tokens")
    count = len(tokens) if isinstance(tokens, list) else getattr(tokens, "count", None)
    if isinstance(count, int) and count > 0:
        return count
    raise NotBuilt("no token_embd.weight of two dimensions and no tokenizer.ggml.tokens")


def _gguf_moe(
    m: Mapping[str, Any],
    model_type: str,
    layers: int,
    experts: int,
    shapes: Mapping[str, tuple[int, ...]],
) -> dict[str, Any]:
    """Mixtral's and Qwen-MoE's routing from ``expert_*`` keys; layers without a router
    are dense."""
    if model_type not in ("mixtral", "qwen2_moe", "qwen3_moe"):
        if experts > 1:
            raise NotBuilt(f"{experts} experts in a {model_type} file are not built")
        return {}
    dense = tuple(i for i in range(layers) if f"blk.{i}.ffn_gate_inp.weight" not in shapes)
    if len(dense) == layers or (dense and model_type == "mixtral"):
        raise NotBuilt(f"{experts} experts but no router blk.{dense[0]}.ffn_gate_inp.weight")
    ff = "feed_forward_length" if model_type == "mixtral" else "expert_feed_forward_length"
    norm = m.get("expert_weights_norm")
    return {
        "experts": experts,
        "experts_per_tok": min(_key(m, "expert_used_count", 2), experts),
        "moe_intermediate": _key(m, ff),
        "shared_intermediate": _key(m, "expert_shared_feed_forward_length", 1),
        "norm_topk": bool(norm) if isinstance(norm, bool) else model_type != "qwen2_moe",
        "dense_layers": dense,
    }
