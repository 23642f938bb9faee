"""Feeding a built LLM graph its KV cache: a prompt with the cache empty, then one decoding
step fed the cache the prompt wrote, on the executor or on onnxruntime."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.executor import run
from xocview.model import Graph

__all__ = ["decode_on_executor", "decode_on_onnxruntime", "empty_cache"]

Runner = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


def empty_cache(graph: Graph) -> dict[str, np.ndarray]:
    """Zero-length past keys and values for every layer."""
    out = {}
    for i in graph.inputs:
        t = graph.tensors[i]
        if t.id.startswith("past_key_values."):
            out[t.id] = np.zeros([1, t.shape[1], 0, t.shape[3]], dtype=np.float32)
    return out


def _decode(runner: Runner, graph: Graph, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(logits of the whole prompt at once, logits of its last token decoded on the cache of
    the tokens before it)."""
    whole = runner({"input_ids": ids, **empty_cache(graph)})
    first = runner({"input_ids": ids[:, :-1], **empty_cache(graph)})
    past = {
        name.replace("present.", "past_key_values.", 1): value
        for name, value in first.items()
        if name.startswith("present.")
    }
    assert past and all(v.shape[2] == ids.shape[1] - 1 for v in past.values())
    step = runner({"input_ids": ids[:, -1:], **past})
    assert all(step[n].shape[2] == ids.shape[1] for n in step if n.startswith("present."))
    return whole["logits"], step["logits"]


def decode_on_executor(graph: Graph, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _decode(lambda feeds: run(graph, feeds).outputs, graph, ids)


def decode_on_onnxruntime(
    session: Any, graph: Graph, ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    names = [o.name for o in session.get_outputs()]

    def runner(feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return dict(zip(names, session.run(names, feeds), strict=True))

    return _decode(runner, graph, ids)
