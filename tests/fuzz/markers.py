"""The marker-file test for reads outside a case's folder.

Each worker's folder holds ``marker.bin`` (a secret of this run repeated) beside the case
folder, which is also the worker's current directory; attack files name it as ``../marker.bin``,
by absolute path, through symlinks and by the bare name a cwd-relative read would find. A read
is seen two ways: the marker's access time moves (its atime is set before its mtime before each
case, so that even a ``relatime`` mount records the next read), and the secret turns up in a
file the case wrote (out.onnx, out.onnx.data, out.json, ...). The worker searches its stdout
and stderr for the secret itself (``attack_targets.secret_problem``).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable
from pathlib import Path

__all__ = ["MARKER", "MARKER_BYTES", "SECRET", "escape_problem", "marker_bytes", "plant", "rearm"]

MARKER = "marker.bin"
MARKER_BYTES = 4096
SECRET = "XOCSECRET" + secrets.token_hex(8)  # new for each run of the harness


def marker_bytes(secret: str = SECRET) -> bytes:
    unit = (secret + "!").encode()
    return (unit * (MARKER_BYTES // len(unit) + 1))[:MARKER_BYTES]


def plant(folder: Path) -> Path:
    """The marker in ``folder`` (made once per worker folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / MARKER
    if not path.is_file():
        path.write_bytes(marker_bytes())
    rearm(path)
    return path


def rearm(path: Path) -> None:
    """Atime well before mtime: the next read of the marker moves its atime (relatime too)."""
    st = os.stat(path)
    os.utime(path, ns=(st.st_mtime_ns - 10**12, st.st_mtime_ns))


def _was_read(path: Path) -> bool:
    st = os.stat(path)
    return st.st_atime_ns > st.st_mtime_ns - 10**12


def escape_problem(marker: Path, folder: Path, inputs: Iterable[str]) -> str | None:
    """Why the case read outside its folder, or None: the marker was read, or the secret is in
    a file the case wrote into ``folder`` (any file but its ``inputs``)."""
    if marker.is_file() and _was_read(marker):
        return f"{marker.name} outside the case folder was read (its access time moved)"
    token = SECRET.encode()
    skip = set(inputs)
    for path in sorted(folder.rglob("*")) if folder.is_dir() else ():
        rel = path.relative_to(folder).as_posix()
        if rel in skip or path.is_symlink() or not path.is_file():
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(64 * 2**20)
        except OSError:
            continue
        if token in data:
            return f"the secret of {marker.name} outside the folder was written into {rel}"
    return None
