"""``xocview info`` and ``xocview check``: read a graph and report on it, writing nothing."""

from __future__ import annotations

import argparse

from xocview.cli.exit_codes import EXIT_FINDINGS, EXIT_OK
from xocview.cli.terminal import cell, say
from xocview.formats import registry
from xocview.model.analyses import opfacts
from xocview.model.analyses.summary import shape_text, summarize

__all__ = ["add_check_parser", "add_info_parser", "cmd_check", "cmd_info"]


def add_info_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file", metavar="FILE")


def add_check_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file", metavar="FILE")


def cmd_info(ns: argparse.Namespace) -> int:
    _print_info(ns.file)
    return EXIT_OK


def _print_info(name: str) -> None:
    graph = registry.load(name)
    s = summarize(graph)
    kinds = ", ".join(f"{n} {cell(k)}" for k, n in s.tensor_kinds.items() if n)
    groups = f"{s.num_groups} groups, hierarchy depth {s.hierarchy_depth}"
    say(f"file:       {name}")
    say(f"graph:      {cell(s.name)} (id {cell(s.id)})")
    say(f"nodes:      {s.num_nodes} ({groups})")
    say(f"tensors:    {s.num_tensors} ({kinds or 'none'})")
    unsized = f" (and {s.unsized_weights} weights of unknown shape)" if s.unsized_weights else ""
    say(f"parameters: {s.parameters:,}{unsized}")
    total, unknown, assumed = opfacts.graph_flops_assuming(graph, 1)
    say(f"FLOPs:      {opfacts.flops_text(total, assumed, unknown)}")
    for title, tensors in (("inputs", s.inputs), ("outputs", s.outputs)):
        say(f"{title}:")
        for t in tensors:
            say(f"  {cell(t.id):<24} {cell(t.dtype):<8} {shape_text(t)}")
        if not tensors:
            say("  (none)")
    say(f"operators:  (over {sum(c for _, c in s.op_histogram)} leaf nodes)")
    for op, count in s.op_histogram:
        say(f"  {cell(op):<24} {count}")
    if s.metadata_keys:
        say(f"metadata:   {', '.join(cell(k) for k in s.metadata_keys)}")


def cmd_check(ns: argparse.Namespace) -> int:
    _, findings = registry.check(ns.file)
    errors = sum(f.severity == "error" for f in findings)
    for f in findings:
        say(f"{ns.file}: {f}")
    warnings = len(findings) - errors
    say(
        f"{ns.file}: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    )
    return EXIT_FINDINGS if errors else EXIT_OK
