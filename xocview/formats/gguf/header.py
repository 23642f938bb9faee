"""A GGUF file's header, read from a memory map: version, metadata and tensor infos.

The layout (llama.cpp's ``gguf.md``): magic ``GGUF``, a uint32 version (2 or 3; version 1 had
32-bit counts), uint64 tensor and metadata counts, the metadata key/values, the tensor infos
(name, dims in GGML order, type, offset), then the data section at the next multiple of
``general.alignment`` (32 by default). Everything is little-endian. Every count, length and
offset is checked against the bytes left before it is used, so a hostile header is a located
FormatError, never a huge allocation or a long loop.
"""

from __future__ import annotations

import itertools
import math
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xocview.errors import FormatError, shorten
from xocview.formats.gguf.quants import GGML_TYPES, GGMLType, tensor_bytes

__all__ = ["MAGIC", "Header", "StringArray", "TensorInfo", "read_header"]

MAGIC = b"GGUF"
GGML_MAX_DIMS = 4
MAX_ARRAY_DEPTH = 4
# String array entries decoded on opening; the rest are only checked to fit in the file.
KEPT_STRINGS = 8

# GGUF value type -> little-endian numpy dtype (8 string, 9 array)
_NUMBERS: dict[int, np.dtype] = {
    0: np.dtype("u1"),
    1: np.dtype("i1"),
    2: np.dtype("<u2"),
    3: np.dtype("<i2"),
    4: np.dtype("<u4"),
    5: np.dtype("<i4"),
    6: np.dtype("<f4"),
    7: np.dtype("u1"),  # bool
    10: np.dtype("<u8"),
    11: np.dtype("<i8"),
    12: np.dtype("<f8"),
}
_STRING, _ARRAY, _BOOL = 8, 9, 7
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")


@dataclass(frozen=True)
class StringArray:
    """An array of strings: its count and first entries (vocabularies run to 250,000)."""

    count: int
    first: tuple[str, ...]


@dataclass(frozen=True)
class TensorInfo:
    """One tensor: its name, numpy-order shape, GGML type, and byte range in the data section."""

    name: str
    shape: tuple[int, ...]
    kind: GGMLType
    offset: int
    nbytes: int


@dataclass
class Header:
    version: int
    metadata: dict[str, Any] = field(default_factory=dict)
    tensors: list[TensorInfo] = field(default_factory=list)
    alignment: int = 32
    data_start: int = 0


class _Cursor:
    """Reads little-endian fields from a buffer, each checked to fit before it is read."""

    def __init__(self, buf: Any, file: str) -> None:
        self.buf, self.file, self.at, self.size = buf, file, 0, len(buf)
        self.place = "header"

    def fail(self, problem: str, expected: str = "") -> FormatError:
        return FormatError(self.file, self.place, problem, expected)

    def need(self, n: int, what: str) -> None:
        if n > self.size - self.at:
            raise self.fail(
                f"{what} of {n:,} bytes at byte {self.at:,} runs past the end of the file "
                f"({self.size:,} bytes)",
                "a GGUF header that fits in the file",
            )

    def u32(self, what: str) -> int:
        self.need(4, what)
        value: int = _U32.unpack_from(self.buf, self.at)[0]
        self.at += 4
        return value

    def u64(self, what: str) -> int:
        self.need(8, what)
        value: int = _U64.unpack_from(self.buf, self.at)[0]
        self.at += 8
        return value

    def string(self, what: str) -> str:
        n = self.u64(what + " length")
        self.need(n, what)
        raw = bytes(self.buf[self.at : self.at + n])
        self.at += n
        return raw.decode("utf-8", errors="replace")

    def skip_string(self, what: str) -> None:
        n = self.u64(what + " length")
        self.need(n, what)
        self.at += n


