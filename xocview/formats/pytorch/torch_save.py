"""The two layouts ``torch.save`` writes, read to the pickled object with lazy storages.

The zip layout (the default since torch 1.6): ``<root>/data.pkl`` holds the object, each
storage is the member ``<root>/data/<key>`` (stored, so memory-mapped), ``<root>/byteorder``
says the byte order. The legacy layout (``_use_new_zipfile_serialization=False``): five
pickles in a row (a magic number, the protocol version, the writer's system info, the object,
the list of storage keys), then each storage as an 8-byte element count and its bytes. Only the
counts are read on opening, each found by seeking past the one before.
"""

from __future__ import annotations

import mmap
import os
import struct
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np

from xocview.errors import FormatError, shorten
from xocview.formats.pytorch.unpickle import (
    MAX_PICKLE,
    LazyStorage,
    RefusedClass,
    StorageFactory,
    Stream,
    load_pickle_from,
)
from xocview.formats.zip_members import ZipMembers

__all__ = ["LEGACY_MAGIC", "MAX_PICKLE", "PickledModule", "read_legacy", "read_zip"]

# pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2): torch's legacy magic number
LEGACY_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19\x2e"
_PROTOCOL = 1001
# What every pickled torch.nn.Module's state holds.
_MODULE_FIELDS = (b"_parameters", b"_modules")


class PickledModule(RefusedClass):
    """``torch.save(model)``: the pickle rebuilds the user's classes, which means running
    their code; the state dict holds the same weights without it."""

    def __init__(self, file: str, place: str, qualname: str) -> None:
        FormatError.__init__(
            self,
            file,
            place,
            f"a pickled module (torch.save(model)): reading it would import its classes, "
            f"first {shorten(qualname)}, and run their code, which xocview never does",
            "a state dict: save torch.save(model.state_dict(), path) and open that",
        )
        self.qualname = qualname


def _load_object(
    stream: Stream, file: str, storages: StorageFactory, place: str, holds: Any
) -> Any:
    """The checkpoint's object; a refused class in a pickle holding a module's fields (told
    by ``holds(field)``) is said to be a pickled module."""
    try:
        return load_pickle_from(stream, file, storages, place)
    except RefusedClass as e:
        if all(holds(f) for f in _MODULE_FIELDS):
            raise PickledModule(file, place, e.qualname) from e
        raise


def read_zip(members: ZipMembers) -> tuple[Any, dict[str, Any]]:
    """The object of a zip checkpoint and what the archive says of itself."""
    root, file = members.root, members.file
    big = _big_endian(members, root + "byteorder")

    def storage(key: str, dtype: str, numel: int) -> LazyStorage:
        member = f"{root}data/{key}"
        if not members.has(member):
            raise FormatError(file, shorten(member), "a storage the pickle names is missing")
        made = LazyStorage(key, dtype, numel, lambda: members.array(member), file, member, big)
        if members.size(member) < made.nbytes:
            raise FormatError(
                file,
                member,
                f"holds {members.size(member):,} bytes, fewer than the {made.nbytes:,} "
                f"of its {numel:,} {dtype} values",
                "a storage as long as the pickle says",
            )
        return made

    pkl = root + "data.pkl"
    data = members.read(pkl, MAX_PICKLE)
    obj = _load_object(BytesIO(data), file, storage, pkl, data.__contains__)
    info: dict[str, Any] = {"serialization": "zip"}
    if members.has(root + "version"):
        info["version"] = members.read(root + "version", 64).decode("latin1").strip()
    if big:
        info["byteorder"] = "big"
    return obj, info


def _big_endian(members: ZipMembers, name: str) -> bool:
    if not members.has(name):
        return False
    text = members.read(name, 64).strip()
    if text not in (b"little", b"big"):
        raise FormatError(members.file, name, f"{shorten(text.decode('latin1'))!r}", "little|big")
    return text == b"big"


