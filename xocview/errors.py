"""The one exception hierarchy of xocview; every message names the file, the place and the fix."""

from __future__ import annotations

import re

__all__ = [
    "QUOTE_LIMIT",
    "ApiError",
    "DesktopError",
    "EditError",
    "FormatError",
    "RunError",
    "UnknownFormatError",
    "XocviewError",
    "shorten",
    "shorten_message",
    "stream_safe",
    "terminal_safe",
]

# A value quoted in a message (an id, a name, a string) keeps this many characters; a file may
# hold a megabyte-long name, and a one-line error must stay one readable line.
QUOTE_LIMIT = 80
# A message as a whole: many short values (a list of 100k ids) are cut as well.
MESSAGE_LIMIT = 2000
# A free-form message may hold file paths, which stay whole up to this length.
PATH_LIMIT = 300

_NOT_BLANK = r"[^\s'\"]"
# A control character quoted from a file (a newline in a name) would break the one line.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# What a terminal acts on instead of showing: C0 controls (ESC starts its sequences, CR and LF
# forge lines), DEL, the 8-bit C1 controls (0x9b is a CSI of its own), the bidi controls that
# reorder what is shown, and the Unicode line and paragraph separators.
_ACTIVE = "\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028-\\u202e\\u2066-\\u2069"
_UNSAFE_TEXT = re.compile(f"[\\x00-\\x1f{_ACTIVE}]")
# A stream keeps its own line breaks and tabs; every other control is escaped.
_UNSAFE_STREAM = re.compile(f"[\\x00-\\x08\\x0b-\\x1f{_ACTIVE}]")


def shorten(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``value`` as text of at most about ``limit`` characters, saying how many were cut."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


def shorten_message(text: str, limit: int = QUOTE_LIMIT) -> str:
    """``text`` with each run of over ``limit`` non-blank characters shortened, then capped.

    Messages are built from file contents in many places; cutting here, where every error and
    finding passes, keeps each of them one line whatever the file holds.
    """
    if _CONTROL.search(text):
        text = _CONTROL.sub(lambda m: repr(m.group(0))[1:-1], text)
    if len(text) <= limit:
        return text
    run = re.compile(_NOT_BLANK + "{" + str(limit + 1) + ",}")
    text = run.sub(lambda m: shorten(m.group(0), limit), text)
    return shorten(text, MESSAGE_LIMIT)


def terminal_safe(text: str) -> str:
    """``text`` from a file, safe to print: every character a terminal would act on (ESC, CR,
    LF, tab, C1, bidi controls) is shown escaped as Python writes it (``\\x1b``, ``\\n``,
    ``\\u202e``), so a name can neither retitle the terminal nor forge an output line; other
    text (accents, Chinese) is kept as is."""
    if not _UNSAFE_TEXT.search(text):
        return text
    return _UNSAFE_TEXT.sub(lambda m: repr(m.group(0))[1:-1], text)


def stream_safe(text: str) -> str:
    """``text`` about to be written to a terminal, with its line breaks and tabs kept and every
    other control escaped as ``\\uXXXX`` (valid inside a JSON string, read back as the same
    character); the last guard of stdout and stderr."""
    if not _UNSAFE_STREAM.search(text):
        return text
    return _UNSAFE_STREAM.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


class XocviewError(Exception):
    """Base of every error xocview raises on purpose; the CLI and GUI show its message alone.

    The message is shortened (see ``shorten_message``) so that no file can make it unreadable.
    """

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            args = (shorten_message(args[0], PATH_LIMIT),)
        super().__init__(*args)


class FormatError(XocviewError):
    """A file could not be read or written.

    The message reads ``file: place: problem; expected ...`` so that a user can go straight to
    the faulty spot (a JSON path such as ``nodes[3].inputs[1]`` or an ONNX node name).
    """

    def __init__(self, file: str, place: str, problem: str, expected: str | None = None) -> None:
        self.file = file
        self.place = place
        self.problem = problem
        self.expected = expected
        parts = [shorten_message(shorten(file, PATH_LIMIT), PATH_LIMIT)]
        parts += [shorten_message(p) for p in (place, problem) if p]
        text = ": ".join(p for p in parts if p)
        if expected:
            text += f"; expected {shorten_message(expected)}"
        Exception.__init__(self, shorten(text, MESSAGE_LIMIT))


class UnknownFormatError(FormatError):
    """No reader accepted the file; ``reasons`` maps each format tried to why it refused, and
    ``recognised`` says what the file is when its signature names a format xocview does not
    read (then that is the message, the reasons being beside the point)."""

    def __init__(
        self,
        file: str,
        reasons: dict[str, str],
        recognised: str | None = None,
        offered: list[str] | None = None,
    ) -> None:
        self.reasons = reasons
        self.recognised = recognised
        if recognised is not None:
            offered_text = ", ".join(reasons if offered is None else offered)
            super().__init__(
                file,
                "",
                f"is {recognised}, a format xocview does not read",
                f"a file xocview reads ({offered_text})" if offered_text else None,
            )
            return
        listing = "; ".join(f"{name}: {why}" for name, why in reasons.items())
        super().__init__(file, "", f"not a graph file any format accepts ({listing})")


class EditError(XocviewError):
    """An edit was refused; the graph is unchanged and the message says how to fix the request."""


class RunError(XocviewError):
    """A run of the executor stopped at a node (no kernel, bad shapes, a kernel failure).

    ``node_id`` and ``op_type`` name the node; ``partial`` is the executor's result with the
    timings measured before the stop (or None when the run stopped before the first node).
    """

    def __init__(
        self, message: str, node_id: str | None = None, op_type: str | None = None
    ) -> None:
        super().__init__(message)
        self.node_id = node_id
        self.op_type = op_type
        self.partial: object | None = None


class DesktopError(XocviewError):
    """Installing or removing the desktop integration failed; the message names the path."""


class ApiError(XocviewError):
    """A call of the Python API (``xocview.load`` ...) was given what it cannot take; the
    message names what it received and what it accepts."""
