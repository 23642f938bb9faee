"""A decoder-only LLM's shape in one normalised record (``LlmConfig``), read from a Hugging
Face ``config.json`` (and, later, from GGUF metadata through ``from_gguf``).

Each family spells its sizes its own way (``n_embd`` or ``hidden_size``, ``rope_theta`` at the
top or in ``rope_parameters``); the graph builder reads only this record, so a new family is a
new reading here and a row in ``templates.TEMPLATES``, never a new builder.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xocview.errors import shorten
from xocview.formats.llm.rope import SCALED, ScalingError, scaling_params

__all__ = ["LlmConfig", "NotBuilt", "from_gguf", "from_hf"]


class NotBuilt(Exception):
    """The config names an architecture or a setting the builder has no template for; the
    message says which, and the caller opens the weights as their tensor tree instead."""


RopeSpec = tuple[float, str, tuple[tuple[str, Any], ...]]  # theta, kind, its parameters


@dataclass(frozen=True)
class LlmConfig:
    """What the builder needs; ``notes`` are settings read but not drawn (LongRoPE's long
    factors, a vision tower)."""

    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    eps: float
    hidden_act: str
    tie_word_embeddings: bool
    max_positions: int
    rope_theta: float = 10000.0
    # "default" (plain), "none" (learned positions, GPT-2), a scaled kind of rope.SCALED
    # (its parameters in rope_scaling), or "factors" (a GGUF's rope_freqs.weight)
    rope_kind: str = "default"
    rope_scaling: tuple[tuple[str, Any], ...] = ()
    rotary_dim: int = 0
    qkv_bias: bool = False
    attn_scale: float | None = None  # None: 1/sqrt(head_dim)
    attn_softcap: float = 0.0  # Gemma 2: softcap * tanh(scores / softcap); 0: none
    final_softcap: float = 0.0  # the same on the logits
    # per layer (theta, kind, scaling) where layers differ (Gemma 3's local layers: plain rope
    # of their own theta); (): every layer (rope_theta, rope_kind, rope_scaling)
    layer_ropes: tuple[RopeSpec, ...] = ()
    experts: int = 0  # routed experts per MoE layer (0: dense)
    experts_per_tok: int = 0
    moe_intermediate: int = 0
    shared_intermediate: int = 0
    norm_topk: bool = True  # the chosen experts' weights rescaled to sum to one
    dense_layers: tuple[int, ...] = ()  # layers of an MoE model with a dense MLP
    window: int = 0  # sliding-window attention: a query sees its last ``window`` keys
    sliding_layers: tuple[int, ...] = ()  # the layers it applies to
    notes: tuple[str, ...] = ()

    def rope(self, layer: int) -> RopeSpec:
        """The rope layer ``layer`` rotates with."""
        if self.layer_ropes:
            return self.layer_ropes[layer]
        return self.rope_theta, self.rope_kind, self.rope_scaling


# More layers than any model has (the largest have about 130): a damaged config, refused
# before per-layer settings are listed; the builder checks the count against the tensors.
MAX_LAYERS = 10_000
# model_type -> the template key (templates.TEMPLATES)
FAMILIES = (
    *("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text", "gpt2"),
    *("mixtral", "qwen2_moe", "qwen3_moe"),
)
_GATED_ACTS = {"silu", "swish", "gelu", "gelu_pytorch_tanh", "gelu_new"}


def _int(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = cfg.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    if default is not None:
        return default
    raise NotBuilt(f"config.json has no positive {keys[0]}")


def _float(cfg: Mapping[str, Any], key: str, default: float) -> float:
    value = cfg.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


def _layer_ropes(
    cfg: Mapping[str, Any], model_type: str, layers: int, head_dim: int
) -> tuple[RopeSpec, ...]:
    """Gemma 3's rope per layer: each layer type's own rope parameters (transformers 5), or
    in older configs the global rope (its scaling too: linear 8 for 4B and up) on the full
    layers and plain rope of ``rope_local_base_freq`` on the sliding ones."""
    params = cfg.get("rope_parameters")
    types = cfg.get("layer_types")
    per_type = isinstance(params, dict) and all(isinstance(v, dict) for v in params.values())
    if not per_type and model_type != "gemma3_text":
        return ()
    if not isinstance(types, list) or len(types) != layers:
        if per_type:
            raise NotBuilt("rope_parameters per layer type without layer_types for every layer")
        pattern = _int(cfg, "sliding_window_pattern", "_sliding_window_pattern", default=6)
        types = ["sliding_attention" if (i + 1) % pattern else "full" for i in range(layers)]
    if not per_type:
        theta, _, kind, scaled = _rope(cfg, head_dim)
        local = (_float(cfg, "rope_local_base_freq", _GEMMA3_LOCAL_THETA), "default", ())
        return tuple(local if t == "sliding_attention" else (theta, kind, scaled) for t in types)
    assert isinstance(params, dict)
    out = []
    for layer_type in types:
        entry = params.get(layer_type)
        if not isinstance(entry, dict):
            raise NotBuilt(f"layer type {str(layer_type)!r} has no rope_parameters")
        theta, _, kind, scaled = _rope({"rope_parameters": entry}, head_dim)
        out.append((theta, kind, scaled))
    return tuple(out)


def _rope(
    cfg: Mapping[str, Any], head_dim: int
) -> tuple[float, int, str, tuple[tuple[str, Any], ...]]:
    """Rope's theta, rotated features, scaling kind and its parameters (``rope_parameters``
    of transformers 5 or ``rope_scaling`` of older configs); a kind not in rope.SCALED
    (dynamic NTK, ...) is refused by name."""
    params = cfg.get("rope_parameters")
    params = params if isinstance(params, dict) else {}
    if params and all(isinstance(v, dict) for v in params.values()):
        params = {}  # per layer type: _layer_thetas reads them
    scaling = cfg.get("rope_scaling")
    scaling = scaling if isinstance(scaling, dict) else {}
    kind = params.get("rope_type") or scaling.get("rope_type") or scaling.get("type") or "default"
    kind = {"su": "longrope"}.get(kind, kind)  # Phi-3 128k's first configs named it "su"
    if kind != "default" and kind not in SCALED:
        built = ", ".join(SCALED)
        raise NotBuilt(f"rope scaling {str(kind)!r} is not built (plain rope and {built} are)")
    try:
        top = {k: cfg[k] for k in ("original_max_position_embeddings",) if cfg.get(k)}
        scaled = scaling_params(kind, top | scaling | params) if kind in SCALED else ()
    except ScalingError as e:
        raise NotBuilt(str(e)) from e
    theta = _float(params, "rope_theta", _float(cfg, "rope_theta", 10000.0))
    partial = _float(params, "partial_rotary_factor", _float(cfg, "partial_rotary_factor", 1.0))
    rotary = int(head_dim * partial) // 2 * 2
    return theta, rotary, str(kind), scaled


def from_hf(cfg: Mapping[str, Any]) -> LlmConfig:
    """The record for a ``config.json``; NotBuilt names what has no template."""
    model_type = cfg.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise NotBuilt("config.json has no model_type")
    if model_type not in FAMILIES:
        raise NotBuilt(f"model_type {model_type!r} has no architecture template")
    if model_type == "gpt2":
        return _gpt2(cfg)
    hidden = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    head_dim = _int(cfg, "head_dim", default=hidden // heads)
    default_act = "gelu_pytorch_tanh" if model_type.startswith("gemma") else "silu"  # theirs
    act = str(cfg.get("hidden_activation") or cfg.get("hidden_act") or default_act)
    if act not in _GATED_ACTS:
        raise NotBuilt(f"hidden_act {act!r} is not built")
    theta, rotary, kind, scaled = _rope(cfg, head_dim)
    bias = bool(cfg.get("attention_bias")) or model_type in ("qwen2", "qwen2_moe")
    layers = _int(cfg, "num_hidden_layers")
    if layers > MAX_LAYERS:  # a damaged config: checked against the weights later
        raise NotBuilt(f"num_hidden_layers {layers} is more than a model has ({MAX_LAYERS})")
    scalar = cfg.get("query_pre_attn_scalar") if model_type.startswith("gemma") else None
    return LlmConfig(
        **_moe(cfg, model_type, layers),
        model_type=model_type,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=_int(cfg, "num_key_value_heads", default=heads),
        head_dim=head_dim,
        intermediate=_int(cfg, "intermediate_size"),
        vocab=_int(cfg, "vocab_size"),
        eps=_float(cfg, "rms_norm_eps", 1e-6),
        hidden_act=act,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", False)),
        max_positions=_int(cfg, "max_position_embeddings", default=4096),
        rope_theta=theta,
        rope_kind=kind,
        rope_scaling=scaled,
        rotary_dim=rotary,
        qkv_bias=bias,
        attn_scale=float(scalar) ** -0.5
        if isinstance(scalar, (int, float)) and scalar > 0
        else None,
        attn_softcap=_float(cfg, "attn_logit_softcapping", 0.0),
        final_softcap=_float(cfg, "final_logit_softcapping", 0.0),
        layer_ropes=_layer_ropes(cfg, model_type, layers, head_dim),
        **_sliding(cfg, model_type, layers),
        notes=_rope_notes(kind, dict(scaled)),
    )


def _rope_notes(kind: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """Phi-3's long factors take over past the original context; without them (a config
    or file holding only the short ones) the graph stops there."""
    if kind != "longrope" or "long_factor" in params:
        return ()
    old = params["original_max_position_embeddings"]
    return (
        f"longrope: the short factors are drawn, for prompts up to {old} tokens "
        "(the original context); longer prompts are refused",
    )


def _moe(cfg: Mapping[str, Any], model_type: str, layers: int) -> dict[str, Any]:
    """The routing settings of Mixtral and Qwen-MoE; {} for a dense model."""
    if model_type not in ("mixtral", "qwen2_moe", "qwen3_moe"):
        return {}
    experts = _int(cfg, "num_local_experts", "num_experts")
    step = _int(cfg, "decoder_sparse_step", default=1)
    only = cfg.get("mlp_only_layers")
    only = only if isinstance(only, list) else []
    dense = tuple(i for i in range(layers) if i in only or (i + 1) % step)
    return {
        "experts": experts,
        "experts_per_tok": min(_int(cfg, "num_experts_per_tok", default=2), experts),
        "moe_intermediate": _int(cfg, "moe_intermediate_size", "intermediate_size"),
        "shared_intermediate": _int(cfg, "shared_expert_intermediate_size", default=1),
        "norm_topk": model_type == "mixtral" or bool(cfg.get("norm_topk_prob")),
        "dense_layers": dense,
    }


def _sliding(cfg: Mapping[str, Any], model_type: str, layers: int) -> dict[str, Any]:
    """Which layers attend within ``sliding_window``, as transformers decides: the layers
    ``layer_types`` calls sliding; without it, every layer (Mistral, Phi-3, Mixtral), every
    other one (Gemma 2), or with ``use_sliding_window`` those from ``max_window_layers``
    on (Qwen)."""
    window = cfg.get("sliding_window")
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        return {}
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        slide = tuple(i for i, t in enumerate(types) if t == "sliding_attention")
    elif model_type == "gemma2":
        slide = tuple(range(0, layers, 2))
    elif model_type.startswith("qwen"):
        first = (
            _int(cfg, "max_window_layers", default=0) if cfg.get("use_sliding_window") else layers
        )
        slide = tuple(range(first, layers))
    elif model_type == "gemma3_text":
        slide = tuple(i for i in range(layers) if (i + 1) % _GEMMA3_PATTERN)
    else:
        slide = tuple(range(layers))
    return {"window": window, "sliding_layers": slide} if slide else {}


def _gpt2(cfg: Mapping[str, Any]) -> LlmConfig:
    hidden = _int(cfg, "n_embd", "hidden_size")
    heads = _int(cfg, "n_head", "num_attention_heads")
    act = str(cfg.get("activation_function") or "gelu_new")
    if act not in ("gelu_new", "gelu_pytorch_tanh", "gelu"):
        raise NotBuilt(f"activation_function {act!r} is not built")
    return LlmConfig(
        model_type="gpt2",
        hidden=hidden,
        layers=_int(cfg, "n_layer", "num_hidden_layers"),
        heads=heads,
        kv_heads=heads,
        head_dim=hidden // heads,
        intermediate=_int(cfg, "n_inner", default=4 * hidden),
        vocab=_int(cfg, "vocab_size"),
        eps=_float(cfg, "layer_norm_epsilon", 1e-5),
        hidden_act=act,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        max_positions=_int(cfg, "n_positions", "max_position_embeddings", default=1024),
        rope_kind="none",
        qkv_bias=True,
    )


# general.architecture -> model_type (llama.cpp writes Mistral and Mixtral as "llama")
GGUF_ARCHS = {
    **{a: a for a in ("llama", "qwen2", "qwen3", "phi3", "gemma", "gemma2", "gpt2")},
    **{"gemma3": "gemma3_text", "qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe"},
}
_GGUF_ACTS = {
    "gpt2": "gelu_new",
    **dict.fromkeys(("gemma", "gemma2", "gemma3_text"), "gelu_pytorch_tanh"),
}
_GEMMA3_PATTERN, _GEMMA3_LOCAL_THETA = 6, 10000.0  # llama.cpp's fixed sliding-layer settings


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
    eps = _float(m, "attention.layer_norm_epsilon", 1e-5)
    kv_heads = _key(m, "attention.head_count_kv", heads)
    if heads % kv_heads:
        raise NotBuilt(f"{heads} attention heads do not share {kv_heads} key/value heads evenly")
    attention = _gguf_attention(m, model_type, hidden, heads, head_dim, layers)
    rope = _gguf_rope(m, model_type, shapes)
    notes = attention.pop("notes", ()) + rope.pop("notes", ())
    if "local_theta" in attention:  # Gemma 3: the scaled rope on the full layers only
        local = (attention.pop("local_theta"), "default", ())
        full = (attention["rope_theta"], rope["rope_kind"], rope.get("rope_scaling", ()))
        rope["layer_ropes"] = tuple(
            local if (i + 1) % _GEMMA3_PATTERN else full for i in range(layers)
        )
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
        eps=_float(m, "attention.layer_norm_rms_epsilon", eps),
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
    theta = _float(m, "rope.freq_base", 10000.0)
    local = _float(m, "rope.freq_base_swa", _GEMMA3_LOCAL_THETA)
    window = m.get("attention.sliding_window")
    big = (model_type, layers) in (("gemma2", 46), ("gemma3_text", 62))
    out: dict[str, Any] = {
        "rope_theta": theta,
        "rotary_dim": 0 if model_type == "gpt2" else _key(m, "rope.dimension_count", head_dim),
        "attn_scale": (hidden / heads) ** -0.5 if big else None,
        "attn_softcap": _float(m, "attn_logit_softcapping", 0.0),
        "final_softcap": _float(m, "final_logit_softcapping", 0.0),
    }
    if model_type == "gemma3_text":  # the rope of the full layers is set by from_gguf
        out["local_theta"] = local
    if isinstance(window, int) and not isinstance(window, bool) and window > 0:
        # llama.cpp's sliding layers: Gemma 2 every other one, Gemma 3 all but every sixth,
        # Phi-3 and Mistral-style files all
        if model_type == "gemma2":
            slide = tuple(range(0, layers, 2))
        elif model_type == "gemma3_text":
            slide = tuple(i for i in range(layers) if (i + 1) % _GEMMA3_PATTERN)
        else:
            slide = tuple(range(layers))
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
            params[name] = _float(m, f"rope.scaling.{key}", 0.0)
    attn = _float(m, "rope.scaling.attn_factor", 1.0)
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
        "notes": () if has_long else _rope_notes("longrope", params),
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
