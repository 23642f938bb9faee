"""A file being opened: read once, parsed at most once, shared by every format's sniffer."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

from xocview.errors import FormatError
from xocview.formats.json_text import MAX_DEPTH, JsonTooDeep, loads

__all__ = [
    "FOLDER_ENTRIES",
    "MAX_FILE_SIZE",
    "Source",
    "folder_entry",
    "read_head",
    "read_regular_file",
]

_MISSING = object()
# Protobuf cannot hold a message over 2 GiB and no graph JSON comes near it; a larger file is
# refused before it is read rather than read whole into memory.
MAX_FILE_SIZE = 2**31
_LONG_NUMBER = re.compile(r"\d{4301,}")  # past Python's default int conversion limit
# JSON may escape half of a UTF-16 surrogate pair alone ("\ud800"), which no UTF-8 text, Qt
# string or terminal can hold; such files are refused with the place of the string.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")

_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _open_regular(path: Path, name: str) -> tuple[int, os.stat_result]:
    """A descriptor of ``path`` opened without blocking, and its status; FormatError for
    anything that is not a regular file, checked on the open descriptor before any byte is
    read, so a FIFO cannot hang the reader and ``/dev/zero`` cannot fill the memory."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except IsADirectoryError as e:
        raise FormatError(name, "", "is a folder, not a file") from e
    except FileNotFoundError as e:
        raise FormatError(name, "", "no such file") from e
    except OSError as e:
        raise FormatError(name, "", f"cannot be read ({e.strerror})") from e
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        if stat.S_ISDIR(info.st_mode):
            raise FormatError(name, "", "is a folder, not a file")
        for test, kind in _KINDS:
            if test(info.st_mode):
                raise FormatError(name, "", f"is {kind}, not a file", "a regular file")
        raise FormatError(name, "", "is not a regular file", "a regular file")
    return fd, info


def read_head(path: Path, name: str, size: int) -> tuple[bytes, int]:
    """The first ``size`` bytes of a regular file and its size, the rest left unread: a
    format is told from its head, and a 14 GB weights file is never read to find out."""
    fd, info = _open_regular(path, name)
    with os.fdopen(fd, "rb") as f:
        try:
            return f.read(size), info.st_size
        except OSError as e:
            raise FormatError(name, "", f"cannot be read ({e.strerror})") from e


def read_regular_file(path: Path, name: str | None = None, limit: int = MAX_FILE_SIZE) -> bytes:
    """The bytes of ``path``; FormatError for anything that is not a regular file, and for a
    file over ``limit`` (refused before it is read)."""
    name = str(path) if name is None else name
    fd, info = _open_regular(path, name)
    with os.fdopen(fd, "rb") as f:
        if info.st_size > limit:
            raise FormatError(
                name,
                "",
                f"is {info.st_size:,} bytes, more than xocview reads ({limit:,})",
                "a graph file under 2 GiB (weights in external data files)",
            )
        try:
            # The size it has, and one byte to see it grow: read(limit + 1) would ask the
            # allocator for 2 GiB for every file, however small.
            data = f.read(info.st_size + 1)
            if len(data) > info.st_size:
                data += f.read(limit + 1 - len(data))
        except OSError as e:
            raise FormatError(name, "", f"cannot be read ({e.strerror})") from e
    if len(data) > limit:  # the file grew while it was read
        raise FormatError(name, "", f"is more than {limit:,} bytes", "a graph file under 2 GiB")
    return data


# A folder that is one model opens through the file that says what it holds: a TensorFlow
# SavedModel's protobuf, a Hugging Face model's config.json.
FOLDER_ENTRIES = ("saved_model.pb", "saved_model.pbtxt", "config.json")


def folder_entry(path: Path) -> Path:
    """``path``, or for a model folder (a TensorFlow SavedModel, a Hugging Face model) the
    file that opens it."""
    try:
        if not path.is_dir():
            return path
    except (OSError, ValueError):
        return path
    for name in FOLDER_ENTRIES:
        if (path / name).is_file():
            return path / name
    return path


