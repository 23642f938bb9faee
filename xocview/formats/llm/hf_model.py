"""A Hugging Face model folder as a format: its ``config.json`` (a folder opens through it,
see ``Source``) with ``model.safetensors`` or a sharded checkpoint's index beside it.

A ``model_type`` with an architecture template opens as the model's forward pass; any other
opens as the checkpoint's tensor tree, the graph's metadata saying why.
"""

from __future__ import annotations

from xocview.errors import FormatError
from xocview.formats.llm.folder import load_folder, not_built, weights_path
from xocview.formats.safetensors import load as load_safetensors
from xocview.formats.source import Source
from xocview.model import Graph

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]

NAME = "Hugging Face model"
EXTENSIONS = (".json",)


def sniff(source: Source) -> str | None:
    """None for a ``config.json`` naming a ``model_type`` with weights beside it."""
    if source.path.name != "config.json":
        return "not a config.json"
    value = source.json
    if not isinstance(value, dict) or not isinstance(value.get("model_type"), str):
        return "a config.json without a model_type"
    if weights_path(source.path.parent) is None:
        return "a config.json without model.safetensors or its index beside it"
    return None


def load(source: Source) -> Graph:
    """The architecture when it has a template, else the checkpoint's tensor tree."""
    graph = load_folder(source.path)
    if graph is not None:
        return graph
    weights = weights_path(source.path.parent)
    if weights is None:
        raise FormatError(source.name, "", "no weights beside it", "model.safetensors")
    tree = load_safetensors(Source(weights))
    tree.metadata["architecture"] = not_built(source.path) or "no template"
    title = source.path.parent.name or tree.name
    tree.id = tree.name = title
    return tree
