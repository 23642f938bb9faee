"""Members of a zip archive (PyTorch's archives, Keras 3 files) read without reading it all.

A checkpoint of 10 GB is a zip whose members are stored uncompressed; a stored member is a
range of the file, so it is handed out as a view of one read-only memory map and its pages are
read only when used. Deflated members (some tools re-zip archives) are inflated on request.
Only the central directory is read on opening.
"""

from __future__ import annotations

import io
import mmap
import os
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from xocview.errors import FormatError, shorten

__all__ = ["ZipMembers", "is_zip"]

_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_MAGIC = b"PK\x03\x04"


def is_zip(head: bytes) -> bool:
    """True when a file's first bytes open a zip archive (a local header or an empty zip)."""
    return head[:4] in (_LOCAL_MAGIC, b"PK\x05\x06")


class ZipMembers:
    """The members of one archive by name; ``root`` is the folder every member sits in
    (``archive/`` for torch.save, the model's name for TorchScript and .pt2), or ''."""

    def __init__(self, path: Path, file: str, span: _Span | None = None) -> None:
        self.file = file
        self._span = span  # a zip stored inside another one: a range of the outer's bytes
        try:
            self._zip = zipfile.ZipFile(path if span is None else span)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
            raise FormatError(file, "zip directory", f"is not a readable zip archive ({e})") from e
        self._infos = {i.filename: i for i in self._zip.infolist() if not i.is_dir()}
        self.names = list(self._infos)
        firsts = {n.partition("/")[0] for n in self.names if "/" in n}
        self.root = (
            next(iter(firsts)) + "/"
            if len(firsts) == 1 and all("/" in n for n in self.names)
            else ""
        )
        self._map: mmap.mmap | None = None
        self._path = path

    def inner(self, name: str) -> ZipMembers:
        """The zip stored as member ``name`` (torch 2.5's .pt2 holds a torch.save zip):
        its stored members are views of this archive's memory map too."""
        return ZipMembers(self._path, f"{self.file}: {name}", self.file_of(name))

    def file_of(self, name: str, limit: int = 1 << 31) -> _Span:
        """Member ``name`` as a seekable read-only file for a library that wants one (zipfile,
        h5py): a range of the archive's memory map when stored, so nothing is read until the
        library reads; inflated to memory (at most ``limit`` bytes) when deflated."""
        info = self._info(name)
        if info.compress_type == zipfile.ZIP_STORED:
            return _Span(self._mapped(), self._data_start(info), info.file_size)
        return _Span(self.read(name, limit), 0, info.file_size)

    def close(self) -> None:
        self._zip.close()

    def has(self, name: str) -> bool:
        return name in self._infos

    def size(self, name: str) -> int:
        return self._info(name).file_size

    def read(self, name: str, limit: int = 1 << 31) -> bytes:
        """The whole member (JSON, pickles); FormatError when it is damaged or over ``limit``."""
        info = self._info(name)
        if info.file_size > limit:
            raise FormatError(
                self.file, name, f"is {info.file_size:,} bytes", f"at most {limit:,} bytes"
            )
        try:
            return self._zip.read(info)
        except (
            zipfile.BadZipFile,
            OSError,
            ValueError,
            EOFError,
            zlib.error,
            NotImplementedError,
        ) as e:
            raise FormatError(self.file, name, f"cannot be read ({e})") from e

    def array(self, name: str, offset: int = 0, count: int | None = None) -> np.ndarray:
        """The member's bytes from ``offset`` as a uint8 array: a memory-mapped view when the
        member is stored, an inflated copy otherwise. ``count`` bytes, or to the member's end."""
        info = self._info(name)
        end = info.file_size if count is None else offset + count
        if offset < 0 or end > info.file_size:
            raise FormatError(
                self.file,
                name,
                f"holds {info.file_size:,} bytes, fewer than the {end:,} a tensor needs",
                "a member as long as the tensors stored in it",
            )
        if info.compress_type == zipfile.ZIP_STORED:
            start = self._data_start(info)
            return np.frombuffer(self._mapped(), np.uint8, end - offset, start + offset)
        return np.frombuffer(self.read(name), np.uint8)[offset:end]

    def _info(self, name: str) -> zipfile.ZipInfo:
        info = self._infos.get(name)
        if info is None:
            raise FormatError(self.file, shorten(name), "no such member in the archive")
        return info

    def _mapped(self) -> Any:
        if self._span is not None:
            return self._span.buffer
        if self._map is None:
            fd = os.open(self._path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
            try:
                self._map = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            finally:
                os.close(fd)
        return self._map

    def _data_start(self, info: zipfile.ZipInfo) -> int:
        """Where a stored member's bytes begin: after its local header, whose name and extra
        field lengths may differ from the central directory's."""
        m = self._mapped()
        base, end = (0, len(m)) if self._span is None else self._span.bounds
        at = base + info.header_offset
        if info.header_offset < 0 or at + _LOCAL_HEADER.size > end:  # bytes cut before it
            raise FormatError(
                self.file, info.filename, "local header outside the file (damaged directory)"
            )
        fields = _LOCAL_HEADER.unpack_from(m, at)
        if fields[0] != _LOCAL_MAGIC:
            raise FormatError(self.file, info.filename, "damaged local header", "PK\\x03\\x04")
        start = at + _LOCAL_HEADER.size + fields[9] + fields[10]
        if start + info.file_size > end:
            raise FormatError(
                self.file, info.filename, "member runs past the end of the file (truncated?)"
            )
        return start


class _Span(io.RawIOBase):
    """A read-only file over ``length`` bytes of ``buffer`` from ``start``, for zipfile."""

    def __init__(self, buffer: Any, start: int, length: int) -> None:
        super().__init__()
        self.buffer, self.start, self.length, self.pos = buffer, start, length, 0

    @property
    def bounds(self) -> tuple[int, int]:
        return self.start, self.start + self.length

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
