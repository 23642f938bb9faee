"""The command line: open (the GUI), info, convert, check, render, edit, run.

Errors print one line naming the file and the place and exit non-zero; ``--debug`` adds the
traceback. The GUI is imported only inside the function that starts it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from xocview import __version__, desktop
from xocview.cli_run import add_run_parser, cmd_run
from xocview.errors import EditError, XocviewError
from xocview.formats import registry
from xocview.model import edits
from xocview.model.analyses import opfacts
from xocview.model.analyses.summary import parse_shape, shape_text, summarize
from xocview.model.graph import Graph

__all__ = ["main"]

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    _tolerant_streams()
    if not debug:  # numpy's and onnx's warnings are not messages for the user
        warnings.simplefilter("ignore")
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


def _tolerant_streams() -> None:
    """Text a terminal cannot show (a lone surrogate from some file) is printed escaped."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


_COMMANDS = ("open", "info", "convert", "check", "render", "edit", "run")


def _with_default_command(args: list[str]) -> list[str]:
    """``xocview a.onnx`` means ``xocview open a.onnx``."""
    for arg in args:
        if arg in ("-h", "--help", "--version", "--install-desktop", "--uninstall-desktop"):
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
        epilog="With no command, xocview opens the given files (xocview [--new-window] FILE ...) "
        "in a new tab of the running xocview, if there is one.",
        parents=[common],
    )
    p.add_argument("--version", action="version", version=f"xocview {__version__}")
    desk = p.add_mutually_exclusive_group()
    desk.add_argument(
        "--install-desktop",
        action="store_true",
        help="let the file manager open .onnx and .json files with xocview (Linux, this user)",
    )
    desk.add_argument(
        "--uninstall-desktop", action="store_true", help="remove what --install-desktop installed"
    )
    p.set_defaults(func=_cmd_desktop)  # a command's own func replaces it
    sub = p.add_subparsers(title="commands", metavar="COMMAND")

    def add(
        name: str, func: Callable[[argparse.Namespace], int], help: str
    ) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, parents=[common], help=help, description=help)
        sp.set_defaults(func=func)
        return sp

    sp = add("open", _cmd_open, "open graph files (the default command)")
    sp.add_argument("files", nargs="*", metavar="FILE")
    sp.add_argument(
        "--new-window",
        action="store_true",
        help="open a window of its own instead of a tab in the running xocview",
    )
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
    _add_edit_parser(add("edit", _cmd_edit, "apply edits to a graph and save it as XOC JSON"))
    add_run_parser(add("run", cmd_run, "run a graph on the bundled CPU executor and time it"))
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

    return run_gui(ns.files, new_window=ns.new_window)


def _cmd_desktop(ns: argparse.Namespace) -> int:
    """--install-desktop / --uninstall-desktop: the file manager's double-click, for this user."""
    if not (ns.install_desktop or ns.uninstall_desktop):
        _parser().print_usage(sys.stderr)
        return EXIT_USAGE
    if sys.platform in ("darwin", "win32"):
        print(
            "xocview: error: --install-desktop is for Linux desktops; on macOS and Windows see "
            "'Open by double-click' in README.md",
            file=sys.stderr,
        )
        return EXIT_USAGE
    for line in desktop.install() if ns.install_desktop else desktop.uninstall():
        print(line)
    return EXIT_OK


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
    total, unknown, assumed = opfacts.graph_flops_assuming(graph, 1)
    print(f"FLOPs:      {opfacts.flops_text(total, assumed, unknown)}")
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


# -- edit ------------------------------------------------------------------------------------

# option -> (metavar, help); each appends (option, text) to one list, so edits keep their order
_EDIT_OPTIONS = {
    "--set": ("NODE.ATTR=VALUE", "set (or add) an attribute; VALUE is JSON: 3, [1,1], '\"same\"'"),
    "--del-attr": ("NODE.ATTR", "remove an attribute"),
    "--set-meta": ("ID.KEY=VALUE", "set metadata of a node, tensor or the graph (dotted KEY)"),
    "--rename": ("OLD=NEW", "rename a node (or, when no node has OLD, a tensor)"),
    "--shape": ("TENSOR=D,D,...", "set a tensor's shape (-1 for an unknown size)"),
    "--dtype": ("TENSOR=DTYPE", "set a tensor's element type (float16, int64, ...)"),
    "--delete": ("NODE", "delete a node"),
    "--bypass": ("NODE", "remove a node with one data input and one output, keeping the flow"),
    "--output": ("TENSOR", "mark a tensor as a graph output"),
}

_EDIT_EPILOG = """Edits apply in the order given. An id may contain dots: NODE.ATTR and ID.KEY
split at the last dot whose left part is an existing id (for --set-meta a node id, else a tensor
id, else the graph's id). Any refused edit exits 1 with the reason and writes nothing."""


