"""A GGUF file whose ``general.architecture`` has a template, opened as the model's forward
pass: its metadata read into an ``LlmConfig``, its tensors bound by the template's names and
read lazily from the memory map (quantized ones dequantized to float32 when a run or the
inspector asks, so the executor's budget check sees their float32 size before any is made).
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.errors import FormatError, shorten
from xocview.formats.gguf.blockwise import EXACT, blockwise
from xocview.formats.gguf.header import Header, TensorInfo
from xocview.formats.gguf.quants import dequantize
from xocview.formats.llm.build import build_graph
from xocview.formats.llm.builder import StoredTensor
from xocview.formats.llm.config import NotBuilt
from xocview.formats.llm.gguf_config import from_gguf
from xocview.formats.llm.gguf_names import Mapped, gguf_template, hf_names, unpermute
from xocview.model import Graph

__all__ = ["build_architecture"]

_PLAIN = {"F32": "float32", "F16": "float16"}


def build_architecture(header: Header, buf: mmap.mmap, name: str, file: str) -> Graph:
    """The forward pass of the file's architecture; NotBuilt says why there is none (no
    template, a setting or tensor the template does not draw, a type not dequantized)."""
    infos = {t.name: t for t in header.tensors}
    cfg = from_gguf(header.metadata, {n: t.shape for n, t in infos.items()})
    tpl = gguf_template(cfg)
    mapped = hf_names(cfg, tpl, ((t.name, t.shape) for t in header.tensors))
    weights: dict[str, StoredTensor] = {}
    for hf, m in mapped.items():
        info = infos[m.name]
        if info.kind.plain is None and info.kind.dequant is None:
            raise NotBuilt(f"tensor {m.name!r} is {info.kind.name}, not dequantized by xocview")
        weights[hf] = _stored(info, m, header.data_start, buf, file)
    try:
        graph = build_graph(cfg, tpl, weights, name, file)
    except FormatError as e:  # a tensor the metadata implies is missing
        raise NotBuilt(str(e)) from e
    for t in graph.tensors:
        place = mapped.get(t.id) if t.kind == "weight" else None
        if place is not None:
            t.metadata.update(_weight_meta(infos[place.name], place))
    start = header.data_start
    exact = {
        hf: (infos[m.name], m, raw_bytes(infos[m.name], m, start, buf, file))
        for hf, m in mapped.items()
        if infos[m.name].kind.name in EXACT
    }
    blockwise(graph, exact)
    return graph


def weight_shape(info: TensorInfo, m: Mapped) -> tuple[int, ...]:
    if m.shape is not None:
        return m.shape
    return info.shape[1:] if m.expert is not None else info.shape


def raw_bytes(
    info: TensorInfo, m: Mapped, start: int, buf: mmap.mmap, file: str
) -> Callable[[], np.ndarray]:
    """A reader of one template weight's bytes in the map (one expert's slice of a stacked
    tensor: experts are the outermost axis, so each is a contiguous run of whole blocks)."""
    count = info.nbytes // info.shape[0] if m.expert is not None else info.nbytes
    at = start + info.offset + (m.expert or 0) * count

    def read() -> np.ndarray:
        try:
            return np.frombuffer(buf, np.uint8, count, at)
        except ValueError as e:  # the file shrank since it was opened
            raise FormatError(file, f"tensor {shorten(info.name)!r}", "cut short") from e

    return read


def _stored(info: TensorInfo, m: Mapped, start: int, buf: mmap.mmap, file: str) -> StoredTensor:
    """One template weight: its shape, dtype and a reader of its values from the map (q and
    k rows back in Hugging Face's order)."""
    shape = weight_shape(info, m)
    kind = info.kind
    dtype = _PLAIN.get(kind.name, "float32")
    raw = raw_bytes(info, m, start, buf, file)

    def read() -> np.ndarray:
        if kind.plain is not None:
            values = raw().view(kind.plain).reshape(shape)
            if values.dtype.name != dtype:
                values = values.astype(np.float32)
        else:
            values = dequantize(kind, raw(), shape)
        return unpermute(values, m.heads) if m.heads else values

    return list(shape), dtype, read


def _weight_meta(info: TensorInfo, m: Mapped) -> dict[str, Any]:
    """What the inspector shows of a bound weight: its GGUF tensor and how it is read."""
    meta: dict[str, Any] = {"gguf_tensor": info.name, "ggml_type": info.kind.name}
    if m.expert is not None:
        meta["expert"] = m.expert
    if m.heads:
        meta["rows"] = f"un-permuted from llama.cpp's rotary layout ({m.heads} heads)"
    if info.kind.plain is None:
        meta["values"] = (
            f"{info.kind.name} blocks dequantized to float32 on demand when read "
            "(not drawn as DequantizeLinear)"
        )
    return meta
