"""What a profile put onto a graph: the values per node and an account of every event.

Every reader returns an ``ImportedProfile``. Nothing a profile holds is dropped without a
word: events matched to a node, events spread over a group's leaves, unmatched events (counted
and named) and what the reader passed over on purpose (nested events, stack frames, metadata)
each have a line in ``report_lines``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from xocview.errors import shorten
from xocview.model.analyses.metrics import metric_key
from xocview.model.analyses.profile import format_ms, time_key

__all__ = ["ImportedProfile", "Unmatched", "source_name", "unmatched_by_name"]

_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+")
LISTED = 20  # unmatched names a report lists unless told otherwise


def source_name(text: str) -> str:
    """``text`` as a metadata key part: letters, digits, ``_`` and ``-`` only (a dot would
    start a new level of ``performance.time``), never empty."""
    name = _NOT_NAME.sub("_", text).strip("_")
    return name or "profile"


@dataclass(frozen=True)
class Unmatched:
    """Events of one name that matched no node: how many, and their time (ms per pass) or
    summed value."""

    name: str
    count: int
    amount: float


def unmatched_by_name(events: Iterable[tuple[str, float]]) -> list[Unmatched]:
    """(name, amount) pairs gathered by name, the largest amount first."""
    count: dict[str, int] = {}
    amount: dict[str, float] = {}
    for name, value in events:
        count[name] = count.get(name, 0) + 1
        amount[name] = amount.get(name, 0.0) + value
    rows = [Unmatched(n, count[n], amount[n]) for n in count]
    return sorted(rows, key=lambda u: (-u.amount, -u.count, u.name))


@dataclass
class ImportedProfile:
    """Per-node values read from a profile, ready to store as one edit.

    ``values`` maps node ids to milliseconds per pass (``is_time``) or to a named metric's
    value. ``events`` is how many things the profile offered to match (kernels, trace events,
    node-data results), ``matched`` how many found a node (``to_groups`` of them only a group,
    whose time went to its leaves). ``total_ms`` and ``matched_ms`` are per pass; zero for a
    metric. ``notes`` say what else the reader saw and passed over.
    """

    format: str
    source: str
    is_time: bool
    values: dict[str, float] = field(default_factory=dict)
    events: int = 0
    matched: int = 0
    to_groups: int = 0
    unmatched: list[Unmatched] = field(default_factory=list)
    total_ms: float = 0.0
    matched_ms: float = 0.0
    group_ms: float = 0.0  # of matched_ms, what went to groups
    notes: list[str] = field(default_factory=list)
    what: str = "events"  # what ``events`` counts: "kernels", "trace events", "results"

    @property
    def key(self) -> str:
        """The node metadata key the values go under."""
        return time_key(self.source) if self.is_time else metric_key(self.source)

    @property
    def description(self) -> str:
        """The undo text of storing the values: what went where."""
        return f"import {self.format} as {self.key} ({len(self.values):,} nodes)"

    def nothing_matched(self, profile: str, model: str) -> str:
        """Why nothing was stored: ``0 of 96 trace events matched a node of m.onnx; ...``."""
        return (
            f"{profile}: {self.matched:,} of {self.events:,} {self.what} matched a node of "
            f"{model}; is it a profile of this model? Nothing was stored"
        )

    @property
    def time_share(self) -> float:
        """The share of the profile's time that went onto the graph (1.0 with no time)."""
        return self.matched_ms / self.total_ms if self.total_ms > 0 else 1.0

    def summary(self) -> str:
        """``Chrome trace: 412 of 420 trace events matched (98.1% of 3.2 ms per pass), 17 of
        them to a group (spread over its leaves)``."""
        text = f"{self.matched:,} of {self.events:,} {self.what} matched"
        if self.is_time and self.total_ms > 0:
            text += f" ({self.time_share:.1%} of {format_ms(self.total_ms)} per pass)"
        if self.to_groups:
            text += f", {self.to_groups:,} of them to a group (spread over its leaves"
            share = self.group_ms / self.total_ms if self.is_time and self.total_ms > 0 else 0
            text += f": {share:.1%} of the time)" if share else ")"
        return f"{self.format}: {text}"

    def report_lines(self, limit: int = LISTED) -> list[str]:
        """The summary, where the values go, what else was seen, and up to ``limit``
        unmatched event names with their counts and time."""
        lines = [self.summary()]
        if self.values and (self.matched < self.events / 2 or self.time_share < 0.5):
            lines.append("less than half of it matched: is it a profile of this very model?")
        nodes = len(self.values)
        lines.append(f"{nodes:,} nodes get {self.key}" if nodes else "no node gets a value")
        lines += self.notes
        if self.unmatched:
            lost = sum(u.count for u in self.unmatched)
            what = self.what if lost != 1 else self.what[:-1]  # "kernels" -> "kernel"
            names = len(self.unmatched)
            lines.append(f"{lost:,} {what} matched no node ({names:,} name{'s' * (names != 1)}):")
            for u in self.unmatched[:limit]:
                amount = format_ms(u.amount) if self.is_time else f"{u.amount:g}"
                lines.append(f"  {shorten(u.name, 100)}  x{u.count:,}  {amount}")
            if len(self.unmatched) > limit:
                lines.append(f"  ... and {len(self.unmatched) - limit:,} more names")
        return lines
