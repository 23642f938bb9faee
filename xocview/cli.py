"""The command line: open (the GUI), info, convert, check, render.

Errors print one line naming the file and the place and exit non-zero; ``--debug`` adds the
traceback. The GUI is imported only inside the function that starts it.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from xocview import __version__
from xocview.errors import XocviewError
from xocview.formats import registry
from xocview.model.summary import shape_text, summarize

__all__ = ["main"]

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    parser = _parser()
    try:
        ns = parser.parse_args(_with_default_command(args))
        ns.debug = debug  # a subcommand's default would hide a --debug given before it
        return int(ns.func(ns))
    except XocviewError as e:
        if debug:
            traceback.print_exc()
        print(f"xocview: error: {e}", file=sys.stderr)
        return EXIT_FINDINGS
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug of ours: one line, the traceback only on request
        if debug:
            traceback.print_exc()
        print(
            f"xocview: internal error: {type(e).__name__}: {e} "
            "(run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


_COMMANDS = ("open", "info", "convert", "check", "render")


def _with_default_command(args: list[str]) -> list[str]:
    """``xocview a.onnx`` means ``xocview open a.onnx``."""
    for arg in args:
        if arg in ("-h", "--help", "--version"):
            return args
        if not arg.startswith("-"):
            return args if arg in _COMMANDS else ["open", *args]
    return ["open", *args]


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    p = argparse.ArgumentParser(  # --debug is accepted before the command too
        prog="xocview",
        description="View, check and convert neural-network graphs "
        "(ONNX, NNVM/MXNet/TVM JSON, LightNet JSON IR, XOC JSON).",
        epilog="With no command, xocview opens the given files (xocview FILE ...).",
        parents=[common],
    )
    p.add_argument("--version", action="version", version=f"xocview {__version__}")
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    def add(
        name: str, func: Callable[[argparse.Namespace], int], help: str
    ) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, parents=[common], help=help, description=help)
        sp.set_defaults(func=func)
        return sp

    sp = add("open", _cmd_open, "open graph files (the default command)")
    sp.add_argument("files", nargs="*", metavar="FILE")
    sp = add("info", _cmd_info, "print a summary of a graph")
    sp.add_argument("file", metavar="FILE")
    sp = add("convert", _cmd_convert, "convert a graph to XOC JSON")
    sp.add_argument("input", metavar="IN")
    sp.add_argument("output", metavar="OUT.json")
    sp = add("render", _cmd_render, "draw a graph to PNG or SVG without a window")
    sp.add_argument("input", metavar="FILE")
    sp.add_argument("output", metavar="OUT.png|OUT.svg")
    grp = sp.add_mutually_exclusive_group()
    grp.add_argument("--expand-all", action="store_true", help="open every group")
    grp.add_argument("--level", type=int, metavar="N", help="open groups above depth N")
    sp.add_argument("--theme", choices=("light", "dark"), default="light")
    sp.add_argument("--direction", choices=("TB", "LR"), default="TB")
    sp.add_argument("--scale", type=float, default=1.0, help="pixels per layout unit (PNG)")
    sp = add("check", _cmd_check, "validate a graph; exit 1 on any error")
    sp.add_argument("file", metavar="FILE")
    return p


def _cmd_open(ns: argparse.Namespace) -> int:
    """The viewer, one tab per file; a file that fails shows its message, the rest open."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or os.environ.get("QT_QPA_PLATFORM")
    ):
        print(
            "xocview: error: no display to open a window on; use `xocview info FILE` or "
            "`xocview render FILE OUT.png`",
            file=sys.stderr,
        )
        return EXIT_FINDINGS
    from xocview.ui.app import run_gui  # Qt only when a window is wanted

    return run_gui(ns.files)


def _cmd_render(ns: argparse.Namespace) -> int:
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
    print(f"wrote {out} ({width}x{height})")
    return EXIT_OK


def _cmd_info(ns: argparse.Namespace) -> int:
    _print_info(ns.file)
    return EXIT_OK


def _print_info(name: str) -> None:
    graph = registry.load(name)
    s = summarize(graph)
    kinds = ", ".join(f"{n} {k}" for k, n in s.tensor_kinds.items() if n)
    groups = f"{s.num_groups} groups, hierarchy depth {s.hierarchy_depth}"
    print(f"file:       {name}")
    print(f"graph:      {s.name} (id {s.id})")
    print(f"nodes:      {s.num_nodes} ({groups})")
    print(f"tensors:    {s.num_tensors} ({kinds or 'none'})")
    unsized = f" (and {s.unsized_weights} weights of unknown shape)" if s.unsized_weights else ""
    print(f"parameters: {s.parameters:,}{unsized}")
    for title, tensors in (("inputs", s.inputs), ("outputs", s.outputs)):
        print(f"{title}:")
        for t in tensors:
            print(f"  {t.id:<24} {t.dtype:<8} {shape_text(t)}")
        if not tensors:
            print("  (none)")
    print(f"operators:  (over {sum(c for _, c in s.op_histogram)} leaf nodes)")
    for op, count in s.op_histogram:
        print(f"  {op:<24} {count}")
    if s.metadata_keys:
        print(f"metadata:   {', '.join(s.metadata_keys)}")


def _cmd_convert(ns: argparse.Namespace) -> int:
    out = Path(ns.output)
    if out.suffix.lower() != ".json":  # a usage error: refused before reading the input
        print(f"xocview: error: {out}: the output must be a .json file (XOC JSON)", file=sys.stderr)
        return EXIT_USAGE
    graph = registry.load(ns.input)
    registry.save(graph, out)
    print(f"wrote {out} ({len(graph.nodes)} nodes, {len(graph.tensors)} tensors)")
    return EXIT_OK


def _cmd_check(ns: argparse.Namespace) -> int:
    _, findings = registry.check(ns.file)
    errors = sum(f.severity == "error" for f in findings)
    for f in findings:
        print(f"{ns.file}: {f}")
    warnings = len(findings) - errors
    print(
        f"{ns.file}: {errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"
    )
    return EXIT_FINDINGS if errors else EXIT_OK
