"""``xocview info`` and ``xocview check``: read a graph and report on it, writing nothing."""

from __future__ import annotations

import argparse
import math

from xocview.cli.exit_codes import EXIT_FINDINGS, EXIT_OK
from xocview.cli.terminal import cell, say
from xocview.formats import registry
from xocview.formats.source import Source
from xocview.model import Graph
from xocview.model.analyses import opfacts
from xocview.model.analyses.summary import shape_text, summarize
from xocview.model.dtypes import DTYPES

__all__ = ["add_check_parser", "add_info_parser", "cmd_check", "cmd_info"]


def add_info_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file", metavar="FILE")


def add_check_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("file", metavar="FILE")


def cmd_info(ns: argparse.Namespace) -> int:
    _print_info(ns.file)
    return EXIT_OK


def _print_info(name: str) -> None:
    graph, fmt = registry.load_source(Source(name))
    s = summarize(graph)
    kinds = ", ".join(f"{n} {cell(k)}" for k, n in s.tensor_kinds.items() if n)
    groups = f"{s.num_groups} groups, hierarchy depth {s.hierarchy_depth}"
    say(f"file:       {name}")
    say(f"format:     {fmt.NAME}")
    say(f"graph:      {cell(s.name)} (id {cell(s.id)})")
    say(f"nodes:      {s.num_nodes} ({groups})")
    say(f"tensors:    {s.num_tensors} ({kinds or 'none'})")
    unsized = f" (and {s.unsized_weights} weights of unknown shape)" if s.unsized_weights else ""
    say(f"parameters: {s.parameters:,}{unsized}")
    weights = _weights_by_dtype(graph)
    if weights:
        say("weights:    " + ", ".join(f"{cell(d)} {_size(b)}" for d, b in weights))
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


def _weights_by_dtype(graph: Graph) -> list[tuple[str, int]]:
    """Bytes of the weights of known shape, per dtype, largest first: a checkpoint's
    summary (a bf16 model with fp32 norms says so)."""
    total: dict[str, int] = {}
    for t in graph.tensors:
        info = DTYPES.get(t.dtype)
        if t.kind != "weight" or info is None or info.bits is None or any(d < 0 for d in t.shape):
            continue
        total[t.dtype] = total.get(t.dtype, 0) + math.prod(t.shape) * info.bits // 8
    return sorted(total.items(), key=lambda item: -item[1])


def _size(count: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


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
