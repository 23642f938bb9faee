"""onnxruntime's profile JSON (``SessionOptions.enable_profiling``) put onto a graph.

The kernels are attributed by ``model.analyses.ort_kernels``, as after ``xocview run --engine
onnxruntime``: by node name, through fusion names and NCHWc kernels. A node's value is its
median kernel time over the profile's runs, in milliseconds. The layout conversions onnxruntime
adds at its highest optimization level (ReorderInput, ReorderOutput) stand for no node of the
file and are listed as unmatched.
"""

from __future__ import annotations

from typing import Any

from xocview.formats.profiles.result import ImportedProfile, Unmatched
from xocview.formats.source import Source
from xocview.model import Graph
from xocview.model.analyses.ort_kernels import KERNEL, attribute, median_times, parse_profile

__all__ = ["DEFAULT_SOURCE", "NAME", "read", "sniff"]

NAME = "onnxruntime profile"
DEFAULT_SOURCE = "onnxruntime"


def _events(data: Any) -> list[Any] | None:
    events = data.get("traceEvents") if isinstance(data, dict) else data
    return events if isinstance(events, list) else None


def sniff(source: Source) -> str | None:
    """None when the file holds onnxruntime's kernel events, else why not."""
    if not source.looks_like_json():
        return "not a JSON object or array"
    events = _events(source.json)
    if events is None:
        return "no list of trace events"
    for event in events:
        if (
            isinstance(event, dict)
            and event.get("cat") == "Node"
            and str(event.get("name", "")).endswith(KERNEL)
        ):
            return None
    return f"no kernel events (cat 'Node', name '<node>{KERNEL}')"


def read(source: Source, graph: Graph, name: str | None = None) -> ImportedProfile:
    """Each node's median kernel time (ms) over the profile's runs; FormatError names the
    event that is not a trace event of the expected form."""
    profile = parse_profile(source.json, source.name)
    found = attribute(profile, graph)
    runs = max(profile.runs, 1)
    out = ImportedProfile(NAME, name or DEFAULT_SOURCE, True, what="kernels")
    out.values = {node: round(ms * 1e3, 6) for node, (ms, _) in median_times(found.times).items()}
    per_run = {
        k.name: sum(d for d in k.durations if d is not None) * 1e3 / runs
        for k in profile.kernels.values()
    }
    lost = {k.name for k in found.unmatched}
    out.events = len(profile.kernels)
    out.matched = out.events - len(lost)
    out.total_ms = sum(per_run.values())
    out.matched_ms = max(0.0, out.total_ms - sum(per_run[k] for k in lost))
    out.unmatched = sorted(  # one entry per kernel: a kernel is what ``events`` counts
        (Unmatched(f"{k.name} ({k.op_name})", 1, per_run[k.name]) for k in found.unmatched),
        key=lambda u: -u.amount,
    )
    out.notes.append(f"{runs:,} run{'s' * (runs != 1)}: each node gets its median kernel time")
    if profile.other:
        out.notes.append(
            f"{len(profile.other):,} node events were neither kernel times nor fences "
            f"(left out): {', '.join(sorted(set(profile.other))[:5])}"
        )
    return out
