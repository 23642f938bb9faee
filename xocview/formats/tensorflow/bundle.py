"""A SavedModel's variables (a TensorBundle) read without TensorFlow, values memory-mapped.

``variables/variables.index`` is a LevelDB table (``sstable``): the key ``""`` holds a
``BundleHeaderProto`` (shard count, byte order), every other key a checkpoint key
(``layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE``) with a ``BundleEntryProto`` saying
where its bytes are: a shard ``variables.data-0000K-of-0000N``, an offset and a size. Numbers
are the raw little-endian (or big-endian, by the header) values; a string tensor is one varint64
length per element, a four-byte checksum of the lengths, then the elements' bytes.

The index is read when the bundle is opened; a shard is mapped when its first value is read,
and a value is a read-only numpy view of the map. Paths are fixed names inside the SavedModel
folder, checked with ``path_inside`` so that a linked ``variables`` folder cannot lead out.
"""

from __future__ import annotations

import math
import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from xocview.errors import FormatError, shorten
from xocview.formats.safe_paths import path_inside
from xocview.formats.tensorflow.protos import message, shape_of, xoc_dtype
from xocview.formats.tensorflow.sstable import read_table
from xocview.model.dtypes import numpy_type

__all__ = ["OBJECT_GRAPH_KEY", "Bundle", "Entry", "slice_key"]

OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
PREFIX = "variables/variables"
# An index is small (one entry per variable); a bigger one is not a TensorBundle index.
_INDEX_LIMIT = 1 << 30


@dataclass(frozen=True)
class Entry:
    """Where one checkpoint key's value is: xocview dtype name, shape (None for an unknown
    rank, -1 for an unknown size), shard number, offset and size in bytes."""

    key: str
    dtype: str
    shape: tuple[int, ...] | None
    shard: int
    offset: int
    size: int
    # A variable saved in slices (a sharding policy cuts big ones across shards): per slice,
    # per dimension, (start, length), length -1 for the whole dimension.
    slices: tuple[tuple[tuple[int, int], ...], ...] = ()


