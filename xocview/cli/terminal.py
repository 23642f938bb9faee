"""What the command line prints reaches the terminal through here, made safe (issue 28).

Names, op types and doc strings come from files, and a file may hold ESC sequences (clear the
screen, retitle the window), 8-bit CSI, bidi overrides or a CR/LF that forges an output line.
Two guards: each value or line a command prints is passed through ``terminal_safe`` (which
escapes line breaks too: only there can a file's newline be told from ours), and stdout and
stderr themselves are wrapped while a command runs (``safe_streams``) so that whatever slips
past, a traceback included, is escaped as well.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from xocview.errors import QUOTE_LIMIT, shorten, stream_safe, terminal_safe

__all__ = ["SafeStream", "cell", "json_text", "safe_streams", "say", "shorten_ids"]


class SafeStream:
    """A text stream whose writes pass ``stream_safe``: line breaks and tabs stay, every other
    control character is escaped as ``\\uXXXX`` (so JSON printed through it stays valid)."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @property
    def raw(self) -> TextIO:
        """The wrapped stream, for what xocview itself draws (a progress line's CR)."""
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(stream_safe(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding, buffer...
        return getattr(self._stream, name)


@contextlib.contextmanager
def safe_streams() -> Iterator[None]:
    """sys.stdout and sys.stderr wrapped in ``SafeStream`` for the block, then put back."""
    saved = sys.stdout, sys.stderr

    def wrapped(stream: Any) -> Any:
        return stream if stream is None or isinstance(stream, SafeStream) else SafeStream(stream)

    sys.stdout, sys.stderr = wrapped(saved[0]), wrapped(saved[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def say(line: str = "", file: TextIO | None = None) -> None:
    """Print one line whose parts may come from a file: a newline inside it is escaped."""
    print(terminal_safe(line), file=sys.stdout if file is None else file)


def cell(value: object, limit: int = QUOTE_LIMIT) -> str:
    """An id or name from a file as a table cell or quote: cut to ``limit`` and escaped."""
    return terminal_safe(shorten(value, limit))


def json_text(data: object) -> str:
    """``data`` as indented JSON for a terminal: non-ASCII text readable, controls escaped."""
    return stream_safe(json.dumps(data, indent=2, ensure_ascii=False, default=str))


# A run of non-blank characters longer than an id may be quoted, with the note ``shorten``
# appends when the message was cut before (its count is the original length).
_LONG_RUN = re.compile(
    r"""([^\s'"]{""" + str(QUOTE_LIMIT + 1) + r""",})( \(([\d,]+) characters\))?"""
)


def shorten_ids(message: str) -> str:
    """``message`` with each run of over QUOTE_LIMIT non-blank characters (an id from a file)
    cut to QUOTE_LIMIT, except a run that names an existing file (a path the user gave)."""

    def cut(m: re.Match[str]) -> str:
        run, _, count = m.groups()
        if os.path.exists(run.rstrip(":;,.)")):
            return m.group(0)
        if count is not None and run.endswith("..."):
            return f"{run[:QUOTE_LIMIT]}... ({count} characters)"
        return shorten(run)

    return _LONG_RUN.sub(cut, message)
