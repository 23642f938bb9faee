"""A decoder-only LLM's forward pass as a graph of standard ONNX operators (opset 23), built
from its ``LlmConfig`` and its architecture's ``Template``, every weight bound to its stored
tensor by name.

Input ``input_ids`` (int64 [1, seq]) -> Gather of the embedding -> one group per decoder
block (the model's own module, ``model.layers.{i}``) -> final norm -> ``logits``. Weights
keep Hugging Face's [out, in] layout and are read through a Transpose the executor folds once,
so the graph names the tensors the file holds and opening reads none of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from xocview.formats.llm.blocks import decoder_block
from xocview.formats.llm.builder import SEQ, Builder, StoredTensor, norm
from xocview.formats.llm.config import LlmConfig
from xocview.formats.llm.templates import Template
from xocview.model import Graph, Node

__all__ = ["OPSET", "build_graph"]

OPSET = 23


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
    graph = Graph(name, name, metadata=meta)
    b = Builder(graph, weights, file)
    ids = b.tensor("input_ids", [1, SEQ], "int64", "input")
    graph.inputs.append(ids)
    h = b.op(
        "Gather",
        [b.weight(tpl.embed + ".weight", None), ids],
        {"axis": 0},
        tpl.embed,
        None,
        [1, SEQ, cfg.hidden],
    )
    pos = _positions(b, ids)
    rope = _rope_caches(b, cfg) if cfg.rope_kind == "default" else None
    if tpl.positions is not None:
        p = b.op(
            "Gather",
            [b.weight(tpl.positions + ".weight", None), pos],
            {"axis": 0},
            tpl.positions,
            None,
            [1, SEQ, cfg.hidden],
        )
        h = b.op("Add", [h, p], None, "embeddings/Add", None, [1, SEQ, cfg.hidden])
    for i in range(cfg.layers):
        h = decoder_block(b, cfg, tpl, i, h, pos, rope)
    h = norm(b, cfg, tpl, tpl.final_norm, h, None)
    head = tpl.lm_head if b.has(tpl.lm_head + ".weight") else tpl.embed
    w = b.weight(head + ".weight", None)
    if not tpl.in_out or head == tpl.embed:
        w = b.op(
            "Transpose", [w], {"perm": [1, 0]}, head + "/Transpose", None, [cfg.hidden, cfg.vocab]
        )
    out = b.tensor("logits", [1, SEQ, cfg.vocab], "float32", "output")
    graph.nodes.append(Node(b.unique(tpl.lm_head), "MatMul", [h, w], [out], {}, {}))
    graph.outputs.append(out)
    b.finish()
    return graph


def _positions(b: Builder, ids: int) -> int:
    """position_ids [1, seq] = Range(0, seq) computed from the prompt's length."""
    shape = b.op("Shape", [ids], None, "positions/Shape", None, [2], "int64")
    n = b.op(
        "Gather",
        [shape, b.const("positions/axis", 1)],
        {"axis": 0},
        "positions/Gather",
        None,
        [],
        "int64",
    )
    zero, one = b.const("positions/start", 0), b.const("positions/step", 1)
    r = b.op("Range", [zero, n, one], None, "positions/Range", None, [SEQ], "int64")
    return b.op(
        "Unsqueeze",
        [r, b.const("positions/axes", [0])],
        None,
        "position_ids",
        None,
        [1, SEQ],
        "int64",
    )


def _rope_caches(b: Builder, cfg: LlmConfig) -> tuple[int, int]:
    """cos and sin of every position's angles, computed on first use as transformers does
    (float32 inverse frequencies from rope theta)."""
    rot = cfg.rotary_dim or cfg.head_dim
    shape = [cfg.max_positions, rot // 2]

    def angles() -> np.ndarray:
        exponent = np.arange(0, rot, 2, dtype=np.int64).astype(np.float32) / np.float32(rot)
        inv = np.float32(1.0) / (np.float32(cfg.rope_theta) ** exponent)
        return np.arange(cfg.max_positions, dtype=np.float32)[:, None] * inv[None, :]

    cos = b.tensor(
        "rotary_emb.cos_cache",
        shape,
        "float32",
        "weight",
        lambda: np.cos(angles()).astype(np.float32),
    )
    sin = b.tensor(
        "rotary_emb.sin_cache",
        shape,
        "float32",
        "weight",
        lambda: np.sin(angles()).astype(np.float32),
    )
    return cos, sin
