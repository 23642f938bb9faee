"""Atomic file writes: a temporary file beside the target, flushed, then renamed over it.

The rename is made durable by syncing the folder too, so that after a crash the folder holds
the old file or the new one, whole. ``folder_lock`` lets saves that write several files (an
ONNX model and its data) take turns in one folder.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # Windows: saves in one folder do not wait for each other
    fcntl = None  # type: ignore[assignment]

from xocview.errors import FormatError

__all__ = [
    "folder_lock",
    "remove_stale_temporaries",
    "sync_folder",
    "write_atomic",
    "write_text_atomic",
]

# A temporary file left by a save that was killed (SIGKILL, power loss) is removed by the next
# save of the same file when its writer is gone, or, whoever wrote it, when it is a day old.
_STALE_AGE = 24 * 3600
_OURS = re.compile(r"\.xoc(\d+)-[^/]*\.tmp\Z")


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, LF line ends) so that readers see the old file or the new."""
    write_atomic(path, lambda f: f.write(text.encode("utf-8")))


def write_atomic(
    path: Path,
    write: Callable[[BinaryIO], object],
    before_replace: Callable[[], object] | None = None,
) -> None:
    """Let ``write`` fill a temporary file beside ``path``, then rename it over ``path``.

    Raises FormatError naming the path when the folder is missing or not writable; the
    temporary file is removed on any failure and an existing file keeps its permissions.
    Exceptions other than OSError raised by ``write`` pass through unchanged.
    ``before_replace`` is called when the temporary file is complete (a test's kill point).
    """
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise FormatError(str(path), "", "cannot save: the folder does not exist")
    remove_stale_temporaries(path)
    try:
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        fd, tmp = tempfile.mkstemp(
            prefix=f".{path.name}.xoc{os.getpid()}-", suffix=".tmp", dir=folder
        )
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
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
        sync_folder(folder)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(e, OSError):
            raise FormatError(str(path), "", f"cannot save: {e.strerror}") from e
        raise


def sync_folder(folder: Path) -> None:
    """Make the renames and removals in ``folder`` durable (a no-op where folders cannot be
    opened, as on Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold the folder's lock (``flock`` on the folder itself: no lock file is left behind)
    while several files are written as one; another xocview save in the folder waits."""
    fd = -1
    if fcntl is not None:
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        if fd >= 0:
            with contextlib.suppress(OSError):  # a file system without locks: go on unlocked
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd >= 0:
            os.close(fd)  # releases the lock


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove our own leftover temporary files of ``path``; returns what was removed.

    Ours are named ``.NAME.xoc<pid>-<random>.tmp``; one whose process no longer runs, or that
    is older than a day, is stale. A save still running in another process is left alone.
    """
    folder = path.parent if str(path.parent) else Path(".")
    pattern = os.path.join(glob.escape(str(folder)), glob.escape(f".{path.name}.") + "xoc*.tmp")
    removed: list[Path] = []
    now = time.time()
    for name in glob.glob(pattern):
        m = _OURS.search(name[len(str(folder)) :])
        if m is None:
            continue
        try:
            old = now - os.lstat(name).st_mtime > _STALE_AGE
        except OSError:
            continue
        if old or not _process_runs(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(name)
                removed.append(Path(name))
    return removed


def _process_runs(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of ours may be saving the same file
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process, or a pid we cannot ask about: leave the file
    return True
