"""A file being opened: read once, parsed at most once, shared by every format's sniffer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from xocview.errors import FormatError

__all__ = ["Source"]

_MISSING = object()


class Source:
    """Lazy views of one file: its first bytes, its whole bytes and, if JSON, its parsed value.

    Formats that share an extension (three of ours are ``.json``) are told apart by content, so
    the file is read and parsed once here instead of once per format tried.
    """

    HEAD_SIZE = 4096

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = str(path)
        self._bytes: bytes | None = None
        self._json: Any = _MISSING
        self._json_error: FormatError | None = None

    @property
    def data(self) -> bytes:
        if self._bytes is None:
            try:
                self._bytes = self.path.read_bytes()
            except IsADirectoryError as e:
                raise FormatError(self.name, "", "is a folder, not a file") from e
            except FileNotFoundError as e:
                raise FormatError(self.name, "", "no such file") from e
            except OSError as e:
                raise FormatError(self.name, "", f"cannot be read ({e.strerror})") from e
        return self._bytes

    @property
    def head(self) -> bytes:
        return self.data[: self.HEAD_SIZE]

    def looks_like_json(self) -> bool:
        """True when the first non-blank byte opens a JSON object or array."""
        stripped = self.head.lstrip(b" \t\r\n\xef\xbb\xbf")
        return stripped[:1] in (b"{", b"[")

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
                    self._json = json.loads(text)
                except json.JSONDecodeError as e:
                    self._json_error = FormatError(
                        self.name, f"line {e.lineno} column {e.colno}", f"invalid JSON: {e.msg}"
                    )
                    self._json_error.__cause__ = e
        if self._json_error is not None:
            raise self._json_error
        return self._json
