"""A Hugging Face model folder (``config.json`` beside ``model.safetensors`` or a sharded
checkpoint's ``model.safetensors.index.json``) opened as its architecture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.llm.build import build_graph
from xocview.formats.llm.builder import StoredTensor
from xocview.formats.llm.config import NotBuilt
from xocview.formats.llm.hf_config import from_hf
from xocview.formats.llm.templates import TEMPLATES
from xocview.formats.safetensors import load as load_safetensors
from xocview.formats.source import Source
from xocview.model import Graph, Tensor

__all__ = ["WEIGHT_FILES", "config_path", "load_folder", "not_built", "weights_path"]

WEIGHT_FILES = ("model.safetensors.index.json", "model.safetensors")
# vision-language model_types whose text model has a template; their checkpoints name it
# language_model.model.* (the hub's files) or model.language_model.* (transformers' modules)
MULTIMODAL = {"gemma3"}
_TEXT_NAMES = (
    ("language_model.model.", "model."),
    ("model.language_model.", "model."),
    ("language_model.lm_head.", "lm_head."),
)


def config_path(path: str | Path) -> Path | None:
    """The ``config.json`` a folder (or the file itself) names, or None."""
    p = Path(path)
    if p.is_dir():
        p = p / "config.json"
    return p if p.name == "config.json" and p.is_file() else None


def weights_path(folder: Path) -> Path | None:
    """The checkpoint beside a ``config.json``: the shard index first, else the one file."""
    return next((folder / n for n in WEIGHT_FILES if (folder / n).is_file()), None)


def read_config(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise FormatError(str(path), "", f"cannot be read ({e.strerror})") from e
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise FormatError(str(path), "", "not JSON", "a Hugging Face config.json") from e
    if not isinstance(value, dict):
        raise FormatError(str(path), "", "not a JSON object", "a Hugging Face config.json")
    return value


def not_built(path: str | Path) -> str | None:
    """None when ``load_folder`` builds this folder's architecture, else why not (the note
    shown when the caller opens its weights as their tensor tree instead)."""
    cfg_path = config_path(path)
    if cfg_path is None:
        return "no config.json"
    if weights_path(cfg_path.parent) is None:
        return "no model.safetensors or model.safetensors.index.json beside config.json"
    try:
        from_hf(_text_config(read_config(cfg_path)))
    except NotBuilt as e:
        return f"{e}; shown as its tensor tree"
    except FormatError as e:
        return str(e)
    return None


def load_folder(path: str | Path) -> Graph | None:
    """The architecture of a model folder (or its config.json) as a graph; None when its
    model_type or settings have no template (``not_built`` says why)."""
    cfg_path = config_path(path)
    if cfg_path is None:
        raise FormatError(str(path), "", "no config.json", "a Hugging Face model folder")
    folder = cfg_path.parent
    raw = read_config(cfg_path)
    weights_file = weights_path(folder)
    if weights_file is None:
        raise FormatError(str(cfg_path), "", "no weights beside it", " or ".join(WEIGHT_FILES))
    try:
        cfg = from_hf(_text_config(raw))
    except NotBuilt:
        return None
    stored = load_safetensors(Source(weights_file))
    weights = {t.id: _stored(t) for t in stored.tensors}
    left = 0
    if raw.get("model_type") in MULTIMODAL:
        text = _text_weights(weights)
        left, weights = len(weights) - len(text), text
    name = folder.name or "model"
    graph = build_graph(cfg, TEMPLATES[cfg.model_type], weights, name, str(weights_file))
    graph.metadata["source"] = {"config": cfg_path.name, "weights": weights_file.name}
    if left:
        note = (
            f"{raw['model_type']}: the text model is drawn and runs on token ids; the vision "
            f"tower and projector ({left} tensors) are not drawn"
        )
        graph.metadata["notes"] = [*graph.metadata.get("notes", []), note]
    return graph


def _text_config(raw: dict[str, Any]) -> dict[str, Any]:
    """The config to build: a vision-language model's ``text_config`` (it ties the text
    model's head to its embedding as the outer config says), else the config itself."""
    text = raw.get("text_config")
    if raw.get("model_type") not in MULTIMODAL or not isinstance(text, dict):
        return raw
    return {"tie_word_embeddings": raw.get("tie_word_embeddings", True)} | text


def _text_weights(weights: dict[str, StoredTensor]) -> dict[str, StoredTensor]:
    """The text model's tensors under the names a causal LM's checkpoint gives them."""
    out = {}
    for name, w in weights.items():
        for old, new in _TEXT_NAMES:
            if name.startswith(old):
                out[new + name[len(old) :]] = w
                break
    return out


def _stored(t: Tensor) -> StoredTensor:
    def read() -> np.ndarray:
        values = t.data
        if values is None:
            raise FormatError(t.id, "values", "not in the file")
        return values

    return list(t.shape), t.dtype, read
