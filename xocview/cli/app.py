"""The command line's parser and dispatch: open, info, convert, check, render, edit, run,
import-times, diff.

Errors print one line naming the file and the place and exit non-zero; ``--debug`` adds the
traceback. Each command family has a module of its own; the GUI is imported only inside the
function that starts it (``cli/open.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import traceback
import warnings
from collections.abc import Callable, Sequence

from xocview import desktop
from xocview.cli.convert import add_convert_parser, add_render_parser, cmd_convert, cmd_render
from xocview.cli.diff import add_diff_parser, cmd_diff
from xocview.cli.edit import add_edit_parser, cmd_edit
from xocview.cli.exit_codes import EXIT_FINDINGS, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE
from xocview.cli.import_times import add_import_times_parser, cmd_import_times
from xocview.cli.info import add_check_parser, add_info_parser, cmd_check, cmd_info
from xocview.cli.open import add_open_parser, cmd_open
from xocview.cli.run import add_run_parser, cmd_run
from xocview.cli.terminal import safe_streams, say
from xocview.errors import XocviewError, shorten_message
from xocview.version import __version__

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    _tolerant_streams()
    if not debug:  # numpy's and onnx's warnings are not messages for the user
        warnings.simplefilter("ignore")
    with safe_streams():  # nothing a file holds reaches the terminal raw
        return _dispatch(args, debug)


def _dispatch(args: list[str], debug: bool) -> int:
    """Parse and run the command; every failure becomes one line on stderr and a status."""
    parser = _parser()
    try:
        ns = parser.parse_args(_with_default_command(args))
        ns.debug = debug  # a subcommand's default would hide a --debug given before it
        return int(ns.func(ns))
    except XocviewError as e:
        if debug:
            traceback.print_exc()
        say(f"xocview: error: {e}", file=sys.stderr)
        return EXIT_FINDINGS
    except KeyboardInterrupt:
        print("xocview: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK
    except Exception as e:  # a bug of ours: one line, the traceback only on request
        if debug:
            traceback.print_exc()
        say(
            f"xocview: internal error: {type(e).__name__}: {shorten_message(str(e))} "
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


_COMMANDS = ("open", "info", "convert", "check", "render", "edit", "run", "import-times", "diff")


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

    add_open_parser(add("open", cmd_open, "open graph files (the default command)"))
    add_info_parser(add("info", cmd_info, "print a summary of a graph"))
    add_convert_parser(add("convert", cmd_convert, "convert a graph to XOC JSON or ONNX"))
    add_render_parser(add("render", cmd_render, "draw a graph to PNG or SVG without a window"))
    add_check_parser(add("check", cmd_check, "validate a graph; exit 1 on any error"))
    add_edit_parser(add("edit", cmd_edit, "apply edits to a graph and save it (XOC JSON, ONNX)"))
    run = add("run", cmd_run, "run a graph and time every node")
    run.description = (
        "Run a graph and time every node: on the bundled CPU executor, or with --engine "
        "onnxruntime an .onnx file on onnxruntime (an optional dependency: pip install "
        "onnxruntime). Each node's time is its median over the --repeat passes, with the "
        "spread between passes reported; --threads sets the threads either engine uses."
    )
    add_run_parser(run)
    add_diff_parser(add("diff", cmd_diff, "compare two graphs; exit 1 when they differ"))
    add_import_times_parser(
        add("import-times", cmd_import_times, "put a profile from another runtime onto a graph")
    )
    return p


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