class _Window:
    """A file-like view of a memory map, for the C unpickler (reads exactly what it asks for,
    so ``tell`` is just past each pickle's STOP); refuses to read past ``limit``."""

    def __init__(self, buf: mmap.mmap, start: int, limit: int, file: str) -> None:
        self.buf, self.pos, self.file = buf, start, file
        self.end = min(len(buf), start + limit)

    def read(self, n: int = -1) -> bytes:
        stop = self.end if n < 0 else self.pos + n
        if stop > self.end and self.end < len(self.buf):
            raise FormatError(self.file, "", f"a pickle longer than {MAX_PICKLE:,} bytes")
        out = self.buf[self.pos : min(stop, self.end)]
        self.pos += len(out)
        return out

    def readline(self) -> bytes:
        at = self.buf.find(b"\n", self.pos, self.end)
        return self.read((at + 1 if at >= 0 else self.end) - self.pos)

    def readinto(self, target: Any) -> int:
        data = self.read(len(target))
        target[: len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self.pos


def read_legacy(path: Path, file: str) -> tuple[Any, dict[str, Any]]:
    """The object of a legacy checkpoint; each storage's offset is found from the counts."""
    buf = _map(path, file)
    window = _Window(buf, 0, MAX_PICKLE, file)

    def no_storage(key: str, dtype: str, numel: int) -> LazyStorage:
        raise FormatError(file, "header", "a storage in the header pickles")

    magic = load_pickle_from(window, file, no_storage, "magic number")
    if magic != 0x1950A86A20F9469CFC6C:
        raise FormatError(file, "magic number", "not torch's", "a torch.save checkpoint")
    protocol = load_pickle_from(window, file, no_storage, "protocol version")
    if protocol != _PROTOCOL:
        raise FormatError(file, "protocol version", f"{shorten(repr(protocol))}", str(_PROTOCOL))
    sys_info = load_pickle_from(window, file, no_storage, "system info")
    big = isinstance(sys_info, dict) and sys_info.get("little_endian") is False
    offsets: dict[str, int] = {}
    made: dict[str, LazyStorage] = {}

    def storage(key: str, dtype: str, numel: int) -> LazyStorage:
        def read() -> np.ndarray:
            at = offsets.get(key)
            if at is None:
                raise FormatError(file, f"storage {shorten(key)}", "not in the storage list")
            return np.frombuffer(buf, np.uint8, min(len(buf) - at, made[key].nbytes), at)

        made[key] = LazyStorage(key, dtype, numel, read, file, f"storage {shorten(key)}", big)
        return made[key]

    start = window.tell()
    place = f"object pickle at byte {start:,}"
    obj = _load_object(
        window, file, storage, place, lambda f: buf.find(f, start, start + MAX_PICKLE) >= 0
    )
    keys = load_pickle_from(window, file, no_storage, "storage keys")
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise FormatError(file, "storage keys", "not a list of names", "the storages' keys")
    offsets.update(_storage_offsets(buf, window.tell(), keys, made, file, big))
    return obj, {"serialization": "legacy", "protocol": protocol}


def _storage_offsets(
    buf: mmap.mmap, at: int, keys: list[str], made: dict[str, LazyStorage], file: str, big: bool
) -> dict[str, int]:
    """Where each storage's bytes begin: after its 8-byte count, the storage before skipped
    unread. A count that disagrees with the pickle or runs past the end is refused."""
    count = struct.Struct(">q" if big else "<q")
    out: dict[str, int] = {}
    for key in keys:
        place = f"storage {shorten(key)}"
        storage = made.get(key)
        if storage is None:
            raise FormatError(file, place, "listed but no tensor of the pickle uses it")
        if at + 8 > len(buf):
            raise FormatError(file, place, f"its count at byte {at:,} is past the end (truncated?)")
        (n,) = count.unpack_from(buf, at)
        if n != storage.numel:
            raise FormatError(
                file, place, f"{n:,} elements at byte {at:,}", f"{storage.numel:,} (the pickle's)"
            )
        out[key] = at + 8
        at += 8 + storage.nbytes
        if at > len(buf):
            raise FormatError(
                file,
                place,
                f"{storage.nbytes:,} bytes from byte {out[key]:,} run past the end of the file "
                f"({len(buf):,} bytes; truncated?)",
            )
    missing = [k for k in made if k not in out]
    if missing:
        raise FormatError(
            file, f"storage {shorten(missing[0])}", "used by a tensor but not in the storage list"
        )
    return out


def _map(path: Path, file: str) -> mmap.mmap:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    except OSError as e:
        raise FormatError(file, "", f"cannot be read ({e.strerror})") from e
    try:
        if os.fstat(fd).st_size == 0:
            raise FormatError(file, "", "an empty file")
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    finally:
        os.close(fd)
