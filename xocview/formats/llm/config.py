"""A decoder-only LLM's shape in one normalised record (``LlmConfig``), and what its two
readings share: a Hugging Face ``config.json`` (``hf_config.from_hf``) and GGUF metadata
(``gguf_config.from_gguf``).

Each family spells its sizes its own way (``n_embd`` or ``hidden_size``, ``rope_theta`` at the
top or in ``rope_parameters``); the graph builder reads only this record, so a new family is a
new reading there and a row in ``templates.TEMPLATES``, never a new builder.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "GEMMA3_LOCAL_THETA",
    "GEMMA3_PATTERN",
    "LlmConfig",
    "NotBuilt",
    "RopeSpec",
    "default_sliding",
    "number",
    "rope_notes",
]


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


# Gemma 3's sliding layers (all but every sixth) and their rope theta, where a file does not
# say (transformers' and llama.cpp's defaults alike)
GEMMA3_PATTERN, GEMMA3_LOCAL_THETA = 6, 10000.0


def number(cfg: Mapping[str, Any], key: str, default: float) -> float:
    """A number of the config (an int or a float, not a bool), else ``default``."""
    value = cfg.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return default


def default_sliding(model_type: str, layers: int, pattern: int = GEMMA3_PATTERN) -> tuple[int, ...]:
    """The layers a family attends within its window when the file does not list them:
    Gemma 2 every other one (the even ones), Gemma 3 all but every ``pattern``-th, the other
    families all."""
    if model_type == "gemma2":
        return tuple(range(0, layers, 2))
    if model_type == "gemma3_text":
        return tuple(i for i in range(layers) if (i + 1) % pattern)
    return tuple(range(layers))


def rope_notes(kind: str, params: Mapping[str, Any]) -> tuple[str, ...]:
    """Phi-3's long factors take over past the original context; without them (a config
    or file holding only the short ones) the graph stops there."""
    if kind != "longrope" or "long_factor" in params:
        return ()
    old = params["original_max_position_embeddings"]
    return (
        f"longrope: the short factors are drawn, for prompts up to {old} tokens "
        "(the original context); longer prompts are refused",
    )
