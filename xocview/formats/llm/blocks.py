"""One decoder block as the model's own modules: norm -> attention (projections, per-head
norms, rotary embedding, grouped-query Attention over the KV cache, output projection) ->
residual Add -> norm -> feed-forward -> residual Add, each module a group holding its ONNX
nodes."""

from __future__ import annotations

from xocview.formats.llm.builder import SEQ, TOTAL, Builder, norm, norm_weight, positions
from xocview.formats.llm.config import LlmConfig
from xocview.formats.llm.dense import act, linear, mlp
from xocview.formats.llm.moe import moe_block
from xocview.formats.llm.templates import Template

__all__ = ["decoder_block"]


def decoder_block(
    b: Builder,
    cfg: LlmConfig,
    tpl: Template,
    i: int,
    h: int,
    rope: tuple[int, int, int] | None,
    past: tuple[int, int],
) -> int:
    """Block ``i`` reading the residual stream ``h`` and its KV cache ``past`` (key, value);
    returns the stream after it."""
    layer = tpl.layer.format(i=i)
    g = b.group(layer, "DecoderLayer", None)
    stream = [1, SEQ, cfg.hidden]
    x = norm(b, cfg, tpl, f"{layer}.{tpl.attn_norm}", h, g)
    a = _attention(b, cfg, tpl, f"{layer}.{tpl.attn}", x, rope, past, i, g)
    if tpl.post_norms is not None:
        a = norm(b, cfg, tpl, f"{layer}.{tpl.post_norms[0]}", a, g)
    h = b.op("Add", [h, a], None, f"{layer}/residual_attn", g, stream)
    x = norm(b, cfg, tpl, f"{layer}.{tpl.mlp_norm}", h, g)
    m = _ffn(b, cfg, tpl, layer, i, x, g)
    if tpl.post_norms is not None:
        m = norm(b, cfg, tpl, f"{layer}.{tpl.post_norms[1]}", m, g)
    return b.op("Add", [h, m], None, f"{layer}/residual_mlp", g, stream)


def _attention(
    b: Builder,
    cfg: LlmConfig,
    tpl: Template,
    mod: str,
    x: int,
    rope: tuple[int, int, int] | None,
    past: tuple[int, int],
    i: int,
    parent: str,
) -> int:
    g = b.group(mod, "Attention", parent)
    qd, kd = cfg.heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    if len(tpl.qkv) == 3:
        q, k, v = (
            linear(b, tpl, f"{mod}.{p}", x, n, g)
            for p, n in zip(tpl.qkv, (qd, kd, kd), strict=True)
        )
    else:
        fused = linear(b, tpl, f"{mod}.{tpl.qkv[0]}", x, qd + 2 * kd, g)
        sizes = b.const(f"{mod}/split_sizes", [qd, kd, kd])
        shapes = [[1, SEQ, qd], [1, SEQ, kd], [1, SEQ, kd]]
        q, k, v = b.ops("Split", [fused, sizes], {"axis": -1}, f"{mod}/Split", g, shapes)
    if tpl.qk_norm is not None:
        q = _head_norm(b, cfg, tpl, f"{mod}.{tpl.qk_norm[0]}", q, cfg.heads, g)
        k = _head_norm(b, cfg, tpl, f"{mod}.{tpl.qk_norm[1]}", k, cfg.kv_heads, g)
    sliding = cfg.window > 0 and i in cfg.sliding_layers
    if rope is not None or sliding:  # each layer counts on from its own cache's length
        pos, end = positions(b, x, past[0], f"{mod}.positions", g)
    if rope is not None:
        rows = _long_rows(b, pos, end, rope[2], f"{mod}.positions") if rope[2] else pos
        q = _rotate(b, cfg, f"{mod}/rotary_q", q, cfg.heads, rows, rope, g)
        k = _rotate(b, cfg, f"{mod}/rotary_k", k, cfg.kv_heads, rows, rope, g)
    # causal, or within the window: a mask of which keys each query sees
    mask = _sliding_mask(b, cfg.window, pos, end, f"{mod}.sliding_window", g) if sliding else None
    attrs: dict[str, int | float] = {
        "is_causal": 0 if sliding else 1,
        "q_num_heads": cfg.heads,
        "kv_num_heads": cfg.kv_heads,
        "scale": cfg.attn_scale or cfg.head_dim**-0.5,
    }
    if cfg.attn_softcap:
        attrs["softcap"] = cfg.attn_softcap
    # the cache after this prompt: graph outputs named as exporters of LLMs name them
    present = [
        b.tensor(f"present.{i}.{part}", [1, cfg.kv_heads, TOTAL, cfg.head_dim], kind="output")
        for part in ("key", "value")
    ]
    for t in (*past, *present):  # drawn in the attention's frame, not beside the stack
        b.g.tensors[t].metadata["parent_id"] = g
    b.cache_outputs += present
    o = b.tensor(f"{mod}/Attention:0", [1, SEQ, qd])
    b.node(
        "Attention", [q, k, v, mask, *past], attrs, b.unique(f"{mod}/Attention"), g, [o, *present]
    )
    return linear(b, tpl, f"{mod}.{tpl.o_proj}", o, cfg.hidden, g)


