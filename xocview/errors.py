"""The one exception hierarchy of xocview; every message names the file, the place and the fix."""

from __future__ import annotations

__all__ = [
    "DesktopError",
    "EditError",
    "FormatError",
    "RunError",
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
