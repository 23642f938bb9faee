"""GGUF tensor names (``blk.{i}.attn_q.weight``) onto the template's Hugging Face names, with
what llama.cpp's converter changed on the way undone when the weight is read.

The converter (convert_hf_to_gguf.py) changes three things the graph must know: Llama's and
Mixtral's q and k rows are permuted for GGML's rotary layout (``LlamaModel.permute``), so they
are put back in Hugging Face's order as they are read; Gemma's norm weights are stored as
``1 + w``, so the template's norm offset is dropped; GPT-2's Conv1D weights are stored
transposed, so the template reads them as ``[out, in]``. A model's experts are one stacked
``[experts, out, in]`` tensor whose expert ``e`` is the ``e``-th slice of its bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np

from xocview.formats.llm.config import LlmConfig, NotBuilt
from xocview.formats.llm.templates import TEMPLATES, Template

__all__ = ["Mapped", "gguf_template", "hf_names", "unpermute"]

# model types whose converter permutes q and k (LlamaModel and its Mixtral reading)
PERMUTED = ("llama", "mixtral")
# blk.{i}.{part}, or blk.{i}.{part}.{e}: one expert of an early Mixtral file
_BLOCK = re.compile(r"blk\.(\d+)\.(\w+?)(?:\.(\d+))?")


@dataclass(frozen=True)
class Mapped:
    """Where one template weight is in a GGUF file."""

    name: str  # the GGUF tensor
    expert: int | None = None  # this expert's slice of a stacked [experts, ...] tensor
    heads: int = 0  # rows permuted by llama.cpp for this many heads (0: not permuted)
    shape: tuple[int, ...] | None = None  # a shape to read it as (None: the file's)


def gguf_template(cfg: LlmConfig) -> Template:
    """The template for a GGUF file of ``cfg``'s architecture: Gemma's norms stored with
    their offset added, GPT-2's Conv1D weights stored as [out, in]."""
    return replace(TEMPLATES[cfg.model_type], norm_offset=0.0, in_out=False)


