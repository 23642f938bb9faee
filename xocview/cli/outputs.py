"""Where ``convert`` and ``edit`` write: the suffixes that pick a format, and the save's notes."""

from __future__ import annotations

import sys
from pathlib import Path

from xocview.cli.terminal import say
from xocview.formats import registry
from xocview.model import Graph

__all__ = ["OUTPUT_METAVAR", "refused", "save_with_notes"]

_FORMATS = {".json": "XOC JSON", ".onnx": "ONNX"}
OUTPUT_METAVAR = "OUT.json|OUT.onnx"


def refused(out: Path) -> bool:
    """True (after saying why on stderr) when ``out`` names no format that can be written."""
    if out.suffix.lower() in _FORMATS:
        return False
    say(
        f"xocview: error: {out}: the output must be a .json file (XOC JSON) "
        "or an .onnx file (ONNX)",
        file=sys.stderr,
    )
    return True


def save_with_notes(graph: Graph, out: Path) -> None:
    """Save ``graph`` to ``out``; what the file could not keep is printed on stderr as notes."""
    for note in registry.save(graph, out):
        say(f"xocview: note: {note}", file=sys.stderr)