def read_header(buf: Any, file: str) -> Header:
    """The header of the GGUF file whose bytes (a memory map) are ``buf``."""
    c = _Cursor(buf, file)
    c.need(4, "magic")
    if bytes(buf[:4]) != MAGIC:
        raise c.fail(f"starts with {bytes(buf[:4])!r}", "the GGUF magic b'GGUF'")
    c.at = 4
    version = _version(c)
    n_tensors = c.u64("tensor count")
    n_kv = c.u64("metadata count")
    # each key/value takes at least 13 bytes and each tensor info 32: refuse counts that the
    # file cannot hold before looping over them
    for count, least, what in ((n_kv, 13, "metadata"), (n_tensors, 32, "tensor")):
        if count * least > c.size - c.at:
            raise c.fail(
                f"{count:,} {what} entries in a file of {c.size:,} bytes",
                f"a {what} count the file can hold",
            )
    header = Header(version)
    for i in range(n_kv):
        c.place = f"metadata[{i}]"
        key = c.string("key")
        c.place = f"metadata[{i}] {shorten(key)!r}"
        if key in header.metadata:
            raise c.fail("key given twice", "unique keys")
        header.metadata[key] = _value(c, c.u32("value type"), 0)
    header.alignment = _alignment(c, header.metadata)
    infos = [_tensor_info(c, i) for i in range(n_tensors)]
    c.place = "data section"
    header.data_start = -(-c.at // header.alignment) * header.alignment
    header.tensors = _check_ranges(c, infos, header.data_start, header.alignment)
    return header


def _version(c: _Cursor) -> int:
    version = c.u32("version")
    if version in (2, 3):
        return version
    swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
    if swapped in (1, 2, 3):
        raise c.fail(f"a big-endian GGUF (version {swapped})", "a little-endian GGUF file")
    if version == 1:
        raise c.fail("GGUF version 1 (32-bit counts, superseded in 2023)", "GGUF version 2 or 3")
    raise c.fail(f"GGUF version {version:,}", "GGUF version 2 or 3")


def _value(c: _Cursor, kind: int, depth: int) -> Any:
    """One metadata value of GGUF type ``kind``: Python scalars, numpy arrays of numbers,
    StringArray for strings, lists for arrays of arrays."""
    if kind == _STRING:
        return c.string("string")
    if kind in _NUMBERS:
        dt = _NUMBERS[kind]
        c.need(dt.itemsize, "value")
        value = np.frombuffer(c.buf, dt, 1, c.at)[0]
        c.at += dt.itemsize
        return bool(value) if kind == _BOOL else value.item()
    if kind != _ARRAY:
        raise c.fail(f"unknown value type {kind:,}", "a GGUF value type 0..12")
    if depth >= MAX_ARRAY_DEPTH:
        raise c.fail(f"arrays nested over {MAX_ARRAY_DEPTH} deep", "flat arrays")
    item = c.u32("array item type")
    count = c.u64("array length")
    if item in _NUMBERS:
        dt = _NUMBERS[item]
        c.need(count * dt.itemsize, f"array of {count:,} values")
        values = np.frombuffer(c.buf, dt, count, c.at).copy()
        c.at += count * dt.itemsize
        return values.astype(bool) if item == _BOOL else values
    least = 8 if item == _STRING else 12
    c.need(count * least, f"array of {count:,} entries")  # each entry's length field at least
    if item == _STRING:
        first = tuple(c.string(f"string [{k}]") for k in range(min(count, KEPT_STRINGS)))
        for k in range(len(first), count):  # bounded: count * 8 bytes fit in the file
            c.skip_string(f"string [{k}]")
        return StringArray(count, first)
    if item == _ARRAY:
        return [_value(c, _ARRAY, depth + 1) for _ in range(count)]
    raise c.fail(f"unknown array item type {item:,}", "a GGUF value type 0..12")


def _alignment(c: _Cursor, metadata: dict[str, Any]) -> int:
    value = metadata.get("general.alignment", 32)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0 or value & (value - 1):
        c.place = "metadata 'general.alignment'"
        raise c.fail(f"alignment {shorten(repr(value))}", "a power of two")
    return value


def _tensor_info(c: _Cursor, i: int) -> tuple[str, list[int], int, int, str]:
    c.place = f"tensors[{i}]"
    name = c.string("name")
    c.place = f"tensors[{i}] {shorten(name)!r}"
    n_dims = c.u32("dimension count")
    if n_dims > GGML_MAX_DIMS:
        raise c.fail(f"{n_dims:,} dimensions", f"at most {GGML_MAX_DIMS}")
    dims = [c.u64(f"dimension {k}") for k in range(n_dims)]
    kind = c.u32("type")
    offset = c.u64("offset")
    return name, dims, kind, offset, c.place


def _check_ranges(
    c: _Cursor, infos: list[tuple[str, list[int], int, int, str]], start: int, alignment: int
) -> list[TensorInfo]:
    """The tensors, each of a known type, aligned, inside the file and overlapping no other."""
    room = c.size - start
    out: list[TensorInfo] = []
    seen: set[str] = set()
    for name, dims, code, offset, place in infos:
        c.place = place
        if name in seen:
            raise c.fail("name given twice", "unique tensor names")
        seen.add(name)
        kind = GGML_TYPES.get(code)
        if kind is None:
            raise c.fail(f"unknown GGML type {code:,}", "a GGML tensor type")
        if dims and dims[0] % kind.block_size:
            raise c.fail(
                f"innermost dimension {dims[0]:,} for {kind.name}",
                f"a multiple of its block of {kind.block_size}",
            )
        count = math.prod(dims)
        nbytes = tensor_bytes(kind, count)
        if offset % alignment:
            raise c.fail(f"offset {offset:,} not aligned", f"a multiple of {alignment}")
        if offset + nbytes > room:
            raise c.fail(
                f"{nbytes:,} bytes at offset {offset:,} run past the end of the file "
                f"(data section of {max(room, 0):,} bytes)",
                "tensor data inside the file",
            )
        out.append(TensorInfo(name, tuple(reversed(dims)), kind, offset, nbytes))
    order = sorted(range(len(out)), key=lambda k: out[k].offset)
    for before, after in itertools.pairwise(order):
        a, b = out[before], out[after]
        if a.offset + a.nbytes > b.offset:
            c.place = infos[after][4]
            raise c.fail(
                f"bytes {b.offset:,}.. overlap {shorten(a.name)!r} (up to {a.offset + a.nbytes:,})",
                "tensors in separate byte ranges",
            )
    return out
