"""``xocview diff OLD NEW``: what changed between two graphs, in any two formats.

Exit status as diff(1) has it: 0 when the graphs are equal, 1 when they differ, 2 when they
could not be compared (a usage error, or a file that does not load: its one-line error is
printed, as every command prints it).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections import Counter

from xocview.cli.exit_codes import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE
from xocview.cli.terminal import json_text, say
from xocview.errors import XocviewError
from xocview.formats import registry
from xocview.model.analyses.diff import KINDS, NODE_CHANGED, GraphDiff, diff_graphs
from xocview.model.analyses.profile import engine_label, format_ms
from xocview.model.graph import Graph

__all__ = ["add_diff_parser", "cmd_diff", "json_report", "report_lines"]

_LIMIT = 50  # findings listed per kind unless --limit says otherwise
_FIELDS = 8  # changed fields named in the summary


def add_diff_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("old", metavar="OLD")
    sp.add_argument("new", metavar="NEW")
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.add_argument(
        "--limit",
        type=int,
        default=_LIMIT,
        metavar="N",
        help=f"list at most N findings of each kind (default {_LIMIT}; 0 lists all)",
    )
    sp.epilog = "Exit status: 0 when the graphs are equal, 1 when they differ, 2 on trouble."


def cmd_diff(ns: argparse.Namespace) -> int:
    if ns.limit < 0:
        say("xocview: error: --limit must be 0 or more", file=sys.stderr)
        return EXIT_USAGE
    try:
        old, new = registry.load(ns.old), registry.load(ns.new)
    except XocviewError as e:  # 1 would read "they differ"
        if getattr(ns, "debug", False):
            traceback.print_exc()
        say(f"xocview: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    diff = diff_graphs(old, new)
    if ns.json:
        print(json_report(diff, ns.old, ns.new))
    else:
        for line in report_lines(diff, ns.old, ns.new, ns.limit):
            say(line)
    return EXIT_OK if diff.equal else EXIT_FINDINGS


def json_report(diff: GraphDiff, old_name: str | None, new_name: str | None) -> str:
    """The ``--json`` report as printed (without the final newline), each side's ``file``
    named as given (None: not from a file)."""
    report = diff.to_json()
    report["old"]["file"], report["new"]["file"] = old_name, new_name
    return json_text(report)


def report_lines(diff: GraphDiff, old_name: str, new_name: str, limit: int = _LIMIT) -> list[str]:
    """The text report: the two files, the counts, then the findings grouped by kind."""
    lines = [f"old: {old_name} ({_facts(diff.old)})", f"new: {new_name} ({_facts(diff.new)})"]
    lines.append(_matched(diff))
    counts = diff.counts()
    if diff.equal:
        lines.append("the graphs are equal")
    else:
        lines.append(f"differences: {len(diff.findings)}")
        width = max(len(k) for k in KINDS)
        lines.extend(f"  {kind:<{width}}  {n}" for kind, n in counts.items() if n)
        fields = _changed_fields(diff)
        if fields:
            lines.append(f"changed on nodes: {fields}")
    lines.extend(_extras(diff))
    for kind in KINDS:
        found = [f for f in diff.findings if f.kind == kind]
        if not found:
            continue
        lines.append("")
        lines.append(f"{kind} ({len(found)}):")
        shown = found if limit == 0 else found[:limit]
        for f in shown:
            lines.append(f"  {f.title()}")
            lines.extend(f"      {c.text()}" for c in f.changes)
        if len(shown) < len(found):
            lines.append(f"  ... and {len(found) - len(shown)} more (--limit 0 lists all)")
    return lines


def _facts(graph: Graph) -> str:
    return f"graph '{graph.name}': {len(graph.nodes)} nodes, {len(graph.tensors)} tensors"


def _matched(diff: GraphDiff) -> str:
    matched = diff.matched_nodes()
    renamed = len(diff.renamed_nodes())
    other = f", {renamed} of them under another id" if renamed else ""
    return (
        f"matched: {matched} of {len(diff.old.nodes)} old and {len(diff.new.nodes)} new nodes"
        f"{other}"
    )


def _changed_fields(diff: GraphDiff) -> str:
    """The most common changes of changed nodes: ``attribute alpha (3 nodes), ...``."""
    count: Counter[str] = Counter()
    for f in diff.findings:
        if f.kind == NODE_CHANGED:
            count.update({f"{c.what} {c.key}".strip() for c in f.changes})
    parts = [f"{field} ({n} node{'s' * (n != 1)})" for field, n in count.most_common(_FIELDS)]
    if len(count) > _FIELDS:
        parts.append(f"{len(count) - _FIELDS} more")
    return ", ".join(parts)


def _extras(diff: GraphDiff) -> list[str]:
    """Measured times both graphs carry, and shape changes that only follow from others."""
    out = []
    for engine, t in diff.times.items():
        ratio = t["new_ms"] / t["old_ms"] if t["old_ms"] > 0 else float("nan")
        out.append(
            f"times ({engine_label(engine)}): old {format_ms(t['old_ms'])}, new "
            f"{format_ms(t['new_ms'])} (new/old {ratio:.2f}; {int(t['nodes'])} matched nodes "
            "timed on both sides)"
        )
    if diff.follow_on:
        n = len(diff.follow_on)
        out.append(
            f"{n} node{'s' * (n != 1)} changed output shapes only because their inputs did "
            "(not listed)"
        )
    return out