def _long_rows(b: Builder, pos: int, end: int, old: int, g: str) -> int:
    """The cache rows LongRoPE reads: the positions while the prompt and its cache stay
    within the original context ``old``, else the long table's, ``old`` rows on (as
    transformers switches factors on the sequence's length)."""
    limit = b.const(f"{g}/original_context", old)
    past = b.op("Greater", [end, limit], None, f"{g}/past_original", g, [], "bool")
    shift = b.op("Cast", [past], {"to": 7}, f"{g}/long", g, [], "int64")
    offset = b.op("Mul", [shift, limit], None, f"{g}/offset", g, [], "int64")
    return b.op("Add", [pos, offset], None, f"{g}/rows", g, [1, SEQ], "int64")


def _sliding_mask(b: Builder, window: int, pos: int, end: int, gid: str, parent: str) -> int:
    """Attention's boolean mask [seq, total]: key j is seen from position p when
    p - window < j <= p (transformers' sliding-window causal mask)."""
    g = b.group(gid, "SlidingWindowMask", parent)
    zero, one = b.const(f"{gid}/start", 0), b.const(f"{gid}/step", 1)
    keys = b.op("Range", [zero, end, one], None, f"{gid}/keys", g, [TOTAL], "int64")
    column = b.const(f"{gid}/column", [-1, 1])
    p = b.op("Reshape", [pos, column], None, f"{gid}/queries", g, [SEQ, 1], "int64")
    seen = b.op("LessOrEqual", [keys, p], None, f"{gid}/causal", g, [SEQ, TOTAL], "bool")
    w = b.const(f"{gid}/window", window)
    oldest = b.op("Sub", [p, w], None, f"{gid}/oldest", g, [SEQ, 1], "int64")
    near = b.op("Greater", [keys, oldest], None, f"{gid}/within", g, [SEQ, TOTAL], "bool")
    return b.op("And", [seen, near], None, f"{gid}/mask", g, [SEQ, TOTAL], "bool")


def _head_norm(
    b: Builder, cfg: LlmConfig, tpl: Template, module: str, x: int, heads: int, g: str
) -> int:
    """RMSNorm of each head's features (Qwen3's q_norm and k_norm)."""
    d = cfg.head_dim
    split = b.const(module + "/heads", [0, 0, heads, d])
    joined = b.const(module + "/joined", [0, 0, heads * d])
    x = b.op("Reshape", [x, split], None, module + "/Reshape", g, [1, SEQ, heads, d])
    w = norm_weight(b, tpl, module, g)
    x = b.op(
        "RMSNormalization", [x, w], {"axis": -1, "epsilon": cfg.eps}, module, g, [1, SEQ, heads, d]
    )
    return b.op("Reshape", [x, joined], None, module + "/Reshape", g, [1, SEQ, heads * d])


def _rotate(
    b: Builder,
    cfg: LlmConfig,
    node_id: str,
    x: int,
    heads: int,
    pos: int,
    rope: tuple[int, int, int],
    g: str,
) -> int:
    attrs = {"num_heads": heads}
    if cfg.rotary_dim and cfg.rotary_dim < cfg.head_dim:
        attrs["rotary_embedding_dim"] = cfg.rotary_dim
    return b.op(
        "RotaryEmbedding",
        [x, rope[0], rope[1], pos],
        attrs,
        node_id,
        g,
        [1, SEQ, heads * cfg.head_dim],
    )


def _ffn(b: Builder, cfg: LlmConfig, tpl: Template, layer: str, i: int, x: int, parent: str) -> int:
    """Block ``i``'s feed-forward: the dense MLP, or mixture-of-experts routing (moe)."""
    if tpl.moe is not None and cfg.experts and i not in cfg.dense_layers:
        return moe_block(b, cfg, tpl.moe, tpl, f"{layer}.{tpl.moe.module}", x, parent)
    mod = f"{layer}.{tpl.mlp}"
    if len(tpl.gate_up) == 2:
        return mlp(b, cfg, tpl, mod, x, parent, cfg.intermediate, (*tpl.gate_up, tpl.down))
    g = b.group(mod, "MLP", parent)
    n = cfg.intermediate
    if len(tpl.gate_up) == 1:
        fused = linear(b, tpl, f"{mod}.{tpl.gate_up[0]}", x, 2 * n, g)
        sizes = b.const(f"{mod}/split_sizes", [n, n])
        gate, up = b.ops(
            "Split", [fused, sizes], {"axis": -1}, f"{mod}/Split", g, [[1, SEQ, n], [1, SEQ, n]]
        )
        y = b.op("Mul", [act(b, cfg, mod, gate, g), up], None, f"{mod}/Mul", g, [1, SEQ, n])
    else:
        y = act(b, cfg, mod, linear(b, tpl, f"{mod}.{tpl.up}", x, n, g), g)
    return linear(b, tpl, f"{mod}.{tpl.down}", y, cfg.hidden, g)
