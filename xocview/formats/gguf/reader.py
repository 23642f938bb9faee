"""GGUF files (llama.cpp, Ollama, LM Studio) as the model's forward pass when its
``general.architecture`` has a template (``arch.build_architecture``), else as their tensor
tree saying why, read without llama.cpp.

Opening reads only the header through a read-only memory map; each tensor is a lazy weight
whose values (a view for plain types, dequantized float32 for quantized ones) are made when
the inspector or a run asks. The file's own metadata goes into the graph's, its long arrays
(a vocabulary, its merges) summarised by count and first entries.
"""

from __future__ import annotations

import mmap
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from xocview.errors import FormatError, shorten
from xocview.formats.gguf.arch import build_architecture
from xocview.formats.gguf.header import MAGIC, Header, StringArray, TensorInfo, read_header
from xocview.formats.gguf.quants import dequantize
from xocview.formats.llm.config import NotBuilt
from xocview.formats.source import Source
from xocview.formats.weight_tree import Weight, weight_graph
from xocview.model import Graph
from xocview.model.dotted import expand_dotted_if_possible

__all__ = ["EXPANDS_DOTTED_KEYS", "EXTENSIONS", "NAME", "load", "open_gguf", "sniff"]

NAME = "GGUF"
EXTENSIONS = (".gguf",)
EXPANDS_DOTTED_KEYS = True

# magic, version, tensor count, metadata count
_LEAST = 24
# Array entries shown in the graph's metadata; longer arrays show their count and first ones.
_SHOWN = 8
_TEXT_LIMIT = 300
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_XOC_DTYPES = {"F32": "float32", "F16": "float16", "F64": "double"}
_XOC_DTYPES.update({f"I{b}": f"int{b}" for b in (8, 16, 32, 64)})


def sniff(source: Source) -> str | None:
    """None for a file starting with the GGUF magic, else why not."""
    if source.head[:4] == MAGIC:
        return None
    return "does not start with the GGUF magic b'GGUF'"


def load(source: Source) -> Graph:
    """The forward pass of a GGUF file's architecture, or its tensor tree (saying why not),
    with its metadata and a tokenizer summary."""
    header, buf = open_gguf(source.path, source.name)
    stem = source.path.stem or source.path.name
    name = header.metadata.get("general.name")
    title = _text(name) if isinstance(name, str) and name.strip() else stem
    try:
        graph = build_architecture(header, buf, stem, source.name)
    except NotBuilt as e:
        note = f"{e}; opened as its tensor tree"
    else:
        graph.name = title
        graph.metadata.update(_graph_metadata(header, "the architecture's forward pass"))
        return graph
    weights = [_weight(info, header.data_start, buf, source.name) for info in header.tensors]
    return weight_graph(stem, title, weights, _graph_metadata(header, note))


def open_gguf(path: Path, file: str) -> tuple[Header, mmap.mmap]:
    """The header of a GGUF file and the read-only memory map its tensors are read from."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise FormatError(file, "", f"cannot be read ({e.strerror})") from e
    try:
        size = os.fstat(fd).st_size
        if size < _LEAST:
            raise FormatError(
                file, "header", f"{size:,} bytes", "a GGUF header of 24 bytes or more"
            )
        buf = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise FormatError(file, "", f"cannot be mapped ({e.strerror})") from e
    finally:
        os.close(fd)
    return read_header(buf, file), buf


def _weight(info: TensorInfo, start: int, buf: mmap.mmap, file: str) -> Weight:
    kind = info.kind
    meta: dict[str, Any] = {
        "ggml_type": kind.name,
        "bytes": info.nbytes,
        "block_size": kind.block_size,
    }
    if kind.plain is not None:
        dtype = _XOC_DTYPES[kind.name]
    else:
        dtype = "float32"
        if kind.dequant is None:
            meta["values"] = f"not read: {kind.name} is not dequantized by xocview yet"
            return Weight(info.name, info.shape, dtype, None, meta)
    return Weight(info.name, info.shape, dtype, _reader(info, start, buf, file), meta)


def _reader(info: TensorInfo, start: int, buf: mmap.mmap, file: str) -> Callable[[], np.ndarray]:
    """The values of one tensor, read (and dequantized) from the map when called."""

    def read() -> np.ndarray:
        try:
            raw = np.frombuffer(buf, np.uint8, info.nbytes, start + info.offset)
        except ValueError as e:  # the file shrank since it was opened
            raise FormatError(file, f"tensor {shorten(info.name)!r}", "cut short") from e
        if info.kind.plain is not None:
            return raw.view(info.kind.plain).reshape(info.shape)
        return dequantize(info.kind, raw, info.shape)

    return read


def _graph_metadata(header: Header, graph: str) -> dict[str, Any]:
    meta = header.metadata
    types: dict[str, int] = {}
    for t in header.tensors:
        types[t.kind.name] = types.get(t.kind.name, 0) + 1
    arch = meta.get("general.architecture")
    gguf: dict[str, Any] = {
        "version": header.version,
        "alignment": header.alignment,
        "tensor_count": len(header.tensors),
        "tensor_bytes": sum(t.nbytes for t in header.tensors),
        "tensor_types": types,
        "architecture": _text(arch) if isinstance(arch, str) else None,
        "graph": graph,
        "metadata": expand_dotted_if_possible({k: _summary(v) for k, v in meta.items()}),
    }
    out: dict[str, Any] = {"gguf": gguf}
    tokenizer = _tokenizer(meta)
    if tokenizer:
        out["tokenizer"] = tokenizer
    return out


def _tokenizer(meta: dict[str, Any]) -> dict[str, Any]:
    """The tokenizer in a few facts: its model, vocabulary size and special token ids."""
    out: dict[str, Any] = {}
    model = meta.get("tokenizer.ggml.model")
    if isinstance(model, str):
        out["model"] = _text(model)
    pre = meta.get("tokenizer.ggml.pre")
    if isinstance(pre, str):
        out["pre"] = _text(pre)
    tokens = meta.get("tokenizer.ggml.tokens")
    if isinstance(tokens, StringArray):
        out["vocab_size"] = tokens.count
    merges = meta.get("tokenizer.ggml.merges")
    if isinstance(merges, StringArray):
        out["merges"] = merges.count
    for key in ("bos", "eos", "unknown", "padding", "eot"):
        value = meta.get(f"tokenizer.ggml.{key}_token_id")
        if isinstance(value, int) and not isinstance(value, bool):
            out[f"{key}_id"] = value
    return out


def _summary(value: Any) -> Any:
    """A metadata value for the graph: JSON-able, short strings, long arrays summarised."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, float):
        return value if np.isfinite(value) else str(value)
    if isinstance(value, StringArray):
        first = [_text(s) for s in value.first]
        return first if value.count <= _SHOWN else {"count": value.count, "first": first}
    if isinstance(value, np.ndarray):
        first = [_summary(v) for v in value[:_SHOWN].tolist()]
        return first if value.size <= _SHOWN else {"count": int(value.size), "first": first}
    if isinstance(value, list):
        first = [_summary(v) for v in value[:_SHOWN]]
        return first if len(value) <= _SHOWN else {"count": len(value), "first": first}
    return value


def _text(value: str) -> str:
    """A string from the file, control characters escaped and long ones cut."""
    if _CONTROL.search(value):
        value = _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], value)
    return shorten(value, _TEXT_LIMIT)
