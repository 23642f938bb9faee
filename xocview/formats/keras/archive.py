"""The members of a ``.keras`` zip, and HDF5 files opened read-only with h5py.

The weights member is opened in place: a stored (uncompressed) member is a range of the
archive's read-only memory map, offered to h5py as a seekable file, so opening a model reads
no weights; a deflated member is inflated to memory (at most ``INFLATE_LIMIT`` bytes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py

from xocview.errors import FormatError
from xocview.formats.zip_members import ZipMembers

__all__ = ["INFLATE_LIMIT", "Archive", "open_h5"]

INFLATE_LIMIT = 256 << 20
JSON_LIMIT = 64 << 20  # a model config is kilobytes; a bigger one is not a config


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
        self._members = ZipMembers(path, name)

    def has(self, member: str) -> bool:
        return self._members.has(member)

    def read(self, member: str, limit: int = JSON_LIMIT) -> bytes:
        if not self._members.has(member):
            raise FormatError(self.name, member, "is missing from the archive")
        return self._members.read(member, limit)

    def h5(self, member: str) -> Any:
        """The member opened with h5py: in place when stored, inflated when compressed."""
        view = self._members.file_of(member, INFLATE_LIMIT)
        return open_h5(view, f"{self.name}: {member}")
