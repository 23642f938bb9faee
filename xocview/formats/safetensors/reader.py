"""safetensors weights, one file or a sharded checkpoint's ``*.safetensors.index.json``, as a
module tree (``weight_tree``): Hugging Face's default format holds weights and no graph."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xocview.errors import FormatError, shorten
from xocview.formats.safe_paths import path_inside
from xocview.formats.safetensors.header import MAX_HEADER, header_length, read_weights
from xocview.formats.source import Source
from xocview.formats.weight_tree import Weight, weight_graph
from xocview.model import Graph
from xocview.model.dotted import expand_dotted_if_possible

__all__ = ["EXPANDS_DOTTED_KEYS", "EXTENSIONS", "NAME", "load", "sniff"]

NAME = "safetensors"
EXTENSIONS = (".safetensors", ".json")
# Only the graph's metadata (the file's own keys) can hold dotted keys; load expands them.
EXPANDS_DOTTED_KEYS = True


def sniff(source: Source) -> str | None:
    """None for a safetensors file or a sharded checkpoint's index, else why not."""
    head = source.head
    if source.looks_like_json():
        if not source.path.name.endswith(".json"):
            return "a JSON file, not a safetensors header"
        value = source.json
        if isinstance(value, dict) and isinstance(value.get("weight_map"), dict):
            return None
        return "a JSON file without a weight_map (not a sharded checkpoint's index)"
    n = header_length(head)
    if n is None:
        return "shorter than a safetensors header"
    if source.path.suffix.lower() == ".safetensors" and head[8:9] == b"{":
        return None  # load() names what is wrong with a damaged header
    if n > MAX_HEADER or 8 + n > source.size or head[8:9] != b"{":
        return "does not start with a safetensors header length and JSON header"
    return None


def load(source: Source) -> Graph:
    """The module tree of the file's tensors (of every shard, for an index)."""
    stem = _stem(source.path)
    if source.looks_like_json():
        weights, metadata = _sharded(source)
    else:
        weights, header_meta = read_weights(source.path, source.name)
        metadata = {"safetensors": {"metadata": header_meta}} if header_meta else {}
    return weight_graph(stem, stem, weights, expand_dotted_if_possible(metadata))


def _sharded(source: Source) -> tuple[list[Weight], dict[str, Any]]:
    """Every tensor of the shards an index names, each shard's header read once; tensors
    the index maps to a shard must be in that shard."""
    index = source.json
    weight_map = index["weight_map"]
    shards: dict[str, list[str]] = {}
    for name, shard in weight_map.items():
        if not isinstance(shard, str):
            raise FormatError(
                source.name, f"weight_map.{shorten(name)}", "not a file name", "a shard's name"
            )
        shards.setdefault(shard, []).append(name)
    weights: list[Weight] = []
    shard_meta: dict[str, Any] = {}
    for shard, names in shards.items():
        place = f"weight_map.{shorten(names[0])}"
        path = path_inside(shard, source.path.parent, source.name, place)
        found, meta = read_weights(path, str(source.path.parent / shard), shard)
        if meta:
            shard_meta = meta
        have = {w.name for w in found}
        missing = [n for n in names if n not in have]
        if missing:
            raise FormatError(
                source.name,
                f"weight_map.{shorten(missing[0])}",
                f"not in {shorten(shard)} ({len(missing):,} tensors missing)",
                "every mapped tensor in its shard",
            )
        weights.extend(found)
    metadata: dict[str, Any] = {"shards": len(shards)}
    extra = index.get("metadata")
    if isinstance(extra, dict):
        metadata["index"] = {str(k): v for k, v in extra.items() if _plain(v)}
    if shard_meta:
        metadata["metadata"] = shard_meta
    return weights, {"safetensors": metadata}


def _plain(value: object) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _stem(path: Path) -> str:
    name = path.name
    for suffix in (".safetensors.index.json", ".index.json", ".safetensors", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)] or name
    return path.stem or name
