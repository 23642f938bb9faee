"""Atomic file writes: a temporary file beside the target, flushed, then renamed over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from xocview.errors import FormatError

__all__ = ["write_atomic", "write_text_atomic"]


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, LF line ends) so that readers see the old file or the new."""
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def write_atomic(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """Let ``write`` fill a temporary file beside ``path``, then rename it over ``path``.

    Raises FormatError naming the path when the folder is missing or not writable; the
    temporary file is removed on any failure and an existing file keeps its permissions.
    Exceptions other than OSError raised by ``write`` pass through unchanged.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FormatError(str(path), "", "cannot save: the folder does not exist")
    try:
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as e:
        raise FormatError(str(path), "", f"cannot save: {e.strerror}") from e
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise FormatError(str(path), "", f"cannot save: {e.strerror}") from e
        raise
