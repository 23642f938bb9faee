"""Dense layers of a decoder block: a linear projection and the gated MLP, shared by the
dense blocks and by each expert of a mixture-of-experts block."""

from __future__ import annotations

from xocview.formats.llm.builder import SEQ, Builder
from xocview.formats.llm.config import LlmConfig
from xocview.formats.llm.templates import Template

__all__ = ["act", "linear", "mlp"]


def linear(b: Builder, tpl: Template, module: str, x: int, out: int, parent: str | None) -> int:
    """x @ W^T (+ bias when the file has one); [in, out] weights (Conv1D) need no Transpose."""
    w = b.weight(module + ".weight", parent)
    if not tpl.in_out:
        rows, cols = b.g.tensors[w].shape
        w = b.op("Transpose", [w], {"perm": [1, 0]}, module + "/Transpose", parent, [cols, rows])
    y = b.op("MatMul", [x, w], None, module, parent, [1, SEQ, out])
    if b.has(module + ".bias"):
        bias = b.weight(module + ".bias", parent)
        y = b.op("Add", [y, bias], None, module + "/bias", parent, [1, SEQ, out])
    return y


def mlp(
    b: Builder,
    cfg: LlmConfig,
    tpl: Template,
    mod: str,
    x: int,
    parent: str,
    n: int,
    names: tuple[str, str, str],
    label: str = "MLP",
) -> int:
    """down(act(gate(x)) * up(x)) of width ``n``; ``names`` the gate, up and down modules."""
    g = b.group(mod, label, parent)
    gate = linear(b, tpl, f"{mod}.{names[0]}", x, n, g)
    up = linear(b, tpl, f"{mod}.{names[1]}", x, n, g)
    y = b.op("Mul", [act(b, cfg, mod, gate, g), up], None, f"{mod}/Mul", g, [1, SEQ, n])
    return linear(b, tpl, f"{mod}.{names[2]}", y, cfg.hidden, g)


def act(b: Builder, cfg: LlmConfig, mod: str, x: int, g: str) -> int:
    """SiLU as x * Sigmoid(x); GELU exact or by its tanh approximation."""
    shape = list(b.g.tensors[x].shape)
    if cfg.hidden_act in ("silu", "swish"):
        s = b.op("Sigmoid", [x], None, f"{mod}/act/Sigmoid", g, shape)
        return b.op("Mul", [x, s], None, f"{mod}/act", g, shape)
    approx = "none" if cfg.hidden_act == "gelu" else "tanh"
    return b.op("Gelu", [x], {"approximate": approx}, f"{mod}/act", g, shape)
