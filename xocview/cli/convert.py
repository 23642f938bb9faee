"""``xocview convert`` and ``xocview render``: a graph into another file (XOC JSON, ONNX) or a
picture."""

from __future__ import annotations

import argparse
from pathlib import Path

from xocview.cli.exit_codes import EXIT_OK, EXIT_USAGE
from xocview.cli.outputs import OUTPUT_METAVAR, refused, save_with_notes
from xocview.cli.terminal import say
from xocview.formats import registry

__all__ = ["add_convert_parser", "add_render_parser", "cmd_convert", "cmd_render"]


def add_convert_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("input", metavar="IN")
    sp.add_argument("output", metavar=OUTPUT_METAVAR)


def add_render_parser(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("input", metavar="FILE")
    sp.add_argument("output", metavar="OUT.png|OUT.svg")
    grp = sp.add_mutually_exclusive_group()
    grp.add_argument("--expand-all", action="store_true", help="open every group")
    grp.add_argument("--level", type=int, metavar="N", help="open groups above depth N")
    sp.add_argument("--theme", choices=("light", "dark"), default="light")
    sp.add_argument("--direction", choices=("TB", "LR"), default="TB")
    sp.add_argument("--scale", type=float, default=1.0, help="pixels per layout unit (PNG)")


def cmd_render(ns: argparse.Namespace) -> int:
    from xocview.ui.headless import render_file

    out = Path(ns.output)
    width, height = render_file(
        Path(ns.input),
        out,
        level=ns.level,
        expand_all=ns.expand_all,
        theme=ns.theme,
        direction=ns.direction,
        scale=ns.scale,
    )
    say(f"wrote {out} ({width}x{height})")
    return EXIT_OK


def cmd_convert(ns: argparse.Namespace) -> int:
    out = Path(ns.output)
    if refused(out):  # a usage error: refused before reading the input
        return EXIT_USAGE
    graph = registry.load(ns.input)
    save_with_notes(graph, out)
    say(f"wrote {out} ({len(graph.nodes)} nodes, {len(graph.tensors)} tensors)")
    return EXIT_OK