def _add_edit_parser(sp: argparse.ArgumentParser) -> None:
    sp.epilog = _EDIT_EPILOG
    sp.add_argument("input", metavar="IN")
    sp.add_argument("-o", "--out", required=True, metavar="OUT.json", help="where to write")
    for opt, (metavar, help) in _EDIT_OPTIONS.items():
        sp.add_argument(
            opt,
            dest="edits",
            action="append",
            default=[],
            metavar=metavar,
            help=help,
            type=_tagged(opt),
        )


def _tagged(opt: str) -> Callable[[str], tuple[str, str]]:
    """An argparse type that keeps the option with its text, so all edits share one list."""

    def tag(text: str) -> tuple[str, str]:
        return opt, text

    return tag


def _cmd_edit(ns: argparse.Namespace) -> int:
    out = Path(ns.out)
    if out.suffix.lower() != ".json":
        print(f"xocview: error: {out}: the output must be a .json file (XOC JSON)", file=sys.stderr)
        return EXIT_USAGE
    graph = registry.load(ns.input)
    for opt, text in ns.edits:
        try:
            _apply_option(graph, opt, text)
        except EditError as e:
            raise EditError(f"{opt} {text}: {e}; nothing was written") from e
    registry.save(graph, out)
    n = len(ns.edits)
    print(
        f"wrote {out} ({n} edit{'s' * (n != 1)}; "
        f"{len(graph.nodes)} nodes, {len(graph.tensors)} tensors)"
    )
    return EXIT_OK


def _apply_option(graph: Graph, opt: str, text: str) -> None:
    """Apply one command-line edit to ``graph``; EditError when it is refused."""
    if opt in ("--delete", "--bypass", "--output"):
        {"--delete": edits.delete_node, "--bypass": edits.bypass_node}.get(opt, edits.mark_output)(
            graph, text
        )
    elif opt == "--set":
        target, value = _split_value(text)
        node, attr = _split_id(graph, target, ("node",))
        edits.set_attribute(graph, node, attr, value)
    elif opt == "--del-attr":
        node, attr = _split_id(graph, text, ("node",))
        edits.remove_attribute(graph, node, attr)
    elif opt == "--set-meta":
        target, value = _split_value(text)
        owner, key = _split_id(graph, target, ("node", "tensor", "graph"))
        kind = _kind_of(graph, owner, ("node", "tensor", "graph"))
        if kind == "node":
            edits.set_metadata(graph, key, value, node=owner)
        elif kind == "tensor":
            edits.set_metadata(graph, key, value, tensor=owner)
        else:
            edits.set_metadata(graph, key, value)
    elif opt == "--rename":
        old, sep, new = text.partition("=")
        if not sep:
            raise EditError("expected OLD=NEW")
        if graph.index.has_node(old):
            edits.rename_node(graph, old, new)
        else:
            edits.rename_tensor(graph, old, new)
    else:
        tensor, sep, rest = text.rpartition("=")
        if not sep:
            raise EditError(f"expected TENSOR={'D,D,...' if opt == '--shape' else 'DTYPE'}")
        if opt == "--shape":
            edits.set_shape(graph, tensor, _dims(rest))
        else:
            edits.set_dtype(graph, tensor, rest)


def _split_value(text: str) -> tuple[str, object]:
    """``TARGET=VALUE`` with VALUE parsed as JSON (split at the first '=')."""
    target, sep, raw = text.partition("=")
    if not sep:
        raise EditError("expected TARGET=VALUE")
    try:
        return target, json.loads(raw)
    except ValueError as e:
        raise EditError(
            f"VALUE {raw!r} is not JSON ({e}); write numbers and lists as is and strings "
            "in double quotes, e.g. '\"same\"'"
        ) from e


def _kind_of(graph: Graph, ident: str, kinds: tuple[str, ...]) -> str | None:
    for kind in kinds:
        if kind == "node" and graph.index.has_node(ident):
            return kind
        if kind == "tensor" and any(t.id == ident for t in graph.tensors):
            return kind
        if kind == "graph" and ident == graph.id:
            return kind
    return None


def _split_id(graph: Graph, text: str, kinds: tuple[str, ...]) -> tuple[str, str]:
    """``ID.NAME`` split at the last dot whose left part is an id of one of ``kinds``."""
    at = text.rfind(".")
    while at > 0:
        if _kind_of(graph, text[:at], kinds) is not None:
            return text[:at], text[at + 1 :]
        at = text.rfind(".", 0, at)
    raise EditError(f"no {' or '.join(kinds)} id before a dot in '{text}'; write ID.NAME")


def _dims(text: str) -> list[int]:
    try:
        return parse_shape(text)
    except ValueError as e:
        raise EditError(str(e)) from e
