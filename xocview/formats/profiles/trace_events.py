"""Chrome's trace-event JSON read into timed spans, each knowing the span that encloses it.

The format (the "Trace Event Format" that chrome://tracing and Perfetto read, and that
``torch.profiler.profile.export_chrome_trace`` writes) is either ``{"traceEvents": [...]}`` or a
bare list of events. A span is a complete event (``"ph": "X"`` with ``ts`` and ``dur`` in
microseconds) or a ``B``/``E`` pair on one thread (an ``E`` closes the latest open ``B`` of its
thread). Other phases (metadata, instants, counters, flows, async events) carry no duration of
a thread's work; they are counted, not read. Nesting is by time on one thread (``pid``, ``tid``):
a span's parent is the innermost span of its thread that contains it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from xocview.errors import FormatError

__all__ = ["Span", "Trace", "read_trace", "trace_events"]

_EXPECTED = "a Chrome trace: {'traceEvents': [...]} or a list of trace events"
_SLACK = 0.01  # microseconds a child may overrun its parent by (timestamps are rounded)


@dataclass
class Span:
    """One timed event: ``start`` and ``dur`` in microseconds, ``parent`` the index of the
    innermost enclosing span of the same thread (-1 at the top)."""

    name: str
    cat: str
    start: float
    dur: float
    thread: tuple[str, str]
    args: Mapping[str, Any]
    place: str
    parent: int = -1

    @property
    def end(self) -> float:
        return self.start + self.dur


@dataclass
class Trace:
    """The spans in order of start, and how many events of each other kind were passed over
    (by phase; ``unpaired`` for a B without its E or an E without its B)."""

    spans: list[Span] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)


def trace_events(data: Any, file: str) -> tuple[list[Any], str]:
    """The event list and the JSON path that leads to it ("traceEvents" or "")."""
    if isinstance(data, dict):
        events = data.get("traceEvents")
        if not isinstance(events, list):
            raise FormatError(file, "traceEvents", "missing or not a list", _EXPECTED)
        return events, "traceEvents"
    if isinstance(data, list):
        return data, ""
    raise FormatError(file, "", f"the JSON root is a {type(data).__name__}", _EXPECTED)


def read_trace(data: Any, file: str) -> Trace:
    """The spans of a parsed trace; FormatError names an event that is not an object or whose
    ``ts``/``dur`` is not a number."""
    events, where = trace_events(data, file)
    out = Trace()
    open_spans: dict[tuple[str, str], list[tuple[int, dict[str, Any], float]]] = {}
    for k, event in enumerate(events):
        place = f"{where}[{k}]"
        if not isinstance(event, dict):
            raise FormatError(file, place, f"a {type(event).__name__}, not an object", "an event")
        phase = event.get("ph")
        thread = (str(event.get("pid", "")), str(event.get("tid", "")))
        if phase == "X":
            ts = _number(event, "ts", file, place)
            out.spans.append(_span(event, ts, _number(event, "dur", file, place), thread, place))
        elif phase == "B":
            stack = open_spans.setdefault(thread, [])
            stack.append((k, event, _number(event, "ts", file, place)))
        elif phase == "E":
            stack = open_spans.get(thread) or []
            end = _number(event, "ts", file, place)
            if not stack:
                _count(out.skipped, "unpaired")
                continue
            begin, opened, ts = stack.pop()
            args = {**_args(opened), **_args(event)}
            span = _span(
                {**opened, "args": args}, ts, max(0.0, end - ts), thread, f"{where}[{begin}]"
            )
            out.spans.append(span)
        else:
            _count(out.skipped, str(phase))
    for stack in open_spans.values():
        for _ in stack:
            _count(out.skipped, "unpaired")
    _nest(out.spans)
    return out


def _number(event: Mapping[str, Any], key: str, file: str, place: str) -> float:
    value = event.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FormatError(file, f"{place}.{key}", f"{value!r} is not a number", "microseconds")
    if key == "dur" and value < 0:
        raise FormatError(file, f"{place}.{key}", f"{value!r} is negative", "a duration >= 0")
    return float(value)


def _args(event: Mapping[str, Any]) -> dict[str, Any]:
    args = event.get("args")
    return dict(args) if isinstance(args, dict) else {}


def _span(
    event: Mapping[str, Any], ts: float, dur: float, thread: tuple[str, str], place: str
) -> Span:
    name, cat = event.get("name", ""), event.get("cat", "")
    return Span(str(name), str(cat), ts, dur, thread, _args(event), place)


def _count(counts: dict[str, int], key: str) -> None:
    counts[key] = counts.get(key, 0) + 1


def _nest(spans: list[Span]) -> None:
    """Sort by thread-independent start (longest first at a tie) and set each parent."""
    spans.sort(key=lambda s: (s.start, -s.dur))
    stacks: dict[tuple[str, str], list[int]] = {}
    for i, span in enumerate(spans):
        stack = stacks.setdefault(span.thread, [])
        while stack and spans[stack[-1]].end + _SLACK < span.end:
            stack.pop()  # ended before this one ends: not an ancestor
        span.parent = stack[-1] if stack else -1
        stack.append(i)