def unpermute(w: np.ndarray, heads: int) -> np.ndarray:
    """Hugging Face's row order of a q or k projection (weight or bias) that llama.cpp
    permuted: the inverse of ``w.reshape(heads, 2, d // 2, ...).swapaxes(1, 2)``."""
    rows = w.shape[0]
    return w.reshape(heads, rows // heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def _layer_parts(tpl: Template) -> dict[str, str]:
    """GGUF's per-block tensor stems onto paths relative to the template's layer; stacked
    experts carry ``{e}``."""
    a, f = tpl.attn, tpl.mlp
    parts = {
        "attn_norm": tpl.attn_norm,
        "ffn_norm": tpl.mlp_norm,
        "attn_output": f"{a}.{tpl.o_proj}",
        "ffn_down": f"{f}.{tpl.down}",
    }
    if len(tpl.qkv) == 3:
        parts.update({f"attn_{x}": f"{a}.{n}" for x, n in zip("qkv", tpl.qkv, strict=True)})
    else:
        parts["attn_qkv"] = f"{a}.{tpl.qkv[0]}"
    if len(tpl.gate_up) == 2:
        parts.update({"ffn_gate": f"{f}.{tpl.gate_up[0]}", "ffn_up": f"{f}.{tpl.gate_up[1]}"})
    else:
        parts["ffn_up"] = f"{f}.{tpl.gate_up[0] if tpl.gate_up else tpl.up}"
    if tpl.qk_norm:
        parts.update(
            {"attn_q_norm": f"{a}.{tpl.qk_norm[0]}", "attn_k_norm": f"{a}.{tpl.qk_norm[1]}"}
        )
    if tpl.post_norms:
        parts.update({"post_attention_norm": tpl.post_norms[0], "post_ffw_norm": tpl.post_norms[1]})
    if tpl.moe is not None:
        m = tpl.moe
        parts["ffn_gate_inp"] = f"{m.module}.{m.router}"
        experts = f"{m.module}.experts.{{e}}"
        for stem, name in zip(("gate", "up", "down"), (*m.gate_up, m.down), strict=True):
            parts[f"ffn_{stem}_exps"] = f"{experts}.{name}"
            if m.shared:
                parts[f"ffn_{stem}_shexp"] = f"{m.module}.{m.shared}.{stem}_proj"
        if m.shared_gate:
            parts["ffn_gate_inp_shexp"] = f"{m.module}.{m.shared_gate}"
    return parts


def _check(cfg: LlmConfig, name: str, part: str, shape: tuple[int, ...]) -> None:
    """q, k and v weights as the metadata's head counts make them, else NotBuilt naming the
    tensor (so no read reshapes rows that do not fit)."""
    rows = {"attn_q": cfg.heads, "attn_k": cfg.kv_heads, "attn_v": cfg.kv_heads}.get(part)
    if rows is None or not name.endswith(".weight"):
        return
    want = (rows * cfg.head_dim, cfg.hidden)
    if cfg.head_dim % 2 and cfg.model_type in PERMUTED:
        raise NotBuilt(f"head size {cfg.head_dim} is odd: llama.cpp's rope rows come in pairs")
    if tuple(shape) != want:
        raise NotBuilt(
            f"GGUF tensor {name!r} is {list(shape)}, not the {list(want)} of {cfg.heads} heads "
            f"({cfg.kv_heads} for k and v) of {cfg.head_dim} over a hidden size of {cfg.hidden}"
        )


def hf_names(
    cfg: LlmConfig, tpl: Template, shapes: Iterable[tuple[str, tuple[int, ...]]]
) -> dict[str, Mapped]:
    """Each template weight's place in the file, by its Hugging Face name. NotBuilt names a
    GGUF tensor the template has no place for (an unknown part), so such a file opens as
    its tensor tree; Llama's ``rope_freqs.weight`` and Phi-3's rope factors keep their names."""
    top = {"token_embd": tpl.embed, "output_norm": tpl.final_norm, "output": tpl.lm_head}
    if tpl.positions:
        top["position_embd"] = tpl.positions
    if cfg.model_type in PERMUTED:  # Llama 3.1's rope frequency factors, read by the caches
        top["rope_freqs"] = "rope_freqs"
    if cfg.model_type == "phi3":  # longrope: the short factors are read, the long ones kept
        top |= {
            "rope_factors_short": "rope_factors_short",
            "rope_factors_long": "rope_factors_long",
        }
    parts = _layer_parts(tpl)
    out: dict[str, Mapped] = {}
    for name, shape in shapes:
        stem, _, suffix = name.rpartition(".")
        match = _BLOCK.fullmatch(stem)
        part = match and parts.get(match[2] + ("_exps" if match[3] else ""))
        if suffix not in ("weight", "bias") or not (stem in top or part):
            raise NotBuilt(f"GGUF tensor {name!r} has no place in the {cfg.model_type} template")
        if stem in top:
            out[f"{top[stem]}.{suffix}"] = Mapped(name)
            continue
        assert match is not None and part
        layer = tpl.layer.format(i=int(match[1]))
        if match[3]:
            out[f"{layer}.{part.format(e=int(match[3]))}.{suffix}"] = Mapped(name)
            continue
        if "{e}" in part:
            for e in range(shape[0]):
                out[f"{layer}.{part.format(e=e)}.{suffix}"] = Mapped(name, e)
            continue
        _check(cfg, name, match[2], shape)
        heads = 0
        if cfg.model_type in PERMUTED and match[2] in ("attn_q", "attn_k"):
            heads = cfg.heads if match[2] == "attn_q" else cfg.kv_heads
        fixed = (1, shape[0]) if match[2] == "ffn_gate_inp_shexp" and len(shape) == 1 else None
        out[f"{layer}.{part}.{suffix}"] = Mapped(name, None, heads, fixed)
    return out
