"""A decoder-only LLM's forward pass as a graph of standard ONNX operators (opset 23), built
from its ``LlmConfig`` and its architecture's ``Template``, every weight bound to its stored
tensor by name.

Input ``input_ids`` (int64 [1, seq]) -> Gather of the embedding -> one group per decoder
block (the model's own module, ``model.layers.{i}``) -> final norm -> ``logits``. Each block's
Attention reads its KV cache ``past_key_values.{i}.key``/``.value`` ([1, kv heads, past, head
dim], empty for a prompt) and writes ``present.{i}.key``/``.value``, the names exporters of
LLMs use, so a decoding step is the same graph fed the cache the last one wrote. Weights
keep Hugging Face's [out, in] layout and are read through a Transpose the executor folds once,
so the graph names the tensors the file holds and opening reads none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.llm.blocks import decoder_block
from xocview.formats.llm.builder import PAST, SEQ, Builder, StoredTensor, norm, positions
from xocview.formats.llm.config import LlmConfig, RopeSpec
from xocview.formats.llm.rope import inv_freq
from xocview.formats.llm.templates import Template
from xocview.model import Graph

__all__ = ["FREQ_FACTORS", "LONG_FACTORS", "OPSET", "SHORT_FACTORS", "build_graph"]

OPSET = 23
FREQ_FACTORS = "rope_freqs.weight"  # llama.cpp's per-frequency divisors (Llama 3.1 GGUF)
SHORT_FACTORS = "rope_factors_short.weight"  # Phi-3's longrope short factors in a GGUF
LONG_FACTORS = "rope_factors_long.weight"  # ... and its long ones


def build_graph(
    cfg: LlmConfig,
    tpl: Template,
    weights: Mapping[str, StoredTensor],
    name: str,
    file: str,
) -> Graph:
    """The forward pass for a prompt: ``input_ids`` [1, seq] -> ``logits`` [1, seq, vocab]."""
    meta: dict[str, Any] = {
        "opset_import": [{"domain": "", "version": OPSET}],
        "llm": {k: v for k, v in vars(cfg).items() if k != "notes"},
    }
    if cfg.notes:
        meta["notes"] = list(cfg.notes)
    _check_layers(cfg, tpl, weights, file)
    graph = Graph(name, name, metadata=meta)
    b = Builder(graph, weights, file)
    ids = b.tensor("input_ids", [1, SEQ], "int64", "input")
    graph.inputs.append(ids)
    cache = [1, cfg.kv_heads, PAST, cfg.head_dim]
    pasts = [
        (
            b.tensor(f"past_key_values.{i}.key", cache, kind="input"),
            b.tensor(f"past_key_values.{i}.value", cache, kind="input"),
        )
        for i in range(cfg.layers)
    ]
    graph.inputs += [t for pair in pasts for t in pair]
    h = _embed(b, cfg, tpl, ids, pasts[0][0] if pasts else None)
    specs = [cfg.rope(i) for i in range(cfg.layers)]
    ropes = {}
    if cfg.rope_kind != "none":
        for k, spec in enumerate(dict.fromkeys(specs)):
            ropes[spec] = _rope_caches(b, cfg, spec, "rotary_emb" + (f"_{k}" if k else ""))
    for i in range(cfg.layers):
        h = decoder_block(b, cfg, tpl, i, h, ropes.get(specs[i]), pasts[i])
    h = norm(b, cfg, tpl, tpl.final_norm, h, None)
    graph.outputs.append(_lm_head(b, cfg, tpl, h))
    graph.outputs += b.cache_outputs
    b.finish()
    return graph


def _check_layers(
    cfg: LlmConfig, tpl: Template, weights: Mapping[str, StoredTensor], file: str
) -> None:
    """The file holds the config's last layer: a layer count past the tensors (a damaged
    block_count, a config of another size) is named before a graph of that many layers is
    begun."""
    last = tpl.layer.format(i=cfg.layers - 1) + "."
    short = last.partition(".")[2]  # files saved from a base model drop the first part
    if not any(n.startswith(last) or (short and n.startswith(short)) for n in weights):
        raise FormatError(
            file,
            tpl.layer.format(i=cfg.layers - 1),
            f"no tensors of layer {cfg.layers - 1}",
            f"the {cfg.layers} layers the config counts",
        )


def _embed(b: Builder, cfg: LlmConfig, tpl: Template, ids: int, past: int | None) -> int:
    """The residual stream's start: the token embedding, scaled, or plus learned positions
    (GPT-2's, counted on from the cache's length)."""
    h = b.op(
        "Gather",
        [b.weight(tpl.embed + ".weight", None), ids],
        {"axis": 0},
        tpl.embed,
        None,
        [1, SEQ, cfg.hidden],
    )
    if tpl.embed_scale:  # Gemma: times sqrt(hidden), rounded to float32 as transformers does
        root = b.scalar(tpl.embed + "/scale", float(np.float32(cfg.hidden**0.5)))
        h = b.op("Mul", [h, root], None, tpl.embed + "/scale", None, [1, SEQ, cfg.hidden])
    if tpl.positions is not None:
        pos = positions(b, ids, past, "positions", None)[0]
        table = b.weight(tpl.positions + ".weight", None)
        p = b.op("Gather", [table, pos], {"axis": 0}, tpl.positions, None, [1, SEQ, cfg.hidden])
        h = b.op("Add", [h, p], None, "embeddings/Add", None, [1, SEQ, cfg.hidden])
    return h


def _lm_head(b: Builder, cfg: LlmConfig, tpl: Template, h: int) -> int:
    """``logits``: the head (or the tied embedding) over the final norm, soft-capped when
    the config says so (Gemma 2)."""
    head = tpl.lm_head if b.has(tpl.lm_head + ".weight") else tpl.embed
    w = b.weight(head + ".weight", None)
    if not tpl.in_out or head == tpl.embed:
        shape = [cfg.hidden, cfg.vocab]
        w = b.op("Transpose", [w], {"perm": [1, 0]}, head + "/Transpose", None, shape)
    out = b.tensor("logits", [1, SEQ, cfg.vocab], "float32", "output")
    shape = [1, SEQ, cfg.vocab]
    if not cfg.final_softcap:
        b.node("MatMul", [h, w], None, b.unique(tpl.lm_head), None, [out])
        return out
    cap = b.scalar("final_softcap", cfg.final_softcap)
    y = b.op("MatMul", [h, w], None, tpl.lm_head, None, shape)
    y = b.op("Div", [y, cap], None, "final_softcap/Div", None, shape)
    y = b.op("Tanh", [y], None, "final_softcap/Tanh", None, shape)
    b.node("Mul", [y, cap], None, b.unique("final_softcap"), None, [out])
    return out


def _rope_caches(b: Builder, cfg: LlmConfig, spec: RopeSpec, label: str) -> tuple[int, int, int]:
    """cos and sin of every position's angles, computed on first use as transformers does
    (float32 inverse frequencies from rope theta, scaled as the config's rope kind says;
    a GGUF's ``rope_freqs.weight`` divides them as llama.cpp does), and the row where a
    second table starts (0: none). LongRoPE's caches are two tables one after the other:
    the original context's rows with the short factors, then every position's with the long
    ones, which a prompt reaching past the original context reads (``long_rows``)."""
    rot = cfg.rotary_dim or cfg.head_dim
    theta, kind, scaling = spec
    params = dict(scaling)
    old = int(params.get("original_max_position_embeddings", 0))
    stored = {"factors": FREQ_FACTORS, "longrope": SHORT_FACTORS}.get(kind, "")
    factors = _factors(b, stored, rot)
    long_factors = _factors(b, LONG_FACTORS, rot) if kind == "longrope" else None
    has_long = kind == "longrope" and ("long_factor" in params or long_factors is not None)
    rows = cfg.max_positions
    if kind == "longrope":  # the short factors hold within the original context
        rows = min(rows, old) + (cfg.max_positions if has_long else 0)
    shape = [rows, rot // 2]

    def angles(long: bool, count: int) -> tuple[np.ndarray, float]:
        inv, scale = inv_freq(kind, params, theta, rot, cfg.max_positions, long)
        divisors = long_factors if long else factors
        if divisors is not None:
            inv = (inv / divisors[2]().astype(np.float32)).astype(np.float32)
        return np.arange(count, dtype=np.float32)[:, None] * inv[None, :], scale

    def table(fn: Callable[[np.ndarray], np.ndarray]) -> Callable[[], np.ndarray]:
        def make() -> np.ndarray:
            parts = [(False, rows if not has_long else min(cfg.max_positions, old))]
            if has_long:
                parts.append((True, cfg.max_positions))
            out = []
            for long, count in parts:
                a, scale = angles(long, count)
                values = fn(a)
                out.append(values * np.float32(scale) if scale != 1.0 else values)
            return np.concatenate(out).astype(np.float32)

        return make

    cos = b.tensor(label + ".cos_cache", shape, "float32", "weight", table(np.cos))
    sin = b.tensor(label + ".sin_cache", shape, "float32", "weight", table(np.sin))
    if kind not in ("default", "none"):
        how = f"rope scaling {kind!r}" + (f" ({stored})" if factors else "")
        if has_long:
            how += f"; rows from {min(cfg.max_positions, old)} on with the long factors"
        for t in (cos, sin):
            b.g.tensors[t].metadata["values"] = f"computed from rope theta with {how}"
    return cos, sin, min(cfg.max_positions, old) if has_long else 0


def _factors(b: Builder, stored: str, rot: int) -> StoredTensor | None:
    """A GGUF's stored frequency divisors, checked to be one per rotated pair."""
    factors = b.weights.get(stored) if stored else None
    if factors is not None and list(factors[0]) != [rot // 2]:
        raise FormatError(
            b.file, stored, f"shape {list(factors[0])}", f"[{rot // 2}] frequency factors"
        )
    return factors
