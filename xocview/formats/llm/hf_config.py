"""``from_hf``: the ``LlmConfig`` of a Hugging Face ``config.json``, as transformers reads it
(transformers 5's ``rope_parameters`` and ``layer_types``, and the keys older configs on the
hub still carry)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from xocview.formats.llm.config import (
    GEMMA3_LOCAL_THETA,
    GEMMA3_PATTERN,
    LlmConfig,
    NotBuilt,
    RopeSpec,
    default_sliding,
    number,
    rope_notes,
)
from xocview.formats.llm.rope import SCALED, ScalingError, scaling_params

__all__ = ["FAMILIES", "MAX_LAYERS", "from_hf"]

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
        slide = set(default_sliding(model_type, layers, _gemma3_pattern(cfg)))
        types = ["sliding_attention" if i in slide else "full" for i in range(layers)]
    if not per_type:
        theta, _, kind, scaled = _rope(cfg, head_dim)
        local = (number(cfg, "rope_local_base_freq", GEMMA3_LOCAL_THETA), "default", ())
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
    theta = number(params, "rope_theta", number(cfg, "rope_theta", 10000.0))
    partial = number(params, "partial_rotary_factor", number(cfg, "partial_rotary_factor", 1.0))
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
        eps=number(cfg, "rms_norm_eps", 1e-6),
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
        attn_softcap=number(cfg, "attn_logit_softcapping", 0.0),
        final_softcap=number(cfg, "final_logit_softcapping", 0.0),
        layer_ropes=_layer_ropes(cfg, model_type, layers, head_dim),
        **_sliding(cfg, model_type, layers),
        notes=rope_notes(kind, dict(scaled)),
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
    elif model_type.startswith("qwen"):
        first = (
            _int(cfg, "max_window_layers", default=0) if cfg.get("use_sliding_window") else layers
        )
        slide = tuple(range(first, layers))
    else:
        slide = default_sliding(model_type, layers, _gemma3_pattern(cfg))
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
        eps=number(cfg, "layer_norm_epsilon", 1e-5),
        hidden_act=act,
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", True)),
        max_positions=_int(cfg, "n_positions", "max_position_embeddings", default=1024),
        rope_kind="none",
        qkv_bias=True,
    )


def _gemma3_pattern(cfg: Mapping[str, Any]) -> int:
    """Gemma 3's sliding pattern as transformers 4 configs write it."""
    return _int(cfg, "sliding_window_pattern", "_sliding_window_pattern", default=GEMMA3_PATTERN)
