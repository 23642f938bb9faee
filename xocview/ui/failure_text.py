"""One line for a failure that no reader or layout turned into a located error.

Free of Qt, so that the child process that reads a file (``load_process``) words its failures
as the window does. A file too big or too deep for the memory or the interpreter's stack is
not a bug of xocview: it is said in plain words, without Python's name for it; anything else
is an "internal error" with the exception's name, for a bug report.
"""

from __future__ import annotations

from xocview.errors import shorten_message

__all__ = ["failure_message", "internal_error"]


def internal_error(file: str, error: BaseException) -> str:
    """One line for an exception xocview did not expect: ``file: internal error: Type: text``."""
    text = " ".join(str(error).split())
    detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return shorten_message(f"{file}: internal error: {detail}", 300)


def failure_message(file: str, error: BaseException, doing: str = "open it") -> str:
    """``file: ...`` for any exception a worker met while ``doing`` (``open it``, ``place its
    shape labels``): the limits of the machine in words, other exceptions as internal errors."""
    if isinstance(error, MemoryError):
        return shorten_message(f"{file}: out of memory while trying to {doing}", 300)
    if isinstance(error, RecursionError):
        return shorten_message(
            f"{file}: nested too deeply to {doing} (past the interpreter's recursion limit)",
            300,
        )
    return internal_error(file, error)
