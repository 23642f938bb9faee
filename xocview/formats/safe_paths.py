"""The one check of a path that a file names: relative, and inside the file's folder.

Every format that follows a path written in a file (ONNX external data today) asks here before
anything is opened, so that a hostile file cannot make xocview read, or say whether there is,
a file elsewhere.

What the file's text can choose is an entry of the model's folder (or of a folder inside it):
no ``..`` that climbs out (``..`` is taken apart as text, never through a link), no absolute or
drive path, and every folder on the way must resolve inside the model's folder (a folder link
out of it, ``up -> ..``, would let the text pick any file beyond it). The entry itself may be a
symlink, and is followed wherever it points: the link is the user's own file system, as a Hugging
Face cache lays it out (``snapshots/<rev>/model.onnx.data -> ../../blobs/<hash>``), and opening
a model cannot make a link or choose where one points, so a link to ``/etc/passwd`` beside a
model is the user's own choice, read as the data it names. Its target must still be a regular
file of the size the tensor needs (the readers check that), and saves never write through it
(``onnx/model_files``: data files are created new, a model replaces a link rather than its target).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath, PureWindowsPath

from xocview.errors import FormatError, shorten

__all__ = ["path_inside"]

_EXPECTED = "a path relative to the model's folder, inside it"


def path_inside(location: str, folder: Path, file: str, place: str) -> Path:
    """The resolved path of ``location`` read against ``folder`` (the model's folder).

    Raises FormatError at ``place`` unless ``location`` is a non-empty relative path whose
    ``..`` stay inside and whose folders resolve (links followed) inside the resolved
    ``folder``; the named entry itself may be a link to anywhere. Nothing is opened: only the
    folder's entries are looked at to follow links.
    """
    if not location:
        raise FormatError(file, place, "no location is given", _EXPECTED)
    shown = shorten(location)
    if "\0" in location:
        raise FormatError(file, place, f"location {shown!r} holds a NUL character", _EXPECTED)
    if (
        PurePosixPath(location).is_absolute()
        or PureWindowsPath(location).is_absolute()
        or PureWindowsPath(location).drive
    ):
        raise FormatError(file, place, f"location '{shown}' is absolute", _EXPECTED)
    norm = os.path.normpath(location)  # "sub/../w.bin" is "w.bin", whatever "sub" links to
    if norm in (os.curdir, os.pardir) or norm.startswith(os.pardir + os.sep):
        raise FormatError(file, place, f"location '{shown}' leaves the model's folder", _EXPECTED)
    head, name = os.path.split(norm)
    try:
        root = folder.resolve()
        parent = (root / head).resolve() if head else root
        path = (parent / name).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # a symlink loop, a name too long
        why = e.strerror if isinstance(e, OSError) and e.strerror else "a symlink loop"
        raise FormatError(file, place, f"location '{shown}' cannot be resolved ({why})") from e
    if parent != root and root not in parent.parents:
        raise FormatError(
            file,
            place,
            f"location '{shown}' leaves the model's folder through a linked folder",
            _EXPECTED,
        )
    return path
