"""The one exception hierarchy of xocview; every message names the file, the place and the fix."""

from __future__ import annotations

__all__ = [
    "EditError",
    "FormatError",
    "UnknownFormatError",
    "XocviewError",
]


class XocviewError(Exception):
    """Base of every error xocview raises on purpose; the CLI and GUI show its message alone."""


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
        parts = [p for p in (file, place, problem) if p]
        text = ": ".join(parts)
        if expected:
            text += f"; expected {expected}"
        super().__init__(text)


class UnknownFormatError(FormatError):
    """No reader accepted the file; ``reasons`` maps each format tried to why it refused."""

    def __init__(self, file: str, reasons: dict[str, str]) -> None:
        self.reasons = reasons
        listing = "; ".join(f"{name}: {why}" for name, why in reasons.items())
        super().__init__(file, "", f"not a graph file any format accepts ({listing})")


class EditError(XocviewError):
    """An edit was refused; the graph is unchanged and the message says how to fix the request."""
