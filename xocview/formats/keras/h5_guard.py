"""An HDF5 attribute read with a time limit (``read_attr``).

A damaged ``.h5`` can send libhdf5 into an endless loop in its C code while it reads a
variable-length string (found by fuzzing: a corrupted global heap under ``model_config``);
no Python timeout reaches inside a C call. So the attribute is read in a forked child that
writes it to a pipe, and a child that has not answered in time is killed and the file
refused. Where there is no fork (Windows) the attribute is read directly.
"""

from __future__ import annotations

import os
import select
import signal
import time
from pathlib import Path
from typing import Any

from xocview.errors import FormatError

__all__ = ["LIMIT_SECONDS", "read_attr"]

LIMIT_SECONDS = 5.0  # a model config of megabytes reads in milliseconds


def _read(path: Path, name: str) -> Any:
    import h5py

    with h5py.File(path, "r") as f:
        return f.attrs.get(name)


def read_attr(path: Path, name: str, file: str, limit: float | None = None) -> Any:
    """Attribute ``name`` of the file's root group (None when absent), as h5py gives it."""
    limit = LIMIT_SECONDS if limit is None else limit
    if not hasattr(os, "fork"):
        return _read(path, name)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: answer through the pipe, never return into the caller's code
        code = 0
        try:
            os.close(r)
            value = _read(path, name)
            kind = b"N" if value is None else b"B" if isinstance(value, bytes) else b"S"
            body = value if isinstance(value, bytes) else str(value).encode("utf-8")
            os.write(w, kind)
            for at in range(0, len(body), 1 << 16):
                os.write(w, body[at : at + (1 << 16)])
        except BaseException as e:
            os.write(w, b"E" + str(e).encode("utf-8", "replace")[:500])
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    try:
        raw = _collect(r, pid, limit, file, name)
    finally:
        os.close(r)
    return _decode(raw, file, name)


def _collect(r: int, pid: int, limit: float, file: str, name: str) -> bytes:
    chunks: list[bytes] = []
    deadline = time.monotonic() + limit
    while True:
        left = deadline - time.monotonic()
        ready = select.select([r], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise FormatError(
                file, name, f"reading it did not finish in {limit:g} s (a damaged HDF5 file)"
            )
        chunk = os.read(r, 1 << 16)
        if not chunk:
            os.waitpid(pid, 0)
            return b"".join(chunks)
        chunks.append(chunk)


def _decode(raw: bytes, file: str, name: str) -> Any:
    kind, body = raw[:1], raw[1:]
    if kind == b"N":
        return None
    if kind == b"B":
        return body
    if kind == b"S":
        return body.decode("utf-8", "replace")
    problem = body.decode("utf-8", "replace") if kind == b"E" else "the reader stopped"
    raise FormatError(file, name, f"cannot be read ({problem})")
