"""The members of a ``.keras`` zip, and HDF5 files opened read-only with h5py.

The weights member is opened in place: a stored (uncompressed) member is a range of the
archive's read-only memory map, offered to h5py as a seekable file, so opening a model reads
no weights; a deflated member is inflated to memory (at most ``INFLATE_LIMIT`` bytes).
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import zipfile
from pathlib import Path
from typing import Any

import h5py

from xocview.errors import FormatError

__all__ = ["INFLATE_LIMIT", "Archive", "open_h5"]

INFLATE_LIMIT = 256 << 20
JSON_LIMIT = 64 << 20  # a model config is kilobytes; a bigger one is not a config
_LOCAL = struct.Struct("<4sHHHHHIIIHH")


def open_h5(path: Path | Any, name: str) -> Any:
    """An HDF5 file (a path or a file-like view) opened read-only; FormatError when h5py
    cannot read it."""
    try:
        return h5py.File(path, "r")
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        raise FormatError(name, "", f"is not a readable HDF5 file ({e})", "an HDF5 file") from e


class Archive:
    """A ``.keras`` zip's members by name; members are read, or viewed, on demand."""

    def __init__(self, path: Path, name: str) -> None:
        self.path, self.name = path, name
        try:
            self._zip = zipfile.ZipFile(path)
            self._infos = {i.filename: i for i in self._zip.infolist() if not i.is_dir()}
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
            raise FormatError(name, "zip directory", f"is not a readable zip archive ({e})") from e

    def has(self, member: str) -> bool:
        return member in self._infos

    def read(self, member: str, limit: int = JSON_LIMIT) -> bytes:
        info = self._infos.get(member)
        if info is None:
            raise FormatError(self.name, member, "is missing from the archive")
        if info.file_size > limit:
            raise FormatError(
                self.name, member, f"is {info.file_size:,} bytes", f"at most {limit:,}"
            )
        try:
            return self._zip.read(info)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as e:
            raise FormatError(self.name, member, f"cannot be read ({e})") from e

    def h5(self, member: str) -> Any:
        """The member opened with h5py: in place when stored, inflated when compressed."""
        info = self._infos[member]
        where = f"{self.name}: {member}"
        if info.compress_type != zipfile.ZIP_STORED:
            return open_h5(io.BytesIO(self.read(member, INFLATE_LIMIT)), where)
        with open(self.path, "rb") as f:
            fd = os.dup(f.fileno())
        try:
            buffer = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as e:
            raise FormatError(self.name, member, f"cannot be mapped ({e})") from e
        finally:
            os.close(fd)
        start = self._data_start(buffer, info)
        return open_h5(_View(buffer, start, info.file_size), where)

    def _data_start(self, buffer: Any, info: zipfile.ZipInfo) -> int:
        at = info.header_offset
        if at + _LOCAL.size > len(buffer):
            raise FormatError(self.name, info.filename, "its local header is past the end")
        fields = _LOCAL.unpack_from(buffer, at)
        start = at + _LOCAL.size + fields[9] + fields[10]
        if fields[0] != b"PK\x03\x04" or start + info.file_size > len(buffer):
            raise FormatError(self.name, info.filename, "its local header is damaged")
        return start


class _View(io.RawIOBase):
    """A read-only, seekable file over ``length`` bytes of ``buffer`` from ``start``."""

    def __init__(self, buffer: Any, start: int, length: int) -> None:
        super().__init__()
        self.buffer, self.start, self.length, self.pos = buffer, start, length, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.length}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, b: Any) -> int:
        n = max(0, min(len(b), self.length - self.pos))
        at = self.start + self.pos
        b[:n] = self.buffer[at : at + n]
        self.pos += n
        return n
