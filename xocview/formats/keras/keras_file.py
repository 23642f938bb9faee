"""Keras model files read without TensorFlow or Keras: the format contract.

A Keras 3 ``.keras`` file is a zip of ``config.json`` (the model config), ``metadata.json``
and ``model.weights.h5``. The weights member is opened with h5py in place: when it is stored
uncompressed (as Keras writes it) h5py reads a file-like view of the archive's memory map, so
only the weights used are read; a deflated member (another zip tool) is inflated to memory,
up to ``INFLATE_LIMIT``. A legacy ``.h5`` file is one HDF5 file whose ``model_config``
attribute holds the config and whose ``model_weights`` group the weights.
"""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

from xocview.errors import FormatError
from xocview.formats.keras import npz_weights
from xocview.formats.keras.archive import INFLATE_LIMIT, Archive, open_h5
from xocview.formats.keras.h5_guard import read_attr
from xocview.formats.keras.keras_graph import MODELS, Builder, Scope
from xocview.formats.keras.weights import H5_ERRORS, Weights
from xocview.formats.source import Source
from xocview.model import Graph
from xocview.model.edits.reinfer import infer_undeclared

__all__ = ["EXTENSIONS", "NAME", "load", "sniff"]

NAME = "Keras"
EXTENSIONS = (".keras", ".h5", ".hdf5")

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
_CONFIG, _WEIGHTS = "config.json", "model.weights.h5"
ONNX_OPSET = 20  # Gelu (20), LayerNormalization (17), ReduceMean with axes as input (18)


def sniff(source: Source) -> str | None:
    """None for a Keras file, else why not. A ``.keras`` zip without a readable directory is
    taken, so that ``load`` says what is wrong with it."""
    head = source.head
    if head.startswith(HDF5_MAGIC):
        try:
            with open_h5(source.path, source.name) as h5:
                if "model_config" in h5.attrs:
                    return None
        except (FormatError, *H5_ERRORS):
            return None if source.path.suffix.lower() in (".h5", ".hdf5") else "a damaged HDF5 file"
        return "an HDF5 file without a model_config attribute (weights only, not a Keras model)"
    if head[:4] != b"PK\x03\x04":
        return "neither a zip archive nor an HDF5 file"
    try:
        with zipfile.ZipFile(source.path) as z:
            names = set(z.namelist())
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return None if source.path.suffix.lower() == ".keras" else "a damaged zip archive"
    weights = _WEIGHTS in names or npz_weights.MEMBER in names
    if _CONFIG in names and (weights or source.path.suffix.lower() == ".keras"):
        return None
    return "a zip archive without config.json and model.weights.h5 (not a .keras file)"


def load(source: Source) -> Graph:
    """The layer graph of the model, its weights read on first use."""
    if source.head.startswith(HDF5_MAGIC):
        h5 = open_h5(source.path, source.name)
        try:
            raw = read_attr(source.path, "model_config", source.name)
        except H5_ERRORS as e:
            raise FormatError(source.name, "model_config", f"cannot be read ({e})") from e
        if raw is None:
            raise FormatError(source.name, "model_config", "is missing", "a Keras model config")
        doc = _json(raw, f"{source.name}: model_config")
        return _graph(doc, f"{source.name}: model_config", Weights(h5, source.name, True), source)
    archive = Archive(source.path, source.name)
    doc = _json(archive.read(_CONFIG), f"{source.name}: {_CONFIG}")
    if archive.has(_WEIGHTS):
        weights = Weights(archive.h5(_WEIGHTS), f"{source.name}: {_WEIGHTS}", False)
    elif archive.has(npz_weights.MEMBER):  # save_model(weights_format="npz"): pickled
        name = f"{source.name}: {npz_weights.MEMBER}"
        raw = archive.read(npz_weights.MEMBER, INFLATE_LIMIT)
        tree = npz_weights.read_tree(io.BytesIO(raw), name)
        weights = Weights(tree, name, False)
    else:
        raise FormatError(source.name, _WEIGHTS, "is missing from the archive", "the weights")
    return _graph(doc, f"{source.name}: {_CONFIG}", weights, source)


def _json(raw: Any, file: str) -> Any:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    try:
        return json.loads(str(raw))
    except json.JSONDecodeError as e:
        raise FormatError(
            file, f"line {e.lineno} column {e.colno}", f"is not JSON ({e.msg})"
        ) from e
    except RecursionError as e:
        raise FormatError(file, "", "nests too deeply", "a model config") from e


def _graph(doc: Any, file: str, weights: Weights, source: Source) -> Graph:
    """The graph; built twice when a lowering had to work out a rank at run time (tf.keras 2
    records no shapes), the second time with the shapes inferred on the first."""
    if not isinstance(doc, dict) or doc.get("class_name") not in MODELS:
        got = doc.get("class_name") if isinstance(doc, dict) else type(doc).__name__
        raise FormatError(file, "class_name", f"is {got!r}", "Functional or Sequential")
    graph, by_rank = _build(doc, file, weights, source, {})
    if by_rank:
        hints = {t.id: t.shape for t in graph.tensors if not t.metadata.get("rank_unknown")}
        graph, _ = _build(doc, file, weights, source, hints)
    return graph


def _build(
    doc: dict, file: str, weights: Weights, source: Source, hints: dict[str, list[int]]
) -> tuple[Graph, bool]:
    b = Builder(file, weights, hints)
    outputs = b.model(
        doc, "", Scope("", None, "", None, doc.get("class_name") == "Sequential"), None
    )
    title = source.path.stem or source.path.name
    raw = doc.get("config")
    cfg: dict[str, Any] = raw if isinstance(raw, dict) else {}
    keras: dict[str, Any] = {"class_name": doc["class_name"]}
    if isinstance(cfg.get("name"), str):
        keras["name"] = cfg["name"]
    if b.not_mapped:
        keras["not_mapped"] = sorted(b.not_mapped)
    metadata = {"opset_import": [{"domain": "", "version": ONNX_OPSET}], "keras": keras}
    graph = Graph(title, title, b.tensors, b.nodes, list(b.inputs), [], metadata)
    for t in outputs:
        if b.tensors[t].kind == "activation":
            b.tensors[t].kind = "output"
        graph.outputs.append(t)
    graph.invalidate()
    infer_undeclared(graph)
    return graph, b.by_rank