class Source:
    """Lazy views of one file: its first bytes, its whole bytes and, if JSON, its parsed value.

    Formats that share an extension (three of ours are ``.json``) are told apart by content, so
    the file is read and parsed once here instead of once per format tried.
    """

    HEAD_SIZE = 4096
    # Files up to this size are read whole on the first look, saving a second open for the
    # small graph files read whole anyway; a bigger file is told by its head alone, since a
    # memory-mapped format (TFLite, safetensors) never needs its bytes read (a 14 MB .tflite
    # spent a third of its open reading them).
    WHOLE_BELOW = 1 << 20

    def __init__(self, path: str | Path) -> None:
        self.path = folder_entry(Path(path))
        self.name = str(path) if self.path == Path(path) else str(self.path)
        self._bytes: bytes | None = None
        self._head: bytes | None = None
        self._size: int | None = None
        self._json: Any = _MISSING
        self._json_error: FormatError | None = None

    @classmethod
    def in_memory(cls, data: bytes, path: str | Path, name: str | None = None) -> Source:
        """A source whose bytes are ``data``, never read from disk: ``path`` stands for the
        file (its stem titles the graph, its suffix orders the sniffers, its folder anchors
        relative references) and ``name`` names it in messages. Formats that open the file
        themselves (zip archives, memory-mapped weights) cannot read it."""
        source = cls(path)
        source._bytes = bytes(data)
        if name is not None:
            source.name = name
        return source

    @property
    def data(self) -> bytes:
        if self._bytes is None:
            self._bytes = read_regular_file(self.path, self.name)
        return self._bytes

    @property
    def head(self) -> bytes:
        """The first HEAD_SIZE bytes, read without the rest: binary formats are told by them.
        FormatError when the path is missing, a folder, or not a regular file."""
        if self._bytes is not None:
            return self._bytes[: self.HEAD_SIZE]
        if self._head is None:
            if self._small():  # one read serves the sniffers and the reader
                return self.data[: self.HEAD_SIZE]
            self._head, self._size = read_head(self.path, self.name, self.HEAD_SIZE)
        return self._head

    def _small(self) -> bool:
        """A regular file small enough to read whole at once (what the graph formats read
        anyway); anything else is opened by ``read_head``, which says what it is."""
        try:
            info = os.stat(self.path)
        except (OSError, ValueError):
            return False
        return stat.S_ISREG(info.st_mode) and info.st_size <= self.WHOLE_BELOW

    @property
    def size(self) -> int:
        """The file's size in bytes, known from the head's read."""
        if self._bytes is not None:
            return len(self._bytes)
        if self._size is None:
            _ = self.head
        assert self._size is not None
        return self._size

    def looks_like_json(self) -> bool:
        """True when the first non-blank byte opens a JSON object or array."""
        stripped = self.head.lstrip(b" \t\r\n\xef\xbb\xbf")
        return stripped[:1] in (b"{", b"[")

    @property
    def json_error(self) -> FormatError | None:
        """Why the file is not JSON, once ``json`` has been asked for and failed."""
        return self._json_error

    @property
    def json(self) -> Any:
        """The parsed JSON value; FormatError with line and column when it is not JSON."""
        if self._json is _MISSING and self._json_error is None:
            try:
                text = self.data.decode("utf-8-sig")
            except UnicodeDecodeError as e:
                self._json_error = FormatError(
                    self.name, f"byte {e.start}", "not UTF-8 text", "a UTF-8 JSON file"
                )
                self._json_error.__cause__ = e
            else:
                try:
                    self._json = loads(text, self._bytes)
                    if _SURROGATE_ESCAPE.search(text):
                        _refuse_lone_surrogates(self.name, self._json)
                except FormatError as e:
                    self._json = _MISSING
                    self._json_error = e
                except JsonTooDeep as e:
                    self._json_error = FormatError(
                        self.name,
                        e.place or f"line {e.line} column {e.column}",
                        f"nested {e.depth:,} deep"
                        + (f" (line {e.line} column {e.column})" if e.place else ""),
                        f"arrays and objects nested at most {MAX_DEPTH} deep",
                    )
                    self._json_error.__cause__ = e
                except json.JSONDecodeError as e:
                    self._json_error = FormatError(
                        self.name, f"line {e.lineno} column {e.colno}", f"invalid JSON: {e.msg}"
                    )
                    self._json_error.__cause__ = e
                except ValueError as e:  # an integer past Python's conversion limit
                    self._json_error = FormatError(
                        self.name,
                        _place_of_long_number(text),
                        "a number with more than 4,300 digits",
                        "numbers of ordinary size",
                    )
                    self._json_error.__cause__ = e
        if self._json_error is not None:
            raise self._json_error
        return self._json


def _place_of_long_number(text: str) -> str:
    """``line L column C`` of the first overlong number, or '' when none is found."""
    m = _LONG_NUMBER.search(text)
    if m is None:
        return ""
    line = text.count("\n", 0, m.start()) + 1
    column = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return f"line {line} column {column}"


def _refuse_lone_surrogates(file: str, doc: Any) -> None:
    """FormatError at the first string (or key) holding a lone surrogate, with its JSON path.

    Runs only for files that escape surrogates at all: a pair decodes to one character, so any
    surrogate left after parsing stands alone.
    """
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, place = stack.pop()
        if isinstance(value, str):
            m = _SURROGATE.search(value)
            if m:
                code = f"\\u{ord(m.group(0)):04x}"
                raise FormatError(
                    file,
                    place or "(root)",
                    f"a lone surrogate {code} in a string",
                    "text of valid Unicode (surrogates only in pairs)",
                )
        elif isinstance(value, dict):
            for k, v in value.items():
                sub = f"{place}.{k}" if place else str(k)
                if _SURROGATE.search(k):
                    stack.append((k, place or "(root)"))
                stack.append((v, sub))
        elif isinstance(value, list):
            stack.extend((v, f"{place}[{i}]") for i, v in enumerate(value))
