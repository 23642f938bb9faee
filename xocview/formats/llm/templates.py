"""One table from architecture to how its decoder block is built: the norms, the fused or
separate projections, the feed-forward's shape and every weight's name pattern.

Names are Hugging Face's module paths (``{layer}`` is ``model.layers.{i}``); a projection named
``None`` is absent. A family that differs from Llama only in a setting is Llama's row with that
setting replaced, so the table reads as a list of differences.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["TEMPLATES", "Moe", "Template"]


@dataclass(frozen=True)
class Moe:
    """A mixture-of-experts feed-forward: a router over numbered gated experts, and for
    Qwen-MoE a shared expert scaled by its own sigmoid gate."""

    module: str  # relative to the layer
    router: str
    gate_up: tuple[str, str]  # each expert's gate and up projections
    down: str
    shared: str | None = None
    shared_gate: str | None = None


@dataclass(frozen=True)
class Template:
    """How one architecture's graph is drawn; the builder reads nothing else per family."""

    embed: str  # token embedding table [vocab, hidden]
    layer: str  # one decoder block's module path, {i} its number
    attn_norm: str  # the norm before attention, relative to the layer
    mlp_norm: str  # the norm before the feed-forward
    attn: str  # the attention module
    qkv: tuple[str, ...]  # separate q, k, v projections, or one fused projection
    o_proj: str
    mlp: str
    gate_up: tuple[str, ...]  # gate and up projections, or one fused; () for an ungated MLP
    up: str | None  # the ungated MLP's first projection
    down: str
    final_norm: str
    lm_head: str
    norm: str = "rms"  # "rms" (RMSNormalization) or "layer" (LayerNormalization, with bias)
    qk_norm: tuple[str, str] | None = None  # per-head RMSNorm of q and k (Qwen3)
    positions: str | None = None  # a learned position table (GPT-2) instead of rope
    in_out: bool = False  # weights stored [in, out] (GPT-2's Conv1D), not [out, in]
    norm_offset: float = 0.0  # Gemma's norms scale by (offset + weight)
    embed_scale: bool = False  # Gemma scales the embeddings by sqrt(hidden)
    post_norms: tuple[str, str] | None = None  # norms of the attention's and MLP's outputs
    moe: Moe | None = None  # mixture-of-experts layers (Mixtral, Qwen-MoE)


LLAMA = Template(
    embed="model.embed_tokens",
    layer="model.layers.{i}",
    attn_norm="input_layernorm",
    mlp_norm="post_attention_layernorm",
    attn="self_attn",
    qkv=("q_proj", "k_proj", "v_proj"),
    o_proj="o_proj",
    mlp="mlp",
    gate_up=("gate_proj", "up_proj"),
    up=None,
    down="down_proj",
    final_norm="model.norm",
    lm_head="lm_head",
)

GEMMA = replace(LLAMA, norm_offset=1.0, embed_scale=True)
SANDWICH = ("post_attention_layernorm", "post_feedforward_layernorm")
QK_NORM = ("q_norm", "k_norm")
QWEN_EXPERTS = Moe("mlp", "gate", ("gate_proj", "up_proj"), "down_proj")

TEMPLATES: dict[str, Template] = {
    "llama": LLAMA,
    "mistral": LLAMA,
    "qwen2": LLAMA,
    "qwen3": replace(LLAMA, qk_norm=QK_NORM),
    "phi3": replace(LLAMA, qkv=("qkv_proj",), gate_up=("gate_up_proj",)),
    "mixtral": replace(LLAMA, moe=Moe("block_sparse_moe", "gate", ("w1", "w3"), "w2")),
    "qwen2_moe": replace(
        LLAMA,
        moe=replace(QWEN_EXPERTS, shared="shared_expert", shared_gate="shared_expert_gate"),
    ),
    "qwen3_moe": replace(LLAMA, qk_norm=QK_NORM, moe=QWEN_EXPERTS),
    "gemma": GEMMA,
    "gemma2": replace(GEMMA, mlp_norm="pre_feedforward_layernorm", post_norms=SANDWICH),
    "gemma3_text": replace(
        GEMMA, mlp_norm="pre_feedforward_layernorm", post_norms=SANDWICH, qk_norm=QK_NORM
    ),
    "gpt2": Template(
        embed="transformer.wte",
        layer="transformer.h.{i}",
        attn_norm="ln_1",
        mlp_norm="ln_2",
        attn="attn",
        qkv=("c_attn",),
        o_proj="c_proj",
        mlp="mlp",
        gate_up=(),
        up="c_fc",
        down="c_proj",
        final_norm="transformer.ln_f",
        lm_head="lm_head",
        norm="layer",
        positions="transformer.wpe",
        in_out=True,
    ),
}
