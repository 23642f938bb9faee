"""An ONNX model and its external data file, saved so that any kill leaves the old pair or the new.

The data files xocview makes for a model ``NAME`` are called ``NAME.data``, ``NAME.1.data``,
``NAME.2.data``, ... and begin with a header naming ``NAME`` (``data_header``): that is how a
save knows a data file as its own. A save never writes into, renames over or links to a file
that exists; it

1. takes the folder's lock (``atomic.folder_lock``) so that saves in the folder take turns;
2. removes what a killed save left: temporary files, and data files of its own for this model
   that the model on disk does not name;
3. creates the new data file under the first of those names that no file has, writes and
   syncs it (the old model still names the old data, which is untouched);
4. replaces the model, which names the new data file, atomically (``atomic.write_atomic``);
5. removes the old data file, when it is its own and no weight read in this process may
   still read it (an undo step's); otherwise the next save removes it.

A kill between any two steps leaves at worst a data file nobody names, removed by step 2 of
the next save. A file of the data names that is not its own (another model's ``NAME.data``)
is never touched: the data goes to the next free name, and the save's notes say so. An empty
file of those names counts as its own: a save killed right after creating it leaves one.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import onnx

from xocview.errors import FormatError
from xocview.formats.atomic import (
    folder_lock,
    remove_stale_temporaries,
    sync_folder,
    write_atomic,
)
from xocview.formats.onnx.external import model_tensors
from xocview.formats.onnx.weights import external_info, in_use

__all__ = ["STEPS", "data_header", "data_path", "write_model_files"]

_MAGIC = b"XOCVIEW ONNX DATA 1\n"
_ALIGN = 64
_MAX_NAMES = 1000  # NAME.data, NAME.1.data ... NAME.999.data
_MAX_MODEL = 1 << 31  # what protobuf can parse

# The boundaries between a save's steps, in order; ``step_hook`` is called with each (a test
# kills the save there). Saves without external data skip the "data ..." ones.
STEPS = (
    "locked",
    "strays removed",
    "data created",
    "data header written",
    "data written",
    "data synced",
    "model written",
    "model replaced",
    "old data removed",
)
step_hook: Callable[[str], object] | None = None


def _step(name: str) -> None:
    if step_hook is not None:
        step_hook(name)


def data_path(path: Path) -> Path:
    """The first name a model's external data is given: ``<model file name>.data``."""
    return path.with_name(path.name + ".data")


def data_header(model_name: str) -> bytes:
    """The first bytes of a data file made for the model file ``model_name``; tensors start
    after it (its length is a multiple of 64)."""
    raw = _MAGIC + os.fsencode(model_name) + b"\n"
    return raw + b"\0" * (-len(raw) % _ALIGN)


def write_model_files(
    path: Path,
    model_for: Callable[[str | None], bytes],
    write_data: Callable[[BinaryIO], object] | None,
) -> list[str]:
    """Save a model at ``path`` and, when ``write_data`` is given, the data file it fills
    (after ``data_header``, which is written here). ``model_for(location)`` is the serialized
    model naming its data file ``location`` (None without one). Returns notes for the user.

    Raises FormatError as ``write_atomic`` does; on any failure the old pair is as it was.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FormatError(str(path), "", "cannot save: the folder does not exist")
    with folder_lock(folder):
        _step("locked")
        _remove_strays(path, _named_by(path))
        _step("strays removed")
        notes: list[str] = []
        data: Path | None = None
        if write_data is not None:
            data = _write_data(path, write_data)
            foreign = data_path(path)
            if data != foreign and not _ours(foreign, path.name):
                notes.append(
                    f"'{foreign.name}' was kept (xocview did not write it for this model): "
                    f"the weights are in '{data.name}'"
                )
        try:
            model = model_for(None if data is None else data.name)
            write_atomic(path, lambda f: f.write(model), lambda: _step("model written"))
        except BaseException:
            if data is not None:
                with contextlib.suppress(OSError):
                    os.unlink(data)
            raise
        _step("model replaced")
        _remove_strays(path, {data.name} if data is not None else set())
        _step("old data removed")
    return notes


def _write_data(path: Path, write_data: Callable[[BinaryIO], object]) -> Path:
    """A new data file under a name no file had, written and synced; removed on failure."""
    fd, data = _create(path)
    _step("data created")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data_header(path.name))
            f.flush()
            _step("data header written")
            write_data(f)
            f.flush()
            _step("data written")
            os.fsync(f.fileno())
        with contextlib.suppress(OSError):  # the model's own permissions
            os.chmod(data, path.stat().st_mode & 0o666)
        _step("data synced")
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(data)
        if isinstance(e, OSError):
            raise FormatError(str(data), "", f"cannot save: {e.strerror}") from e
        raise
    return data


def _create(path: Path) -> tuple[int, Path]:
    """The first free data name of ``path``, created (exclusively) and open for writing."""
    for k in range(_MAX_NAMES):
        data = data_path(path) if k == 0 else path.with_name(f"{path.name}.{k}.data")
        try:
            return os.open(data, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), data
        except FileExistsError:
            continue
        except OSError as e:
            raise FormatError(str(data), "", f"cannot save: {e.strerror}") from e
    raise FormatError(
        str(path),
        "",
        f"cannot save: {_MAX_NAMES} data file names of this model are taken",
        f"fewer files named {path.name}.<n>.data beside it",
    )


def _data_names(path: Path) -> re.Pattern[str]:
    return re.compile(re.escape(path.name) + r"(?:\.[1-9][0-9]*)?\.data\Z")


def _remove_strays(path: Path, kept: set[str]) -> None:
    """Remove temporaries of the model and its data files, and the model's own data files
    whose names are not in ``kept`` (what the model on disk names), unless still in use."""
    remove_stale_temporaries(path)
    remove_stale_temporaries(data_path(path))  # and a kept copy an older xocview left
    folder = path.parent if str(path.parent) else Path(".")
    names = _data_names(path)
    try:
        entries = [e for e in os.scandir(folder) if names.match(e.name)]
    except OSError:
        return
    removed = False
    for entry in entries:
        data = folder / entry.name
        if entry.name in kept or not _ours(data, path.name) or in_use(data):
            continue
        with contextlib.suppress(OSError):
            os.unlink(data)
            removed = True
    if removed:
        sync_folder(folder)


def _ours(data: Path, model_name: str) -> bool:
    """Whether ``data`` is a regular file (not a link) this code made for ``model_name``."""
    header = data_header(model_name)
    try:
        info = os.lstat(data)
        if not stat.S_ISREG(info.st_mode):
            return False
        if info.st_size == 0:
            return True
        with open(data, "rb") as f:
            return f.read(len(header)) == header
    except OSError:
        return False


def _named_by(path: Path) -> set[str]:
    """The data file names the model at ``path`` gives (all names of data files when it
    cannot be read: then none of them is a stray)."""
    names = _data_names(path)
    folder = path.parent if str(path.parent) else Path(".")
    try:
        taken = {e.name for e in os.scandir(folder) if names.match(e.name)}
        if not taken:
            return set()
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_MODEL:
            return taken
        model = onnx.ModelProto()
        model.ParseFromString(path.read_bytes())
    except FileNotFoundError:
        return set()
    except Exception:  # an unreadable or damaged model: keep every data file
        return taken
    named: set[str] = set()
    for _, tensor in model_tensors(model):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            named.add(os.path.normpath((external_info(tensor) or {}).get("location", "")))
    return named
