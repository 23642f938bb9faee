"""TFLite / LiteRT models (``.tflite``) read without TensorFlow: the format contract.

The file is one flatbuffer (file identifier ``TFL3`` at bytes 4..8), read in place from a
read-only memory map with the LiteRT schema's generated readers (the ``tflite`` package).
Subgraph 0 is the graph; the others (WHILE/IF/CALL_ONCE bodies) are listed in its metadata.
Weights stay in the map until a value is asked for, so a model of gigabytes opens at once.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

import tflite
from tflite.utils import BUILTIN_OPCODE2NAME

from xocview.errors import FormatError
from xocview.formats.source import Source
from xocview.formats.tflite.control import Control
from xocview.formats.tflite.flat import Flat
from xocview.formats.tflite.subgraph import build_graph, subgraph_summary
from xocview.model import Graph
from xocview.model.bodies import mark_body_inputs
from xocview.model.unread import drop_unread_weights

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]

NAME = "TFLite"
EXTENSIONS = (".tflite", ".lite")

_IDENT = b"TFL3"
_CUSTOM = 32


def sniff(source: Source) -> str | None:
    """None for a TFLite flatbuffer (or a damaged one named ``.tflite``), else why not."""
    head = source.head
    if head[4:8] == _IDENT:
        return None
    if source.path.suffix.lower() == ".tflite":
        return None
    return "no TFL3 file identifier at bytes 4..8"


def load(source: Source) -> Graph:
    """The model's main subgraph as the graph; weights memory-mapped."""
    try:
        with open(source.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 8:
                raise FormatError(source.name, "header", f"{size} bytes", "a TFLite flatbuffer")
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            fd = os.dup(f.fileno())  # for the vector lengths, read beside the map (see Flat)
    except OSError as e:
        raise FormatError(source.name, "", f"cannot be read ({e.strerror})") from e
    try:
        return _read(Flat(buf, source.name, fd), buf, source)
    finally:
        os.close(fd)


def _read(flat: Flat, buf: mmap.mmap, source: Source) -> Graph:
    if buf[4:8] != _IDENT:
        raise flat.error("header", "no TFL3 file identifier at bytes 4..8", "a TFLite flatbuffer")
    model = flat.get("root", lambda: tflite.Model.GetRootAs(buf, 0))
    codes = _operator_codes(flat, model)
    nsub = flat.count("subgraphs", model.SubgraphsLength)
    if nsub == 0:
        raise flat.error("subgraphs", "the model has no subgraph", "at least one")
    nbuffers = flat.count("buffers", model.BuffersLength)
    title = source.path.stem or source.path.name
    control = Control(flat, model, codes, nbuffers, nsub)
    graph = build_graph(flat, model, 0, codes, nbuffers, title, control)
    meta: dict[str, Any] = {"opset_import": [{"domain": "", "version": 20}]}
    info: dict[str, Any] = {"version": flat.get("version", model.Version)}
    description = flat.text("description", model.Description)
    if description:
        info["description"] = description
    if nsub > 1:
        info["subgraphs"] = [subgraph_summary(flat, model, k, codes) for k in range(1, nsub)]
    files = _metadata(flat, model, nbuffers)
    if files:
        info["metadata"] = files
    signatures = _signatures(flat, model)
    if signatures:
        info["signature_defs"] = signatures
    meta["tflite"] = info
    graph.metadata = {**meta, **graph.metadata}
    drop_unread_weights(graph)  # constant operands the mappings took into attributes
    mark_body_inputs(graph)  # Loop and If body inputs, as ONNX bodies have them
    return graph


def _operator_codes(flat: Flat, model: Any) -> list[tuple[str, bool]]:
    """(name, is_custom) per operator code: builtins by name, custom ops by their code."""
    out = []
    for k in range(flat.count("operator_codes", model.OperatorCodesLength)):
        place = f"operator_codes[{k}]"
        oc = flat.item(place, model.OperatorCodes, k)
        code = max(flat.get(place, oc.DeprecatedBuiltinCode), flat.get(place, oc.BuiltinCode))
        if code == _CUSTOM:
            out.append((flat.text(f"{place}.custom_code", oc.CustomCode) or "CUSTOM", True))
        else:
            out.append((BUILTIN_OPCODE2NAME.get(code, f"BUILTIN_{code}"), False))
    return out


def _metadata(flat: Flat, model: Any, nbuffers: int) -> dict[str, str]:
    """Metadata entries by name: short UTF-8 text as is, else its size."""
    from xocview.formats.tflite.tensors import buffer_span

    out: dict[str, str] = {}
    for k in range(flat.count("metadata", model.MetadataLength)):
        place = f"metadata[{k}]"
        entry = flat.item(place, model.Metadata, k)
        name = flat.text(f"{place}.name", entry.Name) or f"metadata_{k}"
        start, size = buffer_span(flat, model, flat.get(place, entry.Buffer), nbuffers, place)
        raw = bytes(flat.buf[start : start + min(size, 256)])
        try:
            text = raw.decode("utf-8").rstrip("\0")
            printable = size <= 256 and text.isprintable()
        except UnicodeDecodeError:
            printable = False
        out[name] = text if printable else f"{size} bytes"
    return out


def _signatures(flat: Flat, model: Any) -> list[dict[str, Any]]:
    out = []
    for k in range(flat.count("signature_defs", model.SignatureDefsLength)):
        place = f"signature_defs[{k}]"
        sig = flat.item(place, model.SignatureDefs, k)
        entry: dict[str, Any] = {"key": flat.text(f"{place}.signature_key", sig.SignatureKey)}
        entry["subgraph_index"] = flat.get(place, sig.SubgraphIndex)
        for side, length, get in (
            ("inputs", sig.InputsLength, sig.Inputs),
            ("outputs", sig.OutputsLength, sig.Outputs),
        ):
            maps = []
            for j in range(flat.count(f"{place}.{side}", length)):
                m = flat.item(f"{place}.{side}[{j}]", get, j)
                name = flat.text(f"{place}.{side}[{j}].name", m.Name)
                maps.append({"name": name, "tensor_index": flat.get(place, m.TensorIndex)})
            entry[side] = maps
        out.append(entry)
    return out
