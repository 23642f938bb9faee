"""One safetensors file's header: the tensors' names, dtypes, shapes and byte ranges.

The format (Hugging Face's default weights file) is an 8-byte little-endian header length, a
JSON header, then the tensors' bytes. Only the header is read on opening; each tensor's values
are a view of one read-only memory map of the file, made on first use, so a 5 GB shard opens
in the time it takes to parse a few kilobytes of JSON.
"""

from __future__ import annotations

import json
import math
import mmap
import os
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from xocview.errors import FormatError, shorten
from xocview.formats.source import read_head
from xocview.formats.weight_tree import Weight
from xocview.model.dtypes import DTYPES, numpy_type

__all__ = ["MAX_HEADER", "header_length", "read_weights"]

# safetensors' own reader refuses headers over 100 MB; the largest real ones are a few MB.
MAX_HEADER = 100_000_000

# safetensors dtype -> XOC dtype name
_DTYPES = {
    "F64": "double",
    "F32": "float32",
    "F16": "float16",
    "BF16": "bfloat16",
    "F8_E4M3": "float8e4m3fn",
    "F8_E5M2": "float8e5m2",
    "F8_E8M0": "float8e8m0",
    "F4": "float4e2m1",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U64": "uint64",
    "U32": "uint32",
    "U16": "uint16",
    "U8": "uint8",
    "BOOL": "bool",
    "C64": "complex64",
}


def header_length(head: bytes) -> int | None:
    """The header length a file's first 8 bytes give, or None when fewer than 8 bytes."""
    if len(head) < 8:
        return None
    value: int = struct.unpack_from("<Q", head)[0]
    return value


def read_weights(path: Path, file: str, tag: str | None = None) -> tuple[list[Weight], dict]:
    """The tensors of one safetensors file (lazy values) and its ``__metadata__``.

    ``tag`` (a shard's file name) goes into each tensor's metadata. Raises FormatError naming
    the tensor and the field for a header that does not describe the file."""
    head, size = read_head(path, file, 8)
    n = header_length(head)
    if n is None:
        raise FormatError(file, "header length", "file shorter than 8 bytes", "a safetensors file")
    if n > MAX_HEADER or 8 + n > size:
        raise FormatError(
            file,
            "header length",
            f"{n:,} bytes in a file of {size:,}",
            f"a header under {MAX_HEADER:,} bytes that fits in the file",
        )
    with open(path, "rb") as f:
        f.seek(8)
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise FormatError(file, "header", f"not UTF-8 (byte {e.start})", "a JSON object") from e
    except json.JSONDecodeError as e:
        raise FormatError(file, "header", f"not JSON ({e})", "a JSON object") from e
    except ValueError as e:  # an integer past Python's conversion limit
        raise FormatError(file, "header", "a number of over 4,300 digits", "a JSON object") from e
    except RecursionError as e:
        raise FormatError(file, "header", "nested too deep", "a flat JSON object") from e
    if not isinstance(header, dict):
        raise FormatError(file, "header", "not a JSON object", "a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise FormatError(file, "header.__metadata__", "not an object", "string pairs")
    data_size = size - 8 - n
    mapping = _LazyMap(path, file, 8 + n)
    weights = [
        _weight(name, entry, file, data_size, mapping, tag) for name, entry in header.items()
    ]
    return weights, {str(k): str(v) for k, v in metadata.items()}


def _weight(
    name: str, entry: Any, file: str, data_size: int, mapping: _LazyMap, tag: str | None
) -> Weight:
    place = f"header.{shorten(name)}"
    if not isinstance(entry, dict):
        raise FormatError(file, place, "not an object", "dtype, shape and data_offsets")
    dtype = _DTYPES.get(entry.get("dtype"))  # type: ignore[arg-type]
    if dtype is None:
        raise FormatError(
            file,
            place + ".dtype",
            f"unknown dtype {shorten(str(entry.get('dtype')))!r}",
            "one of " + ", ".join(_DTYPES),
        )
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape
    ):
        raise FormatError(file, place + ".shape", "not a list of sizes", "non-negative integers")
    offsets = entry.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= data_size
    ):
        raise FormatError(
            file,
            place + ".data_offsets",
            f"{shorten(str(offsets))} for a data section of {data_size:,} bytes",
            "[begin, end] inside the data section",
        )
    count = math.prod(shape)
    bits = DTYPES[dtype].bits or 8
    if count * bits != (offsets[1] - offsets[0]) * 8:
        raise FormatError(
            file,
            place + ".data_offsets",
            f"{offsets[1] - offsets[0]:,} bytes for {count:,} {dtype} values",
            f"{count * bits // 8:,} bytes",
        )
    meta: dict[str, Any] = {"file": tag} if tag else {}
    return Weight(name, tuple(shape), dtype, mapping.reader(offsets[0], count, dtype, shape), meta)


class _LazyMap:
    """One memory map of a file's data section, made when the first tensor is read."""

    def __init__(self, path: Path, file: str, start: int) -> None:
        self.path, self.file, self.start = path, file, start
        self._map: mmap.mmap | None = None

    def reader(
        self, offset: int, count: int, dtype: str, shape: list[int]
    ) -> Callable[[], np.ndarray]:
        def read() -> np.ndarray:
            np_type = numpy_type(dtype)
            if np_type is None or np_type.itemsize * 8 != DTYPES[dtype].bits:
                raise FormatError(self.file, "values", f"{dtype} values cannot be read here")
            buf = self._mapped()
            at = self.start + offset
            if at + count * np_type.itemsize > len(buf):
                raise FormatError(self.file, "values", "file shorter than its header says")
            return np.frombuffer(buf, np_type, count, at).reshape(shape)

        return read

    def _mapped(self) -> mmap.mmap:
        if self._map is None:
            try:
                fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            except OSError as e:
                raise FormatError(self.file, "", f"cannot be read ({e.strerror})") from e
            try:
                self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
        return self._map
