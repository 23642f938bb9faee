"""An ONNX model and its external data file written as one: both new, or both as they were.

Each file is written atomically (``formats.atomic``), the data file renamed first, then the
model. Should the model's rename fail after the data's, the old data file comes back: it was
kept under a hard link (a copy where links are not possible) until the model was in place.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from xocview.formats.atomic import write_atomic

__all__ = ["data_path", "write_model_files"]


def data_path(path: Path) -> Path:
    """Where a model's external data goes: ``<model file name>.data`` beside it."""
    return path.with_name(path.name + ".data")


def write_model_files(
    path: Path, model: bytes, write_data: Callable[[BinaryIO], object] | None
) -> None:
    """Write the serialized ``model`` at ``path`` and, when ``write_data`` is given, the data
    file it fills beside it. Raises FormatError as ``write_atomic`` does; on any failure
    neither file has changed."""
    if write_data is None:
        write_atomic(path, lambda f: f.write(model))
        return
    data = data_path(path)
    kept: list[Path] = []
    placed = False

    def write(f: BinaryIO) -> None:
        nonlocal placed
        f.write(model)
        kept.extend(_keep(data))
        write_atomic(data, write_data)
        placed = True

    try:
        write_atomic(path, write)
    except BaseException:
        if placed:  # the new data is in place but the model is not: put the old data back
            with contextlib.suppress(OSError):
                if kept:
                    os.replace(kept.pop(), data)
                else:
                    os.unlink(data)
        raise
    finally:
        for old in kept:
            with contextlib.suppress(OSError):
                os.unlink(old)


def _keep(data: Path) -> list[Path]:
    """A second name for the current data file (none when there is no such file), named as
    ``atomic`` names its temporaries so that a killed save's leftover is cleaned up later."""
    if not data.is_file():
        return []
    old = data.with_name(f".{data.name}.xoc{os.getpid()}-kept.tmp")
    with contextlib.suppress(FileNotFoundError):
        old.unlink()
    try:
        os.link(data, old)
    except OSError:
        shutil.copy2(data, old)
    return [old]
