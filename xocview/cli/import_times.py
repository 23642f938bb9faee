"""``xocview import-times``: put a profile from another runtime onto a graph and save it as XOC
JSON, printing how much of the profile found its nodes."""

from __future__ import annotations

import argparse

from xocview.cli.exit_codes import EXIT_OK
from xocview.cli.outputs import save_with_notes
from xocview.cli.terminal import say
from xocview.errors import XocviewError
from xocview.formats import registry
from xocview.formats.profiles import read_profile
from xocview.model import edits

__all__ = ["add_import_times_parser", "cmd_import_times"]


def add_import_times_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("model", metavar="MODEL", help="the graph the profile was made of")
    sp.add_argument(
        "profile",
        metavar="PROFILE",
        help="onnxruntime's profile JSON (SessionOptions.enable_profiling), a Chrome trace "
        "(the PyTorch profiler's export_chrome_trace) or Model Explorer node data JSON",
    )
    sp.add_argument("-o", "--output", required=True, metavar="OUT.json", help="XOC JSON to write")
    sp.add_argument(
        "--source",
        metavar="NAME",
        help="the name the values go under: performance.time.NAME for times (default: "
        "onnxruntime, torch), performance.NAME for node data (default: its name or the file's)",
    )
    sp.add_argument(
        "--list",
        type=int,
        default=20,
        metavar="N",
        help="unmatched event names to list (default 20)",
    )


def cmd_import_times(ns: argparse.Namespace) -> int:
    graph = registry.load(ns.model)
    result = read_profile(ns.profile, graph, ns.source)
    for line in result.report_lines(max(0, ns.list)):
        say(line)
    if not result.values:
        raise XocviewError(result.nothing_matched(ns.profile, ns.model))
    edits.import_values(graph, result.key, result.values, result.description)
    save_with_notes(graph, ns.output)
    say(f"wrote {ns.output}")
    return EXIT_OK
