"""A mixture-of-experts feed-forward (Mixtral, Qwen-MoE) as standard ONNX operators, its
experts drawn as a group of numbered expert groups.

Routing: softmax over the router's logits, the top-k experts kept (a probability at or above
the k-th largest), optionally rescaled to sum to one. Every expert then runs on every token and
its output is weighted by its routing weight, zero where it was not chosen: the same sum the
sparse dispatch computes, with the experts' cost shown per expert in a run's heat map at
experts/k times the compute. Tied probabilities at the k-th place keep every tied expert.
"""

from __future__ import annotations

from xocview.formats.llm.builder import SEQ, Builder
from xocview.formats.llm.config import LlmConfig
from xocview.formats.llm.dense import linear, mlp
from xocview.formats.llm.templates import Moe, Template

__all__ = ["moe_block"]


def moe_block(
    b: Builder, cfg: LlmConfig, spec: Moe, tpl: Template, mod: str, x: int, parent: str
) -> int:
    """The routed experts' weighted sum (plus the gated shared expert) for stream ``x``."""
    g = b.group(mod, "SparseMoE", parent)
    weights = _routing(b, cfg, spec, tpl, mod, x, g)
    experts = b.group(f"{mod}.experts", "Experts", g)
    stream = [1, SEQ, cfg.hidden]
    outs = []
    names = (*spec.gate_up, spec.down)
    for e in range(cfg.experts):
        eg = f"{mod}.experts.{e}"
        y = mlp(b, cfg, tpl, eg, x, experts, cfg.moe_intermediate, names, "Expert")
        at = [b.const(f"{eg}/{k}", [v]) for k, v in (("start", e), ("end", e + 1), ("axis", -1))]
        w = b.op("Slice", [weights, *at], None, f"{eg}/routing_weight", eg, [1, SEQ, 1])
        outs.append(b.op("Mul", [y, w], None, f"{eg}/weighted", eg, stream))
    total = b.op("Sum", outs, None, f"{mod}.experts/Sum", experts, stream)
    if spec.shared is None or spec.shared_gate is None:
        return total
    shared_names = ("gate_proj", "up_proj", "down_proj")
    s = mlp(b, cfg, tpl, f"{mod}.{spec.shared}", x, g, cfg.shared_intermediate, shared_names)
    gate = linear(b, tpl, f"{mod}.{spec.shared_gate}", x, 1, g)
    gate = b.op("Sigmoid", [gate], None, f"{mod}.{spec.shared_gate}/Sigmoid", g, [1, SEQ, 1])
    s = b.op("Mul", [s, gate], None, f"{mod}.{spec.shared}/gated", g, stream)
    return b.op("Add", [total, s], None, f"{mod}/Add", g, stream)


def _routing(b: Builder, cfg: LlmConfig, spec: Moe, tpl: Template, mod: str, x: int, g: str) -> int:
    """[1, seq, experts]: each expert's weight per token, zero for the experts not chosen."""
    n, k = cfg.experts, cfg.experts_per_tok
    r = f"{mod}.{spec.router}"
    logits = linear(b, tpl, r, x, n, g)
    probs = b.op("Softmax", [logits], {"axis": -1}, f"{r}/Softmax", g, [1, SEQ, n])
    top, _ = b.ops(
        "TopK",
        [probs, b.const(f"{r}/k", [k])],
        {"axis": -1},
        f"{r}/TopK",
        g,
        [[1, SEQ, k], [1, SEQ, k]],
        ["float32", "int64"],
    )
    at = [b.const(f"{r}/{name}", [v]) for name, v in (("kth", k - 1), ("end", k), ("axis", -1))]
    kth = b.op("Slice", [top, *at], None, f"{r}/kth", g, [1, SEQ, 1])
    keep = b.op("GreaterOrEqual", [probs, kth], None, f"{r}/chosen", g, [1, SEQ, n], "bool")
    zero = b.scalar(f"{r}/zero", 0.0)
    w = b.op("Where", [keep, probs, zero], None, f"{r}/routing", g, [1, SEQ, n])
    if not cfg.norm_topk:
        return w
    axes = b.const(f"{r}/axes", [-1])
    total = b.op("ReduceSum", [w, axes], {"keepdims": 1}, f"{r}/ReduceSum", g, [1, SEQ, 1])
    return b.op("Div", [w, total], None, f"{r}/normalised", g, [1, SEQ, n])
