"""The one check of a path that a file names: relative, and inside the file's folder.

Every format that follows a path written in a file (ONNX external data today) asks here before
anything is opened, so that a hostile file cannot make xocview read, or say whether there is,
a file elsewhere. Symlinks are resolved first: a link inside the folder that points out of it
is refused like a ``../`` path (a Hugging Face cache's ``model.onnx.data`` link into
``../../blobs/`` too; copy the files into one folder to open such a model).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath, PureWindowsPath

from xocview.errors import FormatError, shorten

__all__ = ["path_inside"]


def path_inside(location: str, folder: Path, file: str, place: str) -> Path:
    """The resolved path of ``location`` read against ``folder`` (the model's folder).

    Raises FormatError at ``place`` unless ``location`` is a non-empty relative path whose
    resolved form (symlinks followed) lies inside the resolved ``folder``. Nothing is opened:
    only the folder's entries are looked at to follow links.
    """
    expected = "a path relative to the model's folder, inside it"
    if not location:
        raise FormatError(file, place, "no location is given", expected)
    shown = shorten(location)
    if "\0" in location:
        raise FormatError(file, place, f"location {shown!r} holds a NUL character", expected)
    if (
        PurePosixPath(location).is_absolute()
        or PureWindowsPath(location).is_absolute()
        or PureWindowsPath(location).drive
    ):
        raise FormatError(file, place, f"location '{shown}' is absolute", expected)
    try:
        root = folder.resolve()
        path = (root / location).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # a symlink loop, a name too long
        why = e.strerror if isinstance(e, OSError) and e.strerror else "a symlink loop"
        raise FormatError(file, place, f"location '{shown}' cannot be resolved ({why})") from e
    if path == root or root not in path.parents:
        raise FormatError(file, place, f"location '{shown}' leaves the model's folder", expected)
    return path