class Bundle:
    """The variables of the SavedModel in ``folder`` (``folder/variables/variables.*``)."""

    def __init__(self, folder: Path, prefix: str = PREFIX) -> None:
        self.folder = folder
        self.prefix = prefix
        self.index_path = path_inside(prefix + ".index", folder, str(folder), "variables")
        self.index_file = str(self.index_path)
        records = read_table(_read_index(self.index_path), self.index_file)
        self.num_shards, self.big_endian = self._header(records)
        self._entries: dict[str, Entry] = {}
        for raw_key, value in records:
            if raw_key:
                key = raw_key.decode("utf-8", "backslashreplace")
                self._entries[key] = self._entry(key, value)
        self._maps: dict[int, mmap.mmap | bytes] = {}
        self._shard_paths: dict[int, Path] = {}

    def keys(self) -> list[str]:
        """Every checkpoint key, in the index's (sorted) order; the keys of the slices of a
        sliced variable (which start with a NUL) are left out, as TensorFlow leaves them."""
        return [k for k in self._entries if not k.startswith("\0")]

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def entry(self, key: str) -> Entry:
        """Where ``key``'s value is; a FormatError when the index has no such key."""
        found = self._entries.get(key)
        if found is None:
            raise FormatError(self.index_file, shorten(key), "no such checkpoint key")
        return found

    def array(self, key: str) -> np.ndarray:
        """``key``'s value: a read-only view of the shard's map, or for a string tensor an
        object array of ``bytes``."""
        e = self.entry(key)
        shape = self._known_shape(e)
        if e.slices:
            return self._assemble(e, shape)
        if e.dtype == "string":
            return self._strings(e, shape)
        np_type = numpy_type(e.dtype)
        if np_type is None or e.dtype == "undefined":
            raise FormatError(
                self.index_file,
                key,
                "value's DataType is not one xocview reads (a resource or variant handle?)",
                "a numeric, bool or string tensor",
            )
        if self.big_endian and np_type.itemsize > 1:
            np_type = np_type.newbyteorder(">")
        count = math.prod(shape)
        if e.size != count * np_type.itemsize:
            raise FormatError(
                self.index_file,
                key,
                f"entry holds {e.size:,} bytes",
                f"{count * np_type.itemsize:,} bytes for {count:,} {e.dtype} values",
            )
        view = np.frombuffer(self._span(e), np_type, count, e.offset).reshape(shape)
        if self.big_endian and np_type.itemsize > 1:
            # Rare (a checkpoint written on a big-endian machine): a native copy, so that
            # every consumer sees plain float32 rather than ">f4".
            view = view.astype(np_type.newbyteorder("="))
            view.flags.writeable = False
        return view

    def object_graph(self) -> Any:
        """The TrackableObjectGraph that names the variables' owners (layers, modules)."""
        raw = self.array(OBJECT_GRAPH_KEY)
        if raw.shape != ():
            raise FormatError(
                self.index_file, OBJECT_GRAPH_KEY, f"has shape {list(raw.shape)}", "a scalar"
            )
        try:
            return message("TrackableObjectGraph").FromString(raw[()])
        except DecodeError as e:
            raise FormatError(
                self.index_file, OBJECT_GRAPH_KEY, "is not a TrackableObjectGraph message"
            ) from e

    def shard_path(self, shard: int) -> Path:
        """The data file of shard ``shard``, inside the SavedModel folder."""
        path = self._shard_paths.get(shard)
        if path is None:
            name = f"{self.prefix}.data-{shard:05d}-of-{self.num_shards:05d}"
            path = path_inside(name, self.folder, self.index_file, f"shard {shard}")
            self._shard_paths[shard] = path
        return path

    def _header(self, records: list[tuple[bytes, bytes]]) -> tuple[int, bool]:
        if not records or records[0][0] != b"":
            raise FormatError(self.index_file, "header", "no header entry (key '')")
        try:
            header = message("BundleHeaderProto").FromString(records[0][1])
        except DecodeError as e:
            raise FormatError(
                self.index_file, "header", "is not a BundleHeaderProto message"
            ) from e
        if header.num_shards < 1:
            raise FormatError(
                self.index_file, "header", f"num_shards is {header.num_shards}", "1 or more"
            )
        return int(header.num_shards), header.endianness == 1

    def _entry(self, key: str, value: bytes) -> Entry:
        try:
            m = message("BundleEntryProto").FromString(value)
        except DecodeError as e:
            raise FormatError(self.index_file, key, "is not a BundleEntryProto message") from e
        shape = shape_of(m.shape)
        return Entry(
            key,
            xoc_dtype(int(m.dtype)),
            None if shape is None else tuple(shape),
            int(m.shard_id),
            int(m.offset),
            int(m.size),
            tuple(
                tuple(
                    (int(x.start), int(x.length) if x.HasField("length") else -1) for x in sl.extent
                )
                for sl in m.slices
            ),
        )

    def _assemble(self, e: Entry, shape: tuple[int, ...]) -> np.ndarray:
        """A sliced variable put together from its slices (a copy, unlike a whole one)."""
        parts = []
        for extents in e.slices:
            if len(extents) != len(shape):
                raise FormatError(
                    self.index_file,
                    e.key,
                    f"a slice has {len(extents)} dimensions",
                    str(len(shape)),
                )
            sub = self.entry(slice_key(e.key, extents))
            if sub.slices or sub.dtype != e.dtype:
                raise FormatError(self.index_file, sub.key, "slice is itself sliced or retyped")
            parts.append((extents, self.array(sub.key)))
        count = math.prod(shape)
        if sum(part.size for _, part in parts) != count:
            raise FormatError(
                self.index_file, e.key, "slices do not add up to the variable", f"{count:,} values"
            )
        out = np.empty(shape, dtype=parts[0][1].dtype)
        for extents, part in parts:
            where = tuple(slice(None) if n < 0 else slice(start, start + n) for start, n in extents)
            if out[where].shape != part.shape:
                raise FormatError(
                    self.index_file, e.key, f"slice {extents} does not fit shape {list(shape)}"
                )
            out[where] = part
        out.flags.writeable = False
        return out

    def _known_shape(self, e: Entry) -> tuple[int, ...]:
        if e.shape is None or any(d < 0 for d in e.shape):
            raise FormatError(self.index_file, e.key, f"shape {e.shape} is not fully known")
        return e.shape

    def _span(self, e: Entry) -> mmap.mmap | bytes:
        """The map of ``e``'s shard, checked to hold ``e``'s bytes."""
        if not 0 <= e.shard < self.num_shards:
            raise FormatError(
                self.index_file,
                e.key,
                f"shard_id is {e.shard}",
                f"0 to {self.num_shards - 1} (num_shards {self.num_shards})",
            )
        buf = self._maps.get(e.shard)
        path = self.shard_path(e.shard)
        if buf is None:
            buf = self._maps[e.shard] = _map(path, e.key)
        if e.offset < 0 or e.size < 0 or e.offset + e.size > len(buf):
            raise FormatError(
                str(path),
                e.key,
                f"bytes {e.offset:,} to {e.offset + e.size:,} run past the shard's "
                f"{len(buf):,} bytes",
                "a shard holding every value the index names",
            )
        return buf

    def _strings(self, e: Entry, shape: tuple[int, ...]) -> np.ndarray:
        """A string tensor: varint64 lengths, a four-byte checksum, then the bytes."""
        buf = self._span(e)
        count = math.prod(shape)
        raw = np.frombuffer(buf, np.uint8, e.size, e.offset)
        where = str(self.shard_path(e.shard))
        lengths, used = _varints(raw[: min(e.size, 10 * count)], count)
        if lengths is None or count > e.size:
            raise FormatError(where, e.key, f"lengths of {count:,} strings are cut or damaged")
        start = used + 4
        ends = start + np.cumsum(lengths, dtype=np.uint64)
        total = int(ends[-1]) if count else start
        if total != e.size:
            raise FormatError(
                where, e.key, f"strings end at byte {total:,} of the value", f"{e.size:,} bytes"
            )
        begins = np.concatenate([[start], ends[:-1]]).astype(np.int64)
        data = raw.tobytes()
        flat = np.empty(count, dtype=object)
        flat[:] = [data[b:z] for b, z in zip(begins.tolist(), ends.tolist(), strict=True)]
        flat.flags.writeable = False  # read-only like every other value
        return flat.reshape(shape)


