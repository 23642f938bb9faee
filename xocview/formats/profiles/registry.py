"""The one table of profile formats, and the reader that picks one by a file's content.

All three are JSON, often named ``*.json``, so content alone decides: onnxruntime's profile is
a trace whose events are onnxruntime's kernels, so it is asked before the general Chrome trace.
Each format module exposes NAME, ``sniff(source) -> None | reason`` and ``read(source, graph,
name) -> ImportedProfile``; time formats also DEFAULT_SOURCE.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from xocview.errors import FormatError
from xocview.formats.profiles import chrome_trace, model_explorer, onnxruntime
from xocview.formats.profiles.result import ImportedProfile, source_name
from xocview.formats.source import Source
from xocview.model import Graph

__all__ = ["PROFILE_FORMATS", "detect_profile", "read_profile"]

PROFILE_FORMATS: tuple[ModuleType, ...] = (onnxruntime, chrome_trace, model_explorer)
_EXPECTED = (
    "onnxruntime's profile JSON, a Chrome trace (the PyTorch profiler's export_chrome_trace) "
    "or Model Explorer node data"
)


def detect_profile(source: Source) -> ModuleType:
    """The profile format whose sniffer accepts the file; FormatError (the JSON error of a
    broken file, or each format's reason) otherwise."""
    _ = source.data  # a missing or unreadable file fails here with its own message
    reasons: list[str] = []
    for fmt in PROFILE_FORMATS:
        try:
            why = fmt.sniff(source)
        except FormatError as e:
            if e is source.json_error:
                raise
            why = e.problem
        if why is None:
            return fmt
        reasons.append(f"{fmt.NAME}: {why}")
    raise FormatError(source.name, "", f"not a profile ({'; '.join(reasons)})", _EXPECTED)


def read_profile(path: str | Path, graph: Graph, name: str | None = None) -> ImportedProfile:
    """The values the profile in ``path`` gives the nodes of ``graph``, stored under ``name``
    (sanitised to a key part; each format has its default). Raises FormatError naming the
    file and the place, for a file that is not a profile or is damaged."""
    source = Source(path)
    fmt = detect_profile(source)
    result: ImportedProfile = fmt.read(source, graph, source_name(name) if name else None)
    if not result.is_time and result.source == "time":
        raise FormatError(
            source.name,
            "",
            "a metric cannot be named 'time' (performance.time holds the times by source)",
            "another name: give one with --source",
        )
    return result
