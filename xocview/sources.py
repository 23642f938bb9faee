"""What ``xocview.load`` takes, read into the shared graph: a path (a file or a model folder),
the bytes of a file, an ``onnx.ModelProto``, a ``Graph``, and where torch is installed an
``nn.Module`` with ``args=``, a ``torch.export.ExportedProgram`` or a
``torch.onnx.ONNXProgram``. Each goes through the reader the CLI uses (bytes from memory where
that reader can, else through a temporary folder removed after); torch is looked up in
``sys.modules`` and never imported here."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xocview.errors import ApiError, FormatError, XocviewError, shorten
from xocview.formats import lightnet, nnvm, registry, xoc
from xocview.formats import onnx as onnx_format
from xocview.formats.profiles.result import source_name
from xocview.formats.source import Source
from xocview.model import Graph

__all__ = ["ACCEPTED", "is_model_proto", "load_source", "type_name"]

ACCEPTED = (
    "a path, bytes, an onnx.ModelProto, an xocview Graph, or (with torch) an nn.Module with "
    "args=, a torch.export.ExportedProgram or a torch.onnx.ONNXProgram"
)
# Formats whose readers take the file's bytes alone: bytes in these formats never touch the
# disk. The others open the file themselves (zip archives, memory-mapped weights).
_READ_FROM_MEMORY = (xoc, nnvm, lightnet, onnx_format)


def type_name(value: object) -> str:
    cls = type(value)
    module = cls.__module__
    return cls.__qualname__ if module == "builtins" else f"{module}.{cls.__qualname__}"


def is_model_proto(value: object) -> bool:
    onnx = sys.modules.get("onnx")
    return onnx is not None and isinstance(value, onnx.ModelProto)


def _is_torch_module(value: object) -> bool:
    torch = sys.modules.get("torch")  # an object of torch's means torch is imported already
    return torch is not None and isinstance(value, torch.nn.Module)


def _load_model_proto(model: Any, name: str | None) -> Graph:
    """An ``onnx.ModelProto`` through the ONNX reader, from memory: the reader's parse step is
    given the model itself (relative external data is looked for in the current folder)."""
    label = f"<onnx.ModelProto '{model.graph.name}'>" if model.graph.name else "<onnx.ModelProto>"
    try:
        data = model.SerializeToString()
    except ValueError as e:  # over protobuf's 2 GiB
        raise ApiError(
            f"{label}: cannot be serialized ({e}); save it with external data "
            "(onnx.save_model(..., save_as_external_data=True)) and load the path"
        ) from e
    source = Source.in_memory(data, f"{name or 'model'}.onnx", label)
    source._onnx_model = model  # type: ignore[attr-defined]  # what reader._parse looks for
    return registry.load_source(source)[0]


def _load_bytes(data: bytes, name: str | None) -> Graph:
    """A file's bytes: read from memory when the format allows, else from a temporary file
    that is removed before returning (its weights read first)."""
    label = "<bytes>"
    source = Source.in_memory(data, name or "bytes", label)
    try:
        fmt = registry.detect(source)
    except FormatError:
        fmt = None  # a zip or a mapped format is told from a real file; so is the error
    if fmt in _READ_FROM_MEMORY:
        return registry.load_source(source)[0]
    return _via_temp_file(lambda path: path.write_bytes(data), name or "bytes", "", label)


def _via_temp_file(write: Callable[[Path], object], stem: str, suffix: str, label: str) -> Graph:
    """Load what ``write`` puts into a fresh temporary folder, naming it ``label`` in errors.

    Lazily read weights are read (or memory-mapped) before the folder is removed; on a system
    that cannot remove a mapped file it is left to the system's temporary-file cleaning."""
    folder = Path(tempfile.mkdtemp(prefix="xocview-"))
    path = folder / (source_name(stem) + suffix)
    try:
        write(path)
        try:
            graph = registry.load(path)
        except XocviewError as e:
            _rename_file(e, str(path), label)
            raise
        for tensor in graph.tensors:
            if tensor.has_data:
                _ = tensor.data
        return graph
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _rename_file(error: XocviewError, temp: str, label: str) -> None:
    """Replace a temporary file's path by what the caller passed, in ``error``'s message."""
    error.args = tuple(a.replace(temp, label) if isinstance(a, str) else a for a in error.args)
    if isinstance(error, FormatError):
        error.file = error.file.replace(temp, label)


def _load_torch(source: object, args: object, name: str | None) -> Graph:
    """A torch object through ``torch.export`` and the ``.pt2`` reader, or a torch.onnx
    program through the ONNX reader; ApiError for anything else."""
    torch = sys.modules.get("torch")
    if torch is None:
        raise ApiError(f"xocview.load cannot read {type_name(source)}; it takes {ACCEPTED}")
    if isinstance(source, torch.nn.Module):
        if args is None:
            raise ApiError(
                f"{type_name(source)}: a torch.nn.Module needs args= (a tuple of example "
                "inputs) for torch.export.export"
            )
        example = args if isinstance(args, tuple) else (args,)
        try:
            program = torch.export.export(source, example)
        except Exception as e:  # torch's own errors are many; the caller gets one line
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            raise ApiError(
                f"{type_name(source)}: torch.export.export failed: {type(e).__name__}: "
                f"{shorten(first, 200)}"
            ) from e
        return _load_exported(torch, program, name or type(source).__name__)
    if isinstance(source, torch.export.ExportedProgram):
        return _load_exported(torch, source, name or "exported_program")
    torch_onnx = sys.modules.get("torch.onnx")
    program_type = getattr(torch_onnx, "ONNXProgram", None)
    if program_type is not None and isinstance(source, program_type):
        return _load_model_proto(source.model_proto, name)
    raise ApiError(f"xocview.load cannot read {type_name(source)}; it takes {ACCEPTED}")


def _load_exported(torch: Any, program: Any, title: str) -> Graph:
    """An ExportedProgram as the ``.pt2`` reader reads it: saved by ``torch.export.save``
    into a temporary archive (the reader maps the archive's members; it reads no memory)."""
    return _via_temp_file(
        lambda path: torch.export.save(program, path), title, ".pt2", "<ExportedProgram>"
    )


def load_source(source: object, *, args: object = None, name: str | None = None) -> Graph:
    """The graph of ``source`` (see the module docstring for what it may be).

    ``args`` are the example inputs ``torch.export.export`` traces an ``nn.Module`` with (a
    tuple, or one tensor); ``name``, when given, becomes the graph's name (a ``Graph`` passed
    in is returned as it is). Raises the reader's FormatError, or ApiError for a type no
    reader takes.
    """
    if isinstance(source, Graph):
        return source
    if args is not None and not _is_torch_module(source):
        raise ApiError(f"args= is for a torch.nn.Module; got it with {type_name(source)}")
    if isinstance(source, (str, os.PathLike)):
        graph = registry.load(os.fspath(source))
    elif isinstance(source, (bytes, bytearray, memoryview)):
        graph = _load_bytes(bytes(source), name)
    elif is_model_proto(source):
        graph = _load_model_proto(source, name)
    else:
        graph = _load_torch(source, args, name)
    if name is not None:
        graph.name = name
    return graph