# OrderedCode's header bits of a signed number of 1 to 10 bytes.
_SIGNED_HEADER = [(0, 0), (0x80, 0), (0xC0, 0), (0xE0, 0), (0xF0, 0), (0xF8, 0), (0xFC, 0)]
_SIGNED_HEADER += [(0xFE, 0), (0xFF, 0), (0xFF, 0x80), (0xFF, 0xC0)]
_ESCAPES = {b"\x00": b"\x00\xff", b"\xff": b"\xff\x00"}


def slice_key(name: str, extents: tuple[tuple[int, int], ...]) -> str:
    """The key TensorFlow stores one slice of ``name`` under (``EncodeTensorNameSlice``:
    OrderedCode of 0, the name, the rank, then each dimension's start and length)."""
    raw = name.encode("utf-8", "surrogateescape")
    escaped = re.sub(b"[\x00\xff]", lambda m: _ESCAPES[m.group()], raw)
    out = b"\x00" + escaped + b"\x00\x01" + _unsigned(len(extents))
    for start, length in extents:
        out += _signed(start) + _signed(length)
    return out.decode("utf-8", "backslashreplace")


def _unsigned(value: int) -> bytes:
    """OrderedCode ``WriteNumIncreasing``: a length byte, then big-endian bytes."""
    size = (value.bit_length() + 7) // 8
    return bytes([size]) + value.to_bytes(size, "big")


def _signed(value: int) -> bytes:
    """OrderedCode ``WriteSignedNumIncreasing``: sign-extended big-endian bytes whose leading
    bits say the length."""
    x = ~value if value < 0 else value
    size = min((x.bit_length() + 7) // 7, 10)  # ceil((bits + 1) / 7)
    buf = bytearray((value & ((1 << 80) - 1)).to_bytes(10, "big"))[10 - size :]
    head = _SIGNED_HEADER[size]
    buf[0] ^= head[0]
    if size > 1:
        buf[1] ^= head[1]
    return bytes(buf)


def _varints(raw: np.ndarray, count: int) -> tuple[np.ndarray | None, int]:
    """The first ``count`` varint64s of ``raw`` and the bytes they take; None when cut."""
    if count == 0:
        return np.zeros(0, dtype=np.uint64), 0
    ends = np.flatnonzero(raw < 0x80)[:count]
    if ends.size < count:
        return None, 0
    starts = np.concatenate([[0], ends[:-1] + 1])
    if np.any(ends - starts >= 10):
        return None, 0
    span = int(ends[-1]) + 1
    group = np.searchsorted(ends, np.arange(span))
    shift = (np.arange(span) - starts[group]).astype(np.uint64) * np.uint64(7)
    parts = (raw[:span] & 0x7F).astype(np.uint64) << shift
    return np.add.reduceat(parts, starts), span


def _read_index(path: Path) -> bytes:
    file = str(path)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > _INDEX_LIMIT:
                raise FormatError(file, "", f"index of {size:,} bytes is too big", "under 1 GiB")
            return f.read()
    except FileNotFoundError as e:
        raise FormatError(
            file, "", "is missing", "the variables index beside saved_model.pb"
        ) from e
    except OSError as e:
        raise FormatError(file, "", f"cannot be read ({e.strerror})") from e


def _map(path: Path, key: str) -> mmap.mmap | bytes:
    """A read-only map of a shard (an empty shard is empty bytes: mmap refuses size 0)."""
    file = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except FileNotFoundError as e:
        raise FormatError(
            file, key, "shard is missing", "the data shard the variables index names"
        ) from e
    except OSError as e:
        raise FormatError(file, key, f"shard cannot be read ({e.strerror})") from e
    try:
        if os.fstat(fd).st_size == 0:
            return b""
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError) as e:
        raise FormatError(file, "", "cannot be memory-mapped") from e
    finally:
        os.close(fd)
